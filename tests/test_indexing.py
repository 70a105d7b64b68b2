"""Index math for every layout: the tiled-layout document's examples, a brute-force reference, bad input."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes import _index_inverse, indexing
from xlashapes.indexing import (
    dimension_stride,
    indices_in_memory_order,
    indices_in_memory_order_array,
    linear_index,
    multi_index,
    next_index,
)
from xlashapes.layout import COMBINE_DIMENSION, INT64_MAX

STAR = COMBINE_DIMENSION


# ----------------------------------------------------------------------------------------------------
# The brute-force reference: the document's definition applied to an array of element numbers
# ----------------------------------------------------------------------------------------------------


def reference_buffer(shape: xs.Shape) -> np.ndarray:
    """The physical buffer as element numbers (row-major logical order), -1 where it holds padding.

    Built from the definition: pad to the allocated (legacy padded) sizes, transpose to physical order, then
    per tile: left-pad with size-1 dims, merge '*' dims by reshaping, pad to multiples of the tile, split each
    dim into (outer, tile), move the tile parts minor; finally flatten and add the tail padding L(n).
    """
    layout = shape.layout_or_default()
    sizes = shape.dimensions
    buffer = np.arange(math.prod(sizes), dtype=np.int64).reshape(sizes)
    allocated = layout.padded_dimensions or sizes
    if sizes:
        buffer = np.pad(buffer, [(0, a - s) for a, s in zip(allocated, sizes)], constant_values=-1)
        buffer = buffer.transpose(layout.major_to_minor)
    for tile in layout.tiles:
        if buffer.ndim < len(tile):
            buffer = buffer.reshape((1,) * (len(tile) - buffer.ndim) + buffer.shape)
        head = buffer.shape[: buffer.ndim - len(tile)]
        merged: list[int] = []
        tiles: list[int] = []
        carry = 1
        for size, t in zip(buffer.shape[len(head) :], tile):
            if t == STAR:
                carry *= size
                continue
            merged.append(carry * size)
            tiles.append(t)
            carry = 1
        buffer = buffer.reshape(head + tuple(merged))
        rounded = [-(-m // t) * t for m, t in zip(merged, tiles)]
        buffer = np.pad(buffer, [(0, 0)] * len(head) + [(0, r - m) for r, m in zip(rounded, merged)],
                        constant_values=-1)
        split = [part for r, t in zip(rounded, tiles) for part in (r // t, t)]
        buffer = buffer.reshape(head + tuple(split))
        h, g = len(head), len(tiles)
        buffer = buffer.transpose(list(range(h)) + [h + 2 * i for i in range(g)] + [h + 2 * i + 1 for i in range(g)])
    flat = buffer.reshape(-1)
    alignment = layout.tail_padding_alignment_in_elements
    total = -(-flat.size // alignment) * alignment
    return np.pad(flat, (0, total - flat.size), constant_values=-1)


def reference_offsets(shape: xs.Shape) -> np.ndarray:
    """The offset of every element, in row-major logical order, from ``reference_buffer``."""
    buffer = reference_buffer(shape)
    offsets = np.full(math.prod(shape.dimensions), -1, dtype=np.int64)
    holds = np.flatnonzero(buffer >= 0)
    offsets[buffer[holds]] = holds
    return offsets


def all_indices(shape: xs.Shape) -> np.ndarray:
    """Every logical index, row-major, as an (element_count, rank) int64 array."""
    grid: np.ndarray = np.indices(shape.dimensions, dtype=np.int64).reshape(shape.rank, math.prod(shape.dimensions))
    return grid.T.copy()


# ----------------------------------------------------------------------------------------------------
# The document's worked examples
# ----------------------------------------------------------------------------------------------------


def test_doc_3x5_tiled_2x2_element_2_3_is_17() -> None:
    s = xs.parse_shape("f32[3,5]{1,0:T(2,2)}")
    assert linear_index(s, (2, 3)) == 17
    assert multi_index(s, 17) == (2, 3)
    assert s.physical_dimensions() == (2, 3, 2, 2)


def test_doc_3x5_tiled_2x2_padding_offsets() -> None:
    s = xs.parse_shape("f32[3,5]{1,0:T(2,2)}")
    # Offset 5 is element (0, 3) (tile (0,1), row 0, column 1); the padding is column 5 and row 3.
    assert multi_index(s, 5) == (0, 3)
    padding = [o for o in range(s.physical_element_count()) if multi_index(s, o) is None]
    assert padding == [9, 11, 14, 15, 18, 19, 21, 22, 23]
    assert reference_buffer(s).tolist().count(-1) == len(padding)


def test_doc_8x8_tiled_2x4_then_2x1x1x1_element_6_5_is_51() -> None:
    s = xs.parse_shape("f32[8,8]{1,0:T(2,4)(2,1,1,1)}")
    assert linear_index(s, (6, 5)) == 51
    assert multi_index(s, 51) == (6, 5)


def test_doc_4x8_tiled_2x4_then_2x1_table() -> None:
    s = xs.parse_shape("f32[4,8]{1,0:T(2,4)(2,1)}")
    table = linear_index(s, all_indices(s)).reshape(4, 8)
    assert table[0].tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    assert table[1].tolist() == [1, 3, 5, 7, 9, 11, 13, 15]
    assert table[2].tolist() == [16, 18, 20, 22, 24, 26, 28, 30]
    assert [linear_index(s, (r, c)) for r in range(4) for c in range(8)] == table.reshape(-1).tolist()


def test_doc_combined_dimensions_equal_the_reshaped_2d_tiling() -> None:
    five = xs.parse_shape("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    two = xs.parse_shape("f32[112,110]{1,0:T(2,3)}")
    assert five.physical_dimensions() == two.physical_dimensions() == (56, 37, 2, 3)
    idx = all_indices(five)
    rows = (idx[:, 0] * 7 + idx[:, 1]) * 8 + idx[:, 2]
    cols = idx[:, 3] * 10 + idx[:, 4]
    assert np.array_equal(linear_index(five, idx), linear_index(two, np.stack([rows, cols], axis=1)))
    assert linear_index(five, (1, 6, 7, 10, 9)) == linear_index(two, (111, 109))


def test_doc_2x3_row_major_is_abcdef() -> None:
    s = xs.make_shape("f32", [2, 3])
    letters = {(0, 0): "a", (0, 1): "b", (0, 2): "c", (1, 0): "d", (1, 1): "e", (1, 2): "f"}
    memory = {linear_index(s, i): v for i, v in letters.items()}
    assert "".join(memory[o] for o in range(6)) == "abcdef"


def test_doc_2x3_column_major_is_adbecf() -> None:
    s = xs.make_shape("f32", [2, 3], minor_to_major=[0, 1])
    letters = {(0, 0): "a", (0, 1): "b", (0, 2): "c", (1, 0): "d", (1, 1): "e", (1, 2): "f"}
    memory = {linear_index(s, i): v for i, v in letters.items()}
    assert "".join(memory[o] for o in range(6)) == "adbecf"
    assert [tuple(i) for i in indices_in_memory_order(s)] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]


def test_doc_2x3_column_major_legacy_padded_to_3x5() -> None:
    s = xs.make_shape("f32", [2, 3], minor_to_major=[0, 1], padded_dimensions=[3, 5], padding_value=0)
    letters = {(0, 0): "a", (0, 1): "b", (0, 2): "c", (1, 0): "d", (1, 1): "e", (1, 2): "f"}
    offsets = {v: linear_index(s, i) for i, v in letters.items()}
    assert offsets == {"a": 0, "d": 1, "b": 3, "e": 4, "c": 6, "f": 7}
    assert s.physical_element_count() == 15
    memory = ["0"] * 15
    for letter, offset in offsets.items():
        memory[offset] = letter
    assert " ".join(memory) == "a d 0 b e 0 c f 0 0 0 0 0 0 0"
    assert [multi_index(s, o) for o in (2, 5, 8, 9, 14)] == [None] * 5
    assert dimension_stride(s, 0) == 1 and dimension_stride(s, 1) == 3


def test_tpu_formats_agree_with_the_reference() -> None:
    for text in ("f32[20,300]{1,0:T(8,128)}", "bf16[20,300]{1,0:T(8,128)(2,1)}", "s8[20,300]{1,0:T(8,128)(4,1)}",
                 "bf16[20,300]{1,0:T(8,128)(2,1,1,1)}", "pred[40,130]{1,0:T(32,128)(32,1)}",
                 "f32[3,300]{1,0:T(4,128)}", "bf16[8,1,24,260]{3,2,0,1:T(8,128)(2,1)S(1)}"):
        s = xs.parse_shape(text)
        assert np.array_equal(linear_index(s, all_indices(s)), reference_offsets(s)), text


def test_scalar_is_offset_0() -> None:
    s = xs.parse_shape("f32[]")
    assert linear_index(s, ()) == 0
    assert multi_index(s, 0) == ()
    assert linear_index(s, np.zeros((3, 0), dtype=np.int64)).tolist() == [0, 0, 0]
    assert list(indices_in_memory_order(s)) == [()]
    assert next_index(s, ()) is None


def test_size_0_dimension() -> None:
    s = xs.parse_shape("f32[3,0,2]")
    assert s.physical_element_count() == 0
    with pytest.raises(xs.ShapeError, match="dimension 1"):
        linear_index(s, (0, 0, 0))
    assert linear_index(s, np.zeros((0, 3), dtype=np.int64)).shape == (0,)
    assert list(indices_in_memory_order(s)) == []
    assert indices_in_memory_order_array(s).shape == (0, 3)
    with pytest.raises(xs.ShapeError, match="out of range"):
        multi_index(s, 0)


def test_size_0_dimension_with_legacy_padding_is_all_padding() -> None:
    s = xs.make_shape("f32", [0, 3], padded_dimensions=[2, 3])
    assert s.physical_element_count() == 6
    assert [multi_index(s, o) for o in range(6)] == [None] * 6


def test_bounded_dynamic_dimension_uses_its_bound() -> None:
    s = xs.parse_shape("f32[<=3,5]{1,0:T(2,2)}")
    assert linear_index(s, (2, 3)) == 17
    with pytest.raises(xs.ShapeError, match="dimension 0"):
        linear_index(s, (3, 0))


def test_unbounded_dynamic_dimension_is_an_error() -> None:
    with pytest.raises(xs.ShapeError, match="unbounded"):
        linear_index(xs.parse_shape("f32[?,3]"), (0, 0))
    with pytest.raises(xs.ShapeError, match="unbounded"):
        multi_index("f32[<=3,?]{0,1:T(2,2)}", 0)


def test_tail_padding_only_adds_trailing_offsets() -> None:
    s = xs.parse_shape("f32[3,5]{1,0:T(2,2)L(10)}")
    assert s.physical_element_count() == 30
    assert linear_index(s, (2, 3)) == 17
    assert [multi_index(s, o) for o in range(24, 30)] == [None] * 6


def test_tiles_longer_than_the_rank_apply_to_size_1_dims() -> None:
    s = xs.parse_shape("f32[5]{0:T(2,3)}")
    assert s.physical_dimensions() == (1, 2, 2, 3)
    # The leading size-1 dim becomes tile rows: only row 0 of each 2x3 tile holds elements.
    assert [linear_index(s, (i,)) for i in range(5)] == [0, 1, 2, 6, 7]
    assert [o for o in range(12) if multi_index(s, o) is None] == [3, 4, 5, 8, 9, 10, 11]


def test_oversize_tile() -> None:
    s = xs.parse_shape("f32[3,2]{1,0:T(100,100)}")
    assert s.physical_element_count() == 10000
    assert linear_index(s, (2, 1)) == 201
    assert list(indices_in_memory_order(s)) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


def test_vectorized_keeps_leading_dims() -> None:
    s = xs.parse_shape("f32[4,8]{1,0:T(2,4)(2,1)}")
    idx = all_indices(s).reshape(4, 8, 2)
    offsets = linear_index(s, idx)
    assert offsets.shape == (4, 8)
    assert linear_index(s, np.array([2, 0])).shape == ()
    indices, valid = multi_index(s, offsets)
    assert indices.shape == (4, 8, 2) and valid.shape == (4, 8) and valid.all()
    assert np.array_equal(indices, idx)


def test_multi_index_accepts_a_list_of_offsets() -> None:
    indices, valid = multi_index("f32[3,5]{1,0:T(2,2)}", [17, 9, 0])
    assert indices.tolist() == [[2, 3], [-1, -1], [0, 0]]
    assert valid.tolist() == [True, False, True]


def test_multi_index_of_no_offsets() -> None:
    indices, valid = multi_index("f32[3,5]{1,0:T(2,2)}", [])
    assert indices.shape == (0, 2) and valid.shape == (0,)


def test_any_integer_dtype() -> None:
    s = xs.parse_shape("f32[3,5]{1,0:T(2,2)}")
    for dtype in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.uint64):
        assert linear_index(s, np.array([[2, 3]], dtype=dtype)).tolist() == [17]
        assert multi_index(s, np.array([17], dtype=dtype))[0].tolist() == [[2, 3]]
    assert linear_index(s, (np.int8(2), np.uint64(3))) == 17
    assert multi_index(s, np.uint16(17)) == (2, 3)


def test_next_index_is_row_major() -> None:
    s = xs.parse_shape("f32[2,3,2]{0,2,1:T(2,2)}")
    seen = [(0, 0, 0)]
    while (following := next_index(s, seen[-1])) is not None:
        seen.append(following)
    assert seen == list(np.ndindex(2, 3, 2))


def test_dimension_stride_examples() -> None:
    assert [dimension_stride("f32[2,3,4]", d) for d in range(3)] == [12, 4, 1]
    assert [dimension_stride("f32[2,3,4]{0,2,1}", d) for d in range(3)] == [1, 8, 2]
    assert dimension_stride("f32[2,3,4]", -1) == 1
    # T(8,128) on [1024,1024]: the columns step 1 inside a tile but jump between tiles.
    assert dimension_stride("f32[1024,1024]{1,0:T(8,128)}", 1) is None
    assert dimension_stride("f32[1024,1024]{1,0:T(8,128)}", 0) is None
    # A tile as wide as the dimension leaves it a constant stride.
    assert dimension_stride("f32[1024,128]{1,0:T(8,128)}", 1) == 1
    assert dimension_stride("f32[16,128]{1,0:T(8,128)}", 0) == 128  # tiles stacked row after row
    assert dimension_stride("f32[16,256]{1,0:T(8,128)}", 0) is None
    # Size-1 dims: the stride index 1 would have (XLA's product of the more minor dims when untiled).
    assert dimension_stride("f32[1,5]", 0) == 5
    assert dimension_stride("f32[1,128]{1,0:T(8,128)}", 0) == 128
    # The 1-D tile (3) followed by (2) has no closed form; the brute-force check decides.
    assert dimension_stride("f32[10]{0:T(3)(2)}", 0) is None
    assert dimension_stride("f32[11,10]{1,0:T(*,3)}", 1) == 1
    assert dimension_stride("f32[11,10]{1,0:T(*,3)}", 0) == 10


def test_dimension_stride_of_huge_untiled_and_tiled_dims() -> None:
    assert dimension_stride("f32[1000000,1000000]", 0) == 1000000
    assert dimension_stride("f32[100000000,8]{1,0:T(8,128)}", 0) == 128
    assert dimension_stride("f32[100000000,256]{1,0:T(8,128)}", 1) is None


def test_large_dims_use_closed_form_terms() -> None:
    s = xs.parse_shape("bf16[200000,300]{1,0:T(8,128)(2,1)}")
    rng = np.random.default_rng(1)
    idx = rng.integers(0, s.dimensions, size=(5000, 2))
    plan = indexing._plan(s)
    assert indexing._dim_evaluators(plan) is not None and 0 in plan.terms
    expected = [linear_index(s, tuple(row)) for row in idx.tolist()]
    assert linear_index(s, idx).tolist() == expected
    back, valid = multi_index(s, np.array(expected))
    assert valid.all() and np.array_equal(back, idx)


def test_large_entangled_dims_walk_the_levels() -> None:
    s = xs.parse_shape("f32[70000,7]{1,0:T(*,3)}")
    plan = indexing._plan(s)
    assert not plan.terms and indexing._dim_evaluators(plan) is None
    idx = np.array([[0, 0], [69999, 6], [12345, 3]])
    assert linear_index(s, idx).tolist() == [linear_index(s, tuple(r)) for r in idx.tolist()] == [0, 489999,
                                                                                                   86418]


def test_largest_offsets_fit_in_int64() -> None:
    s = xs.parse_shape("s8[3037000499,3037000499]")
    last = (3037000498, 3037000498)
    assert linear_index(s, last) == 3037000499**2 - 1 == s.physical_element_count() - 1
    assert linear_index(s, np.array([last])).tolist() == [3037000499**2 - 1]
    assert multi_index(s, 3037000499**2 - 1) == last
    assert multi_index(s, np.array([3037000499**2 - 1]))[0].tolist() == [list(last)]


def test_int64_overflow_is_an_error() -> None:
    for text in ("f32[4294967296,4294967296]", "f32[3,3]{1,0:T(4611686018427387904,4)}",
                 "f32[3037000499,3037000499]{1,0:T(8,128)}", "f32[4611686018427387905,1]{1,0:L(4611686018427387904)}"):
        with pytest.raises(xs.ShapeError, match="overflow"):
            linear_index(text, (0, 0))
        with pytest.raises(xs.ShapeError, match="overflow"):
            multi_index(text, 0)


# ----------------------------------------------------------------------------------------------------
# Properties over random shapes, layouts and tilings
# ----------------------------------------------------------------------------------------------------


@st.composite
def tiled_shapes(draw: Any, max_physical: int = 30000) -> xs.Shape:
    rank = draw(st.integers(0, 4))
    sizes = draw(st.lists(st.sampled_from([0, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 16]), min_size=rank, max_size=rank))
    if 0 in sizes and draw(st.booleans()):
        sizes = [s or 1 for s in sizes]
    order = draw(st.permutations(range(rank)))
    fields: dict[str, Any] = {}
    if rank and draw(st.integers(0, 4)) == 0:
        fields["padded_dimensions"] = [s + draw(st.integers(0, 3)) for s in sizes]
    tiles = []
    for _ in range(draw(st.sampled_from([0, 1, 1, 2, 2, 3]))):
        length = draw(st.integers(1, rank + 2))
        entries = st.sampled_from([STAR, STAR, 1, 2, 2, 3, 4, 4, 5, 8, 11])
        tile = draw(st.lists(entries, min_size=length, max_size=length))
        if tile[-1] == STAR:
            tile[-1] = draw(st.sampled_from([1, 2, 3, 4]))
        tiles.append(tuple(tile))
    fields["tiles"] = tuple(tiles)
    fields["tail_padding_alignment_in_elements"] = draw(st.sampled_from([1, 1, 1, 2, 3, 5, 8]))
    shape = xs.make_shape("f32", sizes, minor_to_major=list(order)[::-1], **fields)
    assume(shape.physical_element_count() <= max_physical)
    return shape


# Nine properties over the same two generators: each drawn shape is checked by every property of its
# generator (drawing the shapes is most of the cost, so the properties share the draws; 600 shapes each).
PROPERTY = settings(max_examples=examples(600), deadline=None, suppress_health_check=list(HealthCheck))


@PROPERTY
@given(tiled_shapes(), st.randoms(use_true_random=False))
def test_index_math_on_tiled_shapes(shape: xs.Shape, random: Any) -> None:
    check_offsets_match_the_brute_force_reference(shape)
    check_offsets_are_injective_and_in_bounds(shape)
    check_multi_index_inverts_and_finds_every_padding_offset(shape)
    check_scalar_equals_vectorized(shape, random)
    check_every_evaluation_path_agrees(shape)


@PROPERTY
@given(tiled_shapes(max_physical=5000))
def test_index_math_on_small_tiled_shapes(shape: xs.Shape) -> None:
    check_dimension_stride_is_exact(shape)
    check_untiled_layouts_match_numpy_strides(shape)
    check_memory_order_iteration(shape)
    check_next_index_walks_row_major(shape)


# ----------------------------------------------------------------------------------------------------
# The compiled multi_index kernel (a program of the NumPy path's walk, run by one kernel for every shape)
# ----------------------------------------------------------------------------------------------------


def compiled_multi_index(shape: xs.Shape | str, offsets: np.ndarray) -> tuple[bool, np.ndarray, np.ndarray]:
    """Whether the compiled kernel ran for ``offsets`` of any count, and the indices and valid mask it gave."""
    from xlashapes.physical import _dispatch

    plan = indexing._plan(shape)
    indices = np.full((offsets.size, plan.rank), 7, dtype=np.int64)
    valid = np.zeros(offsets.size, dtype=np.bool_)
    with mock.patch.dict(os.environ, {"XLASHAPES_NO_NUMBA": ""}), mock.patch.object(_dispatch, "NUMBA_BYTES", 0), \
            mock.patch.object(_dispatch, "FIRST_NUMBA_BYTES", 0):
        ran = _index_inverse._compiled_indices(plan, offsets.reshape(-1), indices, valid, offsets)
    return ran, indices, valid


def numpy_multi_index(shape: xs.Shape | str, offsets: np.ndarray) -> Any:
    """``multi_index`` on the NumPy path."""
    with mock.patch.dict(os.environ, {"XLASHAPES_NO_NUMBA": "1"}):
        return multi_index(shape, offsets)


@PROPERTY
@given(tiled_shapes())
def test_compiled_multi_index_equals_the_numpy_path_on_every_offset(shape: xs.Shape) -> None:
    pytest.importorskip("numba")
    offsets = np.arange(shape.physical_element_count(), dtype=np.int64)
    ran, indices, valid = compiled_multi_index(shape, offsets)
    assert ran == (shape.rank > 0 and _index_inverse.inverse_program(shape) is not None)
    if ran:
        expected_indices, expected_valid = numpy_multi_index(shape, offsets)
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_array_equal(valid, expected_valid)


@pytest.mark.parametrize("text", ["f32[3000,5000]{0,1:T(8,128)}", "bf16[4096,4096]{1,0:T(8,128)(2,1)}",
                                  "s4[3,100,384,500]{1,2,3,0:T(8,128)(2,1)E(4)}", "f32[3,1,5]{2,1,0:T(2,1,2)}",
                                  "u8[5,6,7]{2,1,0:T(2,*,3)}", "f32[10,11]{0,1:T(8,128)L(1000)}",
                                  "pred[100000]{0:T(1024)(128)(4,1)}", "f32[999,7]{0,1:T(3,5)(2,1)}",
                                  "s8[3,1501199875790165]{0,1}", "f32[49,1000]{0,1}", "u8[7,103,33]{1,2,0}"])
def test_compiled_multi_index_on_random_offsets_of_the_benchmark_and_odd_shapes(text: str) -> None:
    # divisors that are not powers of two go through doubles: a quotient one short is corrected (1/49 and 1/103 round
    # down so far that 98 * (1/49) is below 2: the last two shapes); offsets up to the last one, near 2**52
    pytest.importorskip("numba")
    count = xs.parse_shape(text).physical_element_count()
    rng = np.random.default_rng(5)
    offsets = np.concatenate([rng.integers(0, count, 50_000), np.arange(max(0, count - 3000), count)])
    ran, indices, valid = compiled_multi_index(text, offsets)
    assert ran
    expected_indices, expected_valid = numpy_multi_index(text, offsets)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(valid, expected_valid)
    assert valid.any() and (indices[valid] >= 0).all() and (indices[~valid] == -1).all()


def test_compiled_multi_index_names_the_first_offset_out_of_range() -> None:
    pytest.importorskip("numba")
    offsets = np.arange(70_000) % 24
    offsets[66_666] = 24
    offsets[66_667] = -3
    with pytest.raises(xs.ShapeError, match="offset\\[66666\\] = 24 is out of range"):
        compiled_multi_index(S35, offsets)
    offsets[66_666] = 0
    with pytest.raises(xs.ShapeError, match="offset\\[66667\\] = -3 is out of range"):
        compiled_multi_index(S35, offsets)


def test_large_offsets_take_the_compiled_kernel_and_small_ones_numpy() -> None:
    pytest.importorskip("numba")
    from xlashapes.physical import _dispatch

    kernel = _dispatch.indexer()
    assert kernel is not None
    calls = []
    def kernel_call(*args: Any) -> None:
        calls.append(args)
        args[-1][0] = -1  # (no offset out of range)

    with mock.patch.object(kernel, "multi_indices", kernel_call):
        with mock.patch.dict(os.environ, {"XLASHAPES_NO_NUMBA": ""}):
            multi_index(S35, np.zeros(1000, dtype=np.int64))
            assert not calls
            multi_index(S35, np.zeros(1 << 22, dtype=np.int32))  # (68 MiB of indices: past the first-use threshold)
            assert len(calls) == 1 and calls[0][0].dtype == np.int64 and calls[0][1].shape == (1 << 22, 2)


def test_read_only_and_strided_offsets_take_the_one_shipped_overload() -> None:
    pytest.importorskip("numba")
    from xlashapes.physical import _dispatch

    offsets = np.arange(0, 240_000, 2) % 24
    expected = numpy_multi_index(S35, offsets[::3])
    offsets.flags.writeable = False
    ran, indices, valid = compiled_multi_index(S35, offsets[::3])
    assert ran and np.array_equal(indices, expected[0]) and np.array_equal(valid, expected[1])
    kernel = _dispatch.indexer()
    assert kernel is not None
    assert list(kernel.multi_indices.natives) == ["A1<i8Cwa,A2<i8Cwa,A1|u1Cwa,A2<i8Cwa,A2<i8Cwa,i,A1<i8Cwa"]


def test_offsets_past_2_to_the_52_stay_on_the_numpy_path() -> None:
    # (the kernel divides through doubles, exact below 2**52)
    text = f"s8[3,{(1 << 52) // 3 + 1}]{{0,1}}"
    offsets = np.array([0, 1, (1 << 52) + 1])
    assert not compiled_multi_index(text, offsets)[0]
    indices, valid = multi_index(text, offsets)
    assert indices.tolist() == [[0, 0], [1, 0], [2, (1 << 52) // 3]] and valid.all()


def test_the_first_kernel_threshold_is_the_physical_engines() -> None:
    from xlashapes.physical import _dispatch

    assert _index_inverse._FIRST_KERNEL_BYTES == _dispatch.FIRST_NUMBA_BYTES


def test_small_offsets_in_a_new_process_do_not_import_the_physical_engine() -> None:
    code = ("import sys, numpy as np, xlashapes as xs; i, v = xs.multi_index('f32[3000,5000]{0,1:T(8,128)}', "
            "np.arange(200_000)); print(*i[-1].tolist(), int(v.sum()), 'xlashapes.physical' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["447", "66", "195392", "False"]  # (3000 = 23 tiles of 128 and 56: padding)


def test_a_program_holds_only_what_the_kernel_makes() -> None:
    program, registers = _index_inverse.inverse_program("f32[3000,5000]{0,1:T(8,128)}")
    codes = dict(zip(["split", "join", "below", "store"], range(4)))
    assert program[:, 0].tolist() == [codes[n] for n in ("split",) * 3 + ("join",) * 2 + ("below",) + ("store",) * 2]
    assert program[program[:, 0] == codes["split"], 2].tolist() == [128, 8, 24]  # (the offset's last three digits)
    assert program[program[:, 0] == codes["below"], 2].tolist() == [3000]  # (5000 rows fill their tiles)
    reads = {0: (1,), 1: (1, 4)}
    writes = {0: (3, 4), 1: (3,)}
    for row in program.tolist():  # never written where it is read: the kernel's loops vectorize
        assert not {row[k] for k in reads.get(row[0], ())} & {row[k] for k in writes.get(row[0], ())}
    assert registers == 5




def check_offsets_match_the_brute_force_reference(shape: xs.Shape) -> None:
    expected = reference_offsets(shape)
    assert np.array_equal(linear_index(shape, all_indices(shape)), expected), str(shape)
    assert shape.physical_dimensions() == xs.layout.tiled_dimensions(shape.dimensions, shape.layout_or_default())


def check_offsets_are_injective_and_in_bounds(shape: xs.Shape) -> None:
    offsets = linear_index(shape, all_indices(shape))
    assert len(set(offsets.tolist())) == offsets.size
    if offsets.size:
        assert 0 <= offsets.min() and offsets.max() + 1 <= shape.physical_element_count()


def check_multi_index_inverts_and_finds_every_padding_offset(shape: xs.Shape) -> None:
    buffer = reference_buffer(shape)
    assert buffer.size == shape.physical_element_count()
    indices, valid = multi_index(shape, np.arange(buffer.size))
    assert np.array_equal(valid, buffer >= 0)
    grid = all_indices(shape)
    assert np.array_equal(indices[valid], grid[buffer[valid]])
    assert (indices[~valid] == -1).all()
    for offset in range(0, buffer.size, max(1, buffer.size // 40)):
        element = multi_index(shape, offset)
        assert element == (tuple(grid[buffer[offset]].tolist()) if buffer[offset] >= 0 else None)


def check_scalar_equals_vectorized(shape: xs.Shape, random: Any) -> None:
    grid = all_indices(shape)
    if grid.shape[0] == 0:
        return
    rows = [grid[random.randrange(grid.shape[0])] for _ in range(30)]
    vector = linear_index(shape, np.array(rows)).tolist()
    assert vector == [linear_index(shape, tuple(r.tolist())) for r in rows]
    assert vector == [linear_index(shape, list(r)) for r in rows]


def check_every_evaluation_path_agrees(shape: xs.Shape) -> None:
    """Tables, closed-form terms and the level walk give the same offsets wherever each applies."""
    plan = indexing._plan(shape)
    grid = all_indices(shape)
    expected = reference_offsets(shape)
    walked = np.asarray(indexing._offsets_by_levels(plan, list(grid.T)), dtype=np.int64)
    assert np.array_equal(np.broadcast_to(walked, expected.shape), expected)
    for dim, terms in plan.terms.items() if expected.size else ():
        column = np.arange(shape.dimensions[dim], dtype=np.int64)
        out, scratch = np.empty_like(column), np.empty_like(column)
        indexing._terms_into(terms, column, out, scratch)
        unit = np.zeros((column.size, shape.rank), dtype=np.int64)
        unit[:, dim] = column
        assert np.array_equal(out, linear_index(shape, unit)), (str(shape), dim, terms)
    offsets = np.arange(shape.physical_element_count(), dtype=np.int64)
    if _index_inverse._fast_inverse(plan) and offsets.size:
        fast, fast_valid = np.empty((offsets.size, shape.rank), dtype=np.int64), np.empty(offsets.size, dtype=bool)
        _index_inverse._fast_indices(plan, offsets, fast, fast_valid)
        columns, ok = indexing._indices_by_levels(plan, offsets)
        walked_back = np.stack([np.broadcast_to(c, offsets.shape) for c in columns], axis=-1) if columns else fast
        assert np.array_equal(fast_valid, np.broadcast_to(ok, offsets.shape)), str(shape)
        assert np.array_equal(fast[fast_valid], walked_back[fast_valid]), str(shape)
        assert (fast[~fast_valid] == -1).all(), str(shape)
    if plan.separable and expected.size:
        forced: indexing.Evaluators = [(d, plan.terms.get(d) or indexing._table(plan, d)) for d in range(shape.rank)]
        out = np.empty(grid.shape[0], dtype=np.int64)
        indexing._offsets_into(plan, forced, grid, out, (np.empty_like(out), np.empty_like(out)))
        assert np.array_equal(out, expected)


def check_dimension_stride_is_exact(shape: xs.Shape) -> None:
    offsets = reference_offsets(shape).reshape(shape.dimensions)
    for dim, size in enumerate(shape.dimensions):
        stride = dimension_stride(shape, dim)
        if size >= 2 and offsets.size:
            steps = np.unique(np.diff(offsets, axis=dim))
            assert stride == (int(steps[0]) if steps.size == 1 else None), (str(shape), dim)
        else:
            assert isinstance(stride, int) and stride >= 0


def check_untiled_layouts_match_numpy_strides(shape: xs.Shape) -> None:
    layout = shape.layout_or_default().replace(tiles=())
    untiled = shape.with_layout(layout)
    grid = all_indices(untiled)
    allocated = layout.padded_dimensions or untiled.dimensions
    order = list(layout.major_to_minor)
    expected = np.zeros(grid.shape[0], dtype=np.int64)
    if untiled.rank and grid.shape[0]:
        expected = np.ravel_multi_index(tuple(grid[:, order].T), tuple(allocated[d] for d in order))
    assert np.array_equal(linear_index(untiled, grid), expected)
    strides = np.cumprod([1] + [allocated[d] for d in reversed(order)])[:-1][::-1]
    for position, dim in enumerate(order):
        assert dimension_stride(untiled, dim) == strides[position]


def check_memory_order_iteration(shape: xs.Shape) -> None:
    expected = all_indices(shape)[np.argsort(reference_offsets(shape), kind="stable")]
    assert np.array_equal(indices_in_memory_order_array(shape), expected.reshape(len(expected), shape.rank))
    assert list(indices_in_memory_order(shape)) == [tuple(r) for r in expected.tolist()]


def check_next_index_walks_row_major(shape: xs.Shape) -> None:
    grid = [tuple(r) for r in all_indices(shape).tolist()]
    for current, following in zip(grid, [*grid[1:], None]):
        assert next_index(shape, current) == following


# ----------------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------------

S35 = "f32[3,5]{1,0:T(2,2)}"


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ((2,), "has 1 entries but .* has rank 2"),
        ((2, 3, 0), "has 3 entries"),
        ((3, 0), "out of range for dimension 0 \\(size 3\\)"),
        ((0, 5), "out of range for dimension 1 \\(size 5\\)"),
        ((-1, 0), "out of range for dimension 0"),
        ((0, 2**70), "does not fit in int64"),
        ((0, 1.0), "must be an integer"),
        ((0, True), "must be an integer"),
        ((0, np.True_), "must be an integer"),
        ((0, "1"), "must be an integer"),
        ((0, None), "must be an integer"),
        ("01", "must be a sequence of integers"),
        (7, "must be a sequence of integers"),
        (None, "must be a sequence of integers"),
        ({0, 1}, "must be a sequence of integers"),
        (((0, 1), (1, 2)), "NumPy integer array"),
    ],
)
def test_bad_index(index: Any, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        linear_index(S35, index)
    with pytest.raises(xs.ShapeError):
        next_index(S35, index)


@pytest.mark.parametrize(
    ("indices", "message"),
    [
        (np.array([[0, 0], [2, 5]]), "index\\[1\\] = \\(2, 5\\): 5 is out of range for dimension 1"),
        (np.array([[0, 0], [0, -1]]), "index\\[1\\].*dimension 1"),
        (np.array([[0, 0, 0]]), "shape \\(\\.\\.\\., 2\\)"),
        (np.array([0, 0, 0]), "shape \\(\\.\\.\\., 2\\)"),
        (np.array(3), "shape \\(\\.\\.\\., 2\\)"),
        (np.array([[0.0, 1.0]]), "integer array, got dtype float64"),
        (np.array([[True, False]]), "integer array, got dtype bool"),
        (np.array([[0, 1]], dtype=object), "integer array, got dtype object"),
        (np.array([["0", "1"]]), "integer array"),
        (np.array([[0, 2**64 - 1]], dtype=np.uint64), "18446744073709551615 is out of range for dimension 1"),
    ],
)
def test_bad_index_array(indices: np.ndarray, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        linear_index(S35, indices)


def test_bad_index_array_far_into_the_batch_names_its_row() -> None:
    idx = np.zeros((100000, 2), dtype=np.int64)
    idx[77777] = (1, 9)
    with pytest.raises(xs.ShapeError, match="index\\[77777\\] = \\(1, 9\\): 9 is out of range for dimension 1"):
        linear_index(S35, idx)
    idx[77777] = (-4, 0)
    with pytest.raises(xs.ShapeError, match="index\\[77777\\] = \\(-4, 0\\): -4 is out of range for dimension 0"):
        linear_index("f32[3,3]", idx)


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        (-1, "offset -1 is out of range"),
        (24, "offset 24 is out of range: .* has 24 physical elements"),
        (2**64, "does not fit in int64"),
        (1.0, "must be an integer"),
        (True, "must be an integer"),
        (None, "must be an integer"),
        ("3", "must be an integer"),
        (np.array([0, 24]), "offset\\[1\\] = 24 is out of range"),
        (np.array([0, -5]), "offset\\[1\\] = -5 is out of range"),
        (np.array([2**63], dtype=np.uint64), "offset\\[0\\] = 9223372036854775808 is out of range"),
        (np.array([0.5]), "integer array, got dtype float64"),
        (np.array([True]), "integer array, got dtype bool"),
        ([[0, 1], [2]], "not a rectangular integer array"),
        ([0.5], "integer array"),
    ],
)
def test_bad_offset(offset: Any, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        multi_index(S35, offset)


@pytest.mark.parametrize("shape", [42, None, xs.parse_shape("(f32[2], s32[])"), xs.parse_shape("token[]"),
                                   xs.parse_shape("f32[?,3]")])
def test_bad_shape(shape: Any) -> None:
    with pytest.raises(xs.ShapeError):
        linear_index(shape, (0, 0))
    with pytest.raises(xs.ShapeError):
        multi_index(shape, 0)
    with pytest.raises(xs.ShapeError):
        dimension_stride(shape, 0)
    with pytest.raises(xs.ShapeError):
        list(indices_in_memory_order(shape))


def test_bad_shape_text_is_a_parse_error() -> None:
    with pytest.raises(xs.ParseError):
        linear_index("f32[3,", (0,))


def test_sparse_layout_is_an_error() -> None:
    s = xs.make_shape("f32", [3, 4], dim_level_types=("D", "C"))
    with pytest.raises(xs.ShapeError, match="sparse"):
        linear_index(s, (0, 0))


@pytest.mark.parametrize("dimension", [2, -3, 1.0, True, None, "0"])
def test_bad_dimension_for_stride(dimension: Any) -> None:
    with pytest.raises(xs.ShapeError):
        dimension_stride(S35, dimension)


@settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from([S35, "f32[]", "f32[0,4]", "bf16[8,1,24,260]{3,2,0,1:T(8,128)(2,1)}", "f32[2,7,8,11,10]"
                     "{4,3,2,1,0:T(*,*,2,*,3)}", "f32[3,5]{0,1:T(4)(2,1)}"]),
    st.one_of(
        st.integers(-(2**65), 2**65),
        st.lists(st.integers(-(2**65), 2**65), max_size=6).map(tuple),
        st.lists(st.one_of(st.integers(-3, 10), st.floats(), st.booleans(), st.none(), st.text(max_size=2)),
                 max_size=6),
        st.lists(st.lists(st.integers(-(2**64), 2**64), max_size=6), max_size=4).map(
            lambda v: np.array(v, dtype=object)),
        st.lists(st.lists(st.integers(-10, 300), min_size=5, max_size=5), max_size=4).map(np.array),
        st.floats(),
        st.booleans(),
        st.none(),
        st.text(max_size=4),
        st.binary(max_size=4),
    ),
)
def test_bad_input_raises_only_shape_errors(text: str, value: Any) -> None:
    for function in (linear_index, multi_index, next_index, dimension_stride):
        try:
            function(text, value)
        except xs.ShapeError:
            pass


def test_int64_max_sized_dimension_is_indexable() -> None:
    s = xs.make_shape("s8", [INT64_MAX])
    assert linear_index(s, (INT64_MAX - 1,)) == INT64_MAX - 1
    assert multi_index(s, INT64_MAX - 1) == (INT64_MAX - 1,)
    assert linear_index(s, np.array([[INT64_MAX - 1]])).tolist() == [INT64_MAX - 1]
    assert dimension_stride(s, 0) == 1


# ----------------------------------------------------------------------------------------------------
# Issue 15: linear in rank and in tile levels
# ----------------------------------------------------------------------------------------------------


def _cpu_seconds(function: Any) -> float:
    import gc
    import time

    gc.disable()
    try:
        start = time.process_time()
        function()
        return time.process_time() - start
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("text", "index", "offset"),
    [
        pytest.param("f32[" + ",".join(["1"] * 100_000) + "]", (0,) * 100_000, 0, id="rank-100k"),
        pytest.param("f32[" + ",".join(["2"] * 20) + "]{" + ",".join(map(str, range(20))) + "}", (1,) * 20,
                     2**20 - 1, id="rank-20-column-major"),
        pytest.param("f32[2]{0:T" + "(2)" * 20_000 + "}", (1,), 1, id="tile-levels-20k"),
        pytest.param("f32[2,3]{1,0:T" + "(2,1)" * 20_000 + "}", (1, 2), 5, id="2d-tile-levels-20k"),
        pytest.param("f32[5,7]{1,0:T(*,7)" + "(7)" * 20_000 + "}", (4, 6), 34, id="combined-then-20k-levels"),
    ],
)
def test_index_math_and_sizes_are_linear(text: str, index: tuple[int, ...], offset: int | None) -> None:
    # Quadratic before (25k tile levels: 16 s for one linear_index); now ~0.1 s for these.
    shape = xs.parse_shape(text)
    assert _cpu_seconds(shape.byte_size) < 1.0
    found: list[Any] = []
    assert _cpu_seconds(lambda: found.append(linear_index(shape, index))) < 1.0  # builds the plan
    assert _cpu_seconds(lambda: found.append(multi_index(shape, found[0]))) < 1.0
    assert found[1] == index and (offset is None or found[0] == offset)
    rows = np.array([index, [0] * len(index)])
    assert _cpu_seconds(lambda: found.append(linear_index(shape, rows))) < 1.0
    assert found[2].tolist() == [found[0], 0]
