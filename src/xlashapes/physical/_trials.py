"""Conversions on trial in part: a conversion without a route, timed beside the route, converts its first slabs first.

A conversion that can take a route (slabs of the transposed array, stacked slabs, bands, the widened array) times it
against the conversion without it on a large array's calls (:mod:`._tuned`), and keeps the faster. The one without
is often the far slower (it is why the route exists), and its trial took a whole call: bf16
``[32768,8191]{0,1:T(8,128)(2,1)}`` read back without its slabs, 1.3-1.5 s against their 0.14 s (26-31x memcpy);
pred ``[3,97,1024,16,7]{1,4,0,2,3:T(8,128)(4,1)}`` read back without the widened array, 559 ms against 34. On trial,
it now converts ``1 / SAMPLE`` of the layout's slabs first (:func:`._chunks.slabs`: the bytes of a range of the
most major physical dim are the same layout on fewer logical rows), as NumPy's copy on trial does
(:func:`._copy._numpy_tried`): where that part's time, scaled to the whole, is ``DECISIVE`` times the route's, that
is its time (:func:`._tuned.estimate`) and the route converts the whole; else the other slabs follow.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _tuned
from ._chunks import Slabs, row_index, slabs
from ._copy import SAMPLE, SAMPLED_BYTES
from ._geometry import _Geometry, _geometry

RestOf = Callable[[np.ndarray[Any, Any], _Geometry, np.ndarray[Any, Any]], None]
"""A conversion without a route, on (the logical array, its geometry, the flat physical bytes) or a slab of them."""


def rest_tried(route: Callable[[], bool], rest_of: RestOf, geometry: _Geometry, logical: np.ndarray[Any, Any],
               data: np.ndarray[Any, Any]) -> bool:
    """The conversion without a route (``rest_of`` on the whole), as the timed plan beside ``route`` (True: done):
    on trial, a layout of ``SAMPLED_BYTES`` or more that splits into ``SAMPLE`` slabs or more converts the first
    ``1 / SAMPLE`` of them first, and stops there where the route is ``DECISIVE`` times faster (the module's
    docstring); else, or not on trial, the whole."""
    bound = _tuned.trial_bound()
    large = bound is not None and max(logical.nbytes, data.nbytes) >= SAMPLED_BYTES
    cut = slabs(geometry.shape, geometry.bits) if large else None
    first = cut.outer // SAMPLE // cut.step * cut.step if cut is not None else 0
    if cut is None or bound is None or first < 1:
        rest_of(logical, geometry, data)
        return True
    start = time.perf_counter()
    rest_on(rest_of, cut, 0, first, logical, data)
    whole = (time.perf_counter() - start) * cut.outer / first
    if whole >= _tuned.DECISIVE * bound and route():
        _tuned.estimate(whole)
    else:
        rest_on(rest_of, cut, first, cut.outer, logical, data)
    return True


def rest_on(rest_of: RestOf, cut: Slabs, first: int, last: int, logical: np.ndarray[Any, Any],
            data: np.ndarray[Any, Any]) -> None:
    """``rest_of`` on slabs [first, last) of ``cut``: their logical rows, their layout, their bytes."""
    start, end = cut.byte_range(first, last)
    rest_of(logical[row_index(cut.axis, *cut.rows(first, last))], _geometry(cut.piece(first, last)),
            data[start:end])
