"""Compiled (numba) kernels behind :mod:`xlashapes.physical`: tiled layouts, transposes and sub-byte packing.

Imported only when a fast kernel is first needed; :mod:`xlashapes.physical` falls back to its NumPy path when numba
is missing. The kernels move raw unsigned words (never float arithmetic, so NaN payloads survive). Each builds its
output in order in a small scratch buffer and writes it out either with plain stores or, for large outputs, with
non-temporal stores of whole aligned 64-byte lines, as one big ``memcpy`` does: the destination is then not read
into the cache before being overwritten.

The entry points take raw addresses (integers; the caller keeps the arrays and a scratch buffer alive), small
int64 arrays of sizes and strides, and an element-typed scalar (a "witness" that gives the element type), so each
compiles once per element width. Arrays passed to inner functions would make numba count references with atomic
instructions, and each of those waits for the pending streaming stores to drain.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intrinsics import (
    UNIT,
    _0,
    _1,
    _copy,
    _fence,
    _get,
    _get_word,
    _inline,
    _jit,
    _lanes,
    _move_line,
    _prefetch_run,
    _prefetch_run_l2,
    _put,
    _put_word,
    _spread1,
    _spread2,
    _spread4,
    _squeeze1,
    _squeeze2,
    _squeeze4,
    _stream,
    _stream4,
    _subroutine,
    _width,
)
from ._kinds import (
    AHEAD_BYTES,
    AHEAD_STRIPS,
    AHEAD_TILES,
    FOLLOWED_ROWS,
    JOIN_BYTES,
    JOINED_ROW,
    LINE,
    ROW_AHEAD,
    RUN_CHUNK,
    RUNS_AHEAD,
    SHORT_ROWS,
    TILES_AHEAD,
    TILES_AHEAD_ROWS,
    tiled_entry,
)
from ._shuffles import (
    _interleave2,
    _tile_square,
    _turn_lines2,
    _turn_lines4,
    _turn_nibbles,
)
from ._tile_parts import (
    _LOW_BITS,
    _U,
    _canonical,
    _deinterleaved_rows,
    _last_lane,
    _nibble_pairs,
    _regroup_lines,
    _regroup_rows,
    _short_tile_to,
    _staged_tile_to,
    _streamed_strip,
    _tile_rows_split,
    _tile_to,
    _tiles_streamed,
)

_U32, _U64 = np.uint32(0), np.uint64(0)  # the witnesses of 4- and 8-byte words


# ----- output streams -------------------------------------------------------------------------------------------
# A stream writes one contiguous range of the output through a small scratch buffer: new bytes always go to the
# same place ``data``, preceded by the ``carry`` bytes of the last, partial output line; after each unit the whole
# lines are written out and the rest moved in front of ``data`` again. When streaming, the scratch line starts
# match the output's line starts. ``line`` is the output address of the carry's line; ``first`` the offset of the
# range's first byte in its first line while that (partial) line is unwritten, else 0.
@_inline
def _open(address: int, stream: int, width: int) -> tuple[int, int, int, int]:
    """(line, carry, first, stream) of a stream writing from ``address`` (elements of ``width`` bytes)."""
    if stream and address % width == 0:
        head = address % LINE
        return address - head, head, head, 1
    return address, 0, 0, 0


@_subroutine
def _lines(out: int, scratch: int, n: int) -> None:
    """Stream ``n`` bytes (whole lines) from scratch to a line-aligned ``out``."""
    k = 0
    while k + 4 * LINE <= n:
        _stream4(out + k, scratch + k)
        k += 4 * LINE
    while k < n:
        _stream(out + k, scratch + k)
        k += LINE


@_inline
def _flush(line: int, data: int, carry: int, n: int, first: int, stream: int) -> tuple[int, int, int]:
    """Write out the whole lines of the carry and the ``n`` new bytes at ``data``; (line, carry, first) after."""
    total = carry + n
    start = data - carry
    if not stream:
        _copy(line, start, total)
        return line + total, 0, 0
    lines = total // LINE
    if lines:
        if first:
            _copy(line + first, start + first, LINE - first)
            _lines(line + LINE, start + LINE, (lines - 1) * LINE)
        else:
            _lines(line, start, lines * LINE)
        first = 0
    _move_line(data - LINE, data + n - LINE)
    return line + lines * LINE, total - lines * LINE, first


@_subroutine
def _close(line: int, data: int, carry: int, first: int) -> None:
    """Write the carried bytes: the range's last, partial line."""
    _copy(line + first, data - carry + first, carry - first)


