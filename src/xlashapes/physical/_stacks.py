"""The compiled kernel of stacked tiled layouts (:mod:`._stacked`: tiles that do not run along the logical minor dim,
which is the innermost of the dims they are stacked along), numba.

It takes the array a chunk at a time: one index of the other outer dims and as many tile rows and tile columns as fit
``._stacked.STAGE_BYTES`` (whole tile rows where they fit: ``._stacked._stacked_chunk``), through a staging buffer
in the cache. Laying out, the chunk's rows are first transposed
into ``stage[row][minor][column]`` (each row's columns contiguous, rows and columns padded to whole tiles), then each
tile of those rows is made (in scratch: its ``(p,1)`` sub-tiles interleaved, made canonical) and copied out, streamed
where asked; reading back, the tiles are untiled into the stage and transposed out. The transposes are the generic
walk's (:mod:`._walk`): where the minor dim's 2 to 7 elements follow each other along the columns, rows
(de)interleaved; otherwise squares. Columns a multiple of ``ALIASED`` bytes apart (whose runs share cache sets) go
through runs copied a line apart more. One entry point, ``tiled_stacked``, does both ways: laying tiles out with the
tiled kernel's own code (:func:`._kernels._tiled_to_of` as a subroutine), one entry point each way took 3.9 s to
compile laying out pred ``[7,1024,384,7]{2,0,3,1:T(8,128)(4,1)}`` and 2.2 s reading it back; now both ways 2.4-2.7 s
(numba's import included), and the suite's warm-up compiles three variants (one per element width), not six.

Both ways prefetch what they read next, which the hardware's prefetcher left to be waited for (x memcpy, 64 MiB, Zen 5
host): laying out, each run of the next chunk's source while the same run of this one is read (pred above 2.8 -> 2.0,
u8 ``[456,96,512,3]{2,1,3,0:T(8,128)(4,1)}`` 1.9 -> 1.5); reading back, the tile ``TILES_AHEAD`` bytes on while each
tile is read (2.1 -> 1.4, 2.1 -> 1.6).
"""

from __future__ import annotations

from typing import Any

from ._intrinsics import _0, _1, _copy, _fence, _get, _inline, _jit, _lanes, _prefetch_run, _put, _subroutine, _width
from ._kernels import _copy_out, _scalar, _strip_offset
from ._kinds import ALIASED, LINE, RUNS_BYTES, STAGED_RUN, TILES_AHEAD
from ._side_by_side import _deinterleaved, _interleaved
from ._tile_parts import _canonical, _deinterleaved_rows, _interleaved_rows
from ._walk import _squares_block

PREFETCH_BYTES = 4096  # of each run of the next chunk's source, prefetched while the same run of this one is read
SCATTER_COLUMNS = 32  # columns whose runs the scatter turns at a time, at least (in pieces where whole runs would not
# fit RUNS_BYTES)


@_subroutine
def _turned(dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, stream: int) -> None:
    """``dst[u*du + i] = src[u + i*si]`` for ``u < big``, ``i < small``: rows de-interleaved (``si == big``, 2 to 7)
    or interleaved (``du == small``, 2 to 8), else squares (:mod:`._walk`'s)."""
    lanes = _lanes(pad)
    if si == big and 2 <= big <= 7:
        _deinterleaved(dst, src, pad, big, small, du, _0)
        if small < lanes:
            _scalar(dst, src, pad, big, small, du, _1, si, _0, _0)
    elif du == small and 2 <= small <= 8:
        _interleaved(dst, src, pad, big, small, si, stream and dst % LINE == 0)
        if big < lanes:
            _scalar(dst, src, pad, big, small, du, _1, si, _0, _0)
    else:
        _squares_block(dst, src, pad, big, small, du, _1, si, stream, _0)


