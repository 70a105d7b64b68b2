"""The generic compiled kernel: one strided copy that walks the factor views of any layout (numba).

Every layout the factor plan covers (any tiling, legacy padding, relayouts between two of them) is one copy between two
strided views of the same factors, done here in destination order. Its innermost work is a block of two axes, the
destination's most minor one and the source's contiguous one: by their sizes and strides a run (short ones as words,
else ``memcpy``), a 2- to 8-way (de)interleave of rows, 9 or more rows (planes) interleaved a 16-byte lane at a time,
or register transposes of squares (16x16 or 8x8; of one line a side, streamed, on line-aligned destination rows; 8-row
blocks of a line a row, alone or side by side); anything else element by element. Transposing blocks prefetch the
source of the next one while they move their own.

A copy's block kind is chosen in Python (:mod:`._kinds`); each kind is an entry point of its own (``_kinds.WALKS``),
made by :func:`_walker` with the kind a constant of the closure, so numba prunes the other kinds' branches and a first
use compiles its own kind's code only. Row (de)interleaves are loops of their own (in :mod:`._side_by_side`, with the
blocks side by side in the destination): inside the block subroutine LLVM made the byte ones up to 1.6x slower. Long
2-d transposes (``staged_transpose``: source rows staged in the cache by :mod:`._staging`, then transposed out), long
rows at different offsets in their lines (``shifted_rows``), rows laid out with the padding after each
(``padded_rows``) or cut back out of such rows (``cut_rows``), and padding in runs (``padding_runs``) have kernels here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intrinsics import (
    _copy,
    _fence,
    _get,
    _get_word,
    _inline,
    _jit,
    _lanes,
    _prefetch_rows,
    _put,
    _put_word,
    _side,
    _stream,
    _subroutine,
    _width,
)
from ._kernels import _chunked_runs, _copy_out, _emit, _runs, _scalar
from ._kinds import (
    ALIASED_CHUNK,
    GATHER_BYTES,
    GROUPS,
    LINE,
    PAIRED,
    PLANES,
    QUARTERS,
    ROWS,
    RUNS,
    RUNS_APART,
    SHIFTED_PIECE,
    SHIFTED_ROW_BYTES,
    SHORT,
    SQUARES,
    TURNS,
    WALKS,
    WIDE,
    WIDE_LINES,
)
from ._shuffles import (
    _byte_rows8,
    _transpose,
    _transpose8,
    _transpose16,
    _transpose_bytes,
    _transpose_short_nt,
)
from ._side_by_side import (
    _deinterleaved,
    _gather_lines,
    _grouped_block,
    _interleaved,
    _interleaved_planes,
    _quarter_block,
    _short_rows,
    _turned_block,
    _wide_block,
    _wide_lines_block,
)
from ._staging import _stage, _staged_runs, _word_rows
from ._tables import _strided, _swept

# typed constants: a literal 0 or 1 in a call would make numba compile the callee once more for it
_0, _1, _2, _3 = np.int64(0), np.int64(1), np.int64(2), np.int64(3)
_WORD = np.uint16(0)  # the witness of 2-byte words
_BYTE = np.uint8(0)


@_jit
def padded_rows(
    dst: int, src: int, pad: Any, length: int, pitch: int, s_pitch: int, inner: int, s_outer: int, end: int,
    stream: int, scratch: int, room: int, part: Any, d_inner: int, d_outer: int,
) -> None:
    """Rows [part[0], part[1]) of ``length`` elements (row ``r`` at ``(r // inner) * s_outer + (r % inner) * s_pitch``
    elements in the source: groups of ``inner`` rows) laid out ``pitch`` elements apart (in groups of ``d_inner``
    rows, ``d_outer`` elements apart), each followed by ``pitch - length`` copies of ``pad``: as many as fit ``room``
    bytes at a time staged at ``scratch`` (on a line), where their padding is written once, whence each group's
    rows go out as one run (streamed with ``stream``). The padding as a strided pass of its own, then runs each ending
    on a partial line, took u8 ``[N,100]{1,0:T(1,128)}`` 'to' to 2.9x memcpy.

    Rows of up to 8 words go a word at a time: each read whole from the source (past its end, where that stays
    before ``end``, the address past the source's last byte), its padding put in from a row of it kept past the
    staged rows (a copy of each row's few bytes took pred rows of 5 to 8 at 1.6 ns a row)."""
    width = _width(pad)
    row = pitch * width
    data = length * width
    words = row // 8 if row % 8 == 0 and row <= 64 else 0
    per = max(1, room // row - (1 if words else 0))
    for k in range(min(per, part[1] - part[0])):
        for c in range(length, pitch):
            _put(scratch + k * row, c, pad)
    pads = scratch + per * row  # (rows of words: a row of padding past the staged rows, its elements' bytes 0)
    for c in range(length, pitch if words else length):
        _put(pads, c, pad)
    for c in range(data if words else 0):
        _put(pads, c, _BYTE)
    group, at = part[0] // inner, part[0] % inner
    for first in range(part[0], part[1], per):
        count = min(per, part[1] - first)
        k = 0
        while k < count:
            s = src + (group * s_outer + at * s_pitch) * width
            n = min(count - k, inner - at)  # (rows one after the other in the source)
            whole = 0  # (the rows whose words end before ``end``)
            if words and s + 8 * words <= end:
                whole = n if s_pitch == 0 else min(n, (end - 8 * words - s) // (s_pitch * width) + 1)
                _word_rows(scratch + k * row, row, s, s_pitch * width, whole, words, data, pads)
            for q in range(whole, n):
                _copy(scratch + (k + q) * row, s + q * s_pitch * width, data)
            k += n
            at += n
            if at == inner:
                group, at = group + 1, 0
        k = 0
        while k < count:  # (the rows of one destination group at a time)
            g, i = (first + k) // d_inner, (first + k) % d_inner
            n = min(count - k, d_inner - i)
            _copy_out(dst + (g * d_outer + i * pitch) * width, scratch + k * row, n * row, stream)
            k += n
    if stream:
        _fence()


@_jit
def cut_rows(
    dst: int, src: int, pad: Any, length: int, pitch: int, d_pitch: int, inner: int, d_outer: int, part: Any,
) -> None:
    """Rows [part[0], part[1]) of ``pitch`` elements back to back at ``src``, their first ``length`` elements to the
    rows at ``(r // inner) * d_outer + (r % inner) * d_pitch`` elements from ``dst`` (groups of ``inner`` rows;
    ``padded_rows`` the other way). Where the rows of a group continue each other (``d_pitch`` is ``length``) and
    their bytes are at most 8 words, each goes a word at a time, stored whole: its last word's bytes past the row
    land on the next rows', which their own stores then put right (the group's last rows, whose words would pass its
    end, stored as they are)."""
    width = _width(pad)
    row, data = pitch * width, length * width
    words = (data + 7) // 8 if row % 8 == 0 and data <= 64 and d_pitch == length else 0
    group, at = part[0] // inner, part[0] % inner
    r = part[0]
    while r < part[1]:
        d = dst + (group * d_outer + at * d_pitch) * width
        n = min(part[1] - r, inner - at)  # (rows one after the other in the destination)
        s = src + r * row
        whole = 0  # (the rows whose words end within the group's rows)
        if words and n * data >= words * 8:
            whole = min(n, (n * data - words * 8) // data + 1)
        if words == 1:  # (a loop of its own: rows of up to 8 bytes)
            for q in range(whole):
                _put_word(d + q * data, _0, _get_word(s + q * row, _0))
        else:
            for q in range(whole):
                for j in range(words):
                    _put_word(d + q * data, j, _get_word(s + q * row, j))
        for q in range(whole, n):
            _copy(d + q * d_pitch * width, s + q * row, data)
        r += n
        at += n
        if at == inner:
            group, at = group + 1, 0


@_jit
def padding_runs(
    dst: int, pattern: int, piece: int, length: int, shape: Any, steps: Any, first: int, last: int, stream: int,
    work: Any,
) -> None:
    """Runs of ``length`` bytes, at ``dst`` plus the byte ``steps`` of an index into ``shape`` (the first axis over
    [first, last)), filled from ``pattern`` (``piece`` bytes of padding, on a line: a run's, or a whole number of
    lines of it) a piece at a time; with ``stream``, each run's whole lines streamed. Written so before the copy of
    the elements, the padding of a partial tile column took f16 ``[200,83886]{0,1:T(8,128)(2,1)}`` 'to' from 5.2 to
    4.4 ms; NumPy's fill of the same runs, stored plainly, cost what a pass over the whole buffer did (1.2 ms)."""
    n = shape.size
    index = work[:n]
    index[:] = 0
    index[0] = first
    if first >= last:
        return
    offset = first * steps[0]
    while True:
        for k in range(0, length, piece):
            _copy_out(dst + offset + k, pattern, min(piece, length - k), stream)
        j = n - 1
        while True:
            index[j] += 1
            offset += steps[j]
            if index[j] < (last if j == 0 else shape[j]):
                break
            if j == 0:
                if stream:
                    _fence()
                return
            offset -= index[j] * steps[j]
            index[j] = 0
            j -= 1


@_jit
def shifted_rows(
    dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, first: int, last: int, scratch: int,
    block: int,
) -> None:
    """``dst[u*du + i] = src[u + i*si]`` for ``first <= u < last`` and every ``i < small``, for long destination
    rows that sit at different offsets in their lines (legacy padding), 2-, 4- or 8-byte words; the part ending at
    ``big`` also does the rows after the last whole square. ``scratch``: ``block * 2`` lines, aligned.

    Squares of one line a side are transposed into a scratch that keeps the last two of each destination row, whose
    next whole line (at its own offset) is then streamed out of it. Rows go ``block`` at a time (whole lines of
    elements), squares across them a line's worth of source rows at a time; a block's rows go out once the next
    block's square is stored (a line just stored read at another offset would wait for the store). Partial first
    and last lines, and the rows and columns left over, are stored plainly.
    """
    width = _width(pad)
    line = LINE // width
    full_u, squares = big - big % line, small // line
    end = min(last, full_u)
    for u_first in range(first, end, block):
        u_last = min(end, u_first + block)
        for t in range(squares):
            s = src + t * line * si * width
            for u0 in range(u_first, u_last + line, line):  # each block's rows go out one block later
                if u0 < u_last:
                    _transpose(scratch + (u0 - u_first) * 2 * LINE + LINE, 2 * line, s + u0 * width, si, _0, pad)
                if u0 == u_first:
                    continue
                rows = scratch + (u0 - line - u_first) * 2 * LINE
                out = dst + (u0 - line) * du * width
                for r in range(line):  # each row's line t-1 (from its own line boundary): old half, then new
                    row = rows + r * 2 * LINE
                    shift = (-out) & (LINE - 1)  # bytes before the row's first line boundary
                    if t:
                        _stream(out + shift + (t - 1) * LINE, row + shift)
                    else:
                        _copy(out, row + LINE, shift)  # the partial first line
                    _copy(row, row + LINE, LINE)  # the new half becomes the old one
                    out += du * width
        for u in range(u_first, u_last if squares else u_first):  # the last line (partial, or whole on a line)
            out = dst + u * du * width
            shift = (-out) & (LINE - 1)
            row = scratch + (u - u_first) * 2 * LINE
            _copy(out + shift + (squares - 1) * LINE, row + shift, LINE - shift)
    if end > first:  # the columns after the last whole square
        _scalar(dst + first * du * width, src + first * width, pad, end - first, small, du, _1, si, end - first,
                squares * line)
    if last >= big and full_u < big:  # the rows after the last whole square
        _scalar(dst + full_u * du * width, src + full_u * width, pad, big - full_u, small, du, _1, si, _0, _0)
    _fence()


@_inline
def _squares_end(n: int, side: int) -> int:
    """``n`` rounded up to whole squares of ``side`` (the last square of a row overlaps the one before)."""
    return n if n % side == 0 else n - n % side + side


@_subroutine
def _chunked_squares(dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int) -> None:
    """Byte squares of more than 16 source rows a multiple of 4 KiB apart (their lines all in one set of a 32-48 KiB
    cache, and of a larger one where the pages are large: planes of 64 x 64, 128 x 128, 256 x 256 bytes),
    ``ALIASED_CHUNK`` columns at a time: a square's 16 rows across the chunk, then the next 16 rows. Square by square
    down all the rows, every row's line is live at once (96 for 96 channels) and they evict each other before the
    four squares that share each have read it; 16 at a time fit, and the chunk's destination stays in the cache
    until its rows are all written."""
    side = _side(pad)
    end_u, end_i = _squares_end(big, side), _squares_end(small, side)
    for u0 in range(0, end_u, ALIASED_CHUNK):
        for ii in range(0, end_i, side):
            i = min(ii, small - side)
            for uu in range(u0, min(u0 + ALIASED_CHUNK, end_u), side):
                u = min(uu, big - side)
                _transpose(dst + u * du + i, du, src + u + i * si, si, _0, pad)


def _block_of(kind: int) -> Any:
    """The block subroutine of ``kind`` (``ROWS``, ``SQUARES``, ``SHORT``): ``dst[u*du + i*di] = src[u + i*si]`` for
    ``u < big``, ``i < small`` (addresses in bytes, steps in elements), the other kind's code left out (``kind``
    is a constant of the closure: numba prunes its branches before typing them).

    With ``stream``, whole destination lines at line-aligned addresses are written with streaming stores.
    ``ahead`` (0: none) is the source of the next block, of the same shape: each square's counterpart there is
    prefetched while the square is moved, so that the next block starts on cached lines.
    """

    def block(
        dst: int, src: int, pad: Any, big: int, small: int, du: int, di: int, si: int, stream: int, ahead: int
    ) -> None:
        width = _width(pad)
        aligned = stream and dst % LINE == 0
        rows_aligned = aligned and (du * width) % LINE == 0
        if big == 1:
            if di == 1 and si == 1:
                if stream:
                    _copy_out(dst, src, small * width, _1)
                else:
                    _copy(dst, src, small * width)
            else:
                for i in range(small):
                    _put(dst, i * di, _get(src, i * si, pad))
            return
        if di != 1:
            _scalar(dst, src, pad, big, small, du, di, si, _0, _0)
            return
        lanes = _lanes(pad)
        if kind == ROWS and du == small and 2 <= small <= 8:  # rows interleaved: (2,1), (4,1) sub-tiles out; channels
            _interleaved(dst, src, pad, big, small, si, aligned)
            if big < lanes:
                _scalar(dst, src, pad, big, small, du, di, si, _0, _0)
            return
        if kind == ROWS and si == big and 2 <= big <= 7:  # rows de-interleaved: the same on the way in
            _deinterleaved(dst, src, pad, big, small, du, rows_aligned)
            if small < lanes:
                _scalar(dst, src, pad, big, small, du, di, si, _0, _0)
            return
        if kind == ROWS or (kind == SHORT and not (rows_aligned and 2 <= big < lanes <= small and lanes > 8)):
            _scalar(dst, src, pad, big, small, du, di, si, _0, _0)  # (not the walk's kind after all)
            return
        if kind == SHORT and 8 <= big:  # short source rows: 8 x line blocks, streamed
            full_u, full_i = big - big % 8, small - small % lanes
            for u in range(0, full_u, 8):
                for i in range(0, full_i, lanes):
                    s = src + (u + i * si) * width
                    _transpose_short_nt(dst + (u * du + i) * width, du, s, lanes // 2 * si * width, si, pad)
            if big - full_u >= 2:  # the rows after the last 8 (12 channels: 4) as a block of 2 to 7 rows
                _short_rows(dst + full_u * du * width, src + full_u * width, pad, big - full_u, small, du, si, _0)
                _scalar(dst, src, pad, full_u, small, du, di, si, full_u, full_i)
            else:
                _scalar(dst, src, pad, big, small, du, di, si, full_u, full_i)
            return
        if kind == SHORT:  # 4 (2) x line blocks
            _short_rows(dst, src, pad, big, small, du, si, ahead)
            return
        head = (-dst) % LINE // width  # (elements before the first line boundary of each destination row)
        if stream and head and (du * width) % LINE == 0 and (small - head) * width >= LINE:
            # rows on the line grid, the block's columns not (u8[200,256,640]{0,1,2} laid out, 200 bytes a block):
            # the whole lines between a thin head and tail streamed, not all in plain squares of 16 (7.1 -> 4.9x)
            body = (small - head) - (small - head) * width % LINE // width
            for low, high, on in ((_0, head, _0), (head, head + body, stream), (head + body, small, _0)):
                if high > low:
                    _squares(dst + low * width, src + low * si * width, pad, big, high - low, du, si, on,
                             ahead + low * si * width if ahead else _0)
            return
        _squares(dst, src, pad, big, small, du, si, stream, ahead)

    block.__name__ = block.__qualname__ = {ROWS: "_rows_block", SQUARES: "_squares_block", SHORT: "_short_block"}[kind]
    return _subroutine(block)


@_subroutine
def _squares(dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, stream: int, ahead: int) -> None:
    """``dst[u*du + i] = src[u + i*si]`` for ``u < big``, ``i < small`` in squares (of whole lines, streamed, where
    the rows are on the line grid; else of 16 or 8 elements; else one element at a time)."""
    width = _width(pad)
    aligned = stream and dst % LINE == 0
    rows_aligned = aligned and (du * width) % LINE == 0
    side = _side(pad)
    if width == 1 and rows_aligned and big >= LINE and small >= LINE:  # bytes: squares of whole lines, streamed
        side = LINE
    if side > 16 and not rows_aligned:  # squares of whole lines only pay off when streamed
        side = 16
    if big < side or small < side:
        side = 16 if side > 16 and big >= 16 and small >= 16 else 8
    if big < side or small < side:
        _scalar(dst, src, pad, big, small, du, _1, si, _0, _0)
        return
    if width == 1 and side == 16 and small > side and si % 4096 == 0:
        _chunked_squares(dst, src, pad, big, small, du, si)  # (planes 4 KiB apart read back: 256 x 256 x 96
        # channels 2.8 -> 2.1x memcpy)
        return
    # the rows and columns a whole number of squares leaves: one more square each way, overlapping the last
    # (the same values again; off the line grid, so not streamed)
    end_u, end_i = _squares_end(big, side), _squares_end(small, side)
    streamed = rows_aligned and side == _side(pad) and side * width == LINE
    if side == LINE and width == 1 and big > side and big % side >= 8:
        # bytes, the rows past the last whole square: blocks of 8 (whole destination lines, streamed once;
        # an overlapping square would stream the rows it shares twice: 96 channels to planes)
        end_u = big - big % side
        for uu in range(end_u, big, 8):
            u = min(uu, big - 8)
            for ii in range(0, end_i, side):
                i = min(ii, small - side)
                _byte_rows8(dst + (u * du + i) * width, du, src + (u + i * si) * width, LINE // 2 * si * width,
                             si, _1 if i == ii else _0, pad)
    for uu in range(0, end_u, side):
        u = min(uu, big - side)
        for ii in range(0, end_i, side):
            i = min(ii, small - side)
            on_lines = i == ii
            d, s = dst + (u * du + i) * width, src + (u + i * si) * width
            if ahead:  # the same square of the next block: its source lines on the way while this one moves
                _prefetch_rows(ahead + (u + i * si) * width, si * width, side * width, side)
            if side == LINE and width == 1:
                _transpose_bytes(d, du, s, si, _1 if on_lines else _0, pad)
            elif side == _side(pad):
                _transpose(d, du, s, si, streamed and on_lines, pad)
            elif side == 8:
                _transpose8(d, du, s, si, streamed and on_lines, pad)
            else:
                _transpose16(d, du, s, si, streamed and on_lines, pad)


_rows_block = _block_of(ROWS)
_squares_block = _block_of(SQUARES)
_short_block = _block_of(SHORT)


def _any_block_of(kind: int) -> Any:
    """The block subroutine of ``kind`` (``ROWS``, ``SQUARES``, ``SHORT``: :func:`_block_of`); a streamed block whose
    rows continue each other (one contiguous run) goes through ``scratch`` (on a line, ``room`` bytes) instead,
    whence its whole lines are streamed out (only the run's partial first and last lines are stored plainly), when
    its destination is off the line grid (a run of at most ``room`` bytes) or its rows are not whole lines (rows of
    more than 4 elements: shorter ones are interleaved on the way out; ``room`` bytes of rows at a time, when they
    hold all the block's rows or 16). A streamed block whose destination rows are apart by other than whole lines
    (each meets the line grid at its own offset) and at least ``SHIFTED_ROW_BYTES`` long goes through ``scratch``
    a piece of every row at a time, whence each row's whole lines are streamed from its own line boundary
    (:func:`_emit`: the line a piece leaves unfinished carried to the next, the rows' ends stored plainly)."""
    block = {ROWS: _rows_block, SQUARES: _squares_block, SHORT: _short_block}[kind]  # (a constant of the closure)

    def any_block(
        dst: int, src: int, pad: Any, big: int, small: int, du: int, di: int, si: int, stream: int, ahead: int,
        scratch: int, room: int,
    ) -> None:
        width = _width(pad)
        n = big * small * width
        if kind == SHORT and (si * width) % 4096 == 0 and small > 16 and 8 <= big and (
                small + 1) * 2 * LINE <= GATHER_BYTES:
            # more than 16 short source rows 4 KiB apart (one cache set): their lines gathered first, each read
            # once (the next blocks, the rest of the same lines, reuse them: the tags say which lines they are)
            tags = scratch + room + LINE  # (the lines' first address, si, small, their end; zeroed by the caller)
            base, end = src - src % LINE, src + big * width
            if not (_get(tags, _0, _0) == base and _get(tags, _1, _0) == si and _get(tags, _2, _0) == small
                    and end <= _get(tags, _3, _0)):
                stop = end + (-end) % LINE
                _gather_lines(tags + 2 * LINE, base, _0, si * width, _1, small, stop - base, 2 * LINE)
                _put(tags, _0, base)
                _put(tags, _1, si)
                _put(tags, _2, small)
                _put(tags, _3, stop)
            src, si, ahead = tags + 2 * LINE + (src - base), 2 * LINE // width, _0
        run = stream and di == 1 and du == small and 4 * LINE <= n
        if run and dst % LINE and n <= room:
            block(scratch, src, pad, big, small, du, di, si, _0, ahead)
            _copy_out(dst, scratch, n, _1)
        elif run and small > 4 and (small * width) % LINE and room // (small * width) >= min(big, 16):
            # (else straight out, plainly stored: a chunk of fewer rows than the block's kind takes went element by
            # element, 'to' x memcpy: u8 [500,9586,7]{1,2,0} 4.4 -> 2.3, bf16 [300,3001,5]{1,2,0} 4.3 -> 2.8)
            rows = room // (small * width)
            for u in range(0, big, rows):
                c = min(rows, big - u)
                next_rows = src + (u + rows) * width if u + rows < big else ahead  # (the next chunk's rows)
                block(scratch, src + u * width, pad, c, small, du, di, si, _0, next_rows)
                _copy_out(dst + u * small * width, scratch, c * small * width, _1)
        elif (stream and di == 1 and big >= 2 and (du * width) % LINE and small * width >= SHIFTED_ROW_BYTES
              and room // big >= 4 * LINE):
            # (planes of odd lengths: f32 [12,699050]{0,1} read back 3.3 -> 1.4x memcpy; scratch rows on lines, a
            # line of slack before each: the carry, the line a piece left unfinished, goes there)
            # squares of fewer rows than their side (9 to 15) as whole squares, the rows past the block's read from
            # within its own span and left in scratch (u8 [12,2796202]{0,1} read back 2.35 -> 1.6)
            tall = 16 if kind == SQUARES and 8 < big < 16 and width < 8 else big
            pitch = min(room // tall - LINE, SHIFTED_PIECE + LINE) // LINE * LINE  # (the slack line and a piece)
            cols = (pitch - LINE) // width
            carry = scratch + tall * pitch
            i0 = 0
            while i0 < small:
                c = min(cols, small - i0)
                next_piece = src + (i0 + c) * si * width if i0 + c < small else ahead
                rows = tall if tall - big <= (small - i0 - c) * si else big
                block(scratch + LINE, src + i0 * si * width, pad, rows, c, pitch // width, di, si, _0, next_piece)
                for u in range(big):
                    _emit(dst + (u * du + i0) * width, scratch + u * pitch, c * width, carry + u * LINE, i0 == 0,
                          i0 + c >= small)
                i0 += c
        else:
            block(dst, src, pad, big, small, du, di, si, stream, ahead)

    any_block.__name__ = any_block.__qualname__ = {ROWS: "_any_rows_block", SQUARES: "_any_squares_block",
                                                   SHORT: "_any_short_block"}[kind]
    return _subroutine(any_block)


_any_rows_block = _any_block_of(ROWS)
_any_squares_block = _any_block_of(SQUARES)
_any_short_block = _any_block_of(SHORT)


@_subroutine
def _planes_block(
    dst: int, src: int, pad: Any, big: int, small: int, du: int, di: int, si: int, stream: int, scratch: int,
    room: int,
) -> None:
    """``dst[u*small + i] = src[u + i*si]``: 9 or more rows (planes) of ``big`` elements interleaved
    (:func:`_interleaved_planes`); streamed, through ``scratch`` (on a line, ``room`` bytes and a line more), whence
    whole lines are streamed out."""
    width = _width(pad)
    if di != 1 or du != small:  # (not planes after all: the walk's kind says they are)
        _scalar(dst, src, pad, big, small, du, di, si, _0, _0)
        return
    n = big * small * width
    if not (stream and 4 * LINE <= n and room >= small * width):
        _interleaved_planes(dst, src, pad, big, small, si, n)
        return
    rows = room // (small * width)
    for u in range(0, big, rows):
        c = min(rows, big - u)
        _interleaved_planes(scratch, src + u * width, pad, c, small, si, room + LINE)
        _copy_out(dst + u * small * width, scratch, c * small * width, _1)


def _walker(kind: int) -> Any:
    """The entry point of the walk of ``kind`` (:mod:`._kinds`): a copy between strided views at ``dst`` and
    ``src`` (axes in destination order, strides in elements), the other kinds' code left out (``kind`` is a
    constant of the closure: numba prunes their branches before typing them, so a first use compiles one kind).

    ``unit`` is the axis (not the last) with source stride 1, -1 for none; the outermost other axis only runs over
    [first, last), so that threads can split the work there. ``stream`` asks for streaming stores. ``work`` is
    scratch of two int64 per axis (no allocation in the kernel); ``scratch``, ``room`` bytes on a line, takes the
    blocks bound for a destination off the line grid (:func:`_any_block_of`).
    """

    def walk(
        dst: int, src: int, pad: Any, shape: Any, d_strides: Any, s_strides: Any, unit: int, first: int, last: int,
        stream: int, work: Any, scratch: int, room: int,
    ) -> None:
        n = shape.size
        width = _width(pad)
        inner = n - 1
        big = shape[unit] if unit >= 0 else 1
        du = d_strides[unit] if unit >= 0 else 0
        small, di, si = shape[inner], d_strides[inner], s_strides[inner]
        axes = work[:n]
        m = 0
        for k in range(inner):
            if k != unit:
                axes[m] = k
                m += 1
        if kind == ROWS or kind == SQUARES or kind == PLANES or kind == SHORT:
            if m == 0:
                if kind == SHORT:
                    _any_short_block(dst, src, pad, big, small, du, di, si, stream, _0, scratch, room)
                elif kind == PLANES:
                    _planes_block(dst, src, pad, big, small, du, di, si, stream, scratch, room)
                elif kind == ROWS:
                    _any_rows_block(dst, src, pad, big, small, du, di, si, stream, _0, scratch, room)
                else:
                    _any_squares_block(dst, src, pad, big, small, du, di, si, stream, _0, scratch, room)
                if stream:
                    _fence()
                return
        rows, dr, sr = 0, 0, 0
        runs_stream = min(stream, _1)
        wide, fs, fd = 0, 0, 0
        groups, dg, sg = 0, 0, 0
        if kind == RUNS:  # the innermost outer axis loops inside one call
            rows, dr, sr = shape[axes[m - 1]], d_strides[axes[m - 1]], s_strides[axes[m - 1]]
            # runs back to back in the destination, not whole lines: plain stores (streamed, rows of 500 bytes read
            # back from tiles of 512 went 2.1x memcpy, their partial lines read first; staged and streamed 1.4; 1.1)
            # (``stream`` 2: such runs gathered into whole lines through the scratch, :func:`_staged_runs`)
            if dr == small and (small * width) % LINE != 0:
                runs_stream = _2 if stream == 2 else _0
            if m == 1:  # no other axis: the runs [first, last) (the threads' split)
                if first < last and runs_stream == 2:
                    _staged_runs(dst + first * dr * width, src + first * sr * width, pad, last - first, small, sr,
                                 scratch, room)
                elif first < last:
                    _runs(dst + first * dr * width, src + first * sr * width, pad, last - first, small, dr, sr,
                          runs_stream)
                if stream:
                    _fence()
                return
            if m == 2 and rows >= 2 and sr * width >= RUNS_APART and dr == small and s_strides[axes[0]] <= 4 * small:
                _chunked_runs(dst, src, pad, first, last, rows, small, d_strides[axes[0]], s_strides[axes[0]], dr, sr,
                              min(runs_stream, _1))  # (streams far apart, each read on a chunk at a time)
                if stream:
                    _fence()
                return
            m -= 1
        elif kind == GROUPS:
            # blocks that continue each other's source rows (sg apart: big, or a group cut short)
            groups, dg, sg = shape[axes[m - 1]], d_strides[axes[m - 1]], s_strides[axes[m - 1]]
            if m == 1:  # no other axis: one call for the blocks [first, last) (the threads' split)
                if first < last:
                    _grouped_block(dst + first * dg * width, src + first * sg * width, pad, big, sg, small, du, si,
                                   last - first, dg, stream, scratch, room)
                if stream:
                    _fence()
                return
            m -= 1
        elif kind == TURNS:
            wide = shape[axes[m - 1]]  # the words along the rows (step ``small`` on both sides)
            if m == 1:  # no other axis: the words [first, last) (the threads' split)
                if first < last:
                    _turned_block(dst + first * small * width, src + first * small * width, pad, small,
                                  (last - first) * small, du, si, stream)
                if stream:
                    _fence()
                return
            m -= 1
        elif kind == WIDE or kind == WIDE_LINES or kind == QUARTERS:
            # the blocks continue each other's rows (fd apart in the destination: small, or a group cut short)
            wide, fs, fd = shape[axes[m - 1]], s_strides[axes[m - 1]], d_strides[axes[m - 1]]
            if m == 1:  # no other axis: one wide block of the blocks [first, last) (the threads' split)
                if kind == WIDE and first < last:
                    _wide_block(dst + first * small * width, src + first * fs * width, pad, big, small, du, si,
                                last - first, fs, stream, _0, scratch, room)
                elif kind == WIDE_LINES and first < last:
                    _wide_lines_block(dst + first * small * width, src + first * fs * width, pad, big, small, du,
                                      si, last - first, fs, stream, _0, scratch, room)
                elif kind == QUARTERS and first < last:
                    _quarter_block(dst + first * fd * width, src + first * fs * width, pad, big, small, du, si,
                                   last - first, fs, fd, stream, _0, scratch, room)
                if stream:
                    _fence()
                return
            m -= 1
        index = work[n : 2 * n]
        index[:] = 0
        a = axes[0]
        index[0] = first
        d_off, s_off = first * d_strides[a], first * s_strides[a]
        if first >= last:
            return
        held = False  # a block runs once the next one is known: it prefetches that one's source as it goes
        held_d, held_s = 0, 0
        while True:
            if kind == RUNS and runs_stream == 2:
                _staged_runs(dst + d_off * width, src + s_off * width, pad, rows, small, sr, scratch, room)
            elif kind == RUNS:
                _runs(dst + d_off * width, src + s_off * width, pad, rows, small, dr, sr, runs_stream)
            elif kind == GROUPS:
                _grouped_block(dst + d_off * width, src + s_off * width, pad, big, sg, small, du, si, groups, dg,
                               stream, scratch, room)
            elif kind == TURNS:
                _turned_block(dst + d_off * width, src + s_off * width, pad, small, wide * small, du, si, stream)
            else:
                if held:
                    if kind == WIDE:
                        _wide_block(dst + held_d * width, src + held_s * width, pad, big, small, du, si, wide, fs,
                                    stream, src + s_off * width, scratch, room)
                    elif kind == WIDE_LINES:
                        _wide_lines_block(dst + held_d * width, src + held_s * width, pad, big, small, du, si, wide,
                                          fs, stream, src + s_off * width, scratch, room)
                    elif kind == QUARTERS:
                        _quarter_block(dst + held_d * width, src + held_s * width, pad, big, small, du, si, wide,
                                       fs, fd, stream, _0, scratch, room)
                    elif kind == PLANES:
                        _planes_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si, stream,
                                      scratch, room)
                    elif kind == SHORT:
                        _any_short_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si,
                                         stream, src + s_off * width, scratch, room)
                    elif kind == ROWS:
                        _any_rows_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si, stream,
                                        src + s_off * width, scratch, room)
                    else:
                        _any_squares_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si,
                                           stream, src + s_off * width, scratch, room)
                held, held_d, held_s = True, d_off, s_off
            j = m - 1
            while True:
                a = axes[j]
                index[j] += 1
                d_off += d_strides[a]
                s_off += s_strides[a]
                if index[j] < (last if j == 0 else shape[a]):
                    break
                if j == 0:
                    if held:
                        if kind == WIDE:
                            _wide_block(dst + held_d * width, src + held_s * width, pad, big, small, du, si, wide, fs,
                                        stream, _0, scratch, room)
                        elif kind == WIDE_LINES:
                            _wide_lines_block(dst + held_d * width, src + held_s * width, pad, big, small, du, si,
                                              wide, fs, stream, _0, scratch, room)
                        elif kind == QUARTERS:
                            _quarter_block(dst + held_d * width, src + held_s * width, pad, big, small, du, si, wide,
                                           fs, fd, stream, _0, scratch, room)
                        elif kind == PLANES:
                            _planes_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si,
                                          stream, scratch, room)
                        elif kind == SHORT:
                            _any_short_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si,
                                             stream, _0, scratch, room)
                        elif kind == ROWS:
                            _any_rows_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si,
                                            stream, _0, scratch, room)
                        else:
                            _any_squares_block(dst + held_d * width, src + held_s * width, pad, big, small, du, di, si,
                                               stream, _0, scratch, room)
                    if stream:
                        _fence()
                    return
                d_off -= index[j] * d_strides[a]
                s_off -= index[j] * s_strides[a]
                index[j] = 0
                j -= 1

    walk.__name__ = walk.__qualname__ = WALKS[kind]
    return _jit(walk)


walk_runs = _walker(RUNS)
walk_groups = _walker(GROUPS)
walk_wide = _walker(WIDE)
walk_wide_lines = _walker(WIDE_LINES)
walk_quarters = _walker(QUARTERS)
walk_rows = _walker(ROWS)
walk_squares = _walker(SQUARES)
walk_planes = _walker(PLANES)
walk_short = _walker(SHORT)
walk_turns = _walker(TURNS)


def _square_of(canonical: bool) -> Any:
    """The subroutine moving a square of one line a side from staged rows at ``at`` (``stride`` bytes apart) to rows
    ``step`` bytes apart at ``to``; bytes staged as 2-byte words (``word`` 2: two source rows interleaved) as such
    words. ``canonical``: every byte made 0 or 1 on the way (pred's; a subroutine of its own, not a flag: the plain
    one with both took u8 transposes 2.6 -> 3.5 ms)."""

    def square(to: int, step: int, at: int, stride: int, stream: int, pad: Any, word: int) -> None:
        if word == _width(pad):
            _strided(to, step, at, stride, stream, pad, canonical)
        else:  # (bytes staged as 2-byte words)
            _strided(to, step, at, stride, stream, _WORD, canonical)

    square.__name__ = square.__qualname__ = "_square_canonical" if canonical else "_square"
    return _subroutine(square)


_square = _square_of(False)
_square_canonical = _square_of(True)


def _staged_transpose_of(canonical: bool) -> Any:
    """The entry point of staged 2-d transposes (``staged_transpose``); ``canonical``: every byte written 0 or 1, as
    pred's are, by the squares that move them (``staged_transpose_canonical``; no pass over the bytes after)."""
    square = _square_canonical if canonical else _square

    def staged_transpose(
        dst: int, src: int, pad: Any, big: int, small: int, du: int, si: int, first: int, last: int, scratch: int,
        rows: int, cols: int, ahead: int, ring: int, shifted: int, bits: int, packs: int,
    ) -> None:
        """``dst[u*du + i] = src[u + i*si]`` for ``first <= u < last`` and every ``i < small``: a 2-d transpose with
        streamed destination rows, through blocks of ``rows`` source rows x ``cols`` words (1-, 2-, 4-byte).

        Each block's source rows are first copied to ``scratch`` (line-aligned, ``rows * (cols * width + LINE)``
        bytes, in L2) one after the other, prefetched ``ahead`` rows on, so that memory is read in long runs, one at
        a time. Squares of one line a side are then transposed out of it, a band of destination rows at a time, each
        row's lines in order: streamed straight to rows on the line grid; or (``shifted``: rows at any offset, as
        legacy padding and odd row lengths make them; and the partial bands and squares at the ends) into ``ring``
        (scratch for a band's rows and a line each, then a line for each of ``cols`` rows), whence each row's whole
        lines are streamed from its own line boundary (:func:`_emit`), the line a block leaves unfinished carried to
        the next one. Bytes streamed straight are staged as rows of 2-byte words (two source rows interleaved), whose
        squares are one line of each destination row too; ``shifted`` ones are staged as they are (a plain copy, which
        prefetches as wider words do: 2.05 -> 1.85-1.9x memcpy for u8[65552,8191]{0,1} 'to') and transposed in squares
        of 64 x 64 bytes, 64 destination rows at a time. Destination rows back to back (``du`` = ``small``, at most
        ``rows``: a minor batch dim, as ``u8[B,H,W]{0,2,1}``) are one run: a band's rows are transposed into ``ring``
        as they lie there, and streamed on as one piece (u8[184,520,700]{0,2,1} 'to': 3.2 -> 1.7x memcpy).

        Sub-byte fields (E(``bits``), ``bits`` < 8; bytes): ``packs``, the destination is packed and everything here
        counts its bytes (``small``, ``du``), each of its source rows ``8 / bits`` rows of bytes (``si`` apart / ``8 /
        bits``), packed as they are staged; else the source is packed (``si``, ``u``: in fields) and unpacked as it is
        staged.
        """
        width = _width(pad)
        line = LINE // width
        word = width if width > 1 or (bits == 8 and shifted) else 2  # bytes of a staged word (2 for bytes: two source
        # rows' bytes side by side)
        pair = word // width  # source rows per staged row
        band = LINE // word  # destination rows a square covers
        stride = cols * word + LINE  # a line of slack per staged row keeps the squares' rows off one cache set
        ring_step = rows * width + LINE
        carry = ring + band * ring_step
        # destination rows back to back, each whole in one block (E(n) fields go row by row)
        packed = shifted and bits == 8 and small <= rows and du == small
        if packed:
            ring_step = small * width  # (the band's rows as they lie in the destination)
        per = 8 // bits
        unpacks = per > 1 and not packs
        step = si // per if unpacks else si  # between source rows, in the units of ``u``'s bytes
        end = src + ((small * (per if packs else 1) - 1) * (si // per if packs else si) + big) * width  # (the source's)
        if unpacks:
            end = src + (small - 1) * step + (big - 1) // per + 1
        for u0 in range(first, last, cols):
            c = min(cols, last - u0)
            for i0 in range(0, small, rows):
                r = min(rows, small - i0)
                at = src + (u0 // per + i0 * step if unpacks else (u0 + i0 * si) * width)
                _stage(scratch, stride, at, pad, r, c, step, ahead, end, bits, packs, word == width)
                for cb in range(0, c, band):
                    at = scratch + cb * word
                    valid = min(band, c - cb)
                    if not shifted and valid == band and r % line == 0:
                        for rb in range(0, r, line):
                            square(dst + ((u0 + cb) * du + i0 + rb) * width, du * width, at + rb // pair * stride,
                                   stride, _1, pad, word)
                        continue
                    if packed:  # the band's rows, one run, last lines first (each spills into the next row's first)
                        for rb in range(r - 1 - (r - 1) % line, -1, -line):
                            square(ring + LINE + rb * width, ring_step, at + rb // pair * stride, stride, _0, pad, word)
                        u = u0 + cb
                        _emit(dst + u * du * width, ring, valid * ring_step, carry, u == first, u + valid >= last)
                        continue
                    for rb in range(0, r, line):  # the band's lines of this block, after each row's carry
                        square(ring + LINE + rb * width, ring_step, at + rb // pair * stride, stride, _0, pad, word)
                    for k in range(valid):
                        _emit(dst + ((u0 + cb + k) * du + i0) * width, ring + k * ring_step, r * width,
                              carry + (cb + k) * LINE, i0 == 0, i0 + r >= small)
        _fence()

    staged_transpose.__name__ = staged_transpose.__qualname__ = "staged_transpose" + (
        "_canonical" if canonical else "")
    return _jit(staged_transpose)


staged_transpose = _staged_transpose_of(False)
staged_transpose_canonical = _staged_transpose_of(True)


@_jit
def direct_transpose(dst: int, src: int, pad: Any, small: int, du: int, si: int, first: int, last: int, rows: int,
                     lines: int) -> None:
    """``dst[u*du + i] = src[u + i*si]`` for ``first <= u < last`` and every ``i < small`` (each at least a line's
    elements; destination rows on the line grid) in squares of one line a side, streamed: bands of ``rows`` source rows,
    each swept ``lines`` lines of every row at a time, the next sweep's lines prefetched into the second level meanwhile
    (the next band's first lines at a band's end), so that memory is read while the squares stream out. The last square
    of each side overlaps the one before (the same bytes written again), stored plainly where it is off the
    destination's line grid; streamed, it leaves out the destination rows the one before wrote (streamed twice, they
    were written to memory twice: u8 ``[112,224,224,96]{2,1,3,0}`` laid out, 96 rows, 2.10 -> 1.89-2.02x memcpy).
    Destination rows a multiple of ``PAIRED`` bytes apart take squares of 4- and 8-byte words in pairs, two lines of
    each row written one after the other (f32 ``[32768,4096]{0,1}`` 'to', rows 128 KiB apart: 1.63 -> 1.40x memcpy)."""
    width = _width(pad)
    _swept(dst, du * width, src, si * width, 0, pad, first, last, small, rows, lines, 1,
           int(width >= 4 and du * width % PAIRED == 0), False, False, False)
    _fence()
