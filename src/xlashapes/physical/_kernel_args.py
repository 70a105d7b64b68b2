"""The named arguments of the compiled kernels (plain tuples of ints, built without importing numba)."""

from __future__ import annotations

from typing import NamedTuple


class TiledGeometry(NamedTuple):
    """A ``T(R,C)`` or ``T(R,C)(P,1)`` layout on the two most minor dims, and the tile rows one call covers.

    Tile rows are counted over the leading (batch) dims too: [first, last) of them. ``elements`` and ``total``
    are the physical elements without and with ``L(n)`` tail padding; ``stream`` asks for streaming stores;
    ``row_bytes`` is the size of each of the R row buffers in scratch (reading only). ``bits`` < 8 packs each
    tile's elements into E(bits) fields on the way (no tail padding then); ``canon`` makes element bytes canonical
    on the way: -1 pred (0 or 1), else a mask of the value bits (0: nothing to do). ``direct`` (reading back) splits
    whole tiles into rows on lines a tile at a time, each row's piece streamed out whole, not staged for several
    tiles (:func:`._tile_parts._streamed_strip`).

    >>> TiledGeometry(3, 5, 5, 8, 128, 1, 1024, 1024, 0, 0, 0, 1).tile_cols
    128
    """

    rows: int
    cols: int
    row_stride: int
    tile_rows: int
    tile_cols: int
    interleave: int
    elements: int
    total: int
    stream: int
    row_bytes: int
    first: int
    last: int
    bits: int = 8
    canon: int = 0
    direct: int = 0



INVERSE_OPERATIONS = {"split": 0, "join": 1, "below": 2, "store": 3}
"""The codes of the ``multi_index`` kernel's operations (:mod:`._inverse`), by the names
:func:`xlashapes._index_inverse.inverse_program` records them under."""
