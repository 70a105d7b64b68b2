"""The generic compiled kernel, slab-by-slab conversions, memory maps and files give the NumPy path's bytes."""

from __future__ import annotations

import contextlib
import io
import math
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import xlashapes as xs
import xlashapes.physical as physical
from kernel_worker import shape_of  # tests/ is on sys.path
from profiles import examples
from test_physical import canonical_bits, random_array, same_bits
from test_physical_fast import compiled_for_any_size, count_calls
from xlashapes.layout import COMBINE_DIMENSION
from xlashapes.physical import (
    _blocks,
    _cache,
    _canonical,
    _chunks,
    _compiled,
    _convert,
    _copy,
    _dispatch,
    _merged,
    _packing,
    _passes,
    _slabbed,
    _transposes,
    _tuned,
    _widened,
    from_physical,
    relayout,
    to_physical,
)
from xlashapes.physical._geometry import _geometry
from xlashapes.physical._kinds import GROUPS, LINE, QUARTERS, WALKS, walk_kind
from xlashapes.physical._plan import PIECE, _physical_view, _plan, _transfer_boxes, cut_rows, padded_rows
from xlashapes.physical.files import pack_file, terminal_progress, unpack_file

STAR = COMBINE_DIMENSION
FAST = settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))


def numpy_path(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with ``XLASHAPES_NO_NUMBA=1`` (the reference NumPy path)."""
    saved = os.environ.get("XLASHAPES_NO_NUMBA")
    os.environ["XLASHAPES_NO_NUMBA"] = "1"
    try:
        return function(*args, **kwargs)
    finally:
        if saved is None:
            del os.environ["XLASHAPES_NO_NUMBA"]
        else:
            os.environ["XLASHAPES_NO_NUMBA"] = saved


# ----- the layout families of issue 14 ------------------------------------------------------------------------
def _layout(order: tuple[int, ...], *tiles: tuple[int, ...], **fields: Any) -> xs.Layout:
    return xs.Layout(order, tiles=tuple(tiles), **fields)


@st.composite
def family_shapes(draw: st.DrawFn) -> xs.Shape:
    """A small shape from one of issue 14's layout families (TPU tilings and everything else)."""
    family = draw(st.sampled_from([
        "f32 T(8,128)", "bf16 T(8,128)(2,1)", "8-bit T(8,128)(4,1)", "pred", "s4 tiled", "s4 untiled", "rank-1",
        "small tiles", "transpose", "tiled transpose", "partial-rank", "combined", "legacy", "packed transpose",
    ]))
    rows, cols = draw(st.integers(1, 40)), draw(st.integers(1, 300))
    lead = draw(st.integers(1, 3))
    if family == "f32 T(8,128)":
        return xs.make_shape("f32", [lead, rows, cols], layout=_layout((2, 1, 0), (8, 128)))
    if family == "bf16 T(8,128)(2,1)":
        return xs.make_shape("bf16", [rows, cols], layout=_layout((1, 0), (8, 128), (2, 1)))
    if family == "8-bit T(8,128)(4,1)":
        etype = draw(st.sampled_from(["s8", "u8", "f8e4m3fn", "f8e5m2"]))
        return xs.make_shape(etype, [rows, cols], layout=_layout((1, 0), (8, 128), (4, 1)))
    if family == "pred":
        return xs.make_shape("pred", [rows, cols], layout=_layout((1, 0), (32, 128), (32, 1)))
    if family == "s4 tiled":
        etype = draw(st.sampled_from(["s4", "u4"]))
        return xs.make_shape(etype, [rows, cols], layout=_layout((1, 0), (8, 128), (2, 1), element_size_in_bits=4))
    if family == "s4 untiled":
        return xs.make_shape("s4", [rows, cols], layout=_layout((1, 0), element_size_in_bits=4))
    if family == "rank-1":
        p = draw(st.sampled_from([1, 2, 4]))
        etype = {1: "f32", 2: "bf16", 4: "s8"}[p]
        return xs.make_shape(etype, [rows * cols * 4], layout=_layout((0,), (1024,), (128,), (p, 1)))
    if family == "small tiles":
        r = draw(st.sampled_from([1, 2, 4]))
        return xs.make_shape("f32", [lead, rows, cols], layout=_layout((2, 1, 0), (r, 128)))
    if family == "transpose":
        rank = draw(st.integers(2, 6))
        dims = [draw(st.integers(1, 12 if rank > 3 else 60)) for _ in range(rank)]
        etype = draw(st.sampled_from(["u8", "bf16", "f32", "f64"]))
        order = tuple(draw(st.permutations(range(rank))))
        return xs.make_shape(etype, dims, layout=_layout(order))
    if family == "tiled transpose":
        etype = draw(st.sampled_from(["u8", "bf16", "f32", "f64"]))
        tile = draw(st.sampled_from([(8, 128), (8, 8), (16, 16), (4, 32)]))
        return xs.make_shape(etype, [rows * 3, cols], layout=_layout((0, 1), tile))
    if family == "partial-rank":
        return xs.make_shape("f32", [lead, rows, cols], layout=_layout((2, 1, 0), (draw(st.sampled_from([8, 64])),)))
    if family == "combined":
        return xs.make_shape("f32", [lead * 2, 4, cols], layout=_layout((2, 1, 0), (2, STAR, 128)))
    if family == "legacy":
        dims = [rows, cols]
        padded = (rows + draw(st.integers(0, 3)), cols + draw(st.integers(0, 3)))
        return xs.make_shape("s16", dims, layout=_layout((0, 1), padded_dimensions=padded))
    return xs.make_shape("u2", [rows, cols], layout=_layout((0, 1), element_size_in_bits=2))


def _other_layout(shape: xs.Shape, draw: st.DrawFn) -> xs.Shape:
    """The same array in another layout: default, transposed or tiled."""
    rank = shape.rank
    order = tuple(draw(st.permutations(range(rank))))
    tiles = draw(st.sampled_from([(), ((8, 128),), ((4,),)]))
    bits = shape.layout_or_default().element_size_in_bits
    return xs.make_shape(str(shape.element_type), list(shape.dimensions),
                         layout=xs.Layout(order, tiles=tiles, element_size_in_bits=bits))


@pytest.fixture
def compiled_everywhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Compiled kernels for arrays of any size; calls of the generic kernel counted (and as "walk": any walk)."""
    compiled_for_any_size(monkeypatch)
    walk = _dispatch.walker()
    if walk is None:
        pytest.skip("numba is not installed")
    counter: Counter[str] = Counter()
    count_calls(monkeypatch, walk, WALKS.values(), counter, lambda name, args: "walk")
    yield counter


@FAST
@given(family_shapes(), st.integers(0, 2**32), st.booleans(), st.sampled_from([1, 2]), st.data())
def test_compiled_paths_equal_numpy_path(
    compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, shape: xs.Shape, seed: int,
    generic_only: bool, threads: int, data: st.DataObject,
) -> None:
    """Every family, both directions and relayout: the compiled kernels (the generic one alone, or with the
    2-d tiled and permute kernels first) give the NumPy path's bytes, on 1 or 2 threads."""
    with monkeypatch.context() as patch:
        if generic_only:
            patch.setattr(_compiled, "_compiled_choice", lambda *args: None)
        patch.setattr(_dispatch, "THREAD_BYTES", 0)
        x = random_array(str(shape.element_type), shape.dimensions, seed)
        expected = numpy_path(to_physical, x, shape)
        assert np.array_equal(to_physical(x, shape, threads=threads), expected), shape
        noise = np.random.default_rng(seed).integers(0, 256, size=len(expected), dtype=np.uint8)
        assert same_bits(from_physical(noise, shape, threads=threads), numpy_path(from_physical, noise, shape)), shape
        other = _other_layout(shape, data.draw)
        moved = relayout(noise, shape, other, threads=threads)
        assert np.array_equal(moved, numpy_path(relayout, noise, shape, other)), (shape, other)


def test_generic_kernel_covers_layouts_the_others_do_not(compiled_everywhere: Counter[str]) -> None:
    for text in ("f32[40,300]{0,1:T(8,128)}", "bf16[5000]{0:T(1024)(128)(2,1)}", "f32[2,4,256]{2,1,0:T(2,*,128)}",
                 "f64[9,17,33]{0,2,1}", "u8[64,48]{0,1:T(8,8)}"):
        shape = xs.parse_shape(text)
        assert _compiled._compiled_plan(shape.dimensions, shape.layout_or_default()) is None or "f64" in text
        x = random_array(str(shape.element_type), shape.dimensions, 7)
        before = compiled_everywhere["walk"]
        buffer = to_physical(x, shape)
        assert np.array_equal(buffer, numpy_path(to_physical, x, shape)), text
        assert same_bits(from_physical(buffer, shape), x), text
        assert compiled_everywhere["walk"] > before, text


def test_transposes_of_every_width_through_the_generic_kernel(compiled_everywhere: Counter[str]) -> None:
    # 16x16 and 8x8 register transposes, edges, 2- and 4-way (de)interleaves for widths 1, 2, 4 and 8
    for etype in ("u8", "bf16", "f32", "f64"):
        for text in (f"{etype}[67,45]{{0,1}}", f"{etype}[20,300]{{1,0:T(8,128)(2,1)}}",
                     f"{etype}[20,300]{{1,0:T(8,128)(4,1)}}", f"{etype}[37,19]{{0,1:T(8,8)}}"):
            shape = xs.parse_shape(text)
            x = random_array(etype, shape.dimensions, len(text))
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(_compiled, "_compiled_choice", lambda *args: None)
                buffer = to_physical(x, shape)
                assert np.array_equal(buffer, numpy_path(to_physical, x, shape)), text
                assert same_bits(from_physical(buffer, shape), x), text
    assert compiled_everywhere["walk"] >= 32


@pytest.mark.parametrize("text", ["u8[3,40,500]{2,1,0:T(1,256)}", "pred[6,500]{1,0:T(1,128)}",
                                  "u8[2,8,4,300]{3,2,1,0:T(128)}", "bf16[7,33,200]{2,0,1:T(1,64)}"])
@pytest.mark.parametrize(("stream", "threads"), [(True, 1), (True, 2), (False, 1)])
def test_one_row_tiles_side_by_side_are_one_run(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                text: str, stream: bool, threads: int) -> None:
    # tiles of one row along a dim they cut short are its rows with padding after: one run per row (not a box of
    # whole tiles and one of the rest, each writing part of every row), rows that follow each other in the
    # destination stored plainly
    shape = xs.parse_shape(text)
    plan = _plan(shape.dimensions, shape.layout_or_default())
    assert plan is not None
    logical = np.zeros(shape.dimensions, np.uint8)
    view = _physical_view(np.zeros(shape.byte_size(), np.uint8), plan)
    chains = tuple((n,) for n in plan.extents)
    boxes = _transfer_boxes(view, plan.chains, logical.reshape(logical.shape + (1,) * plan.phantoms), chains,
                            plan.extents)
    assert len(boxes) == 1 and boxes[0][0].shape == shape.dimensions, text  # (one axis a dim)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0 if stream else 1 << 62)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    buffer = to_physical(x, shape, threads=threads)
    assert np.array_equal(buffer, numpy_path(to_physical, x, shape)), text
    noise = np.random.default_rng(3).integers(0, 256, size=len(buffer), dtype=np.uint8)
    assert same_bits(from_physical(noise, shape, threads=threads), numpy_path(from_physical, noise, shape)), text
    assert compiled_everywhere["walk_runs"] >= 1  # (read back; laid out with its padding: the test below)


def padded_rows_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The calls of the ``padded_rows`` kernel, counted as "rows" (the test skipped without numba)."""
    walk = _dispatch.walker()
    if walk is None:
        pytest.skip("numba is not installed")
    calls = Counter[str]()
    kernel = walk.padded_rows
    monkeypatch.setattr(walk, "padded_rows", lambda *args: (calls.update(["rows"]), kernel(*args))[1])
    return calls


@pytest.mark.parametrize(("text", "taken"), [
    ("u8[3,40,100]{2,1,0:T(1,128)}", True), ("pred[6,500]{1,0:T(1,128)}", True),
    ("bf16[7,33,200]{2,1,0:T(1,256)}", True), ("f32[5,300]{1,0:T(1,128)}", True),
    ("u8[2,8,4,300]{3,2,1,0:T(128)}", True),
    ("u8[3,40,100]{2,1,0:T(8,128)}", True), ("f64[67,100]{1,0:T(8,128)}", True),  # (one tile a row; 67: padding rows)
    ("u8[100,67]{0,1:T(8,128)}", False), ("bf16[3,61,100]{2,1,0:T(8,128)}", False),  # (transposed; pad rows between)
    ("u8[3,40,100]{1,2,0:T(1,128)}", False),  # (rows apart: no run of them)
    ("u8[3,40,200]{2,1,0:T(8,128)}", True), ("bf16[3,61,1000]{2,1,0:T(8,128)}", True),  # (the last tiles' rows,
    ("f32[17,300]{1,0:T(8,128)}", True), ("u8[8,4,200]{2,0,1:T(8,128)}", True)])  # cut short: the whole tiles copied)
@pytest.mark.parametrize(("stream", "threads", "offset"), [(True, 1, 0), (True, 2, 16), (False, 1, 0)])
def test_rows_that_end_in_padding_are_laid_out_with_it(monkeypatch: pytest.MonkeyPatch, text: str, taken: bool,
                                                        stream: bool, threads: int, offset: int) -> None:
    # physical rows that are the minor dim padded at its end (one-row tiles, or one tile across it), or the rows of
    # the tiles that cut it short (the whole tiles before them copied): each row and the padding after it staged and
    # written out as one run (not a strided pass for the padding, then runs ending on partial lines); whole rows of
    # padding (the other dims') filled as before
    calls = padded_rows_calls(monkeypatch)
    monkeypatch.setattr(_dispatch, "NUMBA_BYTES", 0)
    monkeypatch.setattr(_dispatch, "FIRST_NUMBA_BYTES", 0)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0 if stream else 1 << 62)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    padding = None if "pred" in text else 3
    expected = numpy_path(to_physical, x, shape, padding_value=padding)
    room = np.empty(len(expected) + 64, np.uint8)
    out = room[offset : offset + len(expected)]
    assert to_physical(x, shape, out=out, threads=threads, padding_value=padding) is out
    assert np.array_equal(out, expected), text
    assert (calls["rows"] > 0) == taken


@pytest.mark.parametrize("text", [
    "f16[200,300]{0,1:T(8,128)(2,1)}", "f32[40,300]{0,1:T(8,128)}", "s8[300,70]{0,1:T(8,128)(4,1)}",
    "bf16[30,100,1,128]{0,3,1,2:T(8,128)(2,1)}", "u8[40000,3]{0,1:P(40000,5)}", "f32[9000,7]{0,1:P(9000,10)}"])
@pytest.mark.parametrize(("stream", "threads", "offset"), [(True, 1, 0), (True, 2, 16), (False, 1, 0)])
def test_padding_of_a_line_or_more_a_run_is_written_by_the_kernel(monkeypatch: pytest.MonkeyPatch, text: str,
                                                                    stream: bool, threads: int, offset: int) -> None:
    # padding in runs of a line and more (the columns of a partial tile, whole padding rows) is written before the
    # elements by the padding_runs kernel, whole lines streamed: NumPy's fill stored them plainly, as costly as a pass
    # over the whole buffer; runs longer than its pattern go a piece at a time
    walk = _dispatch.walker()
    if walk is None:
        pytest.skip("numba is not installed")
    runs: list[tuple[int, int]] = []
    kernel = walk.padding_runs
    monkeypatch.setattr(walk, "padding_runs", lambda *args: (runs.append((args[2], args[3])), kernel(*args))[1])
    monkeypatch.setattr(_dispatch, "NUMBA_BYTES", 0)
    monkeypatch.setattr(_dispatch, "FIRST_NUMBA_BYTES", 0)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0 if stream else 1 << 62)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    shape = xs.parse_shape(text) if "P(" not in text else shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    expected = numpy_path(to_physical, x, shape, padding_value=3)
    room = np.full(len(expected) + 64, 0xAB, np.uint8)  # (whatever the buffer held: the padding must be written)
    out = room[offset : offset + len(expected)]
    assert to_physical(x, shape, out=out, threads=threads, padding_value=3) is out
    assert np.array_equal(out, expected), text
    assert runs and all(length >= LINE and piece == min(length, PIECE) for piece, length in runs), runs
    assert any(length > PIECE for _, length in runs) == ("P(" in text)  # (legacy padding: whole rows of it)


@pytest.mark.parametrize("text", ["u8[3,16500]{1,0:T(1,256)}", "bf16[2,8200]{1,0:T(1,128)}",
                                  "u8[2,3,40000]{2,1,0:T(1,512)}"])
def test_padded_rows_longer_than_the_scratch_never_reach_the_kernel(monkeypatch: pytest.MonkeyPatch,
                                                                    text: str) -> None:
    # the padded_rows kernel stages whole physical rows in STAGED_BLOCK bytes of scratch: a longer row overran it
    # (heap corruption, then a crash, for u8[12,2796202]{1,0:T(1,256)}); such rows go the plain way
    walk = _dispatch.walker()
    if walk is None:
        pytest.skip("numba is not installed")
    rows = []
    kernel = walk.padded_rows
    monkeypatch.setattr(walk, "padded_rows", lambda *args: (rows.append(args[4] * args[2].itemsize),
                                                            kernel(*args))[1])
    monkeypatch.setattr(_dispatch, "NUMBA_BYTES", 0)
    monkeypatch.setattr(_dispatch, "FIRST_NUMBA_BYTES", 0)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    assert np.array_equal(to_physical(x, shape, padding_value=5), numpy_path(to_physical, x, shape, padding_value=5))
    assert all(row <= _copy.STAGED_BLOCK for row in rows), rows
    short = xs.parse_shape("u8[3,16000]{1,0:T(1,256)}")  # (rows that fit still take the kernel)
    to_physical(random_array("u8", short.dimensions, 1), short)
    assert rows and all(row <= _copy.STAGED_BLOCK for row in rows)


@pytest.mark.parametrize("stream", [True, False])
def test_streamed_transposes_of_the_generic_kernel(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                   stream: bool) -> None:
    # 32x32 squares of 2-byte words streamed (line-aligned rows) or 16x16 (unaligned), 8 x line blocks streamed
    # for short source rows (f32/bf16/u8 with 8..lanes-1 rows), blocks that continue short destination rows (in
    # twos, fours or eights when rows are a half, a quarter or an eighth of a line), and
    # legacy padding (rows off line boundaries), with edges in both dims
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0 if stream else 1 << 40)
    monkeypatch.setattr(_compiled, "_compiled_choice", lambda *args: None)
    cases = ["bf16[64,96]{0,1}", "bf16[96,64]{0,1}", "s16[67,100]{0,1}", "bf16[40,33]{0,1}", "f16[20,64]{0,1}",
             "f32[3,8,8,16,8,16]{1,3,5,0,2,4}", "f32[2,12,16,40]{2,3,1,0}", "f32[9,37,16]{1,2,0}",
             "u8[5,12,64]{1,2,0}", "bf16[3,10,64]{1,2,0}", "f32[300,257]{0,1}",
             # destination rows of half a line, blocks side by side: pairs of blocks make whole lines (odd counts too)
             "bf16[3,8,8,16,16,16]{1,3,5,0,2,4}", "u8[2,8,8,16,32,16]{1,3,5,0,2,4}", "f32[3,8,7,16,8,16]{1,3,5,0,2,4}",
             # rows of a quarter and an eighth of a line: four and eight blocks make whole lines (and leftovers)
             "u8[2,16,8,7,16,64]{1,3,5,0,2,4}", "bf16[2,8,8,16,16,64]{1,3,5,0,2,4}",
             "s8[2,8,8,12,32,64]{1,3,5,0,2,4}", "s8[2,8,8,16,9,64]{1,3,5,0,2,4}",
             # 3 channels to and from planes (NHWC <-> NCHW): rows (de)interleaved three at a time, the columns
             # left over by a last line's worth overlapping the one before; shorter than a line: element by element
             "u8[2,70,130,3]{2,1,3,0}", "bf16[2,3,70,130]{1,3,2,0}", "f32[2,3,33,20]{1,3,2,0}",
             "f64[3,10,9,3]{2,1,3,0}", "u8[2,5,7,3]{2,1,3,0}", "s16[2,3,64,32]{1,3,2,0}",
             # 5 to 7 channels to and from planes, the last line overlapping
             "u8[2,70,130,5]{2,1,3,0}", "u8[2,33,70,6]{2,1,3,0}", "u8[2,30,70,7]{2,1,3,0}", "bf16[2,9,40,5]{2,1,3,0}",
             "f32[2,7,20,6]{2,1,3,0}", "u8[2,6,64,70]{1,3,2,0}", "bf16[2,7,30,40]{1,3,2,0}",
             # 8 channels from planes (bytes and 2-byte words): interleaved eight at a time
             "u8[2,30,70,8]{2,1,3,0}", "bf16[2,9,41,8]{2,1,3,0}", "u8[2,8,33,70]{1,3,2,0}",
             # sides that are not a whole number of squares: one more square overlapping the last; rows of 9 and
             # 12 elements (conv weights OIHW <-> HWIO, 12 channels) staged a scratch's worth of rows at a time
             "f32[3,3,2,600]{1,0,3,2}", "f32[2,600,3,3]{1,0,3,2}", "u8[2,30,70,12]{2,1,3,0}",
             "bf16[2,12,30,70]{1,3,2,0}",
             # 9 to 15 channels to planes: 8 rows at a time, the rest (2 to 7) as a short block of their own
             "u8[2,9,70,10]{2,1,3,0}", "u8[2,9,70,9]{2,1,3,0}", "f32[2,7,40,15]{2,1,3,0}", "bf16[2,5,70,13]{2,1,3,0}",
             # from planes, 9 to 32 channels (24 of 2-byte words, 12 of 4-byte): a lane's worth of planes at a
             # time, transposed within lanes, four columns' worth of each group gathered into lines, each line
             # spilling into the next's place; unstreamed, the columns whose lines would spill past the block
             # element by element
             "u8[2,30,70,16]{2,1,3,0}", "u8[2,30,70,24]{2,1,3,0}", "u8[2,11,70,31]{2,1,3,0}", "u8[2,3,5,20]{2,1,3,0}",
             "bf16[2,9,41,15]{2,1,3,0}", "f32[2,9,41,12]{2,1,3,0}", "u8[2,9,70,32]{2,1,3,0}",
             "bf16[2,9,41,24]{2,1,3,0}", "f32[2,9,41,9]{2,1,3,0}", "u8[2,9,70,17]{2,1,3,0}",
             # rows of 2 or 4 elements: 2 or 4 source rows at a time, blocks side by side filling lines (the whole
             # walk one wide block), (2,1) / (4,1) sub-tiles moved as 4-byte words, whose tiles of 4 or 2 word rows
             # go through squares spanning 4 or 8 tiles
             "bf16[4,96,160]{0,1,2}", "f32[2,64,300]{0,1,2}", "u8[4,64,200]{0,1,2}", "f64[4,64,64]{0,1,2}",
             "f32[2,203,100]{0,1,2}",  # (25 groups of 8 blocks, written 8 lines of each row at a time, and 3 more)
             "bf16[256,520]{0,1:T(8,128)(2,1)}", "s8[200,512]{0,1:T(8,128)(4,1)}", "f32[200,300]{0,1:T(4,128)}",
             "f32[130,300]{0,1:T(2,128)}",
             # ... of bytes: squares of 64 x 64 bytes from 16 or 32 blocks of source rows (some left over)
             "u8[300,256]{0,1:T(4,128)}", "u8[200,300]{0,1:T(2,128)}",
             # blocks of 8 or 16 rows continuing each other in the source: squares across 2 to 8 of them
             "u8[300,300]{0,1:T(8,128)}", "u8[200,300]{0,1:T(16,128)}", "u8[16,64,200]{0,1,2}",
             "bf16[16,64,100]{0,1,2}",
             # batch-minor blocks whose source rows are a multiple of 4 KiB apart: a line of them at a time; more
             # than 16 of them, 8 lines of each row gathered first (several chunks, the last one short; rows of
             # 24 bytes, of half a line, of 48 bytes)
             "u8[16,512,72]{0,1,2}", "bf16[16,256,72]{0,1,2}", "u8[24,16,1280]{0,1,2}", "u8[32,8,1280]{0,1,2}",
             "bf16[24,8,1280]{0,1,2}", "u8[32,8,300]{0,1,2}",  # (32 rows of half a line: gathered anywhere)
             # ... read back: short source rows 4 KiB apart, their lines gathered once for the blocks that share
             # them (rows of half a line, of 24 bytes across line boundaries, of 40)
             "u8[32,128,256]{0,1,2}", "u8[24,512,128]{0,1,2}", "u8[40,512,64]{0,1,2}",
             # tiled transposes read back whose tiles are a multiple of 4 KiB apart: all the bands of a line of
             # each tile row before the next blocks, the blocks two groups on prefetched
             "u8[4096,72]{0,1:T(8,128)}", "bf16[2048,40]{0,1:T(8,128)}", "u8[4096,40]{0,1:T(8,64)}",
             # ... laid out: squares of 64 byte rows 4 KiB apart, their lines gathered first (the last overlapping)
             "u8[256,4096]{0,1:T(8,128)}", "u8[200,4096]{0,1:T(16,128)}",
             # more than 64 channels to planes: squares of 64 bytes, then blocks of 8 rows (the last overlapping)
             "u8[2,8,64,75]{2,1,3,0}", "u8[2,4,128,96]{2,1,3,0}"]
    shapes = [xs.parse_shape(text) for text in cases]
    shapes.append(xs.make_shape("s16", [40, 301], layout=xs.Layout((0, 1), padded_dimensions=(43, 320))))
    for shape in shapes:
        x = random_array(str(shape.element_type), shape.dimensions, shape.rank)
        buffer = to_physical(x, shape)
        assert np.array_equal(buffer, numpy_path(to_physical, x, shape)), shape
        assert same_bits(from_physical(buffer, shape), x), shape
        noise = np.random.default_rng(shape.rank).integers(0, 256, size=len(buffer), dtype=np.uint8)
        assert same_bits(from_physical(noise, shape), numpy_path(from_physical, noise, shape)), shape
    assert compiled_everywhere["walk"] >= 2 * len(shapes)


@pytest.mark.parametrize("text", ["bf16[4,96,200]{0,1,2}", "bf16[4,300,200]{0,1,2}", "f32[2,64,300]{0,1,2}",
                                  "bf16[256,520]{0,1:T(8,128)(2,1)}", "f32[200,300]{0,1:T(4,128)}",
                                  "f32[130,300]{0,1:T(2,128)}", "u8[300,256]{0,1:T(4,128)}",
                                  "u8[200,300]{0,1:T(2,128)}",
                                  # blocks of 5 or 7 source elements (3 of 2-byte words): the last group of rows
                                  # overlapping the one before
                                  "pred[300,8,3,7]{0,1,2,3:T(8,128)(4,1)}", "s8[200,16,64,5]{0,1,2,3:T(8,128)(4,1)}",
                                  "bf16[64,4,8,72,3]{0,1,4,2,3:T(16,128)(2,1)}"])
@pytest.mark.parametrize("offset", [0, 16, 4])
def test_rows_of_two_or_four_off_the_line_grid(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                text: str, offset: int) -> None:
    # destination rows of 2 or 4 elements, blocks side by side filling lines, when the destination is off the line
    # grid (an out= array 16 bytes past a line): the same register transposes, their lines staged and streamed from
    # there (they went element by element: 14x memcpy for bf16[4,4096,2048]{0,1,2}; stored plainly 3.1x, now 2.05x)
    quarters, *_ = _spied_round_trip(monkeypatch, "walk_quarters", text, offset)
    assert sum(quarters.values()) >= 1, text


@pytest.mark.parametrize("text", ["f32[1024,640]{0,1:T(8,128)}", "s8[512,1024]{0,1:T(8,128)(4,1)}",
                                  "u8[512,512]{0,1:T(8,128)}", "bf16[300,512]{0,1:T(8,128)(2,1)}"])
@pytest.mark.parametrize("offset", [0, 16, 4])
def test_grouped_squares_on_and_off_the_line_grid(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                  text: str, offset: int) -> None:
    # tiled transposes: squares of one line a side across blocks of 2-16 rows, streamed on the line grid; off it the
    # rows of a run of squares go through scratch, each block's rows (which continue each other) streamed from their
    # own line boundary (s8[8192,8192]{0,1:T(8,128)(4,1)} 'to' 16 bytes past a line: 2.5 -> 1.9x)
    groups, *_ = _spied_round_trip(monkeypatch, "walk_groups", text, offset)
    assert sum(groups.values()) >= 1, text


@pytest.mark.parametrize(("dtype", "big"), [(np.float32, 8), (np.uint16, 16), (np.uint8, 4)])
@pytest.mark.parametrize("offset", [0, 16])
def test_grouped_squares_onto_rows_apart(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                         dtype: Any, big: int, offset: int) -> None:
    # the same squares onto destination rows that do not continue each other (a gap after each): off the line grid
    # each row goes out on its own
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    walk = _dispatch.walker()
    calls = Counter[int]()
    monkeypatch.setattr(walk, "walk_groups", _counting(walk.walk_groups, calls))
    small, count, row = 256, 40, 264  # (elements: a row with its gap; each block's rows have a gap after them too)
    block = big * row + 24
    src = np.random.default_rng(big).integers(0, 255, (small, count, big)).astype(dtype)
    _copied_into_gaps(src.transpose(1, 2, 0), (block, row, 1), count * block, offset)
    assert sum(calls.values()) == 1


@pytest.mark.parametrize("text", ["u8[7,300,200]{1,0,2:T(8,128)(4,1)}", "u8[3,260,100]{1,0,2:T(8,128)(4,1)}",
                                  "s8[6,200,129]{1,0,2:T(8,128)(4,1)}", "u8[7,300,65]{1,0,2:T(8,128)(4,1)}",
                                  "u8[14,140,300]{1,0,2:T(16,128)(4,1)}",
                                  "u8[7,500,600]{1,0,2:T(8,128)(4,1)}"])  # (source rows 4 KiB apart: gathered)
@pytest.mark.parametrize("offset", [0, 8])
def test_grouped_squares_of_groups_cut_short(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                             text: str, offset: int) -> None:
    # a dim whose size is not a multiple of its (4,1) sub-tile's rows leaves a last group of fewer rows (3 of 4 for
    # 7 rows) 4 bytes apart in the physical bytes: they go through the grouped squares too, their fourth row read
    # along into the room and dropped (read back, they went element by element: u8 [7,1000,4793]{1,0,2:T(8,128)(4,1)}
    # 18x memcpy, now 2.8x); the last column is left to the element loop (its dropped row may end the source)
    cut: list[tuple[int, int]] = []

    def kind(shape: Any, d_steps: Any, s_steps: Any, unit: int, *args: Any) -> tuple[int, int]:
        found = walk_kind(shape, d_steps, s_steps, unit, *args)
        outer = [k for k in range(len(shape) - 1) if k != unit]
        if found[0] == GROUPS and s_steps[outer[-1]] != shape[unit]:
            cut.append((shape[unit], s_steps[outer[-1]]))
        return found

    monkeypatch.setattr(_copy, "walk_kind", kind)
    groups, *_ = _spied_round_trip(monkeypatch, "walk_groups", text, offset)
    assert sum(groups.values()) >= 1 and cut, text
    assert all(big < group <= 2 * big for big, group in cut), cut


@pytest.mark.parametrize("text", ["u8[7,300,200]{1,0,2:T(8,128)(4,1)}", "s8[4,300,27,12]{1,2,0,3:T(8,128)(4,1)}",
                                  "u8[6,200,130]{1,0,2:T(8,128)(4,1)}", "s8[3,40,11,40]{1,2,0,3:T(8,128)(4,1)}"])
@pytest.mark.parametrize("offset", [0, 8])
def test_tiled_transposes_laid_out_with_groups_cut_short(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int) -> None:
    # the same groups cut short, laid out: quarter-line blocks of 2 or 3 rows 4 bytes apart, through masked stores
    # (s8 [200,500,27,12]{1,2,0,3:T(8,128)(4,1)} 'to' 7.6 -> 5.3x memcpy, its 12 columns a block of 4 rows at a time)
    cut: list[int] = []

    def kind(shape: Any, d_steps: Any, s_steps: Any, unit: int, *args: Any) -> tuple[int, int]:
        found = walk_kind(shape, d_steps, s_steps, unit, *args)
        outer = [k for k in range(len(shape) - 1) if k != unit]
        if found[0] == QUARTERS and d_steps[outer[-1]] != shape[-1]:
            cut.append(shape[unit])
        return found

    monkeypatch.setattr(_copy, "walk_kind", kind)
    quarters, *_ = _spied_round_trip(monkeypatch, "walk_quarters", text, offset)
    assert sum(quarters.values()) >= 1 and cut, text


@pytest.mark.parametrize(("text", "room"), [
    ("u8[8,64,4200]{1,0,2:T(8,128)(4,1)}", _copy.WIDE_ROOM),  # (16 squares' rows of 4288 bytes: more than the room)
    ("u8[8,300,1100]{1,0,2:T(8,128)(4,1)}", 1 << 16), ("u8[7,260,1300]{1,0,2:T(8,128)(4,1)}", 1 << 16),
    ("bf16[8,200,1100]{1,0,2:T(8,128)(2,1)}", 1 << 16), ("s8[12,256,1100]{1,0,2:T(8,128)(4,1)}", 1 << 16),
    ("u8[8,512,1100]{1,0,2:T(8,128)(4,1)}", 1 << 16)])  # (source rows 4 KiB apart: gathered, 7 squares at a time)
@pytest.mark.parametrize("offset", [0, 8])
def test_grouped_squares_of_rows_too_long_for_the_room_go_a_piece_at_a_time(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, room: int,
        offset: int) -> None:
    # grouped squares off the line grid whose destination rows are too long for the room to hold a square's worth of
    # blocks went straight out, stored plainly (u8 [8,1000,4793]{1,0,2:T(8,128)(4,1)} read back 3.9x memcpy); a
    # piece of every row goes through the room, each row's whole lines streamed from its own line boundary (2.7x;
    # a smaller room: fewer blocks at a time)
    monkeypatch.setattr(_copy, "WIDE_ROOM", room)
    groups, *_ = _spied_round_trip(monkeypatch, "walk_groups", text, offset)
    assert sum(groups.values()) >= 1, text


@pytest.mark.parametrize(("dtype", "fd", "small", "big"), [
    (np.uint8, 4, 3, 200), (np.uint8, 4, 2, 130), (np.uint16, 4, 3, 70), (np.float32, 4, 3, 40),
    (np.float64, 4, 2, 20)])
@pytest.mark.parametrize("offset", [0, 8])
def test_quarters_of_groups_cut_short_leave_the_slots_past_them(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, dtype: Any, fd: int, small: int, big: int,
        offset: int) -> None:
    # blocks of destination rows of 2 or 4 elements whose last group is cut short (3 rows of a (4,1) sub-tile laid
    # out): squares of a line a side (or blocks of fewer rows than a square) through masked stores, which leave the
    # slots past each block's rows as they are (they went element by element: u8 [7,1000,4793]{1,0,2:T(8,128)(4,1)}
    # 'to' 9.1x memcpy, now 3.3x); the last blocks and rows overlap the ones before
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    walk = _dispatch.walker()
    calls = Counter[int]()
    monkeypatch.setattr(walk, "walk_quarters", _counting(walk.walk_quarters, calls))
    count = 40  # (blocks: 2.5 lines of them for bytes)
    row = count * fd + 8  # (elements between destination rows)
    values = np.random.default_rng(fd * big).integers(1, 120, (count, small, big)).astype(dtype)
    _copied_into_gaps(values.transpose(0, 2, 1), (fd, row, 1), big * row, offset)
    assert sum(calls.values()) == 1


@pytest.mark.parametrize("text", ["u8[16,64,200]{0,1,2}", "u8[8,64,200]{0,1,2}", "f32[8,64,100]{0,1,2}",
                                  "bf16[24,40,100]{0,1,2}", "u8[200,300]{0,1:T(8,128)}", "u8[24,70,300]{0,1,2}",
                                  "f32[12,40,100]{0,1,2}", "u8[40,64,4096]{0,1,2}",
                                  # rows of 8 to 16 bytes whose blocks and rows are both 4 KiB apart: gathered too
                                  "u8[16,8,4096]{0,1,2}", "u8[8,8,4096]{0,1,2}", "u8[12,8,4096]{0,1,2}"])
@pytest.mark.parametrize("offset", [0, 16, 4])
def test_wide_blocks_side_by_side_on_and_off_the_line_grid(compiled_everywhere: Counter[str],
                                                            monkeypatch: pytest.MonkeyPatch, text: str,
                                                            offset: int) -> None:
    # destination rows of a half, a quarter or an eighth of a line (8 or more elements): two, four or eight blocks
    # side by side make one line of each row, streamed on the line grid, staged off it and streamed from there (off
    # it they went 8 x 8 at a time: u8[16,4096,1024]{0,1,2} 'to' 22x memcpy 16 bytes past a line, now 2.7x); rows of
    # other lengths are staged too, squares of 16 bytes or 2-byte words (8 of wider ones), the last of each row
    # overlapping the one before (f32[12,1400,1000]{0,1,2} 'to' 2.6 -> 1.8x, where a third went element by element)
    wide, *_ = _spied_round_trip(monkeypatch, ("walk_wide", "walk_wide_lines"), text, offset)
    assert sum(wide.values()) >= 1, text


@pytest.mark.parametrize("text", ["f16[40,30,7]{0,2,1:T(8,128)(2,1)}", "u8[16,6,130]{0,2,1:T(8,128)(4,1)}",
                                  "s8[20,6,70]{0,2,1:T(32,128)(4,1)}", "f16[3,40,30,7]{0,3,2,1:T(8,128)(2,1)}",
                                  "u8[16,8,131]{0,2,1:T(8,128)(4,1)}"])  # (the last: 4 classes)
@pytest.mark.parametrize("offset", [0, 16, 2])
def test_sub_tile_words_a_part_of_a_word_apart_go_one_class_of_steps_at_a_time(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int) -> None:
    # the pairs of (2,1) sub-tiles (quads of (4,1)) of a logical minor dim of 7 (or 130, 70, 131) are rows 14 bytes
    # (130, 70, 131) apart: not words, the kernel moved them as runs of 2 or 4 elements (f16[1000,2396,7]{0,2,1:
    # T(8,128)(2,1)} 'to' 11x memcpy, now 5x; s8[200,24,6990]{0,2,1:T(32,128)(4,1)} 7-8x, now 2.5 / 1.8); split by
    # the residues of those steps, each class of rows is whole words apart, at an offset
    classes: list[int] = []
    real = _copy._word_classes
    monkeypatch.setattr(_copy, "_word_classes", lambda d, s: (lambda parts: (
        classes.append(len(parts or ())), parts)[1])(real(d, s)))
    monkeypatch.setattr(_compiled, "_compiled_choice", lambda *args: None)
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, offset + len(text))
    round_trip_off_the_grid(x, shape, offset)
    assert max(classes) >= 2, (text, classes)
    assert compiled_everywhere["walk"] >= 1


@pytest.mark.parametrize("text", ["u8[2,64,64,40]{2,1,3,0}", "u8[1,64,128,33]{2,1,3,0}", "u8[3,64,64,17]{2,1,3,0}",
                                  "u8[2,32,128,96]{2,1,3,0}"])
@pytest.mark.parametrize("offset", [0, 16])
def test_byte_squares_from_rows_4_kib_apart_go_a_chunk_of_columns_at_a_time(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int) -> None:
    # planes of 64 x 64 (or 32 x 128) bytes read back into channels: every source row 4 KiB from the next, its line
    # in the same cache set; more than 16 channels (17, 33, 40, 96: the last square overlapping the one before),
    # 8192 columns in chunks of ALIASED_CHUNK (a chunk's last square overlapping too: 4096 and 8192 columns)
    calls = Counter[str]()
    real = _dispatch.walker().walk_squares
    monkeypatch.setattr(_dispatch.walker(), "walk_squares", lambda *args: calls.update(["walk"]) or real(*args))
    shape = shape_of(text)
    x = random_array("u8", shape.dimensions, offset + len(text))
    assert np.array_equal(round_trip_off_the_grid(x, shape, offset), numpy_path(to_physical, x, shape))
    assert calls["walk"] >= 1  # (reading back; laying out 17 to 32 channels takes the planes walk)


@pytest.mark.parametrize("text", ["u8[200,16,640]{0,1,2}", "u8[100,16,200]{0,1,2}", "pred[200,16,5,128]{0,1,2,3}",
                                  "bf16[48,20,2,256]{0,1,2,3}", "f32[36,16,130]{0,1,2}", "u8[72,32,100]{0,1,2}",
                                  "s16[36,16,260]{0,1,2}"])
@pytest.mark.parametrize("offset", [0, 8])
def test_squares_whose_columns_are_off_the_line_grid_stream_their_whole_lines(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int) -> None:
    # a full reversal laid out: each block's destination columns (200 bytes of rows on the line grid, the blocks of
    # the next dim back to back) start at any offset in a line; the whole lines between a head and a tail are
    # streamed, the head and tail (any width: 8, 16, 56 bytes; none at all where a block starts on the grid) moved
    # plainly, the next block's head finishing the line the tail began
    calls, *_ = _spied_round_trip(monkeypatch, "walk_squares", text, offset)  # (streamed at any size)
    assert sum(calls.values()) >= 1, text


@pytest.mark.parametrize(("text", "entry"), [
    ("u8[6,300,7]{1,2,0}", "walk_rows"), ("bf16[4,301,5]{1,2,0}", "walk_rows"),  # 6 (3) planes in the room: of 7 (5)
    ("u8[4,700,10]{1,2,0}", "walk_squares"), ("f32[3,90,13]{1,2,0}", "walk_squares"),  # 2 (5) of 10 (13)
    ("u8[4,100,20]{1,2,0}", "walk_squares")])  # 20 of 20: through the room, 16 rows at a time
@pytest.mark.parametrize("offset", [0, 8])
def test_planes_longer_than_the_room_holds_for_their_block_go_straight_out(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, entry: str,
        offset: int) -> None:
    # channels to planes whose rows are off the line grid: a chunk of planes through the room, whence their whole
    # lines are streamed, takes as many planes as the room holds; where that was fewer than the block's kind takes
    # (all of 2 to 7 channels de-interleaved, 16 rows of squares), each chunk went element by element (u8
    # [500,9586,7]{1,2,0} 'to', 16 KiB of room: 4.4x memcpy); such blocks now go straight out, stored plainly
    monkeypatch.setattr(_copy, "STAGED_BLOCK", 2048)
    calls, *_ = _spied_round_trip(monkeypatch, entry, text, offset)
    assert sum(calls.values()) >= 1, text


@pytest.mark.parametrize(("text", "entry"), [
    ("f32[12,3001]{0,1}", "walk_squares"), ("f32[12,773]{0,1}", "walk_squares"),  # (773: a last piece of 5)
    ("u8[40,1027]{0,1}", "walk_squares"), ("bf16[12,700]{0,1}", "walk_squares"), ("f64[9,333]{0,1}", "walk_squares"),
    ("u8[3,2000]{0,1}", "walk_rows"), ("bf16[5,1100]{0,1}", "walk_rows"),  # (2 to 7 planes: de-interleaved)
    ("u8[3,24,1100]{1,2,0}", "walk_squares"), ("f32[5,12,301]{1,2,0}", "walk_squares"),  # (a block each of 3, 5)
    ("f32[64,257]{0,1}", "walk_squares")])  # (64 rows: a line of each row a piece, the room's most)
@pytest.mark.parametrize("offset", [0, 8])
def test_rows_at_other_offsets_in_their_lines_stream_their_lines_through_the_room(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, entry: str, offset: int) -> None:
    # channels to planes whose destination rows are a length apart that is not a multiple of a line: each row meets
    # the line grid at its own offset, so none could be streamed and every plain store read its line first (f32
    # [12,699050]{0,1} read back, 3.0x memcpy); pieces of every row go through the room, whence each row's whole
    # lines are streamed from its own line boundary, the line a piece leaves unfinished carried to the next (1.4x)
    calls, *_ = _spied_round_trip(monkeypatch, entry, text, offset)
    assert sum(calls.values()) >= 1, text


@pytest.mark.parametrize("text", ["bf16[544,576]{0,1}", "f32[160,272]{0,1}", "f64[80,136]{0,1}",
                                  "f32[2,272,160]{1,2,0}", "f32[128,640]{0,1:T(8,128)}", "s16[36,1000]{0,1}",
                                  "s16[96,1024]{0,1}"])
@pytest.mark.parametrize("offset", [16, 2])
def test_line_shifted_and_swept_transposes(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                           text: str, offset: int) -> None:
    # streamed transposes with long destination rows: on the line grid the walk reads a line's worth of source
    # rows at a time (line sweeps); off it, each row's head and tail go apart and the middle is shifted onto it
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_transposes, "STAGE_SIDE", 1 << 40)  # (2-d transposes this long are staged otherwise)
    monkeypatch.setattr(_copy, "SWEEP_BYTES", 256)  # small arrays: sweeps cut like large ones
    monkeypatch.setattr(_copy, "SHIFT_BYTES", 512)
    sweeps, shifts = Counter[int](), Counter[int]()
    monkeypatch.setattr(_copy, "_line_sweeps", _counting(_copy._line_sweeps, sweeps))
    monkeypatch.setattr(_copy, "_line_shift", _counting(_copy._line_shift, shifts))
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, offset + len(text))
    expected = numpy_path(to_physical, x, shape)
    room = np.empty(len(expected) + 64 + 64, np.uint8)
    start = -room.ctypes.data % 64 + offset
    out = room[start : start + len(expected)]
    assert to_physical(x, shape, out=out) is out
    assert np.array_equal(out, expected), text
    width = x.dtype.itemsize
    back_room = np.empty(x.nbytes + 128, np.uint8)
    back_start = -back_room.ctypes.data % 64 + offset // width * width
    back = back_room[back_start : back_start + x.nbytes].view(x.dtype).reshape(x.shape)
    assert from_physical(expected, shape, out=back) is back
    assert same_bits(back, x), text
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    assert to_physical(x, shape, out=out, threads=2) is out  # the sweeps split over threads
    assert np.array_equal(out, expected), text
    regular = offset % width == 0 and "36," not in text  # (s16[36,1000]: rows not a whole number of lines)
    assert sum(sweeps.values()) > 0 or not regular, text
    if regular and offset:
        assert any(value > 0 for value in shifts), text  # some rows were shifted onto the line grid


@pytest.mark.parametrize("text", ["u8[1100,48]{0,1:T(1,256)}", "bf16[1000,40]{0,1:T(1,256)}",
                                  "s8[3,700,48]{0,2,1:T(1,256)}"])
def test_swept_rows_that_end_in_part_of_a_line_sweep_their_whole_lines_then_the_rest(
    compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    # destination rows on the line grid whose elements end inside a line (one-row tiles padding them to 256): the
    # whole lines of every row go in sweeps, the rest after them (blocks of whole rows read all the source once
    # for every 8 destination rows: u8 [699050,48]{0,1:T(1,256)} 'to' 5.2x memcpy -> 1.75)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_transposes, "STAGE_SIDE", 1 << 40)
    monkeypatch.setattr(_copy, "SWEEP_BYTES", 256)
    swept: list[int] = []
    real = _copy._line_sweeps
    monkeypatch.setattr(_copy, "_line_sweeps", lambda shape, *args: (swept.append(int(shape[-1])),
                                                                      real(shape, *args))[1])
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    expected = numpy_path(to_physical, x, shape)
    assert np.array_equal(to_physical(x, shape), expected), text
    line = 64 // x.dtype.itemsize
    assert swept and all(n % line == 0 or n < line for n in swept), swept  # (whole lines swept, the rest apart)
    assert same_bits(from_physical(expected, shape), x), text


@pytest.mark.parametrize(("etype", "dims", "padded"), [
    ("s16", (72, 1030), (75, 1040)), ("f32", (1030, 520), (1033, 520)), ("f64", (300, 300), (301, 301)),
    ("bf16", (64, 1027), (64, 1030)),
])
@pytest.mark.parametrize("offset", [16])
@pytest.mark.parametrize("block", [64, _copy.SHIFTED_ROWS])
def test_legacy_padding_rows_shifted_onto_lines(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                etype: str, dims: tuple[int, int], padded: tuple[int, int],
                                                offset: int, block: int) -> None:
    # long rows a whole number of elements but not of lines apart (legacy padding): each row streamed from its own
    # line boundary, its partial first and last lines and the left-over rows and columns stored plainly; the rows
    # taken `block` at a time (64: several blocks here)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_transposes, "STAGE_SIDE", 1 << 40)  # (2-d transposes this long are staged otherwise)
    monkeypatch.setattr(_copy, "SHIFTED_ROWS", block)
    walk = _dispatch.walker()
    shifted = Counter[int]()
    monkeypatch.setattr(walk, "shifted_rows", _counting(walk.shifted_rows, shifted))
    layout = xs.Layout((0, 1), padded_dimensions=padded)
    shape = xs.make_shape(etype, list(dims), layout=layout)
    x = random_array(etype, dims, offset + dims[1])
    expected = round_trip_off_the_grid(x, shape, offset)
    noise = np.random.default_rng(offset).integers(0, 256, size=len(expected), dtype=np.uint8)
    assert same_bits(from_physical(noise, shape), numpy_path(from_physical, noise, shape)), shape
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)  # rows split over threads a square at a time
    assert np.array_equal(to_physical(x, shape, threads=3), expected), shape
    assert same_bits(from_physical(expected, shape, threads=2), x), shape
    assert sum(shifted.values()) >= 4  # the shifted-rows kernel took the long rows (with and without out=)


def off_the_grid(nbytes: int, offset: int) -> np.ndarray[Any, Any]:
    """``nbytes`` of new memory starting ``offset`` bytes past a cache line."""
    room = np.empty(nbytes + 128, np.uint8)
    start = -room.ctypes.data % 64 + offset
    return room[start : start + nbytes]


def round_trip_off_the_grid(x: np.ndarray[Any, Any], shape: xs.Shape, offset: int) -> np.ndarray[Any, Any]:
    """The NumPy path's bytes of ``x``, after checking that both directions give them (and ``x`` back) into
    ``out=`` arrays ``offset`` bytes past a cache line."""
    expected = numpy_path(to_physical, x, shape)
    out = off_the_grid(len(expected), offset)
    assert to_physical(x, shape, out=out) is out
    assert np.array_equal(out, expected), shape
    back = off_the_grid(x.nbytes, offset).view(x.dtype).reshape(x.shape)
    assert from_physical(expected, shape, out=back) is back
    assert same_bits(back, x), shape
    return expected


CANONICAL_ENTRIES = {"merged_squares", "merged_lines", "merged_staged", "merged_direct", "merged_direct_lines",
                     "staged_transpose"}
"""Entries with a twin for pred that makes the bytes canonical as it moves them (``<name>_canonical``)."""


def _spied_round_trip(monkeypatch: pytest.MonkeyPatch, entry: str | tuple[str, ...], text: str, offset: int,
                      kernel: Callable[[], Any] = _dispatch.walker) -> tuple[
        Counter[int], xs.Shape, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The calls of the generic kernel's ``entry`` (or entries; of ``kernel``'s entry points) during a streamed round
    trip of a random array of ``text`` through ``out=`` arrays ``offset`` bytes past a line
    (:func:`round_trip_off_the_grid`; the 2-d kernels left out), the shape, the array and its physical bytes."""
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_compiled, "_compiled_choice", lambda *args: None)
    entries = (entry,) if isinstance(entry, str) else entry
    if "staged_transpose" in entries and "direct_transpose" not in entries:  # (the staged kernel's own tests: rows
        # on the line grid staged too)
        monkeypatch.setattr(_transposes, "DIRECT", False)
    walk = kernel()
    calls = Counter[int]()
    for name in entries:
        for variant in (name, name + "_canonical") if name in CANONICAL_ENTRIES else (name,):  # (pred's: its own)
            monkeypatch.setattr(walk, variant, _counting(getattr(walk, variant), calls))
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, offset + len(text))
    return calls, shape, x, round_trip_off_the_grid(x, shape, offset)


