"""The per-tile subroutines of the tiled kernels (:mod:`._kernels`): a tile's rows interleaved into ``(p,1)``
sub-tiles, tiles cut short (their rows staged with padding), pred and sub-byte values made canonical, nibble pairs
of ``(2,1)E(4)`` tiles, the last lane of rows read back (numba; compiled into each kernel that calls them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intrinsics import (
    _0,
    _1,
    _copy,
    _field_line,
    _field_line_streamed,
    _get,
    _get_word,
    _inline,
    _lanes,
    _or_field_line,
    _prefetch_run_l2,
    _put,
    _put_word,
    _stream,
    _subroutine,
    _width,
)
from ._kinds import LINE, TILES_AHEAD, TILES_AHEAD_ROWS
from ._shuffles import (
    _deinterleave2,
    _deinterleave4,
    _interleave2,
    _interleave4,
    _nibbles_joined,
    _nibbles_split,
    _stream_canonical,
)

_U = np.uint64
_LOW_NIBBLES, _LOW_BITS = _U(0x0F0F0F0F0F0F0F0F), _U(0x0101010101010101)


@_inline
def _interleaved_rows(dst: int, src: int, step: int, groups: int, n: int, d_pitch: int, s_pitch: int, p: int,
                      pad: Any, stream: int) -> None:
    """``groups`` groups of ``p`` rows (``step`` elements apart; groups ``s_pitch`` bytes apart) interleaved into
    ``dst`` (``d_pitch`` bytes a group), ``n`` columns (whole lanes) each; streamed with ``stream`` (``dst`` and the
    groups on lines)."""
    width = _width(pad)
    for g in range(groups):
        d, s = dst + g * d_pitch, src + g * s_pitch
        for c in range(0, n, _lanes(pad)):
            if p == 2:
                _interleave2(d + c * 2 * width, s + c * width, step, stream, pad)
            else:
                _interleave4(d + c * 4 * width, s + c * width, step, stream, pad)


@_inline
def _deinterleaved_rows(dst: int, src: int, step: int, groups: int, n: int, d_pitch: int, s_pitch: int, p: int,
                        pad: Any) -> None:
    """The other way of :func:`_interleaved_rows`: ``groups`` groups of ``p`` interleaved rows at ``src``
    (``s_pitch`` bytes a group) split into rows ``step`` elements apart at ``dst`` (groups ``d_pitch`` bytes apart),
    ``n`` columns (whole lanes) each."""
    width = _width(pad)
    for g in range(groups):
        d, s = dst + g * d_pitch, src + g * s_pitch
        for c in range(0, n, _lanes(pad)):
            if p == 2:
                _deinterleave2(d + c * width, step, s + c * 2 * width, _0, pad)
            else:
                _deinterleave4(d + c * width, step, s + c * 4 * width, _0, pad)


@_subroutine
def _streamed_strip(out: int, step: int, src: int, tiles: int, r_size: int, c_size: int, p: int, pad: Any,
                    stage: int, canon: int) -> None:
    """A strip of ``tiles`` whole tiles of ``(p,1)`` sub-tiles at ``src`` split into its ``r_size`` rows at ``out``
    (``step`` elements apart, each on a line; ``c_size`` a multiple of a line's elements) a tile at a time: the tile's
    rows split into ``stage`` (a tile's bytes, in the first level; made canonical there where ``canon``, as
    :func:`_canonical` takes it, is not 0), then each row's piece streamed out whole.

    Rows staged for several tiles and written out a piece at a time cost about as much as the copy again (this
    2-core Intel Xeon, 512 MiB 'from', x memcpy: s8 ``{1,0:T(8,128)(4,1)}`` 1.71, bf16 ``(2,1)`` 1.47). Pieces
    streamed straight from the split, a line of each of ``p`` rows in turn, were no better for ``p`` 4 (a prototype:
    1.44-1.54, against 1.09-1.16 for each row's piece in one go). The tiles are not prefetched ahead: that took s8
    1.35 -> 1.65 here (the first level's few line fill buffers shared with the streaming stores)."""
    width = _width(pad)
    piece = c_size * width
    for j in range(tiles):
        t = src + j * r_size * piece
        for g in range(r_size // p):
            for c in range(0, c_size, _lanes(pad)):
                s = t + (g * piece + c * width) * p
                if p == 2:
                    _deinterleave2(stage + g * p * piece + c * width, c_size, s, _0, pad)
                else:
                    _deinterleave4(stage + g * p * piece + c * width, c_size, s, _0, pad)
        if canon > 0:
            _canonical(stage, r_size * piece, canon)
        for r in range(r_size):
            d = out + (r * step + j * c_size) * width
            for k in range(0, piece, LINE):
                if canon < 0:  # (pred: each line made 0/1 in registers on its way out)
                    _stream_canonical(d + k, stage + r * piece + k)
                else:
                    _stream(d + k, stage + r * piece + k)


@_subroutine
def _tile_to(dst: int, src: int, step: int, rows: int, cols: int, r_size: int, c_size: int, p: int, pad: Any,
             spare: int) -> None:
    """One tile in physical order at ``dst`` from logical rows at ``src``; only ``rows`` x ``cols`` are not padding."""
    # The logical rows are ``step`` elements apart; ``spare`` has room for a tile (the last columns of whole rows,
    # padded, are staged there to be interleaved a lane at a time).
    width = _width(pad)
    lanes = _lanes(pad)
    if rows == r_size and cols == c_size:
        if p == 1:  # (E(n) fields packed after: the rows as they are)
            for r in range(r_size):
                _copy(dst + r * c_size * width, src + r * step * width, c_size * width)
            return
        if (p == 2 or p == 4) and c_size % lanes == 0:  # (whole tiles apart from the cut-short ones below: their
            # code with c_size for the columns runs 1.15x memcpy, bf16 'to', where the shared code ran 1.6x)
            _interleaved_rows(dst, src, step, r_size // p, c_size, c_size * p * width, p * step * width, p, pad,
                              _0)
            return
    full = 0  # columns moved a lane at a time (whole rows; the rest, and padding, element by element below)
    if rows == r_size and (p == 2 or p == 4) and c_size % lanes == 0:
        full = cols // lanes * lanes
        _interleaved_rows(dst, src, step, r_size // p, full, c_size * p * width, p * step * width, p, pad, _0)
        if full < c_size:  # the rest of each row and the padding after it, staged, interleaved from there
            rest = c_size - full
            for r in range(r_size):
                row = spare + r * rest * width
                _copy(row, src + (r * step + full) * width, (cols - full) * width)
                for c in range(cols - full, rest):
                    _put(row, c, pad)
            _interleaved_rows(dst + full * p * width, spare, rest, r_size // p, rest, c_size * p * width,
                              p * rest * width, p, pad, _0)
        return
    for g in range(r_size // p):
        for c in range(c_size):
            d = (g * c_size + c) * p
            for k in range(p):
                r = g * p + k
                if r < rows and c < cols:
                    _put(dst, d + k, _get(src, r * step + c, pad))
                else:
                    _put(dst, d + k, pad)


@_subroutine
def _short_tile_to(dst: int, src: int, step: int, rows: int, cols: int, r_size: int, c_size: int, pad: Any) -> None:
    """A tile of rows as they are (no sub-tiles: E(n) fields packed after) cut short (``rows`` x ``cols`` not
    padding): the rows there are, then their padding (element by element, it took 39x memcpy, s4
    ``[36,72,87,210]{3,2,1,0:T(8,128)E(4)}`` 'to'; in ``_tile_to``, its code made the full tiles' 25% slower)."""
    width = _width(pad)
    for r in range(r_size):
        row = dst + r * c_size * width
        valid = cols if r < rows else 0
        _copy(row, src + r * step * width, valid * width)
        for c in range(valid, c_size):
            _put(row, c, pad)


@_subroutine
def _groups_out(dst: int, src: int, step: int, groups: int, n: int, d_pitch: int, s_pitch: int, p: int, pad: Any,
                stream: int) -> None:
    """:func:`_interleaved_rows` compiled once (inlined at each of its three call sites in :func:`_staged_tile_to`,
    it added 0.3 s to the first compiled use of a tiled layout)."""
    _interleaved_rows(dst, src, step, groups, n, d_pitch, s_pitch, p, pad, stream)


@_subroutine
def _staged_tile_to(dst: int, src: int, step: int, rows: int, cols: int, r_size: int, c_size: int, p: int, pad: Any,
                    spare: int, stream: int) -> None:
    """A tile of ``(2,1)`` or ``(4,1)`` sub-tiles with rows cut short (``rows`` < ``r_size``; ``cols`` may be
    short too): whole groups of ``p`` rows interleaved from the source, the group the rows end in staged (padded) at
    ``spare``, the groups of padding rows from one padding row; streamed with ``stream`` (element by element,
    ``u8[500,8,24,512]{3,2,1,0:T(32,128)(4,1)}`` 'to' took 15x memcpy)."""
    width = _width(pad)
    pitch = c_size * p * width  # (of a group in the tile)
    direct = rows // p if cols == c_size else 0
    _groups_out(dst, src, step, direct, c_size, pitch, p * step * width, p, pad, stream)
    staged = (rows + p - 1) // p - direct  # groups staged: whole rows of c_size elements at spare
    for r in range(direct * p, (direct + staged) * p):
        row = spare + (r - direct * p) * c_size * width
        valid = cols if r < rows else 0
        _copy(row, src + r * step * width, valid * width)
        for c in range(valid, c_size):
            _put(row, c, pad)
    _groups_out(dst + direct * pitch, spare, c_size, staged, c_size, pitch, p * c_size * width, p, pad, stream)
    done = direct + staged
    if done < r_size // p:  # groups of padding rows only: one row, read p times over (step 0)
        row = spare + staged * p * c_size * width
        for c in range(c_size):
            _put(row, c, pad)
        _groups_out(dst + done * pitch, row, 0, r_size // p - done, c_size, pitch, 0, p, pad, stream)


@_subroutine
def _canonical(data: int, n: int, canon: int) -> None:
    """Canonical element bytes in place: pred (``canon`` < 0) 0 or 1; else each byte ANDed with ``canon``."""
    words = n // 8
    if canon < 0:
        for k in range(words):
            v = _get_word(data, k)
            v |= v >> _U(4)
            v |= v >> _U(2)
            v |= v >> _U(1)
            _put_word(data, k, v & _LOW_BITS)
        for i in range(8 * words, n):
            _put(data, i, np.uint8(_get(data, i, np.uint8(0)) != 0))
    else:
        lanes = _U(canon) * _LOW_BITS
        for k in range(words):
            _put_word(data, k, _get_word(data, k) & lanes)
        for i in range(8 * words, n):
            _put(data, i, np.uint8(_get(data, i, np.uint8(0)) & canon))


@_subroutine
def _nibble_pairs(dst: int, src: int, step: int, r_size: int, c_size: int) -> None:
    """A full ``T(R,C)(2,1)E(4)`` tile at ``dst``: byte ``g*C + c`` = rows ``2g`` (low nibble) and ``2g+1``
    (high) of column ``c``; the logical rows at ``src`` are ``step`` bytes apart, ``C`` a multiple of 8."""
    words = c_size // 8
    for g in range(r_size // 2):
        low, high, d = src + 2 * g * step, src + (2 * g + 1) * step, dst + g * c_size
        for k in range(words):
            value = (_get_word(low, k) & _LOW_NIBBLES) | ((_get_word(high, k) & _LOW_NIBBLES) << _U(4))
            _put_word(d, k, value)


@_subroutine
def _tile_rows_split(dst: int, pitch: int, src: int, r_size: int, c_size: int, p: int, n: int,
                     pad: Any) -> None:
    """The first ``n`` columns of a tile's ``r_size`` rows, ``(p,1)`` sub-tiles at ``src``, split into rows ``pitch``
    elements apart at ``dst`` (``n`` at most ``pitch``: rows back to back) a lane of ``p`` rows at a time, the lanes
    from the last: a lane past a row's end runs into the rows after it, whose own lanes are written later, and past
    the last row into the line after the rows. (Through a staged tile, each row then copied out, rows of 100 bytes
    read back from tiles of 32 took 1.65x memcpy of the tiles in a prototype, 512 MiB, against 1.47-1.50 straight.)"""
    width, lanes = _width(pad), _lanes(pad)
    full = (n + lanes - 1) // lanes * lanes
    for g in range(r_size // p):
        d, s = dst + g * p * pitch * width, src + g * p * c_size * width
        for c in range(full - lanes, -1, -lanes):
            if p == 2:
                _deinterleave2(d + c * width, pitch, s + c * 2 * width, _0, pad)
            else:
                _deinterleave4(d + c * width, pitch, s + c * 4 * width, _0, pad)


@_subroutine
def _tiles_streamed(dst: int, step: int, src: int, tiles: int, r_size: int, c_size: int, p: int, pad: Any) -> None:
    """A strip of ``tiles`` whole tiles of ``(p,1)`` sub-tiles at ``src`` split straight into its ``r_size`` rows at
    ``dst`` (``step`` elements apart, each on a line; ``c_size`` a multiple of a line's elements) and streamed out, a
    lane of ``p`` rows at a time; tiles of at most ``TILES_AHEAD_ROWS`` rows prefetch the bytes ``TILES_AHEAD`` on
    into the second level."""
    width, lanes = _width(pad), _lanes(pad)
    for j in range(tiles):
        t = src + j * r_size * c_size * width
        if r_size <= TILES_AHEAD_ROWS:
            _prefetch_run_l2(t + TILES_AHEAD, r_size * c_size * width // LINE)
        for g in range(r_size // p):
            d, s = dst + (g * p * step + j * c_size) * width, t + g * p * c_size * width
            for c in range(0, c_size, lanes):
                if p == 2:
                    _deinterleave2(d + c * width, step, s + c * 2 * width, _1, pad)
                else:
                    _deinterleave4(d + c * width, step, s + c * 4 * width, _1, pad)


@_subroutine
def _last_lane(dst: int, pitch: int, src: int, p: int, pad: Any) -> None:
    """One lane of ``p`` interleaved rows at ``src`` split into ``p`` rows ``pitch`` elements apart at ``dst``."""
    if p == 2:
        _deinterleave2(dst, pitch, src, _0, pad)
    else:
        _deinterleave4(dst, pitch, src, _0, pad)


@_inline
def _regroup_word(grouped: int, fields: int, k: int, member: int, bits: int, mask: int, to: int) -> None:
    """Word ``k`` of groups made from (``to``) or split into their fields (E(4), the common case: straight-line code
    the compiler vectorizes)."""
    lanes = _U(mask) * _LOW_BITS
    if bits == 4:
        if to:
            _put_word(grouped, k, (_get_word(fields, k) & _LOW_NIBBLES) | ((_get_word(fields + member, k)
                                                                           & _LOW_NIBBLES) << _U(4)))
        else:
            v = _get_word(grouped, k)
            _put_word(fields, k, v & lanes)
            _put_word(fields + member, k, (v >> _U(4)) & lanes)
        return
    field_lanes = _U((1 << bits) - 1) * _LOW_BITS
    if to:
        v = _U(0)
        for q in range(8 // bits):
            v |= (_get_word(fields + q * member, k) & field_lanes) << _U(q * bits)
        _put_word(grouped, k, v)
    else:
        v = _get_word(grouped, k)
        for q in range(8 // bits):
            _put_word(fields + q * member, k, (v >> _U(q * bits)) & lanes)


# ----- streamed copies ------------------------------------------------------------------------------------------------


_B0, _B4, _B15 = np.uint8(0), np.uint8(4), np.uint8(15)  # (typed byte constants of the regroup loops)

@_subroutine
def _regroup_rows(grouped: int, fields: int, n: int, rows: int, g_row: int, f_row: int, member: int, bits: int,
                  mask: int, to: int) -> None:
    """``rows`` runs of ``n`` groups made from (``to``) or split into their fields, contiguous on both sides, ``g_row``
    / ``f_row`` bytes apart, a word at a time and the last ``n % 8`` one by one: one loop for short runs (a call per
    run of 8 bytes took s4 ``[2048,4096,8]{0,1,2:T(8,128)(2,1)E(4)}`` 10x memcpy; runs of 15 bytes, a call each,
    s4 ``[34952,128,5,3]{0,1,2,3:T(8,128)(2,1)E(4)}`` 28x) and one run alike."""
    words = n // 8
    start = 0
    if bits == 4 and n == 8 and member == 8 and g_row == 8 and f_row == 16:  # (runs of 8 groups back to back, their
        start = rows - rows % 8  # two fields' words too: a line of groups at a time, in registers)
        lanes = _U(mask) * _LOW_BITS
        for r in range(0, start, 8):
            if to:
                _nibbles_joined(grouped + r * 8, fields + r * 16)
            else:
                _nibbles_split(grouped + r * 8, fields + r * 16, lanes)
    if bits == 4 and n % 8 and g_row == n and member == n and f_row == 2 * n:
        # rows of a few groups back to back (their two fields' rows too): whole words of each row, the last one
        # reaching into the rows after it, which are then written in turn; the last rows as below (runs of 5: s4
        # [8,48,5,6990,5]{3,0,2,4,1:T(8,128)E(4)} 7.9 / 9.1x memcpy, now 3.7 / 5.0)
        spans = (n + 7) // 8  # words of a row
        last = max(start, rows - 1 - (8 * spans + 2 * n - 1) // n)  # (rows whose words stay within the last row)
        lanes = _U(mask) * _LOW_BITS
        for r in range(start, last):
            g, f = grouped + r * n, fields + r * 2 * n
            if to:
                for k in range(spans):
                    _put_word(g, k, (_get_word(f, k) & _LOW_NIBBLES) | ((_get_word(f + n, k) & _LOW_NIBBLES)
                                                                       << _U(4)))
            else:  # (each row's first fields, whose last word reaches into its second ones, then those)
                for k in range(spans):
                    _put_word(f, k, _get_word(g, k) & lanes)
                for k in range(spans):
                    _put_word(f + n, k, (_get_word(g, k) >> _U(4)) & lanes)
        start = last
    per = 8 // bits
    field = (1 << bits) - 1
    for r in range(start, rows):
        g, f = grouped + r * g_row, fields + r * f_row
        for k in range(words):
            _regroup_word(g, f, k, member, bits, mask, to)
        for t in range(8 * words, n):
            if bits == 4 and to:  # (E(4), the common case: two fields, no loop)
                _put(g + t, 0, np.uint8((_get(f + t, 0, _B0) & _B15) | (_get(f + t + member, 0, _B0) << _B4)))
            elif bits == 4:
                value = _get(g + t, 0, _B0)
                _put(f + t, 0, np.uint8(value & mask))
                _put(f + t + member, 0, np.uint8((value >> _B4) & mask))
            elif to:
                value = 0
                for q in range(per):
                    value |= (np.int64(_get(f + t + q * member, 0, _B0)) & field) << (q * bits)
                _put(g + t, 0, np.uint8(value))
            else:
                word = np.int64(_get(g + t, 0, _B0))
                for q in range(per):
                    _put(f + t + q * member, 0, np.uint8((word >> (q * bits)) & mask))


@_inline
def _regroup_lines(grouped: int, fields: int, n: int, member: int, bits: int, mask: int, to: int, stream: int
                   ) -> int:
    """The whole lines of a run of ``n`` groups contiguous on both sides, made from (``to``) or split into their
    fields (``member`` bytes apart; split ones masked by ``mask``) a line of each at a time, fields on the line grid
    split with ``stream`` streamed; returns the bytes of groups done (a multiple of a line). Split a word at a time
    with plain stores, s4 ``[4096,256,512]{1,0,2:T(8,128)(2,1)E(4)}`` read back (512 MiB; in place) took 73 ms, 1.4x
    memcpy; a C model of lines streamed, 0.74x."""
    per = 8 // bits
    field = (1 << bits) - 1
    lines = n - n % LINE
    streamed = stream != 0 and fields % LINE == 0 and member % LINE == 0
    for k in range(0, lines, LINE):
        if to:
            _field_line(grouped + k, fields + k, _0, field)
            for q in range(1, per):
                _or_field_line(grouped + k, fields + k + q * member, q * bits, field)
        else:
            for q in range(per):
                if streamed:
                    _field_line_streamed(fields + k + q * member, grouped + k, q * bits, mask)
                else:
                    _field_line(fields + k + q * member, grouped + k, q * bits, mask)
    return lines
