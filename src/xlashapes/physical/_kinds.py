"""Which of the generic kernel's walks a strided copy takes (decided here, in Python, without numba).

The generic copy (:mod:`._walk`) walks the outer axes of two strided views and moves a block of two axes at each
step. How it moves them depends on the block's sizes and strides, which are the same for every step of one copy;
so the choice is made once, here, and each kind of walk is an entry point of its own, compiled only when a copy
first needs it. A first compiled use then pays for the code its layout runs, not for every kind of block (numba
types and lowers all of a function's code, reached or not; the kind is a constant in each entry, whose other
branches numba prunes before typing). Measured (``bench_physical.py --cold``, this 2-core machine, to and from
64 MiB in a new process with an empty kernel cache, numba's import included): 0.8-2.7 s per layout of the
benchmark (29 of them; 12 channels to planes 2.9-3.4 s), against 1.2-4.1 s (17 of 25 layouts over 2.8 s) when one
entry point held every kind. The kinds:

- ``RUNS``: rows contiguous on both sides (memcpy runs, many per call);
- ``GROUPS``: blocks of 2, 4, 8 or 16 source rows that continue each other, moved a square of one line a side
  across several blocks at a time (tiled transposes; and groups cut short: the last sub-tile rows of a dim, ``u8``
  ``[7,N,M]{1,0,2:T(8,128)(4,1)}`` rows 4-6, their fourth row read along and dropped);
- ``WIDE``: short destination rows (8 elements and up, less than a line) that continue each other (tiled
  transposes read back), many blocks a band at a time; ``WIDE_LINES`` when the rows are a half, a quarter or an
  eighth of a line, blocks side by side then making whole lines (their line squares compiled only for these);
- ``QUARTERS``: the same with rows of 2 or 4 elements: as many blocks as fill a line at a time (streamed where the
  destination rows are on lines, else stored plainly);
- ``ROWS``: rows interleaved (2-7 of them: ``(2,1)`` and ``(4,1)`` sub-tiles, channels; 8 of 1- or 2-byte words)
  or de-interleaved (2-7);
- ``PLANES``: more rows interleaved (from 9: up to 32 bytes, 24 2-byte words or 12 4-byte words; planes to
  channels), a 16-byte lane's worth of rows at a time, gathered into whole lines;
- ``SHORT``: source rows shorter than a line (2 to a line's elements less one) onto destination rows on lines:
  blocks of 8 (else 4 or 2) rows of a line each, transposed in registers and streamed;
- ``TURNS``: ``p`` x ``p`` blocks of elements (``p`` 2 or 4) whose source rows are the destination's fields and
  whose destination rows the source's, along rows of words of ``p`` fields on both sides (a ``(p,1)`` sub-tile
  pairing another dim than its source's: ``{3,2,1,0:T(8,128)(2,1)}`` to ``{3,0,2,1:T(8,128)(2,1)}``): ``p``
  lines of the source rows turned into ``p`` lines of the destination rows at a time, in registers;
- ``SQUARES``: anything else (register transposes of squares, element by element).
"""

from __future__ import annotations

from collections.abc import Sequence

LINE = 64  # bytes of a cache line
PAIRED = 4096  # destination rows a multiple of this many bytes apart take squares in pairs (lines streamed one a row
# to such rows wrote at 14 GB/s here, two a row at 25)
GATHER_BYTES = 8 * 4096  # scratch past a walk's room for the lines of source rows 4 KiB apart (their cache sets
# shared), gathered before their transposes: a wide block's 8 lines of at most a line's elements of rows, a short
# block's rows

