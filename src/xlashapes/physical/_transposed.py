"""Tiled transposes whose ``(p,1)`` sub-tiles' rows are an odd length (``{0,1:T(r,c)(p,1)}`` on ``[A,B]`` with ``B``
not a multiple of ``p``), converted through slabs of the transposed array laid out in order.

**Why.** The generic kernel moves a ``(p,1)`` sub-tile's ``p`` elements (``p`` consecutive elements of one logical
row) as one word where every step is a whole number of words. A row length that is not leaves every other logical
row off the word grid, and the copy went as runs of ``p`` elements, one at a time: pred
``[1024,33554]{0,1:T(8,128)(4,1)}`` 15.8x memcpy laid out and 30x read back, bf16 ``[1000,16777]{0,1:T(8,128)(2,1)}``
24x / 20x (x memcpy of the larger side, 32 MiB).

**How.** The bytes of ``[A,B]{0,1:tiling}`` are those of the transposed array ``[B,A]`` in the same tiling in order
(``{1,0:tiling}``), and ``R`` of its rows, a whole number of tile rows, are one run of them. So each slab of ``R``
rows (``SLAB_BYTES`` of them) is transposed into a scratch array (a 2-d transpose, the generic kernel's, at any
alignment) and laid out in order by the tiled kernels (or read back in order and transposed out), with the
padding value given. No temporary larger than a slab.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..shape import Shape
from . import _dispatch as dispatch
from ._copy import _copy
from ._dispatch import Run
from ._geometry import _Geometry, _geometry

SLAB_BYTES = 1 << 24  # bytes of the transposed array a slab holds (at least one tile row; its scratch)

def turned_shape(geometry: _Geometry) -> Shape | None:
    """The in-order shape of the transposed array whose bytes a layout's are, where this route applies, else None.

    >>> from xlashapes import parse_shape
    >>> print(turned_shape(_geometry(parse_shape("pred[1024,3355]{0,1:T(8,128)(4,1)}"))))
    pred[3355,1024]{1,0:T(8,128)(4,1)}
    >>> turned_shape(_geometry(parse_shape("pred[1024,3356]{0,1:T(8,128)(4,1)}"))) is None  # (rows of whole words)
    True
    """
    layout = geometry.layout
    if len(geometry.dims) != 2 or layout.minor_to_major != (0, 1) or geometry.packed or len(layout.tiles) != 2:
        return None
    tile, sub = layout.tiles
    if len(tile) != 2 or not all(isinstance(k, int) and k > 0 for k in tile) or sub not in ((2, 1), (4, 1)):
        return None
    if layout.padded_dimensions is not None or layout.tail_padding_alignment_in_elements != 1:
        return None
    if layout.element_size_in_bits or layout.dynamic_shape_metadata_prefix_bytes or tile[0] % sub[0]:
        return None
    if geometry.dims[1] % sub[0] == 0 or geometry.storage.itemsize * sub[0] not in (2, 4, 8):
        return None
    turned = replace(layout, minor_to_major=(1, 0))
    return Shape(geometry.etype, (geometry.dims[1], geometry.dims[0]), layout=turned)


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
    rows_of_tile = turned.layout_or_default().tiles[0][0]
    columns, rows = turned.dimensions[1], turned.dimensions[0]
    width = logical.dtype.itemsize
    per = max(rows_of_tile, SLAB_BYTES // max(1, columns * width) // rows_of_tile * rows_of_tile)
    tile_row = _geometry(replace(turned, dimensions=(rows_of_tile, columns))).nbytes  # (bytes of one tile row)
    scratch = np.empty((per, columns), logical.dtype)
    streamed = data.nbytes >= run.stream_bytes  # (the slabs: the kernels at any size, the bytes streamed as a whole
    # would be, and the scratch streamed too: a slab of SLAB_BYTES is read again from memory, not the cache; slabs
    # of 1 MiB kept in the cache took 4.9-7.4x memcpy, 16 MiB streamed 3.1-3.5)
    outer = replace(run, numba_bytes=0, stream_bytes=0 if streamed else 1 << 62)
    inner = replace(run, numba_bytes=0, stream_bytes=0)
    for first in range(0, rows, per):
        n = min(per, rows - first)
        slab = _geometry(replace(turned, dimensions=(n, columns)))
        start = first // rows_of_tile * tile_row
        part, staged, view = data[start : start + slab.nbytes], scratch[:n], logical[:, first : first + n].T
        if to:
            _copy(staged, view, inner)
            convert(staged, slab, pad, part, outer)
        else:
            convert(part, slab, staged, inner)
            _copy(view, staged, outer)
    return True
