"""The 2-d transposes of the generic copy (the source-contiguous axis first, the destination's last) that its
kernels take whole: staged through the cache (``staged_transpose``: a block of source rows copied into a scratch, then
transposed out of it) or, onto destination rows on the line grid, moved straight from the source
(``direct_transpose``); one at a time or a batch of them.

**Why straight from the source.** The staged kernel reads a block, then writes it out: memory is read or written,
not both at once (a prototype staging 512 KiB blocks in order and streaming them out took 68 ms for 512 MiB, the sum
of reading and writing alone, 38 + 21, where memcpy took 41), and a 2-d transpose of 512 MiB took twice memcpy's time
or more on this 2-core Intel Xeon. The direct kernel transposes its squares from the source rows themselves, a band
of them a few lines at a time, the next sweep's lines prefetched into the second cache level while the squares stream
out (a plain streamed copy itself went 56 -> 38 ms with its source prefetched 2 KiB ahead into that level). x memcpy,
one thread, to / from, staged -> direct, A/B in one process: f32 ``[32768,4096]{0,1}`` 2.22 / 1.95 -> 1.73 / 1.49;
bf16 ``[32768,8192]`` 2.79 / 2.16 -> 2.02 / 1.68; s8 ``[65536,8192]`` 3.44 / 2.40 -> 2.38 / 1.79; f64 ``[8192,8192]``
(before: the walk) 1.82 / 1.81 -> 1.63 / 1.56; a batch of bf16 ``[4096,2000]`` transposes laid out 2.38 -> 1.57; at
64 MiB, where the cache holds much of it, f32 1.14 / 1.14 -> 0.93 / 0.88, bf16 1.22 / 1.25 -> 0.99 / 0.92, s8
1.29 / 1.27 -> 1.10 / 1.06. The staged kernel keeps rows at other offsets in their lines (whose squares need staging
to be joined into lines: a prototype of direct squares joined so through a ring took 112-170 ms for bf16
``[32760,8191]{0,1}`` laid out, against the staged kernel's ~100), E(n) fields, and pred's bytes made canonical on the
way (the direct kernel's canonical byte squares took 1.5x the staged kernel's paired bytes). The direct kernel takes
the last few rows or columns of a side that is not a whole number of squares in one more square overlapping the one
before; staged, they had cost one more kernel call for each transpose of a batch (u8 ``[200,2616,1024]{0,2,1}`` read
back, 2616 transposes whose last 8 destination rows were staged: 2.1 -> 3.2x memcpy; overlapped: 2.0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _dispatch as dispatch
from ._dispatch import Run
from ._kinds import LINE

STAGE_ROWS = 256  # bytes of each destination row a staged transpose writes per block (its source rows: as many
# words; a multiple of a line)
STAGE_COLS = 2048  # words of each source row it reads per block (destination rows: as many); 512 KiB staged. Fewer
# rows read longer than the 512 x 512 bytes before (x memcpy, to / from, 512 MiB: bf16 [32760,8191]{0,1} 2.24 / 2.28 ->
# 2.29 / 2.00, 4096 bytes of each row 2.09 / 2.00; u8 [65552,8191] 2.98 / 2.52 -> 2.47 / 2.24, 4096 bytes 2.69 / 2.42;
# f32 [32761,4095] 2.16 / 2.19 -> 2.02 / 1.98; u4 [32768,16384]{0,1:E(4)} 2.58 / 2.17 -> 2.12 / 1.88; pred
# [65536,8192]{0,1}, its bytes paired, 3.44 / 2.41 -> 2.66 / 2.26; 64 MiB: bf16 [4095,8191] 1.17 / 1.16 -> 1.02 /
# 1.00, u8 [8194,8191] 1.28 / 1.28 -> 1.12 / 1.12, u4 and pred even; 128 bytes of rows were slower, 512 x 8192 too)
DENSE_BLOCK = 512  # bytes a side of the block onto destination rows back to back up to ``DENSE_ROWS`` (each row
# whole in each block; at most ``STAGE_COLS`` words of each source row)
STAGE_SIDE = 64  # shortest side (elements; of 2-byte and wider words, twice that) of a 2-d transpose worth staging
STAGE_DENSE_SIDE = 32  # ... when its destination rows are back to back and off the line grid (a minor batch dim of 32
# to 63: u8[48,N,1024]{0,2,1} 'to' 2.6-2.9 -> 1.7-1.9x memcpy, bf16 2.15-2.3 -> 1.6-1.7; 24 bytes: 2.05-2.3 -> 2.5)
STAGE_AHEAD = 8  # source rows of 2- and 4-byte words a staged block prefetches ahead of the one it copies, into the
# second cache level (512 MiB: 1.45-1.7x memcpy; 2 rows into the first level: 1.6-1.85x)
STAGE_AHEAD_SPAN = 4096  # ... or as many as span this many bytes, where rows are short (u8[100,N,1024]{0,2,1} 'from',
# rows of 100 bytes: 2.3 -> 1.6x memcpy; 2 KiB: 1.8, 8 KiB: 1.7)
STAGE_AHEAD_BYTES = 4  # ... of bytes paired into 2-byte words (and E(n) fields), into the first level (into the
# second, 8 rows: no faster for bytes; u4 'to' 2.3x, not 1.65x); shifted bytes, staged plainly, as wider words


def _stage_fits(
    sides: Sequence[int] | np.ndarray[Any, Any], width: int, dense: bool = False, on_lines: bool = False
) -> bool:
    """True when the staged kernel takes a 2-d transpose of ``width``-byte words with these sides (destination rows,
    their length): 1-, 2- and 4-byte words (8-byte ones onto rows on the line grid, ``on_lines``, moved straight
    from the source), sides of at least ``STAGE_SIDE`` elements (2-byte and wider words: twice
    that); when the destination rows are back to back (``dense``) and short enough to be whole in each block, sides
    of ``STAGE_SIDE`` elements, or ``STAGE_DENSE_SIDE`` off the line grid (not ``on_lines``).

    >>> _stage_fits((64, 1000), 1), _stage_fits((64, 1000), 4), _stage_fits((512, 512), 8)
    (True, False, False)
    >>> _stage_fits((100000, 100), 4), _stage_fits((100000, 100), 4, dense=True)
    (False, True)
    >>> _stage_fits((100000, 48), 2, dense=True), _stage_fits((100000, 48), 4, dense=True, on_lines=True)
    (True, False)
    """
    if width not in (1, 2, 4) and not (width == 8 and on_lines and DIRECT):  # (8-byte words: straight only)
        return False
    side = min(int(n) for n in sides)
    if dense and int(sides[1]) * width <= DENSE_BLOCK:
        return side >= (STAGE_SIDE if on_lines else STAGE_DENSE_SIDE)
    return side >= STAGE_SIDE * min(width, 2)


def _stages(
    target: int, shape: np.ndarray[Any, Any], d_steps: np.ndarray[Any, Any], width: int, stream: int,
    dense: bool = True,
) -> int:
    """How the staged kernel takes a streamed 2-d transpose (source-contiguous axis first) that it fits
    (:func:`_stage_fits`; ``dense``: with destination rows back to back counted as such): 1 straight onto
    destination rows on the line grid, 2 through staged rows (rows at other offsets); 0 when it does not."""
    if not stream or len(shape) != 2 or int(d_steps[1]) != 1 or target % width:
        return 0
    on_lines = target % LINE == 0 and int(d_steps[0]) * width % LINE == 0
    if not _stage_fits(shape, width, dense and int(d_steps[0]) == int(shape[1]), on_lines):
        return 0
    return 1 if on_lines else 2


BATCH_STAGE_BYTES = 1 << 20
"""Least bytes of each 2-d transpose of a batch for the staged kernel to take them one by one (smaller ones: the walk).
Measured, 32 MiB, x memcpy, walked -> staged: f32 ``[2,3000,1024]{1,2,0}`` 'to' 29 -> 1.75, bf16 ``[2,4096,2000]``
'from' 60 -> 1.6, bf16 ``[11,1500,1000]`` 'to' 7.5 -> 1.9; but u8 ``[128,1024,256]`` (256 KiB each) 2.0 -> 2.9, u8
``[256,1000,131]`` (128 KiB) 2.6 -> 5.5."""

BATCH_TIMED_BYTES = 1 << 16
"""Least bytes of each 2-d transpose of a batch for a large copy to time the staged kernel beside the walk, below
``BATCH_STAGE_BYTES`` (u8 ``[56,2995,200]{1,2,0}`` 'to', transposes of 585 KiB onto rows of 2995 bytes: 10-12x
memcpy walked, 2.7 staged)."""


def _batched_stages(
    walk: Any, d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], pad: Any, shape: np.ndarray[Any, Any],
    d_steps: np.ndarray[Any, Any], s_steps: np.ndarray[Any, Any], run: Run, stream: int,
) -> bool:
    """The walk's copy by :func:`_batched_plan` (transposes of ``BATCH_STAGE_BYTES`` and more); False (nothing done)
    where it does not apply."""
    plan = _batched_plan(walk, d, s, pad, shape, d_steps, s_steps, run, stream, BATCH_STAGE_BYTES)
    return plan is not None and plan()


def _batched_plan(
    walk: Any, d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], pad: Any, shape: np.ndarray[Any, Any],
    d_steps: np.ndarray[Any, Any], s_steps: np.ndarray[Any, Any], run: Run, stream: int, least: int,
) -> Callable[[], bool] | None:
    """The walk's copy as a batch of 2-d transposes (its last two axes, the source-contiguous one first) that the
    staged kernel takes one at a time, each as its offset in its line asks (:func:`_stages`); None when they are
    smaller than ``least`` bytes or the kernel does not take one of them.

    A batch of many goes over ``run``'s threads a transpose each; of few, each transpose over the threads. (Batches
    whose transposes sit at other offsets in their lines had been left to the walk: bf16 ``[11,1500,1001]{1,2,0}``
    'to', rows of 2002 bytes, 5.6x memcpy, staged 1.85.)
    """
    width = d.itemsize
    plane, outer = shape[-2:], shape[:-2]
    count = int(np.prod(outer))
    nbytes = int(np.prod(plane)) * width
    if not stream or nbytes < least or count > BATCH_MOST:
        return None
    target, source = dispatch.address(d), dispatch.address(s)
    starts = np.indices(tuple(int(n) for n in outer)).reshape(len(outer), -1).T @ d_steps[:-2] * width
    modes = {int(at): _stages(int(at), plane, d_steps[-2:], width, stream)
             for at in np.unique((target + starts) % LINE)}
    if not all(modes.values()):
        return None
    many = count >= 4 * run.threads
    each = Run(run.limit, 1, run.numba_bytes, run.stream_bytes, run.thread_bytes) if many else run

    def part(bounds: tuple[int, int]) -> None:
        for k in range(*bounds):
            index = np.array(np.unravel_index(k, outer), np.int64)
            to, out_of = target + int(index @ d_steps[:-2]) * width, source + int(index @ s_steps[:-2]) * width
            _staged(walk, to, out_of, pad, plane, d_steps[-2:], s_steps[-2:], nbytes, each, modes[to % LINE])

    def batch() -> bool:
        dispatch.run_parts(part, dispatch.parts(count, d.nbytes, run) if many else [(0, count)])
        return True

    return batch


BATCH_MOST = 1 << 16  # most transposes of a batch looped over here (by then they make 64 GiB or more)


def _stage_ahead(read: int, plain: bool, bits: int) -> int:
    """Source rows a staged block prefetches ahead of the one it copies when it reads ``read`` bytes of each row:
    ``STAGE_AHEAD`` rows staged as they are (``plain``), ``STAGE_AHEAD_BYTES`` bytes paired into words and E(n) fields,
    or as many more as span ``STAGE_AHEAD_SPAN`` bytes (short rows; not for E(n) fields); an even number.

    >>> _stage_ahead(1024, True, 8), _stage_ahead(1024, False, 8), _stage_ahead(100, False, 8)
    (8, 4, 42)
    """
    ahead = STAGE_AHEAD if plain else STAGE_AHEAD_BYTES
    if bits == 8:
        ahead = max(ahead, -(-STAGE_AHEAD_SPAN // max(1, read)))
    return ahead + ahead % 2


def _staged(
    walk: Any, target: int, source: int, pad: Any, shape: np.ndarray[Any, Any], d_steps: np.ndarray[Any, Any],
    s_steps: np.ndarray[Any, Any], nbytes: int, run: Run, mode: int, bits: int = 8, packs: int = 0,
) -> None:
    """The 2-d transpose over ``run``'s threads (each part whole lines of destination rows, or, moved straight from the
    source, of their columns where they are fewer lines than threads): moved straight from the source onto
    destination rows on the line grid (``direct_transpose``, where ``DIRECT``), else by the staged kernel;
    ``mode`` as :func:`_stages` gives it; ``bits``, ``packs``: E(bits) fields packed or unpacked on the way (staged).
    """
    big, small, du, si = int(shape[0]), int(shape[1]), int(d_steps[0]), int(s_steps[1])
    width = pad.itemsize
    line = LINE // width
    canon = int(bits == 8 and not packs and dispatch.fusing())  # (pred: the bytes made 0 or 1 by the squares)
    if DIRECT and mode == 1 and bits == 8 and not packs and not canon and min(big, small) >= line:
        _direct(walk, target, source, pad, big, small, du, si, nbytes, run)
        return
    rows, cols = _stage_block(small, du, width, mode if bits == 8 and not packs else 1)
    staged = -(-rows // line) * line * (cols * width + LINE)  # (a partial band's squares read whole lines of rows)
    ring = LINE * (rows * width + LINE) + cols * LINE  # a band's rows (up to a line's bytes), then a line per row

    def part(bounds: tuple[int, int]) -> None:
        room = np.empty(staged + ring + LINE, np.uint8)
        scratch = dispatch.address(room) + (-dispatch.address(room)) % LINE
        first, last = line_range(bounds, line, big)
        plain = width > 1 or (bits == 8 and mode == 2)  # (rows staged as they are, as the kernel decides)
        ahead = _stage_ahead(min(cols, last - first) * width, plain, bits)
        kernel = walk.staged_transpose_canonical if canon else walk.staged_transpose
        kernel(target, source, pad, big, small, du, si, first, last, scratch, rows, cols, ahead, scratch + staged,
               int(mode == 2), bits, packs)

    dispatch.run_parts(part, dispatch.parts(max(1, big // line), nbytes, run))
    if canon:
        dispatch.made_canonical(nbytes)


def _direct(walk: Any, target: int, source: int, pad: Any, big: int, small: int, du: int, si: int, nbytes: int,
            run: Run) -> None:
    """``direct_transpose`` over ``run``'s threads: each a range of whole lines of destination rows, or where those
    are fewer lines than threads, of their columns."""
    width = pad.itemsize
    line = LINE // width
    across = big // line < run.threads <= small // line  # (too few destination rows to share: their columns)

    def part(bounds: tuple[int, int]) -> None:
        if across:
            first, last = line_range(bounds, line, small)
            walk.direct_transpose(target + first * width, source + first * si * width, pad, last - first, du, si, 0,
                                  big, DIRECT_ROWS[width], DIRECT_LINES[width])
        else:
            first, last = line_range(bounds, line, big)
            walk.direct_transpose(target, source, pad, small, du, si, first, last, DIRECT_ROWS[width],
                                  DIRECT_LINES[width])

    dispatch.run_parts(part, dispatch.parts(max(1, (small if across else big) // line), nbytes, run))


def line_range(bounds: tuple[int, int], line: int, n: int) -> tuple[int, int]:
    """Elements [first, last) of ``n`` that a part ``bounds`` of whole lines (``line`` elements each) takes, the part
    reaching the last whole line taking the rest too.

    >>> line_range((0, 2), 16, 100), line_range((2, 6), 16, 100)
    ((0, 32), (32, 100))
    """
    return bounds[0] * line, n if bounds[1] * line >= n - n % line else bounds[1] * line


DIRECT = True
"""2-d transposes onto destination rows on the line grid moved straight from the source (``direct_transpose``; False:
staged, for comparison)."""
DIRECT_ROWS = {1: 64, 2: 32, 4: 32, 8: 16}
"""Source rows of each band of a direct transpose, by element width: one line of each destination row a sweep, two
for words of 4 and 8 bytes (f32 ``[32768,4096]{0,1}`` 'to', ms at 512 MiB, this machine: 16 rows 67-70, 32 61-69,
64 77-127; bytes 64 rows 77-99, 128 93-152; bf16 32 rows 72-93, 64 81-147; f64 8 rows 61, 16 54-58, 32 62-64)."""
DIRECT_LINES = {1: 4, 2: 4, 4: 4, 8: 2}
"""Lines of each source row a direct transpose's sweep reads at a time, and prefetches for the next sweep (bytes: 2
lines read 30% slower than 4 wherever the source's rows were not on a page boundary)."""