ALIASED_CHUNK = 1024  # columns of byte squares from rows 4 KiB apart, 16 rows at a time (``_chunked_squares``)
ALIASED = 1024  # stacked layouts' columns (:mod:`._stacks`) whose runs are a multiple of this many bytes apart share
# cache sets: copied a line apart more (bf16 ``[128,256,64,8]{0,2,3,1:T(8,128)(2,1)}`` 'to', columns 256 KiB apart,
# 3.8x memcpy -> 2.3)
STAGED_RUN = 512  # ... or whose runs are at least this many bytes (laying out: squares straight from 128 columns' runs
# of 2 KiB, pred [128,87381,3]{0,1,2:T(16,128)(4,1)} 'to', took 7.1-7.9x memcpy, staged 2.5; s8
# [384,100,87,10]{0,2,3,1:T(16,128)(4,1)}, runs of 870 bytes, 4.8-5.7 -> 2.3; runs of 256 bytes staged 2.0 -> 2.8)
RUNS_BYTES = 1 << 16  # their runs staged at a time reading back (at least one run: :func:`._stacked._runs_room`;
# 16 KiB the same within the noise)

JOIN_BYTES = 1 << 15  # tile rows (strips) of at most this many bytes whose logical rows follow each other: the tiled
# kernels read them back as one stream (their scratch holds one)...
JOINED_ROW = 512  # ... where the rows are at most this many bytes, or not whole lines (or one tile's: the
# tiled_from_tile_rows entry); longer rows of whole lines each a stream of its own ('from', 32 MiB, x memcpy, one stream
# -> a stream a row: s8 {1,0:T(8,128)(4,1)} rows of 1536 bytes 1.42 -> 1.13, 2048 1.45 -> 1.16, 4096 1.45 -> 1.22,
# bf16 (2,1) rows of 4 KiB 1.73 -> 1.18, u8 T(32,128)(4,1) rows of 1 KiB 2.1 -> 1.9, bf16 T(16,128)(2,1) 1.38 -> 1.26;
# one stream was faster for shorter rows, u8 T(32,128)(4,1) rows of 256 1.6 against 1.96, s8 T(8,128)(4,1) 1.06
# against 1.17, and for rows of 1000 bytes, each of whose streams starts and ends in a partial line, 1.3 against 1.45)

SHORT_ROWS = 1024  # logical rows of at most this many bytes: the tiled 'to' kernels prefetch their strips' rows ahead
AHEAD_STRIPS = 4  # strips ahead (batch dims between the tiled rows make their rows far apart: more streams than the
# hardware follows; 'to', 74 MiB, x memcpy: bf16[96,56,56,128]{3,0,2,1:T(8,128)(2,1)} 2.3 -> 1.5, s8 (4,1) 3.7 -> 1.6;
# 2 or 8 strips ahead the same)
AHEAD_BYTES = 1 << 14  # most bytes of strips prefetched whole ahead (half the first level); bigger strips: odd_tiles
FOLLOWED_ROWS = 16  # tiles of more rows than this, of rows longer than SHORT_ROWS: odd_tiles
AHEAD_TILES = 8  # how many tiles ahead those prefetch each row's
ROW_AHEAD = 1 << 10  # the other tiles laid out (rows longer than SHORT_ROWS, at most FOLLOWED_ROWS of them) prefetch
# each of their rows this many bytes on ('to', 64 MiB, x memcpy of the physical bytes: s8 [8192,8192]{1,0:T(8,128)(4,1)}
# 1.26 -> 1.05, bf16 (2,1) 1.18 -> 1.07, pred 1.3 -> 1.2, s4 (2,1)E(4) 2.7 -> 2.1; 512 bytes the same, 4 KiB none);
# past a row's end, the next strip's rows as far in
TILES_AHEAD = 1 << 13  # tiles read back prefetch the tile this many bytes on (physical order: tiled kernels but
# sub-byte fields, and the stacked one; 'from', s8 (4,1) [8192,8192] 1.0-1.3 -> 0.87, on rows of 100 1.08 -> 0.88, u8
# T(32,128)(4,1) 1.9-2.1 -> 1.7, bf16 (2,1) 1.1-1.3 -> 1.0-1.1; s4 E(4) fields 1.7-1.9 -> 1.8-2.3, left out). The
# tiled kernels prefetch into the second level, not the first: on a 2-core Intel Xeon, 512 MiB, s8 (4,1) rows of 100
# 1.63 -> 1.19x memcpy of the tiles, bf16 (2,1) [N,128] 1.41 -> 1.35 (a prototype: 1.21-1.27 -> 1.02-1.03)
TILES_AHEAD_ROWS = 8  # the tiled kernels prefetch so tiles of at most this many rows (bf16 [2048,8192]{1,0:T(16,128)
# (2,1)} 'from' went 1.1-1.3 -> 1.4-1.6 prefetched, and is 1.06-1.17 without; u8 T(32,128)(4,1) 1.6-1.75 -> 1.7-1.85)
RUNS_AHEAD = 1 << 13  # the walk's runs shorter than this: each prefetches the run this many bytes of runs on ('to',
# 64 MiB, x memcpy: bf16 [N,1000]{1,0:T(8,128)} 1.6 -> 1.15-1.2, f32 {2,1,0:T(2,128)} 1.2 -> 0.95, {1,0:T(8,128)} 1.05
# -> 0.9; 4 KiB about the same; reading back the same)

