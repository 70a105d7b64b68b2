"""Layout pictures: the tiled-layout document's figures, checked against linear_index."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import xlashapes as xs
from cli_runner import run
from xlashapes.indexing import linear_index
from xlashapes.render import (
    FONT_FAMILY,
    MAX_HEIGHT,
    MAX_WIDTH,
    PNG_SCALE,
    UNTILED_FILL,
    Rect,
    Text,
    layout_picture,
    picture_png,
    picture_primitives,
    picture_svg,
    save_picture,
    text_width,
)


def _check_cells_against_linear_index(text: str) -> None:
    picture = layout_picture(text)
    shape = xs.parse_shape(text)
    for cell in picture.cells:
        if cell.index is not None:
            assert cell.offset == linear_index(shape, cell.index), cell
    for slot in picture.slots:
        if slot.index is not None:
            assert linear_index(shape, slot.index) == slot.offset


def test_figure_1_three_by_five_with_two_by_two_tiles() -> None:
    picture = layout_picture("f32[3,5]{1,0:T(2,2)}")
    assert (picture.rows, picture.cols) == (4, 6)  # padded to whole tiles
    grid = {(c.row, c.col): c.offset for c in picture.cells}
    assert [grid[0, c] for c in range(6)] == [0, 1, 4, 5, 8, 9]
    assert [grid[2, c] for c in range(6)] == [12, 13, 16, 17, 20, 21]
    assert grid[2, 3] == 17  # the document's worked example
    padding = [(c.row, c.col) for c in picture.cells if c.index is None]
    assert (3, 0) in padding and (0, 5) in padding and len(padding) == 9
    _check_cells_against_linear_index("f32[3,5]{1,0:T(2,2)}")


def test_figure_2_four_by_eight_with_two_level_tiles() -> None:
    picture = layout_picture("f32[4,8]{1,0:T(2,4)(2,1)}")
    grid = {(c.row, c.col): c.offset for c in picture.cells}
    assert [grid[0, c] for c in range(8)] == [0, 2, 4, 6, 8, 10, 12, 14]
    assert [grid[1, c] for c in range(8)] == [1, 3, 5, 7, 9, 11, 13, 15]
    assert [grid[2, c] for c in range(4)] == [16, 18, 20, 22]
    assert [s.index for s in picture.slots[:4]] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    _check_cells_against_linear_index("f32[4,8]{1,0:T(2,4)(2,1)}")


@pytest.mark.parametrize("text", ["f32[2,3]{0,1}", "s8[5,7,3]{0,2,1:T(2,4)}", "f32[7]{0:T(4)}", "f32[]",
                                  "f32[2,3]{1,0:L(8)}", "bf16[9,130]{1,0:T(8,128)(2,1)}", "f32[0,3]"])
def test_other_layouts_match_linear_index(text: str) -> None:
    _check_cells_against_linear_index(text)


def test_large_arrays_are_cut_to_first_tiles() -> None:
    picture = layout_picture("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}")
    assert picture.rows == 16 and picture.cols == 128
    assert any("first tiles" in note for note in picture.notes)
    assert any("slice" in note for note in picture.notes)


def test_svg_is_well_formed_and_writes_the_numbers() -> None:
    svg = picture_svg(layout_picture("f32[3,5]{1,0:T(2,2)}"))
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "17" in texts and "2,3" in texts and "pad" in texts


def test_png_opens_with_pillow_and_has_the_picture_size(tmp_path: Path) -> None:
    image_module = pytest.importorskip("PIL.Image")
    picture = save_picture("f32[4,8]{1,0:T(2,4)(2,1)}", tmp_path / "fig2.png")
    with image_module.open(tmp_path / "fig2.png") as image:
        assert image.format == "PNG"
        width, height = image.size
    assert width >= picture.cols * 34 and height >= picture.rows * 34
    image = image_module.open(io.BytesIO(picture_png(picture)))
    assert np.asarray(image).std() > 0  # not a blank canvas


def test_bad_output_names_and_shapes_are_shape_errors(tmp_path: Path) -> None:
    with pytest.raises(xs.ShapeError, match=r"\.svg or \.png"):
        save_picture("f32[2]", tmp_path / "x.pdf")
    with pytest.raises(xs.ShapeError):
        layout_picture("(f32[2], f32[3])")
    with pytest.raises(xs.ShapeError):
        layout_picture("f32[?]")


def test_cli_draw_index_offset(tmp_path: Path) -> None:
    result = run("draw", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "layout.svg").exists()
    assert run("index").stdout.strip().endswith("element offset 17, byte 68")
    assert "index (2,3)" in run("offset").stdout
    assert "padding" in run("offset", "f32[3,5]{1,0:T(2,2)}", "9").stdout
    bad = run("index", "f32[3,5]", "3,3")
    assert bad.returncode == 2 and "out of range" in bad.stderr and "Traceback" not in bad.stderr


# ----------------------------------------------------------------------------------------------------------------
# Readable at real TPU sizes (issue 15): one size cap, axes, cells fit their labels, byte ruler, 2x PNG, one font
# ----------------------------------------------------------------------------------------------------------------


REAL_SHAPES = ["bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}", "s4[1024]{0:T(1024)(128)(8,1)E(4)}",
               "f32[3,5]{1,0:T(2,2)}", "s32[8388608,8,4]{2,1,0:T(8,128)}", "f32[128,256,896,18]{0,3,2,1:T(8,128)}"]


def _svg_texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]


@pytest.mark.parametrize("text", REAL_SHAPES)
def test_real_shapes_fit_one_screen(text: str) -> None:
    picture = layout_picture(text, max_rows=512, max_cols=512)
    items, width, height = picture_primitives(picture)
    assert width <= MAX_WIDTH and height <= MAX_HEIGHT
    for item in items:  # nothing is drawn outside the canvas
        if isinstance(item, Rect):
            assert item.x + item.w <= width and item.y + item.h <= height, item
        else:
            assert item.y <= height, item


@pytest.mark.parametrize("text", [*REAL_SHAPES, "bf16[9,130]{1,0:T(8,128)(2,1)}", "f32[2,3]{0,1}"])
def test_every_label_fits_its_cell(text: str) -> None:
    items, _, _ = picture_primitives(layout_picture(text))
    cells = [item for item in items if isinstance(item, Rect) and item.w > 0 and item.h > 0 and item.fill != "none"]
    labels = [item for item in items if isinstance(item, Text) and item.anchor == "middle"]
    boxes = {(round(c.x + c.w / 2, 3), round(c.y, 3)): c for c in cells}
    checked = 0
    for label in labels:
        box = next((c for (cx, _), c in boxes.items() if cx == round(label.x, 3) and c.y < label.y < c.y + c.h), None)
        if box is not None:
            assert text_width(label.text, label.size) < box.w, (label, box)
            checked += 1
    assert checked >= 10


def test_axes_name_the_dimension_and_its_size() -> None:
    texts = _svg_texts(picture_svg(layout_picture("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")))
    assert any(t.startswith("columns: dim 3 x (size 16,384)") for t in texts)
    assert any(t.startswith("rows: dim 2 y (size 1,280)") for t in texts)
    assert "127" in texts and "131072" in texts  # the last column of the first tile; the second tile row starts
    assert any("showing 16 of 1,280 rows and 128 of 16,384 columns" in t for t in texts)
    permuted = _svg_texts(picture_svg(layout_picture("f32[4,6]{0,1}")))
    assert any(t.startswith("columns: dim 1 x (size 6)") for t in permuted)


def test_byte_ruler_counts_bytes_and_bits() -> None:
    texts = _svg_texts(picture_svg(layout_picture("f32[4,8]{1,0:T(2,4)(2,1)}")))
    assert "byte 0" in texts and "byte 32" in texts  # 8 slots of 4 bytes per row
    packed = _svg_texts(picture_svg(layout_picture("s4[9]{0:T(3)E(4)}")))
    assert ["byte 0", "byte 1+4b", "byte 3"] == [t for t in packed if t.startswith("byte ")]  # 3 slots of 4 bits


def test_untiled_layouts_are_not_coloured_as_tiles() -> None:
    items, _, _ = picture_primitives(layout_picture("f32[3,4]{0,1}"))
    fills = {item.fill for item in items if isinstance(item, Rect) and item.w > 0 and item.h > 0}
    assert fills == {UNTILED_FILL}
    tiled, _, _ = picture_primitives(layout_picture("f32[4,4]{1,0:T(2,2)}"))
    assert len({item.fill for item in tiled if isinstance(item, Rect) and item.w > 0 and item.h > 0}) == 4


def test_png_is_2x_and_svg_names_the_png_font(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from PIL import Image

    picture = layout_picture("s4[1024]{0:T(1024)(128)(8,1)E(4)}")
    _, width, height = picture_primitives(picture)
    with Image.open(io.BytesIO(picture_png(picture))) as image:
        assert image.size == (width * PNG_SCALE, height * PNG_SCALE)
    assert f'font-family="{FONT_FAMILY}"' in picture_svg(picture)
    assert "DejaVu Sans Mono" in FONT_FAMILY


@pytest.mark.parametrize(("limit", "value"), [("max_rows", 0), ("max_cols", -1), ("max_rows", 10**9),
                                              ("max_slots", 10**9), ("max_cols", 2.5)])
def test_limits_are_bounded(limit: str, value: object) -> None:
    with pytest.raises(xs.ShapeError, match=limit):
        layout_picture("f32[4,4]", **{limit: value})  # type: ignore[arg-type]


def test_write_errors_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(xs.ShapeError, match=r"cannot write .*missing_dir/x\.svg: No such file"):
        save_picture("f32[2]", tmp_path / "missing_dir" / "x.svg")
