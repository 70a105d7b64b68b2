"""Tiled transposes whose (p,1) sub-tiles' rows are an odd length: through slabs of the transposed array laid out
in order (:mod:`xlashapes.physical._transposed`), bit for bit as on the NumPy path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes.physical import _copy, _dispatch, _transposed, from_physical, to_physical
from xlashapes.physical._geometry import _geometry

pytest.importorskip("numba")

from test_physical import random_array, same_bits  # tests/ is on sys.path
from test_physical_fast import (
    check_both_paths,
    compiled_for_any_size,
    numpy_path,
    padding_values,
    routes_while_tuning,
)

FAST = settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def slabs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Compiled kernels for arrays of any size; the route's calls that took it (their row counts) recorded."""
    compiled_for_any_size(monkeypatch)
    taken: list[int] = []
    real = _transposed.transposed_convert

    def spy(logical: np.ndarray[Any, Any], *args: Any) -> bool:
        done = real(logical, *args)
        if done:
            taken.append(logical.shape[1])
        return done

    monkeypatch.setattr("xlashapes.physical._convert.transposed_convert", spy)
    yield taken


@pytest.mark.parametrize(("text", "turned"), [
    ("pred[1024,3355]{0,1:T(8,128)(4,1)}", "pred[3355,1024]{1,0:T(8,128)(4,1)}"),
    ("bf16[100,777]{0,1:T(16,128)(2,1)}", "bf16[777,100]{1,0:T(16,128)(2,1)}"),
    ("f32[100,777]{0,1:T(8,128)}", None),  # (no sub-tiles)
    ("bf16[100,777]{1,0:T(8,128)(2,1)}", None),  # (in order)
    ("bf16[4,100,777]{1,2,0:T(8,128)(2,1)}", None),  # (rank 3)
    ("u4[100,777]{0,1:T(8,128)(2,1)E(4)}", "u4[777,100]{1,0:T(8,128)(2,1)E(4)}"),  # (fields packed in order)
])
def test_the_route_is_the_transposed_array_in_order(text: str, turned: str | None) -> None:
    found = _transposed.turned_shape(_geometry(xs.parse_shape(text)))
    assert (None if found is None else str(found)) == turned


@pytest.mark.parametrize("text", ["pred[300,1001]{0,1:T(8,128)(4,1)}", "s8[130,1003]{0,1:T(32,128)(4,1)}",
                                  "bf16[257,515]{0,1:T(8,128)(2,1)}", "f16[64,999]{0,1:T(16,128)(2,1)}",
                                  "u8[1,6]{0,1:T(8,128)(4,1)}", "s4[300,501]{0,1:T(8,128)(2,1)E(4)}"])
@pytest.mark.parametrize(("slab", "threads", "stream"), [(1 << 24, 1, False), (4096, 2, True), (1, 1, True)])
# (slabs of every row, of a few tile rows, and of one tile row's tiles a tile column at a time)
@pytest.mark.parametrize("words", [True, False])
def test_odd_rows_of_sub_tiled_transposes_equal_the_numpy_path(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, text: str, slab: int, threads: int, stream: bool, words: bool
) -> None:
    monkeypatch.setattr(_transposed, "WORDS", words)  # (as words, or through slabs)
    monkeypatch.setattr(_transposed, "SLAB_BYTES", slab)  # (small: many slabs, the last one short)
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, 1, 7, stream, 16, threads)
    assert slabs and all(rows == shape.dimensions[1] for rows in slabs)


@FAST
@given(st.sampled_from(["pred", "s8", "u8", "f8e4m3fn", "bf16", "f16", "s16", "s4", "u4"]), st.integers(1, 300),
       st.integers(1, 700), st.sampled_from([8, 16, 32]), st.integers(0, 2**32), st.sampled_from([64, 4096, 1 << 24]),
       st.booleans(), st.data())
