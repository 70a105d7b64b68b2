"""The one tile walk (xlashapes.tiling): levels, geometry, element counts and byte math."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes import layout as layout_module
from xlashapes import tiling
from xlashapes.tiling import (
    COMBINE_DIMENSION,
    TileGroup,
    allocated_dimensions,
    apply_tile,
    bytes_for_elements,
    combined_tile_sizes,
    element_bits,
    physical_element_count,
    tile_levels,
    tile_split,
    tile_step,
    tile_steps,
    tiled_dimensions,
    untiled_dimensions,
)

STAR = COMBINE_DIMENSION


def test_the_tile_helpers_keep_their_layout_import_path() -> None:
    for name in ("apply_tile", "tile_split", "combined_tile_sizes", "tiled_dimensions", "physical_element_count",
                 "element_bits", "bytes_for_elements", "COMBINE_DIMENSION"):
        assert getattr(layout_module, name) is getattr(tiling, name), name
    assert layout_module.checked_int is xs._ints.checked_int  # type: ignore[attr-defined]


def test_document_examples() -> None:
    layout = xs.parse_layout("{1,0:T(2,2)}")
    assert tiled_dimensions((3, 5), layout) == (2, 3, 2, 2)
    assert physical_element_count((3, 5), layout) == 24
    combined = xs.parse_layout("{4,3,2,1,0:T(*,*,2,*,3)}")
    assert tiled_dimensions((2, 7, 8, 11, 10), combined) == (56, 37, 2, 3)
    legacy = xs.Layout((0, 1), padded_dimensions=(3, 5))
    assert allocated_dimensions((2, 3), legacy) == (3, 5)
    assert untiled_dimensions((2, 3), legacy) == (5, 3)
    assert physical_element_count((2, 3), legacy) == 15


def test_tile_levels_are_the_explain_table() -> None:
    levels = tile_levels((4, 8), xs.parse_layout("{1,0:T(2,4)(2,1)}"))
    assert [(level.tile, level.dims) for level in levels] == [
        (None, (4, 8)), ((2, 4), (2, 2, 2, 4)), ((2, 1), (2, 2, 1, 4, 2, 1))]
    assert levels[-1].dims == tiled_dimensions((4, 8), xs.parse_layout("{1,0:T(2,4)(2,1)}"))


def test_tile_geometry() -> None:
    dims = [2, 7, 8]
    step = tile_step(dims, (STAR, 4))
    assert step.pad == 0 and step.groups == (TileGroup((7, 8), 4),) and step.dropped == 0
    assert dims == [2, 14, 4]
    short = [5]
    step = tile_step(short, (2, 128))
    assert step.pad == 1 and short == [1, 1, 2, 128]
    assert tile_split([2, 7, 8], (STAR, 4)) == ([2], [56], [4])
    assert tile_step([3], ()).groups == () and apply_tile([3], ()) == [3]
    assert combined_tile_sizes((STAR, 8, STAR, 128)) == (8, 128)
    assert TileGroup((5,), 2).outer == 3 and TileGroup((7, 8), 2).merged == 56


def test_byte_math() -> None:
    s4 = xs.element_type("s4")
    assert element_bits(s4, None) == 8 and element_bits(s4, xs.Layout((0,), element_size_in_bits=4)) == 4
    assert bytes_for_elements(3, 4) == 2 and bytes_for_elements(0, 32) == 0
    with pytest.raises(xs.ShapeError, match="overflows int64"):
        bytes_for_elements(2**62, 32)
    with pytest.raises(xs.ShapeError, match="overflows int64"):
        physical_element_count((2**62, 3), xs.Layout((1, 0)))
    with pytest.raises(xs.ShapeError, match="overflows int64"):
        physical_element_count((2**63 - 1,), xs.Layout((0,), tail_padding_alignment_in_elements=2))


def reference_dims(physical: list[int], tile: tuple[int, ...]) -> list[int]:
    """The document's definition of one tile, written out separately (not through tile_step)."""
    dims = [1] * max(0, len(tile) - len(physical)) + list(physical)
    head, covered = dims[: len(dims) - len(tile)], dims[len(dims) - len(tile):]
    merged, sizes, carry = [], [], 1
    for size, t in zip(covered, tile):
        carry *= size
        if t != STAR:
            merged.append(carry)
            sizes.append(t)
            carry = 1
    return head + [-(-m // t) for m, t in zip(merged, sizes)] + sizes


TILE_ENTRY = st.sampled_from([STAR, 1, 2, 3, 4, 8, 128])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(0, 300), max_size=5),
       st.lists(st.lists(TILE_ENTRY, min_size=1, max_size=5).map(tuple), max_size=4))
@example(dims=[100, 155, 129, 209, 221], tiles=[(128, 1, 1), (1, 8), (128, 128, 128, 1), (3,)])  # leaves int64
def test_walk_equals_the_definition_level_by_level(dims: list[int], tiles: list[tuple[int, ...]]) -> None:
    tiles = [(*t[:-1], 2) if t[-1] == STAR else t for t in tiles]
    steps, final = tile_steps(dims, tiles)
    expected = list(dims)
    for tile, step in zip(tiles, steps):
        before = len(expected)
        expected = reference_dims(expected, tile)
        assert step.pad == max(0, len(tile) - before)
        assert sum(len(g.sizes) for g in step.groups) == len(tile)
    assert list(final) == expected
    layout: Any = xs.Layout(tuple(range(len(dims) - 1, -1, -1)), tiles=tuple(tiles))
    assert tiled_dimensions(dims, layout) == final
    assert [level.dims for level in tile_levels(dims, layout)][-1] == final
    if math.prod(final) < 1 << 63:
        assert physical_element_count(dims, layout) == math.prod(final)
    else:  # padded to tiles, the count leaves int64: refused, as every count that overflows is
        with pytest.raises(xs.ShapeError, match="overflows int64"):
            physical_element_count(dims, layout)


def test_walk_is_linear_in_tile_levels() -> None:
    import time

    tiles = ((2, 1),) * 20_000
    start = time.process_time()
    steps, final = tile_steps((2, 3), tiles)
    assert time.process_time() - start < 1.0
    assert len(final) == 2 * 20_000 + 2 and len(steps) == 20_000
