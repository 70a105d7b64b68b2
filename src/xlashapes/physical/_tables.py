"""The compiled kernels whose squares, transposed in registers, take their rows' addresses from tables (numba).

- ``merged_squares`` (:mod:`._merged`): a transposing copy whose rows on each side are anywhere, a block of the
  outer axes at a time; each block is a 2-d transpose of the across group (source-contiguous rows) and the along group
  (destination-contiguous rows); ``merged_lines`` the same for bytes in squares of one line a side.
- ``merged_staged`` (:mod:`._merged`): the same blocks staged through the cache: each block's source rows copied
  in, transposed there, and its destination rows copied out in runs (whole lines streamed).
- ``merged_direct`` (:mod:`._merged`): the same squares onto destination rows on the line grid, straight from the
  source as ``direct_transpose`` (:mod:`._walk`) moves 2-d transposes, in the same bands (:func:`_swept`, whose rows
  come from tables or strides): bands of source rows swept a few lines at a time, the next sweep prefetched into the
  second level, every square streamed out.
- ``permuted_blocks`` (:mod:`._lane_blocks`): small blocks permuted inside, a group of them at a time through lane
  rows of a scratch.
"""

from __future__ import annotations

from typing import Any

from ._intrinsics import (
    _0,
    _1,
    _copy,
    _fence,
    _inline,
    _jit,
    _prefetch_run,
    _prefetch_run_l2,
    _prefetch_write,
    _put,
    _side,
    _stream,
    _table_entry,
    _width,
)
from ._kinds import LINE
from ._shuffles import (
    _table_line_square,
    _table_line_square_canonical,
    _table_pair,
    _table_pair_canonical,
    _table_square,
    _table_square_canonical,
    _transpose,
    _transpose_bytes,
    _transpose_bytes_canonical,
    _transpose_canonical,
    _transpose_pair,
)

AHEAD = 4
"""Runs of source rows a staged block prefetches ahead of the one it copies in (``merged_staged``)."""

AHEAD_LINES = 32
"""Most lines of a run prefetched ahead (the hardware's prefetcher follows a longer one)."""


@_inline
def _corner(block: int, outer: Any, width: int) -> tuple[int, int]:
    """The destination and source offsets (bytes) of block ``block`` of merged squares' outer axes (``outer``, 5 x
    axes: blocks, destination and source steps, block length, last block's start)."""
    d = s = 0
    for a in range(outer.shape[1] - 1, -1, -1):
        k = block % outer[0, a]
        block //= outer[0, a]
        start = min(k * outer[3, a], outer[4, a])
        d += start * outer[1, a] * width
        s += start * outer[2, a] * width
    return d, s


@_inline
def _moved(d: int, d_rows: int, s: int, s_rows: int, i: int, u: int, stream: int, pad: Any, lined: bool,
           canon: bool) -> None:
    """The square of source rows ``i`` on (their offsets from ``s`` in the table at ``s_rows``) and destination rows
    ``u`` on (from ``d``, at ``d_rows``), transposed in registers: bytes a line a side where ``lined``, else
    ``_side`` of the width; ``canon``, every byte written 0 or 1 (both constants of the calling entry)."""
    width = _width(pad)
    if lined and canon:
        _table_line_square_canonical(d + i, d_rows + u * 8, s + u, s_rows + i * 8, stream, pad)
    elif lined:
        _table_line_square(d + i, d_rows + u * 8, s + u, s_rows + i * 8, stream, pad)
    elif canon:
        _table_square_canonical(d + i * width, d_rows + u * 8, s + u * width, s_rows + i * 8, stream, pad)
    else:
        _table_square(d + i * width, d_rows + u * 8, s + u * width, s_rows + i * 8, stream, pad)


def _entry(function: Any, name: str, canonical: bool) -> Any:
    """``function`` compiled as the entry point ``name`` (``<name>_canonical`` for pred's twin)."""
    function.__name__ = function.__qualname__ = name + ("_canonical" if canonical else "")
    return _jit(function)