@_subroutine
def _pad_stream(line: int, data: int, carry: int, first: int, stream: int, pad: Any, count: int, room: int) -> None:
    """Append ``count`` padding elements to a stream (``room`` bytes at a time) and close it."""
    width = _width(pad)
    chunk = max(1, room // width)
    while count > 0:
        n = min(count, chunk)
        for k in range(n):
            _put(data, k, pad)
        line, carry, first = _flush(line, data, carry, n * width, first, stream)
        count -= n
    _close(line, data, carry, first)
    if stream:
        _fence()


# ----- tiled 2-d layouts: T(R,C) and T(R,C)(P,1) -------------------------------------------------------------------


@_inline
def _strip_offset(rest: int, batch: Any, dims: int) -> int:
    """The element offset of batch number ``rest`` (``batch``: sizes in row 0, element steps in row 1)."""
    offset = 0
    for k in range(dims - 1, -1, -1):
        offset += (rest % batch[0, k]) * batch[1, k]
        rest //= batch[0, k]
    return offset


def _tiled_to_of(canonical: bool, packed: bool, odd: bool = False) -> Any:
    """The entry point laying the logical array at address ``x`` (row-major) out tile by tile: tile rows
    [first, last) at ``out``; ``canonical``, each tile is also made canonical (``geometry.canon``); ``packed``,
    packed into ``geometry.bits``-bit fields; ``odd``, with the code of the layouts :func:`._kinds.odd_tiles` tells
    apart (constants of the closure: numba prunes the code the entry point does not run before typing it, so a first
    use compiles its own; that code adds 0.25-0.35 s to a first use, paid only by those layouts):

    - tiles of ``(2,1)`` or ``(4,1)`` sub-tiles with rows cut short are staged (:func:`_staged_tile_to`), not moved
      element by element;
    - tiles of more than ``FOLLOWED_ROWS`` rows longer than ``SHORT_ROWS`` prefetch each row's tile
      ``AHEAD_TILES`` ahead into L2: the hardware follows fewer streams (u8 ``T(32,128)(4,1)`` ``[8192,8192]``
      1.66-1.72x memcpy -> 1.42-1.46; 4 tiles ahead the same, 16 1.5-1.6);
    - strips of short rows too big to prefetch whole ``AHEAD_STRIPS`` ahead into the first level fetch each tile of
      the next strip's rows into L2 as they move the same tile of theirs (u8 ``T(16,128)(4,1)`` on rows of 512
      bytes 2.05x -> 1.2, ``T(32,128)(4,1)`` 1.95 -> 1.3, s8 ``T(8,128)(4,1)`` on rows of 1 KiB 1.2 -> 1.0);
    - the others prefetch each of their rows ``ROW_AHEAD`` bytes on as they move a tile (all entries); past the
      rows' ends, the next strip's rows as far in, whose first tiles were otherwise read cold ('to', 32 MiB, x
      memcpy: s8 ``T(8,128)(4,1)`` rows of 1536 bytes 1.37 -> 1.11, 2048 1.40 -> 1.12, 3072 1.46 -> 0.99, bf16
      ``(2,1)`` rows of 4 KiB 1.57 -> 1.27, s4 ``(2,1)E(4)`` rows of 4096 elements 1.46 -> 0.90).
    """

    def tiled_to(x: int, out: int, scratch: int, pad: Any, geometry: Any, batch: Any) -> None:
        # geometry: a TiledGeometry; the part ending with the last tile row also writes the tail padding. batch =
        # (sizes, logical strides) of the dims before the tiled two, major to minor; pad is an element; scratch
        # holds two lines and a tile (and a second tile when packing). Each tile is made canonical and packed
        # (bytes only, no tail) in scratch while it is in the L1 cache.
        rows, cols, step = geometry.rows, geometry.cols, geometry.row_stride
        r_size, c_size, p = geometry.tile_rows, geometry.tile_cols, geometry.interleave
        count, total = geometry.elements, geometry.total
        bits, canon = geometry.bits, geometry.canon
        width, lanes = _width(pad), _lanes(pad)
        t_bytes = r_size * c_size * width
        source, data = x, scratch + LINE
        tile = data
        out_bytes = t_bytes
        spare = data + (t_bytes + 2 * LINE) // LINE * LINE  # (a second tile's room)
        if packed and bits < 8:
            tile, spare = spare, data  # (unpacked in the second room, rows' ends staged in data: packed over them)
            out_bytes = t_bytes * bits // 8
        line, carry, first, stream = _open(out, geometry.stream, width)
        row_tiles = (rows + r_size - 1) // r_size
        col_tiles = (cols + c_size - 1) // c_size
        dims = batch.shape[1]
        strips = 1
        for k in range(dims):
            strips *= batch[0, k]
        strips *= row_tiles
        short = cols * width <= SHORT_ROWS  # (rows far apart, each read a short run per strip: prefetched)
        far = odd and not short and r_size > FOLLOWED_ROWS  # (the odd layouts' prefetches: _tiled_to_of)
        big = odd and short and AHEAD_STRIPS * r_size * cols * width > AHEAD_BYTES
        nxt_at = 0
        t_lines = (c_size * width + LINE - 1) // LINE
        lines = (cols * width + 2 * LINE - 1) // LINE
        # full (2,1) tiles, streamed on a line boundary, are interleaved straight into the output (not through scratch
        # and a copy out): bf16 'to' [65536,512] 1.55 -> 1.3, [32768,1024] 1.6 -> 1.25; (4,1) tiles so went 1.15 ->
        # 1.6-2.2 and keep the scratch
        direct = stream and not canon and not (packed and bits < 8) and p == 2 and c_size % lanes == 0
        rows_out = odd and stream and not canon and not (packed and bits < 8) and p == 1 and c_size * width % LINE == 0
        for strip in range(geometry.first, geometry.last):
            offset = _strip_offset(strip // row_tiles, batch, dims)
            i = strip % row_tiles
            valid = min(r_size, rows - i * r_size)
            nxt_rows = 0
            if (big or not (short or far)) and strip + 1 < geometry.last:
                nxt_at = _strip_offset((strip + 1) // row_tiles, batch, dims) + (strip + 1) % row_tiles * r_size * step
                nxt_rows = min(r_size, rows - (strip + 1) % row_tiles * r_size)
            wrap_rows = 0 if big else nxt_rows  # (the rows ROW_AHEAD past a row's end: the next strip's)
            nxt_rows = nxt_rows if big else 0
            if short and not big and strip + AHEAD_STRIPS < geometry.last:
                ahead = strip + AHEAD_STRIPS
                at = _strip_offset(ahead // row_tiles, batch, dims) + ahead % row_tiles * r_size * step
                for r in range(min(r_size, rows - ahead % row_tiles * r_size)):
                    _prefetch_run(source + (at + r * step) * width, lines)
            for j in range(col_tiles):
                first_element = source + (offset + i * r_size * step + j * c_size) * width
                n = min(c_size, cols - j * c_size)
                if not short and not far:  # (:data:`._kinds.ROW_AHEAD`; past the rows' ends, the next strip's)
                    into = j * c_size * width + ROW_AHEAD
                    if into < cols * width:
                        for r in range(valid):
                            _prefetch_run(first_element + r * step * width + ROW_AHEAD, t_lines)
                    else:
                        for r in range(wrap_rows):
                            _prefetch_run(source + (nxt_at + r * step) * width + into - cols * width, t_lines)
                if odd:
                    ahead_rows, ahead_at = nxt_rows, source + (nxt_at + j * c_size) * width  # (the next strip's)
                    if far and j + AHEAD_TILES < col_tiles:  # (more rows than the hardware follows: tiles ahead)
                        ahead_rows, ahead_at = valid, first_element + AHEAD_TILES * c_size * width
                    for r in range(ahead_rows):
                        _prefetch_run_l2(ahead_at + r * step * width, t_lines)
                if direct and carry == 0 and first == 0 and valid == r_size and n == c_size:
                    for g in range(r_size // 2):  # (one call site, of the 2-row interleave only: 0.2-0.3 s less
                        # to compile than the shared loop)
                        d, s = line + g * c_size * 2 * width, first_element + g * 2 * step * width
                        for c in range(0, c_size, lanes):
                            _interleave2(d + c * 2 * width, s + c * width, step, _1, pad)
                    line += t_bytes
                    continue
                if rows_out and carry == 0 and first == 0 and valid == r_size and n == c_size:
                    for r in range(r_size):  # (full tiles of rows as they are, odd layouts: streamed straight out)
                        _copy_out(line + r * c_size * width, first_element + r * step * width, c_size * width, _1)
                    line += t_bytes
                    continue
                if odd and direct and carry == 0 and first == 0 and valid < r_size:  # (rows cut short: streamed)
                    _staged_tile_to(line, first_element, step, valid, n, r_size, c_size, p, pad, spare, _1)
                    line += t_bytes
                    continue
                if packed and bits == 4 and p == 2 and valid == r_size and n == c_size and c_size % 8 == 0:
                    _nibble_pairs(data, first_element, step * width, r_size, c_size)  # s4/u4 (2,1)
                else:
                    if p == 1 and (valid < r_size or n < c_size):
                        _short_tile_to(tile, first_element, step, valid, n, r_size, c_size, pad)
                    elif odd and valid < r_size and (p == 2 or p == 4) and c_size % lanes == 0:
                        _staged_tile_to(tile, first_element, step, valid, n, r_size, c_size, p, pad, spare, _0)
                    else:
                        _tile_to(tile, first_element, step, valid, n, r_size, c_size, p, pad, spare)
                    if canonical and canon:
                        _canonical(tile, t_bytes, canon)
                    if packed and bits < 8:
                        _pack_words(data, tile, out_bytes // 8, bits)
                line, carry, first = _flush(line, data, carry, out_bytes, first, stream)
        tail = total - count if geometry.last == strips else 0
        _pad_stream(line, data, carry, first, stream, pad, tail, t_bytes)

    tiled_to.__name__ = tiled_to.__qualname__ = tiled_entry("tiled_to_odd" if odd else "tiled_to", canonical, packed)
    return _jit(tiled_to)


tiled_to_physical = _tiled_to_of(False, False)
tiled_to_canonical = _tiled_to_of(True, False)
tiled_to_packed = _tiled_to_of(False, True)
tiled_to_odd_physical = _tiled_to_of(False, False, True)
tiled_to_odd_canonical = _tiled_to_of(True, False, True)
tiled_to_odd_packed = _tiled_to_of(False, True, True)


def _tiled_from_of(canonical: bool, packed: bool, tile_rows: bool = False) -> Any:
    """The entry point reading tile rows [first, last) of a tiled layout, the first at address ``src``, into the
    array at ``out``; ``canonical``, each tile's bytes are also made canonical (``geometry.canon``); ``packed``,
    unpacked from ``geometry.bits``-bit fields; ``tile_rows``, rows of one tile of ``(p,1)`` sub-tiles back to back
    (:func:`tile_rows_joined`), split straight into those rows (:func:`_tile_rows_split`; constants of the closure,
    as :func:`_tiled_to_of`: an entry of its own, so that the other entries' machine code stays as it was). Whole
    tiles of joined rows of whole lines on a line, streamed, are split straight into the output (``_tiles_streamed``:
    staged, then copied out of the stream's scratch, they took 1.45x memcpy, a C model of the split 1.03)."""

    def tiled_from(src: int, out: int, scratch: int, pad: Any, geometry: Any, batch: Any) -> None:
        # Reads the tiles in physical order; each tile row feeds R output streams, one per logical row. geometry:
        # a TiledGeometry; batch = (sizes, logical strides) of the dims before the tiled two, in physical order;
        # pad gives the element type.
        rows, cols, step = geometry.rows, geometry.cols, geometry.row_stride
        r_size, c_size, p = geometry.tile_rows, geometry.tile_cols, geometry.interleave
        width = _width(pad)
        lanes = _lanes(pad)
        row_bytes = geometry.row_bytes
        piece = c_size * width
        room = max(piece, min(row_bytes - 2 * LINE, UNIT // r_size))  # bytes each row takes before writing out
        row_tiles = (rows + r_size - 1) // r_size
        col_tiles = (cols + c_size - 1) // c_size
        lines = np.zeros(r_size, np.int64)
        carries = np.zeros(r_size, np.int64)
        firsts = np.zeros(r_size, np.int64)
        stream = 0
        dims = batch.shape[1]
        t = src
        bits, canon = geometry.bits, geometry.canon
        packed_bytes = r_size * piece * bits // 8  # one packed tile (bits < 8: bytes)
        tile = scratch + r_size * row_bytes  # the unpacked tile (bits < 8)
        lanes_mask = _U(canon) * _LOW_BITS if canon > 0 else ~_U(0)  # unpacking masks to the value bits
        # short rows that follow each other in the output: a strip's rows assembled back to back (``pitch`` their
        # bytes) and written as one stream, which goes on across strips that follow each other too (rows of other
        # lengths than whole lines would each start and end on a partial line); else a stream per row, each
        # row_bytes of scratch
        joined = step == cols and r_size * cols * width <= JOIN_BYTES and (
            tile_rows or cols * width <= JOINED_ROW or cols * width % LINE != 0)
        pitch = cols * width if joined else row_bytes
        pos = -1  # (joined: where the stream has got to)
        direct = geometry.direct != 0 and geometry.stream != 0 and not (joined or packed or tile_rows) and p > 1
        lined = joined and geometry.stream != 0 and cols % c_size == 0 and piece % LINE == 0 and p > 1 and not (
            packed or (canonical and canon != 0))  # (strips of whole tiles, rows of whole lines, as they are)
        if joined:
            tile = scratch + LINE + r_size * pitch + LINE
        for strip in range(geometry.first, geometry.last):
            offset = _strip_offset(strip // row_tiles, batch, dims)
            i = strip % row_tiles
            valid = min(r_size, rows - i * r_size)
            streams = 1 if joined else valid  # (joined: stream 0 takes the strip's rows back to back)
            start = out + (offset + i * r_size * step) * width
            if direct and valid == r_size and start % LINE == 0:  # (whole tiles, rows on lines: no rows staged)
                _streamed_strip(start, step, t, col_tiles, r_size, c_size, p, pad, scratch, canon if canonical else 0)
                t, stream = t + col_tiles * r_size * piece, 1
                continue
            if lined and valid == r_size and start % LINE == 0:  # (whole tiles of joined rows of whole lines: split
                # straight into the output, streamed; bf16 {0:T(1024)(128)(2,1)} 'from', 512 MiB, 1.45 -> 1.13-1.22x
                # memcpy through the scratch)
                if pos >= 0:  # (the joined stream's partial last line written out before the scratch is used again)
                    _close(lines[0], scratch + LINE, carries[0], firsts[0])
                    pos = -1
                _tiles_streamed(start, step, t, col_tiles, r_size, c_size, p, pad)
                t, stream = t + col_tiles * r_size * piece, 1
                continue
            if not joined or start != pos:
                if joined and pos >= 0:
                    _close(lines[0], scratch + LINE, carries[0], firsts[0])
                for k in range(streams):
                    lines[k], carries[k], firsts[k], stream = _open(start + k * step * width, geometry.stream, width)
            filled = 0
            for j in range(col_tiles):
                n = min(c_size, cols - j * c_size)
                base = t
                if r_size <= TILES_AHEAD_ROWS and not (packed and bits < 8):  # (:data:`._kinds.TILES_AHEAD`)
                    _prefetch_run_l2(t + TILES_AHEAD, r_size * piece // LINE)
                if packed and bits < 8:
                    _unpack_words(tile, t, packed_bytes // 8, bits, lanes_mask)
                    base = tile
                # whole lanes (separate rows: a partial last tile's too, the columns past n going to the row
                # buffers' room, written over by the next tile's or never written out; joined, they would be the
                # next row's), then element by element
                full = 0
                if c_size % lanes == 0 and (p == 2 or p == 4):
                    full = n // lanes * lanes if joined else (n + lanes - 1) // lanes * lanes
                if p == 1:  # (E(n) fields unpacked: the rows as they are)
                    for g in range(r_size):
                        _copy(scratch + LINE + g * pitch + filled, base + g * piece, n * width)
                if tile_rows:  # (rows of one tile back to back: split straight into them, a lane at a time)
                    _tile_rows_split(scratch + LINE, pitch // width, base, r_size, c_size, p, n, pad)
                for g in range(r_size // p if p > 1 and not tile_rows else 0):
                    d = scratch + LINE + g * p * pitch + filled
                    s = base + g * piece * p
                    _deinterleaved_rows(d, s, pitch // width, _1, full, _0, _0, p, pad)
                    if 0 < full < n:
                        # (joined rows: the last lane again, overlapping the one before, where it would run into the
                        # next row; element by element, s8 [N,100]{1,0:T(8,128)(4,1)} 'from' took 2.8x memcpy)
                        _last_lane(d + (n - lanes) * width, pitch // width, s + (n - lanes) * p * width, p, pad)
                    else:
                        for c in range(full, n):
                            for k in range(p):
                                _put(d + k * pitch, c, _get(s, c * p + k, pad))
                filled += n * width
                t += packed_bytes if packed and bits < 8 else r_size * piece
                if (not joined and filled + piece > room) or j == col_tiles - 1:
                    size = valid * pitch if joined else filled
                    for k in range(streams):
                        data = scratch + k * row_bytes + LINE
                        if canonical and canon != 0 and bits >= 8:
                            _canonical(data, size, canon)
                        lines[k], carries[k], firsts[k] = _flush(lines[k], data, carries[k], size, firsts[k], stream)
                    filled = 0
            if joined:
                pos = start + valid * pitch
            else:
                for k in range(valid):
                    _close(lines[k], scratch + k * row_bytes + LINE, carries[k], firsts[k])
        if joined and pos >= 0:
            _close(lines[0], scratch + LINE, carries[0], firsts[0])
        if stream:
            _fence()

    name = "tiled_from_tile_rows" if tile_rows else tiled_entry("tiled_from", canonical, packed)
    tiled_from.__name__ = tiled_from.__qualname__ = name
    return _jit(tiled_from)


tiled_from_physical = _tiled_from_of(False, False)
tiled_from_tile_rows = _tiled_from_of(False, False, True)
tiled_from_canonical = _tiled_from_of(True, False)
tiled_from_packed = _tiled_from_of(False, True)


@_subroutine
def _runs(dst: int, src: int, pad: Any, rows: int, length: int, dr: int, sr: int, stream: int) -> None:
    """``rows`` contiguous runs of ``length`` elements, ``dr`` / ``sr`` elements apart (one call for many runs)."""
    width = _width(pad)
    n = length * width
    ahead = RUNS_AHEAD // n if 0 < n < RUNS_AHEAD else 0  # (runs ahead: :data:`._kinds.RUNS_AHEAD`)
    lines = (n + LINE - 1) // LINE + 1
    if 4 <= n <= 24:  # (short runs: words that may overlap, not a call of memcpy each: u8 [256,1560,12,7]{3,1,2,0},
        # 6.3 / 7.5 -> 3.4 / 4.7x memcpy; runs of 32 bytes went slower, f16 [21845,48,16]{2,0,1} 'from' 6.0 -> 9.0)
        for r in range(rows):
            d, s = dst + r * dr * width, src + r * sr * width
            if ahead != 0:
                _prefetch_run(s + ahead * sr * width, lines)
            if n < 8:
                _put(d, _0, _get(s, _0, _U32))
                _put(d + n - 4, _0, _get(s + n - 4, _0, _U32))
                continue
            for k in range(0, n, 8):  # (the last word ending with the run)
                _put(d + min(k, n - 8), _0, _get(s + min(k, n - 8), _0, _U64))
        return
    for r in range(rows):
        d, s = dst + r * dr * width, src + r * sr * width
        if ahead != 0:
            _prefetch_run(s + ahead * sr * width, lines)
        if stream:
            _copy_out(d, s, n, _1)
        else:
            _copy(d, s, n)


@_subroutine
def _chunked_runs(dst: int, src: int, pad: Any, first: int, last: int, rows: int, length: int, da: int, sa: int,
                  dr: int, sr: int, stream: int) -> None:
    """The runs ``(a, r)`` for ``first <= a < last``, ``r < rows``, at ``a*da + r*dr`` / ``a*sa + r*sr`` elements,
    a chunk of ``a`` at a time, ``r`` inside (each ``r`` one source stream read on along ``a``): for runs of one ``a``
    ``RUNS_APART`` bytes or more apart in the source and back to back in the destination, each stream's runs close
    together. x memcpy, read back: f16 ``[21845,48,16]{2,0,1}`` (runs of 32 bytes, 48 streams) 6.0 -> 2.6, all 48 runs
    of one ``a`` in turn before; bf16 ``[419430,5,8]{2,0,1}`` 5.6 -> 2.9, u8 ``[2000000,3,5]{2,0,1}`` 8.6 -> 3.3."""
    width = _width(pad)
    n = length * width
    chunk = max(8, RUN_CHUNK // max(1, rows * n))
    for c in range(first, last, chunk):
        k = min(chunk, last - c)
        for r in range(rows):
            _runs(dst + (c * da + r * dr) * width, src + (c * sa + r * sr) * width, pad, k, length, da, sa, stream)


@_subroutine
def _copy_out(out: int, scratch: int, n: int, stream: int) -> None:
    """Copy ``n`` bytes from scratch to ``out``: whole aligned lines streamed, the partial ends stored plainly."""
    if not stream:
        _copy(out, scratch, n)
        return
    head = min(n, (-out) % LINE)
    _copy(out, scratch, head)
    k = head
    while k + 4 * LINE <= n:
        _stream4(out + k, scratch + k)
        k += 4 * LINE
    while k + LINE <= n:
        _stream(out + k, scratch + k)
        k += LINE
    _copy(out + k, scratch + k, n - k)



@_subroutine
def _emit(out: int, row: int, n: int, carry: int, first: int, last: int) -> None:
    """Write the ``n`` bytes staged at ``row + LINE`` to ``out``, one destination row's piece: its whole lines streamed
    from the row's own line boundary, with the bytes before ``out`` in that line (the carry: the tail the row's
    previous piece left at the end of the line at ``carry``); the partial first line of a ``first`` piece and the
    tail of a ``last`` one stored plainly, any other tail kept at ``carry`` (``n`` at least a line)."""
    head = out & (LINE - 1)
    start = row + LINE - head
    total = head + n
    k = 0
    if first:
        if head:
            k = LINE
            _copy(out, row + LINE, min(LINE - head, n))
    else:
        _move_line(row, carry)
    base = out - head
    whole = (total - k) // LINE * LINE
    _lines(base + k, start + k, whole)
    k += whole
    if last:
        _copy(base + k, start + k, max(0, total - k))
    else:
        _move_line(carry, start + total - LINE)  # the tail ends the carry's line


@_subroutine
def _scalar(dst: int, src: int, pad: Any, big: int, small: int, du: int, di: int, si: int, u0: int, i0: int) -> None:
    """``dst[u*du + i*di] = src[u + i*si]`` for ``u0 <= u < big`` with every ``i < small``, and for ``u < u0`` with
    ``i0 <= i < small`` (the edges a blocked pass leaves), element by element."""
    for u in range(u0, big):
        for i in range(small):
            _put(dst, u * du + i * di, _get(src, u + i * si, pad))
    if i0 < small:
        for u in range(min(u0, big)):
            for i in range(i0, small):
                _put(dst, u * du + i * di, _get(src, u + i * si, pad))

# ----- sub-byte packing --------------------------------------------------------------------------------------------
_M64_32, _M64_16, _M64_8 = _U(0x00000000FFFFFFFF), _U(0x000000000000FFFF), _U(0x00000000000000FF)


@_subroutine
def _pack_words(dst: int, src: int, count: int, bits: int) -> None:
    """``count`` packed uint64 words at ``dst`` from the element bytes at ``src`` (``64 / bits`` bytes per word)."""
    if bits == 4:
        for k in range(count):
            low = _squeeze4(_get_word(src, 2 * k))
            _put_word(dst, k, low | (_squeeze4(_get_word(src, 2 * k + 1)) << _U(32)))
    elif bits == 2:
        for k in range(count):
            v = _squeeze2(_get_word(src, 4 * k)) | (_squeeze2(_get_word(src, 4 * k + 1)) << _U(16))
            v |= (_squeeze2(_get_word(src, 4 * k + 2)) << _U(32)) | (_squeeze2(_get_word(src, 4 * k + 3)) << _U(48))
            _put_word(dst, k, v)
    else:
        for k in range(count):
            v = _U(0)
            for q in range(8):
                v |= _squeeze1(_get_word(src, 8 * k + q)) << _U(8 * q)
            _put_word(dst, k, v)


@_jit
def pack(
    codes: int, n: int, out: int, size: int, scratch: int, room: int, bits: int, stream: int, part: tuple[int, int]
) -> None:
    """Pack ``n`` bytes at ``codes`` (their low ``bits`` bits) into ``size`` bytes at ``out``, first element lowest."""
    # Writes the whole output words [part[0], part[1]); the part ending with the last one also writes the bytes
    # after them. scratch has room bytes.
    per = 8 // bits  # elements per byte
    source, data = codes, scratch + LINE
    line, carry, first, stream = _open(out + 8 * part[0], stream, _1)
    block = max(1, min(UNIT, room - 2 * LINE) // 8)  # output words per unit
    words = n // (8 * per)
    done = part[0]
    while done < part[1]:
        m = min(block, part[1] - done)
        _pack_words(data, source + done * 8 * per, m, bits)
        line, carry, first = _flush(line, data, carry, 8 * m, first, stream)
        done += m
    rest = size - words * 8 if part[1] == words else 0
    field = (1 << bits) - 1
    for k in range(rest):
        value = 0
        for q in range(per):
            i = words * 8 * per + k * per + q
            if i < n:
                value |= (np.int64(_get(source, i, np.uint8(0))) & field) << (q * bits)
        _put(data, k, np.uint8(value))
    line, carry, first = _flush(line, data, carry, rest, first, stream)
    _pad_stream(line, data, carry, first, stream, np.uint8(0), _0, _1)


@_jit
def transpose_nibbles(data: int, length: int, scratch: int, part: tuple[int, int]) -> None:
    """In place, in each row [part[0], part[1]) of ``length`` bytes at ``data``: byte pair g ``(a0|a1<<4, b0|b1<<4)``
    becomes byte g of the row's first half ``a0|b0<<4`` and byte g of its second half ``a1|b1<<4`` (a 2 x 2 transpose
    of the nibbles of every pair, its two rows written apart); scratch has ``length + 16`` bytes."""
    half = length // 2
    words = half // 8  # output words of each half (from two input words each)
    second = scratch + 8 * (words + 1)
    for r in range(part[0], part[1]):
        row = data + r * length
        for k in range(words):
            a, b = _get_word(row, 2 * k), _get_word(row, 2 * k + 1)
            _put_word(scratch, k, _squeeze4(a) | (_squeeze4(b) << _U(32)))
            _put_word(second, k, _squeeze4(a >> _U(4)) | (_squeeze4(b >> _U(4)) << _U(32)))
        for g in range(8 * words, half):
            p, q = _get(row, 2 * g, np.uint8(0)), _get(row, 2 * g + 1, np.uint8(0))
            _put(scratch, g, np.uint8((p & np.uint8(15)) | (q << np.uint8(4))))
            _put(second, g, np.uint8((p >> np.uint8(4)) | (q & np.uint8(240))))
        _copy(row, scratch, half)
        _copy(row + half, second, half)


@_jit
def swap_fields(data: int, nbytes: int, bits: int, mask: int, part: tuple[int, int]) -> None:
    """In place, in the uint64 words [part[0], part[1]) of the ``nbytes`` at ``data`` (the part ending with the last
    whole word also the bytes after it): each field ``mask`` selects swapped with the one ``bits`` above it."""
    shift, fields = _U(bits), _U(mask)
    for k in range(part[0], part[1]):
        w = _get_word(data, k)
        t = ((w >> shift) ^ w) & fields
        _put_word(data, k, w ^ (t | (t << shift)))
    words = nbytes // 8
    if part[1] == words:
        w = _U(0)
        for i in range(nbytes - 8 * words):
            w |= _U(_get(data, 8 * words + i, np.uint8(0))) << _U(8 * i)
        t = ((w >> shift) ^ w) & fields
        w ^= t | (t << shift)
        for i in range(nbytes - 8 * words):
            _put(data, 8 * words + i, np.uint8((w >> _U(8 * i)) & _U(255)))


@_jit
def turn_lines(src: int, dst: int, witness: Any, plan: Any, stream: int, part: tuple[int, int]) -> None:
    """A relayout between two ``T(R,C)(p,1)`` layouts whose two minor dims are swapped, a square of lines at a time
    (:func:`._shuffles._line_turner`): the blocks [part[0], part[1]) of squares of source sub-tile rows (blocks of a
    sub-tile row's lines, batch after batch), each with every square of lines along the source's minor dim; the part
    ending with the last block also moves the elements no whole square holds, one at a time (tiles partly filled).
    ``plan`` (bytes but the counts): squares across a batch and along it that lie whole in both
    layouts, lines of a square, ``p`` (0: 2, with 4-bit fields), bytes of a sub-tile row, of a tile, sub-tile rows of a
    tile, log2 of the lines of a square in one tile, bytes of a source tile row, of a target one, of a source batch,
    of a target batch, the two dims (the source's second-minor and minor), the tile, blocks a batch, batches."""
    # The squares go in blocks of a sub-tile row's lines a side: the lines read are then the source tile's sub-tile
    # rows, those written the target tile's (1.1-1.5x memcpy, against 1.5-1.8 a source row of squares at a time)
    (across, along, per, p, sub, tile, rows, shift, src_row, dst_row, s_batch, d_batch, x_size, y_size, r_size, c_size,
     blocks, batches) = plan
    lines = sub // LINE  # lines of a sub-tile row
    for q in range(part[0], part[1]):
        b = q // blocks
        a0 = (q - b * blocks) * lines
        for e0 in range(0, along, lines):
            for a in range(a0, min(a0 + lines, across)):
                top = a * per  # the square's first source sub-tile row, and its line in the target's rows
                source = src + b * s_batch + (top // rows) * src_row + (top % rows) * sub
                target = dst + b * d_batch + (a // lines) * tile + (a % lines) * LINE
                for e in range(e0, min(e0 + lines, along)):
                    s = source + (e // lines) * tile + (e % lines) * LINE
                    first = e * per  # the target's first sub-tile row
                    d = target + (first // rows) * dst_row + (first % rows) * sub
                    if p == 4:
                        _turn_lines4(d, sub, dst_row, s, sub, src_row, shift, stream, witness)
                    elif p == 2:
                        _turn_lines2(d, sub, dst_row, s, sub, src_row, shift, stream, witness)
                    else:  # (E(4) fields: p 2; their tiles are filled)
                        _turn_nibbles(d, sub, dst_row, s, sub, src_row, shift, stream, witness)
    n = per * p
    if part[1] == blocks * batches and p > 0 and (across * n < x_size or along * n < y_size):
        width = _width(witness)
        word = p * width
        for b in range(batches):
            for x in range(x_size):
                low = 0 if x >= across * n else along * n  # (the rows past the whole squares, then the columns)
                s_x = src + b * s_batch + (x // r_size) * src_row + ((x % r_size) // p) * sub + (x % p) * width
                d_x = dst + b * d_batch + (x // c_size) * tile + (x % c_size) * word
                for y in range(low, y_size):
                    s = s_x + (y // c_size) * tile + (y % c_size) * word
                    d = d_x + (y // r_size) * dst_row + ((y % r_size) // p) * sub + (y % p) * width
                    _put(d, 0, _get(s, 0, witness))
    if stream:
        _fence()


@_subroutine
def _unpack_words(dst: int, src: int, count: int, bits: int, lanes: Any) -> None:
    """The element bytes of ``count`` packed uint64 words at ``src``, masked by ``lanes``, to ``dst``."""
    if bits == 4:
        for k in range(count):
            v = _get_word(src, k)
            _put_word(dst, 2 * k, _spread4(v & _M64_32) & lanes)
            _put_word(dst, 2 * k + 1, _spread4(v >> _U(32)) & lanes)
    elif bits == 2:
        for k in range(count):
            v = _get_word(src, k)
            for q in range(4):
                _put_word(dst, 4 * k + q, _spread2((v >> _U(16 * q)) & _M64_16) & lanes)
    else:
        for k in range(count):
            v = _get_word(src, k)
            for q in range(8):
                _put_word(dst, 8 * k + q, _spread1((v >> _U(8 * q)) & _M64_8) & lanes)


@_jit
def unpack(
    data: int, out: int, n: int, scratch: int, room: int, bits: int, mask: int, stream: int, part: tuple[int, int]
) -> None:
    """Unpack ``n`` ``bits``-bit fields at ``data`` into ``n`` bytes at ``out``, each masked by ``mask``."""
    # Reads the whole input words [part[0], part[1]); the part ending with the last one also the bytes after
    # them. scratch has room bytes.
    per = 8 // bits
    lanes = _U(mask) * _LOW_BITS
    source, buffer = data, scratch + LINE
    line, carry, first, stream = _open(out + 8 * per * part[0], stream, _1)
    block = max(1, min(UNIT, room - 2 * LINE) // (8 * per))  # input words per unit
    words = n // (8 * per)
    done = part[0]
    while done < part[1]:
        m = min(block, part[1] - done)
        _unpack_words(buffer, source + 8 * done, m, bits, lanes)
        line, carry, first = _flush(line, buffer, carry, m * 8 * per, first, stream)
        done += m
    field = (1 << bits) - 1
    end = n if part[1] == words else words * 8 * per
    for i in range(words * 8 * per, end):
        byte = np.int64(_get(source, i // per, np.uint8(0)))
        _put(buffer, i - words * 8 * per, np.uint8((byte >> ((i % per) * bits)) & field & mask))
    line, carry, first = _flush(line, buffer, carry, end - words * 8 * per, first, stream)
    _pad_stream(line, buffer, carry, first, stream, np.uint8(0), _0, _1)


@_subroutine
def _regroup_run(grouped: int, fields: int, n: int, g_step: int, f_step: int, member: int, bits: int, mask: int,
                 to: int, stream: int) -> None:
    """One run of ``n`` bytes of groups (:mod:`._grouped`): made from their fields (``to``) or split into them
    (``stream``: whole lines of fields on the line grid streamed)."""
    per = 8 // bits
    field = (1 << bits) - 1
    words = n // 8
    done = 0
    if g_step == 1 and f_step == 1:  # (runs contiguous on both sides: a line of groups at a time, then words)
        done = _regroup_lines(grouped, fields, n, member, bits, mask, to, stream)
        words = (n - done) // 8
        _regroup_rows(grouped + done, fields + done, 8 * words, _1, _0, _0, member, bits, mask, to)
    elif g_step == 1 and f_step == per and member == 1:  # (a group's fields follow each other)
        if to:
            _pack_words(grouped, fields, words, bits)
        else:
            _unpack_words(fields, grouped, words, bits, _U(mask) * _LOW_BITS)
    else:
        words = 0
    for t in range(done + 8 * words, n):
        g, f = grouped + t * g_step, fields + t * f_step
        if to:
            value = 0
            for q in range(per):
                value |= (np.int64(_get(f + q * member, 0, np.uint8(0))) & field) << (q * bits)
            _put(g, 0, np.uint8(value))
        else:
            value = np.int64(_get(g, 0, np.uint8(0)))
            for q in range(per):
                _put(f + q * member, 0, np.uint8((value >> (q * bits)) & mask))


@_jit
def regroup(grouped: int, fields: int, shape: Any, g_steps: Any, f_steps: Any, member: int, bits: int, mask: int,
            to: int, stream: int, part: tuple[int, int]) -> None:
    """Bytes of groups at ``grouped`` made from (``to``) or split into the fields of elements at ``fields`` (one
    byte each, a group's ``8 / bits`` elements ``member`` bytes apart), over the axes ``shape`` (steps in bytes on
    each side, the last one innermost), indices [part[0], part[1]) of the first; split fields are masked by ``mask``,
    their whole lines on the line grid streamed with ``stream``."""
    axes = shape.size  # (at least two: the caller adds a first axis of 1)
    index = np.zeros(axes, np.int64)
    index[0] = part[0]
    inner = shape[axes - 1]
    # short runs contiguous on both sides: the axis outside them in one loop (_regroup_rows)
    short = inner < 64 and g_steps[axes - 1] == 1 and f_steps[axes - 1] == 1
    if short and axes == 2:  # (that axis is the threads' split)
        _regroup_rows(grouped + part[0] * g_steps[0], fields + part[0] * f_steps[0], inner, part[1] - part[0],
                      g_steps[0], f_steps[0], member, bits, mask, to)
        return
    rows = shape[axes - 2] if short else 1
    outer = axes - 2 if rows > 1 else axes - 1
    while index[0] < part[1]:
        g, f = grouped, fields
        for a in range(outer):
            g += index[a] * g_steps[a]
            f += index[a] * f_steps[a]
        if rows > 1:
            _regroup_rows(g, f, inner, rows, g_steps[axes - 2], f_steps[axes - 2], member, bits, mask, to)
        else:
            _regroup_run(g, f, inner, g_steps[axes - 1], f_steps[axes - 1], member, bits, mask, to, stream)
        a = outer - 1
        while a > 0 and index[a] + 1 == shape[a]:
            index[a] = 0
            a -= 1
        index[max(a, 0)] += 1
    if stream:
        _fence()


@_jit
def tile_squares(dst: int, src: int, witness: Any, shape: Any, d_steps: Any, s_steps: Any, blocks: Any, stream: int,
                 scratch: int, part: tuple[int, int]) -> None:
    """A copy between tiled transposes (:func:`._kinds.tiled_squares`) a square of one line a side at a time, its rows
    in groups on both sides: ``blocks`` = (the source runs' elements, their blocks' rows ``big`` (a power of 2, its
    log2), ``du``, ``dB`` (the destination steps of a block's rows and of its blocks), the destination runs'
    elements, ``small``'s log2, ``si``, ``sA``), steps in elements; the outer axes ``shape`` (``d_steps``,
    ``s_steps``; at least one), indices [part[0], part[1]) of the first. Squares of bytes gather their 64 source
    lines into ``scratch`` (a line-aligned 4 KiB) first: their rows' groups, often a multiple of 4 KiB apart, share
    cache sets, and the byte square reads each line twice (half a line at a time)."""
    width = _width(witness)
    side = LINE // width
    run_u, big_shift, du, d_group = blocks[0], blocks[1], blocks[2], blocks[3]
    run_i, small_shift, si, s_group = blocks[4], blocks[5], blocks[6], blocks[7]
    small_mask = (1 << small_shift) - 1
    lined = stream != 0 and dst % LINE == 0 and (du * width) % LINE == 0 and (d_group * width) % LINE == 0
    axes = shape.size
    for a in range(axes):  # (every destination row on a line, or none streamed)
        if (d_steps[a] * width) % LINE:
            lined = False
    flag = _1 if lined else _0
    index = np.zeros(axes, np.int64)
    index[0] = part[0]
    while index[0] < part[1]:
        d0, s0 = dst, src
        for a in range(axes):
            d0 += index[a] * d_steps[a] * width
            s0 += index[a] * s_steps[a] * width
        for x0 in range(0, run_u, side):  # (destination rows x0 .. x0 + side: the source runs' elements)
            d_rows = d0 + (x0 >> big_shift) * d_group * width
            for y0 in range(0, run_i, side):  # (source rows y0 .. y0 + side: the destination runs' elements)
                s = s0 + ((y0 >> small_shift) * s_group + x0) * width
                if width == 1:
                    for k in range(LINE):
                        _move_line(scratch + k * LINE, s + (k >> small_shift) * s_group + (k & small_mask) * si)
                    _tile_square(d_rows + y0, du, d_group, big_shift, scratch, LINE, LINE << small_shift, small_shift,
                                 flag, witness)
                else:
                    _tile_square(d_rows + y0 * width, du, d_group, big_shift, s, si, s_group, small_shift, flag,
                                 witness)
        a = axes - 1
        while a > 0 and index[a] + 1 == shape[a]:
            index[a] = 0
            a -= 1
        index[max(a, 0)] += 1
    if lined:
        _fence()
