"""The block subroutines of the walks whose blocks sit side by side in the destination (:mod:`._walk`): grouped
squares (tiled transposes), wide blocks (destination rows shorter than a line that continue each other) and
quarter-line blocks (rows of 2 or 4 elements), each streamed on the line grid and staged through scratch off it;
turned blocks (rows of words of 2 or 4 fields whose fields and rows trade places); and the blocks of 2 to 7 short
source rows, and of planes (9 rows and more) interleaved."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intrinsics import (
    _copy,
    _get,
    _grouped_side,
    _inline,
    _lanes,
    _most_planes,
    _prefetch_rows,
    _put,
    _subroutine,
    _width,
)
from ._kernels import _copy_out, _emit, _scalar
from ._kinds import GATHER_BYTES, LINE
from ._shuffles import (
    _cut_side42,
    _cut_side43,
    _cut_square42,
    _cut_square43,
    _deinterleave2,
    _deinterleave3,
    _deinterleave4,
    _deinterleave5,
    _deinterleave6,
    _deinterleave7,
    _interleave2,
    _interleave3,
    _interleave4,
    _interleave5,
    _interleave6,
    _interleave7,
    _interleave8,
    _interleave_lane_planes,
    _line_square2,
    _line_square4,
    _side_by_side2,
    _side_by_side4,
    _transpose8,
    _transpose_groups,
    _transpose_short2_nt,
    _transpose_short4_nt,
    _turn_fields2,
    _turn_fields4,
    _wide_lines2,
    _wide_lines4,
    _wide_lines8,
)

GATHER_LINES = 8  # lines of each source row a wide block gathers at a time (:func:`_wide_block` says when)
WIDE_BLOCKS = 64  # blocks a wide block crosses at a time (their sources stay in the cache)
WIDE_LINES = 8  # lines of each destination row the line squares of a wide block write before the next row
PIECE_BYTES = 1024  # most bytes of each destination row a piece of grouped squares stages (:func:`_grouped_pieces`)
SHORT_PIECE = 256  # ... and fewest, before it takes fewer blocks at a time
STAGED_LINES = 16  # (off the line grid, through scratch: bf16[4,4096,2048]{0,1,2} 'to' 2.3 at 8, 2.05, 2.35 at 32)
_0, _1 = np.int64(0), np.int64(1)  # (typed constants: a literal would make numba compile a callee once more)


@_subroutine
def _short_rows(dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, ahead: int) -> None:
    """``_block`` of 2 to 7 source rows: 4 (2) destination lines at a time, the next blocks' lines prefetched."""
    width = _width(pad)
    lanes = _lanes(pad)
    short = 4 if big >= 4 else 2
    full_u, full_i = big - big % short, small - small % lanes
    for u in range(0, full_u, short):
        for i in range(0, full_i, lanes):
            d, s = dst + (u * du + i) * width, src + (u + i * si) * width
            if ahead and si * width >= LINE:  # the line after these rows' (the next blocks read along them)
                _prefetch_rows(ahead + (u + i * si) * width + LINE, si * width, _1, lanes)
            if short == 4:
                _transpose_short4_nt(d, du, s, lanes // 2 * si * width, si, pad)
            else:
                _transpose_short2_nt(d, du, s, lanes // 2 * si * width, si, pad)
    _scalar(dst, src, pad, big, small, du, _1, si, full_u, full_i)


@_subroutine
def _interleaved_planes(dst: int, src: int, pad: Any, big: int, small: int, si: int, room: int) -> None:
    """``dst[u*small + i] = src[u + i*si]`` for ``small`` rows (planes: from 9, up to ``MOST_PLANES`` of the width)
    of ``big`` elements, a line of each row's elements at a time (the columns left: the last line's worth again,
    overlapping), into ``room`` bytes at ``dst``: the columns whose lines would spill past it
    (:func:`_interleave_lane_planes`) element by element."""
    width = _width(pad)
    lanes = _lanes(pad)
    full = big - big % lanes
    done = 0
    if 9 <= small <= _most_planes(pad):
        for u in range(0, full + lanes if lanes < big != full else full, lanes):
            at = min(u, big - lanes)
            if (at + lanes) * small * width + LINE > room:
                break
            _interleave_lane_planes(dst + at * small * width, src + at * width, si, small, pad)
            done = at + lanes
    _scalar(dst, src, pad, big, small, small, _1, si, done, small)


@_subroutine
def _quarter_block(
    dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, count: int, fs: int, fd: int, stream: int,
    ahead: int, scratch: int, room: int,
) -> None:
    """:func:`_wide_block` of destination rows of 2 or 4 elements (tiled transposes' short tiles read back; blocks
    ``fd`` elements apart in the destination: ``small``, or groups cut short, :func:`_cut_quarters`): as many blocks
    as fill a line at a time, streamed on the line grid; off it, a square's rows of lines go through ``scratch`` (on
    a line, ``room`` bytes), whence each row's piece is streamed (else stored plainly; ``ahead``: unused, for the
    same arguments)."""
    width = _width(pad)
    if fd != small:
        _cut_quarters(dst, src, pad, big, small, du, si, count, fs, fd)
        return
    lined = _1 if stream and dst % LINE == 0 and (du * width) % LINE == 0 else _0
    if (small == 2 or small == 4) and big >= small:
        group = LINE // (small * width)
        grouped = count - count % group
        full_u = big - big % small
        side = LINE // width  # (whole lines of source rows: 64 bytes, or 32 2-byte words ...)
        squares = big - big % side
        lines = STAGED_LINES if stream and not lined else WIDE_LINES
        staged = stream and not lined and side * (lines + 1) * LINE <= room
        for f0 in range(0, grouped, lines * group):  # a run of lines of each destination row at a time
            f1 = min(grouped, f0 + lines * group)
            span = (f1 - f0) * small * width  # bytes of each staged row (and a line of slack)
            for u in range(0, squares, side):
                for f in range(f0, f1, group):
                    d, step = dst + (u * du + f * small) * width, du
                    if staged:
                        d, step = scratch + (f - f0) * small * width, (span + LINE) // width
                    _quarter_square(d, step, src + (f * fs + u) * width, fs, si, small, small, lined, pad)
                if staged:
                    for r in range(side):
                        _copy_out(dst + ((u + r) * du + f0 * small) * width, scratch + r * (span + LINE), span, _1)
        end_u = full_u + small if full_u < big else full_u  # (the rows after full_u: one more group of rows,
        # overlapping the one before, as the squares do; element by element, pred [N,48,3,7]{0,1,2,3:T(8,128)(4,1)}
        # 'to' took 11x memcpy)
        for f in range(0, grouped, group):
            for uu in range(squares, end_u, small):
                u = min(uu, big - small)
                d, s = dst + (u * du + f * small) * width, src + (f * fs + u) * width
                if small == 4:
                    _side_by_side4(d, du, s, fs * width, si, lined, pad)
                else:
                    _side_by_side2(d, du, s, fs * width, si, lined, pad)
        for f in range(grouped, count):  # (whole blocks left over)
            _scalar(dst + f * small * width, src + f * fs * width, pad, big, small, du, _1, si, _0, small)
        return
    for f in range(count):  # (the walk's kind gives these only rows of 2 or 4)
        _scalar(dst + f * small * width, src + f * fs * width, pad, big, small, du, _1, si, _0, _0)


@_inline
def _quarter_square(d: int, step: int, s: int, fs: int, si: int, small: int, fd: int, lined: int, pad: Any) -> None:
    """One square of quarter-line blocks (:func:`_quarter_block`): as many blocks of ``small`` source rows (``si``
    apart; blocks ``fs`` elements apart at ``s``) as fill a line, ``fd`` elements apart in each destination row
    (``step`` apart at ``d``), their rows' lines two squares on prefetched; ``fd`` above ``small``: groups cut short,
    the slots past their rows left as they are (masked stores)."""
    width = _width(pad)
    for g in range(LINE // (fd * width)):
        _prefetch_rows(s + g * fs * width + 2 * LINE, si * width, _1, small)
    if fd == small:
        if small == 4:
            _line_square4(d, step, s, fs * width, si, lined, pad)
        else:
            _line_square2(d, step, s, fs * width, si, lined, pad)
    elif small == 2:
        _cut_square42(d, step, s, fs * width, si, _0, pad)
    else:
        _cut_square43(d, step, s, fs * width, si, _0, pad)


@_subroutine
def _cut_quarters(dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, count: int, fs: int,
                  fd: int) -> None:
    """:func:`_quarter_block` of groups cut short (a dim's last ``(4,1)`` sub-tile group of 2 or 3 rows, laid out):
    blocks ``fd`` (4) elements apart in the destination, each of ``small`` (2 or 3) rows.
    Squares of one line a side, as many blocks as fill a line, their other rows read as the last and left as they
    are in the destination (masked stores, plain); the last band of rows and the last blocks overlap the ones before
    (the same values again)."""
    width = _width(pad)
    side = LINE // width
    group = LINE // (fd * width)
    if big < fd or count < group:  # (the walk's kind gives these a line of blocks at least)
        for f in range(count):
            _scalar(dst + f * fd * width, src + f * fs * width, pad, big, small, du, _1, si, _0, _0)
        return
    tall = side if big >= side else fd  # destination rows a square (or fewer rows than a square: a block) takes
    for f0 in range(0, count, WIDE_LINES * group):  # a run of lines of each destination row at a time
        for b in range((big + tall - 1) // tall):
            u = min(b * tall, big - tall)
            for ff in range(f0, min(count, f0 + WIDE_LINES * group), group):
                f = min(ff, count - group)
                d, s = dst + (u * du + f * fd) * width, src + (f * fs + u) * width
                if tall == side:
                    _quarter_square(d, du, s, fs, si, small, fd, _0, pad)
                elif small == 2:  # (rows of fewer elements than a line: fd of them at a time)
                    _cut_side42(d, du, s, fs * width, si, _0, pad)
                else:
                    _cut_side43(d, du, s, fs * width, si, _0, pad)


@_subroutine
def _prefetch_blocks(
    src: int, first: int, n: int, f0: int, f1: int, u1: int, full_u: int, chunk: int, fs: int, si: int, small: int,
    width: int,
) -> None:
    """Prefetch the ``small`` source rows of blocks ``first`` to ``first + n`` of a wide block's blocks
    ``[f0, f1)`` over the chunk of rows ending at ``u1``; blocks past ``f1`` are the next chunk's first (none after
    ``full_u``). Their rows are many streams, one line each, which the hardware does not follow."""
    for f in range(first, first + n):
        at, length = src + (f * fs + u1 - chunk) * width, chunk * width
        if f >= f1:
            at, length = src + ((f - f1 + f0) * fs + u1) * width, min(chunk, full_u - u1) * width
        if length > 0:
            _prefetch_rows(at, si * width, length, small)


@_subroutine
def _gather_lines(to: int, at: int, block_step: int, row_step: int, blocks: int, rows: int, n: int,
                  pitch: int) -> None:
    """Copy ``n`` bytes (at most ``pitch``) of ``rows`` rows (``row_step`` bytes apart) of each of ``blocks`` blocks
    (``block_step`` bytes apart) to ``to``, ``pitch`` bytes a row, the blocks' rows one after another."""
    for b in range(blocks):
        for r in range(rows):
            _copy(to + (b * rows + r) * pitch, at + b * block_step + r * row_step, n)


def _wide_block_of(lines: bool) -> Any:
    """The wide block subroutine: with ``lines``, the one for rows of a half, a quarter or an eighth of a line
    (blocks side by side making whole lines: :func:`._kinds.wide_group`), else the one for other rows, which leaves
    out the line squares (``lines`` is a constant of the closure: numba prunes them; 0.3 s less to compile)."""

    def wide_block(
        dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, count: int, fs: int, stream: int,
        ahead: int, scratch: int, room: int,
    ) -> None:
        """``count`` blocks side by side in the destination (block ``f`` at ``dst + f*small`` elements,
        ``src + f*fs``): short destination rows (tiled transposes read back) written a band of 8 rows at a time
        across many blocks, so that each row gets one long run instead of ``count`` scattered pieces; rows of a
        half, a quarter or an eighth of a line, two, four or eight blocks at a time, whole lines streamed (off the
        line grid through ``scratch``, on a line, ``room`` bytes). ``ahead`` (0: none) is the source of the next
        wide block, of the same shape: its blocks' source rows are prefetched one block per group moved, over the
        first bands. (Rows of 2 or 4 elements: :func:`_quarter_block`.)"""
        width = _width(pad)
        if big < 8 or small < 8:  # (the walk's kind leaves these to blocks of their own)
            for f in range(count):
                _scalar(dst + f * small * width, src + f * fs * width, pad, big, small, du, _1, si, _0, _0)
            return
        full_u = big - big % 8
        # rows of a half, a quarter or an eighth of a line: as many blocks side by side make one line of each row,
        # streamed out on the line grid; off it, and for rows of other lengths (8 x 8 squares), the bands of a chunk of
        # rows go to ``scratch`` (the blocks' pieces of each row), whence each row's piece is streamed from its own line
        # boundary (stored plainly when not streamed)
        row = small * width
        lined = _1 if stream and dst % LINE == 0 and (du * width) % LINE == 0 else _0
        group = (LINE // row if row < LINE and LINE % row == 0 and small % 8 == 0 else 1) if lines else 1  # per line
        # (blocks per line: as :func:`._kinds.wide_group`)
        # source rows a multiple of 4 KiB apart share their cache sets: all the bands of a line of them before the next
        # blocks (else one band across all the blocks, each destination row one long run)
        # blocks a multiple of 4 KiB apart (tiled transposes read back: tiles a tile row apart) put their rows in the
        # same cache sets too: there as well, every band of a line of their rows before the next blocks, with the blocks
        # two groups on prefetched ('from', 64 MiB, x memcpy: u8 {0,1:T(8,128)} 3.4 -> 2.05, T(8,64) 3.4 -> 1.45, bf16
        # {0,1:T(8,128)} 1.65 -> 1.15; without the prefetch bf16 went to 2.5)
        shared = (fs * width) % 4096 == 0 and (si * width) % 4096 != 0
        chunk = LINE // width if (si * width) % 4096 == 0 or shared else 8
        staged = stream and (not lined or group == 1) and LINE // width * (WIDE_BLOCKS * row + LINE) <= room
        if staged:  # (each source line whole before the next: the destination rows go out of scratch in long runs)
            chunk = LINE // width
        # more than 16 rows longer than a line, 4 KiB apart or of half a line (bytes): ``GATHER_LINES`` lines of each
        # (of a group of blocks) copied to ``gather`` first and transposed from there, as many blocks at a time as the
        # destination rows' staging holds (in place, the lines of rows in one cache set are evicted before their next
        # bands; 64 rows of half a line are read a band at a time across many blocks). 'to' of [R,M,K]{0,1,2}, 64 MiB, x
        # memcpy, before -> after: rows 4 KiB apart (K=1024): u8 R=48 8.1 -> 2.5 (2.8 at 4 lines, 2.5 at 16), R=32 4.1
        # -> 2.6, bf16 R=24 5.5 -> 2.6; u8 R=32 not 4 KiB apart: 3.2-3.7 -> 2.2-2.3. Costs more than it saves (shorter
        # destination runs) with 16 rows and fewer (4 KiB apart: u8 16 2.3 -> 2.9, 8 2.0 -> 3.2, bf16 16 2.0 -> 2.6, f32
        # 12 2.3 -> 2.75, 8 1.8 -> 3.0) and for rows of other lengths not 4 KiB apart (bf16 24 1.5 -> 2.4, u8 48 2.4 ->
        # 2.6). Byte rows of 16 and fewer whose blocks are a multiple of 4 KiB apart too (every line of a chunk in one
        # cache set) are gathered as well: 'to', 32 MiB, u8 [16,256,8192]{0,1,2} 7.4-7.9 -> 3.5, [8,512,8192] 5.3 -> 4.4
        # (2-byte words of 8 went 2.5 -> 3.9: left as they were)
        aliased = (si * width) % 4096 == 0 and (fs * width) % 4096 == 0
        gathered = (small > 16 or (width == 1 and aliased)) and ((si * width) % 4096 == 0 or group > 1) and (
            big * width > LINE and small * width * group <= LINE)
        gather = scratch + room + LINE
        blocks = WIDE_BLOCKS
        if gathered:
            chunk = GATHER_LINES * LINE // width
            blocks = min(WIDE_BLOCKS, max(group, (room // (chunk * width) - LINE) // row // group * group))
            staged = staged and chunk * width * (blocks * row + LINE) <= room
        row_step, block_step = (chunk, small * chunk * width) if gathered else (si, fs * width)
        ahead_blocks = chunk == 8 or (shared and not gathered)
        for f0 in range(0, count, blocks):
            f1 = min(count, f0 + blocks)
            grouped = f0 + (f1 - f0) // group * group if group > 1 else f0
            span = (f1 - f0) * row  # bytes of each staged row (a line of slack after each: no shared cache sets)
            for u0 in range(0, full_u, chunk):
                u1 = min(full_u, u0 + chunk)
                f = f0
                while f < f1:  # groups of blocks filling lines, then the other blocks: squares of 8 (the last of a row
                    n = group if f < grouped else 1  # overlapping the one before)
                    if gathered:
                        _gather_lines(gather, src + (f * fs + u0) * width, fs * width, si * width, n, small,
                                      (u1 - u0) * width, chunk * width)
                    for u in range(u0, u1, 8):
                        d, step = dst + (u * du + f * small) * width, du
                        if staged:
                            d, step = scratch + (u - u0) * (span + LINE) + (f - f0) * row, (span + LINE) // width
                        s = gather + (u - u0) * width if gathered else src + (f * fs + u) * width
                        if n == 1:
                            if u == u0:  # the rows of the block four on (past the last: the next chunk's first)
                                _prefetch_blocks(src, f + 4, _1, f0, f1, u1, full_u, chunk, fs, si, small, width)
                            for ii in range(0, small, 8):
                                i = min(ii, small - 8)
                                _transpose8(d + i * width, step, s + i * row_step * width, row_step, _0, pad)
                            continue
                        if ahead and u // 8 < group:  # one block's rows per call, over the first bands
                            g = f + u // 8
                            _prefetch_rows(ahead + g * fs * width, si * width, big * width, small)
                        if u == u0 and ahead_blocks:  # the rows of the blocks two groups on (past the last: the next
                            # chunk's first; not for rows 4 KiB apart, whose lines of a chunk are in the cache already)
                            _prefetch_blocks(src, f + 2 * group, group, f0, f1, u1, full_u, chunk, fs, si, small, width)
                        if lines:  # (left out of the other entry: its groups are single blocks)
                            if group == 2:
                                _wide_lines2(d, step, s, block_step, row_step, lined, pad)
                            elif group == 4:
                                _wide_lines4(d, step, s, block_step, row_step, lined, pad)
                            else:
                                _wide_lines8(d, step, s, block_step, row_step, lined, pad)
                    f += n
                if staged:
                    for r in range(u1 - u0):
                        _copy_out(dst + ((u0 + r) * du + f0 * small) * width, scratch + r * (span + LINE), span, _1)
            if full_u < big:  # (the squares, the last of a row overlapping the one before, took every column)
                for f in range(f0, f1):
                    _scalar(dst + f * small * width, src + f * fs * width, pad, big, small, du, _1, si, full_u, small)

    wide_block.__name__ = wide_block.__qualname__ = "_wide_lines_block" if lines else "_wide_block"
    return _subroutine(wide_block)


_wide_block = _wide_block_of(False)
_wide_lines_block = _wide_block_of(True)


@_subroutine
def _band_squares(
    base: int, d_step: int, g_step: int, src: int, pad: Any, sg: int, si: int, count: int, lo: int, hi: int,
    shift: int, gather: int,
) -> None:
    """The squares of one band of source rows (at ``src``, ``si`` elements apart) across the blocks ``[lo, hi)`` of
    :func:`_grouped_block` (block ``g`` at ``src + g*sg``; its destination rows ``base + g*g_step``, ``d_step``
    apart in a group), a square's worth of blocks at a time (the last square overlapping the one before). Source
    rows a multiple of 4 KiB apart share their cache sets (64 rows: five times the ways of a set): the lines of as
    many squares as ``gather`` holds (``GATHER_BYTES``) are copied there first, a run of each row at a time (u8
    ``[8,1000,4793]{1,0,2:T(8,128)(4,1)}`` read back 3.4 -> 2.7x memcpy, against a square's lines at a time)."""
    width = _width(pad)
    side = _grouped_side(pad)
    per = side // sg
    gathered = (si * width) % 4096 == 0 and width == 1 and side * width == LINE
    batch = max(1, (GATHER_BYTES // side - LINE) // (side * width)) * per if gathered else hi - lo
    for q0 in range(lo, hi, batch):
        q1 = min(hi, q0 + batch)
        first = min(q0, count - per)
        s_step = si
        if gathered:
            n = (min(q0 + (q1 - 1 - q0) // per * per, count - per) + per - first) * sg * width
            _gather_lines(gather, src + first * sg * width, _0, si * width, _1, side, n, n + LINE)
            s_step = (n + LINE) // width
        for gg in range(q0, q1, per):
            g = min(gg, count - per)
            s = src + g * sg * width
            if gathered:
                s = gather + (g - first) * sg * width
            else:
                _prefetch_rows(s + 2 * side * width, si * width, side * width, side)  # these rows two squares on
            _transpose_groups(base + g * g_step * width, d_step, s, s_step, g_step, shift, _0, pad)  # (to scratch)


@_subroutine
def _grouped_block(
    dst: int, src: int, pad: Any, big: int, sg: int, small: int, du: int, si: int, count: int, dg: int, stream: int,
    scratch: int, room: int,
) -> None:
    """``count`` blocks of ``big`` source-contiguous rows that continue each other in the source (block ``g`` at
    ``src + g*sg``, ``dst + g*dg`` elements; ``sg`` 2, 4, 8 or 16, ``big`` itself or fewer rows: a sub-tile's
    group cut short, whose other rows are read along and dropped): tiled transposes (``T(8,128)``, and those whose
    sub-tiles are moved as words, each tile 4 or 2 rows of them). Squares of one line a side take as many blocks at
    once (whole source lines in, whole destination lines out), a band of source rows across all the blocks at a
    time, the last band overlapping the one before. Off the line grid (or groups cut short), the destination rows of
    as many squares as ``scratch`` holds (on a line, ``room`` bytes) are transposed there whole, a band of source
    rows across those squares at a time, and each row is streamed from its own line boundary; rows too long for that
    go a piece of each at a time (:func:`_grouped_pieces`)."""
    width = _width(pad)
    side = _grouped_side(pad)
    per = side // sg  # blocks a square spans
    full_g, full_i = count - count % per, small - small % side
    # the blocks a whole number of squares leaves: one more square, overlapping the last (the same values again)
    last_g = full_g + per if full_g < count else full_g
    lined = sg == big and stream and side * width == LINE and dst % LINE == 0 and (du * width) % LINE == 0 and (
        dg * width) % LINE == 0
    shift = 1 if sg == 2 else 2 if sg == 4 else 3 if sg == 8 else 4  # (sg is 2 ** shift)
    if count < per:  # (the walk's kind gives each call a square's worth of blocks at least)
        for g in range(count):
            _scalar(dst + g * dg * width, src + g * sg * width, pad, big, small, du, _1, si, _0, _0)
        return
    staged = side * width == LINE and (sg > big or (stream and not lined))
    if not staged:  # straight out: a square's lines gathered at a time where rows are 4 KiB apart, the columns after
        # the whole squares element by element (one call of the transpose: its code is large; measured faster so)
        gathered = (si * width) % 4096 == 0 and width == 1 and side * width == LINE
        for i in range(0, full_i, side):
            for gg in range(0, last_g, per):
                g = min(gg, count - per)
                s, s_step = src + (g * sg + i * si) * width, si
                _prefetch_rows(s + 2 * side * width, si * width, side * width, side)  # these rows two squares on
                if gathered:
                    _gather_lines(scratch + room + LINE, s, _0, si * width, _1, side, LINE, LINE)
                    s, s_step = scratch + room + LINE, LINE // width
                _transpose_groups(dst + (g * dg + i) * width, du, s, s_step, dg, shift, lined, pad)
        if full_i < small:
            for g in range(count):
                _scalar(dst + g * dg * width, src + g * sg * width, pad, big, small, du, _1, si, big, full_i)
        return
    ends = small - 1 if sg > big else small  # (the rows dropped from the last column may lie past the source)
    covered = ends if ends >= side else 0  # the columns squares take (the rest element by element)
    bands = (covered + side - 1) // side
    # staged rows: a line of slack after each (no shared cache sets), or after each block when its rows continue each
    # other in the destination (moved out as one run)
    run = du == small and full_i == small and sg == big
    stride = (covered * width + LINE - 1) // LINE * LINE + (0 if run else LINE)  # bytes from a staged row to the next
    block = sg * stride + (LINE if run else 0)  # and from a staged block to the next
    squares = room // (per * block)  # staged at a time
    if squares == 0:  # (rows too long for the room)
        _grouped_pieces(dst, src, pad, big, sg, small, du, si, count, dg, covered, shift, scratch, room)
        return
    span = squares * per  # blocks a pass takes
    for g0 in range(0, last_g, span):
        b0, b1 = min(g0, count - per), min(count, g0 + span)  # the blocks staged
        for band in range(bands):
            i = min(band * side, covered - side)
            _band_squares(scratch - b0 * block + i * width, stride // width, block // width, src + i * si * width,
                          pad, sg, si, count, g0, min(last_g, g0 + span), shift, scratch + room + LINE)
        for g in range(b0, b1):
            if run:
                _copy_out(dst + g * dg * width, scratch + (g - b0) * block, big * stride, stream)
                continue
            for u in range(big):
                _copy_out(dst + (g * dg + u * du) * width, scratch + (g - b0) * block + u * stride, covered * width,
                          stream)
    if covered < small:  # the columns after the squares'
        for g in range(count):
            _scalar(dst + g * dg * width, src + g * sg * width, pad, big, small, du, _1, si, big, covered)


@_subroutine
def _grouped_pieces(
    dst: int, src: int, pad: Any, big: int, sg: int, small: int, du: int, si: int, count: int, dg: int, covered: int,
    shift: int, scratch: int, room: int,
) -> None:
    """:func:`_grouped_block`'s staged squares of rows too long for ``room`` (squares over the first ``covered``
    columns): a chunk of blocks and a piece of the columns at a time, each destination row's piece streamed from its
    own line boundary (:func:`_emit`: the line a piece leaves unfinished carried to the next; the last piece takes up
    to a square's more columns, and those after the squares')."""
    width = _width(pad)
    side = _grouped_side(pad)
    per = side // sg
    # the widest piece (a multiple of the side, of PIECE_BYTES or less, a square's slack after it) with which every
    # block fits in one chunk, if it is at least SHORT_PIECE bytes; else SHORT_PIECE bytes and fewer blocks a chunk
    cols = PIECE_BYTES // width // side * side
    while cols * width > SHORT_PIECE and count * sg * ((cols + side) * width + 2 * LINE) > room:
        cols -= side
    pitch = (cols + side) * width + LINE  # (a line of slack before each staged row: its carry is completed there)
    span = room // (sg * (pitch + LINE)) // per * per  # blocks a chunk (the carries after the staged rows)
    if span < per:  # (no room: element by element)
        for g in range(count):
            _scalar(dst + g * dg * width, src + g * sg * width, pad, big, small, du, _1, si, _0, _0)
        return
    carry = scratch + span * sg * pitch
    for b0 in range(0, count, span):
        b1 = min(count, b0 + span)
        w0 = min(b0, count - per)  # the first block staged (a last square overlapping the one before)
        i0 = 0
        while i0 < small:
            i1 = small if small - i0 <= cols + side else i0 + cols  # (the last piece: more than a square)
            for i in range(i0, min(i1, covered), side):
                i = min(i, covered - side)  # (the last square overlapping the one before)
                _band_squares(scratch + LINE + (i - i0) * width - w0 * sg * pitch, pitch // width, sg * pitch // width,
                              src + i * si * width, pad, sg, si, count, b0, b1, shift, scratch + room + LINE)
            if i1 > covered:
                for g in range(b0, b1):
                    _scalar(scratch + (g - w0) * sg * pitch + LINE - i0 * width, src + g * sg * width, pad, big,
                            i1, pitch // width, _1, si, big, max(i0, covered))
            for g in range(b0, b1):
                for u in range(big):
                    r = (g - w0) * sg + u
                    _emit(dst + (g * dg + u * du + i0) * width, scratch + r * pitch, (i1 - i0) * width,
                          carry + r * LINE, i0 == 0, i1 >= small)
            i0 = i1


@_subroutine
def _turned_block(dst: int, src: int, pad: Any, p: int, length: int, du: int, si: int, stream: int) -> None:
    """``p`` source rows of ``length`` elements (``si`` elements apart; words of ``p`` fields) turned into ``p``
    destination rows (``du`` apart): field ``k`` of word ``l`` of row ``j`` = field ``j`` of word ``l`` of source row
    ``k``; a line of each at a time (streamed when ``stream`` and on the line grid), the rest element by element."""
    width = _width(pad)
    lanes = _lanes(pad)
    lined = _1 if stream and dst % LINE == 0 and (du * width) % LINE == 0 else _0
    full = length // lanes * lanes
    for c in range(0, full, lanes):
        if p == 2:
            _turn_fields2(dst + c * width, du * width, src + c * width, si * width, lined, pad)
        else:
            _turn_fields4(dst + c * width, du * width, src + c * width, si * width, lined, pad)
    for c in range(full, length):
        k = c % p
        for j in range(p):
            _put(dst + j * du * width, c, _get(src + k * si * width, c - k + j, pad))


@_subroutine
def _interleaved(dst: int, src: int, pad: Any, big: int, small: int, si: int, aligned: int) -> None:
    """``dst[u*small + i] = src[u + i*si]`` for ``small`` (2 to 8) rows of ``big`` elements, a line of each row's
    elements at a time (``aligned``: the destination is on a line, whole lines streamed)."""
    width = _width(pad)
    lanes = _lanes(pad)
    full = big - big % lanes
    for u in range(0, full + lanes if lanes < big != full else full, lanes):
        last = u >= full  # the columns left: the last line's worth again, overlapping (same values)
        at = big - lanes if last else u
        d = dst + at * small * width
        if small == 2:
            _interleave2(d, src + at * width, si, aligned and not last, pad)
        elif small == 3:
            _interleave3(d, src + at * width, si, aligned and not last, pad)
        elif small == 4:
            _interleave4(d, src + at * width, si, aligned and not last, pad)
        elif small == 5:
            _interleave5(d, src + at * width, si, aligned and not last, pad)
        elif small == 6:
            _interleave6(d, src + at * width, si, aligned and not last, pad)
        elif small == 7:
            _interleave7(d, src + at * width, si, aligned and not last, pad)
        else:
            _interleave8(d, src + at * width, si, aligned and not last, pad)


@_subroutine
def _deinterleaved(dst: int, src: int, pad: Any, big: int, small: int, du: int, rows_aligned: int) -> None:
    """``dst[u*du + i] = src[u + i*big]`` for ``big`` (2 to 7) destination rows of ``small`` elements, a line of
    each row at a time (``rows_aligned``: every destination row on a line, whole lines streamed)."""
    width = _width(pad)
    lanes = _lanes(pad)
    full = small - small % lanes
    for i in range(0, full + lanes if lanes < small != full else full, lanes):
        last = i >= full  # the columns left: the last line's worth again, overlapping (same values)
        at = small - lanes if last else i
        d, s = dst + at * width, src + at * big * width
        if big == 2:
            _deinterleave2(d, du, s, rows_aligned and not last, pad)
        elif big == 3:
            _deinterleave3(d, du, s, rows_aligned and not last, pad)
        elif big == 4:
            _deinterleave4(d, du, s, rows_aligned and not last, pad)
        elif big == 5:
            _deinterleave5(d, du, s, rows_aligned and not last, pad)
        elif big == 6:
            _deinterleave6(d, du, s, rows_aligned and not last, pad)
        else:
            _deinterleave7(d, du, s, rows_aligned and not last, pad)
