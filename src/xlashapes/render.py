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
FONT = 10


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
    shape = parse_shape(shape) if isinstance(shape, str) else shape
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
        notes.append(f"memory order: the first {shown_slots} of {count} slots")
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
        offsets = [int(v) for v in linear_index(grown, grid)]
    elif inside.any():
        for position, value in zip(np.flatnonzero(inside), linear_index(shape, grid[inside])):
            offsets[int(position)] = int(value)
    cells = []
    for i in range(rows * cols):
        row, col = i // cols, i % cols
        index = tuple(int(v) for v in grid[i]) if inside[i] else None
        cells.append(Cell(row, col, index, offsets[i], (row // tile_rows, col // tile_cols)))
    return cells


def _slots(shape: Shape, count: int) -> list[Slot]:
    if count == 0:
        return []
    indices, valid = multi_index(shape, np.arange(count, dtype=np.int64))
    return [Slot(i, tuple(int(v) for v in indices[i]) if valid[i] else None) for i in range(count)]


# ----------------------------------------------------------------------------------------------------
# Drawing: one list of primitives, two backends
# ----------------------------------------------------------------------------------------------------


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


def _tile_color(tile: tuple[int, int]) -> str:
    return PALETTE[(tile[0] * 3 + tile[1]) % len(PALETTE)]


def _index_label(index: tuple[int, ...]) -> str:
    return ",".join(map(str, index))


def picture_primitives(picture: LayoutPicture) -> tuple[list[Rect | Text], int, int]:
    """Rectangles and texts of both panels, and the canvas width and height."""
    items: list[Rect | Text] = []
    items.append(Text(MARGIN, MARGIN - 6, f"{picture.shape}", 13))
    top: float = MARGIN + TITLE
    grid_label = "logical array: each cell shows its linear index (grey: padding)"
    items.append(Text(MARGIN, top - 6, grid_label, 11, "#333333"))
    tile_of: dict[tuple[int, ...], tuple[int, int]] = {}
    for cell in picture.cells:
        x, y = MARGIN + cell.col * CELL, top + cell.row * CELL
        fill = _tile_color(cell.tile) if cell.index is not None else PADDING_FILL
        items.append(Rect(x, y, CELL, CELL, fill, "#888888", 0.5))
        if cell.offset is not None:
            items.append(Text(x + 3, y + CELL / 2 + 4, str(cell.offset), FONT, "#000000" if cell.index else "#777777"))
        if cell.index is not None:
            tile_of[cell.index] = cell.tile
    for tile_row in range(-(-picture.rows // picture.tile_rows)):
        for tile_col in range(-(-picture.cols // picture.tile_cols)):
            x, y = MARGIN + tile_col * picture.tile_cols * CELL, top + tile_row * picture.tile_rows * CELL
            w = min(picture.tile_cols, picture.cols - tile_col * picture.tile_cols) * CELL
            h = min(picture.tile_rows, picture.rows - tile_row * picture.tile_rows) * CELL
            items.append(Rect(x, y, w, h, "none", "#000000", 2))
    top += picture.rows * CELL + TITLE + 10.0
    items.append(Text(MARGIN, top - 6, "memory order: each slot shows the logical index it holds", 11, "#333333"))
    slot_w = CELL * 1.6
    for slot in picture.slots:
        row, col = divmod(slot.offset, picture.slots_per_row)
        sx, sy = MARGIN + col * slot_w, top + row * CELL
        if slot.index is None:
            fill = PADDING_FILL
        else:
            fill = _tile_color(tile_of[slot.index]) if slot.index in tile_of else "#f4f4f4"
        items.append(Rect(sx, sy, slot_w, CELL, fill, "#888888", 0.5))
        label = _index_label(slot.index) if slot.index is not None else "pad"
        items.append(Text(sx + 3, sy + CELL / 2 + 4, label, FONT - 1, "#000000" if slot.index else "#777777"))
    slot_rows = -(-len(picture.slots) // picture.slots_per_row) if picture.slots else 0
    top += slot_rows * CELL + 8
    for note in picture.notes:
        top += 16
        items.append(Text(MARGIN, top, "note: " + note, 11, "#aa0000"))
    right = max(item.x + (item.w if isinstance(item, Rect) else len(item.text) * item.size * 0.62) for item in items)
    return items, int(right + MARGIN), int(top + MARGIN)


def picture_svg(picture: LayoutPicture) -> str:
    """The picture as SVG text."""
    items, width, height = picture_primitives(picture)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="monospace">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for item in items:
        if isinstance(item, Rect):
            out.append(f'<rect x="{item.x:g}" y="{item.y:g}" width="{item.w:g}" height="{item.h:g}" '
                       f'fill="{item.fill}" stroke="{item.stroke}" stroke-width="{item.width:g}"/>')
        else:
            out.append(f'<text x="{item.x:g}" y="{item.y:g}" font-size="{item.size}" fill="{item.color}">'
                       f"{escape(item.text)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def picture_png(picture: LayoutPicture) -> bytes:
    """The picture as PNG bytes (needs Pillow)."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise ShapeError("PNG output needs Pillow: pip install 'xlashapes[pictures]' (or write .svg)") from None
    import io

    items, width, height = picture_primitives(picture)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    fonts: dict[int, Any] = {}
    for item in items:
        if isinstance(item, Rect):
            box = (item.x, item.y, item.x + item.w, item.y + item.h)
            draw.rectangle(box, fill=None if item.fill == "none" else item.fill, outline=item.stroke,
                           width=max(1, round(item.width)))
        else:
            font = fonts.get(item.size)
            if font is None:
                font = fonts[item.size] = _font(ImageFont, item.size)
            draw.text((item.x, item.y - item.size), item.text, fill=item.color, font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _font(image_font: Any, size: int) -> Any:
    try:
        return image_font.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one fixed-size default font
        return image_font.load_default()


def save_picture(shape: Shape | str, path: str | Path, **limits: int) -> LayoutPicture:
    """Draw ``shape``'s layout to ``path`` (.svg or .png) and return what was drawn."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise ShapeError(f"cannot draw to {target.name}: use a .svg or .png file name")
    picture = layout_picture(shape, **limits)
    if suffix == ".svg":
        target.write_text(picture_svg(picture))
    else:
        target.write_bytes(picture_png(picture))
    return picture


__all__: Sequence[str] = ["Cell", "LayoutPicture", "Slot", "layout_picture", "picture_png", "picture_svg",
                          "save_picture"]
