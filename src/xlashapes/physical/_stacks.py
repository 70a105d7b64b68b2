"""The compiled kernels of stacked tiled layouts (:mod:`._stacked`: tiles that do not run along the logical minor dim,
which is the innermost of the dims they are stacked along), numba.

Each takes the array a chunk at a time: one index of the other outer dims and as many whole tile rows as fit
``._stacked.STAGE_BYTES``, through a staging buffer in the cache. Laying out, the chunk's rows are first transposed
into ``stage[row][minor][column]`` (each row's columns contiguous, rows and columns padded to whole tiles), then the
tiled kernel's own code (:func:`._kernels._tiled_to_of`, called as a subroutine) lays them out as the stacked tile
rows they are; reading back, the tiles are untiled into the stage and transposed out. The transposes are the generic
walk's blocks (:mod:`._walk`): rows (de)interleaved where the minor dim's elements follow each other along the
columns, squares otherwise; columns a multiple of ``ALIASED`` bytes apart (whose runs share cache sets) go through
runs copied a line apart more.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intrinsics import _0, _1, _copy, _get, _inline, _jit, _lanes, _put, _subroutine, _width
from ._kernel_args import TiledGeometry
from ._kernels import _copy_out, _strip_offset, _tiled_to_of
from ._kinds import ALIASED, LINE, RUNS_BYTES
from ._shuffles import _deinterleave2, _deinterleave4
from ._tile_parts import _canonical
from ._walk import _rows_block, _squares_block

_tiles_to = _tiled_to_of(True, False, called=True)


@_subroutine
def _turned(dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, stream: int) -> None:
    """``dst[u*du + i] = src[u + i*si]`` for ``u < big``, ``i < small``: rows (de)interleaved where one side is 2 to
    7 (8) elements that follow each other, else squares (:mod:`._walk`'s blocks)."""
    if (si == big and 2 <= big <= 7) or (du == small and 2 <= small <= 8):
        _rows_block(dst, src, pad, big, small, du, _1, si, stream, _0)
    else:
        _squares_block(dst, src, pad, big, small, du, _1, si, stream, _0)


@_subroutine
def _untiled(dst: int, src: int, pad: Any, step: int, r_size: int, c_size: int, p: int, canon: int) -> None:
    """A whole tile at ``src`` (physical order, ``(p,1)`` sub-tiles) as ``r_size`` rows at ``dst`` (``step``
    elements apart), made canonical (``canon``: :class:`._kernel_args.TiledGeometry`)."""
    width, lanes = _width(pad), _lanes(pad)
    if p == 1:
        for r in range(r_size):
            _copy(dst + r * step * width, src + r * c_size * width, c_size * width)
    elif (p == 2 or p == 4) and c_size % lanes == 0:
        for g in range(r_size // p):
            d, s = dst + g * p * step * width, src + g * p * c_size * width
            for c in range(0, c_size, lanes):
                if p == 2:
                    _deinterleave2(d + c * width, step, s + c * 2 * width, _0, pad)
                else:
                    _deinterleave4(d + c * width, step, s + c * 4 * width, _0, pad)
    else:
        for g in range(r_size // p):
            for c in range(c_size):
                for k in range(p):
                    _put(dst + (g * p + k) * step * width, c, _get(src, (g * c_size + c) * p + k, pad))
    if canon != 0:
        for r in range(r_size):
            _canonical(dst + r * step * width, c_size * width, canon)


@_subroutine
def _fill(at: int, pad: Any, n: int) -> None:
    """``n`` padding elements from ``at``."""
    for k in range(n):
        _put(at, k, pad)


@_inline
def _run_step(n: int, width: int) -> int:
    """Bytes from one column's run of ``n`` elements to the next in a runs buffer: a line more than whole lines (runs
    a multiple of 4 KiB apart would share cache sets)."""
    return (n * width + LINE - 1) // LINE * LINE + LINE


@_subroutine
def _gather(stage: int, src: int, pad: Any, rows: int, padded: int, stack: int, cols: int, pitch: int, sr: int,
            sc: int, runs: int) -> None:
    """``stage[r][l][c]`` (``pitch`` elements a row) ``= src[r*sr + c*sc + l]`` for ``r < rows``, ``l < stack``,
    ``c < cols``; the columns up to ``pitch`` and the rows up to ``padded`` are padding. Columns whose runs of rows
    share cache sets (a multiple of ``ALIASED`` bytes apart) are first copied to ``runs``, a line apart more, all of
    them (pred ``[2000,4096,4]{0,1,2:T(8,128)}``: 28 columns at a time took 9x memcpy, 64 4.1, all 2.9)."""
    width = _width(pad)
    if sr == stack:  # (rows and minor dim one run of the source: one block)
        n = rows * stack
        if (sc * width) % ALIASED == 0:
            step = _run_step(n, width)
            for c in range(cols):
                _copy(runs + c * step, src + c * sc * width, n * width)
            src, sc = runs, step // width
        _turned(stage, src, pad, n, cols, pitch, sc, _0)
    else:
        for r in range(rows):
            _turned(stage + r * stack * pitch * width, src + r * sr * width, pad, stack, cols, pitch, sc, _0)
    if pitch > cols:
        for k in range(rows * stack):
            _fill(stage + (k * pitch + cols) * width, pad, pitch - cols)
    _fill(stage + rows * stack * pitch * width, pad, (padded - rows) * stack * pitch)


@_subroutine
def _scatter(dst: int, stage: int, pad: Any, rows: int, stack: int, cols: int, pitch: int, sr: int, sc: int,
             stream: int, runs: int) -> None:
    """``dst[r*sr + c*sc + l] = stage[r][l][c]`` (``pitch`` elements a row), the other way of :func:`_gather`.
    Streamed, or columns that share cache sets: the destination's runs (a column's rows, or rows) made in ``runs``
    (``RUNS_BYTES``) as many at a time as fit, then copied out (streamed straight from the stage, rows of 384 bytes
    back to back, u8 ``[64000,96,4]{1,0,2:T(32,128)(4,1)}``, took 17x memcpy: the stage's loads waited on the
    streaming stores to the same addresses modulo 4 KiB)."""
    width = _width(pad)
    if sr == stack:
        n = rows * stack
        if stream or (sc * width) % ALIASED == 0:
            step = _run_step(n, width)
            per = max(1, RUNS_BYTES // step)
            for c0 in range(0, cols, per):
                k = min(per, cols - c0)
                _turned(runs, stage + c0 * width, pad, k, n, step // width, pitch, _0)
                for c in range(k):
                    _copy_out(dst + (c0 + c) * sc * width, runs + c * step, n * width, stream)
        else:
            _turned(dst, stage, pad, cols, n, sc, pitch, _0)
    elif stream:  # (the columns follow the minor dim: each row one run)
        row = cols * stack * width
        whole = sr * width == row  # (rows back to back: copied out together)
        per = max(1, RUNS_BYTES // row) if whole else 1
        for r0 in range(0, rows, per):
            k = min(per, rows - r0)
            for r in range(k):
                _turned(runs + r * row, stage + (r0 + r) * stack * pitch * width, pad, cols, stack, sc, pitch, _0)
            _copy_out(dst + r0 * sr * width, runs, k * row, stream)
    else:
        for r in range(rows):
            _turned(dst + r * sr * width, stage + r * stack * pitch * width, pad, cols, stack, sc, pitch, _0)


@_inline
def _chunk_of(unit: int, row_chunk: int, row_tiles: int) -> tuple[int, int, int]:
    """(outer index, first tile row, tile rows) of chunk ``unit``."""
    chunks = (row_tiles + row_chunk - 1) // row_chunk
    g, i0 = unit // chunks, unit % chunks * row_chunk
    return g, i0, min(row_tiles, i0 + row_chunk) - i0


@_jit
def tiled_to_stacked(x: int, out: int, scratch: int, pad: Any, geometry: Any, batch: Any, stage: int,
                     stack: Any) -> None:
    """Chunks [first, last) of a stacked tiled layout (:func:`._stacked._stacked_plan`) laid out at ``out`` (the
    whole layout's first byte): ``geometry`` is the layout's :class:`TiledGeometry` (``row_stride`` the logical
    rows' step; ``first``/``last`` count chunks), ``stack`` = (minor dim's size, the columns' logical step, tile rows
    a chunk), ``batch`` the other outer dims' (sizes, logical steps), major to minor; ``scratch`` the tiled kernel's,
    ``stage`` room for a chunk's padded rows and its aliased runs (:func:`_gather`)."""
    width = _width(pad)
    rows, cols, sr = geometry.rows, geometry.cols, geometry.row_stride
    r_size, c_size = geometry.tile_rows, geometry.tile_cols
    nl, sc, row_chunk = stack
    row_tiles = (rows + r_size - 1) // r_size
    pitch = (cols + c_size - 1) // c_size * c_size
    strip_bytes = r_size * pitch * width
    units = (row_tiles + row_chunk - 1) // row_chunk
    for k in range(batch.shape[1]):
        units *= batch[0, k]
    runs = stage + (row_chunk * r_size * nl * pitch * width + LINE - 1) // LINE * LINE
    inner = np.empty((2, 1), np.int64)
    inner[0, 0], inner[1, 0] = nl, pitch
    for unit in range(geometry.first, geometry.last):
        g, i0, tiles = _chunk_of(unit, row_chunk, row_tiles)
        r0 = i0 * r_size
        valid = min(rows, r0 + tiles * r_size) - r0
        source = x + (_strip_offset(g, batch, batch.shape[1]) + r0 * sr) * width
        _gather(stage, source, pad, valid, tiles * r_size, nl, cols, pitch, sr, sc, runs)
        # the tiled kernel over tile rows that follow each other in the layout: all of the chunk's when it has every
        # tile row of its outer index, else those of each index of the minor dim
        calls = 1 if tiles == row_tiles else nl
        strips = tiles * nl // calls
        for m in range(calls):
            tail = geometry.total - geometry.elements if unit == units - 1 and m == calls - 1 else 0
            part = TiledGeometry(tiles * r_size, pitch, nl * pitch, r_size, c_size, geometry.interleave, 0, tail,
                                 geometry.stream, 0, m * strips, (m + 1) * strips, geometry.bits, geometry.canon)
            _tiles_to(stage, out + ((g * nl + m) * row_tiles + i0) * strip_bytes, scratch, pad, part, inner)


@_jit
def tiled_from_stacked(src: int, out: int, scratch: int, pad: Any, geometry: Any, batch: Any, stage: int,
                       stack: Any) -> None:
    """Chunks [first, last) of a stacked tiled layout at ``src`` (its first byte) read back into the logical array
    at ``out`` (arguments as :func:`tiled_to_stacked`; ``scratch`` unused)."""
    width = _width(pad)
    rows, cols, sr = geometry.rows, geometry.cols, geometry.row_stride
    r_size, c_size = geometry.tile_rows, geometry.tile_cols
    nl, sc, row_chunk = stack
    row_tiles = (rows + r_size - 1) // r_size
    pitch = (cols + c_size - 1) // c_size * c_size
    strip_bytes = r_size * pitch * width
    t_bytes = r_size * c_size * width
    runs = stage + (row_chunk * r_size * nl * pitch * width + LINE - 1) // LINE * LINE
    for unit in range(geometry.first, geometry.last):
        g, i0, tiles = _chunk_of(unit, row_chunk, row_tiles)
        r0 = i0 * r_size
        valid = min(rows, r0 + tiles * r_size) - r0
        for m in range(nl):
            for i in range(tiles):
                at = src + ((g * nl + m) * row_tiles + i0 + i) * strip_bytes
                row = stage + (i * r_size * nl + m) * pitch * width
                for j in range(pitch // c_size):
                    _untiled(row + j * c_size * width, at + j * t_bytes, pad, nl * pitch, r_size, c_size,
                             geometry.interleave, geometry.canon)
        target = out + (_strip_offset(g, batch, batch.shape[1]) + r0 * sr) * width
        _scatter(target, stage, pad, valid, nl, cols, pitch, sr, sc, geometry.stream, runs)