RUNS_APART = 1 << 12  # the walk's runs of one step this many bytes apart in the source and more, back to back in the
RUN_CHUNK = 1 << 16  # destination: a chunk of steps of this many bytes at a time, a stream at a time (_chunked_runs)

SHIFTED_ROW_BYTES = 1024  # the walk's streamed blocks whose destination rows sit at other offsets in their lines (steps
# not a multiple of a line) and are at least this long: pieces of every row staged, each row's lines streamed
SHIFTED_PIECE = 1024  # most bytes of each row such a piece takes (fewer when the block's rows are many: the room)

RUNS, GROUPS, WIDE, QUARTERS, ROWS, SQUARES, PLANES, SHORT, WIDE_LINES, TURNS = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
MOST_PLANES = {1: 32, 2: 24, 4: 12}  # most rows (from 9) interleaved a lane's worth at a time, by word width: planes to
# channels, 64 MiB 'from', x memcpy, against squares: u8 9 1.45 (3.6), 12 1.45 (2.8), 17 1.8 (2.95), 24 1.8 (2.7), 31
# 1.6 (3.0), 32 1.75 (2.7), bf16 12 1.4-1.6 (2.6), 24 1.5 (2.6), f32 12 1.5 (2.1); up to 64 bytes u8 48 2.4 (3.4) and
# 63 2.6 (2.8), but four groups of rows take 2 s more to compile, and f32 16 1.5 (1.4)
WALKS = {RUNS: "walk_runs", GROUPS: "walk_groups", WIDE: "walk_wide", QUARTERS: "walk_quarters", ROWS: "walk_rows",
         SQUARES: "walk_squares", PLANES: "walk_planes", SHORT: "walk_short", WIDE_LINES: "walk_wide_lines",
         TURNS: "walk_turns"}
"""The entry point of each kind (:mod:`._walk`)."""


def lanes_of(width: int) -> int:
    """Elements of ``width`` bytes in one cache line.

    >>> lanes_of(2)
    32
    """
    return LINE // width


def side_of(width: int) -> int:
    """Side of the square blocks the register transposes work on: 32 elements for 2-byte words (rows of one line),
    16 for 1- and 4-byte words, 8 for 8-byte words.

    >>> [side_of(w) for w in (1, 2, 4, 8)]
    [16, 32, 16, 8]
    """
    return 8 if width == 8 else 32 if width == 2 else 16


def grouped_side(width: int) -> int:
    """Elements a side of the grouped squares takes: one line (bytes: 64, as 2-byte words of row pairs).

    >>> grouped_side(1), grouped_side(4)
    (64, 16)
    """
    return LINE if width == 1 else side_of(width)


def grouped_blocks(big: int, small: int, width: int) -> int:
    """Blocks of ``big`` source rows one grouped square spans (0 when such blocks do not go through grouped
    squares): rows of one line, at least a square's worth of columns, and 2, 4, 8 (words up to 4 bytes) or 16 (up
    to 2 bytes) rows.

    >>> grouped_blocks(8, 4096, 4), grouped_blocks(8, 4096, 8), grouped_blocks(8, 8, 4)
    (2, 0, 0)
    """
    side = grouped_side(width)
    if side * width != LINE or small < side:
        return 0
    fits = big in (2, 4) or (big == 8 and width <= 4) or (big == 16 and width <= 2)
    return side // big if fits else 0