def _merged_of(lines: bool, canonical: bool = False) -> Any:
    """The entry point of merged squares (:mod:`._merged`): ``lines``, squares of bytes one line a side
    (``_table_line_square``), else of ``_side`` of the width (``_table_square``); each a constant of the closure, so
    neither entry holds the other's square (in one loop with both, LLVM made the 16 x 16 one up to 1.4x slower);
    ``canonical``, pred's: every byte written 0 or 1 (an entry of its own: a run-time flag made the plain squares of
    bytes up to 1.25x slower)."""

    def merged(
        dst: int, src: int, pad: Any, outer: Any, d_rows: int, across: int, s_rows: int, along: int, first: int,
        last: int, inner_across: int, stream: int,
    ) -> None:
        width = _width(pad)
        lined = lines and width == 1  # (wider words' squares are a line a side already)
        n = LINE if lined else _side(pad)
        line = LINE // width
        for block in range(first, last):
            d_at, s_at = _corner(block, outer, width)
            d, s = dst + d_at, src + s_at
            outer_side, inner_side = (along, across) if inner_across else (across, along)
            for p0 in range(0, outer_side, n):
                p = min(p0, outer_side - n)
                ahead = p0 % line == 0 and p0 + line < outer_side
                for q0 in range(0, inner_side, n):
                    q = min(q0, inner_side - n)
                    i, u, whole = (p, q, p == p0) if inner_across else (q, p, q == q0)
                    if ahead:
                        for r in range(n):
                            if inner_across:
                                _prefetch_write(d + (i + line) * width + _table_entry(d_rows, u + r))
                            else:
                                _prefetch_run(s + (u + line) * width + _table_entry(s_rows, i + r), _1)
                    _moved(d, d_rows, s, s_rows, i, u, stream if whole else 0, pad, lined, canonical)
        if stream:
            _fence()

    return _entry(merged, "merged_lines" if lines else "merged_squares", canonical)


merged_squares = _merged_of(False)
"""Squares over merged axes (:mod:`._merged`): for every block ``first <= b < last`` of the outer axes, the ``across x
along`` transpose whose source rows (``along`` of them, contiguous for ``across`` elements) start at the entries of
the int64 table at ``s_rows`` and whose destination rows (``across``, contiguous for ``along``) start at the entries
of ``d_rows`` (bytes, from the block's corner), moved in squares in registers (:func:`._shuffles._table_square`; the
last square of each side overlapping the one before).

``outer`` (int64, 5 x axes) holds each outer axis's count of blocks, destination and source steps (elements), its
block length and its last block's start (the last block of a cut axis overlaps the one before). The loop over the
shorter-lived side runs innermost: ``inner_across``, the destination rows, written a square's width at a time (each
row's next line prefetched for writing); else the source rows, read so (each row's next line prefetched)."""

merged_lines = _merged_of(True)
"""``merged_squares`` of bytes in squares of one line a side (64 x 64: :func:`._shuffles._table_line_square`)."""

merged_squares_canonical = _merged_of(False, True)
"""``merged_squares`` writing every byte 0 or 1, as pred's are (in words of any width:
:func:`._shuffles._canonical_bytes`), so that no pass over the bytes after the copy is needed."""

merged_lines_canonical = _merged_of(True, True)
"""``merged_lines`` writing every byte 0 or 1 (as ``merged_squares_canonical``)."""


def _direct_of(lines: bool, canonical: bool = False) -> Any:
    """The entry point of merged squares moved straight from the source (``merged_direct``; ``lines`` and
    ``canonical`` as ``_merged_of`` takes them)."""

    def merged_direct(
        dst: int, src: int, pad: Any, outer: Any, d_rows: int, across: int, s_rows: int, along: int, first: int,
        last: int, rows: int, sweep: int, stream: int, pair: int,
    ) -> None:
        width = _width(pad)
        for block in range(first, last):
            d_at, s_at = _corner(block, outer, width)
            after = src + _corner(block + 1, outer, width)[1] if block + 1 < last else 0
            _swept(dst + d_at, d_rows, src + s_at, s_rows, after, pad, 0, across, along, rows, sweep, stream, pair,
                   True, lines and width == 1, canonical)
        if stream:
            _fence()

    return _entry(merged_direct, "merged_direct_lines" if lines else "merged_direct", canonical)


