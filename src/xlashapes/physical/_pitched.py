"""Copies between strided views some of whose axes step by a part of an element: rows a whole number of bytes apart,
not of elements (the 2-byte pairs of odd-length rows moved as 4-byte words, :func:`._transposed.word_shape`).

The generic walk steps in elements, so such a copy went element by element through NumPy. Merged squares
(:mod:`._merged`) hold their rows' offsets in tables of bytes and their kernels read and write at any alignment, so
they take these copies as they are, once each such axis is split so that its outer part steps by whole elements
(:func:`whole_steps`). bf16 ``[4096,8191]{0,1:T(8,128)(2,1)}``, laid out as words, 1.7 / 2.0x memcpy 'to' / 'from'
(2.9 / 2.8 through slabs of the transposed array, two passes).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import _dispatch as dispatch
from . import _merged, _tuned
from ._dispatch import Run
from ._geometry import _STORAGE


def pitched_copy(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], run: Run, streams: bool = True) -> bool:
    """The normalized copy ``d[...] = s`` where some axes step by a part of an element (rows a whole number of bytes
    apart, not of elements: 2-byte pairs of odd-length rows moved as 4-byte words), by merged squares (:mod:`._merged`,
    whose tables hold the rows' byte offsets and whose kernels read and write at any alignment), the plans timed as
    the walk's are (``streams``: whole lines of a large destination streamed); False where they cannot or without
    the kernels.

    Each such axis is split in two, its inner part the fewest indices that step by whole elements together (2 for
    rows 2 bytes off the grid of 4-byte words), so that the merged squares' outer loops step by whole elements (a
    group may take the inner part: its rows' offsets are bytes); the indices past the last whole number of those go
    by NumPy. The walk is :func:`._copy._walk_order`'s (steps in elements, parts of one where they are)."""
    width = d.itemsize
    if d.ndim < 2 or width not in (1, 2, 4, 8) or d.ndim > 32 or min(*d.strides, *s.strides) < 0:
        return False
    split = whole_steps(d, s)
    if split is None:
        return False
    (d, s), rest = split
    inner = d.ndim - 1
    d_steps, s_steps = [step / width for step in d.strides], [step / width for step in s.strides]
    unit = next((k for k in range(inner) if s_steps[k] == 1), -1)
    if d_steps[inner] != 1 or unit < 0:
        return False
    order = [*sorted((k for k in range(inner) if k != unit), key=lambda k: -s_steps[k]), unit, inner]
    shape = [int(d.shape[k]) for k in order]
    axes = shape, [d_steps[k] for k in order], [s_steps[k] for k in order]
    plans = _merged.pitched_routes(*axes, len(order) - 2, width)
    target, source = dispatch.address(d), dispatch.address(s)
    stream = int(streams and d.nbytes >= run.stream_bytes)
    pad = np.zeros(1, _STORAGE[width])[0]
    runs = _merged.merged_runs(target, source, pad, plans, d.nbytes, run, stream) if plans else []
    if not runs:
        return False
    if len(runs) == 1 or d.nbytes < _tuned.TUNE_BYTES:
        runs[0]()
    else:
        key = ("pitched", tuple(shape), tuple(axes[1]), tuple(axes[2]), width, _tuned.page_offset(target),
               _tuned.page_offset(source), run.threads, stream)
        _tuned.run_fastest(key, runs)
    for part_d, part_s in rest:
        np.copyto(part_d, part_s)
    return True


def whole_steps(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> tuple[
        tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]], list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]
] | None:
    """``(d, s)`` with each axis that steps by a part of an element on either side split in two (inner part: the
    fewest indices stepping by whole elements together), and the copies of the indices past the last whole number
    of them (for NumPy); None where no axis steps by a part of one (nothing to do here) or one is too short to split.

    >>> a = np.zeros(40, np.uint8)
    >>> (d, s), rest = whole_steps(*(as_strided(a.view(np.uint32), (5, 2), (6, 4)),) * 2)
    >>> d.shape, d.strides, [part.shape for part, _ in rest]
    ((2, 2, 2), (12, 6, 4), [(1, 2)])
    """
    width = d.itemsize
    shape: list[int] = []
    d_strides: list[int] = []
    s_strides: list[int] = []
    body: list[slice] = []
    rest: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = []
    for k, (n, ds, ss) in enumerate(zip(d.shape, d.strides, s.strides)):
        f = width // math.gcd(width, ds, ss)
        whole = n - n % f
        if f > 1 and whole == 0:
            return None
        if whole < n:  # (the indices past the last whole number of f: all of the other axes with them)
            tail = (slice(None),) * k + (slice(whole, n),)
            rest.append((d[tail], s[tail]))
        body.append(slice(0, whole))
        shape += [whole // f, f] if f > 1 else [n]
        d_strides += [ds * f, ds] if f > 1 else [ds]
        s_strides += [ss * f, ss] if f > 1 else [ss]
    if len(shape) == d.ndim:
        return None
    where = tuple(body)
    return (as_strided(d[where], shape=tuple(shape), strides=tuple(d_strides)),
            as_strided(s[where], shape=tuple(shape), strides=tuple(s_strides))), rest
