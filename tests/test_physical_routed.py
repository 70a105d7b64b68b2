"""The conversion without a route, timed beside it (:mod:`xlashapes.physical._trials`): on trial, an eighth of its
slabs first, and the rest or the route after that, bit for bit as on the NumPy path."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
import xlashapes.physical as physical
from profiles import examples
from xlashapes.physical import _convert, _dispatch, _trials, _tuned, _widened, from_physical, to_physical
from xlashapes.physical._chunks import slabs
from xlashapes.physical._geometry import _Geometry, _geometry

pytest.importorskip("numba")

from test_physical import random_array  # tests/ is on sys.path
from test_physical_fast import compiled_for_any_size, numpy_path
from test_physical_generic import family_shapes

FAST = settings(max_examples=examples(80), deadline=None, suppress_health_check=list(HealthCheck))  # (a third
# of the family shapes split into slabs)


def _rest_of(to: bool, convert: Any, geometry: _Geometry, run: _dispatch.Run) -> _trials.RestOf:
    """``convert`` (a step of either direction: ``_write_plan``, ``_read_plan``) as the routes take it."""
    if to:
        return partial(_convert._written, convert, physical._padding_storage(geometry, None), run)
    return partial(_convert._read, convert, run)


@FAST
@given(family_shapes(), st.integers(1, 8), st.booleans(), st.booleans(), st.integers(0, 2**32))
def test_the_conversion_without_a_route_by_slabs_is_the_whole_conversion(
        shape: xs.Shape, first: int, to: bool, outermost: bool, seed: int) -> None:
    # the trial's part and the rest after it: two conversions of slabs [0, first) and [first, outer) (their logical
    # rows strided where the slabs cut a minor logical dim), whose bytes are the whole conversion's; the rest of the
    # stacked route's choice (every route after it) or of the slabs' and bands' (the plan's boxes)
    cut = slabs(shape, _geometry(shape).bits)
    if cut is None or cut.outer < 2:
        return
    first = max(cut.step, min(cut.outer - 1, first) // cut.step * cut.step)
    if first >= cut.outer:
        return
    geometry, run = _geometry(shape), _dispatch.run_settings(1 << 40, 1)
    x = random_array(str(shape.element_type), shape.dimensions, seed)
    with pytest.MonkeyPatch.context() as patch:
        expected = numpy_path(patch, to_physical, x, shape)
        compiled_for_any_size(patch)
        if to:
            logical, data = physical._logical_storage(x, geometry), np.full(len(expected), 0xA5, np.uint8)
            rest_of = _rest_of(True, _convert._write_unstacked if outermost else _convert._write_plan, geometry, run)
        else:
            logical, data = np.zeros(x.shape, geometry.storage), expected
            rest_of = _rest_of(False, _convert._read_unstacked if outermost else _convert._read_plan, geometry, run)
        for low, high in ((0, first), (first, cut.outer)):
            _trials.rest_on(rest_of, cut, low, high, logical, data)
    if to:
        assert np.array_equal(data, expected), shape
    else:
        wanted = numpy_path(pytest.MonkeyPatch(), from_physical, expected, shape)
        assert np.array_equal(logical.view(np.uint8), wanted.view(geometry.storage).view(np.uint8)), shape


@pytest.mark.parametrize("to", [True, False])
@pytest.mark.parametrize("slower", ["rest", "route"])
def test_the_conversion_without_a_route_on_trial_stops_after_an_eighth_where_the_route_is_far_faster(
        monkeypatch: pytest.MonkeyPatch, to: bool, slower: str) -> None:
    # bf16[32768,8191]{0,1:T(8,128)(2,1)} read back without its slabs of the transposed array took one call of 1.3-1.5
    # s against their 0.14 s (26-31x memcpy) once a process: on trial, the conversion without a route converts an
    # eighth of its slabs first; where that, scaled, is DECISIVE times the route's time, that is its time and the
    # route converts the whole; else the other slabs follow and the call is its time
    compiled_for_any_size(monkeypatch)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_trials, "SAMPLED_BYTES", 0)
    monkeypatch.setattr(_tuned, "first_uses", lambda: (0.0, 0))
    _tuned.forget()
    shape = xs.parse_shape("bf16[256,127]{0,1:T(8,128)(2,1)}")  # (16 slabs of 8 rows of dim 1: 2 of them first)
    geometry, run = _geometry(shape), _dispatch.run_settings(1 << 40, 1)
    x = random_array("bf16", shape.dimensions, 3)
    expected = numpy_path(monkeypatch, to_physical, x, shape)
    storage = physical._logical_storage(x, geometry)
    pieces: list[int] = []
    routed: list[bool] = []

    def slow_rest(*args: Any) -> None:  # (its bytes by the NumPy path: no choices inside to hold the trial back)
        part: _Geometry = args[1]
        pieces.append(part.dims[1])
        time.sleep(0.05 if slower == "rest" else 0)
        if to:
            args[3][...] = numpy_path(monkeypatch, to_physical, args[0].view(x.dtype), part.shape)
        else:
            args[2][...] = numpy_path(monkeypatch, from_physical, args[0], part.shape).view(geometry.storage)

    def route() -> bool:
        routed.append(True)
        time.sleep(0.05 if slower == "route" else 0)
        if to:
            data[...] = expected
        else:
            logical[...] = storage
        return True

    rest_of = _rest_of(to, slow_rest, geometry, run)
    logical = storage if to else np.zeros_like(storage)  # (the same arrays each call: the key holds their offsets)
    data = np.zeros_like(expected) if to else expected
    for call in range(4):  # (the first untimed, the route's, the rest's trial, the one kept)
        (data if to else logical)[...] = 0
        pieces.clear()
        routed.clear()
        assert _convert._routed("slabs", route, rest_of, geometry, logical, data, run, to)
        assert np.array_equal(data, expected) if to else np.array_equal(logical, storage), call
        if call == 2:
            taken = (list(pieces), len(routed))
    (key,) = [key for key in _tuned._TIMES if key[0] == "slabs"]
    times = _tuned._TIMES[key]
    if slower == "rest":  # (its eighth: 16 of dim 1's 127 rows; then the route, kept)
        assert taken == ([16], 1) and times[1][0] >= 8 * 0.05 and _tuned.plan_for(key, 2) == 0, (taken, times)
        assert (pieces, len(routed)) == ([], 1)
    else:  # (its eighth, then the other 111 rows; kept, it converts the whole)
        assert taken == ([16, 111], 0) and _tuned.plan_for(key, 2) == 1, (taken, times)
        assert (pieces, len(routed)) == ([127], 0)
    _tuned.forget()


def test_a_conversion_without_a_route_too_small_or_unsplit_is_not_cut_on_trial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a layout under SAMPLED_BYTES, or with fewer than SAMPLE slabs, converts whole on trial
    compiled_for_any_size(monkeypatch)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_tuned, "first_uses", lambda: (0.0, 0))
    for text, sampled in (("bf16[256,127]{0,1:T(8,128)(2,1)}", 1 << 30), ("bf16[256,40]{0,1:T(8,128)(2,1)}", 0)):
        _tuned.forget()
        monkeypatch.setattr(_trials, "SAMPLED_BYTES", sampled)
        shape = xs.parse_shape(text)
        geometry, run = _geometry(shape), _dispatch.run_settings(1 << 40, 1)
        x = random_array("bf16", shape.dimensions, 4)
        expected = numpy_path(monkeypatch, to_physical, x, shape)
        pieces: list[int] = []

        def rest(*args: Any, pieces: list[int] = pieces) -> None:
            pieces.append(args[1].dims[1])
            _convert._read_plan(*args)

        logical = np.zeros(x.shape, geometry.storage)
        plan = partial(_trials.rest_tried, lambda: True, _rest_of(False, rest, geometry, run), geometry, logical,
                       expected)
        _tuned.timed("k", 2, 0, 1.0)  # (the first call, untimed; then the route's time: the bound of the trial,
        _tuned.timed("k", 2, 0, 1e-9)  # an eighth of any conversion far over it)
        assert _tuned.run_fastest("k", [lambda: True, plan])
        assert pieces == [x.shape[1]], (text, pieces)
        assert np.array_equal(logical, physical._logical_storage(x, geometry)), text
    _tuned.forget()


def test_the_conversion_without_the_widened_array_on_trial_stops_after_an_eighth(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # pred[3,97,1024,16,7]{1,4,0,2,3:T(8,128)(4,1)} read back without the widened array took 559 ms on trial against
    # its 34 (a call of 71x memcpy): the widened route's choice takes the same trial in part
    compiled_for_any_size(monkeypatch)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_trials, "SAMPLED_BYTES", 0)
    monkeypatch.setattr(_tuned, "first_uses", lambda: (0.0, 0))
    _tuned.forget()
    shape = xs.parse_shape("bf16[5,300,7]{0,2,1:T(8,128)(2,1)}")  # (300 slabs of dim 1: 37 of them first)
    geometry, run = _geometry(shape), _dispatch.run_settings(1 << 40, 1)
    x = random_array("bf16", shape.dimensions, 7)
    expected = numpy_path(monkeypatch, to_physical, x, shape)
    storage = physical._logical_storage(x, geometry)
    rows: list[int] = []

    def slow_direct(data: np.ndarray[Any, Any], part: _Geometry, result: np.ndarray[Any, Any], run: Any) -> None:
        rows.append(part.dims[1])
        time.sleep(0.05)
        _convert._read_routes(data, part, result, run)

    logical = np.zeros_like(storage)
    seen: list[list[int]] = []
    for call in range(12):  # (the widened array's plan until the choices inside it settle, then the direct route's
        logical[...] = 0  # trial: its eighth only, then dropped)
        rows.clear()
        assert _widened.widened_convert(logical, geometry, None, expected, run, False, _convert._read_physical,
                                        partial(_convert._read, slow_direct, run))
        assert np.array_equal(logical, storage), call
        seen += [list(rows)] if rows else []
    assert seen == [[37]], seen
    (key,) = [key for key in _tuned._TIMES if key[0] == "widened"]
    assert _tuned.plan_for(key, 2) == 0 and _tuned._TIMES[key][1][0] >= 8 * 0.05, _tuned._TIMES[key]
    _tuned.forget()
