"""Merged squares of a short across group padded to a side (:func:`xlashapes.physical._merged._short`): each square
reads a few elements before its source rows and writes them to its first rows, which it then writes again; the bytes
are the NumPy path's, and no byte outside the destination is touched."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes.physical import _dispatch, _merged, _tuned, from_physical, to_physical
from xlashapes.physical._kinds import side_of

pytest.importorskip("numba")

from test_physical import random_array  # tests/ is on sys.path
from test_physical_fast import compiled_for_any_size, numpy_path

FAST = settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))

WIDTHS = {"s8": 1, "u8": 1, "pred": 1, "bf16": 2, "f16": 2, "s32": 4, "f32": 4, "f64": 8, "s64": 8}


def _padded(plan: Any) -> bool:
    """Whether a timed plan is merged squares of a short across group (a source ``reach``)."""
    return isinstance(plan, partial) and plan.func is _merged._squares and plan.args[4].reach > 0


def _padded_forced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every copy timed, each walk taking its padded squares where it has them (else its first plan), every other
    choice its first plan; the reach of each padded plan taken, in the list returned."""
    compiled_for_any_size(monkeypatch)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    taken: list[int] = []

    def forced(key: Any, plans: Any) -> bool:
        padded = [plan for plan in plans if _padded(plan)] if key[0] == "walk" else []
        taken.extend(plan.args[4].reach for plan in padded)
        return all(plan() for plan in padded) if padded else bool(plans[0]())

    monkeypatch.setattr(_tuned, "run_fastest", forced)
    return taken


@st.composite
def short_run_shapes(draw: st.DrawFn) -> xs.Shape:
    """A rank-4 layout whose source-contiguous run (the logical minor dim, half a square's side or more, shorter
    than one) is shared with the destination's: the s32 ``[139,1000,5,12]{2,0,3,1}`` family, laid out."""
    etype = draw(st.sampled_from(sorted(WIDTHS)))
    n = side_of(WIDTHS[etype])
    minor = draw(st.integers(-(-n // 2), n - 1))
    dims = [draw(st.integers(2, 40)), draw(st.integers(2, 9)), draw(st.integers(2, min(7, n - 1))), minor]
    return xs.make_shape(etype, dims, layout=xs.Layout((2, 0, 3, 1)))


@FAST
@given(short_run_shapes(), st.integers(0, 2**32), st.sampled_from([1, 2]))
def test_padded_squares_give_the_numpy_paths_bytes(shape: xs.Shape, seed: int, threads: int) -> None:
    x = random_array(str(shape.element_type), shape.dimensions, seed)
    with pytest.MonkeyPatch.context() as patch:
        expected = numpy_path(patch, to_physical, x, shape)
        back = numpy_path(patch, from_physical, expected, shape)
        taken = _padded_forced(patch)
        patch.setattr(_dispatch, "THREAD_BYTES", 0)
        room = np.full(len(expected) + 128, 0xA5, np.uint8)  # (the bytes around the destination left alone)
        out = room[64 : 64 + len(expected)]
        to_physical(x, shape, out=out, threads=threads)
        assert np.array_equal(out, expected), (shape, taken)
        assert (room[:64] == 0xA5).all() and (room[-64:] == 0xA5).all(), shape
        assert np.array_equal(from_physical(out, shape).view(np.uint8), back.view(np.uint8)), shape


@pytest.mark.parametrize("text", ["s32[139,100,5,12]{2,0,3,1}", "u8[40,9,7,12]{2,0,3,1}", "bf16[30,6,5,24]{2,0,3,1}",
                                  "f64[50,30,4,6]{2,0,3,1}"])
def test_short_runs_laid_out_go_in_padded_squares(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # s32[139,1000,5,12]{2,0,3,1} laid out: runs of 12 words read, 5 written; merged, a transpose of 12 x 695 whose
    # 12 make no square of 16: it went through the walk's blocks at 3.3-5x memcpy, in squares padded to 16 1.5-1.9
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    expected = numpy_path(monkeypatch, to_physical, x, shape)
    taken = _padded_forced(monkeypatch)
    n = side_of(WIDTHS[str(shape.element_type)])
    reach = (n - shape.dimensions[-1]) * WIDTHS[str(shape.element_type)]
    assert np.array_equal(to_physical(x, shape), expected), text
    assert taken and set(taken) == {reach}, (text, taken)


def test_padded_squares_are_not_offered_where_the_source_starts_too_near_its_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # each square reads ``reach`` bytes before its source rows: where the source's first row starts fewer bytes than
    # that into its page (a memory map's first page: the page before may not be mapped), the plan is left out
    shape = xs.parse_shape("s32[139,100,5,12]{2,0,3,1}")
    x = random_array("s32", shape.dimensions, 6)
    expected = numpy_path(monkeypatch, to_physical, x, shape)
    taken = _padded_forced(monkeypatch)
    room = np.empty(x.nbytes + 2 * _tuned.PAGE, np.uint8)
    for offset, offered in ((0, False), (8, False), (16, True), (48, True)):
        start = (-_dispatch.address(room)) % _tuned.PAGE + offset
        placed = room[start : start + x.nbytes].view(np.int32).reshape(x.shape)
        placed[...] = x
        taken.clear()
        assert np.array_equal(to_physical(placed, shape), expected), offset
        assert bool(taken) == offered, (offset, taken)


def test_groups_that_make_squares_take_no_padded_ones() -> None:
    # padded squares only where the groups make none: groups that make squares, and a run under half a side,
    # get none
    assert _merged._short_routes((4096, 64), (64, 1), (1, 4096), 4) == ()  # (both groups long: no short one)
    assert [plan.reach for plan in _merged.timed_routes([2, 48, 43690, 8], [384, 8, 768, 1],
                                                        [43690, 87380, 1, 4194240], 2, 1)] == [0, 0]
    assert not _merged.timed_routes([1000, 139, 7, 5], [4865, 5, 695, 1], [35, 35000, 1, 7], 2, 4)
    assert [plan.reach for plan in _merged.timed_routes([1000, 139, 12, 5], [8340, 5, 695, 1], [60, 60000, 1, 12],
                                                        2, 4)] == [16, 16]


@pytest.mark.parametrize("text", ["s32[64,10,4,12]{2,0,3,1}", "bf16[64,10,4,24]{2,0,3,1}", "f64[64,10,4,6]{2,0,3,1}"])
def test_padded_squares_streamed_out_write_their_first_rows_right(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # destination rows of whole lines on the line grid take streaming stores: a square's first rows are streamed
    # twice, the copies' elements first, their own after (the later store to the same bytes wins)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 8)
    expected = numpy_path(monkeypatch, to_physical, x, shape)
    taken = _padded_forced(monkeypatch)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0)
    streamed: list[bool] = []
    real = _merged._squares

    def squares(kernel: Any, target: int, source: int, pad: Any, merged: Any, *rest: Any) -> bool:
        streamed.append(target % 64 == 0 and not (merged.across % 64).any() and merged.side * pad.itemsize == 64)
        return bool(real(kernel, target, source, pad, merged, *rest))

    monkeypatch.setattr(_merged, "_squares", squares)
    assert np.array_equal(to_physical(x, shape), expected), text
    assert taken and streamed and all(streamed), (text, taken, streamed)