@_inline
def _swept(
    d: int, d_rows: int, s: int, s_rows: int, after: int, pad: Any, first: int, last: int, along: int, rows: int,
    sweep: int, stream: int, pair: int, tabled: bool, lined: bool, canon: bool,
) -> None:
    """A transpose moved straight from the source onto destination rows on the line grid: destination rows ``first <= u
    < last`` (each ``along`` elements from ``d``), source rows ``i < along`` (``u`` their elements from ``s``), in bands
    of ``rows`` source rows, each swept ``sweep`` lines of every row at a time while the next sweep's lines (the next
    band's first; at the last band's end, those at ``after`` where nonzero) are prefetched into the second level, so
    that memory is read while the squares stream out (``stream``: all but the last square of a band whose side overlaps
    the one before, stored plainly). Rows are at the entries of the int64 tables at ``d_rows`` and ``s_rows`` where
    ``tabled`` (merged squares), else ``d_rows`` and ``s_rows`` bytes apart (2-d transposes, whose last square of
    destination rows, overlapping, leaves out those the one before streamed); ``pair`` (4- and 8-byte words): squares in
    pairs, two lines of each destination row stored one after the other; ``lined`` (bytes), ``canon`` as :func:`_moved`
    takes them (constants of the calling entry)."""
    width = _width(pad)
    n = (LINE if lined else _side(pad)) if tabled else LINE // width
    span = LINE // width * sweep
    for i0 in range(0, along, rows):
        for u0 in range(first, last, span):
            u, i, at = u0 + span, i0, s  # (the next sweep: on along these rows, else the next band's first)
            if u >= last:
                u, i = first, i0 + rows
                if i >= along and after:
                    i, at = 0, after
            if i < along:
                ahead = min(sweep, -(-(last - u) * width // LINE))
                for k in range(min(rows, along - i)):
                    _prefetch_run_l2(_row(at, s_rows, i + k, tabled) + u * width, ahead)
            j0, end = i0, min(i0 + rows, along)
            while j0 < end:
                if pair and j0 + 2 * n <= end:  # (two lines of each destination row, one after the other)
                    for c0 in range(u0, min(u0 + span, last), n):
                        _paired(d, d_rows, s, s_rows, j0, min(c0, last - n), stream, pad, tabled, canon)
                    j0 += 2 * n
                    continue
                j = min(j0, along - n)
                for c0 in range(u0, min(u0 + span, last), n):
                    c = min(c0, last - n)
                    if tabled:
                        _moved(d, d_rows, s, s_rows, j, c, stream if j == j0 else 0, pad, lined, canon)
                    else:  # (streamed, a square overlapping the one before leaves out the rows that one wrote)
                        _strided(d + c * d_rows + j * width, d_rows, s + c * width + j * s_rows, s_rows,
                                 _1 + (c0 - c) if j == j0 else _0, pad, canon)
                j0 += n


@_inline
def _row(base: int, rows: int, k: int, tabled: bool) -> int:
    """The address of row ``k`` from ``base``: at entry ``k`` of the int64 table at ``rows`` where ``tabled``, else
    ``rows`` bytes apart."""
    return base + (_table_entry(rows, k) if tabled else k * rows)


@_inline
def _strided(to: int, step: int, at: int, stride: int, stream: int, pad: Any, canon: bool) -> None:
    """A square of ``pad``'s words moved from rows ``stride`` bytes apart at ``at`` to rows ``step`` bytes apart at
    ``to`` (:func:`._shuffles._transpose_bytes` for bytes, :func:`._shuffles._transpose` for wider words); ``canon``
    (a constant of the calling entry): every byte made 0 or 1 on the way, as pred's are."""
    width = _width(pad)
    if width == 1:
        if canon:
            _transpose_bytes_canonical(to, step, at, stride, stream, pad)
        else:
            _transpose_bytes(to, step, at, stride, stream, pad)
    elif canon:
        _transpose_canonical(to, step // width, at, stride // width, stream, pad)
    else:
        _transpose(to, step // width, at, stride // width, stream, pad)


@_inline
def _paired(d: int, d_rows: int, s: int, s_rows: int, j: int, c: int, stream: int, pad: Any, tabled: bool,
            canon: bool) -> None:
    """Two squares of :func:`_swept` (source rows ``j`` on, destination rows ``c`` on), two lines of each destination
    row stored one after the other."""
    width = _width(pad)
    if tabled and canon:
        _table_pair_canonical(d + j * width, d_rows + c * 8, s + c * width, s_rows + j * 8, stream, pad)
    elif tabled:
        _table_pair(d + j * width, d_rows + c * 8, s + c * width, s_rows + j * 8, stream, pad)
    else:
        _transpose_pair(d + c * d_rows + j * width, d_rows // width, s + c * width + j * s_rows, s_rows // width, _1,
                        pad)


merged_direct = _direct_of(False)
"""Merged squares onto destination rows on the line grid moved straight from the source (:mod:`._merged`), as
``merged_squares`` takes them (every block's ``across x along`` transpose; ``outer``, the tables), the across group
swept: bands of ``rows`` source rows (a multiple of the squares' side), each swept ``sweep`` lines of every row at a
time while the next sweep's lines (the next band's first, the next block's at a block's end) are prefetched into the
second level, so that memory is read while the squares stream out (``stream``: all but the last square of a band
whose side overlaps the one before, stored plainly); ``pair`` (4- and 8-byte words, destination rows a multiple of
4 KiB apart): squares in pairs, two lines of each destination row stored one after the other
(:func:`._walk.direct_transpose`)."""

merged_direct_lines = _direct_of(True)
"""``merged_direct`` of bytes in squares of one line a side (64 x 64)."""

merged_direct_canonical = _direct_of(False, True)
"""``merged_direct`` writing every byte 0 or 1, as pred's are."""

merged_direct_lines_canonical = _direct_of(True, True)
"""``merged_direct_lines`` writing every byte 0 or 1, as pred's are."""


def _merged_staged_of(canonical: bool) -> Any:
    """The entry point of staged merged squares (``merged_staged``; ``canonical``: every byte written 0 or 1, as
    pred's are, an entry of its own as ``_merged_of``'s)."""

    def merged_staged(
        dst: int, src: int, pad: Any, outer: Any, first: int, last: int, scratch: int, staged: int, along: int,
        t_rows: int, across: int, ins: int, n_ins: int, outs: int, n_outs: int, stream: int,
    ) -> None:
        _staged_blocks(dst, src, pad, outer, first, last, scratch, staged, along, t_rows, across, ins, n_ins, outs,
                       n_outs, stream, canonical)

    return _entry(merged_staged, "merged_staged", canonical)


@_inline
def _staged_blocks(
    dst: int, src: int, pad: Any, outer: Any, first: int, last: int, scratch: int, staged: int, along: int,
    t_rows: int, across: int, ins: int, n_ins: int, outs: int, n_outs: int, stream: int, canon: bool,
) -> None:
    """``merged_squares``' blocks ``first <= b < last`` through the cache: each block's ``along`` source rows
    (``across`` elements each) copied into ``scratch`` in ``n_ins`` runs (the int64 table at ``ins``: scratch
    offset, source offset from the block's corner, bytes; source rows back to back make one run; the runs ``AHEAD``
    on prefetched), so that memory is read in runs; transposed there in squares of a line a side, source row ``r`` at
    ``scratch`` plus entry ``r`` of ``staged``, destination row ``c`` (``along`` elements) at ``scratch`` plus entry
    ``c`` of ``t_rows``, laid in their destination order; then copied out in ``n_outs`` runs (``outs``, as ``ins``:
    scratch offset, destination offset, bytes), whole lines on the line grid streamed when ``stream``. ``outer`` as
    ``merged_squares`` takes it; ``canon`` (a constant of the entry): every byte written 0 or 1."""
    width = _width(pad)
    n = LINE // width
    for block in range(first, last):
        d_at, s_at = _corner(block, outer, width)
        d, s = dst + d_at, src + s_at
        for u in range(n_ins):
            if u + AHEAD < n_ins:
                ahead = 3 * (u + AHEAD)
                _prefetch_run(s + _table_entry(ins, ahead + 1), min(-(-_table_entry(ins, ahead + 2) // LINE),
                                                                    AHEAD_LINES))
            _copy(scratch + _table_entry(ins, 3 * u), s + _table_entry(ins, 3 * u + 1), _table_entry(ins, 3 * u + 2))
        for p0 in range(0, along, n):
            p = min(p0, along - n)
            for q0 in range(0, across, n):
                q = min(q0, across - n)
                _moved(scratch, t_rows, scratch, staged, p, q, _0, pad, width == 1, canon)
        for u in range(n_outs):
            at = scratch + _table_entry(outs, 3 * u)
            to = d + _table_entry(outs, 3 * u + 1)
            size = _table_entry(outs, 3 * u + 2)
            done = min(-to % LINE, size) if stream else size
            _copy(to, at, done)
            while done + LINE <= size:
                _stream(to + done, at + done)
                done += LINE
            _copy(to + done, at + done, size - done)
    if stream:
        _fence()


@_jit
def permuted_blocks(
    dst: int, src: int, pad: Any, outer: Any, first: int, last: int, s_runs: Any, d_runs: Any, order: int, lanes: int,
    bases: int, scratch: int, work: Any,
) -> None:
    """Blocks ``first <= b < last`` of a copy through lanes (:mod:`._lane_blocks`), ``side`` of them at a time (the
    last group overlapping the one before; at least ``side`` blocks): their addresses into the int64 table at
    ``bases`` (sources, then destinations), each source run (``s_runs``: offset from the block's first element, length,
    first lane row) into lane rows at ``scratch`` (``side`` elements each, one per block), then each destination run
    (``d_runs``: offset, length, first entry of ``order``) out of the lane rows ``order`` names, both in squares
    (:func:`._shuffles._table_square`; a run's last square overlapping the one before). ``outer`` (int64, 3 x axes):
    the blocks' axes, their counts, destination and source steps (elements); ``lanes``: the int64 table of a square's
    lane rows (bytes apart); ``work``: one int64 per axis."""
    width = _width(pad)
    n = _side(pad)
    axes = outer.shape[1]
    row = n * width
    for b0 in range(first, last, n):
        b = min(b0, last - n)
        rest = b
        d, s = dst, src
        for a in range(axes - 1, -1, -1):
            k = rest % outer[0, a]
            rest //= outer[0, a]
            work[a] = k
            d += k * outer[1, a] * width
            s += k * outer[2, a] * width
        for j in range(n):
            _put(bases, j, s)
            _put(bases, n + j, d)
            a = axes - 1
            while a >= 0:  # (the next block)
                work[a] += 1
                d += outer[1, a] * width
                s += outer[2, a] * width
                if work[a] < outer[0, a]:
                    break
                d -= work[a] * outer[1, a] * width
                s -= work[a] * outer[2, a] * width
                work[a] = 0
                a -= 1
        for r in range(s_runs.shape[1]):
            offset, length, lane = s_runs[0, r], s_runs[1, r], s_runs[2, r]
            for i0 in range(0, length, n):
                i = min(i0, length - n)
                _table_square(scratch + (lane + i) * row, lanes, (offset + i) * width, bases, _0, pad)
        for r in range(d_runs.shape[1]):
            offset, length, entry = d_runs[0, r], d_runs[1, r], d_runs[2, r]
            for i0 in range(0, length, n):
                i = min(i0, length - n)
                _table_square((offset + i) * width, bases + n * 8, scratch, order + (entry + i) * 8, _0, pad)


merged_staged = _merged_staged_of(False)
merged_staged_canonical = _merged_staged_of(True)