DENSE_ROWS = DENSE_BLOCK + LINE
"""Longest destination rows (bytes) back to back, off the line grid, that a staged transpose takes whole in each
block rather than in blocks of ``DENSE_BLOCK`` and a last one of under a line of rows (``u8[64000,524]{0,1}`` 'from':
blocks of 512 and 12 rows, 2.4x memcpy; whole, one run per band: 1.9-2.1x; longer rows whole, with fewer bytes of
each source row per block, were slower: ``u8[16000,2000]`` 1.7 -> 2.1x)."""


def _stage_block(small: int, du: int, width: int, mode: int) -> tuple[int, int]:
    """The staged kernel's block (source rows, words of each): ``STAGE_ROWS`` bytes x ``STAGE_COLS`` words; onto
    destination rows back to back of up to ``DENSE_ROWS`` bytes, ``DENSE_BLOCK`` bytes a side (at most ``STAGE_COLS``
    words), or where they are off the line grid (``mode`` 2; not for E(n) fields packed or unpacked on the way, whose
    blocks keep whole bytes of fields) and longer than ``DENSE_BLOCK``, every row (as many bytes in all, in whole lines
    of each row).

    >>> _stage_block(524, 524, 1, 2), _stage_block(524, 524, 1, 1), _stage_block(700, 700, 1, 2)
    ((524, 448), (512, 512), (256, 2048))
    >>> _stage_block(250, 250, 2, 2), _stage_block(300, 301, 2, 2), _stage_block(300, 301, 2, 1)
    ((256, 256), (128, 2048), (128, 2048))
    """
    if du != small or small * width > DENSE_ROWS:
        return STAGE_ROWS // width, STAGE_COLS
    side = min(DENSE_BLOCK, STAGE_COLS * width)
    if mode == 2 and small * width > DENSE_BLOCK:
        return small, max(LINE, DENSE_BLOCK * side // (small * width) // LINE * LINE) // width
    return DENSE_BLOCK // width, side // width