def _copied_into_gaps(values: np.ndarray[Any, Any], steps: tuple[int, ...], size: int, offset: int) -> None:
    """Copy ``values`` by the generic copy into a view with ``steps`` (elements) of a room of ``size`` elements
    ``offset`` bytes past a line, filled with 7 first, and check the view's values and that nothing else changed."""
    width = values.itemsize
    room = off_the_grid(size * width, offset).view(values.dtype)
    room[...] = 7
    dst = as_strided(room, values.shape, tuple(step * width for step in steps))
    _copy._copy(dst, values, _dispatch.run_settings(1 << 30, 1, room.nbytes))
    assert np.array_equal(dst, values)
    dst[...] = 7
    assert (room == 7).all()  # (nothing written outside the view: gaps left as they were)


def _counting(function: Callable[..., Any], seen: Counter[Any]) -> Callable[..., Any]:
    """``function``, counting what it returns (its first item for tuples)."""

    def call(*args: Any) -> Any:
        result = function(*args)
        seen[result if isinstance(result, int) else -1 if result is None else len(result[0])] += 1
        return result

    return call


@pytest.mark.parametrize(("source", "target"), [
    ("bf16[64,512]{1,0:T(8,128)(2,1)}", "bf16[64,512]{0,1:T(8,128)(2,1)}"),
    ("s8[64,512]{0,1:T(8,128)(4,1)}", "s8[64,512]{1,0:T(8,128)(4,1)}"),
    ("f32[256,512]{0,1:T(8,128)}", "f32[256,512]{1,0:T(2,128)}"),
    ("bf16[256,512]{1,0:T(8,128)}", "bf16[256,512]{0,1:T(8,128)(2,1)}")])
