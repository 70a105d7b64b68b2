"""Pictures of a layout like the tiled-layout document's figures: the logical grid and the memory order.

The first panel draws the array (for rank > 2, the slice through the two most minor physical dims) as a grid,
each cell showing its linear index, first-level tiles outlined and coloured, padding cells shaded. The second
panel lists the buffer in memory order, each slot showing the logical index it holds. Arrays too large to
draw are cut to their first tiles, with a note. SVG needs nothing; PNG needs Pillow (``pip install
xlashapes[pictures]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ShapeError
from .indexing import linear_index, multi_index
from .shape import UNBOUNDED_SIZE, Shape
from .text import parse_shape
from .tiling import COMBINE_DIMENSION, tiled_dimensions

PALETTE = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada")
PADDING_FILL = "#d9d9d9"
CELL = 34
MARGIN = 24
TITLE = 22
FONT = 12
MAX_GRID = 512
"""The most rows, columns (and thousands of memory slots) a picture's data may hold."""


@dataclass(frozen=True)
class Cell:
    """One drawn grid position: its logical index (None for padding), linear offset and first-level tile."""

    row: int
    col: int
    index: tuple[int, ...] | None
    offset: int | None
    tile: tuple[int, int]


@dataclass(frozen=True)
class Slot:
    """One memory slot: its linear offset and the logical index stored there (None for padding)."""

    offset: int
    index: tuple[int, ...] | None


@dataclass(frozen=True)
class LayoutPicture:
    """What a layout picture shows, as data (the numbers the SVG/PNG write into the cells)."""

    shape: Shape
    row_dim: int | None
    col_dim: int | None
    rows: int
    cols: int
    tile_rows: int
    tile_cols: int
    cells: tuple[Cell, ...]
    slots: tuple[Slot, ...]
    slots_per_row: int
    notes: tuple[str, ...] = field(default=())


def _view_dims(shape: Shape) -> tuple[int | None, int | None]:
    order = shape.layout_or_default().minor_to_major
    if shape.rank == 0:
        return None, None
    if shape.rank == 1:
        return None, 0
    row, col = sorted(order[:2])
    return row, col


def _first_tile_sizes(shape: Shape, row_dim: int | None, col_dim: int | None) -> tuple[int, int]:
    """The first tile's extent along the drawn row and column dims (1 where it does not cover them)."""
    layout = shape.layout_or_default()
    if not layout.tiles or COMBINE_DIMENSION in layout.tiles[0]:
        return 1, 1
    tile = layout.tiles[0]
    by_dim: dict[int, int] = {}
    for position, size in enumerate(reversed(tile)):
        if position < shape.rank:
            by_dim[layout.minor_to_major[position]] = size
    rows = by_dim.get(row_dim, 1) if row_dim is not None else 1
    cols = by_dim.get(col_dim, 1) if col_dim is not None else 1
    return rows, cols