def wide_group(small: int, width: int) -> int:
    """Blocks of a wide walk whose destination rows (``small`` elements, less than a line) make one line side by
    side: 2, 4 or 8 for rows of a half, a quarter or an eighth of a line (of 8 elements and more), else 1.

    >>> wide_group(8, 1), wide_group(8, 2), wide_group(12, 4), wide_group(24, 1)
    (8, 4, 1, 1)
    """
    row = small * width
    return LINE // row if row < LINE and LINE % row == 0 and small % 8 == 0 else 1


def walk_kind(
    shape: Sequence[int], d_steps: Sequence[int], s_steps: Sequence[int], unit: int, width: int, target: int,
    stream: int,
) -> tuple[int, int]:
    """(kind, step): the walk of a copy between strided views to address ``target`` (axes in destination order,
    steps in elements; ``unit`` the axis before the last with source step 1, else -1; ``stream``: streaming
    stores), and the multiple of its first axis that each thread's share must be (1: any).

    >>> walk_kind((8, 7, 128, 8, 16), (1024, 16, 8192, 128, 1), (131072, 16384, 8, 1, 1024), 3, 4, 0, 1) == (GROUPS, 1)
    True
    >>> walk_kind((23, 6, 192), (192, 4480, 1), (1152, 1, 6), 1, 1, 0, 1) == (ROWS, 1)  # 6 channels to planes
    True
    >>> walk_kind((2, 4900, 12), (58800, 12, 1), (58800, 1, 4900), 1, 1, 0, 1) == (PLANES, 1)  # and 12 from them
    True
    >>> walk_kind((2, 12, 4480), (53760, 4480, 1), (53760, 1, 12), 1, 1, 0, 1) == (SHORT, 1)  # and 12 to them
    True
    """
    inner = len(shape) - 1
    axes = [k for k in range(inner) if k != unit]
    big = shape[unit] if unit >= 0 else 1
    du = d_steps[unit] if unit >= 0 else 0
    small, di, si = shape[inner], d_steps[inner], s_steps[inner]
    if turned_words(shape, d_steps, s_steps, unit, width):
        return TURNS, 1
    if axes and di == 1:
        last = axes[-1]
        per = grouped_blocks(big, small, width)
        if unit < 0 and si == 1:
            return RUNS, 1
        if unit >= 0 and s_steps[last] == big and per and shape[last] >= per:
            return GROUPS, per if len(axes) == 1 else 1
        cut = s_steps[last]  # (groups cut short: their other rows read along and dropped, half of them at most)
        per = grouped_blocks(cut, small, width) if unit >= 0 and big < cut <= 2 * big else 0
        if per and shape[last] >= per:
            return GROUPS, per if len(axes) == 1 else 1
        if unit >= 0 and d_steps[last] == small and small * width < LINE:
            # rows of 2 or 4 elements: as many blocks as fill a line at a time (streamed where on lines)
            if small in (2, 4) and big >= small:
                return QUARTERS, LINE // (small * width) if len(axes) == 1 else 1
            if big >= 8 and small >= 8:
                return (WIDE_LINES if wide_group(small, width) > 1 else WIDE), 1
        fd = d_steps[last]  # (groups cut short: the slots past their rows left as they are in the destination)
        if (unit >= 0 and fd == 4 and small in (2, 3) and fd * width < LINE and big >= fd
                and shape[last] * fd * width >= LINE):
            return QUARTERS, LINE // (fd * width) if len(axes) == 1 else 1
    # (rows of 8: 1- and 2-byte words only; wider ones are as fast through squares)
    if big > 1 and di == 1 and du == small and 9 <= small <= MOST_PLANES.get(width, 0):
        return PLANES, 1
    interleaved = du == small and (2 <= small <= 7 or (small == 8 and width <= 2))
    if big > 1 and di == 1 and (interleaved or (si == big and 2 <= big <= 7)):
        return ROWS, 1
    lanes = lanes_of(width)
    steps = [d_steps[a] for a in axes] + [du]
    on_lines = stream and target % LINE == 0 and all(step * width % LINE == 0 for step in steps)
    if di == 1 and 2 <= big < lanes <= small and lanes > 8 and on_lines:
        return SHORT, 1
    return SQUARES, 1