@pytest.mark.parametrize("route", ["windows", "whole", "direct"])
def test_fine_grained_relayouts_go_through_the_logical_array(compiled_everywhere: Counter[str],
                                                             monkeypatch: pytest.MonkeyPatch, source: str,
                                                             target: str, route: str) -> None:
    # sub-tiles turned around inside tiles leave the direct copy blocks of a few elements (bf16 (2,1) to (2,1)
    # transposed: 2 x 2, 44x memcpy), so the relayout goes through the logical array: chunks of the source's slabs
    # written into windows of the target (3.5x; here chunks of 16 KiB, cutting through the target's tiles), or of the
    # target's slabs read from windows of the source when only the target has a tiled kernel; whole where neither
    # has slabs; over FINE_TEMPORARY, directly all the same (bounded memory)
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 1 << 14)
    monkeypatch.setattr(physical, "_turned_blocks", lambda *args: None)  # (whole 2 x 2 blocks: tested below)
    monkeypatch.setattr(physical, "_turned_lines", lambda *args: None)  # (squares of lines: tested below)
    monkeypatch.setattr(_copy, "tiled_squares", lambda *args: None)  # (squares of tiles' rows: tested below)
    if route != "windows":
        monkeypatch.setattr(physical, "relayout_in_windows", lambda *args: False)
        monkeypatch.setattr(physical, "relayout_from_windows", lambda *args: False)
    if route == "direct":
        monkeypatch.setattr(physical, "FINE_TEMPORARY", 0)
    chunks, wholes = Counter[int](), Counter[int]()
    monkeypatch.setattr(_slabbed, "_read_physical", _counting(_slabbed._read_physical, chunks))
    monkeypatch.setattr(_slabbed, "_write_physical", _counting(_slabbed._write_physical, chunks))
    monkeypatch.setattr(physical, "_read_physical", _counting(physical._read_physical, wholes))
    shape, other = xs.parse_shape(source), xs.parse_shape(target)
    x = random_array(str(shape.element_type), shape.dimensions, len(source))
    buffer = numpy_path(to_physical, x, shape)
    assert np.array_equal(relayout(buffer, shape, other), numpy_path(to_physical, x, other)), source
    assert (sum(chunks.values()) >= 2, sum(wholes.values())) == {"windows": (True, 0), "whole": (False, 1),
                                                                 "direct": (False, 0)}[route], source


def test_fine_grained_copies_are_told_apart() -> None:
    # the blocks of the generic kernel's walk: 2 x 2 words of (2,1) sub-tiles turned around (fine-grained), whole
    # lines of a plain transpose, and the rows of (2,1) sub-tiles interleaved into tiles (not)
    a = np.zeros((64, 64, 2, 2), np.uint16)
    assert _copy.fine_grained(a, a.transpose(1, 0, 3, 2))
    assert not _copy.fine_grained(a.reshape(64, 256), a.reshape(256, 64).T)
    tiles = np.zeros((8, 4, 128, 2), np.uint16)
    assert not _copy.fine_grained(tiles, tiles.reshape(8, 4, 2, 128).transpose(0, 1, 3, 2))


@pytest.mark.parametrize(("source", "target"), [("bf16[64,512]", "bf16[64,512]{1,0:T(8,128)(2,1)}"),
                                                ("s4[64,512]{1,0:T(8,128)(2,1)E(4)}", "s4[64,512]")])
def test_relayouts_from_or_to_the_plain_layout_are_to_physical_or_from_physical(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, source: str, target: str) -> None:
    # the plain row-major layout's bytes are the logical array itself: the two directions' own kernels, no copy
    # between factor views (bf16 {1,0} to T(8,128)(2,1) 3.2x memcpy at 16 MiB that way, 1.2x to_physical's)
    direct = Counter[int]()
    monkeypatch.setattr(physical, "_relayout_direct", _counting(physical._relayout_direct, direct))
    shape, other = xs.parse_shape(source), xs.parse_shape(target)
    x = random_array(str(shape.element_type), shape.dimensions, len(source))
    buffer = numpy_path(to_physical, x, shape)
    assert np.array_equal(relayout(buffer, shape, other), numpy_path(to_physical, x, other)), source
    assert not direct, source


# ----- slabs, memory maps and chunk boundaries ------------------------------------------------------------------
def test_slabs_follow_the_most_major_dim() -> None:
    def cut(text: str) -> tuple[int, int, int, int] | None:
        shape = xs.parse_shape(text)
        found = _chunks.slabs(shape, xs.layout.element_bits(shape.element_type, shape.layout))
        return None if found is None else (found.axis, found.weight, found.outer, found.step)

    assert cut("f32[20,300]{1,0:T(8,128)}") == (0, 8, 3, 1)
    assert cut("f32[20,300]{0,1:T(8,128)}") == (1, 8, 38, 1)
    assert cut("bf16[3000]{0:T(1024)(128)(2,1)}") == (0, 1024, 3, 1)
    assert cut("f32[4,20,300]{2,1,0:T(8,128)}") == (0, 1, 4, 1)
    assert cut("s4[7,3]{1,0:E(4)}") == (0, 1, 7, 2)  # a slab of 3 elements is 1.5 bytes: chunks of 2 slabs
    assert cut("u2[9,13]{1,0:L(64)E(2)}") == (0, 1, 9, 64)
    assert cut("f32[30,33]{1,0:T(4,*,128)}") is None  # the tile makes new dims in front
    assert cut("f32[3,5]{1,0:T(*,2)}") is None  # '*' merges the most major dim
    assert cut("f32[3,5]{1,0}") == (0, 1, 3, 1)


SLAB_CASES = [
    "s4[37,300]{1,0:T(8,128)(2,1)E(4)}", "u4[45,77]{0,1:T(8,128)(2,1)E(4)}", "u2[99,13]{1,0:L(64)E(2)}",
    "bf16[3000]{0:T(1024)(128)(2,1)}", "s4[300,17]{0,1:L(3)E(4)}", "f32[45,77]{0,1:T(8,128)}",
    "pred[40,130]{1,0:T(32,128)(32,1)E(1)}", "s16[33,7,5]{1,2,0:T(4,4)}", "f32[30,33]{1,0:T(4,*,128)}",
]


@pytest.mark.parametrize("text", SLAB_CASES)
@pytest.mark.parametrize("budget", [1, 700, 1 << 20])
def test_slab_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch, text: str, budget: int) -> None:
    """Chunks of one step (a slab or two), of a few slabs, and one chunk for everything: the same bytes."""
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, budget)
    expected = numpy_path(to_physical, x, shape)
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", budget)
    monkeypatch.setattr(_compiled, "CHUNK_BYTES", budget)
    assert np.array_equal(numpy_path(to_physical, x, shape), expected), text
    assert same_bits(numpy_path(from_physical, expected, shape), x), text
    other = xs.parse_shape(text.split("{")[0])
    assert np.array_equal(numpy_path(relayout, expected, shape, other), numpy_path(to_physical, x, other))
    assert np.array_equal(numpy_path(relayout, numpy_path(to_physical, x, other), other, shape), expected)


@pytest.mark.parametrize("text", SLAB_CASES)
def test_slab_chunks_on_the_compiled_paths(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                           text: str) -> None:
    # chunks of a few slabs through the kernels: transposed slabs (column blocks) read and written in place where
    # the generic kernel takes them, copied whole for the 2-d tiled kernels
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    expected = numpy_path(to_physical, x, shape)
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 700)
    monkeypatch.setattr(_compiled, "CHUNK_BYTES", 700)
    monkeypatch.setattr(physical, "wants_slabs", lambda *args: True)
    assert np.array_equal(to_physical(x, shape), expected), text
    assert same_bits(from_physical(expected, shape), x), text
    if "{0,1" in text:  # transposed slabs: the generic kernel took them
        assert compiled_everywhere["walk"] > 0, text


def test_memmaps_in_and_out_at_unaligned_offsets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 1000)
    for text in ("bf16[67,300]{1,0:T(8,128)(2,1)}", "s4[50,129]{0,1:T(8,128)(2,1)E(4)}", "f32[20,33,9]{0,2,1}"):
        shape = xs.parse_shape(text)
        x = random_array(str(shape.element_type), shape.dimensions, 3)
        expected = numpy_path(to_physical, x, shape)
        path = tmp_path / "buffer.bin"
        path.write_bytes(b"\0" * (len(expected) + 13))
        out = np.memmap(path, dtype=np.uint8, mode="r+", offset=13, shape=(len(expected),))
        assert to_physical(x, shape, out=out) is out
        out.flush()
        assert path.read_bytes()[13:] == expected.tobytes(), text
        del out
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=13, shape=(len(expected),))
        assert same_bits(from_physical(data, shape), x), text
        np.save(tmp_path / "y.npy", np.zeros_like(x))
        target = np.load(tmp_path / "y.npy", mmap_mode="r+").view(x.dtype)  # .npy keeps ml_dtypes as V2/V1
        assert from_physical(data, shape, out=target) is target
        target.flush()
        assert same_bits(np.load(tmp_path / "y.npy").view(x.dtype), x), text
        del data, target


@pytest.mark.parametrize(("source", "target"), [("bf16[67,300]{1,0:T(8,128)(2,1)}", "bf16[67,300]{0,1:T(8,128)(2,1)}"),
                                                ("bf16[64,300]{1,0:T(8,128)(2,1)}", "bf16[64,300]{0,1:T(8,128)(2,1)}"),
                                                ("s8[300,70]{0,1:T(8,128)(4,1)}", "s8[300,70]{1,0:T(8,128)(4,1)}"),
                                                ("u4[50,130]{1,0:E(4)}", "u4[50,130]{0,1:E(4)}"),
                                                ("s8[256,128]{0,1:T(8,128)(4,1)}", "s8[256,128]{1,0:T(8,128)(4,1)}"),
                                                ("bf16[128,256]{0,1:T(8,128)}", "bf16[128,256]{1,0:T(8,128)(2,1)}")])
def test_relayouts_between_memmaps_at_unaligned_offsets(compiled_everywhere: Counter[str], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, source: str,
                                                        target: str) -> None:
    # fine-grained and packed relayouts (through the logical array, chunks of 1000 bytes) from one file to another;
    # not as whole 2 x 2 blocks or squares of lines, which would touch every page of both files at once
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 1000)
    for route in ("_swap_fields", "_transpose_nibbles", "_turn_lines", "_paired_words"):
        monkeypatch.setattr(physical, route, lambda *args, name=route: pytest.fail(f"{name} on memory maps"))
    shape, other = xs.parse_shape(source), xs.parse_shape(target)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    expected = numpy_path(to_physical, x, other)
    (tmp_path / "in.bin").write_bytes(b"\1" * 13 + numpy_path(to_physical, x, shape).tobytes())
    (tmp_path / "out.bin").write_bytes(b"\2" * (len(expected) + 5))
    data = np.memmap(tmp_path / "in.bin", dtype=np.uint8, mode="r", offset=13, shape=(shape.byte_size(),))
    out = np.memmap(tmp_path / "out.bin", dtype=np.uint8, mode="r+", offset=5, shape=(len(expected),))
    assert relayout(data, shape, other, out=out) is out
    out.flush()
    del data, out
    assert (tmp_path / "out.bin").read_bytes() == b"\2" * 5 + expected.tobytes(), source


@pytest.mark.parametrize("text", ["bf16[67,300]{1,0:T(8,128)(2,1)}", "s4[50,129]{0,1:T(8,128)(2,1)E(4)}",
                                  "f32[30,33]{1,0:T(4,*,128)}", "u8[0,5]{1,0}", "f8e8m0fnu[9,7]{1,0:T(8,8)}"])
def test_pack_file_and_unpack_file_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 512)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    x = canonical_bits(x).view(x.dtype).reshape(x.shape)
    np.save(tmp_path / "x.npy", x)
    seen: list[tuple[int, int]] = []
    assert pack_file(tmp_path / "x.npy", text, tmp_path / "x.bin", progress=lambda d, t: seen.append((d, t))) == (
        shape.byte_size()
    )
    assert (tmp_path / "x.bin").read_bytes() == numpy_path(to_physical, x, shape).tobytes(), text
    if shape.byte_size():
        assert seen and seen[-1] == (shape.byte_size(), shape.byte_size())
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert unpack_file(tmp_path / "x.bin", text, tmp_path / "y.npy") == shape.byte_size()
    assert same_bits(np.load(tmp_path / "y.npy").view(x.dtype), x), text