def _padded_shape(shape: Shape, tile_rows: int, tile_cols: int, row_dim: int | None, col_dim: int | None) -> Shape:
    """The shape grown to its padded extents along the drawn dims, when its offsets then stay the same."""
    dims = list(shape.dimensions)
    layout = shape.layout_or_default()
    padded = layout.padded_dimensions
    for dim, tile in ((row_dim, tile_rows), (col_dim, tile_cols)):
        if dim is not None:
            target = -(-dims[dim] // tile) * tile
            dims[dim] = max(target, padded[dim]) if padded is not None else target
    if tuple(dims) == shape.dimensions:
        return shape
    grown = replace(shape, dimensions=tuple(dims), dynamic_dimensions=(False,) * shape.rank)
    try:
        grown.validate()
        same = tiled_dimensions(grown.dimensions, layout) == tiled_dimensions(shape.dimensions, layout)
    except ShapeError:
        return shape
    return grown if same else shape


def _shown(extent: int, tile: int, limit: int) -> int:
    if extent <= limit:
        return extent
    return max(tile, limit // tile * tile) if tile <= limit else tile


def layout_picture(
    shape: Shape | str, *, max_rows: int = 16, max_cols: int = 64, max_slots: int = 512
) -> LayoutPicture:
    """The data of a layout picture: grid cells with their offsets, and memory slots with their indices.

    >>> p = layout_picture("f32[3,5]{1,0:T(2,2)}")
    >>> (p.rows, p.cols), [c.offset for c in p.cells if c.row == 2][:3]
    ((4, 6), [12, 13, 16])
    """
    for name, value, most in (("max_rows", max_rows, MAX_GRID), ("max_cols", max_cols, MAX_GRID),
                              ("max_slots", max_slots, MAX_GRID * 8)):
        if not isinstance(value, int) or not 1 <= value <= most:
            raise ShapeError(f"{name} must be an integer from 1 to {most}, got {value!r}")
    shape = parse_shape(shape) if isinstance(shape, str) else shape
    if not isinstance(shape, Shape):
        raise ShapeError(f"expected a Shape or shape text, got {type(shape).__name__}")
    if not shape.is_array:
        raise ShapeError(f"only arrays can be drawn, not {shape}")
    if UNBOUNDED_SIZE in shape.dimensions:
        raise ShapeError(f"{shape} has an unbounded dimension and cannot be drawn")
    shape.validate()
    row_dim, col_dim = _view_dims(shape)
    tile_rows, tile_cols = _first_tile_sizes(shape, row_dim, col_dim)
    grown = _padded_shape(shape, tile_rows, tile_cols, row_dim, col_dim)
    extent_rows = grown.dimensions[row_dim] if row_dim is not None else 1
    extent_cols = grown.dimensions[col_dim] if col_dim is not None else 1
    rows, cols = _shown(extent_rows, tile_rows, max_rows), _shown(extent_cols, tile_cols, max_cols)
    notes = _notes(shape, row_dim, col_dim, rows < extent_rows or cols < extent_cols)
    cells = _cells(shape, grown, row_dim, col_dim, rows, cols, tile_rows, tile_cols)
    count = shape.physical_element_count()
    shown_slots = min(count, max_slots)
    if shown_slots < count:
        notes.append(f"memory order: the first {shown_slots:,} of {count:,} slots")
    slots = _slots(shape, shown_slots)
    per_row = tile_rows * tile_cols if 1 < tile_rows * tile_cols <= 32 else min(16, max(1, shown_slots))
    return LayoutPicture(shape, row_dim, col_dim, rows, cols, tile_rows, tile_cols, tuple(cells), tuple(slots),
                         per_row, tuple(notes))


def _notes(shape: Shape, row_dim: int | None, col_dim: int | None, cut: bool) -> list[str]:
    notes = []
    fixed = [d for d in range(shape.rank) if d not in (row_dim, col_dim)]
    if fixed:
        notes.append("slice at index 0 of dim" + ("s " if len(fixed) > 1 else " ") + ", ".join(map(str, fixed)))
    if cut:
        notes.append("too large to draw whole: showing the first tiles")
    return notes


def _cells(shape: Shape, grown: Shape, row_dim: int | None, col_dim: int | None, rows: int, cols: int,
           tile_rows: int, tile_cols: int) -> list[Cell]:
    grid = np.zeros((rows * cols, max(shape.rank, 1)), dtype=np.int64)[:, : shape.rank]
    r, c = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    if row_dim is not None:
        grid[:, row_dim] = r
    if col_dim is not None:
        grid[:, col_dim] = c
    inside = np.all(grid < np.array(shape.dimensions, dtype=np.int64), axis=1) if shape.rank else np.ones(1, bool)
    offsets: list[int | None] = [None] * (rows * cols)
    if shape.rank == 0:
        offsets = [0]
    elif grown is not shape or inside.all():
        offsets = linear_index(grown, grid).tolist()
    elif inside.any():
        for position, value in zip(np.flatnonzero(inside).tolist(), linear_index(shape, grid[inside]).tolist()):
            offsets[position] = value
    indices, flags = list(map(tuple, grid.tolist())), inside.tolist()
    return [Cell(i // cols, i % cols, indices[i] if flags[i] else None, offsets[i],
                 (i // cols // tile_rows, i % cols // tile_cols)) for i in range(rows * cols)]


def _slots(shape: Shape, count: int) -> list[Slot]:
    if count == 0:
        return []
    indices, valid = multi_index(shape, np.arange(count, dtype=np.int64))
    return [Slot(i, tuple(int(v) for v in indices[i]) if valid[i] else None) for i in range(count)]


# ----------------------------------------------------------------------------------------------------
# Drawing: one list of primitives in 1x units, two backends (SVG as is, PNG at 2x), one font, one size cap
# ----------------------------------------------------------------------------------------------------

FONT_FAMILY = "'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace"
FONT_FILES = ("DejaVuSansMono.ttf", "LiberationMono-Regular.ttf", "Menlo.ttc", "consola.ttf", "cour.ttf")
CHAR = 0.61
"""Advance of one monospace character per unit of font size (DejaVu Sans Mono: 1233/2048)."""
MAX_WIDTH = 1400
MAX_HEIGHT = 1000
"""The size cap of every picture, in 1x pixels (PNGs are written at 2x): it fits one screen."""
PNG_SCALE = 2
UNTILED_FILL = "#cfe2f3"
ROW_H = 20
GAP = 22
LABEL = 11


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    stroke: str = "#555555"
    width: float = 1


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str
    size: int = FONT
    color: str = "#000000"
    anchor: str = "start"


def text_width(text: str, size: int) -> float:
    """The drawn width of ``text`` in the monospace font at ``size``."""
    return len(text) * size * CHAR


def _tile_color(tile: tuple[int, int]) -> str:
    return PALETTE[(tile[0] * 3 + tile[1]) % len(PALETTE)]


def _index_label(index: tuple[int, ...]) -> str:
    return ",".join(map(str, index))


def _axis(count: int, fit: int) -> list[int | None]:
    """Which of ``count`` rows (or columns) to draw when ``fit`` fit: all, or a head, a gap (None) and a tail."""
    if count <= fit:
        return list(range(count))
    tail = max(1, min(8, fit // 4))
    head = max(1, fit - tail - 1)
    return [*range(head), None, *range(count - tail, count)]


def _hidden(axis: list[int | None]) -> tuple[int, int]:
    """The first and last position an axis with a gap leaves out."""
    gap = axis.index(None)
    before, after = axis[gap - 1], axis[gap + 1]
    assert before is not None and after is not None
    return before + 1, after - 1


def _dim_name(picture: LayoutPicture, dim: int | None) -> str:
    if dim is None:
        return ""
    shape = picture.shape
    letters = shape.dimension_letters() or ()
    letter = f" {letters[dim]}" if dim < len(letters) else ""
    return f"dim {dim}{letter} (size {shape.dimensions[dim]:,})"


def _is_tiled(picture: LayoutPicture) -> bool:
    return bool(picture.shape.layout_or_default().tiles)


def _fill(picture: LayoutPicture, index: tuple[int, ...] | None) -> str:
    if index is None:
        return PADDING_FILL
    if not _is_tiled(picture):
        return UNTILED_FILL
    row = index[picture.row_dim] // picture.tile_rows if picture.row_dim is not None else 0
    col = index[picture.col_dim] // picture.tile_cols if picture.col_dim is not None else 0
    return _tile_color((row, col))


def _grid_panel(picture: LayoutPicture, items: list[Rect | Text], top: float) -> float:
    """The logical grid with its axes; returns the y below it."""
    by_position = {(c.row, c.col): c for c in picture.cells}
    cell_w = max([text_width(str(c.offset), FONT) for c in picture.cells if c.offset is not None] + [
        text_width(str(max(picture.rows, picture.cols) - 1), LABEL), 2 * FONT * CHAR]) + 10
    row_label_w = text_width(str(picture.rows - 1), LABEL) + 10
    left = MARGIN + row_label_w
    columns = _axis(picture.cols, max(4, int((MAX_WIDTH - left - MARGIN - GAP) // cell_w)))
    rows = _axis(picture.rows, max(4, int(MAX_HEIGHT * 0.34 // ROW_H)))
    items.append(Text(MARGIN, top, "logical array: each cell shows its element offset in memory"
                      + (" (colour: first-level tile; grey: padding)" if _is_tiled(picture) else " (grey: padding)"),
                      LABEL, "#333333"))
    top += 18
    if picture.col_dim is not None:
        items.append(Text(left, top, f"columns: {_dim_name(picture, picture.col_dim)} \u2192", LABEL, "#1f4e79"))
    if picture.row_dim is not None:
        items.append(Text(left + max(260.0, text_width(f"columns: {_dim_name(picture, picture.col_dim)}", LABEL)
                                     + 40), top, f"rows: {_dim_name(picture, picture.row_dim)} \u2193", LABEL,
                          "#1f4e79"))
    top += 16
    xs: list[tuple[float, int | None]] = []
    x = left
    for column in columns:
        xs.append((x, column))
        x += cell_w if column is not None else GAP
    right = x
    for x, column in xs:  # column ticks
        label = "\u22ef" if column is None else str(column)
        width = cell_w if column is not None else GAP
        items.append(Text(x + width / 2, top, label, LABEL, "#555555", "middle"))
    top += 5
    y = top
    tiled = _is_tiled(picture)
    for row in rows:
        if row is None:
            first, last = _hidden(rows)
            items.append(Text(left, y + GAP * 0.7, f"\u2026 rows {first}\u2013{last} left out to fit the screen",
                              LABEL, "#555555"))
            y += GAP
            continue
        items.append(Text(left - 6, y + ROW_H * 0.7, str(row), LABEL, "#555555", "end"))
        for x, column in xs:
            if column is None:
                items.append(Text(x + GAP / 2, y + ROW_H * 0.7, "\u22ef", FONT, "#555555", "middle"))
                continue
            cell = by_position[row, column]
            items.append(Rect(x, y, cell_w, ROW_H, _fill(picture, cell.index), "#999999", 0.5))
            if cell.offset is not None:
                items.append(Text(x + cell_w / 2, y + ROW_H * 0.7, str(cell.offset), FONT,
                                  "#000000" if cell.index is not None else "#777777", "middle"))
            if tiled:
                for start, edge in ((column % picture.tile_cols == 0, x), ((column + 1) % picture.tile_cols == 0,
                                                                             x + cell_w)):
                    if start:
                        items.append(Rect(edge, y, 0, ROW_H, "none", "#000000", 2))
                for start, edge in ((row % picture.tile_rows == 0, y), ((row + 1) % picture.tile_rows == 0,
                                                                         y + ROW_H)):
                    if start:
                        items.append(Rect(x, edge, cell_w, 0, "none", "#000000", 2))
        y += ROW_H
    shape = picture.shape
    extent_rows = shape.dimensions[picture.row_dim] if picture.row_dim is not None else 1
    extent_cols = shape.dimensions[picture.col_dim] if picture.col_dim is not None else 1
    def part(count: int, extent: int, what: str) -> str:
        return f"all {extent:,} {what}" if count >= extent else f"{count:,} of {extent:,} {what}"

    shown = "showing " + (f"{part(picture.rows, extent_rows, 'rows')} and " if picture.row_dim is not None else "") \
        + (part(picture.cols, extent_cols, "columns") if picture.col_dim is not None else "the scalar")
    if picture.rows > extent_rows or picture.cols > extent_cols:
        shown += f", padded to {picture.rows}x{picture.cols} by whole tiles"
    if tiled:
        shown += f"; first-level tile {picture.tile_rows}x{picture.tile_cols} on these axes"
    if len(rows) < picture.rows or len(columns) < picture.cols:
        shown += " (\u22ef: cells left out to fit the screen)"
    items.append(Text(MARGIN, y + 16, shown, LABEL, "#333333"))
    items.append(Rect(right, top, 0, 0, "none", "none", 0))  # the panel's right edge, for the canvas width
    return y + 16


def _memory_panel(picture: LayoutPicture, items: list[Rect | Text], top: float) -> float:
    """The buffer in memory order with a byte-offset ruler; returns the y below it."""
    shape = picture.shape
    bits = shape.element_size_in_bits()
    items.append(Text(MARGIN, top, "memory order: each slot shows the logical index it holds; left: byte offset "
                      "of the row", LABEL, "#333333"))
    top += 10
    if not picture.slots:
        return top + 8
    labels = [_index_label(s.index) if s.index is not None else "pad" for s in picture.slots]
    slot_w = max(text_width(label, FONT - 1) for label in labels) + 10
    last = picture.slots[-1].offset
    ruler_w = text_width(f"byte {last * bits // 8:,}", LABEL) + (text_width("+4b", LABEL) if bits % 8 else 0) + 12
    left = MARGIN + ruler_w
    per_row = min(picture.slots_per_row, max(1, int((MAX_WIDTH - left - MARGIN) // slot_w)))
    slot_rows = -(-len(picture.slots) // per_row)
    rows = _axis(slot_rows, max(3, int(MAX_HEIGHT * 0.3 // ROW_H)))
    y = top
    for row in rows:
        if row is None:
            first, last = _hidden(rows)
            hidden = (last - first + 1) * per_row
            items.append(Text(left, y + GAP * 0.7, f"\u2026 {hidden:,} slots left out to fit the screen", LABEL,
                              "#555555"))
            y += GAP
            continue
        first = row * per_row
        bit = first * bits % 8
        ruler = f"byte {first * bits // 8:,}" + (f"+{bit}b" if bit else "")
        items.append(Text(left - 8, y + ROW_H * 0.7, ruler, LABEL, "#1f4e79", "end"))
        for k, slot in enumerate(picture.slots[first: first + per_row]):
            x = left + k * slot_w
            items.append(Rect(x, y, slot_w, ROW_H, _fill(picture, slot.index), "#999999", 0.5))
            items.append(Text(x + slot_w / 2, y + ROW_H * 0.7, labels[first + k], FONT - 1,
                              "#000000" if slot.index is not None else "#777777", "middle"))
        y += ROW_H
    return y


def picture_primitives(picture: LayoutPicture) -> tuple[list[Rect | Text], int, int]:
    """Rectangles and texts of both panels in 1x pixels, and the canvas width and height (at most the cap)."""
    items: list[Rect | Text] = [Text(MARGIN, MARGIN + 2, f"{picture.shape}", 14)]
    top = _grid_panel(picture, items, MARGIN + TITLE + 4.0)
    top = _memory_panel(picture, items, top + 30)
    for note in picture.notes:
        top += 16
        items.append(Text(MARGIN, top, "note: " + note, LABEL, "#aa0000"))
    right = max(item.x + item.w if isinstance(item, Rect) else
                item.x + text_width(item.text, item.size) * {"start": 1, "middle": 0.5, "end": 0}[item.anchor]
                for item in items)
    return items, int(min(MAX_WIDTH, right + MARGIN)), int(min(MAX_HEIGHT, top + MARGIN))


def picture_svg(picture: LayoutPicture) -> str:
    """The picture as SVG text (1x pixels; the same font as the PNG)."""
    items, width, height = picture_primitives(picture)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="{FONT_FAMILY}">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for item in items:
        if isinstance(item, Rect):
            if item.stroke == "none" and item.fill == "none":
                continue
            if item.w == 0 or item.h == 0:
                out.append(f'<line x1="{item.x:g}" y1="{item.y:g}" x2="{item.x + item.w:g}" y2="{item.y + item.h:g}" '
                           f'stroke="{item.stroke}" stroke-width="{item.width:g}"/>')
                continue
            out.append(f'<rect x="{item.x:g}" y="{item.y:g}" width="{item.w:g}" height="{item.h:g}" '
                       f'fill="{item.fill}" stroke="{item.stroke}" stroke-width="{item.width:g}"/>')
        else:
            anchor = "" if item.anchor == "start" else f' text-anchor="{item.anchor}"'
            out.append(f'<text x="{item.x:g}" y="{item.y:g}" font-size="{item.size}" fill="{item.color}"{anchor}>'
                       f"{escape(item.text)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def picture_png(picture: LayoutPicture) -> bytes:
    """The picture as PNG bytes at 2x for sharp text (needs Pillow)."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise ShapeError("PNG output needs Pillow: pip install 'xlashapes[pictures]' (or write .svg)") from None
    import io

    items, width, height = picture_primitives(picture)
    k = PNG_SCALE
    image = Image.new("RGB", (width * k, height * k), "white")
    draw = ImageDraw.Draw(image)
    fonts: dict[int, Any] = {}
    for item in items:
        if isinstance(item, Rect):
            if item.stroke == "none" and item.fill == "none":
                continue
            box = (item.x * k, item.y * k, (item.x + item.w) * k, (item.y + item.h) * k)
            if item.w == 0 or item.h == 0:
                draw.line(box, fill=item.stroke, width=max(1, round(item.width * k)))
            else:
                draw.rectangle(box, fill=None if item.fill == "none" else item.fill, outline=item.stroke,
                               width=max(1, round(item.width * k)))
        else:
            font = fonts.get(item.size)
            if font is None:
                font = fonts[item.size] = _font(ImageFont, item.size * k)
            anchor = {"start": "ls", "middle": "ms", "end": "rs"}[item.anchor]
            draw.text((item.x * k, item.y * k), item.text, fill=item.color, font=font, anchor=anchor)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", dpi=(72 * k, 72 * k))
    return buffer.getvalue()


def _font(image_font: Any, size: int) -> Any:
    """The monospace font the SVG names, at ``size`` pixels; Pillow's scalable default font without one."""
    for name in FONT_FILES:
        try:
            return image_font.truetype(name, size)
        except OSError:
            continue
    return image_font.load_default(size=size)


def save_picture(shape: Shape | str, path: str | Path, **limits: int) -> LayoutPicture:
    """Draw ``shape``'s layout to ``path`` (.svg or .png) and return what was drawn."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise ShapeError(f"cannot draw to {target.name or str(target)}: use a .svg or .png file name")
    picture = layout_picture(shape, **limits)
    data = picture_svg(picture).encode("utf-8") if suffix == ".svg" else picture_png(picture)
    try:
        target.write_bytes(data)
    except OSError as error:
        raise ShapeError(f"cannot write {target}: {error.strerror or error}") from None
    return picture


__all__: Sequence[str] = ["MAX_GRID", "MAX_HEIGHT", "MAX_WIDTH", "Cell", "LayoutPicture", "Slot", "layout_picture",
                          "picture_png", "picture_svg", "save_picture"]
