"""Tiled transposes whose ``(p,1)`` sub-tiles' rows are an odd length (``{0,1:T(r,c)(p,1)}`` on ``[A,B]`` whose
logical rows are not whole numbers of ``p`` elements apart), and reversed layouts of rank 3 and up read back,
converted through slabs of the transposed array laid out in order.

**Why.** The generic kernel moves a ``(p,1)`` sub-tile's ``p`` elements (``p`` consecutive elements of one logical
row) as one word where every step is a whole number of words. A row length that is not leaves every other logical
row off the word grid, and the copy went as runs of ``p`` elements, one at a time: pred
``[1024,33554]{0,1:T(8,128)(4,1)}`` 15.8x memcpy laid out and 30x read back, bf16 ``[1000,16777]{0,1:T(8,128)(2,1)}``
24x / 20x (x memcpy of the larger side, 32 MiB).

**How.** The bytes of ``[A,B]{0,1:tiling}`` are those of the transposed array ``[B,A]`` in the same tiling in order
(``{1,0:tiling}``), and ``R`` of its rows, a whole number of tile rows, are one run of them (as are the tiles of
a range of whole tile columns of one tile row). So each slab of ``R`` rows (``SLAB_BYTES`` of them; where one tile
row is more, a tile row's tiles of that many bytes) is transposed into a scratch array (a 2-d transpose, the generic
kernel's, at any alignment) and laid out in order by the tiled kernels (or read back in order and transposed out),
with the padding value given; E(n) fields packed as they are laid out. No temporary larger than a slab.

**Rank 3 and up, all dims reversed** (``{0,1,2,...:T(r,c)(4,1)}``): the bytes are those of the reversed array in
order, and each index of its major dim (the logical minor one) is one run of them. Read back, the generic kernel
moved the ``(4,1)`` sub-tiles' elements, which no logical dim holds side by side, in squares of 4 x a few (pred
``[100,16,436,48]{0,1,2,3:T(8,128)(4,1)}`` 43x memcpy); slabs of that dim are read in order into a scratch array and
turned out into the logical array (7.8x; u8 ``[64,64,64,128]{0,1,2,3:T(32,128)(4,1)}`` 32 -> 11). Where a slab holds
fewer than all the indices of that dim, it leaves runs of a few elements of the logical minor dim; at rank 4 and up a
slab is then a range of the second physical dim with every index of the major one (one run of the bytes each), and
fills whole runs (x memcpy read back: pred ``[128,24,256,42]{...}`` 18 -> 8.5, ``[100,16,436,48]`` 9.6 -> 6.2, u8
``[64,64,64,128]`` 11 -> 6.8). Since the generic kernel gained merged squares and groups, it reads back the layouts
of rank 4 and up faster still wherever their second logical dim is long (``FEW_ROWS``); where it is shorter, slabs of
whole indices of the major dim are faster than both where a slab holds enough of them (``LEAST_INDICES``), the slabs
of the second dim staying for the others. Laid out, the generic kernel stays (4.7-4.9 against 5.5-6.8 through slabs),
as it does for ``(2,1)`` sub-tiles and at rank 3, but where the second logical dim leaves 2 or 3 elements of each
last ``(4,1)`` word padding: then the slabs of whole indices, laid out in order (``LAID_INDICES``; u8
``[500,2,100,300]{0,1,2,3:T(8,128)(4,1)}`` 27 -> 2.0x memcpy).

**Rank 3 now goes through the generic kernel both ways**, which (merged squares, timed) reads back all 20 of a sample of
reversed rank-3 ``(4,1)`` layouts as fast as the slabs or faster (x memcpy, ~32 MiB, slabs -> generic: s8
``[1024,512,64]{0,1,2:T(8,128)(4,1)}`` 8.5 -> 3.7, whose one slab of 32 MiB also faulted in a fresh scratch on every
call; u8 ``[8192,64,64]`` 7.0 -> 3.7, f8e4m3fn ``[1024,1024,32]{...T(32,128)(4,1)}`` 6.8 -> 3.2, u8 ``[256,24,5461]``
5.7 -> 2.8, s8 ``[1024,500,65]{...T(32,128)(4,1)}`` 5.7 -> 3.9; the same with minor dims of 3, 8 and 16). At rank 4 and
up the rules above still pick the slabs read back, but a large copy times them (as every route of this module read back:
:func:`._convert._routed`) against the conversion without them and keeps the faster: the rules were right for most of a
sample of 14 (pred ``[500,3,128,128]`` 1.65 against 6.9, u8 ``[300,6,100,100]`` 3.9 against 13.8), not for s8
``[2000,2,50,150]{0,1,2,3:T(32,128)(4,1)}`` (9.8 against 4.0), u8 ``[128,2,128,1000]`` (2.1 against 1.35) and
``[100,10,100,300]`` (3.3 against 2.0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..layout import Layout
from ..shape import Shape, make_shape
from . import _dispatch as dispatch
from ._copy import _copy
from ._dispatch import Run
from ._geometry import _canonicalize, _Geometry, _geometry
from ._kinds import LINE
from ._permuted import PermutedBands, band_runs, convert_bands
from ._plan import _fill_padding, _physical_view, _plain_chains, _plan, _transfer

SLAB_BYTES = 1 << 24  # bytes of the transposed array a slab holds (at least one tile row; its scratch)
MOST_SLAB = 1 << 26  # bytes of one index of a reversed layout's major dim past which it is not read in slabs
FEW_ROWS = 16
"""Reversed ``(4,1)``-tiled layouts of rank 4 and up are read back in slabs only where their second logical dim (the
tiles' rows) is shorter than this; longer, the generic kernel (merged squares, groups) was faster (x memcpy, slabs ->
generic, ~32 MiB and up): pred ``[128,24,256,42]{0,1,2,3:T(8,128)(4,1)}`` 17 -> 6.0, u8 ``[64,64,64,128]{...T(32,128)
(4,1)}`` 10.5 -> 2.4, pred ``[100,16,436,48]`` 8.6 -> 5.3, u8 ``[300,20,50,100]`` 5.1 -> 3.3 (but u8
``[200,18,100,100]`` 4.8 against 8.1, ``[100,16,100,300]`` 4.6 against 6.2). Shorter, slabs of whole indices of the
major dim (at least ``LEAST_INDICES`` of them) were faster than it: u8 ``[100,10,100,300]`` 8.0 -> 3.0,
``[200,14,100,100]`` 13.5 -> 4.2, ``[50,9,300,256]`` 5.2 -> 2.7 (not ``[300,12,50,200]{...T(32,128)(4,1)}``, 2.3 ->
4.2)."""
LEAST_INDICES = 16
"""Read back, slabs of whole indices of the major dim where a slab holds at least this many (or all of them); fewer
leave runs of a few elements of the logical minor dim: then slabs of the second physical dim (``_reversed_in_columns``)
where the second logical dim is shorter than ``COLUMN_ROWS``, else the generic kernel. Against those slabs, x memcpy:
u8 ``[500,2,100,300]{0,1,2,3:T(8,128)(4,1)}`` 12.5 -> 1.7, ``[128,2,128,1000]`` 37 -> 2.7, ``[1000,3,100,100]`` 5.2 ->
2.6, pred ``[1000,5,60,100]`` 6.0 -> 3.4, u8 ``[64,5,2,300,128]`` 6.4 -> 3.5; with 4 indices a slab, u8
``[64,3,64,64,24]`` 3.0 -> 8.0."""
COLUMN_ROWS = 8
LAID_INDICES = 4
"""Laid out, the same slabs of whole indices of the major dim (at least this many a slab) where the second logical dim
leaves 2 or 3 elements of each last ``(4,1)`` word padding: the generic kernel moved those words' elements a few at a
time (x memcpy, generic -> slabs: u8 ``[500,2,100,300]{0,1,2,3:T(8,128)(4,1)}`` 27 -> 2.0, ``[128,2,128,1000]`` 34 ->
2.3, ``[300,6,100,100]`` 14.5 -> 3.1, ``[200,14,100,100]`` 12.6 -> 4.6, pred ``[500,3,128,128]`` 20 -> 3.7,
``[100,7,300,128]`` 19.5 -> 5.4, ``[200,6,256,100]`` 21 -> 5.9, s8 ``[2000,2,50,150]{...T(32,128)(4,1)}`` 4.5 -> 1.8).
With one padding element the generic kernel was faster (u8 ``[50,5,500,256]`` 1.8 against 3.7, ``[50,9,300,256]`` 1.5
against 3.7), as it was with none (s8 ``[1000,4,100,80]`` 1.5 against 3.1, u8 ``[100,12,100,300]`` 2.6 against 3.7).
Not where the second logical dim is ``FEW_ROWS`` or more and at least a tile's rows: the generic kernel (merged squares,
lanes) then laid them out faster (slabs -> generic: u8 ``[500,466,3,48]{0,1,2,3:T(8,128)(4,1)}`` 10.1 -> 4.8,
``[64,130,64,64]`` 12.7 -> 4.9, pred ``[100,18,300,128]`` 9.9 -> 4.0, u8 ``[200,30,100,100]`` 8.6 -> 7.5; but u8
``[100,23,100,128]{...T(32,128)(4,1)}``, fewer rows than a tile's, 4.6 against 5.5, and ``[200,14,100,100]`` 5.4
against 11.8)."""
PACKED_ROWS = 1024  # E(n) fields laid out from logical rows this long and longer keep the packed transpose (x memcpy
# of the logical bytes, s4 [A,B]{0,1:T(8,128)(2,1)E(4)} 'to', it -> slabs: B = 16383 2.3 -> 3.4, 4095 2.6 -> 3.1, 333
# 4.1 -> 3.6, 33 12 -> 4.5, 5 52 -> 4.8; read back, slabs everywhere: 30-49 -> 3.3-5.5)


def turned_shape(geometry: _Geometry) -> Shape | None:
    """The in-order shape of the transposed array whose bytes a layout's are, for the layouts this route takes (where
    their logical rows are not whole words: :func:`transposed_convert`), else None.

    >>> from xlashapes import parse_shape
    >>> print(turned_shape(_geometry(parse_shape("pred[1024,3355]{0,1:T(8,128)(4,1)}"))))
    pred[3355,1024]{1,0:T(8,128)(4,1)}
    >>> turned_shape(_geometry(parse_shape("pred[1024,3355]{1,0:T(8,128)(4,1)}"))) is None  # (in order already)
    True
    """
    layout = geometry.layout
    rank = len(geometry.dims)
    if rank < 2 or layout.minor_to_major != tuple(range(rank)) or len(layout.tiles) != 2:
        return None
    tile, sub = layout.tiles
    if len(tile) != 2 or not all(isinstance(k, int) and k > 0 for k in tile) or sub not in ((2, 1), (4, 1)):
        return None
    if layout.padded_dimensions is not None or layout.tail_padding_alignment_in_elements != 1:
        return None
    if layout.dynamic_shape_metadata_prefix_bytes or tile[0] % sub[0]:
        return None
    if geometry.storage.itemsize * sub[0] not in (2, 4, 8):
        return None
    turned = replace(layout, minor_to_major=tuple(range(rank - 1, -1, -1)))
    return Shape(geometry.etype, geometry.dims[::-1], layout=turned)


def _slab_runs(run: Run, data: np.ndarray[Any, Any]) -> tuple[Run, Run]:
    """(the run for a slab's bytes, the run for its scratch array): the kernels at any size; the bytes streamed as a
    whole would be, the scratch always (a slab of ``SLAB_BYTES`` is read again from memory, not the cache: slabs of
    1 MiB kept in the cache took 4.9-7.4x memcpy, 16 MiB streamed 3.1-3.5)."""
    return band_runs(run, data, True)


def transposed_convert(
    logical: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any] | None, data: np.ndarray[Any, Any],
    run: Run, to: bool, convert: Callable[..., None],
) -> bool:
    """Lay ``logical`` out into ``data`` (``to``: ``convert(scratch, geometry, pad, bytes, run)`` lays a slab out in
    order) or read it back (``convert(bytes, geometry, scratch, run)``), slab by slab; False when the route does not
    apply (or the compiled kernels are not there, or the array is small)."""
    turned = turned_shape(geometry)
    if turned is None or logical.nbytes < run.numba_bytes or dispatch.walker() is None:
        return False
    if logical.ndim > 2:  # (read back, (4,1) sub-tiles: x memcpy, pred [128,24,256,42]{0,1,2,3:T(8,128)(4,1)} 37
        # -> 20, pred [100,16,436,48]{...} 43 -> 7.8; (2,1) ones lost, bf16 [64,100,200,24]{0,1,2,3:T(8,128)(2,1)} 10
        # -> 14; at rank 4 and up, when each way: ``FEW_ROWS``, ``LEAST_INDICES``, ``LAID_INDICES``; rank 3: the
        # generic kernel both ways, as the module says)
        if turned.layout_or_default().tiles[1][0] != 4 or logical.ndim == 3:
            return False
        return _reversed_convert(logical, turned, pad, data, run, to, convert)
    if logical.strides[0] % (turned.layout_or_default().tiles[1][0] * logical.itemsize) == 0:
        return False  # (logical rows of whole words, the sub-tiles' words: the generic kernel's)
    if to and geometry.packed and geometry.dims[1] >= PACKED_ROWS:
        return False  # (E(n) fields laid out from long rows: the packed transpose, ``_packing._packed_transpose``)
    if WORDS and _word_convert(logical, geometry, pad, data, run, to):
        return True
    rows_of_tile, columns_of_tile = turned.layout_or_default().tiles[0]
    columns, rows = turned.dimensions[1], turned.dimensions[0]
    width = logical.dtype.itemsize
    per = max(rows_of_tile, SLAB_BYTES // max(1, columns * width) // rows_of_tile * rows_of_tile)
    across = columns  # (a slab's columns: all, or where one tile row is more than a slab, whole tiles of them)
    if rows_of_tile * columns * width > SLAB_BYTES:
        across = max(columns_of_tile, SLAB_BYTES // (rows_of_tile * width) // columns_of_tile * columns_of_tile)
    tile_row = _geometry(replace(turned, dimensions=(rows_of_tile, columns))).nbytes  # (bytes of one tile row)
    tile = _geometry(replace(turned, dimensions=(rows_of_tile, columns_of_tile))).nbytes
    scratch = np.empty((per, min(across, columns)), logical.dtype)
    outer, inner = _slab_runs(run, data)
    for first, left in ((first, left) for first in range(0, rows, per) for left in range(0, columns, across)):
        n, m = min(per, rows - first), min(across, columns - left)
        slab = _geometry(replace(turned, dimensions=(n, m)))
        start = first // rows_of_tile * tile_row + left // columns_of_tile * tile  # (whole tile rows, or tiles of one)
        part, staged = data[start : start + slab.nbytes], scratch[:n, :m]
        view = logical[left : left + m, first : first + n].T
        if to:
            _copy(staged, view, inner)
            convert(staged, slab, pad, part, outer)
        else:
            convert(part, slab, staged, inner)
            _copy(view, staged, outer)
    return True


WORDS = True
"""Two-dimensional tiled transposes with rows off the word grid moved as words (:func:`_word_convert`; False: through
slabs, for comparison)."""

LEAST_WORDS = 16
"""Logical rows of fewer whole words than this go through slabs, not as words (their merged squares had too few
rows across: x memcpy 'to' / 'from', words against slabs, bf16 ``[N,B]{0,1:T(8,128)(2,1)}`` with B = 8191 1.7 / 2.0
against 2.9 / 2.8, 1023 1.9 / 2.3 against 2.7 / 3.3, 255 2.1 / 2.6 against 3.6 / 3.6, 63 3.0 / 3.5 against 4.2 /
3.8, but 15 3.3 / 5.8 against 3.3 / 4.2, 7 3.6 / 5.3 against 2.9 / 2.9; pred ``(4,1)`` B = 127 3.4 / 3.6 against
4.6 / 5.1, 31 6.3 / 6.7 against 4.5 / 3.7)."""

_WORD_TYPES = {2: "u16", 4: "u32", 8: "u64"}


def word_shape(geometry: _Geometry) -> Shape | None:
    """The layout of words whose bytes a 2-d tiled transpose of ``(p,1)`` sub-tiles holds: each word the ``p``
    elements of one sub-tile (``p`` neighbours in a logical row, the last word of a row of a length that is not a
    multiple of ``p`` ending in padding), laid out in tiles of ``1/p`` the rows; None for other layouts (and E(n)
    fields).

    >>> from xlashapes import parse_shape
    >>> print(word_shape(_geometry(parse_shape("bf16[1000,16777]{0,1:T(8,128)(2,1)}"))))
    u32[1000,8389]{0,1:T(4,128)}
    """
    turned = turned_shape(geometry)
    if turned is None or len(geometry.dims) != 2 or geometry.packed:
        return None
    (rows, columns), (p, _) = turned.layout_or_default().tiles
    name = _WORD_TYPES.get(p * geometry.storage.itemsize)
    if name is None:
        return None
    a, b = geometry.dims
    words = make_shape(name, (a, -(-b // p)), layout=Layout((0, 1), tiles=((rows // p, columns),)))
    return words if words.byte_size() == geometry.nbytes else None


def _word_convert(
    logical: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any] | None, data: np.ndarray[Any, Any],
    run: Run, to: bool,
) -> bool:
    """Lay out (``to``) or read back a 2-d tiled transpose of ``(p,1)`` sub-tiles whose logical rows are not a whole
    number of words apart as the tiled transpose of its words (:func:`word_shape`) in one pass: the logical rows
    viewed as words at their byte offsets, which merged squares move at any alignment
    (:func:`._pitched.pitched_copy`); the last word of each row, when the row ends inside one, by NumPy with the
    padding elements. False (nothing done) where the logical rows are not contiguous or too short
    (``LEAST_WORDS``)."""
    shape = word_shape(geometry)
    width = logical.itemsize
    if shape is None or logical.strides[1] != width or logical.strides[0] % width:
        return False
    words = _geometry(shape)
    plan = _plan(words.dims, words.layout)
    if plan is None or plan.phantoms:
        return False
    a, b = geometry.dims
    p = words.storage.itemsize // width
    whole = b // p
    if whole < LEAST_WORDS:
        return False
    view = _physical_view(data[: words.nbytes].view(words.storage), plan)
    body = logical[:, : whole * p].view(words.storage)  # (rows at their own offsets: any alignment)
    extents = (a, whole)
    pred = geometry.etype.kind == "pred"
    with dispatch.canonical_writes(pred) as account:  # (words of pred bytes: the squares make them canonical too)
        if to:
            assert pad is not None
            _fill_padding(view, plan, np.repeat(pad.reshape(1), p).view(words.storage)[0], run=run)
            _transfer(view, plan.chains, body, _plain_chains(extents), extents, run)
        else:
            _transfer(body, _plain_chains(extents), view, plan.chains, extents, run)
    if whole < shape.dimensions[1]:
        _last_words(logical, view, plan.chains, whole, p, pad, to, pred)
    if pred and not (account and account.covers(body.nbytes)):
        _canonicalize(data if to else logical, geometry)
    return True


def _last_words(
    logical: np.ndarray[Any, Any], view: np.ndarray[Any, Any], chains: tuple[tuple[int, ...], ...], column: int,
    p: int, pad: np.ndarray[Any, Any] | None, to: bool, pred: bool,
) -> None:
    """The words of column ``column`` of the words' factor view ``view`` (the logical rows' last, cut-short words)
    from or to the logical rows' last elements (``pad`` after them, and in the column's padding); ``pred``: their
    bytes made 0 or 1 on the way."""
    a, b = logical.shape
    cut = b - column * p  # (elements of each row in its last word)
    digits = np.unravel_index(column, chains[1])
    column_words = view[(slice(None),) * len(chains[0]) + tuple(int(d) for d in digits)]
    words = np.empty((math.prod(chains[0]), p), logical.dtype)
    if to:
        assert pad is not None
        words[...] = pad
        words[:a, :cut] = logical[:, column * p :]
        if pred:
            np.not_equal(words, 0, out=words.view(np.bool_))
        column_words[...] = words.view(view.dtype).reshape(chains[0])
        return
    words.view(view.dtype).reshape(chains[0])[...] = column_words
    if pred:
        np.not_equal(words, 0, out=words.view(np.bool_))
    logical[:, column * p :] = words[:a, :cut]


def _reversed_convert(
    logical: np.ndarray[Any, Any], turned: Shape, pad: np.ndarray[Any, Any] | None, data: np.ndarray[Any, Any],
    run: Run, to: bool, convert: Callable[..., None],
) -> bool:
    """Lay out (``to``) or read back a layout of rank 4 and up whose dims are all reversed (``{0,1,2,...}``), slab
    by slab of its physical major dim (the logical minor one), each slab converted in order by ``convert`` in a
    scratch array and turned between it and the logical array; False where the route does not pay (``FEW_ROWS``,
    ``LEAST_INDICES``, ``LAID_INDICES``) or one index of that dim is more than ``MOST_SLAB`` bytes."""
    count, *inner = turned.dimensions
    one = _geometry(replace(turned, dimensions=(1, *inner)))  # (the bytes of one index of the major dim)
    if one.nbytes > MOST_SLAB:
        return False
    per = max(1, SLAB_BYTES // max(1, one.nbytes))
    rows = logical.shape[1]
    if to and (rows % 4 < 2 or per < min(count, LAID_INDICES) or rows >= max(FEW_ROWS, turned_rows(turned))):
        return False
    if not to and (rows >= FEW_ROWS or per < min(count, LEAST_INDICES)):
        return rows < COLUMN_ROWS and _reversed_in_columns(logical, turned, one, data, run, convert)
    if not to:  # (each slab writes whole lines of the logical rows: half lines, each written twice, cost
        # s8[1024,512,64]{0,1,2:T(8,128)(4,1)} 18x memcpy against 5.5x)
        per = max(per, min(count, -(-LINE // logical.itemsize), MOST_SLAB // max(1, one.nbytes)))
    order = tuple(range(logical.ndim - 1, -1, -1))
    cut = PermutedBands(turned, order, 0, logical.ndim - 1, 1, one.nbytes, per)
    outer, scratch_run = _slab_runs(run, data)
    convert_bands(logical, cut, pad, data, to, convert, outer, scratch_run)
    return True


def turned_rows(turned: Shape) -> int:
    """The rows of the tiles of a layout (its first tile's).

    >>> from ..text import parse_shape
    >>> turned_rows(parse_shape("u8[48,3,466,500]{3,2,1,0:T(32,128)(4,1)}"))
    32
    """
    return int(turned.layout_or_default().tiles[0][0])


def _reversed_in_columns(
    logical: np.ndarray[Any, Any], turned: Shape, one: _Geometry, data: np.ndarray[Any, Any], run: Run,
    read: Callable[..., None],
) -> bool:
    """Read back a reversed layout of rank 4 and up a slab of its second physical dim at a time, every index of the
    major dim in each (one run of the bytes for each index, read in order into its place in a scratch array): turned
    out, the slab then fills whole runs of the logical minor dim (``_reversed_convert``'s slabs of a few indices of
    that dim left runs of a few elements: pred ``[128,24,256,42]{0,1,2,3:T(8,128)(4,1)}`` 18x memcpy, runs of 21);
    False where the dims inside the second one are not a whole number of bytes apart."""
    count, rows, *rest = turned.dimensions
    if len(rest) < 2:
        return False  # (the second dim is tiled: its ranges are not runs of the bytes)
    row = _geometry(replace(turned, dimensions=(1, 1, *rest))).nbytes
    if row * rows != one.nbytes:
        return False
    order = tuple(range(logical.ndim - 1, -1, -1))
    cut = PermutedBands(turned, order, 1, logical.ndim - 2, count, row, max(1, SLAB_BYTES // max(1, count * row)))
    outer, scratch_run = _slab_runs(run, data)
    convert_bands(logical, cut, None, data, False, read, outer, scratch_run)
    return True