def test_files_report_bad_input_as_shape_errors(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    with pytest.raises(xs.ShapeError, match="dims"):
        pack_file(tmp_path / "x.npy", "f32[3,2]", tmp_path / "o.bin")
    with pytest.raises(xs.ShapeError, match="npy"):
        pack_file(tmp_path / "x.npz", "f32[3]", tmp_path / "o.bin")
    with pytest.raises(xs.ShapeError, match="dtype"):
        pack_file(tmp_path / "s.npy", "f32[2]", tmp_path / "o.bin")
    with pytest.raises(xs.ShapeError, match="cannot read"):
        pack_file(tmp_path / "missing.npy", "f32[2]", tmp_path / "o.bin")
    with pytest.raises(xs.ShapeError, match="cannot write"):
        pack_file(tmp_path / "x.npy", "f32[2,3]", tmp_path / "no" / "o.bin")
    with pytest.raises(xs.ShapeError, match="is the input"):
        pack_file(tmp_path / "x.npy", "f32[2,3]", tmp_path / "x.npy")
    (tmp_path / "short.bin").write_bytes(b"\0" * 5)
    with pytest.raises(xs.ShapeError, match="5 bytes"):
        unpack_file(tmp_path / "short.bin", "f32[2]", tmp_path / "y.npy")
    assert terminal_progress(open(os.devnull, "w")) is None


# ----- issue 15, settings, start-up ------------------------------------------------------------------------------
def test_f8e8m0fnu_padding_is_zero_bytes_not_nan() -> None:
    x = np.ones(3, ml_dtypes.float8_e8m0fnu)
    assert to_physical(x, "f8e8m0fnu[3]{0:T(4)}").tobytes() == b"\x7f\x7f\x7f\x00"
    assert to_physical(np.ones((1, 1), ml_dtypes.float8_e8m0fnu), "f8e8m0fnu[1,1]{1,0:T(2,2)}").tolist() == [
        0x7F, 0, 0, 0
    ]
    assert to_physical(np.ones(1, np.float32), "f32[1]{0:T(2)}", padding_value=-0.0).view(np.uint32).tolist() == [
        0x3F800000, 0x80000000
    ]


def test_cache_directory_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XLASHAPES_CACHE_DIR", str(tmp_path / "mine"))
    assert _cache.cache_directory() == str(tmp_path / "mine")
    monkeypatch.delenv("XLASHAPES_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cache.cache_directory() == str(tmp_path / "xlashapes")


def test_numba_kernels_are_cached_in_the_cache_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XLASHAPES_NO_NUMBA", raising=False)
    walk, kernels = _dispatch.walker(), _dispatch.kernels()
    if walk is None or kernels is None:
        pytest.skip("numba is not installed")
    for kernel in (walk.walk_squares, kernels.tiled_to_physical, kernels.pack):
        assert kernel._cache._cache_path.startswith(os.path.join(_cache.cache_directory(), "kernels-"))


def test_once_numba_is_loaded_arrays_from_1_mib_are_compiled(compiled_everywhere: Counter[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_dispatch, "NUMBA_BYTES", 1 << 20)
    to_physical(np.zeros((512, 512), np.float32), "f32[512,512]{0,1:T(8,128)}")  # 1 MiB
    assert compiled_everywhere["walk"] == 1
    to_physical(np.zeros((512, 511), np.float32), "f32[512,511]{0,1:T(8,128)}")  # just under
    assert compiled_everywhere["walk"] == 1


def test_slab_chunks_hand_back_the_pages_of_the_side_they_go_through_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # the physical side is always cut into consecutive chunks; the logical side only when the slabs are its rows:
    # a transposed layout's chunks are column blocks of it, each touching every page, so those are kept
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(physical, "wants_slabs", lambda *args: True)
    handed_back: list[int] = []  # the data addresses of the arrays handed to release
    monkeypatch.setattr(_slabbed, "release", lambda array: handed_back.append(array.ctypes.data))
    for text, logical_released in (("u8[64,300]{1,0}", True), ("u8[64,300]{0,1}", False)):
        shape = xs.parse_shape(text)
        x = random_array("u8", shape.dimensions, 9)
        handed_back.clear()
        buffer = to_physical(x, shape)
        chunks = len(_chunks_of(shape))
        assert chunks > 2 and handed_back.count(buffer.ctypes.data) == chunks, text
        assert handed_back.count(x.ctypes.data) == (chunks if logical_released else 0), text
        handed_back.clear()
        back = from_physical(buffer, shape)
        assert same_bits(back, x), text
        assert handed_back.count(buffer.ctypes.data) == chunks, text
        assert handed_back.count(back.ctypes.data) == (chunks if logical_released else 0), text


def test_copy_on_write_maps_keep_their_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 256)
    shape = xs.parse_shape("s4[64,64]{1,0:E(4)}")
    x = random_array("s4", shape.dimensions, 1)
    (tmp_path / "b.bin").write_bytes(b"\0" * shape.byte_size())
    out = np.memmap(tmp_path / "b.bin", dtype=np.uint8, mode="c", shape=(shape.byte_size(),))
    to_physical(x, shape, out=out)
    assert np.array_equal(out, numpy_path(to_physical, x, shape))  # still there after every chunk
    assert (tmp_path / "b.bin").read_bytes() == b"\0" * shape.byte_size()  # and the file untouched


def test_terminal_progress_draws_a_bar_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    draw = terminal_progress(screen, label="pack ")
    assert draw is not None
    draw(1 << 20, 4 << 20)
    draw(4 << 20, 4 << 20)
    text = screen.getvalue()
    assert text.startswith("\rpack [") and " 25.0%" in text and "100.0%" in text and text.endswith("\n")


@pytest.mark.parametrize("text", ["f32[256,300]{0,1}", "bf16[192,544]{0,1}", "u8[320,700]{0,1}", "u8[640,1024]{0,1}",
                                  "s16[130,256]{0,1}", "bf16[301,299]{0,1}", "f32[130,517]{0,1}", "u8[517,450]{0,1}",
                                  "s16[300,511]{0,1:P(301,512)}"])
@pytest.mark.parametrize("offset", [0, 16])
def test_staged_transposes(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str,
                           offset: int) -> None:
    # long 2-d transposes go through blocks of source rows staged in the cache: several blocks each way here,
    # columns left over (300, 700), bytes as interleaved 2-byte words (rows on the line grid) or as they are (rows
    # off it, transposed 64 x 64 at a time); destination rows of whole lines off the
    # line grid have their middles shifted onto it first; rows at other offsets (odd lengths, legacy padding) are
    # written from their own line boundaries, each row's unfinished line carried from block to block
    monkeypatch.setattr(_transposes, "STAGE_ROWS", 128)
    monkeypatch.setattr(_transposes, "STAGE_COLS", 256)
    monkeypatch.setattr(_copy, "SHIFT_BYTES", 256)
    staged, shape, x, expected = _spied_round_trip(monkeypatch, "staged_transpose", text, offset)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    assert np.array_equal(to_physical(x, shape, threads=3), expected), text  # destination rows split over threads
    assert same_bits(from_physical(expected, shape, threads=2), x), text
    assert sum(staged.values()) >= 3, text


@pytest.mark.parametrize("text", ["s4[100,3001]{0,1:E(4)}", "u4[72,2000]{0,1:E(4)}", "u2[136,2001]{0,1:E(2)}",
                                  "u4[130,700]{0,1:E(4)}", "u2[200,4001]{0,1:E(2)}"])
@pytest.mark.parametrize("offset", [0, 16])
def test_packed_fields_of_short_rows_are_read_back_a_line_at_a_time(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int) -> None:
    # E(n) fields read back through the staged transpose are unpacked as they are staged, a line at a time; rows of
    # 100 fields (50 bytes) left 36 of each row to an element loop (s4 [100,671088]{0,1:E(4)} read back 8.9x
    # memcpy); the last partial line of a row is now staged whole as well, the bytes past the row's end the next
    # row's, up to the source's end (2.1x)
    staged, *_ = _spied_round_trip(monkeypatch, "staged_transpose", text, offset)
    assert sum(staged.values()) >= 2, text  # (laid out and read back)


@pytest.mark.parametrize("text", ["u8[5,299,200]{1,2,0}", "bf16[3,150,101]{1,2,0}", "u8[2,3,130,150]{2,3,0,1}",
                                  "f32[4,130,301]{1,2,0}"])
@pytest.mark.parametrize("timed", [False, True])
def test_batches_of_transposes_at_other_offsets_in_their_lines_go_staged(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, timed: bool) -> None:
    # a batch of 2-d transposes whose destination rows (299 bytes, 202) put each transpose at another offset in its
    # line: each staged as its own offset asks (they had been left to the walk: u8[56,2995,200]{1,2,0} 'to' 11.6x
    # memcpy, bf16[11,1500,1001]{1,2,0} 5.6x; now 2.8 and 1.85); below BATCH_STAGE_BYTES, a plan large copies time
    # beside the walk (timed: the staged batch picked)
    if timed:
        monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
        monkeypatch.setattr(_copy, "BATCH_TIMED_BYTES", 0)
        monkeypatch.setattr(_tuned, "run_fastest", lambda key, plans: plans[-1 if key[0] == "walk" else 0]())
    else:
        monkeypatch.setattr(_transposes, "BATCH_STAGE_BYTES", 0)
    monkeypatch.setattr(_transposes, "STAGE_COLS", 256)
    staged, shape, *_ = _spied_round_trip(monkeypatch, "staged_transpose", text, 16)
    batch = math.prod(shape.dimensions[:-2]) if text.startswith("u8[2,3") else shape.dimensions[0]
    assert sum(staged.values()) >= 2 * batch, (text, staged)  # (laid out and read back, each transpose of each)


@pytest.mark.parametrize("text", ["f32[320,517]{0,1}", "bf16[192,544]{0,1}", "u8[640,1030]{0,1}", "f64[128,203]{0,1}",
                                  "s16[300,500]{0,1:P(320,512)}", "u8[3,256,200]{1,2,0}", "bf16[2,64,4100]{1,2,0}",
                                  "f32[1000,300]{0,1:P(1024,304)}", "f64[1536,130]{0,1}"])
def test_transposes_onto_rows_on_the_line_grid_go_straight_from_the_source(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # 2-d transposes whose destination rows are on the line grid move their squares straight from the source
    # (direct_transpose: bands of source rows swept a few lines at a time, the next lines prefetched), the last few
    # destination rows (a side not a whole number of squares: 517, 1030, 203, 200) and the last few elements of
    # each (rows padded past them: 300 of 320, 1000 of 1024) in squares overlapping the ones before; squares of 4-
    # and 8-byte words in pairs onto rows 4 KiB apart or a multiple (the last 8 of 1000 alone); laid out only (read
    # back, these destination rows are off the grid), every width, batches of them, the destination rows split over
    # threads
    walk = _dispatch.walker()
    staged = Counter[int]()
    monkeypatch.setattr(walk, "staged_transpose", _counting(walk.staged_transpose, staged))
    monkeypatch.setattr(_transposes, "BATCH_STAGE_BYTES", 0)
    direct, shape, x, expected = _spied_round_trip(monkeypatch, "direct_transpose", text, 0)
    batch = math.prod(shape.dimensions[:-2])
    done = sum(direct.values())
    assert done >= batch, text  # (laid out; read back too where those rows are on the grid as well)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    staged.clear()
    assert np.array_equal(to_physical(x, shape, threads=3), expected), text
    assert sum(direct.values()) >= done + (3 if batch == 1 else batch) and not staged, (text, staged)


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_a_direct_transposes_overlapping_last_square_streams_only_the_rows_the_one_before_did_not(
        compiled_everywhere: Counter[str], width: int) -> None:
    # a side not a whole number of squares ends in a square overlapping the one before: streamed, the rows both hold
    # were written to memory twice (u8 [112,224,224,96]{2,1,3,0} laid out, 96 destination rows a square of 64 and
    # one of rows 32-95: 2.10 -> 1.89-2.02x memcpy); it leaves them out. Asked for fewer rows than a square's side
    # (first to last), the one square takes the rows before them too and streams only those asked for
    walk = _dispatch.walker()
    n = 64 // width
    kind = np.dtype(f"u{width}")
    big, small = 2 * n + n // 2, 3 * n  # (destination rows of small elements: whole lines, on the line grid)
    src = np.random.default_rng(width).integers(0, 1 << (8 * width - 1), (small, big)).astype(kind)
    room = np.full(big * small + 64 // width, 7, kind)
    start = -room.ctypes.data % 64 // width
    dst = room[start : start + big * small].reshape(big, small)
    pad = np.zeros(1, kind)[0]
    for first, last in ((0, big), (big - n + n // 4, big)):
        dst[...] = 7
        walk.direct_transpose(dst.ctypes.data, src.ctypes.data, pad, small, small, big, first, last,
                              _transposes.DIRECT_ROWS[width], _transposes.DIRECT_LINES[width])
        assert np.array_equal(dst[first:last], src.T[first:last]), (width, first)
        assert (dst[:first] == 7).all(), (width, first)  # (rows big - n to first: the square's, left out)


@pytest.mark.parametrize("text", ["u8[100,40,1024]{0,2,1}", "u8[70,30,640]{0,2,1}"])
def test_direct_transposes_of_few_destination_rows_share_their_columns_over_threads(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # read back, these are one 2-d transpose onto 100 (70) destination rows of 40 x 1024 (30 x 640) bytes: fewer
    # lines of rows than threads, so the threads take ranges of their columns (one thread took it all: u8
    # [100,5248,1024]{0,2,1} read back 1.93x memcpy with one thread and 1.96 with two)
    direct, shape, x, expected = _spied_round_trip(monkeypatch, "direct_transpose", text, 0)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    for threads in (2, 3):
        direct.clear()
        assert same_bits(from_physical(expected, shape, threads=threads), x), text
        assert sum(direct.values()) == threads, (text, threads)


def test_direct_transposes_leave_pred_made_canonical_and_rows_off_the_grid_to_the_staged_kernel(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # pred's bytes are made 0 or 1 by the staged kernel's squares, both ways (the direct kernel's canonical byte
    # squares took 1.5x its time); destination rows off the line grid need staging to be joined into lines
    walk = _dispatch.walker()
    staged = Counter[int]()
    monkeypatch.setattr(walk, "staged_transpose_canonical", _counting(walk.staged_transpose_canonical, staged))
    monkeypatch.setattr(walk, "staged_transpose", _counting(walk.staged_transpose, staged))
    for text, offset in (("pred[640,1024]{0,1}", 0), ("u8[640,1024]{0,1}", 16)):
        staged.clear()
        direct, *_ = _spied_round_trip(monkeypatch, "direct_transpose", text, offset)
        assert not direct and sum(staged.values()) >= 2, (text, staged)


@pytest.mark.parametrize("text", ["u8[100,700]{0,1}", "u8[72,9,70]{0,2,1}", "bf16[200,600]{0,1}", "f32[128,900]{0,1}",
                                  "u8[40,700]{0,1}", "bf16[48,900]{0,1}"])
@pytest.mark.parametrize("offset", [0, 16])
def test_staged_transposes_onto_rows_back_to_back(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                  text: str, offset: int) -> None:
    # destination rows no longer than a block's source rows and back to back, off the line grid (a minor batch dim,
    # as u8[B,H,W]{0,2,1}): each band of them is transposed as it lies in the destination, spilling into the next
    # row where a row ends inside a square, and streamed on as one piece, the line between bands carried; such rows
    # are staged from 32 elements (40 bytes, 48 2-byte words), where other transposes need 64 and 128
    monkeypatch.setattr(_transposes, "STAGE_COLS", 256)
    staged, shape, x, expected = _spied_round_trip(monkeypatch, "staged_transpose", text, offset)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    assert np.array_equal(to_physical(x, shape, threads=3), expected), text  # bands split over threads
    assert sum(staged.values()) >= 3, text


@pytest.mark.parametrize("text", ["u8[150,524]{0,1}", "u8[130,576]{0,1}", "bf16[140,270]{0,1}", "f32[200,140]{0,1}",
                                  "s16[200,257]{0,1}"])
@pytest.mark.parametrize("offset", [0, 16])
def test_staged_rows_a_little_longer_than_a_block_go_whole(compiled_everywhere: Counter[str],
                                                           monkeypatch: pytest.MonkeyPatch, text: str,
                                                           offset: int) -> None:
    # destination rows back to back and off the line grid, up to a line longer than a block's DENSE_BLOCK bytes, go
    # whole into each block (rather than a block and a last one of a few rows): the rows of a band are then one run,
    # the block's last partial band of squares reading staged rows past its end
    blocks: list[tuple[int, int]] = []
    block = _transposes._stage_block
    monkeypatch.setattr(_transposes, "_stage_block", lambda *args: blocks.append(block(*args)) or blocks[-1])
    staged, shape, x, expected = _spied_round_trip(monkeypatch, "staged_transpose", text, offset)
    on_lines = offset == 0 and x.shape[1] * x.dtype.itemsize % 64 == 0
    assert any(rows == x.shape[1] for rows, _ in blocks) != on_lines, (text, blocks)
    assert sum(staged.values()) >= 2, text
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    assert np.array_equal(to_physical(x, shape, threads=2), expected), text
    back = off_the_grid(x.nbytes, offset).view(x.dtype).reshape(x.shape)
    assert same_bits(from_physical(expected, shape, out=back, threads=2), x), text


@pytest.mark.parametrize("run", [5, 6, 7, 9, 10, 15, 16, 17, 24, 31, 32, 33])  # (4 and 8: words)
@pytest.mark.parametrize("offset", [0, 3])
def test_short_runs_go_as_words_that_may_overlap(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                 run: int, offset: int) -> None:
    # runs of 4 to 24 bytes (a minor dim carried whole past a transpose of the dims outside it) are moved as 4- or
    # 8-byte words, the last one ending with the run (overlapping the one before): every byte of each run and none
    # past it, at any alignment, both ways (and longer ones as before)
    shape = shape_of(f"u8[5,{17 + run % 3},11,{run}]{{3,1,2,0}}")
    x = random_array("u8", shape.dimensions, run + offset)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    expected = round_trip_off_the_grid(x, shape, offset)
    assert compiled_everywhere["walk_runs"] >= 2, (run, compiled_everywhere)
    room = np.full((*x.shape[:-1], run + 5), 0xAB, np.uint8)  # (runs 5 bytes apart: nothing may land between them)
    assert from_physical(expected, shape, out=room[..., :run]).base is not None
    assert np.array_equal(room[..., :run], x) and (room[..., run:] == 0xAB).all(), run
    wide = xs.parse_shape(f"bf16[7,9,{(run + 1) // 2}]{{2,0,1}}")  # (2-byte elements: runs of 2 to 32 bytes)
    round_trip_off_the_grid(random_array("bf16", wide.dimensions, run), wide, offset)


@pytest.mark.parametrize("text", ["f16[4373,48,16]{2,0,1}", "u8[4373,3,10]{2,0,1}", "bf16[9000,2,8]{2,0,1}",
                                  "f32[3000,5,3]{2,0,1}", "u8[700,9,33]{2,0,1}"])
@pytest.mark.parametrize("threads", [1, 2])
def test_runs_of_streams_far_apart_are_read_on_a_chunk_at_a_time(compiled_everywhere: Counter[str],
                                                                 monkeypatch: pytest.MonkeyPatch, text: str,
                                                                 threads: int) -> None:
    # read back, the runs of one logical row come from planes far apart (one source stream each) and go back to back
    # into the row: a chunk of rows at a time, each stream read on along it (f16 [21845,48,16]{2,0,1} 6.0 -> 2.6x
    # memcpy); chunks cut the rows anywhere and the threads split them; nothing lands between the rows or past them
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, threads + len(text))
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "THREADS", threads)
    expected = round_trip_off_the_grid(x, shape, 3)
    assert compiled_everywhere["walk_runs"] >= 1, text
    rows, run = x.shape[1], x.shape[2]
    room = np.full((x.shape[0] + 1, rows + 1, run), 7, x.dtype)  # (logical rows a run apart, one row more)
    from_physical(expected, shape, out=room[:-1, :rows])
    assert same_bits(room[:-1, :rows], x) and (room[:, rows:] == 7).all() and (room[-1] == 7).all(), text


@pytest.mark.parametrize("text", ["s4[64,575]{0,1:E(4)}", "u4[330,1100]{0,1:E(4)}", "u2[96,1150]{0,1:E(2)}",
                                  "s4[575,64]{0,1:E(4)}"])
@pytest.mark.parametrize("offset", [0, 3])
def test_packed_staged_transposes_keep_their_blocks_of_whole_bytes(compiled_everywhere: Counter[str],
                                                                   monkeypatch: pytest.MonkeyPatch, text: str,
                                                                   offset: int) -> None:
    # E(n) fields packed or unpacked on the way keep blocks of STAGE_ROWS (whole rows of up to DENSE_ROWS bytes
    # read s4 [64,575]{0,1:E(4)} back wrong); the same bytes as the NumPy path, both ways
    staged, shape, _, expected = _spied_round_trip(monkeypatch, "staged_transpose", text, offset)
    assert sum(staged.values()) >= 1, text
    noise = np.random.default_rng(offset).integers(0, 256, size=len(expected), dtype=np.uint8)
    assert same_bits(from_physical(noise, shape), numpy_path(from_physical, noise, shape)), text


@pytest.mark.parametrize(("text", "count"), [
    ("u8[3,128,300]{1,2,0}", 3), ("bf16[5,128,200]{1,2,0}", 5), ("f32[2,3,128,144]{2,3,1,0}", 6),
    ("s16[9,128,260]{1,2,0}", 9), ("u8[128,3,256]{0,1,2}", 3), ("bf16[2,7,128,136]{2,3,0,1}", 14)])
@pytest.mark.parametrize("offset", [0, 16])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_batches_of_staged_transposes(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str,
                                      count: int, offset: int, threads: int) -> None:
    # a batch of long 2-d transposes (batched matrices, attention heads) goes through the staged kernel one
    # transpose at a time (the walk took 7-60x memcpy on some), the batch over the threads when it has four per
    # thread or more, else each transpose over them; the batch dim may sit between the transposed ones
    monkeypatch.setattr(_transposes, "STAGE_ROWS", 128)
    monkeypatch.setattr(_transposes, "STAGE_COLS", 256)
    monkeypatch.setattr(_transposes, "BATCH_STAGE_BYTES", 4096)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "THREADS", threads)
    staged, shape, x, expected = _spied_round_trip(monkeypatch, "staged_transpose", text, offset)
    for direction in (lambda: to_physical(x, shape), lambda: from_physical(expected, shape)):
        staged.clear()
        direction()
        assert sum(staged.values()) >= count, text  # (every transpose of the batch)
    staged.clear()
    monkeypatch.setattr(_transposes, "BATCH_STAGE_BYTES", 1 << 40)  # (smaller than this: the walk, the same bytes)
    assert np.array_equal(round_trip_off_the_grid(x, shape, offset), expected), text
    assert not staged, text


@pytest.mark.parametrize("text", ["u8[5,1000,7]{0,1,2}", "bf16[5,16,100,12]{0,2,1,3}", "bf16[1000,2,16]{1,2,0}",
                                  "s8[958,5,7]{1,2,0}", "f32[3,1000,5]{0,1,2}", "u8[1000,4,4]{1,2,0}",
                                  "s32[3,3,1000,8]{1,2,3,0}", "u8[2,3,700,12]{1,2,3,0}"])
@pytest.mark.parametrize("offset", [0, 16])
@pytest.mark.parametrize("threads", [1, 2])
def test_tiny_blocks_go_through_planes(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str,
                                       offset: int, threads: int) -> None:
    # walks whose two block sides are both tiny (a full reversal of [5,N,7], 2 x 16 matrices turned around) go in two
    # passes through slabs of planes: each plane's rows transposed, then the planes interleaved (bf16 [5,256000,12]
    # 7.9 -> 3.6x memcpy, u8 [5,1000000,7] 16 -> 3.0); several slabs here, the last one short; axes outside the
    # planes' (s32 [3,3,N,8]{1,2,3,0}: three full reversals) an index at a time
    monkeypatch.setattr(_copy, "PLANES_SLAB", 4096)
    monkeypatch.setattr(_copy, "PIECE_BYTES", 0)
    monkeypatch.setattr(_copy, "LANES", False)  # (blocks of 2 x 16, 5 x 7, 4 x 4 go through lanes first, by rule: as
    # tested in test_physical_lanes; through planes they are timed beside them)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "THREADS", threads)
    taken: list[bool] = []
    through = _copy._through_planes

    def spy(*args: Any) -> bool:
        taken.append(through(*args))
        return taken[-1]

    monkeypatch.setattr(_copy, "_through_planes", spy)
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, offset + threads)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    expected = round_trip_off_the_grid(x, shape, offset)
    assert taken.count(True) >= 2, (text, taken)  # (both ways)
    taken.clear()
    monkeypatch.setattr(_copy, "PLANES_SLAB", 0)  # (the walk's own blocks: the same bytes)
    assert np.array_equal(round_trip_off_the_grid(x, shape, offset), expected), text
    assert True not in taken, text


def test_walks_of_many_small_pieces_do_not_go_through_planes(compiled_everywhere: Counter[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # axes outside the planes' go an index at a time: not where each index holds fewer than PIECE_BYTES, nor where
    # there are more than PLANE_PIECES indices
    run = _dispatch.Run(1 << 40, 1)
    for pieces, n, most, taken in ((2, 1 << 14, 1024, True), (2, 1 << 13, 1024, False), (4, 1 << 14, 4, True),
                                   (4, 1 << 14, 3, False)):
        monkeypatch.setattr(_copy, "PLANE_PIECES", most)
        source = np.ones((pieces, 3, n, 8), np.float32)
        target = np.zeros((pieces, 8, n, 3), np.float32)
        d, s = _copy._normalized(target, source.transpose(0, 3, 2, 1))
        shape, d_steps, s_steps, unit = _copy._walk_order(d, s, 0)
        assert shape.tolist() == [pieces, n, 8, 3] and unit == 2
        assert (n * 24 * 4 >= _copy.PIECE_BYTES) == (n == 1 << 14)
        assert _copy._through_planes(d, s, shape, d_steps, s_steps, unit, run) == taken, (pieces, n)
        assert (target == 1).all() == taken


def test_back_to_back_blocks_of_fewer_than_16_do_not_go_through_planes(compiled_everywhere: Counter[str]) -> None:
    # (each pass would transpose 15 rows one element at a time: f32 [N,3,5]{1,2,0} 6.2 -> 9.4x memcpy); 16 do
    run = _dispatch.Run(1 << 40, 1)
    for rows, taken in ((3, False), (4, True)):
        target = np.zeros((100, 5, rows), np.float32)
        d, s = _copy._normalized(target, np.ones((100, rows, 5), np.float32).transpose(0, 2, 1))
        shape, d_steps, s_steps, unit = _copy._walk_order(d, s, 0)
        assert shape.tolist() == [100, 5, rows] and unit == 1
        assert _copy._through_planes(d, s, shape, d_steps, s_steps, unit, run) == taken
        assert (target == 1).all() == taken


@pytest.mark.parametrize(("text", "fine"), [
    ("u8[5,10,50,128]{2,0,1,3:T(8,128)(4,1)}", True), ("bf16[3,20,40,130]{2,0,1,3:T(8,128)(2,1)}", True),
    ("pred[6,10,30,100]{0,1,2,3:T(8,128)(4,1)}", True), ("u8[6,10,50,128]{2,0,1,3:T(8,128)}", False)])
@pytest.mark.parametrize("padding", [None, 1])
def test_padding_in_short_runs_is_written_first_in_one_pass(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, fine: bool, padding: Any
) -> None:
    # padding in runs shorter than a line (the rows of (p,1) sub-tiles past a dim that is not a multiple of p: a byte
    # in every word) is written first over the whole buffer in one pass, the elements then over it: box by box, NumPy
    # wrote it element by element (u8 [5,100,500,128]{2,0,1,3:T(8,128)(4,1)} 'to' 14 -> 3.5x memcpy); whole rows of
    # padding are still written box by box. Both give the reference's bytes
    from xlashapes.physical import _plan as plan_module
    from xlashapes.physical._reference import _reference_to_physical

    boxed: list[int] = []
    fill = plan_module._fill_padding
    monkeypatch.setattr(_convert, "_fill_padding", lambda *args, **kwargs: boxed.append(1) or fill(*args, **kwargs))
    monkeypatch.setattr(_compiled, "_compiled_choice", lambda *args: None)
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    expected = _reference_to_physical(x, shape, padding_value=padding)
    assert np.array_equal(to_physical(x, shape, padding_value=padding), expected), text
    assert bool(boxed) != fine, text
    monkeypatch.setattr(plan_module, "FINE_PADDING", 0)  # (box by box: the same bytes)
    assert np.array_equal(to_physical(x, shape, padding_value=padding), expected), text


MERGED_CASES = ["u8[24,12,233,5]{0,1,2,3}", "pred[3,1165,8,12]{0,1,2,3}", "s32[24,2,38,12,37]{0,1,2,3,4}",
                "u8[958,50,7]{0,1,2:T(1,256)}", "bf16[479,50,7]{0,1,2}", "f64[24,12,40,5]{0,1,2,3}",
                "f32[5,11,100,12,12]{0,2,4,3,1}", "u8[7,3,48,5,665]{3,1,0,4,2}"]


@pytest.mark.parametrize("text", MERGED_CASES)
@pytest.mark.parametrize("offset", [0, 16])
@pytest.mark.parametrize("threads", [1, 2])
def test_transposes_of_short_blocks_go_as_squares_over_merged_axes(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int, threads: int
) -> None:
    # full reversals with small dims and small minor dims moved outward: the walk's blocks were a few elements
    # (17-45x memcpy); the axes next to each block axis continue it on its side, merged into rows whose addresses
    # come from a table, so that whole squares move again; groups cut into blocks past a few elements here, the
    # last block of a cut axis overlapping the one before, the blocks split over the threads
    monkeypatch.setattr(_merged, "OUTER_MOST", 256)
    monkeypatch.setattr(_merged, "INNER_MOST", 64)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "THREADS", threads)
    merged, shape, x, expected = _spied_round_trip(monkeypatch, ("merged_squares", "merged_lines"), text, offset,
                                                   _dispatch.tabler)
    for direction in (lambda: to_physical(x, shape), lambda: from_physical(expected, shape)):
        merged.clear()
        direction()
        assert sum(merged.values()) >= 1, text
    merged.clear()
    monkeypatch.setattr(_copy, "MERGED", False)  # (the walk's own blocks: the same bytes)
    assert np.array_equal(round_trip_off_the_grid(x, shape, offset), expected), text
    assert not merged, text


@pytest.mark.parametrize(("text", "offset", "streamed"), [
    ("s32[24,2,38,12,32]{0,1,2,3,4}", 0, True), ("s32[24,2,38,12,32]{0,1,2,3,4}", 16, False),
    ("bf16[64,50,7]{0,1,2}", 0, True), ("u8[64,50,7]{0,1,2}", 0, True), ("u8[64,50,7]{0,1,2}", 16, False),
    ("u8[40,50,7]{0,1,2}", 0, False), ("s32[21,2,38,12,37]{0,1,2,3,4}", 0, False)])
def test_merged_squares_of_whole_lines_on_the_grid_are_streamed(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int, streamed: bool
) -> None:
    # squares whose destination rows are one line each (2-byte and wider words; bytes where both groups are a line
    # long: 64 x 64), every row on the line grid, are streamed out (s32 [24,2,384,12,37] 'to' 3.2 -> 2.15x memcpy);
    # rows off it (an output 16 bytes past a line, destination rows 6384 bytes apart) or of 16 bytes (bytes whose
    # group of 40 makes no line) are stored plainly
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    tables = _dispatch.tabler()
    flags: list[int] = []
    for name in ("merged_squares", "merged_lines", "merged_squares_canonical", "merged_lines_canonical"):
        kernel = getattr(tables, name)
        monkeypatch.setattr(tables, name, lambda *args, kernel=kernel: (flags.append(args[-1]), kernel(*args))[1])
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    out = off_the_grid(shape.byte_size(), offset)
    assert to_physical(x, shape, out=out) is out
    assert np.array_equal(out, numpy_path(to_physical, x, shape)), text
    assert flags and set(flags) == {int(streamed)}, (text, flags)


def _timed_at_any_size(monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """Copies of any size over ``threads`` threads, their plans chosen as a large copy's are (:mod:`._tuned`)."""
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "THREADS", threads)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)


DIRECT_MERGED_CASES = [("bf16[4,64,256]{0,1,2}", 2), ("u8[48,100,256]{0,1,2}", 2), ("f32[8,40,1024]{0,1,2}", 2),
                       ("f64[3,64,72]{0,1,2}", 2), ("f64[4,32,512]{0,1,2}", 2), ("s32[24,2,38,12,48]{0,1,2,3,4}", 2),
                       ("pred[48,64,256]{0,1,2}", 2), ("u8[5,70,256]{0,1,2}", 1)]
"""Layouts whose merged squares go straight from the source, and how many of their two directions do (read back
only: destination rows of 5 x 70 bytes laid out are off the line grid; rows of 4 KiB read back, squares in pairs)."""


@pytest.mark.parametrize(("text", "directions"), DIRECT_MERGED_CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_large_merged_squares_onto_rows_on_the_line_grid_go_straight_from_the_source(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, directions: int, threads: int
) -> None:
    # a large copy whose merged squares land on destination rows on the line grid moves them straight from the
    # source first (merged_direct: bands of source rows swept a few lines at a time, the next lines prefetched into
    # the second level, every square streamed): bf16 [4,N,2048]{0,1,2} 512 MiB 3.2 / 2.0 -> 1.7 / 1.5x memcpy. The
    # same bytes as the NumPy path both ways, every width, pred's made 0 or 1; the along group of 48 x 100 bytes cut
    # at 48 x 84 (whole lines, 4032 of 4096 bytes), blocks over threads; nothing straight off the grid
    _timed_at_any_size(monkeypatch, threads)
    monkeypatch.setattr(_tuned, "run_fastest", lambda key, plans: plans[0]())  # (the first plan: the rule's)
    direct, shape, x, expected = _spied_round_trip(monkeypatch, ("merged_direct", "merged_direct_lines"), text, 0,
                                                   _dispatch.tabler)
    assert sum(direct.values()) >= directions, (text, direct)
    direct.clear()
    assert np.array_equal(to_physical(x, shape), expected) and bool(direct) == (directions == 2), (text, direct)
    if text.startswith("pred"):  # (bytes read back made 0 or 1 by the squares)
        dirty = np.random.default_rng(threads).integers(0, 256, expected.size, dtype=np.uint8)
        assert same_bits(from_physical(dirty, shape), numpy_path(from_physical, dirty, shape)), text
    tables, targets = _dispatch.tabler(), []  # (outputs off the line grid: nothing straight into them)
    for name in ("merged_direct", "merged_direct_lines", "merged_direct_canonical", "merged_direct_lines_canonical"):
        kernel = getattr(tables, name)
        monkeypatch.setattr(tables, name, lambda *args, kernel=kernel: (targets.append(args[0]), kernel(*args))[1])
    round_trip_off_the_grid(x, shape, 16)
    assert all(target % LINE == 0 for target in targets), text


BYTE_LINE_CASES = ["u8[24,12,233,5]{0,1,2,3}", "pred[3,1165,8,12]{0,1,2,3}", "s8[5,26,2,128]{0,1,2,3}",
                   "pred[7,100,39,12]{0,1,3,2}"]


def _sides_taken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The square sides of every merged squares call from now on (``merged_lines``: a line; ``merged_squares``:
    16, for bytes)."""
    tables, sides = _dispatch.tabler(), []
    for name, side in (("merged_squares", 16), ("merged_lines", LINE), ("merged_squares_canonical", 16),
                       ("merged_lines_canonical", LINE)):
        kernel = getattr(tables, name)
        monkeypatch.setattr(tables, name, lambda *args, kernel=kernel, side=side: (
            sides.append(side), kernel(*args))[1])
    return sides


@pytest.mark.parametrize("text", BYTE_LINE_CASES)
@pytest.mark.parametrize("offset", [0, 16])
@pytest.mark.parametrize("threads", [1, 2])
def test_byte_squares_over_merged_axes_go_a_line_a_side(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int, threads: int
) -> None:
    # bytes whose merged groups are both a line long or more move in squares of 64 x 64 (whole lines read and
    # written), the last square of each side overlapping the one before: pred [85,16,64,384]{0,1,2,3} 'to' 5.8 ->
    # 3.75x memcpy; the same bytes as the NumPy path, on and off the line grid, over one thread or two
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "THREADS", threads)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 1 << 40)  # (the rule's plan only)
    sides = _sides_taken(monkeypatch)
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, offset + len(text))
    _, _, _, expected = _spied_round_trip(monkeypatch, (), text, offset)  # (checks the bytes both ways)
    assert np.array_equal(expected, numpy_path(to_physical, x, shape)), text
    assert sides and set(sides) == {LINE}, (text, sides)


@pytest.mark.parametrize("text", BYTE_LINE_CASES[:2])
def test_byte_squares_a_line_a_side_are_timed_beside_16_by_16_ones(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # neither side always wins (s8 [48,5,64,48,45]{0,1,2,3,4} 'from' 5.2 -> 2.8x memcpy a line a side, pred
    # [12,2,1024,1000]{0,2,1,3} 'from' 4.4 ms against 3.5 ms 16 x 16): a large copy times both, for each sweep, and
    # keeps the fastest
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    plan_for = _tuned.plan_for  # (the copies themselves stay on the kernel)
    monkeypatch.setattr(_tuned, "plan_for", lambda key, count: 0 if key[0] == "copy" else plan_for(key, count))
    _tuned.forget()
    sides = _sides_taken(monkeypatch)
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    expected = numpy_path(to_physical, x, shape)
    out = np.empty_like(expected)
    for _ in range(2 * _tuned.ROUNDS * 4 + 3):
        assert np.array_equal(to_physical(x, shape, out=out), expected), text
    assert {LINE, 16} <= set(sides), (text, sorted(set(sides)))
    _tuned.forget()


STAGED_CASES = ["u8[200,24,81]{0,1,2}", "pred[7,5,50,9,200]{3,1,2,0,4}", "bf16[479,50,7]{0,1,2}",
                "s32[24,2,38,12,37]{0,1,2,3,4}", "f64[24,12,40,5]{0,1,2,3}", "u8[7,3,48,5,665]{3,1,0,4,2}"]


@pytest.mark.parametrize("text", STAGED_CASES)
@pytest.mark.parametrize("offset", [0, 16])
@pytest.mark.parametrize("threads", [1, 2])
def test_merged_squares_staged_through_the_cache_equal_numpy_path(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, offset: int, threads: int
) -> None:
    # merged squares staged through the cache (each block's source rows copied in one after the other, transposed
    # there, its destination rows copied out in runs, whole lines streamed): u8 [200,2048,81]{0,1,2} 'to' 4.35 ->
    # 2.5x memcpy; the same bytes as the NumPy path both ways, on and off the line grid, blocks over one thread or two
    _timed_at_any_size(monkeypatch, threads)
    tables, staged = _dispatch.tabler(), Counter[int]()
    for name in ("merged_staged", "merged_staged_canonical"):
        monkeypatch.setattr(tables, name, _counting(getattr(tables, name), staged))

    def staged_last(key: Any, plans: list[Callable[[], bool]]) -> bool:  # (the plans up to the staged one: its
        # bytes are the ones left)
        before = sum(staged.values())
        for plan in plans:
            done = plan()
            if sum(staged.values()) > before:
                return done
        return plans[0]()

    monkeypatch.setattr(_tuned, "run_fastest", staged_last)
    _spied_round_trip(monkeypatch, (), text, offset)  # (checks the bytes both ways)
    assert sum(staged.values()) >= 2, text  # (both directions)


CANONICAL_CASES = [("pred[600,700]{0,1}", "staged_transpose"), ("pred[24,12,233,5]{0,1,2,3}", "merged_lines"),
                   ("pred[7,100,39,12]{0,1,3,2}", "merged_lines"),
                   ("pred[300,1001]{0,1:T(8,128)(4,1)}", "merged_squares")]  # (words of 4 pred bytes, rows 1001 apart)


@pytest.mark.parametrize(("text", "entry"), CANONICAL_CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_pred_bytes_are_made_canonical_by_the_squares_that_move_them(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, entry: str, threads: int
) -> None:
    # pred bytes may be anything; XLA's are 0 or 1. The squares of merged copies and of staged transposes make them so
    # in registers as they move them (words of (4,1) sub-tiles byte by byte), so that neither the copy nor the
    # conversion passes over the bytes again: pred [16384,2048]{0,1:T(8,128)(4,1)} laid out 3.6 -> 2.4 ms
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)  # (large: staged transposes, streamed squares)
    kernels = _dispatch.tabler() if entry.startswith("merged") else _dispatch.walker()
    canons: list[int] = []  # (1: the entry that makes the bytes canonical, 0: the plain one)
    for canon, name in enumerate((entry, entry + "_canonical")):
        real = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *args, real=real, canon=canon: (canons.append(canon), real(*args))[1])
    shape = shape_of(text)
    x = random_array("pred", shape.dimensions, len(text))  # (bytes 0-255)
    expected = numpy_path(to_physical, x, shape)
    dirty = np.random.default_rng(threads).integers(0, 256, expected.size, dtype=np.uint8)
    reference = numpy_path(from_physical, dirty, shape)
    assert x.view(np.uint8).max() > 1 and expected.max() == reference.view(np.uint8).max() == 1  # (canonical)
    passes: list[str] = []  # (no pass over the bytes after the squares: neither the conversion's nor the copy's)
    monkeypatch.setattr(_convert, "_canonicalize", lambda *args: passes.append("conversion"))
    monkeypatch.setattr(_canonical, "canonical_bytes", lambda *args: passes.append("copy"))
    assert np.array_equal(to_physical(x, shape, threads=threads), expected), text
    assert same_bits(from_physical(dirty, shape, threads=threads), reference), text
    assert canons and set(canons) == {1} and not passes, (text, canons, passes)


def test_other_conversions_leave_the_squares_plain(compiled_everywhere: Counter[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # u8 bytes are what they are: the same squares without the compare; a pred conversion inside a route's scratch
    # keeps its own account
    tables = _dispatch.tabler()
    canons: list[int] = []
    for name in ("merged_squares", "merged_lines", "merged_squares_canonical", "merged_lines_canonical"):
        real = getattr(tables, name)
        monkeypatch.setattr(tables, name, lambda *args, real=real, name=name: (
            canons.append(int(name.endswith("_canonical"))), real(*args))[1])
    shape = shape_of("u8[24,12,233,5]{0,1,2,3}")
    x = random_array("u8", shape.dimensions, 5)
    assert np.array_equal(to_physical(x, shape), numpy_path(to_physical, x, shape))
    assert canons and set(canons) == {0}
    assert _dispatch.canonical_account() is None


def test_staged_blocks_copy_rows_back_to_back_in_and_out_as_one_run() -> None:
    # u8 [200,2048,81]{0,1,2} laid out: blocks of 12 source columns x 81 bytes (972 <= 1024) from 200 rows; the 12
    # destination rows of each of the 81 planes lie back to back, so each block copies out 81 runs of 2400 bytes,
    # the transposed rows laid in the scratch in the same order; read back, the source rows are those planes' (81
    # runs of 3200 bytes in, 16 rows of 200 each), the destination rows 200 of 1296 bytes
    plan = _merged.staged_plan((81, 2048, 200), (409600, 200, 1), (1, 81, 165888), 1)
    assert plan is not None
    across, along = len(plan.merged.across), len(plan.merged.along)
    assert (across, along) == (972, 200)
    outs, ins = plan.outs.reshape(-1, 3), plan.ins.reshape(-1, 3)
    assert outs[:, 2].tolist() == [12 * 200] * 81
    assert sorted(outs[:, 1].tolist()) == [k * 409600 for k in range(81)]
    assert ins[:, 2].tolist() == [972] * 200  # (source rows 165888 bytes apart: a run each)
    order = np.argsort(plan.merged.across)
    assert np.array_equal(plan.t_rows[order], outs[0, 0] + np.arange(across) * along)  # (destination order)
    assert plan.scratch == 2 * along * across  # (staged rows back to back: under 256 KiB each)
    back = _merged.staged_plan((2048, 200, 81), (81, 165888, 1), (200, 1, 409600), 1)
    assert back is not None and (len(back.merged.across), len(back.merged.along)) == (200, 1296)
    assert back.ins.reshape(-1, 3)[:, 2].tolist() == [3200] * 81
    assert back.outs.reshape(-1, 3)[:, 2].tolist() == [1296] * 200
    assert _merged.staged_plan((9, 5, 7), (35, 7, 1), (1, 9, 45), 1) is None  # (no square of a line a side)


@FAST
@given(st.integers(3, 5), st.sampled_from(["u8", "bf16", "f32", "f64", "pred"]), st.data())
def test_merged_squares_equal_numpy_path(compiled_everywhere: Counter[str], rank: int, etype: str,
                                         data: st.DataObject) -> None:
    # any permutation of small dims and one long one, groups cut anywhere: the same bytes as the NumPy path
    dims = [data.draw(st.integers(1, 9)) for _ in range(rank)]
    dims[data.draw(st.integers(0, rank - 1))] = data.draw(st.integers(16, 90))
    order = tuple(data.draw(st.permutations(range(rank))))
    shape = xs.make_shape(etype, dims, layout=_layout(order))
    most = data.draw(st.sampled_from([(4096, 1024), (64, 16), (32, 32)]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_merged, "OUTER_MOST", most[0])
        patch.setattr(_merged, "INNER_MOST", most[1])
        patch.setattr(_merged, "SPAN_FAR", data.draw(st.sampled_from([0, 1 << 20])))  # (either group swept)
        pick = data.draw(st.sampled_from([0, 1, -1]))  # (walks of other kinds: their own blocks or merged squares,
        # either sweep, or merged squares staged through the cache, as timing would pick them)
        patch.setattr(_tuned, "TUNE_BYTES", 0)
        patch.setattr(_tuned, "run_fastest", lambda key, plans: plans[0 if key[0] == "copy" else pick]())
        x = random_array(etype, dims, sum(dims))
        expected = numpy_path(to_physical, x, shape)
        assert np.array_equal(to_physical(x, shape), expected), shape
        assert same_bits(from_physical(expected, shape), x), shape


@pytest.mark.parametrize("text", ["u8[3,40,7,200]{0,1,2,3}", "s32[24,2,38,12,37]{0,1,2,3,4}",
                                  "bf16[479,50,7]{0,1,2}"])
def test_merged_squares_take_either_sweep_in_turn_then_the_faster(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # where both groups could be swept, calls with the same walk after the first take the two plans in turn ROUNDS
    # times each (bytes a line a side: four, each sweep also in 16 x 16 squares), and the squares staged through the
    # cache, then keep the one that took least time; every call writes the same bytes
    tables = _dispatch.tabler()
    sweeps: list[tuple[str, int]] = []
    for entry in ("merged_squares", "merged_lines", "merged_staged", "merged_squares_canonical",
                  "merged_lines_canonical", "merged_staged_canonical"):
        kernel, name = getattr(tables, entry), entry.removesuffix("_canonical")
        monkeypatch.setattr(tables, entry, lambda *args, kernel=kernel, name=name: (
            sweeps.append((name, args[10] if name != "merged_staged" else -1)), kernel(*args))[1])
    _no_disturbances(monkeypatch)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    plan_for = _tuned.plan_for  # (the copies themselves stay on the kernel: the test after this one times those)
    monkeypatch.setattr(_tuned, "plan_for", lambda key, count: 0 if key[0] == "copy" else plan_for(key, count))
    clock = iter(range(1000))
    monkeypatch.setattr(_tuned.time, "perf_counter", lambda: float(next(clock)))
    _tuned.forget()
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, 7)
    expected = numpy_path(to_physical, x, shape)
    plans = []
    out = np.empty_like(expected)  # (one output: the same walk at the same offsets in its pages each time)
    count = (4 if text.startswith("u8") else 2) + 1  # (and staged)
    for _ in range(count * _tuned.ROUNDS + 3):
        sweeps.clear()
        assert np.array_equal(to_physical(x, shape, out=out), expected), text
        plans.append(set(sweeps))
    turn = plans[1 : count + 1]  # (the first call untimed, on the rule's plan)
    assert all(len(plan) == 1 for plan in turn), plans
    assert len({frozenset(plan) for plan in turn}) == count, plans  # (the rule's plan, then the others)
    assert {sweep for plan in turn for _, sweep in plan} == {0, 1, -1}, plans  # (both sweeps, and staged)
    assert plans[: count * _tuned.ROUNDS + 1] == [turn[0]] + turn * _tuned.ROUNDS
    assert plans[-1] == plans[-2]  # (then one plan for good)
    _tuned.forget()


@pytest.mark.parametrize("text", ["u8[8,48,2,300]{0,1,2,3}", "pred[7,5,50,9,200]{3,1,2,0,4}",
                                  "u8[3,8,2,6990]{1,2,0,3}", "u8[100,64,81]{0,1,2}", "s32[100,2,400]{0,1,2}"])
@pytest.mark.parametrize("merged_faster", [True, False])
def test_walks_time_merged_squares_beside_their_own_blocks(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, merged_faster: bool) -> None:
    # walks that merged squares do not take by rule (rows of 8 bytes side by side: u8 [8,48,2,43690]{0,1,2,3} 'to'
    # 8.4x memcpy walked, 3.2x as merged squares; squares with both sides long) time merged squares (either sweep)
    # beside their own blocks and keep the fastest; every call writes the same bytes
    _no_disturbances(monkeypatch)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_passes, "channel_passes", lambda *args: None)  # (u8[3,8,2,6990]{1,2,0,3}: 48 channels)
    plan_for = _tuned.plan_for  # (the copies themselves stay on the kernel)
    monkeypatch.setattr(_tuned, "plan_for", lambda key, count: 0 if key[0] == "copy" else plan_for(key, count))
    walk_ticks, merged_ticks = (5, 1) if merged_faster else (1, 5)
    state = {"now": 0.0}  # (a clock that a walk moves walk_ticks, merged squares merged_ticks, twice that when they
    # sweep the along group)
    monkeypatch.setattr(_tuned.time, "perf_counter", lambda: state["now"])
    ran: list[str] = []
    walk, tables = _dispatch.walker(), _dispatch.tabler()
    for name in ("walk_wide", "walk_wide_lines", "walk_squares"):
        real = getattr(walk, name)
        monkeypatch.setattr(walk, name, lambda *args, real=real: (
            ran.append("walk"), state.update(now=state["now"] + walk_ticks), real(*args))[2])
    for name, label, factor in (("merged_squares", "merged", 1), ("merged_lines", "lines", 2)):  # (bytes a line a
        # side: twice the time of 16 x 16 squares here)
        for entry in (name, name + "_canonical"):  # (pred's twin, which makes the bytes canonical, alike)
            squares = getattr(tables, entry)
            monkeypatch.setattr(tables, entry, lambda *args, squares=squares, label=label, factor=factor: (
                ran.append(f"{label} {args[10]}"),
                state.update(now=state["now"] + factor * merged_ticks * (2 - args[10])), squares(*args))[2])
    for name in ("merged_staged", "merged_staged_canonical"):  # (staged through the cache: three times 16 x 16
        # squares' time here)
        staged = getattr(tables, name)
        monkeypatch.setattr(tables, name, lambda *args, staged=staged: (
            ran.append("staged"), state.update(now=state["now"] + 3 * merged_ticks), staged(*args))[2])
    _tuned.forget()
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    expected = numpy_path(to_physical, x, shape)
    out = np.empty_like(expected)  # (one output: the same walk at the same offsets in its pages each time)
    plans = []
    for _ in range(8):
        ran.clear()
        assert np.array_equal(to_physical(x, shape, out=out), expected), text
        plans.append(ran[0] if len(set(ran)) == 1 else str(ran))
    lined = text in ("u8[8,48,2,300]{0,1,2,3}", "u8[100,64,81]{0,1,2}", "pred[7,5,50,9,200]{3,1,2,0,4}")  # (groups
    # both a line long or more)
    turn = ["lines 1", "merged 1", "lines 0", "merged 0"] if lined else ["merged 1", "merged 0"]
    turn += [] if text == "u8[3,8,2,6990]{1,2,0,3}" else ["staged"]  # (its groups make no square of a line a side)
    assert plans[: 2 + len(turn)] == ["walk", "walk", *turn], plans  # (untimed, then a round of the plans)
    settled = plans[2 + len(turn) :]  # (2x apart: settled in one round)
    assert settled == ["merged 1" if merged_faster else "walk"] * len(settled), plans
    _tuned.forget()


@pytest.mark.parametrize(("text", "numpy_faster"), [("u8[6,40,7,200]{3,1,2,0}", True),
                                                  ("f32[96,80]{0,1}", False), ("bf16[5,64,3,48]{1,3,0,2}", True)])
def test_large_copies_take_the_kernel_or_numpy_whichever_took_less_time(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, numpy_faster: bool) -> None:
    # the generic kernel is not always faster than NumPy's strided copy: copies of TUNE_BYTES and more take the
    # kernel (untimed, then timed), then NumPy, then (one DECISIVE times faster) that one for good; every call
    # writes the same bytes (the kernel's walk on its own blocks: no choice timed inside it)
    _no_disturbances(monkeypatch)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_merged, "timed_routes", lambda *args: [])
    numpy_ticks, kernel_ticks = (1, 5) if numpy_faster else (5, 1)
    state = {"now": 0.0}  # (a clock that a copy by NumPy moves numpy_ticks, one by the kernel kernel_ticks)
    monkeypatch.setattr(_tuned.time, "perf_counter", lambda: state["now"])
    real_numpy, real_kernel = _copy._numpy_copy, _copy._compiled_copy

    def timed_numpy(d: Any, s: Any) -> None:
        state["now"] += numpy_ticks
        real_numpy(d, s)

    def timed_kernel(d: Any, s: Any, run: Any) -> bool:
        state["now"] += kernel_ticks
        return bool(real_kernel(d, s, run))

    monkeypatch.setattr(_copy, "_numpy_copy", timed_numpy)
    monkeypatch.setattr(_copy, "_compiled_copy", timed_kernel)
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, 11)
    expected = numpy_path(to_physical, x, shape)
    out = np.empty_like(expected)  # (one output: the same copy, at the same offsets in its pages, each time)
    took = []
    for _ in range(6):
        before = state["now"]
        assert np.array_equal(to_physical(x, shape, out=out), expected), text
        took.append(state["now"] - before)
    assert took[:3] == [kernel_ticks, kernel_ticks, numpy_ticks]  # (the kernel untimed, timed, then NumPy)
    assert took[3:] == [min(numpy_ticks, kernel_ticks)] * 3, took  # (5x apart: settled)
    _tuned.forget()


@pytest.mark.parametrize("text", ["u8[3,64,20,7,3]{3,1,2,0,4}", "pred[4,3,200,16,3]{0,4,2,1,3}",
                                  "f16[40,121,3,12]{2,0,3,1}", "pred[20,50,12,27]{2,0,1,3}"])
@pytest.mark.parametrize("chunk", [1 << 20, 1000])
def test_tiny_interleaved_blocks_go_in_two_passes_through_a_buffer(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, chunk: int) -> None:
    # blocks of a few channels of a few elements, one run on one side, with an outer axis continuing their rows on
    # the other (u8[7,1024,200,7,3]{3,1,2,0,4}: 3 x 7 bytes, 18.6 / 23.5x memcpy walked): the runs of whole blocks
    # gathered into a buffer, then (de)interleaved as channels and planes, or the reverse, a chunk at a time (the
    # last one short); both directions the NumPy path's bytes
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_passes, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(_passes, "channel_passes", lambda *args: None)  # (the walk's last plan: these passes)
    passes: list[int] = []
    real = _passes._run_passes
    monkeypatch.setattr(_passes, "_run_passes", lambda *args: passes.append(1) or real(*args))
    monkeypatch.setattr(_tuned, "run_fastest", lambda key, plans: plans[-1 if key[0] == "walk" else 0]())
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, chunk)
    round_trip_off_the_grid(x, shape, 16)
    assert len(passes) >= 2, text  # (laid out and read back)


def _no_disturbances(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every call the tuner times look as if it loaded no machine code and compiled nothing (a stopped clock's
    ticks are then the plans' own), whatever the process really did."""
    monkeypatch.setattr(_tuned, "first_uses", lambda: (0.0, 0))


def _ticking_plans(monkeypatch: pytest.MonkeyPatch) -> tuple[Callable[[float], Callable[[], bool]], list[float]]:
    """(plan(ticks): a plan that takes ``ticks`` of a stopped clock the tuner reads, the ticks the plans took); every
    timing forgotten."""
    _tuned.forget()
    _no_disturbances(monkeypatch)
    state = {"now": 0.0}
    monkeypatch.setattr(_tuned.time, "perf_counter", lambda: state["now"])
    took: list[float] = []

    def plan(ticks: float) -> Callable[[], bool]:
        return lambda: bool(state.update(now=state["now"] + ticks) or took.append(ticks) or True)

    return plan, took


def test_a_choice_inside_another_counts_for_it_once_it_has_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    # the kernel's plan of a copy (against NumPy) may time merged squares against the walk's blocks inside it: calls
    # whose inner choice was still taking its plans in turn are not the outer plan's times (else the walk's first,
    # 50 ticks, would set NumPy's 14 decisively apart before the merged squares' 4 ever ran)
    plan, took = _ticking_plans(monkeypatch)

    def kernel() -> bool:
        return _tuned.run_fastest("walk", [plan(50), plan(4)])

    for _ in range(8):
        assert _tuned.run_fastest("copy", [kernel, plan(14)])
    # untimed; the walk's rounds (its first plan dropped after one, 50 >= 2 x 4, leaving one: settled at once); then
    # the copy's plans in turn (its second dropped after one, 14 >= 2 x 4: settled at once)
    assert took == [50, 50, 4, 4, 14, 4, 4, 4], took
    assert (_tuned.plan_for("copy", 2), _tuned.plan_for("walk", 2)) == (0, 1)
    _tuned.forget()


def test_a_plan_on_trial_far_slower_than_another_is_dropped_while_a_choice_inside_it_is_still_timed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # bf16[32768,8191]{0,1:T(8,128)(2,1)} read back: its conversion in slabs took 124 ms; the one without, on trial,
    # timed the walk's three plans and the copy's two inside (0.84-2.1 s each), ten calls of 20-50x memcpy before it
    # counted; a call FAR times the other plan's time is counted, the choice inside or not
    plan, took = _ticking_plans(monkeypatch)

    def whole() -> bool:
        return _tuned.run_fastest("walk", [plan(50), plan(40), plan(60)])

    for _ in range(6):
        assert _tuned.run_fastest("slabs", [plan(3), whole])
    # untimed; the slabs; the whole on trial: 50 >= FAR x 3, counted and dropped (>= DECISIVE x 3): the slabs kept
    assert took == [3, 3, 50, 3, 3, 3], took
    assert _tuned.plan_for("slabs", 2) == 0 and _tuned._TIMES["slabs"] == [[3, 3], [50]]
    _tuned.forget()
    plan, took = _ticking_plans(monkeypatch)  # (an inner plan under FAR x the other's: the inner choice settles first)

    def nearer() -> bool:
        return _tuned.run_fastest("walk", [plan(10), plan(2)])

    for _ in range(8):
        assert _tuned.run_fastest("slabs", [plan(3), nearer])
    # untimed; the slabs; the whole while the walk takes its plans in turn (10 < FAR x 3: not counted), then settled
    assert took == [3, 3, 10, 10, 2, 2, 3, 2], took
    assert _tuned.plan_for("slabs", 2) == 1
    _tuned.forget()


def test_loading_machine_code_is_not_a_plans_time_and_compiling_is_not_counted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a plan whose kernel is first met on a later call (its machine code loaded then: seconds the tuner takes off)
    # is timed on its own work; a call that compiled a kernel is not counted at all (numba compiling for seconds
    # would drop the fastest plan for good, DECISIVE times slower than the others)
    _tuned.forget()
    state = {"now": 0.0, "loading": 0.0, "compiled": 0}
    monkeypatch.setattr(_tuned.time, "perf_counter", lambda: state["now"])
    monkeypatch.setattr(_tuned, "first_uses", lambda: (state["loading"], int(state["compiled"])))
    took: list[str] = []

    def plan(name: str, ticks: float, loading: float = 0.0, compiling: float = 0.0) -> Callable[[], bool]:
        def run() -> bool:  # (loading or compiling on the plan's first run only)
            first = name not in took
            took.append(name)
            state.update(now=state["now"] + ticks + (loading + compiling) * first,
                         loading=state["loading"] + loading * first,
                         compiled=state["compiled"] + int(compiling > 0 and first))
            return True
        return run

    plans = [plan("plain", 3), plan("loaded", 2, loading=30), plan("compiled", 1, compiling=40)]
    for _ in range(7):
        assert _tuned.run_fastest("copy", plans)
    # untimed; each in turn (the second 32 ticks, 30 of them loading: counted as 2; the third's compiling call not
    # counted, run again: 1); then the first two dropped (3, 2 >= 2 x 1): the third at once
    assert took == ["plain", "plain", "loaded", "compiled", "compiled", "compiled", "compiled"], took
    assert _tuned._TIMES["copy"] == [[3], [2], [1, 1]]
    _tuned.forget()

def test_the_numpy_path_times_no_route(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # the NumPy path's conversions are not the compiled path's plans: timed under the same key, the NumPy conversion
    # without the stacked route (288 ms for f32[21840,2048,3]{0,1,2:T(8,128)} laid out) dropped the compiled one
    # (65 ms) for the stacked kernel (125 ms); the NumPy path takes its routes by rule, and times none
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    _no_disturbances(monkeypatch)
    _tuned.forget()
    shape = shape_of("f32[40,24,3]{0,1,2:T(8,128)}")
    x = random_array("f32", shape.dimensions, 1)
    expected = numpy_path(to_physical, x, shape)
    out = np.empty_like(expected)
    for _ in range(2):  # (the first call, then the stacked route timed: the conversion without it next)
        assert np.array_equal(to_physical(x, shape, out=out), expected)
    (key,) = [key for key in _tuned._TIMES if key[0] == "stacked"]
    assert [len(times) for times in _tuned._TIMES[key]] == [1, 0]
    for _ in range(3):
        assert np.array_equal(numpy_path(to_physical, x, shape, out=out), expected)
    assert [len(times) for times in _tuned._TIMES[key]] == [1, 0]
    _tuned.forget()


@pytest.mark.parametrize("slower", ["numpy", "kernel"])
def test_numpy_on_trial_copies_a_part_first_and_stops_there_where_the_kernel_is_far_faster(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, slower: str) -> None:
    # NumPy's strided copy of a large transpose, tried beside the kernel, took a whole call of 66-100x memcpy (3.76 s
    # against the kernel's 71 ms, bf16[2048,32768,4] planes to channels): on trial it copies an eighth of its
    # outermost axis first; where that, scaled to the whole, is DECISIVE times the kernel's time, that is its time
    # and the kernel copies the whole; else NumPy copies the rest, and its time is the call's
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_copy, "SAMPLED_BYTES", 0)
    _no_disturbances(monkeypatch)
    _tuned.forget()
    copied: list[int] = []
    numpy_copy, kernel_copy = _copy._numpy_copy, _copy._compiled_copy

    def slow_numpy(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> None:
        copied.append(d.size)
        time.sleep(0.05 if slower == "numpy" else 0)
        numpy_copy(d, s)

    def slow_kernel(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], run: Any) -> bool:
        time.sleep(0.05 if slower == "kernel" else 0)
        return bool(kernel_copy(d, s, run))

    monkeypatch.setattr(_copy, "_numpy_copy", slow_numpy)
    monkeypatch.setattr(_copy, "_compiled_copy", slow_kernel)
    x = np.random.default_rng(2).integers(0, 1 << 16, (512, 384)).astype(np.uint16)
    out = np.zeros((384, 512), np.uint16)
    for call in range(4):  # (the first untimed, the kernel's, NumPy's trial, the one kept)
        out[...] = 0
        _copy._copy(out.T, x, _dispatch.run_settings(1 << 40, 1))
        assert np.array_equal(out.T, x), call
    (key,) = [key for key in _tuned._TIMES if key[0] == "copy"]
    times = _tuned._TIMES[key]
    if slower == "numpy":  # (its eighth only: 48 of the destination's 384 rows, then the kernel's rows)
        assert copied == [48 * 512] and times[1][0] >= 8 * 0.05 and _tuned.plan_for(key, 2) == 0, (copied, times)
    else:  # (its eighth, then the rest; kept, it copies the whole)
        assert copied == [48 * 512, 336 * 512, 384 * 512] and _tuned.plan_for(key, 2) == 1, (copied, times)
    _tuned.forget()


def test_a_choice_inside_another_that_never_runs_does_not_hold_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # a route inside a plan that does not apply (its plan returns False: nothing run, nothing timed) is no choice
    # still being timed: the outer plans' times count (else the outer choice never settled, and kept taking its
    # second plan on every call: the conversion without stacked slabs, 3x slower, of f16[29127,12,16,3]{...})
    plan, took = _ticking_plans(monkeypatch)

    def rest() -> bool:
        assert not _tuned.run_fastest("bands", [lambda: False, plan(1)])  # (a route that does not apply)
        return plan(9)()

    for _ in range(6):
        assert _tuned.run_fastest("stacked", [plan(3), rest])
    assert took == [3, 3, 9, 3, 3, 3], took  # (untimed; then each plan, the slower dropped; then the faster)
    assert _tuned.plan_for("stacked", 2) == 0 and "bands" not in _tuned._TIMES
    _tuned.forget()


def test_timed_choices_keep_the_fastest_plan_after_their_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # each plan in turn ROUNDS times (the rule's first), then the least time of any call; a slow first call
    # is not counted, nor does a slow second one settle it unless the other was DECISIVE times faster; at most KEPT
    # keys, the least recently used dropped
    _tuned.forget()
    assert [_tuned.plan_for("walk", 2) for _ in range(2)] == [0, 0]  # (nothing timed: the rule's plan)
    _tuned.timed("walk", 2, 0, 50.0)  # (the first call: kernels loaded, pages faulted in; not counted)
    _tuned.timed("far", 2, 0, 50.0)
    for plan, seconds in [(0, 3.0), (1, 2.0), (0, 1.0), (1, 2.5)]:
        assert _tuned.plan_for("walk", 2) == plan
        _tuned.timed("walk", 2, plan, seconds)
    assert _tuned.plan_for("walk", 2) == 0  # (plan 0's best, 1.0, beats plan 1's 2.0)
    for plan, seconds in [(0, 1.0), (1, 2.0)]:  # (one plan DECISIVE times faster in the first round: kept at once)
        assert _tuned.plan_for("far", 2) == plan
        _tuned.timed("far", 2, plan, seconds)
    assert [_tuned.plan_for("far", 2) for _ in range(3)] == [0, 0, 0]
    _tuned.timed("walk", 2, 1, 0.5)  # (a later faster call of plan 1 counts too)
    _tuned.timed("walk", 2, 0, 0.7)
    assert _tuned.plan_for("walk", 2) == 1
    monkeypatch.setattr(_tuned, "KEPT", 3)
    for key in range(4):
        _tuned.timed(("other", key), 2, 0, 1.0)
    assert len(_tuned._TIMES) == 3 and "walk" not in _tuned._TIMES and ("other", 0) not in _tuned._TIMES
    _tuned.forget()
    assert not _tuned._TIMES


@pytest.mark.parametrize(("value", "tuned"), [("1", False), ("0", True), ("", True)])
def test_no_tuning_variable_makes_every_copy_take_the_rules_plan(value: str, tuned: bool) -> None:
    # XLASHAPES_NO_TUNING=1 (read when the module loads): no plan is chosen by timing, at any size
    import subprocess
    import sys

    script = "from xlashapes.physical import _tuned; print(_tuned.TUNE_BYTES)"
    env = {**os.environ, _tuned.NO_TUNING_VARIABLE: value}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert (int(out.stdout) == 4 << 20) == tuned, out.stdout


def test_merged_groups_stop_where_axes_do_not_continue() -> None:
    # the across group: source-contiguous axes from the minor end; the along group: destination-contiguous ones;
    # where both want an axis, each keeps the run of its axes that leaves the shorter group longest
    route = _merged.merged_route([23301, 12, 5, 24], [288, 24, 6710688, 1], [5, 116505, 1, 1398060], 2, 1, 0, 1)
    assert route is not None and route.inner_across  # (the across group was cut at 4096: its loop inside, 1024)
    assert route.along.tolist() == [k * 1398060 + j * 116505 for j in range(12) for k in range(24)]
    assert route.across[:6].tolist() == [0, 6710688, 13421376, 20132064, 26842752, 288]
    assert len(route.across) == 1020
    assert route.outer.tolist() == [[115], [288], [5], [204], [23097]]  # (the last block overlaps the one before)
    assert _merged.merged_route([64, 64], [1, 64], [64, 1], 0, 1, 0, 1) is None  # (a plain transpose: squares)
    assert _merged._groups([8, 3], [3, 1], [1, 8], 16, (4096, 4096)) is None  # (24 elements in all: no squares)
    assert _merged._group([5, 7, 9], [63, 9, 1], 40) == (((2, 9), (1, 4)), True)
    assert _merged._group([5, 7, 9], [70, 9, 1], 4096) == (((2, 9), (1, 7)), False)  # (a gap after 63: stops)
    assert _merged._groups([50, 7, 64], [64, 3200, 1], [7, 1, 350], 32, (4096, 4096)) == (
        ((1, 7), (0, 50)), ((2, 64),), False, False)  # (both want the 50: across keeps it, along its 64 alone)


def test_merged_squares_sweep_the_group_whose_rows_lie_closer() -> None:
    # where both groups were cut (or neither), the inner loop sweeps the one whose rows lie in a span at least
    # SPAN_FACTOR times narrower, once the other's spans more than SPAN_FAR elements: u8[3,128,7,24966]{0,1,2,3}
    # 'to' swept 768 source rows spread over the whole array (6.3x memcpy), now 1024 destination rows 2688 bytes
    # apart (3.3x)
    wide = _merged.merged_route([7, 128, 24966, 3], [384, 3, 2688, 1], [24966, 174762, 1, 22369536], 2, 1, 0, 1)
    assert wide is not None and wide.inner_across and len(wide.across) == _merged.INNER_MOST
    assert len(wide.along) == 3 * 128 * 7 and max(wide.along) == 2 * 22369536 + 127 * 174762 + 6 * 24966
    back = _merged.merged_route([7, 128, 3, 24966], [24966, 174762, 22369536, 1], [384, 3, 1, 2688], 2, 1, 0, 1)
    assert back is not None and not back.inner_across  # ('from': the source rows are the close ones)
    groups = (((2, 4096),), ((3, 3), (1, 128), (0, 7)), True, True)
    steps = [384, 3, 2688, 1], [24966, 174762, 1, 22369536]
    assert _merged._sweeps_across(groups, *steps)
    near = (((2, 4096),), ((3, 3), (1, 128), (0, 7)), True, True)
    assert not _merged._sweeps_across(near, [384, 3, 16000, 1], steps[1])  # (spans within 4x: the along group)
    assert not _merged._sweeps_across(groups, steps[0], [24, 174, 1, 2236])  # (both spans small: cached anyway)
    assert _merged._sweeps_across((*groups[:2], True, False), steps[0], [24, 174, 1, 2236])  # (only across cut)
    assert not _merged._sweeps_across((*groups[:2], False, True), *steps)  # (only along cut)


@pytest.mark.parametrize("text", ["u4[256,768]{0,1:E(4)}", "s4[330,702]{0,1:E(4)}", "u2[512,520]{0,1:E(2)}",
                                  "s2[300,1100]{0,1:E(2)}", "u4[768,256,1]{0,2,1:E(4)}"])
@pytest.mark.parametrize("offset", [0, 16, 3])
def test_packed_transposes_pack_and_unpack_on_the_way(compiled_everywhere: Counter[str],
                                                       monkeypatch: pytest.MonkeyPatch, text: str, offset: int) -> None:
    # a 2-d transpose of E(4) / E(2) fields goes through the staged kernel once, the fields packed as source rows
    # are staged (to) or unpacked (from): no unpacked temporary, no separate packing pass
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_transposes, "STAGE_ROWS", 128)
    monkeypatch.setattr(_transposes, "STAGE_COLS", 256)
    passes = Counter[str]()  # packing passes outside the NumPy path

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            passes[name] += not os.environ.get("XLASHAPES_NO_NUMBA")
            return function(*args)

        return call

    for module in (_packing, _convert):
        monkeypatch.setattr(module, "_pack", counted("pack", _packing._pack))
        monkeypatch.setattr(module, "_unpack", counted("unpack", _packing._unpack))
    walk = _dispatch.walker()
    staged = Counter[int]()
    monkeypatch.setattr(walk, "staged_transpose", _counting(walk.staged_transpose, staged))
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, offset + len(text))
    expected = round_trip_off_the_grid(x, shape, offset)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    assert np.array_equal(to_physical(x, shape, threads=3), expected), text
    assert same_bits(from_physical(expected, shape, threads=2), x), text
    assert sum(staged.values()) >= 6, text
    assert compiled_everywhere["walk"] == 0 and not +passes, (text, passes)


def nibble_pairs_model(rows: np.ndarray) -> np.ndarray:
    """What ``transpose_nibbles`` makes of byte rows, written element by element: the low nibbles of the byte pairs
    to the first half of the row, the high ones to the second."""
    pairs = rows.reshape(len(rows), -1, 2).astype(np.int64)
    low = (pairs[..., 0] & 15) | (pairs[..., 1] & 15) << 4
    high = pairs[..., 0] >> 4 | (pairs[..., 1] & 240)
    return np.concatenate([low, high], axis=1).astype(np.uint8)


def block_run(compiled: bool, threads: int) -> _dispatch.Run:
    """Settings that take the compiled kernels (skipped without numba) or the NumPy path, for any size."""
    if compiled and _dispatch.kernels() is None:
        pytest.skip("numba is not installed")
    return _dispatch.Run(0, threads, numba_bytes=0 if compiled else 1 << 62, thread_bytes=0)


@FAST
@given(st.integers(1, 9), st.integers(1, 40), st.integers(1, 3), st.booleans(), st.integers(0, 2**32 - 1))
def test_nibble_pairs_of_byte_rows_turn_around(rows: int, pairs: int, threads: int, compiled: bool, seed: int) -> None:
    # every length of row (the word loop and the byte tail), several threads; the kernel and the NumPy path
    run = block_run(compiled, threads)
    data = np.random.default_rng(seed).integers(0, 256, (rows, 2 * pairs), np.uint8)
    expected = nibble_pairs_model(data)
    _blocks._transpose_nibbles(data, run)
    assert np.array_equal(data, expected)


NIBBLE_PAIRS = [
    ("u4[64,256]{1,0:E(4)}", "{0,1:E(4)}", True),
    ("s4[70,34]{0,1:E(4)}", "{1,0:E(4)}", True),
    ("f4e2m1fn[2,30,18]{2,1,0:E(4)}", "{1,2,0:E(4)}", True),
    ("u4[6,2,34]{0,2,1:E(4)}", "{2,0,1:E(4)}", True),
    ("u4[63,256]{1,0:E(4)}", "{0,1:E(4)}", False),
    ("u4[64,255]{1,0:E(4)}", "{0,1:E(4)}", False),
    ("u4[4,6,8]{2,1,0:E(4)}", "{0,1,2:E(4)}", False),
    ("u2[64,256]{1,0:E(4)}", "{0,1:E(4)}", False),
    ("u4[64,256]{1,0:E(4)}", "{0,1:T(8,128)(2,1)E(4)}", False),
    ("u4[64,250]{1,0:E(4)}", "{0,1:L(512)E(4)}", False),
    ("u4[4,6,8,10]{3,2,1,0:E(4)}", "{2,3,0,1:E(4)}", True),
]


def swapped_fields_model(data: np.ndarray, bits: int) -> np.ndarray:
    """What ``swap_fields`` makes of bytes, field by field: in every word of ``4 * bits`` bits (a block of 2 x 2
    fields, by column then row), the second and third fields swapped."""
    per_byte = 8 // bits if bits < 8 else 1
    if bits < 8:  # (nibbles: each byte's two fields, low first)
        fields = np.stack([data & 15, data >> 4], axis=-1).reshape(-1, 4)
    else:
        fields = data.reshape(-1, 4, bits // 8)
    turned = fields[:, [0, 2, 1, 3]]
    if per_byte > 1:
        pairs = turned.reshape(-1, 2)
        return (pairs[:, 0] | pairs[:, 1] << 4).astype(np.uint8)
    return turned.reshape(-1)


@FAST
@given(st.sampled_from([4, 8, 16]), st.integers(0, 40), st.integers(1, 3), st.booleans(), st.integers(0, 2**32 - 1))
def test_middle_fields_of_words_swap(bits: int, words: int, threads: int, compiled: bool, seed: int) -> None:
    # words of 16, 32 and 64 bits, any count (whole uint64s and the bytes after them), several threads; the kernel
    # and the NumPy path
    run = block_run(compiled, threads)
    data = np.random.default_rng(seed).integers(0, 256, words * bits // 2, np.uint8)
    expected = swapped_fields_model(data, bits)
    _blocks._swap_fields(data, bits, run)
    assert np.array_equal(data, expected)


TURNED_BLOCKS = [
    ("bf16[64,512]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", True),
    ("s4[64,512]{0,1:T(8,128)(2,1)E(4)}", "{1,0:T(8,128)(2,1)E(4)}", True),
    ("f16[6,30,70]{2,1,0:T(4,8)(2,1)}", "{1,2,0:T(2,16)(2,1)}", True),
    ("u4[3,30,70]{1,2,0:T(8,128)(2,1)E(4)}", "{2,1,0:T(8,128)(2,1)E(4)}", True),
    ("s8[64,256]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", True),
    ("pred[64,256]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", True),
    ("bf16[31,70]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", False),
    ("bf16[30,71]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", False),
    ("f32[64,256]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", False),
    ("s8[64,256]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)}", False),
    ("bf16[64,512]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)}", False),
    ("bf16[64,500]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)L(2048)}", False),
    ("u2[64,256]{1,0:T(8,128)(2,1)E(4)}", "{0,1:T(8,128)(2,1)E(4)}", False),
    ("bf16[4,64,64]{2,1,0:T(8,128)(2,1)}", "{0,2,1:T(8,128)(2,1)}", False),
]


BLOCK_ROUTES = [(*case, "_transpose_nibbles") for case in NIBBLE_PAIRS] + [(*case, "_swap_fields")
                                                                          for case in TURNED_BLOCKS]


@pytest.mark.parametrize(("text", "target", "taken", "route"), BLOCK_ROUTES)
def test_blocks_of_2_by_2_go_whole(compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str,
                                   target: str, taken: bool, route: str) -> None:
    # E(4) transposes whose source's minor dim is the target's second-minor one: the bytes relaid out as u8, then
    # each byte pair's nibbles turned around in place; T(R,C)(2,1) layouts with their two minor dims swapped: each
    # 2 x 2 block moved as one word, then its middle fields swapped in place (odd dims, 32-bit fields, (4,1)
    # sub-tiles, other tiles or orders, tail padding, u2 in E(4) fields: the other routes); threads split both passes.
    # (The compiled path turns whole-byte sub-tiles a square of lines at a time: left out here, tested below.)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "_turned_lines", lambda *args: None)
    turned: list[int] = []
    original = getattr(physical, route)
    monkeypatch.setattr(physical, route, lambda *args: (turned.append(1), original(*args))[1])
    shape = xs.parse_shape(text)
    other = xs.parse_shape(text[: text.index("{")] + target)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    buffer = to_physical(x, shape)
    expected = numpy_path(to_physical, x, other)
    assert np.array_equal(relayout(buffer, shape, other, threads=2), expected)
    assert bool(turned) == taken, turned
    if taken and other.layout_or_default().tiles:  # a padding value of its own: through the logical array
        padded = numpy_path(to_physical, x, other, padding_value=1)
        assert np.array_equal(relayout(buffer, shape, other, padding_value=1), padded)
        assert len(turned) == 1


@contextlib.contextmanager
def compiled_at_any_size(*spied: str) -> Iterator[dict[str, list[Any]]]:
    """Inside the block: the compiled kernels for arrays of any size, and what each function of ``physical`` named in
    ``spied`` returns, recorded by name (for Hypothesis tests, which cannot take the monkeypatch fixture)."""
    saved = _dispatch.NUMBA_BYTES, _dispatch.FIRST_NUMBA_BYTES, {name: getattr(physical, name) for name in spied}
    returns: dict[str, list[Any]] = {name: [] for name in spied}

    def recording(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            returns[name].append(result := function(*args, **kwargs))
            return result

        return call

    _dispatch.NUMBA_BYTES = _dispatch.FIRST_NUMBA_BYTES = 0
    for name, function in saved[2].items():
        setattr(physical, name, recording(name, function))
    try:
        yield returns
    finally:
        _dispatch.NUMBA_BYTES, _dispatch.FIRST_NUMBA_BYTES = saved[0], saved[1]
        for name, function in saved[2].items():
            setattr(physical, name, function)


@FAST
@given(st.sampled_from(["bf16", "f16", "s4", "u4", "s8", "u4 untiled"]), st.lists(st.integers(1, 12), min_size=2,
                                                                               max_size=3), st.data())
def test_blocks_of_2_by_2_equal_numpy_path(etype: str, halves: list[int], data: st.DataObject) -> None:
    # any rank (even sizes), order of the other dims and tiles; the two minor dims swapped (T(R,C)(2,1)) or the
    # source's minor dim the target's second-minor one (untiled E(4)); the compiled and NumPy paths
    if _dispatch.kernels() is None:
        pytest.skip("numba is not installed")
    etype, _, untiled = etype.partition(" ")
    dims = [2 * n for n in halves]
    order = data.draw(st.permutations(range(len(dims))))
    if untiled:
        second = data.draw(st.sampled_from([d for d in range(len(dims)) if d != order[0]]))
        rest = data.draw(st.permutations([d for d in range(len(dims)) if d not in (order[0], second)]))
        target_order, tiles = [second, order[0], *rest], [(), ()]
    else:
        target_order = [order[1], order[0], *data.draw(st.permutations(order[2:]))]
        tiles = [((2 * data.draw(st.integers(1, 4)), 2 * data.draw(st.integers(1, 8))), (2, 1)) for _ in range(2)]
    packed = {"element_size_in_bits": 4} if etype in ("s4", "u4") else {}
    shape = xs.make_shape(etype, dims, minor_to_major=order, tiles=list(tiles[0]), **packed)
    target = xs.make_shape(etype, dims, minor_to_major=target_order, tiles=list(tiles[1]), **packed)
    x = random_array(etype, tuple(dims), sum(dims))
    with compiled_at_any_size():
        moved = relayout(to_physical(x, shape), shape, target)
    expected = numpy_path(to_physical, x, target)
    assert np.array_equal(moved, expected)
    assert np.array_equal(numpy_path(relayout, numpy_path(to_physical, x, shape), shape, target), expected)


TURNED_LINES = [
    ("s8[256,512]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)}", True),
    ("s8[256,512]{1,0:T(8,128)(4,1)}", "{0,1:T(8,128)(4,1)}", True),
    ("bf16[2,128,384]{1,2,0:T(8,128)(2,1)}", "{2,1,0:T(8,128)(2,1)}", True),
    ("f8e4m3fn[3,256,128]{2,1,0:T(32,128)(4,1)}", "{1,2,0:T(32,128)(4,1)}", True),
    ("bf16[128,256]{0,1:T(16,128)(2,1)}", "{1,0:T(16,128)(2,1)}", True),
    ("u8[128,256]{0,1:T(8,128)(2,1)}", "{1,0:T(8,128)(2,1)}", True),
    ("f32[128,256]{0,1:T(8,128)(2,1)}", "{1,0:T(8,128)(2,1)}", True),
    ("f64[128,128]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", True),
    ("u16[128,256]{0,1:T(4,128)(4,1)}", "{1,0:T(4,128)(4,1)}", True),
    ("f32[128,128]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)}", True),
    ("s8[2,128,3,128]{1,3,2,0:T(8,128)(4,1)}", "{3,1,2,0:T(8,128)(4,1)}", True),
    ("s8[64,64]{0,1:T(8,32)(4,1)}", "{1,0:T(8,32)(4,1)}", True),
    ("pred[256,512]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)}", False),
    ("s8[264,512]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)}", True),
    ("s8[256,136]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)}", True),
    ("bf16[100,300]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", True),
    ("bf16[3,5,7]{1,2,0:T(8,128)(2,1)}", "{2,1,0:T(8,128)(2,1)}", True),
    ("f32[33,47]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}", True),
    ("u8[136,1000]{0,1:T(16,128)(2,1)}", "{1,0:T(16,128)(2,1)}", True),
    ("u4[250,256]{1,0:T(8,128)(2,1)E(4)}", "{0,1:T(8,128)(2,1)E(4)}", False),
    ("s8[3,256,256]{1,2,0:T(8,128)(4,1)}", "{2,0,1:T(8,128)(4,1)}", False),
    ("bf16[384,384]{0,1:T(24,128)(2,1)}", "{1,0:T(24,128)(2,1)}", False),
    ("s8[256,256]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(2,1)}", False),
    ("s8[256,256]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)L(70000)}", False),
    ("u4[256,256]{0,1:T(8,128)(2,1)E(4)}", "{1,0:T(8,128)(2,1)E(4)}", True),
    ("s4[2,128,256]{1,2,0:T(16,128)(2,1)E(4)}", "{2,1,0:T(16,128)(2,1)E(4)}", True),
    ("u2[256,256]{0,1:T(8,128)(2,1)E(4)}", "{1,0:T(8,128)(2,1)E(4)}", False),
    ("s4[256,256]{0,1:T(8,128)(4,1)E(4)}", "{1,0:T(8,128)(4,1)E(4)}", False),
    ("s8[64,64]{0,1:T(8,8)(4,1)}", "{1,0:T(8,8)(4,1)}", False),
    ("f64[128,128]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)(4,1)}", False),
    ("s8[256,256]{0,1:T(8,128)(4,1)}", "{1,0:T(8,128)}", False),
]


def relaid_out_every_way(monkeypatch: pytest.MonkeyPatch, text: str, target: str) -> None:
    """Relayout an array of shape ``text`` to its dims in the layout ``target``: with two threads, into an ``out=``
    16 bytes past a line, on the NumPy path, and with a padding value of its own, each giving the NumPy path's bytes
    of the array in ``target``, and nothing written outside ``out=`` (compiled kernels for any size, streamed where on
    a line)."""
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    shape = xs.parse_shape(text)
    other = xs.parse_shape(text[: text.index("{")] + target)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    buffer = to_physical(x, shape)
    expected = numpy_path(to_physical, x, other)
    assert np.array_equal(relayout(buffer, shape, other, threads=2), expected)
    room = np.full(other.byte_size() + 80, 7, np.uint8)
    start = -room.ctypes.data % 64 + 16
    out = room[start : start + other.byte_size()]
    assert np.array_equal(relayout(buffer, shape, other, out=out), expected)
    assert (room[:start] == 7).all() and (room[start + other.byte_size() :] == 7).all()
    assert np.array_equal(numpy_path(relayout, buffer, shape, other), expected)
    padded = numpy_path(to_physical, x, other, padding_value=1)  # (a padding value of its own, where there is any)
    assert np.array_equal(relayout(buffer, shape, other, padding_value=1), padded)


def turned_lines_counted(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each call of the square-of-lines route returned (True: it relaid out the array), from now on."""
    seen: list[bool] = []
    original = physical._turn_lines
    monkeypatch.setattr(physical, "_turn_lines", lambda *args: (seen.append(done := original(*args)), done)[1])
    return seen


@pytest.mark.parametrize(("text", "target", "taken"), TURNED_LINES)
def test_turned_sub_tiles_go_a_square_of_lines_at_a_time(compiled_everywhere: Counter[str],
                                                        monkeypatch: pytest.MonkeyPatch, text: str, target: str,
                                                        taken: bool) -> None:
    # T(R,C)(p,1) layouts of whole bytes (or (2,1) of E(4) fields, tiles filled) with their two minor dims swapped:
    # p x p blocks of 1 to 8 bytes (or two), lines of a square in one tile or several, batch dims between or around,
    # tiles partly filled (the squares that lie whole in both layouts, the rest one element at a time, the target's
    # padding after); streamed (out= on a line) or not (16 bytes past one), two threads. pred (made 0 / 1), other dims
    # reordered, R / p not a power of two, other sub-tiles, tail padding, u2 in E(4) fields, (4,1) sub-tiles of E(4),
    # E(4) in tiles partly filled, sub-tile rows under a line, blocks over a line, other tiles: the other routes
    seen = turned_lines_counted(monkeypatch)
    relaid_out_every_way(monkeypatch, text, target)
    assert sum(seen) == 3 * taken, seen  # (two threads, out=, a padding value: the tiles are full)


LINE_BLOCKS = {1: ["s8", "u8", "f8e4m3fn"], 2: ["bf16", "f16", "u16"], 4: ["f32", "s32"], 8: ["f64", "u64"],
               0: ["s4", "u4"]}  # (by bytes; 0: E(4) fields)


TURNED_BLOCK_SIZES = [(p, width) for p in (2, 4) for width in LINE_BLOCKS if p * p * width <= 64 and (width or p == 2)]


@FAST
@given(st.sampled_from(TURNED_BLOCK_SIZES), st.data())
def test_turned_sub_tiles_equal_numpy_path(block: tuple[int, int], data: st.DataObject) -> None:
    # any p x p block of fields up to a line (or of 4-bit fields, (2,1)E(4)), tile rows of 1 to 8 sub-tile rows, tile
    # rows of 1 to 4 sub-tile row lines, the tiled dims up to 2 times the tiles (whole bytes: any size, tiles partly
    # filled; E(4): whole tiles), 0 to 2 batch dims in any order: the route taken (where one layout's bytes are the
    # row-major array's, to_physical or from_physical may take it instead; tiny arrays may go as one direct copy), and
    # its bytes the NumPy path's
    if _dispatch.kernels() is None:
        pytest.skip("numba is not installed")
    p, width = block
    etype = data.draw(st.sampled_from(LINE_BLOCKS[width]))
    rows, cols = p << data.draw(st.integers(0, 3)), 64 // (p * width or 1) << data.draw(st.integers(0, 2))
    tile = rows * cols // math.gcd(rows, cols)
    x, y = (tile * data.draw(st.integers(1, 2)) - (data.draw(st.integers(0, tile - 1)) if width else 0)
            for _ in range(2))  # (whole bytes: tiles partly filled too)
    batch = data.draw(st.lists(st.integers(1, 3), max_size=2 if x * y * width <= 1 << 16 else 0))
    dims = [x, y, *batch]
    rest = data.draw(st.permutations(range(2, len(dims))))
    tiles = [(rows, cols), (p, 1)]
    packed = {} if width else {"element_size_in_bits": 4}
    shape = xs.make_shape(etype, dims, minor_to_major=[1, 0, *rest], tiles=tiles, **packed)
    target = xs.make_shape(etype, dims, minor_to_major=[0, 1, *rest], tiles=tiles, **packed)
    array = canonical_bits(random_array(etype, tuple(dims), sum(dims))).view(xs.element_type(etype).numpy_dtype)
    array = array.reshape(dims)
    with compiled_at_any_size("_turn_lines", "_relayout_direct") as returns:
        moved = relayout(to_physical(array, shape), shape, target)
    seen, direct = returns["_turn_lines"], returns["_relayout_direct"]
    expected = numpy_path(to_physical, array, target)
    row_major = numpy_path(to_physical, array, xs.make_shape(etype, dims, **packed))  # (a layout whose bytes are
    # these: to_physical / from_physical)
    plain = np.array_equal(expected, row_major) or np.array_equal(numpy_path(to_physical, array, shape), row_major)
    assert seen == [True] or (not seen and (plain or any(direct)))  # (or the direct copy, where it is not fine)
    assert np.array_equal(moved, expected)


PAIRED_WORDS = [
    ("bf16[256,512]{0,1:T(8,128)}", "{1,0:T(8,128)(2,1)}", True),
    ("s8[256,512]{0,1:T(8,128)}", "{1,0:T(8,128)(4,1)}", True),
    ("bf16[2,256,512]{1,2,0:T(8,128)}", "{2,1,0:T(8,128)(2,1)}", True),
    ("bf16[256,520]{0,1:T(8,128)}", "{1,0:T(8,128)(2,1)}", True),
    ("bf16[256,512]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)}", False),
    ("pred[128,256]{0,1:T(8,128)}", "{1,0:T(8,128)(4,1)}", False),
    ("bf16[130,256]{0,1:T(8,128)}", "{1,0:T(8,128)(4,1)}", False),
    ("bf16[129,256]{0,1:T(8,128)}", "{1,0:T(8,128)(2,1)}", False),
    ("bf16[128,256]{0,1:T(8,127)}", "{1,0:T(8,128)(2,1)}", False),
    ("bf16[128,256]{0,1:T(8,128)(2,1)}", "{1,0:T(8,128)(2,1)}", False),
    ("f32[128,256]{0,1:T(8,128)}", "{1,0:T(8,128)(4,1)}", False),
    ("bf16[128,256]{0,1:T(8,128)}", "{1,0:T(8,128)(2,1)L(40000)}", False),
]


@pytest.mark.parametrize(("text", "target", "taken"), PAIRED_WORDS)
def test_sub_tiles_whose_pairs_follow_each_other_move_as_words(compiled_everywhere: Counter[str],
                                                              monkeypatch: pytest.MonkeyPatch, text: str,
                                                              target: str, taken: bool) -> None:
    # onto (p,1) sub-tiles pairing the source's minor dim (one tile level, tiles partly filled, a batch dim): the
    # relayout of words of p elements, on both paths (where the copy between the factor views is fine-grained); the
    # other way round (no gain measured), pred (made 0 / 1), dims or tiles not a multiple of p, sub-tiles on the
    # source, words over 8 bytes, tail padding: the other routes
    seen: list[tuple[str, str]] = []
    original = physical._paired_words
    monkeypatch.setattr(physical, "_paired_words", lambda *args: (
        seen.append(tuple(map(str, words)) if (words := original(*args)) else ()), words)[1])
    relaid_out_every_way(monkeypatch, text, target)
    assert any(seen) == taken, seen


@FAST
@given(st.sampled_from([("bf16", 2), ("f16", 2), ("s8", 4), ("u8", 2), ("s16", 4), ("f32", 2)]),
       st.lists(st.integers(1, 6), min_size=2, max_size=3), st.booleans(), st.data())
def test_sub_tiles_as_words_are_the_same_bytes(kind: tuple[str, int], sizes: list[int], tiled: bool,
                                               data: st.DataObject) -> None:
    # any shape the word route takes (rank 2-3, the source untiled or in one tile level, any other dims' order):
    # relaid out as words, the NumPy path gives the target's bytes, and the word shapes take exactly both layouts'
    # bytes
    etype, p = kind
    dims = [p * n for n in sizes]
    order = data.draw(st.permutations(range(len(dims))))
    paired = order[0]
    target = [order[1] if len(dims) > 1 else paired, paired]
    target = [target[0], paired, *[d for d in order if d not in (target[0], paired)]]
    source_tiles = [(data.draw(st.sampled_from([1, 2, 4, 8])), p * data.draw(st.integers(1, 4)))] if tiled else []
    tiles = [(p * data.draw(st.integers(1, 4)), data.draw(st.sampled_from([8, 16, 32]))), (p, 1)]
    shape = xs.make_shape(etype, dims, minor_to_major=order, tiles=source_tiles)
    other = xs.make_shape(etype, dims, minor_to_major=target, tiles=tiles)
    words = _blocks._paired_words(_geometry(shape), _geometry(other))
    assert words is not None
    assert (words[0].byte_size(), words[1].byte_size()) == (shape.byte_size(), other.byte_size())
    x = random_array(etype, tuple(dims), sum(dims))
    buffer = numpy_path(to_physical, x, shape)
    assert np.array_equal(numpy_path(relayout, buffer, words[0], words[1]), numpy_path(to_physical, x, other))


TURNED_WORDS = [
    ("bf16[4,16,16,256]{3,2,1,0:T(8,128)(2,1)}", "{3,0,2,1:T(8,128)(2,1)}", True),
    ("bf16[4,16,16,256]{3,0,2,1:T(8,128)(2,1)}", "{3,2,1,0:T(8,128)(2,1)}", True),
    ("s8[8,16,16,256]{3,2,1,0:T(8,128)(4,1)}", "{3,0,2,1:T(8,128)(4,1)}", True),
    ("pred[8,4,16,256]{3,2,1,0:T(8,128)(4,1)}", "{3,0,2,1:T(8,128)(4,1)}", True),
    ("f32[4,16,16,256]{3,2,1,0:T(8,128)(2,1)}", "{3,0,2,1:T(8,128)(2,1)}", True),
    ("f64[4,8,16,32]{3,2,1,0:T(8,32)(2,1)}", "{3,0,2,1:T(8,32)(2,1)}", True),
    ("bf16[6,10,14,200]{3,2,1,0:T(8,128)(2,1)}", "{3,0,2,1:T(8,128)(2,1)}", True),
    ("bf16[16,8,1000]{2,1,0:T(8,128)(2,1)}", "{2,0,1:T(8,128)(2,1)}", True),
    ("u8[16,8,4,1000]{3,2,1,0:T(8,128)(4,1)}", "{3,1,0,2:T(16,256)(4,1)}", True),
    ("bf16[4,16,16,256]{3,2,1,0:T(8,128)(2,1)}", "{0,3,2,1:T(8,128)(2,1)}", False),
    ("bf16[4,16,16,24]{3,2,1,0:T(8,128)(2,1)}", "{3,0,2,1:T(8,128)(2,1)}", True),
    ("bf16[4,16,16,8]{3,2,1,0:T(8,8)(2,1)}", "{3,0,2,1:T(8,8)(2,1)}", False),
    ("u4[4,16,16,256]{3,2,1,0:T(8,128)(2,1)E(4)}", "{3,0,2,1:T(8,128)(2,1)E(4)}", False),
]


@pytest.mark.parametrize(("text", "target", "taken"), TURNED_WORDS)
def test_sub_tiles_pairing_other_dims_turn_a_line_of_words_at_a_time(compiled_everywhere: Counter[str],
                                                                    monkeypatch: pytest.MonkeyPatch, text: str,
                                                                    target: str, taken: bool) -> None:
    # (p,1) sub-tiles pairing another dim on each side, the minor dim the same (NHWC activations' batch dim moved):
    # p lines of words turned into p lines in registers, the rest of each row element by element (rows of 200 or
    # 1000 columns, tiles partly filled); bf16, s8, pred (made 0 / 1 after), f32, f64, other tiles on the other side,
    # streamed or not (out= 16 bytes past a line), two threads. Other minor dims, rows of words under a line, E(4):
    # the other routes
    relaid_out_every_way(monkeypatch, text, target)
    assert bool(compiled_everywhere["walk_turns"]) == taken, compiled_everywhere


@FAST
@given(st.sampled_from([("bf16", 2), ("f16", 2), ("s8", 4), ("u8", 2), ("f32", 2), ("f8e5m2", 4)]),
       st.lists(st.integers(1, 9), min_size=3, max_size=4), st.data())
def test_sub_tiles_pairing_other_dims_equal_numpy_path(kind: tuple[str, int], sizes: list[int],
                                                       data: st.DataObject) -> None:
    # rank 3 or 4, the minor dim kept (16 to 144 elements: whole lines of words and tails), the second-minor one
    # (paired by the (p,1) sub-tile) another on the other side, the other dims in any order, tiles of any even rows and
    # 8 to 64 columns on each side: the compiled path's bytes are the NumPy path's
    if _dispatch.kernels() is None:
        pytest.skip("numba is not installed")
    etype, p = kind
    dims = [p * n for n in sizes]
    dims[-1] = 16 * sizes[-1]
    minor = len(dims) - 1
    order = [minor, *data.draw(st.permutations(range(minor)))]
    other = [minor, *data.draw(st.permutations(range(minor)).filter(lambda rest: rest[0] != order[1]))]
    tiles = [[(p * data.draw(st.integers(1, 4)), 8 * data.draw(st.integers(1, 8))), (p, 1)] for _ in range(2)]
    shape = xs.make_shape(etype, dims, minor_to_major=order, tiles=tiles[0])
    target = xs.make_shape(etype, dims, minor_to_major=other, tiles=tiles[1])
    x = random_array(etype, tuple(dims), sum(dims))
    with compiled_at_any_size():
        moved = relayout(to_physical(x, shape), shape, target)
    assert np.array_equal(moved, numpy_path(to_physical, x, target))


def test_packed_transposes_that_do_not_fit_the_staged_kernel_go_the_generic_way(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # rows that do not start on whole bytes, tiles, fields wider than the type, pred, short sides; slab chunks
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 16384)
    monkeypatch.setattr(physical, "wants_slabs", lambda *args: True)
    walk = _dispatch.walker()
    fields = Counter[int]()  # staged transposes by their E(bits) (8: none)
    original = walk.staged_transpose

    def counted(*args: Any) -> Any:
        fields[int(args[-2])] += 1
        return original(*args)

    monkeypatch.setattr(walk, "staged_transpose", counted)
    for text, packed in (("u4[255,512]{0,1:E(4)}", False), ("u4[256,512]{0,1:T(8,128)(2,1)E(4)}", False),
                         ("s4[256,512]{0,1:E(8)}", False), ("pred[256,512]{0,1:E(1)}", False),
                         ("u4[256,40]{0,1:E(4)}", False), ("u4[256,512]{0,1:E(4)}", True)):
        shape = xs.parse_shape(text)
        x = random_array(str(shape.element_type), shape.dimensions, 5)
        buffer = to_physical(x, shape)
        assert np.array_equal(buffer, numpy_path(to_physical, x, shape)), text
        assert same_bits(from_physical(buffer, shape), x), text
        assert (fields[4] + fields[2] == 2 * len(_chunks_of(shape))) if packed else not fields[4] + fields[2], text
        fields.clear()


def _chunks_of(shape: xs.Shape) -> list[tuple[int, int]]:
    """The slab chunks a conversion of ``shape`` goes through."""
    cut = _chunks.slabs(shape, xs.layout.element_bits(shape.element_type, shape.layout))
    assert cut is not None
    return list(cut.chunks(_slabbed.CHUNK_BYTES))


def test_2d_transposes_with_sides_of_64_words_and_up_are_staged(compiled_everywhere: Counter[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # bytes from 64 on (as 2-byte words of two rows), wider words from 128 on; destination rows back to back and
    # no longer than a block's: from 64 on the line grid, from 32 off it; shorter sides: the walk's blocks (staged,
    # or moved straight from the source onto rows on the line grid: the two kernels counted together)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    walk = _dispatch.walker()
    staged = Counter[int]()
    monkeypatch.setattr(walk, "staged_transpose", _counting(walk.staged_transpose, staged))
    monkeypatch.setattr(walk, "direct_transpose", _counting(walk.direct_transpose, staged))
    for text, expect in (("s8[64,300]{0,1}", 2), ("s8[63,600]{0,1}", 1), ("s8[31,300]{0,1}", 0),
                         ("bf16[128,130]{0,1}", 2), ("f32[127,300]{0,1}", 1), ("f32[48,900]{0,1}", 0),
                         ("f32[64,900]{0,1}", 1)):
        shape = xs.parse_shape(text)
        x = random_array(str(shape.element_type), shape.dimensions, 7)
        buffer = to_physical(x, shape)
        assert np.array_equal(buffer, numpy_path(to_physical, x, shape)), text
        assert same_bits(from_physical(buffer, shape), x), text
        assert sum(staged.values()) == expect, text
        staged.clear()


TILED_SQUARES = [
    ("bf16[256,512]{0,1:T(8,128)}", "{1,0:T(8,128)}", True),
    ("u16[256,512]{0,1:T(4,64)}", "{1,0:T(4,64)}", True),
    ("u16[256,512]{1,0:T(2,64)}", "{0,1:T(2,64)}", True),
    ("f32[256,256]{0,1:T(2,128)}", "{1,0:T(2,128)}", True),
    ("u8[256,512]{0,1:T(4,128)}", "{1,0:T(4,128)}", True),
    ("u8[256,512]{0,1:T(2,64)}", "{1,0:T(2,64)}", True),
    ("bf16[2,256,512]{1,2,0:T(8,128)}", "{2,1,0:T(8,128)}", True),  # (a batch dim outside the tiles)
    ("u8[256,512]{0,1:T(8,128)}", "{1,0:T(8,128)}", True),  # (bytes: a square's source lines gathered first)
    ("bf16[256,512]{0,1:T(1,128)}", "{1,0:T(8,128)}", False),  # (rows one at a time on one side: the walk)
    ("bf16[200,300]{0,1:T(8,128)}", "{1,0:T(8,128)}", True),  # (tiles cut short: the box of whole ones so)
]


@pytest.mark.parametrize(("text", "target", "taken"), TILED_SQUARES)
@pytest.mark.parametrize("offset", [0, 16])
def test_relayouts_between_tiled_transposes_go_a_square_of_tiles_rows_at_a_time(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, target: str, taken: bool,
        offset: int) -> None:
    # blocks of 2 to 8 rows each way (tile rows of a tiled transpose and of its transpose): squares of one line a
    # side whose rows come in groups on both sides, on two threads; the NumPy path's bytes, into an out= on a line
    # or 16 bytes past one (whose rows then go through the walk instead)
    shape = xs.parse_shape(text)
    other = xs.parse_shape(text[: text.index("{")] + target)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    seen: list[bool] = []
    original = _copy._tile_squares
    monkeypatch.setattr(_copy, "_tile_squares", lambda *args: (seen.append(done := original(*args)), done)[1])
    x = random_array(str(shape.element_type), shape.dimensions, 11)
    buffer = numpy_path(to_physical, x, shape)
    seen.clear()
    out = off_the_grid(other.byte_size(), offset)
    relayout(buffer, shape, other, out=out, threads=2)
    assert np.array_equal(out, numpy_path(to_physical, x, other))
    assert any(seen) == taken, seen


@FAST
@given(st.sampled_from([("u8", 1), ("bf16", 2), ("f32", 4)]), st.data())
def test_relayouts_between_tiled_transposes_equal_numpy_path(kind: tuple[str, int], data: st.DataObject) -> None:
    # any two tiled layouts whose tiles are transposed against each other (rows of 2 to 16, any dims, tiles cut
    # short or not, a batch dim or none): the NumPy path's bytes, whichever way they go
    etype, width = kind
    rows = [data.draw(st.sampled_from([2, 4, 8, 16])) for _ in range(2)]
    cols = [data.draw(st.sampled_from([32, 64, 128])) // width * 2 for _ in range(2)]
    dims = [data.draw(st.integers(1, 3)) * c * data.draw(st.sampled_from([1, 2])) for c in cols]
    dims = [n + data.draw(st.sampled_from([0, 0, 3])) for n in dims]
    batch = data.draw(st.sampled_from([[], [2]]))
    shape = xs.make_shape(etype, [*batch, *dims], minor_to_major=[len(batch), len(batch) + 1, *range(len(batch))],
                          tiles=[(rows[0], cols[0])])
    other = xs.make_shape(etype, [*batch, *dims], minor_to_major=[len(batch) + 1, len(batch), *range(len(batch))],
                          tiles=[(rows[1], cols[1])])
    x = random_array(etype, tuple(shape.dimensions), sum(dims))
    buffer = numpy_path(to_physical, x, shape)
    with compiled_at_any_size():
        assert np.array_equal(relayout(buffer, shape, other), numpy_path(to_physical, x, other))


# ----- odd (p,1)-grouped logical minor dims, through the widened array -----------------------------------------
WIDENED = ["bf16[5,300,7]{0,2,1:T(8,128)(2,1)}", "f16[7,9,13]{0,2,1:T(8,128)(2,1)}",
           "pred[3,200,5]{0,2,1:T(8,128)(4,1)}", "pred[2,30,682]{1,2,0:T(8,128)(4,1)}",
           "u8[4,6,3,10,7]{1,4,2,0,3:T(8,128)(4,1)}", "s8[3,4,200,6]{2,3,0,1:T(32,128)(4,1)}",
           "u8[3,20,2049]{0,2,1:T(8,128)(4,1)}", "s4[4,30,7]{0,2,1:T(8,128)(2,1)E(4)}",
           "u2[3,5,9,6]{1,3,2,0:T(8,128)(4,1)E(2)}", "s4[2,3,2049]{0,2,1:T(8,128)(2,1)E(4)}"]


@pytest.mark.parametrize("text", WIDENED)
@pytest.mark.parametrize("chunk", [1 << 20, 600, 0])
def test_odd_sub_tiled_minor_dims_go_through_the_widened_array(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, chunk: int) -> None:
    # the logical minor dim is the tiles' rows, which (p,1) sub-tiles group, and p does not divide it
    # (bf16[500,4793,7]{0,2,1:T(8,128)(2,1)}: pairs 14 bytes apart, half of them off the word grid, 17x memcpy read
    # back): the same layout on the dim widened to its padded extent has the same bytes, its pairs whole words; a
    # chunk of slabs at a time (600 bytes: a slab or so each; 0: no slabs, the whole array at once), both directions
    # the NumPy path's bytes, the padding value too
    if chunk:
        monkeypatch.setattr(_widened, "CHUNK_BYTES", chunk)
    else:
        monkeypatch.setattr(_widened, "slabs", lambda shape, bits: None)
    taken: list[bool] = []
    real = _widened._through
    monkeypatch.setattr(_widened, "_through", lambda *args: taken.append(real(*args)) or taken[-1])
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 1 << 62)  # (small arrays here: the rule's route, not timed)
    count_calls(monkeypatch, _dispatch.walker(), ["padded_rows", "cut_rows"], compiled_everywhere,
                lambda name, args: "")
    shape = shape_of(text)
    assert _widened.widened(_geometry(shape)) is not None
    x = random_array(str(shape.element_type), shape.dimensions, len(text) + chunk)
    round_trip_off_the_grid(x, shape, 16)
    long = shape.dimensions[-1] >= _widened.LONG_ROWS  # (long rows: the direct route first, whole words already;
    # E(n) fields read back the widened array first all the same)
    packed = _geometry(shape).packed
    assert taken == ([True] if long and packed else [] if long else [True, True]), text  # (laid out, read back)
    # (the rows widened and cut back by kernels of their own: rows of words, the added elements' padding put in)
    assert (compiled_everywhere["padded_rows"] > 0 and compiled_everywhere["cut_rows"] > 0) == (not long), text
    value = True if shape.element_type.kind == "pred" else 3
    expected = numpy_path(to_physical, x, shape, padding_value=value)
    assert np.array_equal(to_physical(x, shape, padding_value=value), expected), text


def forced_plan(monkeypatch: pytest.MonkeyPatch, route: str, pick: int) -> list[Any]:
    """Every copy large enough to be timed, each choice of ``route`` (a key's first field) taking plan ``pick`` and
    every other choice its first plan; the keys of ``route``'s choices, in the list returned."""
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    keys: list[Any] = []

    def forced(key: Any, plans: Any) -> bool:
        if key[0] == route:
            keys.append(key)
            return bool(plans[pick]())
        return bool(plans[0]())

    monkeypatch.setattr(_tuned, "run_fastest", forced)
    return keys


@pytest.mark.parametrize("pick", [0, 1])
@pytest.mark.parametrize("text", ["f16[200,300]{0,1:T(8,128)(2,1)}", "u8[100,700]{0,1:T(8,128)(4,1)}"])
def test_large_conversions_time_the_padding_kernel_beside_a_whole_pass(compiled_everywhere: Counter[str],
                                                                       monkeypatch: pytest.MonkeyPatch, pick: int,
                                                                       text: str) -> None:
    # the padding's runs by the kernel beat a pass over the whole buffer on some layouts and lost on others (the copy
    # then writes the lines they share: pred [100,335544]{0,1:T(8,128)(4,1)} 'to' 5.4 -> 6.6 ms): a large
    # conversion times both; either gives the same bytes, whatever the buffer held
    keys = forced_plan(monkeypatch, "padding", pick)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, pick)
    expected = numpy_path(to_physical, x, shape, padding_value=3)
    out = np.full(len(expected), 0xAB, np.uint8)
    assert np.array_equal(to_physical(x, shape, out=out, padding_value=3), expected), text
    assert [key[1] for key in keys] == [shape]


def guarded(n: int) -> np.ndarray[Any, Any]:
    """``n`` bytes whose last one is the last byte before a page that cannot be read (a read past them faults)."""
    import ctypes
    import mmap

    page = mmap.PAGESIZE
    size = -(-n // page) * page + page
    area = mmap.mmap(-1, size)
    room = np.frombuffer(area, np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(room.ctypes.data + size - page, page, 0) != 0:  # (PROT_NONE)
        pytest.skip("mprotect is not available")
    return room[size - page - n : size - page]


@pytest.mark.skipif(sys.platform != "linux", reason="a guard page by mprotect")
@pytest.mark.parametrize(("length", "pitch", "dtype"), [(1, 8, np.uint8), (5, 8, np.uint8), (3, 8, np.uint16),
                                                         (7, 16, np.uint8)])
def test_rows_moved_as_words_never_read_past_their_arrays(compiled_everywhere: Counter[str], length: int,
                                                           pitch: int, dtype: Any) -> None:
    # the row kernels read each short row as the words that hold it, past its last element: never past the last
    # byte of the array (rows of 1 byte in slots of 8: the row before the last one would read 6 bytes past it)
    width = np.dtype(dtype).itemsize
    rows = 3000
    source = guarded(rows * length * width).view(dtype).reshape(rows, length)
    source[...] = np.arange(rows * length).reshape(rows, length) % 200
    wide = np.full((rows, pitch), 0xEE, dtype)
    assert padded_rows(wide[:, :length], source.reshape(30, 100, length), pitch, np.array([7], dtype),
                       _dispatch.Run(0, 1, numba_bytes=0))
    expected = np.full((rows, pitch), 7, dtype)
    expected[:, :length] = source
    assert np.array_equal(wide, expected)
    back = guarded(rows * length * width).view(dtype).reshape(rows, length)
    last = guarded(rows * pitch * width).view(dtype).reshape(rows, pitch)  # (the slots' last one whole in memory)
    last[...] = wide
    assert cut_rows(back, last[:, :length], _dispatch.Run(0, 1, numba_bytes=0))
    assert np.array_equal(back, source)


@pytest.mark.parametrize("text", [
    "bf16[5,300,8]{0,2,1:T(8,128)(2,1)}",  # (p divides the minor dim: pairs are words already)
    "bf16[300,7]{0,1:T(8,128)(2,1)}",  # (rank 2: slabs of the transposed array, _transposed)
    "bf16[5,7,300]{1,2,0:T(8,128)(2,1)}",  # (the minor dim is the tiles' columns)
    "f32[5,300,7]{0,2,1:T(8,128)}",  # (no sub-tiles)
    "s4[5,300,7]{0,2,1:T(8,128)(2,1)E(4)}",  # (E(4) fields, pairs of rows of 7: taken, widened to 8)
    "u8[5,300,7]{0,2,1:T(8,128)(2,1)}",  # (pairs of rows of 7: taken, widened to 8)
    "s4[5,300,8]{0,2,1:T(8,128)(2,1)E(4)}",  # (rows a whole number of pairs)
])
def test_the_widened_route_takes_only_odd_grouped_minor_dims(text: str) -> None:
    found = _widened.widened(_geometry(shape_of(text)))
    taken = {"s4[5,300,7]{0,2,1:T(8,128)(2,1)E(4)}", "u8[5,300,7]{0,2,1:T(8,128)(2,1)}"}
    assert (found is not None) == (text in taken), text
    if found is not None:
        assert found.dims == (5, 300, 8) and found.nbytes == _geometry(shape_of(text)).nbytes


@settings(FAST, max_examples=examples(30))
@given(st.sampled_from([("bf16", 2, 8), ("f16", 2, 16), ("s8", 4, 32), ("u8", 4, 8), ("pred", 4, 8), ("s4", 2, 8),
                        ("u4", 4, 8), ("u2", 4, 8)]),
       st.lists(st.integers(1, 12), min_size=1, max_size=3), st.integers(1, 40), st.integers(0, 2**32 - 1),
       st.data())
def test_widened_conversions_give_the_numpy_paths_bytes(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, kind: tuple[str, int, int],
        outer: list[int], minor: int, seed: int, data: st.DataObject) -> None:
    # any rank 3-5 layout whose tiles' rows are the logical minor dim, grouped (p,1), any chunk size, E(n) fields
    # packed or not
    name, group, rows = kind
    monkeypatch.setattr(_widened, "CHUNK_BYTES", data.draw(st.sampled_from([1, 500, 1 << 20])))
    dims = [*outer, data.draw(st.integers(1, 300)), minor]
    rank = len(dims)
    columns = data.draw(st.sampled_from([k for k in range(rank - 1)]))
    rest = data.draw(st.permutations([k for k in range(rank - 1) if k != columns]))
    order = ",".join(map(str, [columns, rank - 1, *rest]))
    fields = {"s4": "E(4)", "u4": "E(4)", "u2": "E(2)"}.get(name, "")  # (sub-byte types packed too)
    text = f"{name}[{','.join(map(str, dims))}]{{{order}:T({rows},128)({group},1){fields}}}"
    shape = xs.parse_shape(text)
    x = random_array(name, shape.dimensions, seed)
    round_trip_off_the_grid(x, shape, seed % 64)


@pytest.mark.parametrize("pick", [0, 1])
def test_large_widened_conversions_time_the_widened_array_beside_the_direct_route(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, pick: int) -> None:
    # the widened array lost to the direct route where that moves whole words already (long minor dims: the word
    # classes of _copy); so a large conversion times both, each giving the same bytes
    keys = forced_plan(monkeypatch, "widened", pick)
    shape = shape_of("bf16[5,300,7]{0,2,1:T(8,128)(2,1)}")
    x = random_array("bf16", shape.dimensions, pick)
    round_trip_off_the_grid(x, shape, 8)
    assert [(key[2], len(key)) for key in keys] == [(True, 6), (False, 6)]  # (laid out, read back)


# ----- rows of a few channels and planes in another order: two passes --------------------------------------------
@pytest.mark.parametrize("text", ["f16[3000,3,5]{0,1,2}", "pred[3,2,20000]{0,1,2}", "u8[9000,3,4]{0,1,2}",
                                  "bf16[4000,2,2,2]{0,1,2,3}", "s16[4,3,20000]{0,1,2}"])
@pytest.mark.parametrize("chunk", [1 << 20, 1000])
def test_channels_and_planes_in_another_order_go_in_two_passes(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, chunk: int) -> None:
    # rows of a few channels (one run each) and planes of them in another order (f16[1118481,3,5]{0,1,2}: plane
    # (k, j) of channel (j, k); the walk took 5 channels of 15 at a time, 7.4x memcpy): channels to planes in the
    # rows' order through a buffer, then the planes moved whole (or the reverse), a chunk of the planes at a time
    monkeypatch.setattr(_passes, "CHUNK_BYTES", chunk)
    passes: list[int] = []
    real = _passes.Planes.__call__
    monkeypatch.setattr(_passes.Planes, "__call__", lambda self: passes.append(1) or real(self))
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, chunk)
    round_trip_off_the_grid(x, shape, 16)
    assert len(passes) >= 2, text  # (laid out and read back: the rule's plan, rows under FIRST_ROW_BYTES)


@pytest.mark.parametrize("text", ["u8[8,8,4096]{0,1,2}", "s32[4,3,20000]{0,1,2}"])
def test_longer_rows_of_channels_time_the_passes_after_the_walks_plans(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # rows of 32 bytes and more: the walk was faster as often as not (u8[8,8,524288]{0,1,2} read back 1.8x memcpy
    # against 6.9x through the passes); so the passes are its last timed plan, the walk its first
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    offered: list[list[Any]] = []
    monkeypatch.setattr(_tuned, "run_fastest", lambda key, plans: (
        offered.append(list(plans)) if key[0] == "walk" else None, plans[0]())[1])
    shape = shape_of(text)
    round_trip_off_the_grid(random_array(str(shape.element_type), shape.dimensions, 5), shape, 0)
    assert offered and all(isinstance(plans[-1], _passes.Planes) for plans in offered), text
    assert not any(isinstance(plans[0], _passes.Planes) for plans in offered), text


@pytest.mark.parametrize("text", ["f32[4096,8]{0,1}", "u8[16,8192]{0,1}", "f16[3000,3,5]{2,0,1}"])
def test_channels_whose_planes_keep_their_order_are_one_transpose(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # the planes in the rows' channel order (or no planes at all): the walk's own 2-d transpose, no passes (else its
    # second pass would be the same copy again)
    passes: list[int] = []
    monkeypatch.setattr(_passes.Planes, "__call__", lambda self: bool(passes.append(1)))
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_tuned, "run_fastest", lambda key, plans: all(plan() for plan in plans))
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    to_physical(x, shape)
    assert not passes, text


def test_the_passes_time_their_slabs_under_one_key_through_one_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    # slabs of one copy at other offsets in their pages took a key each (bf16[4,32768,2048]{0,1,2} laid out: 128
    # keys, each taking its plans in turn on the same five calls, 13-18x memcpy), and a buffer new each call (at
    # another offset) made new keys call after call: the slabs' keys leave out page offsets, the buffer is the kept one
    monkeypatch.setattr(_passes, "CHUNK_BYTES", 1000)
    rows = np.random.default_rng(5).integers(0, 255, (20000, 2, 3), np.uint8)
    planes = np.ascontiguousarray(rows.transpose(2, 1, 0))
    target = np.zeros_like(planes)
    d, s = _copy._normalized(target.transpose(2, 1, 0), rows)
    shape, d_steps, s_steps, unit = _copy._walk_order(d, s, 1)
    seen: list[tuple[int, int, int]] = []

    def copy(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], run: Any) -> None:
        address = _dispatch.address(a)
        seen.append((_tuned.page_offset(address), _tuned.page_offset(_dispatch.address(b)), address))
        np.copyto(a, b)

    plan = _passes.channel_passes(d, s, shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, None, copy)
    assert plan is not None and plan() and plan()
    assert np.array_equal(target, planes)
    assert len(seen) >= 40 and {offsets[:2] for offsets in seen} == {(0, 0)}
    buffers = {address for k, (_, _, address) in enumerate(seen) if k % 2 == 0}  # (each slab's first copy: into it)
    assert len(buffers) == 1 and buffers.pop() % LINE == 0
    assert _tuned.page_offset(4096 + 80) == 80  # (past the passes, offsets again)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.integers(2, 5), min_size=2, max_size=3), st.integers(2, 300), st.integers(0, 2**32 - 1),
       st.booleans(), st.data())
def test_channel_passes_move_every_element_where_the_copy_does(
        grid: list[int], length: int, seed: int, to: bool, data: st.DataObject) -> None:
    # any grid of channels, any order of its planes, either direction: the two passes' bytes are the copy's
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 255, (length, *grid), np.uint8)
    order = data.draw(st.permutations(range(1, len(grid) + 1)))
    planes = np.ascontiguousarray(rows.transpose(*order, 0))
    inverse = np.argsort([*order, 0])
    target = np.zeros_like(planes if to else rows)
    d = target.transpose(inverse) if to else target
    s = rows if to else planes.transpose(inverse)
    d, s = _copy._normalized(d, s)  # (as the walk takes them)
    shape, d_steps, s_steps, unit = _copy._walk_order(d, s, 1)
    plan = _passes.channel_passes(d, s, shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, None,
                                  lambda a, b, run: np.copyto(a, b))
    kept = list(order) == list(range(1, len(grid) + 1))  # (planes in the rows' order: none, nor of too many)
    if not kept and math.prod(grid) <= _passes.MOST_CHANNELS:
        assert plan is not None
    if kept and length > math.prod(grid):  # (shorter, the planes may be taken for rows the other way round)
        assert plan is None
    if plan is not None:
        assert plan()
        assert np.array_equal(target, planes if to else rows)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.integers(2, 4), min_size=1, max_size=3), st.integers(2, 40), st.integers(2, 40),
       st.integers(0, 2**32 - 1), st.booleans(), st.data())
def test_channel_passes_with_planes_of_two_axes_move_every_element_where_the_copy_does(
        grid: list[int], high: int, wide: int, seed: int, to: bool, data: st.DataObject) -> None:
    # planes of two axes (a tiled plane's rows and columns, say), in either order, the channels in any order:
    # through the buffer of planes in the rows' order, the copy's bytes
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 255, (high, wide, *grid), np.uint8)
    channels = data.draw(st.permutations(range(2, len(grid) + 2)))
    plane = data.draw(st.permutations([0, 1]))
    order = [*channels, *plane]
    planes = np.ascontiguousarray(rows.transpose(order))
    inverse = np.argsort(order)
    target = np.zeros_like(planes if to else rows)
    d = target.transpose(inverse) if to else target
    s = rows if to else planes.transpose(inverse)
    d, s = _copy._normalized(d, s)
    shape, d_steps, s_steps, unit = _copy._walk_order(d, s, 1)
    plan = _passes.channel_passes(d, s, shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, None,
                                  lambda a, b, run: np.copyto(a, b))
    moved = list(channels) != sorted(channels) or list(plane) != [0, 1]
    if moved and math.prod(grid) <= _passes.MOST_CHANNELS and high * wide > 64:
        assert plan is not None
    if plan is not None:
        saved = _passes.CHUNK_BYTES  # (chunks cut on either plane axis, or none)
        _passes.CHUNK_BYTES = data.draw(st.sampled_from([1, 100, 1 << 22]))
        try:
            assert plan()
        finally:
            _passes.CHUNK_BYTES = saved
        assert np.array_equal(target, planes if to else rows)


GUARDED = """
import ctypes, mmap, os, sys
import numpy as np
import xlashapes as xs
from xlashapes.physical import _dispatch, _tuned
_dispatch.NUMBA_BYTES = _dispatch.FIRST_NUMBA_BYTES = _dispatch.STREAM_BYTES = 0
_tuned.TUNE_BYTES = 1 << 62
libc, kept = ctypes.CDLL(None), []

def guarded(values):
    # a copy of values whose last byte ends a page that a page no one may read follows
    page = mmap.PAGESIZE
    size = -(-values.nbytes // page) * page + page
    room = mmap.mmap(-1, size)
    whole = np.frombuffer(room, np.uint8)
    assert libc.mprotect(ctypes.c_void_p(whole.ctypes.data + size - page), page, 0) == 0
    kept.append((room, whole))
    copy = whole[size - page - values.nbytes : size - page].view(values.dtype).reshape(values.shape)
    copy[...] = values
    return copy

for text in sys.argv[1:]:
    shape = xs.parse_shape(text)
    x = np.random.default_rng(len(text)).integers(0, 100, shape.dimensions).astype(shape.element_type.numpy_dtype)
    os.environ["XLASHAPES_NO_NUMBA"] = "1"
    expected = xs.to_physical(x, shape)
    del os.environ["XLASHAPES_NO_NUMBA"]
    assert np.array_equal(xs.to_physical(guarded(x), shape), expected), text
    assert np.array_equal(xs.from_physical(guarded(expected), shape), x), text
    print("ok", text, flush=True)
"""


def test_kernels_read_nothing_past_the_source(tmp_path: Path) -> None:
    # each source ends where a page no one may read begins: a kernel reading past its source's last element (as
    # whole squares of 16 rows over blocks of 9 to 15 do within the block's own span) would crash the process
    if _dispatch.walker() is None:
        pytest.skip("numba is not installed")
    texts = ["u8[12,3001]{0,1}", "bf16[13,700]{0,1}", "u8[9,1500]{0,1}", "f32[12,773]{0,1}", "u8[15,1100]{0,1}",
             "u8[3,12,1100]{1,2,0}", "u8[2048,3,12]{1,2,0}", "s8[100,5,48]{1,2,0}", "u8[40,1027]{0,1}",
             "bf16[64,300]{1,0:T(8,128)(2,1)}", "f16[11,2,700]{0,2,1}", "u8[7,300,200]{1,0,2:T(8,128)(4,1)}",
             "s4[100,3000]{0,1:E(4)}", "u2[200,4000]{0,1:E(2)}"]
    done = subprocess.run([sys.executable, "-c", GUARDED, *texts], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split().count("ok") == len(texts), done.stdout


@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("text", ["f32[40,512]{1,0:T(8,128)}", "f32[10,8,256]{2,1,0:T(8,128)}",
                                  "f32[16,4,384]{2,1,0:T(4,128)}", "s32[24,2,3,256]{3,2,1,0:T(2,128)}"])
def test_large_walks_of_runs_time_the_destination_order(compiled_everywhere: Counter[str],
                                                         monkeypatch: pytest.MonkeyPatch, last: bool,
                                                         text: str) -> None:
    # the runs of a walk in source order write a tile's rows at once, in destination order one row at a time: which
    # is faster depends on the machine (f32 T(8,128) 'from', 512 MiB, 1.44 -> 1.10x memcpy on an Intel Xeon), so a
    # large walk times both; either gives the same bytes both ways
    counts: list[int] = []

    def forced(key: Any, plans: Any) -> bool:
        if key[0] == "walk":
            counts.append(len(plans))
            return bool(plans[-1 if last else 0]())
        return bool(plans[0]())

    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_tuned, "run_fastest", forced)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    expected = numpy_path(to_physical, x, shape)
    assert np.array_equal(to_physical(x, shape), expected), text
    assert same_bits(from_physical(expected, shape), x), text
    assert counts and all(count == 2 for count in counts), counts


@pytest.mark.parametrize("pick", [0, 1])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("text", "direct"), [
    ("s8[24,640]{1,0:T(8,128)(4,1)}", True), ("s8[20,640]{1,0:T(8,128)(4,1)}", True),  # (20: a strip cut short)
    ("bf16[3,16,384]{2,1,0:T(8,128)(2,1)}", True), ("pred[16,640]{1,0:T(8,128)(4,1)}", True),
    ("f8e4m3fn[2,16,640]{2,1,0:T(16,128)(4,1)}", True), ("u8[4,3,32,768]{3,2,0,1:T(8,128)(4,1)}", True),
    ("bf16[16,320]{1,0:T(8,128)(2,1)}", False), ("s8[64,512]{1,0:T(8,128)(4,1)}", False)])  # (512: rows joined)
def test_large_tiled_reads_time_whole_tiles_streamed_row_by_row(compiled_everywhere: Counter[str],
                                                                 monkeypatch: pytest.MonkeyPatch, pick: int,
                                                                 threads: int, text: str, direct: bool) -> None:
    # a tiled layout read back by whole strips, each tile's rows split in the first level and each row's piece
    # streamed out whole (s8 T(8,128)(4,1) 'from', 512 MiB, 1.87 -> 1.33x memcpy on an Intel Xeon; pred made 0/1 on
    # the way out), or by rows staged for several tiles: timed where the tiles are whole and the rows on lines; either
    # gives the NumPy path's bytes, whatever the buffer held (pred bytes of any value read back 0/1); rows of a
    # line's multiple up to 512 bytes are joined into one stream instead
    keys = forced_plan(monkeypatch, "tiles read", pick)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    shape = xs.parse_shape(text)
    noise = np.random.default_rng(pick).integers(0, 256, size=shape.byte_size(), dtype=np.uint8)
    expected = numpy_path(from_physical, noise, shape)
    got = from_physical(noise, shape, threads=threads)  # (allocated on a line)
    assert np.array_equal(got.view(np.uint8), expected.view(np.uint8)), text
    assert bool(keys) == direct, (text, keys)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 8, 40])