def test_sub_tiled_transposes_round_trip_through_slabs(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, etype: str, a: int, b: int, rows: int, seed: int, slab: int,
    words: bool, data: st.DataObject,
) -> None:
    slabs.clear()  # (the fixture's list, shared by the examples)
    monkeypatch.setattr(_transposed, "WORDS", words)  # (as words, or through slabs)
    bits = xs.element_type(etype).bits
    p = 4 if bits == 8 else 2
    b += b % p == 0  # (an odd row length for the sub-tiles: the route's layouts)
    shape = xs.parse_shape(f"{etype}[{a},{b}]{{0,1:T({rows},128)({p},1){'E(4)' if bits == 4 else ''}}}")
    monkeypatch.setattr(_transposed, "SLAB_BYTES", slab)
    check_both_paths(monkeypatch, shape, data.draw(padding_values(etype)), seed % 2**32, False, seed % 64)
    assert len(slabs) == 5  # (laid out twice, read back three times: each through the slabs)


WORD_CASES = ["bf16[600,2049]{0,1:T(8,128)(2,1)}", "bf16[257,515]{0,1:T(16,128)(2,1)}",
              "pred[301,1001]{0,1:T(8,128)(4,1)}", "u8[130,1002]{0,1:T(32,128)(4,1)}",
              "s8[131,1003]{0,1:T(8,128)(4,1)}",
              "f16[64,999]{0,1:T(8,128)(2,1)}", "u8[3,66]{0,1:T(8,128)(4,1)}"]


@pytest.mark.parametrize("text", WORD_CASES)
@pytest.mark.parametrize(("threads", "offset"), [(1, 0), (2, 16)])
def test_odd_rows_move_as_words_at_their_own_offsets(
    monkeypatch: pytest.MonkeyPatch, text: str, threads: int, offset: int
) -> None:
    # a (p,1) sub-tile is p neighbours of one logical row: the layout is the tiled transpose of those p-element words
    # (bf16 [A,B]{0,1:T(8,128)(2,1)}: u32 [A,(B+1)/2]{0,1:T(4,128)}); rows of an odd length put every other row's
    # words off the 4-byte grid, which merged squares read and write at any offset (rows in pairs: whole words
    # apart); the rows' cut-short last words and the rows past the last pair go by NumPy. bf16 [4096,8191] 'to' /
    # 'from' 2.9 / 2.8 -> 1.7 / 2.0x memcpy (slabs of the transposed array before: two passes)
    compiled_for_any_size(monkeypatch)
    tables, moved = _dispatch.tabler(), []
    for name in ("merged_squares", "merged_staged", "merged_squares_canonical", "merged_staged_canonical"):
        real = getattr(tables, name)
        monkeypatch.setattr(tables, name, lambda *args, real=real, name=name: moved.append(name) or real(*args))
    real, words = _transposed._word_convert, []
    monkeypatch.setattr(_transposed, "_word_convert", lambda *args: real(*args) and not words.append(args[1].dims))
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, 1, 11, True, offset, threads)  # (padding 1: not the zeros around it)
    assert len(words) == 5, text  # (laid out twice, read back three times: each as words)
    assert moved or shape.dimensions[0] < 16, text  # (by merged squares, but too few rows for a square: NumPy)