def turned_words(shape: Sequence[int], d_steps: Sequence[int], s_steps: Sequence[int], unit: int, width: int) -> bool:
    """True for a copy of ``p`` x ``p`` blocks (``p`` 2 or 4) whose source rows (``unit``: source step 1) are the
    destination's fields and whose destination rows (the last axis: destination step 1) the source's, along an axis
    of words (the last outer one: step ``p`` on both sides) at least a line long: the ``TURNS`` walk.

    >>> turned_words((4, 128, 2, 2), (1024, 2, 512, 1), (512, 2, 1, 4096), 2, 2)
    True
    >>> turned_words((4, 8, 2, 2), (64, 2, 32, 1), (32, 2, 1, 4096), 2, 2)  # (rows of words under a line)
    False
    """
    inner = len(shape) - 1
    if unit < 0 or unit != inner - 1 or inner < 2:
        return False
    p, words = shape[inner], inner - 2
    return (p in (2, 4) and shape[unit] == p and d_steps[inner] == 1 and s_steps[unit] == 1 and p * width <= LINE
            and d_steps[words] == p and s_steps[words] == p and shape[words] * p * width >= LINE)


def tiled_squares(shape: Sequence[int], d_steps: Sequence[int], s_steps: Sequence[int], unit: int,
                  width: int) -> tuple[int, int] | None:
    """(A, B): the axes of a copy between tiled transposes that continue the destination's runs (A: destination step
    ``small``, the last axis's size) and the source's (B: source step ``big``, the unit axis's size), when blocks of
    a power of 2 rows (under a line) on each side make squares of one line a side, rows in groups on both sides
    (``bf16[4096,8192]{0,1:T(8,128)}`` to ``{1,0:T(8,128)}``: blocks of 8 x 8 words, 16 each way, 2.26 -> 1.7x
    memcpy; u16 ``T(2,128)`` 7.5 -> 1.8, u8 ``T(8,128)`` 3.35 -> 1.6, ``T(2,128)`` 15.4 -> 1.7): the ``tile_squares``
    kernel; else None.

    >>> tiled_squares((32, 64, 16, 16, 8, 8), (1024, 524288, 32768, 8, 128, 1), (524288, 1024, 8, 32768, 1, 128), 4,
    ...               2)
    (3, 2)
    """
    inner = len(shape) - 1
    side = LINE // width
    if unit < 0 or unit == inner or width not in (1, 2, 4) or d_steps[inner] != 1 or s_steps[unit] != 1:
        return None
    big, small = shape[unit], shape[inner]
    if not all(2 <= n < side and n & (n - 1) == 0 for n in (big, small)):
        return None
    runs = [k for k in range(inner) if k != unit and d_steps[k] == small and (shape[k] * small) % side == 0]
    sources = [k for k in range(inner) if k != unit and s_steps[k] == big and (shape[k] * big) % side == 0]
    if len(runs) != 1 or len(sources) != 1 or runs[0] == sources[0]:
        return None
    return runs[0], sources[0]


