"""Layouts whose logical minor dim is the tiles' rows, grouped ``(p,1)`` by a sub-tile that does not divide it,
converted through that dim widened to the extent the tiles pad it to.

**Why.** In ``bf16[500,4793,7]{0,2,1:T(8,128)(2,1)}`` the logical rows (7 elements, dim 2) are the tiles' rows,
which the ``(2,1)`` sub-tiles pair into words. 7 is odd, so in the logical array the pairs sit 14 bytes apart, every
other one off the word grid: the generic kernel moved them as runs of 2 elements, and each row's 7th element (half a
word: a box of its own) one at a time: 11x memcpy laid out, 16x read back (of the larger side, 32 MiB). Rank 2
(``{0,1:...}``) goes through slabs of the transposed array (:mod:`._transposed`); this is rank 3 and up, where the
logical minor dim is the tiles' rows but not the physical major one.

**How.** The same layout on the array widened to ``[500,4793,8]`` (the minor dim at the extent the first tile pads
it to) has the same bytes: the added elements land on the tiles' padding. In the widened array the pairs are words,
16 bytes apart, and every tile is whole along that dim. So a conversion goes through a scratch array of the widened
shape, a chunk of slabs (``CHUNK_BYTES`` of the buffer) at a time:

- read back: the widened layout read into the scratch array, then its rows cut to the logical length (a copy of
  runs);
- laid out: the rows copied into the scratch array, whose added elements hold the padding value (filled once: each
  chunk's rows sit at the same places), then the widened layout laid out.

A large conversion times this beside the direct route (:mod:`._tuned`), the widened array first unless the minor
dim is long (``LONG_ROWS``). Measured (x memcpy, ~32 MiB, laid out / read back; the session's code before and after,
A/B, the same day): bf16 ``[500,4793,7]{0,2,1:T(8,128)(2,1)}`` 11.3 / 15.8 -> 5.1 / 4.6, f16
``[384,6241,7]{0,2,1:T(8,128)(2,1)}`` 12.2 / 11.1 -> 4.3 / 4.3, u8 ``[24,256,16,48,7]{1,4,2,0,3:T(8,128)(4,1)}``
15.9 / 16.5 -> 4.8 / 6.1, pred ``[128,384,682]{1,2,0:T(8,128)(4,1)}`` 4.7 / 10.5 -> 3.5 / 3.4, s8
``[100,2048,163]{1,2,0:T(8,128)(4,1)}`` 6.2 / 9.9 -> 2.4 / 3.8. Over the 33 layouts of this family in 79 survey
seeds (worst direction): over 10x 7 -> 0, over 5x 18 -> 12, median 6.6 -> 4.1, worst 16.5 -> 8.6, none 15% slower.

E(n) fields take it too (their padding fields hold the padding value's field, as the added elements do): s4
``[200,47934,7]{0,2,1:T(8,128)(2,1)E(4)}`` made its bytes of pairs three groups a row at a time, the seventh field
of each row by NumPy (:mod:`._grouped`), 16-18x memcpy both ways; widened to 8, whole rows of pairs, 5.4-6.4 laid
out, 4.3-6 read back. Read back, they take the widened array first even where the rows are long: s4
``[5,2048,6553]{1,2,0:T(8,128)(2,1)E(4)}`` 17x directly, 3.7x widened, its calls 2-4 19-34x with the direct route
first, 6-9x so; s4 ``[7,200,23967]{1,2,0:...}`` 21-37x -> 5-10x.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from ..tiling import COMBINE_DIMENSION
from . import _dispatch as dispatch
from . import _tuned
from ._chunks import Slabs, chunk_steps, slabs
from ._copy import _copy
from ._dispatch import Run
from ._geometry import _Geometry, _geometry
from ._plan import cut_rows, padded_rows
from ._trials import RestOf, rest_tried

CHUNK_BYTES = 16 << 20
"""Bytes of the scratch array one chunk of slabs takes (the widened rows of those slabs; for E(n) fields, of storage
bytes: a chunk of E(4) slabs holds half as many bytes of the buffer)."""

LONG_ROWS = 2048
"""Logical minor dims at least this long take the direct route first (then the widened array, timed), shorter ones
the widened array first: the direct route moves long rows as whole words (``_copy._word_classes``), and was faster
than the two passes on all 6 such layouts of a survey's 33 in this family (x memcpy, 32 MiB, 'to' / 'from'): s8
``[200,24,6990]{0,2,1:T(32,128)(4,1)}`` 2.0 / 1.5 against 3.1 / 2.3, u8 ``[256,12,10922]{0,2,1:T(8,128)(4,1)}`` 2.5 /
2.1 against 2.7 / 3.1; but for u8 ``[7,200,23967]{1,2,0:T(8,128)(4,1)}`` read back, 8.5 against 2.4."""

WHOLE_BYTES = 64 << 20
"""Largest widened array converted through one scratch array where its layout has no slabs (or they cut the minor
dim)."""


def widened(geometry: _Geometry) -> _Geometry | None:
    """The geometry of the same layout on the array whose logical minor dim is widened to the extent the first tile
    pads it to, where that dim is the tiles' rows, grouped ``(p,1)`` by the next tile with ``p`` not dividing it, and
    the bytes stay the same; else None.

    >>> from xlashapes import parse_shape
    >>> widened(_geometry(parse_shape("bf16[5,300,7]{0,2,1:T(8,128)(2,1)}"))).dims
    (5, 300, 8)
    >>> widened(_geometry(parse_shape("bf16[5,300,8]{0,2,1:T(8,128)(2,1)}"))) is None
    True
    """
    shape, dims = geometry.shape, geometry.dims
    layout = shape.layout_or_default()
    if len(dims) < 3 or layout.padded_dimensions is not None or len(layout.tiles) < 2:  # (E(n) fields too)
        return None
    first, second = layout.tiles[0], layout.tiles[1]
    if len(first) < 2 or len(second) < 2 or COMBINE_DIMENSION in (*first, *second):
        return None
    minor = len(dims) - 1
    if layout.minor_to_major[1] != minor or second[-1] != 1:
        return None
    rows, group, length = first[-2], second[-2], dims[minor]
    extent = -(-length // rows) * rows
    if group <= 1 or length % group == 0 or extent == length or rows % group:
        return None
    wide = _geometry(replace(shape, dimensions=(*dims[:-1], extent)))
    return wide if wide.nbytes == geometry.nbytes and wide.aligned == geometry.aligned else None


def widened_convert(
    logical: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any] | None, data: np.ndarray[Any, Any],
    run: Run, to: bool, convert: Callable[..., None], direct: RestOf,
) -> bool:
    """Lay ``logical`` out into ``data`` (``to``: ``convert(scratch, geometry, pad, bytes, run)`` lays a chunk out)
    or read it back (``convert(bytes, geometry, scratch, run)``) through the widened array (:func:`widened`), a chunk
    of slabs at a time, or by the ``direct`` route (``direct(logical, geometry, data)``, on trial in part:
    :mod:`._trials`), whichever took less time on the same conversion before (:mod:`._tuned`; the widened array
    first); False (nothing done) when the route does not apply (or the compiled kernels are not there, or the array
    is small, or its scratch array would be more than ``WHOLE_BYTES``)."""
    wide = widened(geometry)
    if wide is None or logical.nbytes < run.numba_bytes or dispatch.walker() is None:
        return False
    chunks = _chunks(wide)
    if chunks is None:
        return False
    through = partial(_through, logical, geometry.dims[-1], pad, data, run, to, convert, chunks)
    plans = [through, partial(rest_tried, through, direct, geometry, logical, data)]  # (on trial in part: _trials)
    if geometry.dims[-1] >= LONG_ROWS and (to or not geometry.packed):
        plans.reverse()  # (the direct route first; E(n) fields read back: the widened array first, whatever the rows)
    if max(logical.nbytes, data.nbytes) < _tuned.TUNE_BYTES:
        return plans[0]()
    key = ("widened", geometry.shape, to, _tuned.page_offset(dispatch.address(logical)),
           _tuned.page_offset(dispatch.address(data)), run.threads)
    return _tuned.run_fastest(key, plans)


def _through(logical: np.ndarray[Any, Any], length: int, pad: np.ndarray[Any, Any] | None,
             data: np.ndarray[Any, Any], run: Run, to: bool, convert: Callable[..., None],
             chunks: list[tuple[tuple[Any, ...], _Geometry, int, int]]) -> bool:
    """The conversion of :func:`widened_convert` through the widened array, chunk by chunk (True: done)."""
    most = max(math.prod(piece.dims) for _, piece, _, _ in chunks)
    with dispatch.temporary(most * logical.itemsize) as room:  # (new memory's pages cost a fault each, every call)
        scratch = room.view(logical.dtype)
        value = np.zeros(1, logical.dtype) if pad is None else pad.reshape(-1)[:1].astype(logical.dtype)
        # (rows widened into the scratch are not streamed: it stays in the cache for the next pass)
        kept = replace(run, stream_bytes=1 << 62)
        filled = False
        for rows, piece, start, end in chunks:
            wide_rows = scratch[: math.prod(piece.dims)].reshape(piece.dims)
            views = _row_views(wide_rows, logical[rows], length)
            if to:  # (each widened row written whole by the kernel: not in the scratch's kept bytes)
                if views is None or not padded_rows(views[0][:, :length], views[1], views[0].shape[1], value, kept):
                    if not filled:  # (the added elements hold the padding value: each chunk's rows sit at the
                        scratch[...] = value[0]  # same places)
                        filled = True
                    _copy(wide_rows[..., :length], logical[rows], run)
                convert(wide_rows, piece, pad, data[start:end], run)
            else:
                convert(data[start:end], piece, wide_rows, run)
                if views is None or not cut_rows(views[1], views[0][:, :length], run):
                    _copy(logical[rows], wide_rows[..., :length], run)
    return True


def _row_views(wide_rows: np.ndarray[Any, Any], rows: np.ndarray[Any, Any], length: int) -> tuple[
        np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The widened rows as one 2-d array, and the logical rows as a 2-d one or a 3-d one (groups of runs of rows), as
    the ``padded_rows`` and ``cut_rows`` kernels take them (:mod:`._plan`); None where the rows do not come so (the
    slabs cut an axis inside the outer ones).

    >>> [view.shape for view in _row_views(np.zeros((4, 6, 8)), np.zeros((4, 9, 5))[:, 2:8], 5)]
    [(24, 8), (4, 6, 5)]
    """
    wide, flat = wide_rows.view(), rows.view()
    try:
        wide.shape = (-1, wide_rows.shape[-1])
        flat.shape = (-1, rows.shape[-2], length) if rows.ndim > 2 else (-1, length)
    except AttributeError:  # (a view that would need a copy)
        return None
    return wide, flat


def _chunks(wide: _Geometry) -> list[tuple[tuple[Any, ...], _Geometry, int, int]] | None:
    """The chunks of ``wide``'s slabs (logical rows, geometry, byte range), ``CHUNK_BYTES`` each; one chunk of the
    whole where there are no slabs (or they cut the minor dim) but the array is at most ``WHOLE_BYTES``; else None."""
    cut: Slabs | None = slabs(wide.shape, wide.bits)
    if cut is None or cut.axis == len(wide.dims) - 1:
        if wide.count * wide.storage.itemsize > WHOLE_BYTES:
            return None
        return [((Ellipsis,), wide, 0, wide.nbytes)]
    # (E(n) fields: a byte of the buffer holds several elements, a byte of storage each in the scratch array)
    return list(chunk_steps(cut, max(1, CHUNK_BYTES * wide.bits // (8 * wide.storage.itemsize))))
