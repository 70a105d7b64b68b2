"""Sub-tiled layouts with a short logical minor dim outside the tiles: converted in bands of the permuted array
(:mod:`xlashapes.physical._permuted`), bit for bit as on the NumPy path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes.physical import _permuted
from xlashapes.physical._geometry import _geometry

pytest.importorskip("numba")

from test_physical_fast import check_both_paths, compiled_for_any_size, routes_while_tuning  # tests/ on sys.path

FAST = settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def bands(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Compiled kernels for arrays of any size; each call of the route recorded (laid out: True, read back: False)
    when it took the array."""
    compiled_for_any_size(monkeypatch)
    taken: list[bool] = []
    real = _permuted.permuted_convert

    def spy(*args: Any) -> bool:
        done = real(*args)
        if done:
            taken.append(args[5])
        return done

    monkeypatch.setattr("xlashapes.physical._convert.permuted_convert", spy)
    yield taken


def _cut(text: str) -> tuple[str, int, int] | None:
    shape = xs.parse_shape(text)
    geometry = _geometry(shape)
    found = _permuted.permuted_bands(geometry, geometry.storage.itemsize)
    return None if found is None else (str(found.turned), found.axis, found.ranges)


def test_the_bands_cut_an_untiled_dim_of_the_permuted_array() -> None:
    # the minor dim (5) is the physical major one: bands of dim 1, five ranges each (slabs of the major dim would read
    # the array 5 bytes apart)
    assert _cut("u8[100,12,5592,5]{0,2,1,3:T(8,128)(4,1)}") == ("u8[5,12,5592,100]{3,2,1,0:T(8,128)(4,1)}", 1, 5)
    assert _cut("bf16[2000,100,100,2]{1,2,0,3:T(8,128)(2,1)}") == (
        "bf16[2,2000,100,100]{3,2,1,0:T(8,128)(2,1)}", 0, 2)
    # E(4) fields: where the regroup kernel makes their groups in short runs (of 2 here), not in long ones (of 5376)
    assert _cut("s4[2000,100,100,2]{1,2,0,3:T(8,128)(2,1)E(4)}") is not None
    assert _cut("s4[12,500,4,384,7]{1,0,3,2,4:T(8,128)(2,1)E(4)}") is None
    assert _cut("u8[100,12,5592,48]{0,2,1,3:T(8,128)(4,1)}") is None  # (a minor dim of more than 16 bytes)
    assert _cut("u8[100,12,5592,5]{3,2,1,0:T(8,128)(4,1)}") is None  # (in order: the minor dim in the tiles)
    assert _cut("u8[100,12,5592,5]{0,1,2,3:T(8,128)(4,1)}") is None  # (reversed: _transposed's)
    assert _cut("f32[500,100,100,3]{2,1,3,0:T(8,128)}") is None  # (no sub-tiles)
    assert _cut("u8[100,5592,5]{0,1,2:T(8,128)(4,1)}") is None  # (rank 3 reversed)
    assert _cut("u8[5592,5]{0,1:T(8,128)(4,1)}") is None  # (rank 2: every dim in the tiles)
    assert _cut("u8[100,12,5592,5]{2,0,1,3:T(8,128)(4,1)}") is not None
    assert _cut("u8[100,3,5,5]{2,0,1,3:T(8,128)(4,1)}") is None  # (bands' runs of the array under LEAST_RUN)
    assert _cut("u8[12,12,128,256,7]{2,1,4,3,0:T(8,128)(4,1)}") is None  # (the minor dim not the most major one)
    assert _cut("s8[256,4,256,8,16]{2,0,1,3,4:T(8,128)(4,1)}") is None  # (ranges of 64 KiB, or runs of 16 bytes)


def test_bands_of_2_d_tiles_cut_whole_tile_rows_of_their_first_dim() -> None:
    # rank 3, the minor dim the physical major one and the others both in the tiles: a band is some tile rows of the
    # first tiled dim, one range for each index of the minor dim; read back, minor dims of up to 48 bytes
    shape = xs.parse_shape("bf16[1000,699,24]{1,0,2:T(16,128)(2,1)}")
    geometry = _geometry(shape)
    assert _permuted.permuted_bands(geometry, 2, to=True) is None  # (laid out: 48 bytes, more than SHORT_MINOR)
    cut = _permuted.permuted_bands(geometry, 2, to=False)
    assert cut is not None and (str(cut.turned), cut.axis, cut.ranges, cut.step) == (
        "bf16[24,1000,699]{2,1,0:T(16,128)(2,1)}", 0, 24, 16)
    assert cut.one == 16 * 768 * 2 and cut.rows % 16 == 0  # (a tile row: 16 rows of 699 padded to 768)
    assert _cut("bf16[1000,699,4]{1,0,2:T(16,128)(2,1)}") is not None  # (8 bytes: laid out so too)
    assert _cut("u8[1000,1000,8]{1,0,2:T(8,128)(4,1)}") is None  # ((4,1) sub-tiles: no tile-row bands)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_permuted, "TILE_ROWS", False)
        assert _permuted.permuted_bands(geometry, 2, to=False) is None


