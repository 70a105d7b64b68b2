"""Relayouts whose elements move in blocks of 2 x 2: the blocks moved whole as bytes or words, then turned around
in place.

Two layouts that pair elements along different dims (E(4) bytes, ``(2,1)`` sub-tiles) share no run of elements, so
a direct copy between them moves one element at a time, and a copy through the logical array makes two passes
that each transpose. But the two bytes (or words) holding a 2 x 2 block of elements sit side by side in one layout
and, relaid out as plain ``u8`` (or as one word per block), side by side where the other layout keeps that block:
what is left is to turn each block's fields around, in place, a pass that reads and writes each byte once.

- :func:`_nibble_rows`: untiled E(4) transposes (``u4[m,n]{1,0:E(4)}`` to ``{0,1:E(4)}``): the bytes relaid out as
  ``u8``; a block's two bytes then make the same byte of two target rows, turned by :func:`_transpose_nibbles`.
- :func:`_turned_blocks`: ``T(R,C)(2,1)`` layouts turned around (``{1,0:T(8,128)(2,1)}`` to ``{0,1:T(8,128)(2,1)}``,
  bf16 or ``E(4)``): each block is one word (16 to 64 bits) in both layouts, relaid out as words; the two middle
  fields of each word are then swapped by :func:`_swap_fields`.

Both run in memory (memory maps go in chunks through the logical array) and write no temporary beyond the output;
the NumPy path turns the fields around a block of 256 KiB at a time.

- :func:`_turned_lines`: ``T(R,C)(p,1)`` layouts of whole bytes (and ``(2,1)E(4)`` with their tiles filled) turned
  around (``s8[m,n]{0,1:T(8,128)(4,1)}`` to ``{1,0:T(8,128)(4,1)}``, bf16 ``(2,1)``, s4 ``(2,1)E(4)``), compiled path
  only: one pass, a square of lines at a time. The 4 x 4 blocks of 16 bytes of the 8-bit layouts are no word the walks
  move, and the two passes of the 2 x 2 route cost bf16 2.4-2.7x memcpy; a square of ``LINE / (p * p * width)`` source
  lines holds the same elements as as many target lines, turned around in registers by one in-line permute and a
  transpose of blocks (1.3-1.5x memcpy at 64 and 512 MiB, s8 and bf16; s4 0.8x the copy of its logical array, where the
  word route took 1.65-1.85x: its 2 x 2 blocks of nibbles are two bytes, transposed whole, then their middle nibbles
  swapped in registers). Tiles partly filled (a dim not a multiple of the tile: bf16 ``[4000,8192]`` 3.6 -> 1.6x, s8
  ``[8000,8192]`` 3.9 -> 1.8x): the squares that lie whole in both layouts go so, the elements past them one at a time,
  and the target's padding is written after.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..layout import Layout
from ..shape import Shape, make_shape
from . import _dispatch as dispatch
from ._dispatch import Run, address
from ._geometry import _Geometry
from ._kinds import LINE
from ._plan import _fill_padding, _physical_view, _plan

_BLOCK_TYPES = {16: "u16", 32: "u32", 64: "u64"}
"""The word holding a block of 2 x 2 fields (or ``p`` elements), by its bits."""

_BLOCK_BYTES = 1 << 18
"""Bytes the NumPy path turns around at a time (its temporaries stay in the cache)."""


def _nibble_rows(src: _Geometry, dst: _Geometry) -> tuple[Shape, Shape, int] | None:
    """How a relayout between plain E(4) layouts whose minor dims differ, the source's minor dim being the target's
    second-minor one (``u4[m,n]{1,0:E(4)}`` to ``{0,1:E(4)}``), goes as bytes: the source's bytes and the target's
    as ``u8`` arrays (the source's minor dim counted in bytes, each layout's order), between which the bytes are
    relaid out, and the length of the target's byte rows in which :func:`_transpose_nibbles` then turns each byte
    pair's nibbles around; None when it does not apply (odd dims, padding, tiles).

    Each byte of such a source holds two elements along its minor dim; relaid out as bytes, the two bytes holding a
    2 x 2 block of elements sit side by side in a row of the target's bytes that is two target rows long.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> src, dst = (_geometry(parse_shape(t)) for t in ("u4[64,256]{1,0:E(4)}", "u4[64,256]{0,1:E(4)}"))
    >>> [str(s) for s in _nibble_rows(src, dst)[:2]], _nibble_rows(src, dst)[2]
    (['u8[64,128]{1,0}', 'u8[64,128]{0,1}'], 64)
    """
    dims, a, b = src.dims, src.layout.minor_to_major[:1], dst.layout.minor_to_major[:2]
    untiled = all(not g.layout.tiles and g.layout.padded_dimensions is None for g in (src, dst))
    if not (_plain_e4(src) and untiled and len(dims) >= 2 and len(b) == 2 and a == b[1:]):
        return None
    if dst.nbytes * 2 != src.count or dims[a[0]] % 2 or dims[b[0]] % 2 or src.count == 0:
        return None
    half = tuple(n // 2 if d == a[0] else n for d, n in enumerate(dims))
    return (make_shape("u8", half, minor_to_major=src.layout.minor_to_major),
            make_shape("u8", half, minor_to_major=dst.layout.minor_to_major), dims[b[0]])


def _transpose_nibbles(rows: np.ndarray[Any, Any], run: Run) -> None:
    """In place, in each row of ``rows`` (2-d, contiguous bytes): the nibbles of every byte pair turned around, the
    low ones to the row's first half and the high ones to its second (:func:`._kernels.transpose_nibbles`)."""
    count, length = rows.shape
    kernels = dispatch.kernels() if rows.nbytes >= run.numba_bytes else None
    if kernels is None:
        step = max(1, _BLOCK_BYTES // max(1, length))
        for first in range(0, count, step):
            block = rows[first : first + step]
            low, high = block[:, 0::2], block[:, 1::2]
            turned = np.concatenate([(low & 15) | (high << 4), (low >> 4) | (high & 240)], axis=1)
            block[...] = turned
        return

    def part(span: tuple[int, int]) -> None:
        scratch = dispatch.scratch(length + 16)
        kernels.transpose_nibbles(address(rows), length, address(scratch), span)

    dispatch.run_parts(part, dispatch.parts(count, rows.nbytes, run))


def _turned_blocks(src: _Geometry, dst: _Geometry) -> tuple[Shape, Shape, int] | None:
    """How a relayout between two ``T(R,C)(2,1)`` layouts whose two minor dims are swapped goes as words: the shapes
    of both layouts' blocks of 2 x 2 elements (one word each, the two minor dims halved, tiles ``T(R/2,C/2)``),
    between which the words are relaid out, and the bits of one field, whose middle two in each word
    :func:`_swap_fields` then swaps; None when it does not apply (fields of 32 bits and up or other sub-tiles, odd
    dims or tiles, padding, E(n) other than plain E(4)).

    A ``(2,1)`` sub-tile keeps each pair of elements along the second-minor dim in one word (one byte with E(4)),
    and a tile row keeps the words of neighbouring columns side by side: the two words of a 2 x 2 block are one
    word twice as wide, its fields in the order (column, row), in both layouts, which differ only in which dim is
    the row.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> pair = [_geometry(parse_shape(f"bf16[64,512]{{{o}:T(8,128)(2,1)}}")) for o in ("1,0", "0,1")]
    >>> [str(s) for s in _turned_blocks(*pair)[:2]], _turned_blocks(*pair)[2]
    (['u64[32,256]{1,0:T(4,64)}', 'u64[32,256]{0,1:T(4,64)}'], 16)
    """
    bits = src.bits
    if 4 * bits not in _BLOCK_TYPES or (src.packed and not _plain_e4(src)) or len(src.dims) < 2:
        return None
    src_tile, dst_tile = _block_tiles(src), _block_tiles(dst)
    order, other = src.layout.minor_to_major, dst.layout.minor_to_major
    if src_tile is None or dst_tile is None or (other[0], other[1]) != (order[1], order[0]) or src.count == 0:
        return None
    dims = tuple(n // 2 if d in order[:2] else n for d, n in enumerate(src.dims))
    if any(src.dims[d] % 2 for d in order[:2]):
        return None
    word = _BLOCK_TYPES[4 * bits]
    shapes = [make_shape(word, dims, layout=Layout(g.layout.minor_to_major, tiles=(tile,)))
              for g, tile in ((src, src_tile), (dst, dst_tile))]
    if [s.byte_size() for s in shapes] != [src.nbytes, dst.nbytes]:
        return None  # (tail padding)
    return shapes[0], shapes[1], bits


class _Turn(NamedTuple):
    """A relayout :func:`_turn_lines` does: the kernel's plan (``turn_lines``), its witness, its units of work (blocks
    of squares), and whether the target has padding to fill after it."""

    plan: tuple[int, ...]
    witness: np.generic
    units: int
    padded: bool


def _turned_lines(src: _Geometry, dst: _Geometry) -> _Turn | None:
    """How a relayout between two ``T(R,C)(p,1)`` layouts of whole bytes, or ``T(R,C)(2,1)`` of plain E(4) fields
    with their tiles filled, whose two minor dims are swapped (the other dims in the same order) goes a square of
    lines at a time (``{0,1:T(8,128)(4,1)}`` to ``{1,0:T(8,128)(4,1)}``); None when it does not apply: a sub-tile row
    not whole lines, ``R / p`` not a power of two, ``p * p`` elements over a line, other E(n) fields, pred (whose
    bytes a relayout makes 0 or 1), legacy padding, tail padding.

    Each ``p`` x ``p`` block of fields sits whole in a ``(p,1)`` sub-tile row of both layouts; a line of the source's
    sub-tile row holds the blocks along its minor dim, the target's along the other, so ``LINE / (p * p * width)``
    source lines (sub-tile rows, one tile after another) hold the same elements as as many target lines: a square the
    kernel turns around in registers. Where tiles are partly filled, the squares that lie whole in both layouts go so,
    the elements past them one at a time, and the target's padding is written after.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> pair = [_geometry(parse_shape(f"s8[256,512]{{{o}:T(8,128)(4,1)}}")) for o in ("0,1", "1,0")]
    >>> _turned_lines(*pair).plan[:12], _turned_lines(*pair).units
    ((32, 16, 4, 4, 512, 1024, 2, 1, 2048, 4096, 131072, 131072), 4)
    """
    layout, other = src.layout, dst.layout
    order, target = layout.minor_to_major, other.minor_to_major
    if len(order) < 2 or (*target[1::-1], *target[2:]) != order or layout.tiles != other.tiles:
        return None
    padded = layout.padded_dimensions is not None or other.padded_dimensions is not None
    nibbles = _plain_e4(src)  # (else whole bytes)
    if (src.packed and not nibbles) or src.etype.kind == "pred" or padded or dst.bits != src.bits:
        return None
    tiles = layout.tiles
    if len(tiles) != 2 or len(tiles[0]) != 2 or len(tiles[1]) != 2 or tiles[1][1] != 1 or tiles[1][0] not in (2, 4):
        return None
    (rows, cols), p, bits = tiles[0], tiles[1][0], src.bits
    if nibbles and p != 2:
        return None
    sub, per, spt = cols * p * bits // 8, LINE * 8 // (p * p * bits), rows // p
    if per < 1 or sub % LINE or rows % p or spt & (spt - 1) or math.prod(src.dims) == 0:
        return None
    x, y = src.dims[order[1]], src.dims[order[0]]
    source = (-(-x // rows) * rows, -(-y // cols) * cols)  # (the tiled dims, padded, in each layout)
    turned = (-(-y // rows) * rows, -(-x // cols) * cols)
    filled = source == (x, y) and turned == (y, x)
    batches = math.prod(src.dims) // (x * y)
    tile, n = rows * cols * bits // 8, per * p  # (n elements along each dim in a square)
    s_batch, d_batch = source[0] * source[1] * bits // 8, turned[0] * turned[1] * bits // 8
    if (nibbles and not filled) or (src.nbytes, dst.nbytes) != (batches * s_batch, batches * d_batch):
        return None
    across, along = min(source[0] // n, -(-x // n)), min(turned[0] // n, -(-y // n))  # (whole squares in both)
    blocks = -(-across // (sub // LINE))
    plan = (across, along, per, 0 if nibbles else p, sub, tile, spt, min(spt, per).bit_length() - 1,
            source[1] // cols * tile, turned[1] // cols * tile, s_batch, d_batch, x, y, rows, cols, blocks, batches)
    return _Turn(plan, np.dtype(f"u{max(1, bits // 8)}").type(0), blocks * batches, not filled)


def _turn_lines(data: np.ndarray[Any, Any], result: np.ndarray[Any, Any], turn: _Turn, dst: _Geometry,
                pad: np.ndarray[Any, Any], run: Run) -> bool:
    """Relayout ``data`` into ``result`` (the layout ``dst``, padding ``pad``) as :func:`_turned_lines` planned, by
    the compiled kernel; False (nothing written) when the compiled path is off, or the array too small for it."""
    kernels = dispatch.kernels() if result.nbytes >= run.numba_bytes else None
    if kernels is None:
        return False
    stream = int(result.nbytes >= run.stream_bytes and address(result) % LINE == 0)

    def part(span: tuple[int, int]) -> None:
        kernels.turn_lines(address(data), address(result), turn.witness, turn.plan, stream, span)

    dispatch.run_parts(part, dispatch.parts(turn.units, result.nbytes, run))
    if turn.padded:  # (the squares wrote whatever the source's padding held there)
        plan = _plan(dst.dims, dst.layout)
        if plan is None:
            raise AssertionError("a tiled layout without a factor plan")  # (T(R,C)(p,1) layouts always have one)
        _fill_padding(_physical_view(result[: dst.nbytes].view(dst.storage), plan), plan, pad, run=run)
    return True


def _paired_words(src: _Geometry, dst: _Geometry) -> tuple[Shape, Shape] | None:
    """How a relayout onto ``T(R,C)(p,1)`` sub-tiles whose ``p`` paired elements follow each other in the source (the
    dim they pair is the source's minor one, untiled or in one tile level) goes as words of ``p`` elements: both
    layouts' shapes with that dim counted in words (the target's tile ``T(R/p,C)``, the source's minor tile dim
    divided by ``p``); None when it does not apply (pred, E(n) fields, words over 8 bytes, a dim or tile not a
    multiple of ``p``, more tile levels on the source, legacy or tail padding).

    The target's words are then whole words of the source: the relayout moves words, not pairs of elements
    (bf16 ``[4096,8192]{0,1:T(8,128)}`` to ``{1,0:T(8,128)(2,1)}`` 3.2 -> 2.65x memcpy, s8 ``(4,1)`` 4.0 -> 2.6, in
    interleaved runs; the other way round, from ``(p,1)`` sub-tiles, it gained nothing and is not taken).

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> pair = [_geometry(parse_shape(t)) for t in ("bf16[64,512]{0,1:T(8,128)}", "bf16[64,512]{1,0:T(8,128)(2,1)}")]
    >>> [str(s) for s in _paired_words(*pair)]
    ['u32[32,512]{0,1:T(8,64)}', 'u32[32,512]{1,0:T(4,128)}']
    """
    tiles, order = dst.layout.tiles, dst.layout.minor_to_major
    if len(tiles) != 2 or len(tiles[0]) != 2 or len(tiles[1]) != 2 or tiles[1][1] != 1 or len(order) < 2:
        return None
    p, (rows, cols), paired = tiles[1][0], tiles[0], order[1]
    words = _BLOCK_TYPES.get(p * src.bits)
    if p not in (2, 4) or words is None or src.packed or src.etype.kind == "pred" or rows % p:
        return None
    own = src.layout.tiles
    if src.layout.minor_to_major[0] != paired or len(own) > 1 or (own and (len(own[0]) < 2 or own[0][-1] % p)):
        return None
    if src.dims[paired] % p or src.layout.padded_dimensions is not None or dst.layout.padded_dimensions is not None:
        return None
    dims = tuple(n // p if d == paired else n for d, n in enumerate(src.dims))
    source_tiles = ((*own[0][:-1], own[0][-1] // p),) if own else ()
    shapes = (make_shape(words, dims, layout=Layout(src.layout.minor_to_major, tiles=source_tiles)),
              make_shape(words, dims, layout=Layout(order, tiles=((rows // p, cols),))))
    if [s.byte_size() for s in shapes] != [src.nbytes, dst.nbytes]:
        return None  # (tail padding)
    return shapes


def _block_tiles(geometry: _Geometry) -> tuple[int, int] | None:
    """The tile ``(R/2, C/2)`` of the blocks of a ``T(R,C)(2,1)`` layout with even ``R`` and ``C``, else None."""
    layout = geometry.layout
    tiles = layout.tiles
    if len(tiles) != 2 or tiles[1] != (2, 1) or len(tiles[0]) != 2 or layout.padded_dimensions is not None:
        return None
    rows, cols = tiles[0]
    return None if rows % 2 or cols % 2 else (rows // 2, cols // 2)


def _swap_fields(words: np.ndarray[Any, Any], bits: int, run: Run) -> None:
    """In place, in each word of ``4 * bits`` bits of the bytes ``words``: its second and third ``bits``-bit fields
    swapped (a block of 2 x 2 fields turned around: :func:`._kernels.swap_fields`)."""
    lane = (1 << bits) - 1
    mask = sum(lane << (bits + 4 * bits * k) for k in range(64 // (4 * bits)))
    kernels = dispatch.kernels() if words.nbytes >= run.numba_bytes else None
    if kernels is None:
        whole = words.nbytes // 8
        tail = np.zeros(8, np.uint8)
        tail[: words.nbytes - 8 * whole] = words[8 * whole :]
        for block in (*(words[k : min(k + _BLOCK_BYTES, 8 * whole)] for k in range(0, 8 * whole, _BLOCK_BYTES)), tail):
            w = block.view("<u8")
            t = (w >> np.uint64(bits)) ^ w
            t &= np.uint64(mask)
            w ^= t
            t <<= np.uint64(bits)
            w ^= t
        words[8 * whole :] = tail[: words.nbytes - 8 * whole]
        return

    def part(span: tuple[int, int]) -> None:
        kernels.swap_fields(address(words), words.nbytes, bits, mask, span)

    dispatch.run_parts(part, dispatch.parts(words.nbytes // 8, words.nbytes, run))


def _plain_e4(geometry: _Geometry) -> bool:
    """True for 4-bit types in E(4) fields (not pred): their bytes are exactly their elements' bits."""
    return geometry.etype.kind != "pred" and geometry.etype.bits == geometry.bits == 4

