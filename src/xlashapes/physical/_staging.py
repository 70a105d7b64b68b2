"""The staging subroutines of the walk's kernels (:mod:`._walk`): source rows copied into a scratch in the cache for
the staged 2-d transposes (bytes paired into 2-byte words, sub-byte fields one per byte), short rows laid out as
whole words with their padding put in, and runs gathered back to back into whole lines (numba; compiled into each
kernel that calls them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intrinsics import (
    _0,
    _1,
    _copy,
    _get,
    _get_word,
    _inline,
    _prefetch_run,
    _prefetch_run_l2,
    _put,
    _put_word,
    _stream_joined,
    _subroutine,
    _width,
)
from ._kernels import _copy_out, _runs
from ._kinds import LINE
from ._shuffles import _interleave2, _pack_rows2, _pack_rows4, _unpack_rows2, _unpack_rows4

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)  # (a word's every byte)

@_inline
def _staged_byte(at: int, u: int, sub: int, bits: int, packs: int, pad: Any) -> Any:
    """Staged byte ``u`` of the source row at ``at`` (:func:`_stage`): the byte; ``packs``: the E(bits) fields of
    byte ``u`` of the ``8 / bits`` rows ``sub`` bytes apart from ``at``, packed; else (``bits < 8``) field ``u`` of the
    packed row."""
    if bits == 8:
        return _get(at, u, pad)
    field, per = (1 << bits) - 1, 8 // bits
    if packs:
        value = 0
        for m in range(per):
            value |= (_get(at + m * sub, u, pad) & field) << (m * bits)
        return np.uint8(value)
    return np.uint8((_get(at, u // per, pad) >> (u % per * bits)) & field)


@_subroutine
def _stage_line(to: int, at: int, step: int, sub: int, bits: int, packs: int, pad: Any) -> None:
    """A line of staged bytes (:func:`_stage`) of each of the rows at ``at`` and ``at + step`` interleaved into two
    lines of 2-byte words at ``to``."""
    if bits == 8:
        _interleave2(to, at, step, _0, pad)
    elif packs:
        if bits == 4:
            _pack_rows4(to, at, sub)
        else:
            _pack_rows2(to, at, sub)
    elif bits == 4:
        _unpack_rows4(to, at, step)
    else:
        _unpack_rows2(to, at, step)


@_subroutine
def _stage(
    scratch: int, stride: int, src: int, pad: Any, rows: int, length: int, si: int, ahead: int, limit: int,
    bits: int, packs: int, plain: int,
) -> None:
    """Copy ``rows`` source rows of ``length`` elements (``si`` apart) to scratch rows ``stride`` bytes apart, each
    prefetching the one ``ahead`` rows on (into the second cache level; paired bytes, an even number of rows: into
    the first); bytes, unless ``plain``: pairs of rows interleaved into one row of 2-byte words (an odd last row
    paired with nothing), a line at a time, the last partial line too where the bytes after it (up to ``limit``, the
    end of the source) can be read.

    Sub-byte fields (E(``bits``), ``bits`` < 8) are staged one per byte: ``packs``, each staged byte packs the
    fields of ``8 / bits`` source rows of bytes (``si`` is the step of these groups, bytes); else the source rows
    are packed (``si``: their step in bytes) and each staged byte is one of their fields.
    """
    width = _width(pad)
    n = length * width
    if plain:
        for k in range(rows):
            at = src + k * si * width
            if ahead and k + ahead < rows:
                _prefetch_run_l2(at + ahead * si * width, n // LINE + 1)
            _copy(scratch + k * stride, at, n)
        return
    per = 8 // bits
    sub = si // per if packs else si  # bytes between the rows read (a staged byte's rows when packing)
    reads = per if packs else 1  # rows read per staged row
    span = n if packs or per == 1 else -(-n // per)  # bytes read of each row
    col = 1 if packs or per == 1 else per  # staged bytes per byte read
    for k in range(0, rows, 2):
        whole = n - n % LINE
        at, to = src + k * si, scratch + k // 2 * stride
        if k + 1 == rows:  # (the high bytes are not read)
            for u in range(n):
                _put(to, 2 * u, _staged_byte(at, u, sub, bits, packs, pad))
            continue
        if ahead and k + ahead < rows:
            for q in range(2 * reads):
                _prefetch_run(at + ahead * si + q * sub, span // LINE + 1)
        if whole < n and at + (2 * reads - 1) * sub + (whole + LINE) // col <= limit:
            whole += LINE  # (the last partial line whole: the bytes read past the row's end are the next row's)
        for u in range(0, whole, LINE):
            _stage_line(to + 2 * u, at + u // col, si, sub, bits, packs, pad)
        for u in range(whole, n):
            _put(to, 2 * u, _staged_byte(at, u, sub, bits, packs, pad))
            _put(to, 2 * u + 1, _staged_byte(at + si, u, sub, bits, packs, pad))


@_subroutine
def _word_rows(to: int, row: int, at: int, step: int, n: int, words: int, data: int, pads: int) -> None:
    """``n`` rows of ``data`` bytes (``step`` apart at ``at``) into rows of ``words`` 8-byte words (``row`` bytes
    apart at ``to``), each word read whole (past the row's end), the bytes past ``data`` taken from ``pads``."""
    if words == 1:  # (the common case: rows of 8 bytes, one word each; a loop of its own, the mask kept)
        mask = _ALL if data == 8 else (np.uint64(1) << np.uint64(8 * data)) - np.uint64(1)
        fill = _get_word(pads, _0)
        for q in range(n):
            _put_word(to + q * row, _0, (_get_word(at + q * step, _0) & mask) | fill)
        return
    for j in range(words):
        kept = min(max(data - 8 * j, 0), 8)  # (the row's bytes in word j)
        mask = _ALL if kept == 8 else (np.uint64(1) << np.uint64(8 * kept)) - np.uint64(1)
        fill = _get_word(pads, j)
        for q in range(n):
            _put_word(to + q * row, j, (_get_word(at + q * step, j) & mask) | fill)


@_subroutine
def _staged_runs(dst: int, src: int, pad: Any, rows: int, length: int, sr: int, scratch: int, room: int) -> None:
    """``rows`` runs of ``length`` elements back to back in the destination, ``sr`` apart in the source, written so
    that no destination line is written in two pieces (a line written plainly is read first): only the destination's
    first and last partial lines are stored plainly. Runs of a line or more that follow each other in the source
    (:func:`_joined_runs`) stream each line straight from the one or two runs it holds; shorter runs are gathered a
    batch at a time into ``scratch`` (``room`` bytes on a line) behind the partial line the batch before left there,
    whence whole lines are streamed (512 MiB, f32 ``[N,100]`` read back from ``T(8,128)`` tiles, this 2-core Intel
    Xeon, x memcpy of the tiles: staged 1.13-1.18, straight 0.82)."""
    width = _width(pad)
    n = length * width
    if n >= LINE and sr * width >= n:
        _joined_runs(dst, src, n, sr * width, rows)
        return
    batch = (room - LINE) // n
    if batch < 1:  # (runs longer than the room: streamed each, their partial lines stored plainly)
        _runs(dst, src, pad, rows, length, length, sr, _1)
        return
    line = dst - (dst & (LINE - 1))  # the destination line at the scratch's start
    lead = dst - line  # bytes of that line before the destination: not written
    held = lead  # bytes the scratch holds (with the lead)
    for r in range(0, rows, batch):
        k = min(batch, rows - r)
        _runs(scratch + held, src + r * sr * width, pad, k, length, length, sr, _0)
        held += k * n
        whole = held - (held & (LINE - 1))
        if whole == 0:
            continue
        start = LINE if lead else 0
        if lead:
            _copy(line + lead, scratch + lead, LINE - lead)
        _copy_out(line + start, scratch + start, whole - start, _1)  # (on the line grid: all streamed)
        lead = 0
        _copy(scratch, scratch + whole, held - whole)
        line += whole
        held -= whole
    _copy(line + lead, scratch + lead, held - lead)


@_subroutine
def _joined_runs(dst: int, src: int, n: int, step: int, rows: int) -> None:
    """``rows`` runs of ``n`` bytes (a line or more), ``step`` bytes apart at ``src`` (``step`` at least ``n``), back to
    back at ``dst``: each whole destination line streamed from a line read at its first byte's place and, where the
    line holds the start of the next run, a line read ending in that run (both reads stay within the two runs:
    neither passes the source's last run); the partial lines at both ends copied plainly."""
    total = rows * n
    head = min(total, (-dst) & (LINE - 1))
    _gathered(dst, src, n, step, 0, head)
    o, r, off = head, head // n, head % n
    while o + LINE <= total:  # (the last run's lines hold no next run's start: it ends the destination)
        s = src + r * step + off
        k = n - off
        if k >= LINE:  # (the line within this run)
            _stream_joined(dst + o, s, LINE, s)
            r, off = (r + 1, 0) if k == LINE else (r, off + LINE)
        else:
            _stream_joined(dst + o, s, k, src + (r + 1) * step - k)
            r, off = r + 1, LINE - k
        o += LINE
    _gathered(dst + o, src, n, step, o, total)


@_subroutine
def _gathered(to: int, src: int, n: int, step: int, first: int, last: int) -> None:
    """Bytes [first, last) of runs of ``n`` bytes ``step`` apart at ``src``, taken back to back, copied to ``to``."""
    r, off = first // n, first % n
    while first < last:
        count = min(n - off, last - first)
        _copy(to, src + r * step + off, count)
        to, first, r, off = to + count, first + count, r + 1, 0