@pytest.mark.parametrize("text", ["f32[40,100]{1,0:T(8,128)}", "s8[200,100]{1,0:T(8,128)}",
                                  "f32[64,5]{1,0:T(8,128)}", "bf16[3,24,20]{2,1,0:T(8,128)}",
                                  "u8[3,50,70]{2,1,0:T(2,128)}", "u8[30,120]{1,0:T(8,128)}"])
def test_runs_back_to_back_gathered_into_whole_lines(compiled_everywhere: Counter[str],
                                                      monkeypatch: pytest.MonkeyPatch, threads: int, offset: int,
                                                      text: str) -> None:
    # runs that lie back to back in the destination and are not whole lines (f32 rows of 100 read back from T(8,128)
    # tiles) are stored plainly, each partial line read first, or written in whole lines, streamed (512 MiB, 1.59 ->
    # 0.99x memcpy of the tiles on an Intel Xeon): runs of a line or more each line straight from the runs it holds,
    # shorter ones gathered a batch at a time through the scratch; a large walk times both plans; the lines' plan
    # gives the NumPy path's bytes whatever the destination's offset in its line, run length (short runs as words)
    # and thread split, and leaves the bytes around the destination alone
    offered: list[int] = []

    def forced(key: Any, plans: Any) -> bool:
        gathered = [plan for plan in plans  # (the walk's plan in whole lines: its last argument, stream, 2)
                    if isinstance(plan, partial) and plan.func is _copy._walked and plan.args[-1] == 2]
        if key[0] == "walk":
            offered.append(len(gathered))
        return bool((gathered or plans)[0]())

    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_tuned, "run_fastest", forced)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    shape = xs.parse_shape(text)
    data = np.random.default_rng(offset).integers(0, 256, size=shape.byte_size(), dtype=np.uint8)
    expected = numpy_path(from_physical, data, shape)
    room = np.full(expected.nbytes + 2 * LINE + offset, 0xA5, np.uint8)
    start = (-room.ctypes.data) % LINE + offset
    out = room[start : start + expected.nbytes].view(expected.dtype).reshape(expected.shape)
    from_physical(data, shape, out=out, threads=threads)
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8)), text
    assert (room[:start] == 0xA5).all() and (room[start + expected.nbytes :] == 0xA5).all(), text
    assert offered and max(offered) == 1, offered


