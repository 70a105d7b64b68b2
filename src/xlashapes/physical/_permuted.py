"""Sub-tiled layouts whose logical minor dim is a short one and the most major physical dim, converted in two passes
through bands of the permuted array: its dims put in the layout's physical order (a copy of the generic kernel), then
laid out in order by the tiled kernels (or read back in order and copied out).

**Why.** The bytes of a layout are those of the array permuted into its physical order, in the same tiling in order
(``u8[100,12,5592,5]{0,2,1,3:T(8,128)(4,1)}`` holds the bytes of ``u8[5,12,5592,100]{3,2,1,0:T(8,128)(4,1)}``). Where
the logical minor dim is short (at most ``SHORT_MINOR`` bytes) and the most major one, the generic kernel reads it in
runs of a few elements, each into a plane of its own, and makes each ``(p,1)`` sub-tile's word from ``p`` of those runs
(read back, up to ``BACK_MINOR`` bytes): read back, x memcpy, that layout 16x, bf16
``[2000,100,100,2]{1,2,0,3:T(8,128)(2,1)}`` 27x, s8 ``[64,256,128,4]{1,2,0,3:T(8,128)(4,1)}`` 24x, u8
``[4,1000,1000,8]{2,1,0,3:...(4,1)}`` 13x.

**How.** A band is a range of rows of one untiled physical dim with every index of the dims outside it: one byte range
of the buffer for each such index (the tiles of the dims inside it are in order within it). With 2-d tiles and ``(2,1)``
sub-tiles, it may also be whole tile rows of the first tiled dim (rank 3: ``bf16[1000,699,24]{1,0,2:T(16,128)(2,1)}``,
whose only untiled dim is the minor one, read back 10x -> 4.5x memcpy in bands of tile rows). Each band of about
``BAND_BYTES`` is copied into a scratch array in physical order (the generic kernel, which moves whole runs of the
logical array's rows there) and each of its ranges laid out by the tiled kernels; read back, the other way round. The
depth cut is the one with the fewest ranges and the longest runs of the logical array (``_chunks.band_cost``), among
those whose runs are at least ``LEAST_RUN`` bytes and whose ranges, where there are several, ``LEAST_RANGE``. Read back,
the layouts above went 3.6, 2.8, 3.7 and 2.6. Laid out, ``(2,1)`` sub-tiles take the route (bf16 ``[2000,100,100,2]``
6.3 -> 2.8, ``[100,200,300,5]{2,0,1,3:...}`` 5.2 -> 2.9), and ``(4,1)`` ones from runs of fewer than 8 bytes that are
not one word (u8 ``[4,1000,1000,2]{2,1,0,3:...}`` 35 -> 3.8, s8 ``[500,64,100,3]{1,2,0,3:...}`` 14 -> 3.4, u8
``[100,12,5592,5]`` 9.7 -> 4.5, ``[4,1000,1000,6]`` 6.4 -> 3.6); from words or longer runs they were slower through it
(s8 ``[500,64,100,12]`` 2.8 -> 3.9, ``[64,256,128,4]`` 3.6 -> 4.1, u8 ``[4,1000,1000,8]`` 3.1 -> 5.2). Nor do layouts
whose minor dim is further in (u8 ``[12,12,128,256,7]{2,1,4,3,0:T(8,128)(4,1)}`` read back 1.2 -> 2.4 through bands: the
first pass no faster than the one of the generic kernel). Without sub-tiles the generic kernel was as fast or faster,
except where the minor dim is not a power of two bytes, and not there either at times (s32
``[1000,64,64,3]{1,2,0,3:T(8,128)}`` 1.5 / 0.9 against 2.5 / 2.3 through bands): those stay. So do reversed layouts
(:mod:`._transposed`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..shape import Shape
from ..tiling import COMBINE_DIMENSION
from . import _dispatch as dispatch
from ._chunks import band_cost
from ._copy import _copy
from ._dispatch import Run
from ._geometry import _Geometry, _geometry
from ._grouped import grouping, short_runs

BAND_BYTES = 8 << 20  # bytes of the permuted array a band holds (its scratch)
SHORT_MINOR = 16  # logical minor dims of at most this many bytes, outside the tiles, take the route (48: pred
# [100,16,436,48]{0,1,2,3:T(8,128)(4,1)} laid out 4.8 -> 8.2 through bands)
BACK_MINOR = 48  # ... read back, of at most this many (x memcpy, generic -> bands: s8 [64,256,128,24]{1,2,0,3:T(8,128)
# (4,1)} 17 -> 6.1, bf16 [400,100,100,12]{1,2,0,3:T(8,128)(2,1)} 5.5 -> 3.1, bf16 [1000,699,24]{1,0,2:T(16,128)(2,1)}
# 10 -> 4.5 (in tile rows); laid out, bf16 [1000,699,24] went 3.0 -> 5.1)
TILE_ROWS = True  # bands of whole tile rows of the first tiled dim (2-d tiles, (2,1) sub-tiles; a range per index of
# the dims outside it): with (4,1) sub-tiles read back slower (u8 [1000,1000,24]{1,0,2:T(8,128)(4,1)} 2.7 -> 4.2, 32
# bytes 2.3 -> 4.8)
MOST_RANGES = 4096  # bands of more ranges than this are not taken (a call of the tiled kernels each)
LEAST_RUN = 256  # nor bands whose runs of the logical array are shorter than this many bytes
LEAST_RANGE = 1 << 18  # nor bands of several ranges shorter than this (each range a conversion of its own: s8
# [256,4,256,8,16]{2,0,1,3,4:T(8,128)(4,1)} read back in ranges of 64 KiB, 15x memcpy against 2.8 in one pass)


@dataclass(frozen=True)
class PermutedBands:
    """The in-order shape a layout's bytes are those of (``turned``), its axes' logical dims (``order``), and the
    cut: physical ``depth`` (logical dim ``axis``), ``ranges`` byte ranges a band, ``one`` bytes a unit of ``step``
    rows of it (1; or a tile row, where the cut dim is the tile rows' of 2-d tiles), ``rows`` rows a band (a whole
    number of units)."""

    turned: Shape
    order: tuple[int, ...]
    depth: int
    axis: int
    ranges: int
    one: int
    rows: int
    step: int = 1


def permuted_bands(geometry: _Geometry, itemsize: int, to: bool = True) -> PermutedBands | None:
    """How a layout is converted in bands of its permuted array, or None where this route does not apply.

    >>> from xlashapes import parse_shape
    >>> cut = permuted_bands(_geometry(parse_shape("u8[100,12,5592,5]{0,2,1,3:T(8,128)(4,1)}")), 1)
    >>> str(cut.turned), cut.axis, cut.ranges, cut.rows
    ('u8[5,12,5592,100]{3,2,1,0:T(8,128)(4,1)}', 1, 5, 2)
    """
    layout, dims = geometry.layout, geometry.dims
    rank = len(dims)
    if rank < 3 or not layout.tiles or layout.padded_dimensions is not None:
        return None
    if layout.tail_padding_alignment_in_elements != 1 or layout.dynamic_shape_metadata_prefix_bytes:
        return None
    tiled = len(layout.tiles[0])
    if tiled >= rank or any(t == COMBINE_DIMENSION for tile in layout.tiles for t in tile):
        return None
    order = tuple(layout.major_to_minor)
    position = order.index(rank - 1)
    minor = dims[rank - 1] * itemsize
    if position > 0 or minor > (SHORT_MINOR if to else BACK_MINOR) or layout.minor_to_major == tuple(range(rank)):
        return None  # (the logical minor dim not the most major one, long enough for the generic kernel, or reversed)
    if len(layout.tiles) != 2 or layout.tiles[1] not in ((2, 1), (4, 1)):
        return None  # (without sub-tiles the generic kernel is as fast or faster, most often)
    found = grouping(geometry) if geometry.packed else None
    if found is not None and not short_runs(found, dims):
        return None  # (E(n) fields whose groups the regroup kernel makes in long runs: the byte kernels' then)
    turned = Shape(geometry.etype, tuple(dims[a] for a in order),
                   layout=replace(layout, minor_to_major=tuple(range(rank - 1, -1, -1))))
    if _geometry(turned).nbytes != geometry.nbytes:
        return None  # (defensive: not the structure assumed)
    best: tuple[int, PermutedBands] | None = None
    for depth in range(rank - tiled + (tiled == 2 and TILE_ROWS and layout.tiles[1] == (2, 1))):
        axis = order[depth]
        step = layout.tiles[0][0] if depth == rank - tiled else 1  # (rows of a unit: a tile row of 2-d tiles)
        ranges = math.prod(turned.dimensions[:depth])
        one = _geometry(replace(turned, dimensions=(1,) * depth + (step,) + turned.dimensions[depth + 1 :])).nbytes
        units = -(-turned.dimensions[depth] // step)
        if one > BAND_BYTES or ranges * units * one != geometry.nbytes:
            continue  # (a unit over the budget; or not whole ranges of bytes: defensive)
        rows = min(dims[axis], max(1, BAND_BYTES // (ranges * one)) * step)
        run = rows * math.prod(dims[axis + 1 :]) * itemsize  # (bytes of the logical array's runs a band reads)
        if ranges > MOST_RANGES or run < LEAST_RUN or (ranges > 1 and -(-rows // step) * one < LEAST_RANGE):
            continue
        cost = band_cost(dims, order, depth)
        if best is None or cost < best[0]:
            best = cost, PermutedBands(turned, order, depth, axis, ranges, one, rows, step)
    return None if best is None else best[1]


def permuted_convert(
    logical: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any] | None, data: np.ndarray[Any, Any],
    run: Run, to: bool, convert: Callable[..., None],
) -> bool:
    """:func:`._transposed.transposed_convert`'s conversion (the same arguments) a band at a time, each range of a band
    laid out or read back in order by ``convert``; False where this route is not taken."""
    if logical.nbytes < run.numba_bytes or dispatch.walker() is None:
        return False  # (the compiled kernels are not there, or the array is small)
    cut = permuted_bands(geometry, logical.itemsize, to)
    minor = logical.shape[-1] * logical.itemsize
    if cut is None or (to and geometry.layout.tiles[1] == (4, 1) and (minor >= 8 or minor == 4)):
        return False  # (laid out in (4,1) sub-tiles from runs of whole words, the generic kernel is as fast or faster)
    convert_bands(logical, cut, pad, data, to, convert, *band_runs(run, data, False))  # (the scratch is read again
    return True  # at once: not streamed; streamed, bf16 [2000,100,100,2]{1,2,0,3:T(8,128)(2,1)} 2.8 -> 3.3)


def band_runs(run: Run, data: np.ndarray[Any, Any], stream_scratch: bool) -> tuple[Run, Run]:
    """(the run for the bytes of a band's pieces, the run for its scratch array): the kernels at any size; the bytes
    streamed as a whole would be, the scratch as asked."""
    streamed = data.nbytes >= run.stream_bytes
    return (replace(run, numba_bytes=0, stream_bytes=0 if streamed else 1 << 62),
            replace(run, numba_bytes=0, stream_bytes=0 if stream_scratch else 1 << 62))


def convert_bands(
    logical: np.ndarray[Any, Any], cut: PermutedBands, pad: np.ndarray[Any, Any] | None, data: np.ndarray[Any, Any],
    to: bool, convert: Callable[..., None], pieces: Run, scratch_run: Run,
) -> None:
    """Convert band by band as ``cut`` says: the ranges' bytes with the run ``pieces``, the scratch array's copies
    (laid out: from the logical array; read back: ranges read into it) with ``scratch_run``."""
    turned, count = cut.turned.dimensions, cut.turned.dimensions[cut.depth]
    rest = turned[cut.depth + 1 :]
    room = np.empty(cut.ranges * min(cut.rows, count) * math.prod(rest), logical.dtype)
    band = -(-count // cut.step) * cut.one  # (bytes of one range of every row)
    for low in range(0, count, cut.rows):
        n = min(cut.rows, count - low)
        piece = _geometry(replace(cut.turned, dimensions=(1,) * cut.depth + (n, *rest)))
        scratch = room[: cut.ranges * n * math.prod(rest)].reshape(*turned[: cut.depth], n, *rest)
        index = [slice(None)] * logical.ndim
        index[cut.axis] = slice(low, low + n)
        part = logical[tuple(index)].transpose(cut.order)
        ranges = scratch.reshape(cut.ranges, *piece.dims)
        if to:
            _copy(scratch, part, scratch_run)
        for k in range(cut.ranges):
            start = k * band + low // cut.step * cut.one
            if to:
                convert(ranges[k], piece, pad, data[start : start + piece.nbytes], pieces)
            else:
                convert(data[start : start + piece.nbytes], piece, ranges[k], scratch_run)
        if not to:
            _copy(part, scratch, pieces)
