"""Layout pictures: the tiled-layout document's figures, checked against linear_index."""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import xlashapes as xs
from xlashapes.indexing import linear_index
from xlashapes.render import layout_picture, picture_png, picture_svg, save_picture


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
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "xlashapes", *args], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)

    result = run("draw")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "layout.svg").exists()
    assert run("index").stdout.strip().endswith("element offset 17, byte 68")
    assert "index (2,3)" in run("offset").stdout
    assert "padding" in run("offset", "f32[3,5]{1,0:T(2,2)}", "9").stdout
    bad = run("index", "f32[3,5]", "3,3")
    assert bad.returncode == 2 and "out of range" in bad.stderr and "Traceback" not in bad.stderr