def test_tiles_cut_short_take_padded_rows_only_for_a_mib_of_rows_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # the rows of the tiles that cut a dim short, in boxes of more than 3 dims, take a padded_rows call for each
    # outer index: where those calls would average under NUMBA_BYTES each (s32 [24,87,8,500]{3,1,0,2:T(8,128)}, 384
    # calls of ~16 KiB: 2.3x memcpy against 1.2), the plan's boxes lay the array out instead
    calls = padded_rows_calls(monkeypatch)
    monkeypatch.setattr(_dispatch, "FIRST_NUMBA_BYTES", 0)
    for text, taken in [("s32[8,87,8,500]{3,1,0,2:T(8,128)}", False), ("bf16[8192,1000]{1,0:T(8,128)}", True)]:
        calls.clear()
        shape = xs.parse_shape(text)
        x = random_array(str(shape.element_type), shape.dimensions, 3)
        assert np.array_equal(to_physical(x, shape), numpy_path(to_physical, x, shape)), text
        assert (calls["rows"] > 0) == taken, (text, calls)


@pytest.mark.parametrize("text", ["f32[64,1024]{1,0:T(128)}", "u8[5,999]{1,0}", "bf16[3,4000]{1,0:T(4000)}"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_walk_of_one_run_goes_over_the_threads_in_pieces_of_whole_lines(
        compiled_everywhere: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, threads: int) -> None:
    # a layout whose bytes are the logical array's is one run: it went on one thread whatever the threads asked
    # (f32 T(128) 512 MiB, two threads: 1.04x one thread's memcpy, which two threads do in 0.53)
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 4)
    expected = numpy_path(to_physical, x, shape)
    buffer = to_physical(x, shape, threads=threads)
    assert compiled_everywhere["walk"] == threads
    assert np.array_equal(buffer, expected)
    assert same_bits(from_physical(buffer, shape, threads=threads), x)
    assert compiled_everywhere["walk"] == 2 * threads


@pytest.mark.parametrize("other", [1e-4, 100.0])
def test_passes_on_trial_far_slower_on_their_first_chunk_leave_the_copy_to_the_walk(
        monkeypatch: pytest.MonkeyPatch, other: float) -> None:
    # the first chunk timed and scaled to the whole: DECISIVE times the other plan's time, the estimate is kept and
    # the fallback (the walk's own blocks) copies the whole; else the passes go on (u8 [48,11200,1024]{0,1,2} laid
    # out, 512 MiB: a trial of 5.8 s, 100x memcpy, against the walk's 95 ms)
    monkeypatch.setattr(_passes, "TRIED_BYTES", 0)
    monkeypatch.setattr(_passes, "CHUNK_BYTES", 4096)
    n = 8192
    a = np.arange(n * 3 * 2, dtype=np.uint32).astype(np.uint8).reshape(n, 3, 2)
    out = np.zeros((2, 3, n), np.uint8)
    copies: list[int] = []
    fell: list[int] = []

    def slow(d: np.ndarray, s: np.ndarray, run: Any) -> None:
        time.sleep(0.002)
        copies.append(d.size)
        np.copyto(d, s)

    def walk() -> bool:
        fell.append(1)
        np.copyto(out, a.transpose(2, 1, 0))
        return True

    plan = _passes.channel_passes(out.transpose(1, 0, 2), a.transpose(1, 2, 0), [3, 2, n], [n, 3 * n, 1],
                                  [2, 1, 6], 1, None, slow, walk)
    assert plan is not None
    _tuned.forget()
    _tuned.timed("k", 2, 0, other)  # (a key's first call: not counted)
    _tuned.timed("k", 2, 0, other)
    assert _tuned.run_fastest("k", [lambda: True, plan])
    assert np.array_equal(out, a.transpose(2, 1, 0))
    chunks = -(-n // (4096 // 6))
    if other < 1:
        assert fell == [1] and len(copies) == 2 and _tuned._TIMES["k"][1][0] >= 0.004 * out.nbytes / copies[0]
    else:
        assert fell == [] and len(copies) == 2 * chunks and _tuned._TIMES["k"][1][0] < 100
    _tuned.forget()