@_subroutine
def _tile_moved(tile: int, rows: int, pad: Any, step: int, r_size: int, c_size: int, p: int, to: int) -> None:
    """A whole tile in physical order (``(p,1)`` sub-tiles) at ``tile`` made from (``to``), or read back into,
    ``r_size`` rows at ``rows`` (``step`` elements apart)."""
    width, lanes = _width(pad), _lanes(pad)
    if p == 1:
        for r in range(r_size):
            if to:
                _copy(tile + r * c_size * width, rows + r * step * width, c_size * width)
            else:
                _copy(rows + r * step * width, tile + r * c_size * width, c_size * width)
    elif (p == 2 or p == 4) and c_size % lanes == 0:
        groups, in_tile, in_rows = r_size // p, p * c_size * width, p * step * width  # (bytes of a group of rows)
        if to:
            _interleaved_rows(tile, rows, step, groups, c_size, in_tile, in_rows, p, pad, _0)
        else:
            _deinterleaved_rows(rows, tile, step, groups, c_size, in_rows, in_tile, p, pad)
    else:
        for g in range(r_size // p):
            for c in range(c_size):
                for k in range(p):
                    at, row = (g * c_size + c) * p + k, rows + (g * p + k) * step * width
                    if to:
                        _put(tile, at, _get(row, c, pad))
                    else:
                        _put(row, c, _get(tile, at, pad))


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


@_inline
def _run_piece(n: int, cols: int, width: int) -> int:
    """Elements of each column's run of ``n`` that :func:`_scatter` turns at a time: the whole run, or pieces of whole
    lines short enough that ``SCATTER_COLUMNS`` columns' pieces fit ``RUNS_BYTES`` (runs of 8 KiB turned 7 columns at
    a time read the whole stage again for each 7: bf16 ``[128,32,1024,8]{0,2,3,1:T(8,128)(2,1)}`` 'from' 7.1x memcpy,
    2.0-2.2 in pieces; pred ``[64,34952,15]{0,1,2:T(32,128)(4,1)}`` 6.2-6.9 -> 2.1)."""
    least = min(cols, SCATTER_COLUMNS)
    if _run_step(n, width) * least <= RUNS_BYTES:
        return n
    return max(LINE, (RUNS_BYTES // least - LINE) // LINE * LINE) // width


@_subroutine
def _gather(stage: int, src: int, pad: Any, rows: int, padded: int, stack: int, cols: int, pitch: int, sr: int,
            sc: int, runs: int, ahead: int) -> None:
    """``stage[r][l][c]`` (``pitch`` elements a row) ``= src[r*sr + c*sc + l]`` for ``r < rows``, ``l < stack``,
    ``c < cols``; the columns up to ``pitch`` and the rows up to ``padded`` are padding. Columns whose runs of rows
    share cache sets (a multiple of ``ALIASED`` bytes apart), or are at least ``STAGED_RUN`` bytes (the squares
    would read as many streams as columns), are first copied to ``runs``, a line apart more, all of them (pred
    ``[2000,4096,4]{0,1,2:T(8,128)}``: 28 columns at a time took 9x memcpy, 64 4.1, all 2.9). Each run
    read prefetches (its first ``PREFETCH_BYTES``) its counterpart ``ahead`` bytes on, in the next chunk (0: none):
    pred ``[7,3566,384,7]{2,0,3,1:T(8,128)(4,1)}`` reads 7 runs of 2688 bytes 9 MiB apart a chunk, and the hardware's
    prefetcher did not keep up (2.6-2.7x memcpy laid out, 1.7-1.9 prefetched; its runs de-interleaved alone took 2.0,
    1.2 prefetched)."""
    width = _width(pad)
    if sr == stack:  # (rows and minor dim one run of the source: one block)
        n = rows * stack
        if (sc * width) % ALIASED == 0 or n * width >= STAGED_RUN:
            step = _run_step(n, width)
            lines = min(n * width, PREFETCH_BYTES) // LINE + 1
            for c in range(cols):
                if ahead != 0:
                    _prefetch_run(src + c * sc * width + ahead, lines)
                _copy(runs + c * step, src + c * sc * width, n * width)
            src, sc = runs, step // width
        _turned(stage, src, pad, n, cols, pitch, sc, _0)
    else:
        lines = min(((cols - 1) * sc + stack) * width, PREFETCH_BYTES) // LINE + 1
        for r in range(rows):
            if ahead != 0:
                _prefetch_run(src + r * sr * width + ahead, lines)
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
            piece = _run_piece(n, cols, width)
            step = _run_step(piece, width)
            per = max(1, RUNS_BYTES // step)
            for c0 in range(0, cols, per):
                k = min(per, cols - c0)
                for s0 in range(0, n, piece):
                    sn = min(piece, n - s0)
                    _turned(runs, stage + (s0 * pitch + c0) * width, pad, k, sn, step // width, pitch, _0)
                    for c in range(k):
                        _copy_out(dst + ((c0 + c) * sc + s0) * width, runs + c * step, sn * width, stream)
        else:
            _turned(dst, stage, pad, cols, n, sc, pitch, _0)
    elif stream:  # (the columns follow the minor dim: each row one run)
        row = cols * stack * width
        per = max(1, RUNS_BYTES // row) if sr * width == row else 1  # (rows back to back: copied out together)
        for r0 in range(0, rows, per):
            k = min(per, rows - r0)
            for r in range(k):
                _turned(runs + r * row, stage + (r0 + r) * stack * pitch * width, pad, cols, stack, sc, pitch, _0)
            _copy_out(dst + r0 * sr * width, runs, k * row, stream)
    else:
        for r in range(rows):
            _turned(dst + r * sr * width, stage + r * stack * pitch * width, pad, cols, stack, sc, pitch, _0)


@_inline
def _chunk_of(unit: int, stack: Any, row_tiles: int, col_tiles: int) -> tuple[int, int, int, int, int]:
    """(outer index, first tile row, tile rows, first tile column, tile columns) of chunk ``unit``."""
    row_chunk, col_chunk = stack[2], stack[4]
    row_chunks = (row_tiles + row_chunk - 1) // row_chunk
    col_chunks = (col_tiles + col_chunk - 1) // col_chunk
    g, rest = unit // (row_chunks * col_chunks), unit % (row_chunks * col_chunks)
    i0, j0 = rest // col_chunks * row_chunk, rest % col_chunks * col_chunk
    return g, i0, min(row_tiles, i0 + row_chunk) - i0, j0, min(col_tiles, j0 + col_chunk) - j0


@_jit
def tiled_stacked(src: int, dst: int, scratch: int, pad: Any, geometry: Any, batch: Any, stage: int,
                  stack: Any) -> None:
    """Chunks [first, last) of a stacked tiled layout: laid out (``to``) from the logical array at ``src`` to the
    layout at ``dst``, or read back from the layout at ``src`` into the logical array at ``dst`` (the layout's first
    byte). ``geometry`` is the layout's :class:`TiledGeometry` (``row_stride`` the logical rows' step;
    ``first``/``last`` count chunks), ``batch`` the other outer dims' (sizes, logical steps), major to minor;
    ``stage`` room for a chunk's padded rows and then for runs (:func:`._stacked._runs_room`); ``scratch`` a tile and
    a line; ``stack`` = (the minor dim's size, the columns' logical step, tile rows a chunk, ``to``, tile columns a
    chunk). One entry point for both ways and both kinds of transposes, so that their common code is compiled once."""
    width = _width(pad)
    rows, cols, sr = geometry.rows, geometry.cols, geometry.row_stride
    r_size, c_size, p = geometry.tile_rows, geometry.tile_cols, geometry.interleave
    nl, sc, row_chunk, to, col_chunk = stack
    row_tiles = (rows + r_size - 1) // r_size
    col_tiles = (cols + c_size - 1) // c_size
    t_bytes = r_size * c_size * width
    units = ((row_tiles + row_chunk - 1) // row_chunk) * ((col_tiles + col_chunk - 1) // col_chunk)
    for k in range(batch.shape[1]):
        units *= batch[0, k]
    runs = stage + (row_chunk * r_size * nl * col_chunk * c_size * width + LINE - 1) // LINE * LINE
    tiles_at = dst if to else src
    for unit in range(geometry.first, geometry.last):
        g, i0, tiles, j0, jn = _chunk_of(unit, stack, row_tiles, col_tiles)
        r0, c0, pitch = i0 * r_size, j0 * c_size, jn * c_size
        valid, n = min(rows, r0 + tiles * r_size) - r0, min(cols, c0 + pitch) - c0
        logical = (_strip_offset(g, batch, batch.shape[1]) + r0 * sr + c0 * sc) * width
        if to:
            ahead = 0
            if unit + 1 < geometry.last:  # (the next chunk's source, prefetched run by run)
                g1, i1, _tiles, j1, _jn = _chunk_of(unit + 1, stack, row_tiles, col_tiles)
                ahead = (_strip_offset(g1, batch, batch.shape[1]) + i1 * r_size * sr + j1 * c_size * sc) * width
                ahead -= logical
            _gather(stage, src + logical, pad, valid, tiles * r_size, nl, n, pitch, sr, sc, runs, ahead)
        for m in range(nl):
            for i in range(tiles):
                row = stage + (i * r_size * nl + m) * pitch * width
                at = tiles_at + (((g * nl + m) * row_tiles + i0 + i) * col_tiles + j0) * t_bytes
                for j in range(jn):
                    if to:
                        _tile_moved(scratch, row + j * c_size * width, pad, nl * pitch, r_size, c_size, p, to)
                        if geometry.canon != 0:
                            _canonical(scratch, t_bytes, geometry.canon)
                        _copy_out(at + j * t_bytes, scratch, t_bytes, geometry.stream)
                    else:  # (the tile TILES_AHEAD bytes on prefetched: read back, pred [7,3566,384,7]{2,0,3,1:T(8,128)
                        # (4,1)} 2.1 -> 1.4x memcpy, u8 [456,96,512,3]{2,1,3,0:T(8,128)(4,1)} 2.1 -> 1.6; 1 KiB on
                        # 1.9 / 2.0, 16 KiB as 8)
                        _prefetch_run(at + j * t_bytes + TILES_AHEAD, t_bytes // LINE)
                        _tile_moved(at + j * t_bytes, row + j * c_size * width, pad, nl * pitch, r_size, c_size, p,
                                    to)
        if not to and geometry.canon != 0:  # (the stage made canonical at once: row by row, pred 'from' took 2.6x
            # memcpy before the transpose out)
            _canonical(stage, tiles * r_size * nl * pitch * width, geometry.canon)
        if not to:
            _scatter(dst + logical, stage, pad, valid, nl, n, pitch, sr, sc, geometry.stream, runs)
        elif unit == units - 1:  # (the tail padding)
            _fill(dst + geometry.elements * width, pad, geometry.total - geometry.elements)
    if geometry.stream:
        _fence()