@pytest.mark.parametrize(("text", "laid"), [
    ("u8[30,12,57,5]{0,2,1,3:T(8,128)(4,1)}", True), ("bf16[40,10,10,2]{1,2,0,3:T(8,128)(2,1)}", True),
    ("s8[16,25,12,4]{1,2,0,3:T(8,128)(4,1)}", False), ("s4[30,10,10,2]{1,2,0,3:T(8,128)(2,1)E(4)}", True),
    ("pred[20,10,30,5]{2,0,1,3:T(8,128)(4,1)}", True), ("f16[10,20,30,5]{2,0,1,3:T(16,128)(2,1)}", True),
    ("u8[20,10,30,9]{2,0,1,3:T(8,128)(4,1)}", False), ("s8[20,10,30,2]{2,1,0,3:T(8,128)(4,1)}", True),
    ("bf16[60,37,20]{1,0,2:T(8,128)(2,1)}", False), ("bf16[60,37,17]{1,0,2:T(16,128)(2,1)}", False),
    ("s8[16,25,12,24]{1,2,0,3:T(8,128)(4,1)}", False),
])  # (laid out in (4,1) sub-tiles: from runs of fewer than 8 bytes that are not one word; bands of tile rows, of 8
# and 16, the last band's last one short; minor dims over 16 bytes read back only)
@pytest.mark.parametrize(("rows", "threads"), [(0, 1), (7, 2), (1, 1)])  # (one band; bands of 7 rows, the last short)
def test_layouts_go_in_bands_of_the_permuted_array(bands: list[bool], monkeypatch: pytest.MonkeyPatch, text: str,
                                                    laid: bool, rows: int, threads: int) -> None:
    monkeypatch.setattr(_permuted, "LEAST_RUN", 1)  # (small arrays: runs of a few bytes in bands of a row)
    monkeypatch.setattr(_permuted, "LEAST_RANGE", 1)
    shape = xs.parse_shape(text)
    cut = _permuted.permuted_bands(_geometry(shape), _geometry(shape).storage.itemsize, laid)
    assert cut is not None and (rows < 2 or -(-cut.turned.dimensions[cut.depth] // cut.step) % rows), text
    if rows:
        monkeypatch.setattr(_permuted, "BAND_BYTES", rows * cut.ranges * cut.one)
    check_both_paths(monkeypatch, shape, 1, 19, True, 3, threads)
    assert bands.count(False) == 3 and bands.count(True) == (2 if laid else 0), bands  # (read back 3 times, laid out 2)


@pytest.mark.parametrize("to", [True, False])
def test_large_copies_time_the_bands_against_the_conversion_without_them(
    bands: list[bool], monkeypatch: pytest.MonkeyPatch, to: bool
) -> None:
    # the rules that pick the bands were measured against the generic kernel of their day: a large copy takes the
    # bands and the conversion without them in turn, then keeps the faster (the same bytes either way)
    monkeypatch.setattr(_permuted, "LEAST_RUN", 1)
    monkeypatch.setattr(_permuted, "LEAST_RANGE", 1)
    ran = routes_while_tuning(monkeypatch, xs.parse_shape("u8[9,40,5,3]{1,2,0,3:T(8,128)(4,1)}"), to,
                              lambda: len(bands))
    assert True in ran and False in ran, ran


@st.composite
def sub_tiled_shapes(draw: st.DrawFn) -> xs.Shape:
    """A rank 3-5 layout with (2,1) or (4,1) sub-tiles whose short logical minor dim is the most major physical one."""
    rank = draw(st.integers(3, 5))
    dims = [draw(st.integers(1, 9)) for _ in range(rank)]
    dims[draw(st.integers(0, rank - 2))] = draw(st.integers(8, 70))
    order = [*draw(st.permutations(range(rank - 1))), rank - 1]
    etype, sub = draw(st.sampled_from([("u8", (4, 1)), ("pred", (4, 1)), ("bf16", (2, 1)), ("s4", (2, 1))]))
    tile = (draw(st.sampled_from([8, 16])), draw(st.sampled_from([8, 128])))
    bits = {"s4": 4}.get(etype, 0)
    return xs.make_shape(etype, dims, minor_to_major=order, tiles=[tile, sub], element_size_in_bits=bits)


@FAST
@given(sub_tiled_shapes(), st.integers(0, 2**32 - 1), st.sampled_from([1000, 5000, 1 << 20]), st.sampled_from([1, 2]))
def test_bands_of_the_permuted_array_equal_numpy_path(shape: xs.Shape, seed: int, band: int, threads: int) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        compiled_for_any_size(monkeypatch)
        monkeypatch.setattr(_permuted, "BAND_BYTES", band)
        monkeypatch.setattr(_permuted, "LEAST_RUN", 1)
        monkeypatch.setattr(_permuted, "LEAST_RANGE", 1)
        check_both_paths(monkeypatch, shape, 0, seed % 1000, bool(seed & 1), seed % 64, threads)