def test_rows_of_few_words_keep_the_slabs(slabs: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # rows of fewer than LEAST_WORDS whole words (bf16 rows of 31 elements: 15) make merged squares with too few rows
    # across: those go through slabs; from LEAST_WORDS on, as words
    real, words = _transposed._word_convert, []
    monkeypatch.setattr(_transposed, "_word_convert", lambda *args: real(*args) and not words.append(args[1].dims))
    short, long = 2 * _transposed.LEAST_WORDS - 1, 2 * _transposed.LEAST_WORDS + 1
    for b in (short, long):
        check_both_paths(monkeypatch, xs.parse_shape(f"bf16[300,{b}]{{0,1:T(8,128)(2,1)}}"), None, 5, True, 0)
    assert slabs == [short] * 5 + [long] * 5 and words == [(300, long)] * 5


@FAST
@given(st.lists(st.integers(1, 40), min_size=2, max_size=3), st.sampled_from([1, 2, 4, 8]), st.data())
def test_copies_with_rows_off_the_element_grid_equal_numpy(
    monkeypatch: pytest.MonkeyPatch, shape: list[int], width: int, data: st.DataObject
) -> None:
    # a view whose axes step by any number of bytes (a part of an element included) copied by merged squares, which
    # take the rows' byte offsets: the same elements as NumPy's copy, nothing else written
    compiled_for_any_size(monkeypatch)
    dtype = np.dtype(f"u{width}")
    order = data.draw(st.permutations(range(len(shape))))
    strides, span = [0] * len(shape), width
    for axis in reversed(order):  # (the source: each axis a few bytes past the ones inside it)
        strides[axis] = span + data.draw(st.integers(0, 2 * width))
        span = strides[axis] * shape[axis]
    room = np.random.default_rng(len(shape)).integers(0, 256, span + 128, dtype=np.uint8)
    start = data.draw(st.integers(0, 63))  # (any alignment)
    base = room[start : start + (span // width + 1) * width].view(dtype)
    source = np.lib.stride_tricks.as_strided(base, tuple(shape), tuple(strides))
    target = np.full(shape, 7, dtype)
    _copy._copy(target, source, _dispatch.run_settings(1 << 30, 1, target.nbytes))
    assert np.array_equal(target, source)
    turned = np.full(shape[::-1], 7, dtype).T  # (the destination transposed too)
    _copy._copy(turned, source, _dispatch.run_settings(1 << 30, 1, turned.nbytes))
    assert np.array_equal(turned, source)


def test_strided_inputs_and_outputs_take_the_slabs_too(slabs: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    shape = xs.parse_shape("bf16[120,333]{0,1:T(8,128)(2,1)}")
    wide = random_array("bf16", (120, 401), 3)
    x = wide[:, 10:343]  # (rows 401 elements apart)
    expected = numpy_path(monkeypatch, to_physical, np.ascontiguousarray(x), shape)
    assert np.array_equal(to_physical(x, shape), expected)
    into = np.zeros((333, 120), x.dtype).T  # (a Fortran-order result)
    assert from_physical(expected, shape, out=into) is into
    assert same_bits(into, np.ascontiguousarray(x))
    assert len(slabs) == 2


def test_rows_of_whole_words_keep_the_generic_kernel(slabs: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    shape = xs.parse_shape("pred[300,1004]{0,1:T(8,128)(4,1)}")
    check_both_paths(monkeypatch, shape, None, 5, True, 0)
    assert not slabs
    x = random_array("pred", (300, 1005), 5)[:, :1004]  # (but rows 1005 apart: the route)
    assert np.array_equal(to_physical(x, shape), numpy_path(monkeypatch, to_physical, x, shape))
    assert slabs == [1004]


def test_packed_fields_laid_out_from_long_rows_keep_the_packed_transpose(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    shape = xs.parse_shape(f"s4[64,{_transposed.PACKED_ROWS + 1}]{{0,1:T(8,128)(2,1)E(4)}}")
    x = random_array("s4", shape.dimensions, 9)
    got = to_physical(x, shape)
    assert np.array_equal(got, numpy_path(monkeypatch, to_physical, x, shape))
    assert not slabs  # (laid out: the packed transpose)
    assert same_bits(from_physical(got, shape), x)
    assert slabs == [_transposed.PACKED_ROWS + 1]  # (read back: the slabs)


@pytest.mark.parametrize("text", ["pred[40,6,56,42]{0,1,2,3:T(8,128)(4,1)}", "u8[30,5,3,20]{0,1,2,3:T(32,128)(4,1)}",
                                  "s8[3,5,7,11,23]{0,1,2,3,4:T(8,128)(4,1)}"])  # (minor dims over 16: not stacked)
@pytest.mark.parametrize(("slab", "threads"), [(1 << 24, 1), (1, 2)])  # (one slab, or one index of the dim a slab)
def test_reversed_layouts_are_read_back_in_order_slab_by_slab(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, text: str, slab: int, threads: int
) -> None:
    monkeypatch.setattr(_transposed, "SLAB_BYTES", slab)
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, 0, 13, True, 16, threads)
    dims = shape.dimensions
    laid = 2 if len(dims) > 3 and dims[1] % 4 >= 2 and slab > 1 else 0  # (words 2 or 3 elements short, 4 a slab)
    assert len(slabs) == 3 + laid  # (read back three times; laid out directly, faster so, but for those words)


@pytest.mark.parametrize(("text", "rows"), [("u8[30,6,5,80]{0,1,2,3:T(32,128)(4,1)}", 64),
                                            ("pred[30,6,5,20]{0,1,2,3:T(8,128)(4,1)}", 20),
                                            ("s8[30,6,5,40]{0,1,2,3:T(8,128)(4,1)}", 40)])
def test_reversed_layouts_read_back_in_slabs_of_whole_lines(slabs: list[int], monkeypatch: pytest.MonkeyPatch,
                                                             text: str, rows: int) -> None:
    # read back, each slab writes whole lines of the logical rows (or all of them): slabs of half a line left each
    # line written twice, far apart (s8[1024,512,64]{0,1,2:T(8,128)(4,1)} 'from' 18x memcpy against 5.5x)
    one = _one_index(text)
    monkeypatch.setattr(_transposed, "SLAB_BYTES", _transposed.LEAST_INDICES * one)  # (else: all of them a slab)
    cuts: list[int] = []
    real = _transposed.convert_bands
    monkeypatch.setattr(_transposed, "convert_bands", lambda logical, cut, *args: (
        cuts.append(cut.rows), real(logical, cut, *args))[1])
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    data = numpy_path(monkeypatch, to_physical, x, shape)
    got = from_physical(data, shape)
    assert same_bits(got, x)
    assert cuts == [rows], cuts
    most = _transposed.LEAST_INDICES + 2
    monkeypatch.setattr(_transposed, "MOST_SLAB", most * one)  # (no more than MOST_SLAB bytes a slab)
    assert same_bits(from_physical(data, shape), x)
    assert cuts[1:] == [most], cuts


def test_reversed_layouts_read_back_time_their_slabs_against_the_generic_kernel(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:  # (``slabs``: the compiled kernels at any size)
    # read back, the slabs (rank 4 and up) are one plan and the conversion without them the other: a large copy
    # takes both in turn, then keeps the faster; the bytes are the same whichever runs
    cuts: list[int] = []
    real = _transposed.convert_bands
    monkeypatch.setattr(_transposed, "convert_bands", lambda logical, cut, *args: (
        cuts.append(cut.rows), real(logical, cut, *args))[1])
    ran = routes_while_tuning(monkeypatch, xs.parse_shape("pred[40,6,56,42]{0,1,2,3:T(8,128)(4,1)}"), False,
                              lambda: len(cuts))
    assert True in ran and False in ran, ran  # (the slabs on some calls, the generic kernel on others)


@pytest.mark.parametrize(("text", "rows", "laid"), [("pred[40,6,56,42]{0,1,2,3:T(8,128)(4,1)}", 3, 0),
                                                    ("s8[3,5,7,11,23]{0,1,2,3,4:T(8,128)(4,1)}", 2, 0),
                                                    ("u8[9,7,5,6,40]{0,1,2,3,4:T(32,128)(4,1)}", 2, 2)])
@pytest.mark.parametrize("threads", [1, 2])
def test_reversed_layouts_are_read_back_in_slabs_of_their_second_dim(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, text: str, rows: int, laid: int, threads: int
) -> None:
    # slabs of a few indices of the second physical dim, every index of the major one in each (the last slab short):
    # turned out, whole runs of the logical minor dim (laid out, words 3 elements short go in slabs of the major
    # dim, 13 indices each here)
    shape = xs.parse_shape(text)
    turned = _transposed.turned_shape(_geometry(shape))
    assert turned is not None
    count, _, *rest = turned.dimensions
    row = _geometry(xs.parse_shape(str(turned).replace(str(list(turned.dimensions)).replace(" ", ""),
                                                        str([1, 1, *rest]).replace(" ", "")))).nbytes
    monkeypatch.setattr(_transposed, "SLAB_BYTES", count * row * rows)
    columns: list[int] = []
    real = _transposed._reversed_in_columns

    def spy(*args: Any) -> bool:
        done = real(*args)
        columns.append(done)
        return done

    monkeypatch.setattr(_transposed, "_reversed_in_columns", spy)
    check_both_paths(monkeypatch, shape, 0, 17, True, 5, threads)
    assert len(slabs) == 3 + laid and columns == [True] * 3


def test_reversed_layouts_keep_the_generic_kernel_where_the_route_does_not_pay(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_both_paths(monkeypatch, xs.parse_shape("bf16[40,24,56,42]{0,1,2,3:T(8,128)(2,1)}"), 0, 13, False, 0)
    assert not slabs  # ((2,1) sub-tiles)
    for text in ("pred[40,24,56,42]{0,1,2,3:T(8,128)(4,1)}", "u8[9,40,5,6]{0,1,2,3:T(32,128)(4,1)}",
                 f"s8[3,{_transposed.FEW_ROWS},7,11,23]{{0,1,2,3,4:T(8,128)(4,1)}}"):
        check_both_paths(monkeypatch, xs.parse_shape(text), 0, 13, False, 0)
        assert not slabs, text  # (rank 4 and up, second dim of FEW_ROWS and more: merged squares, groups)
    for text in ("u8[30,17,20]{0,1,2:T(32,128)(4,1)}", "s8[30,6,40]{0,1,2:T(8,128)(4,1)}",
                 "pred[30,17,80]{0,1,2:T(8,128)(4,1)}"):
        check_both_paths(monkeypatch, xs.parse_shape(text), 0, 13, True, 0)
        assert not slabs, text  # (rank 3, either way: merged squares read back faster than the slabs)
    monkeypatch.setattr(_transposed, "MOST_SLAB", 1024)
    check_both_paths(monkeypatch, xs.parse_shape("pred[40,6,56,42]{0,1,2,3:T(8,128)(4,1)}"), 0, 13, False, 0)
    assert not slabs  # (one index of the major dim more than MOST_SLAB)


def _one_index(text: str) -> int:
    """Bytes of one index of a reversed layout's major physical dim (its logical minor one)."""
    turned = _transposed.turned_shape(_geometry(xs.parse_shape(text)))
    assert turned is not None
    return _geometry(xs.parse_shape(f"{turned.element_type}[1,{','.join(map(str, turned.dimensions[1:]))}]"
                                     f"{{{','.join(map(str, turned.layout_or_default().minor_to_major))}:"
                                     f"{str(turned).split(':', 1)[1]}")).nbytes


@pytest.mark.parametrize("text", ["u8[9,2,5,40]{0,1,2,3:T(8,128)(4,1)}", "pred[7,6,5,33]{0,1,2,3:T(8,128)(4,1)}",
                                  "s8[5,3,4,6,21]{0,1,2,3,4:T(32,128)(4,1)}", "u8[130,7,3,19]{0,1,2,3:T(8,128)(4,1)}"])
@pytest.mark.parametrize(("per", "threads"), [(None, 1), (4, 2), (5, 1)])  # (a slab: all; 4 indices, 5)
def test_reversed_layouts_whose_last_words_are_half_padding_are_laid_out_in_slabs_of_the_major_dim(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, text: str, per: int | None, threads: int
) -> None:
    # the second logical dim leaves 2 or 3 of the 4 elements of each last (4,1) word padding: the generic kernel
    # moved those words a few elements at a time (u8 [500,2,100,300] 27x memcpy); slabs of whole indices of the
    # major dim are laid out in order (the last slab short) and read back the same way
    if per is not None:
        monkeypatch.setattr(_transposed, "SLAB_BYTES", per * _one_index(text))
        monkeypatch.setattr(_transposed, "LEAST_INDICES", 4)
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, 0, 23, True, 8, threads)
    assert len(slabs) == 5, slabs  # (laid out twice, read back three times)


@pytest.mark.parametrize(("text", "laid"), [("s8[5,23,4,21]{0,1,2,3:T(32,128)(4,1)}", True),
                                            ("s8[5,23,4,21]{0,1,2,3:T(16,128)(4,1)}", False)])
def test_reversed_layouts_of_more_rows_than_a_tile_are_laid_out_by_the_generic_kernel(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, text: str, laid: bool
) -> None:
    # a second dim of 23 (3 elements of each last word): fewer rows than a tile of 32, slabs of the major dim (u8
    # [100,23,100,128]{...T(32,128)(4,1)} 4.6x memcpy against 5.5 generic); more than a tile of 16, the generic kernel
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    assert np.array_equal(to_physical(x, shape), numpy_path(monkeypatch, to_physical, x, shape)), text
    assert bool(slabs) == laid, slabs


@pytest.mark.parametrize("text", ["u8[9,5,5,40]{0,1,2,3:T(8,128)(4,1)}", "u8[9,4,5,40]{0,1,2,3:T(8,128)(4,1)}",
                                  "s8[9,12,5,40]{0,1,2,3:T(8,128)(4,1)}", "u8[9,2,5,40]{0,1,2,3:T(8,128)(4,1)}",
                                  "pred[30,9,7]{0,1,2:T(8,128)(4,1)}",
                                  # a second dim of FEW_ROWS and more, and a tile's rows: the generic kernel was
                                  # faster (u8 [500,466,3,48] 10.1 -> 4.8x memcpy)
                                  "u8[9,18,5,40]{0,1,2,3:T(8,128)(4,1)}", "pred[5,34,3,20]{0,1,2,3:T(8,128)(4,1)}"])
def test_reversed_layouts_are_laid_out_by_the_generic_kernel_unless_words_are_half_padding(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    # one padding element a word or none (the generic kernel was faster), rank 3, or slabs of fewer than
    # LAID_INDICES indices (u8 [9,2,5,40] here): not laid out in slabs
    if "[9,2," in text:
        monkeypatch.setattr(_transposed, "SLAB_BYTES", (_transposed.LAID_INDICES - 1) * _one_index(text))
    check_both_paths(monkeypatch, xs.parse_shape(text), 0, 29, False, 0)
    assert len(slabs) <= 3, slabs  # (read back, maybe; never laid out)
    with_slabs = len(slabs)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    to_physical(x, shape)
    assert len(slabs) == with_slabs  # (laying out took no slabs)


@pytest.mark.parametrize("rows", [8, 13, _transposed.FEW_ROWS - 1, _transposed.FEW_ROWS])
def test_reversed_layouts_of_a_short_second_dim_are_read_back_in_slabs_of_whole_indices(
    slabs: list[int], monkeypatch: pytest.MonkeyPatch, rows: int
) -> None:
    # second logical dims from COLUMN_ROWS up to FEW_ROWS: slabs of whole indices of the major dim where a slab holds
    # LEAST_INDICES of them (the generic kernel otherwise, and from FEW_ROWS on)
    text = f"u8[11,{rows},3,40]{{0,1,2,3:T(8,128)(4,1)}}"
    columns: list[bool] = []
    real = _transposed._reversed_in_columns
    monkeypatch.setattr(_transposed, "_reversed_in_columns", lambda *args: columns.append(True) or real(*args))
    monkeypatch.setattr(_transposed, "SLAB_BYTES", _transposed.LEAST_INDICES * _one_index(text))
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    data = numpy_path(monkeypatch, to_physical, x, shape)
    assert same_bits(from_physical(data, shape), x)
    assert slabs == ([rows] if rows < _transposed.FEW_ROWS else []) and not columns
    monkeypatch.setattr(_transposed, "SLAB_BYTES", (_transposed.LEAST_INDICES - 1) * _one_index(text))
    assert same_bits(from_physical(data, shape), x)
    assert len(slabs) == (rows < _transposed.FEW_ROWS) and not columns  # (too few indices a slab: the generic's)