def odd_tiles(rows: int, cols: int, tile: tuple[int, int, int], width: int) -> bool:
    """True when the tiled 'to' kernel needs its odd variant (``tiled_to_odd_*``: :func:`._kernels._tiled_to_of`)
    for ``rows`` x ``cols`` elements of ``width`` bytes in tiles ``(R, C, p)``: ``(2,1)`` or ``(4,1)`` sub-tiles
    with rows cut short, tiles without sub-tiles cut short (their full tiles streamed straight out), tiles of more
    than ``FOLLOWED_ROWS`` rows longer than ``SHORT_ROWS`` bytes, or strips of short rows bigger than
    ``AHEAD_STRIPS`` can prefetch whole.

    >>> odd_tiles(8192, 8192, (8, 128, 4), 1), odd_tiles(24, 512, (32, 128, 4), 1), odd_tiles(64, 512, (16, 128, 4), 1)
    (False, True, True)
    """
    r_size, c_size, p = tile
    row = cols * width
    cut = (rows % r_size != 0 and p in (2, 4)) or (p == 1 and (rows % r_size != 0 or cols % c_size != 0))
    tall = r_size > FOLLOWED_ROWS and row > SHORT_ROWS
    big = row <= SHORT_ROWS and AHEAD_STRIPS * r_size * row > AHEAD_BYTES
    return cut or tall or big


def tile_rows_joined(rows: int, cols: int, row_stride: int, tile: tuple[int, int, int], width: int) -> bool:
    """True when a tiled layout is read back by ``tiled_from_tile_rows``: rows of one tile (``cols`` at most a
    tile's columns, a whole number of lanes) of ``(2,1)`` or ``(4,1)`` sub-tiles, back to back in the logical array
    (a strip's rows one run of at most ``JOIN_BYTES``).

    >>> tile_rows_joined(64, 100, 100, (8, 128, 4), 1), tile_rows_joined(64, 200, 200, (8, 128, 4), 1)
    (True, False)
    """
    r_size, c_size, p = tile
    return (p in (2, 4) and cols <= c_size and c_size % lanes_of(width) == 0 and row_stride == cols
            and r_size * cols * width <= JOIN_BYTES and rows > 0)


def direct_strips(rows: int, cols: int, row_stride: int, tile: tuple[int, int, int], width: int, plain: bool) -> bool:
    """True when a tiled layout read back can take its whole strips a tile at a time, each row's piece streamed out
    whole (``TiledGeometry.direct``): ``(2,1)`` or ``(4,1)`` sub-tiles of ``plain`` elements (no fields to unpack),
    whole tiles across the rows, each row's pieces and rows on lines, rows longer than the strips the kernel joins.

    >>> direct_strips(64, 8192, 8192, (8, 128, 4), 1, True), direct_strips(64, 8192, 8192, (8, 128, 4), 1, False)
    (True, False)
    """
    r_size, c_size, p = tile
    joined = row_stride == cols and r_size * cols * width <= JOIN_BYTES and (
        cols * width <= JOINED_ROW or cols * width % LINE != 0)
    return (plain and p in (2, 4) and cols % c_size == 0 and c_size * width % LINE == 0
            and row_stride * width % LINE == 0 and not joined and rows > 0)


def tiled_entry(stem: str, canonical: bool, packed: bool) -> str:
    """The name of a tiled kernel's entry point (:mod:`._kernels`): ``stem`` and what it does besides moving
    tiles (packs E(n) fields, or makes element bytes canonical, or nothing).

    >>> tiled_entry("tiled_to", False, True), tiled_entry("tiled_from", True, False)
    ('tiled_to_packed', 'tiled_from_canonical')
    """
    return stem + ("_packed" if packed else "_canonical" if canonical else "_physical")


def gathers_runs(shape: Sequence[int], d_steps: Sequence[int], s_steps: Sequence[int], unit: int, width: int,
                 stream: int) -> bool:
    """True for a streamed walk of runs that lie back to back in the destination and are not whole lines: the walk
    then stores them plainly, or (its ``stream`` 2, timed) gathers them into whole lines through its scratch and
    streams those (512 MiB 'from', this 2-core Intel Xeon, x memcpy of the tiles: f32 ``[N,100]{1,0:T(8,128)}`` 1.59
    -> 1.18).

    >>> gathers_runs((1000, 100), (100, 1), (128, 1), -1, 4, 1), gathers_runs((1000, 128), (128, 1), (256, 1), -1, 1, 1)
    (True, False)
    """
    return bool(stream) and unit < 0 and len(shape) >= 2 and d_steps[-1] == s_steps[-1] == 1 and (
        d_steps[-2] == shape[-1]) and shape[-1] * width % LINE != 0
