"""The stacked tiled layouts: tiles that do not run along the logical minor dim, which is the innermost of the dims
the tiles are stacked along (``pred[7,1024,384,7]{2,0,3,1:T(8,128)(4,1)}``), converted a chunk at a time through a
staging buffer by the kernel of :mod:`._stacks` (which says how).

**Which.** Those whose minor dim (2 to ``MOST_STACKED`` elements) continues the rows or the columns in the logical
array, so that the staging reads (and writes back) runs longer than the minor dim:

- the rows follow the minor dim (``{0,1,2}``, ``{0,2,3,1}``; tiles of more than one row): the generic walk's blocks
  for these need three axes at once (a transpose and the tiles' interleave), 5-40x memcpy; staged, 1.5-3.3 'to' and
  up to 5 'from' (pred ``[2000,4096,4]{0,1,2:T(8,128)}``, each column 16 KiB from the next);
- the columns follow the minor dim (``{1,0,2}``, ``{2,0,3,1}``) in tiles of ``(2,1)`` or ``(4,1)`` sub-tiles of 8- or
  16-bit elements (the TPU's formats): 3.5-34x, staged 1.3-3.3; a minor dim of 2 or 4 elements too, which the walk
  moves well in some layouts (u8 ``[64000,96,4]{1,0,2:T(32,128)(4,1)}`` 1.8 / 1.2, staged 2.3 / 2.3) and badly in
  others (pred ``[768,14,1000,2]{2,0,3,1:T(32,128)(4,1)}`` 33.8 / 7.9, staged 2.9 / 3.5). Tiles without sub-tiles
  the walk moves faster (f32 ``[3,256,2048,5]{2,1,3,0:T(2,128)}`` 1.3 / 1.15 against 2.5 / 2.8 staged).

Where neither the rows nor the columns follow the minor dim, the staging moves blocks of its elements alone, slower than
the walk (f32 ``[1024,128,24,2]{0,1,3,2:T(8,128)}`` 2.5 / 2.9 against 18 / 24); one-row tiles the walk moves as runs.
Measured (this 2-core machine, 16-128 MiB, x memcpy of the physical bytes, 'to' / 'from', walk -> staged): pred
``[7,1024,384,7]{2,0,3,1:T(8,128)(4,1)}`` 14.6 / 16.0 -> 2.1-2.7 / 2.5-3.0, bf16
``[128,256,64,8]{0,2,3,1:T(8,128)(2,1)}`` 7.0 / 10.2 -> 2.1 / 2.3-2.6, u8 ``[224,96,512,3]{2,1,3,0:T(8,128)(4,1)}``
25.4 / 26.1 -> 1.7-2.2 / 1.8-3.0; a survey of 37 random stacked layouts, worst 40x before, 3.3 / 5.3 now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..layout import Layout
from . import _dispatch as dispatch
from ._compiled import _batch, _c_strides, _canon, _checked, _tile_of, _Tiled, _tiled_geometry
from ._dispatch import Run, address
from ._geometry import _Geometry
from ._kinds import ALIASED, LINE, RUNS_BYTES, STAGED_RUN


@dataclass(frozen=True)
class _Stacked:
    """A stacked tiled layout: ``tiled`` as for the tiled kernels, its columns ``col_dim`` and its batch the outer
    dims but the minor one (``stack`` elements)."""

    tiled: _Tiled
    col_dim: int
    stack: int


MOST_STACKED = 16  # minor dims of at most this many elements between the tiles
STAGE_BYTES = 1 << 20  # bytes of padded rows the stacked kernel stages at a time (a chunk: at least one tile's rows)
LAYING_OUT_SHARE = 4  # laying out, chunks of this share of STAGE_BYTES (the staged rows and the runs they are read
# through then fit the second level: 'to', x memcpy, f32 [2730,2048,3]{0,1,2:T(8,128)} 2.1-2.2 -> 1.85, bf16
# [128,512,64,8]{0,2,3,1:T(8,128)(2,1)} 1.97 -> 1.78, pred [2000,4096,4]{0,1,2:T(8,128)} 3.1 -> 2.55; reading back, a
# quarter took f32 2.5 -> 3.1)
READ_ROW_TILES = 4  # reading back rows that follow the minor dim: chunks of at least this many tile rows
SHORT_RUN = 1024  # laid out, staged runs of a column's rows shorter than this: chunks of fewer columns (_stacked_chunk)



def _stacked_plan(dims: tuple[int, ...], layout: Layout, width: int) -> _Stacked | None:
    """The stacked kernels' plan for ``layout`` (elements of ``width`` bytes), or None.

    >>> from xlashapes import parse_shape
    >>> shape = parse_shape("pred[7,64,384,7]{2,0,3,1:T(8,128)(4,1)}")
    >>> _stacked_plan(shape.dimensions, shape.layout_or_default(), 1)
    _Stacked(tiled=_Tiled(rows=7, cols=384, row_dim=0, tile=(8, 128, 4), batch=(1,)), col_dim=2, stack=7)
    """
    return _cached_stacked_plan(dims, layout, width)


@lru_cache(maxsize=256)
def _cached_stacked_plan(dims: tuple[int, ...], layout: Layout, width: int) -> _Stacked | None:
    """``_stacked_plan`` through a cache."""
    rank = len(dims)
    tile = _tile_of(dims, layout)
    order = tuple(layout.major_to_minor)
    if tile is None or rank < 3 or order[-3] != rank - 1 or not 2 <= dims[-1] <= MOST_STACKED:
        return None
    col_dim, row_dim = order[-1], order[-2]
    strides = _c_strides(dims)
    rows_run = dims[-1] == strides[row_dim] and tile[0] > 1
    cols_run = dims[-1] == strides[col_dim] and tile[2] > 1 and width <= 2  # (sub-tiles: TPU formats of 8, 16 bits)
    if not (rows_run or cols_run):
        return None  # (the module's docstring says why)
    tiled = _checked(_Tiled(dims[row_dim], dims[col_dim], row_dim, tile, order[:-3]), dims, layout, dims[-1])
    return None if tiled is None else _Stacked(tiled, col_dim, dims[-1])


def _stacked_chunk(plan: _Tiled, stack: int, width: int, long_runs: bool, budget: int, least: int = 1
                   ) -> tuple[int, int]:
    """(tile rows, tile columns) of the chunks the stacked kernel stages, at most ``budget`` bytes (or one tile's
    rows): whole tile rows first; but with ``long_runs`` (laying out rows that follow the minor dim), where those
    would stage runs of rows shorter than ``SHORT_RUN`` bytes of each column, as many rows as fit with one tile
    column, then as many columns (bf16 ``[8192,1024,3]{0,1,2:T(8,128)(2,1)}``, runs of 96 bytes, 4.2x memcpy -> 2.0,
    f32 ``[2730,2048,3]{...T(8,128)}`` 2.8 -> 2.2; with runs of 4 KiB, u8 ``[224,16000,7]{...T(32,128)(4,1)}`` 2.7 ->
    3.2; reading back, the tiles would be read a column of them at a time, each a page from the next: pred
    ``[2000,4096,4]{0,1,2:T(8,128)}`` 4.0 -> 13). Whole tile rows (chunks of 16 KiB, to fit the first level, pieces of
    tile rows where need be, took pred
    ``[7,1024,384,7]{2,0,3,1:T(8,128)(4,1)}`` from 2.3x memcpy to 5.1-5.5 'to' and 4.0-4.4 'from', when each piece was
    a call of the tiled kernel's code; 256 KiB 2.3 / 2.5; 1 MiB the same, and pred ``[2000,4096,4]`` 4.0 / 6.0 -> 2.9 /
    4.8). At least ``least`` tile rows (where there are), as many columns as fit with them: reading back rows that
    follow the minor dim (``READ_ROW_TILES``), wide arrays' chunks of one tile row gave each column's run a few
    dozen bytes (f32 ``[21840,2048,3]{0,1,2:T(8,128)}`` 'from', 512 MiB, runs of 96 bytes, 3.4-3.8x memcpy; 4 tile
    rows 2.0-2.1, 8 2.2-2.4; bf16 ``[65536,1024,3]{0,1,2:T(8,128)(2,1)}`` 5.2 -> 2.3, 2.4 at 8).

    >>> _stacked_chunk(_Tiled(7, 384, 0, (8, 128, 4), (1,)), 7, 1, False, STAGE_BYTES)
    (1, 3)
    >>> _stacked_chunk(_Tiled(4096, 2000, 1, (8, 128, 1), ()), 4, 1, True, STAGE_BYTES)  # (runs of 512 bytes: longer)
    (256, 1)
    >>> _stacked_chunk(_Tiled(2048, 21840, 1, (8, 128, 1), ()), 3, 4, False, STAGE_BYTES, READ_ROW_TILES)
    (4, 21)
    """
    r_size, c_size, _ = plan.tile
    tile = r_size * c_size * stack * width  # (staged bytes of one tile's rows)
    row_tiles, col_tiles = -(-plan.rows // r_size), -(-plan.cols // c_size)
    cols = max(1, min(col_tiles, budget // tile))
    rows = max(1, min(row_tiles, budget // (tile * cols)))
    if long_runs and rows < row_tiles and rows * r_size * stack * width < SHORT_RUN:
        rows = max(1, min(row_tiles, budget // tile))
    rows = max(rows, min(least, row_tiles))
    return rows, max(1, min(col_tiles, budget // (tile * rows)))  # (as many columns as fit with those rows)


def _runs_room(rows: int, cols: int, stack: int, width: int, aliased: bool) -> int:
    """Bytes the stacked kernel's runs buffer needs for chunks of ``rows`` x ``cols``: :data:`._kinds.RUNS_BYTES`, or
    one row if longer, or every column's staged rows (``aliased``: laying out columns that share cache sets or long
    runs, :func:`._stacks._gather`).

    >>> _runs_room(8, 384, 7, 1, False)
    65536
    >>> _runs_room(64, 128, 8, 2, True)  # (128 columns of 64 rows of 8 bf16, and a line)
    139264
    """
    column = -(-rows * stack * width // LINE) * LINE + LINE
    return max(RUNS_BYTES, cols * column if aliased else 0, cols * stack * width)


def stacked_convert(
    logical: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any] | None, data: np.ndarray[Any, Any],
    run: Run, to: bool,
) -> bool:
    """Lay ``logical`` out into the bytes ``data`` (``to``, padding ``pad``), or read it back from them (``pad``
    None), with the stacked kernel; False when it does not apply."""
    if logical.nbytes < run.numba_bytes or geometry.storage.itemsize not in (1, 2, 4) or geometry.packed:
        return False
    stacked = _stacked_plan(geometry.dims, geometry.layout, geometry.storage.itemsize)
    if stacked is None or not logical.flags.c_contiguous:
        return False
    kernels = dispatch.stacker()
    if kernels is None:
        return False
    plan, width = stacked.tiled, geometry.storage.itemsize
    strides = _c_strides(geometry.dims)
    sc, rows_run = strides[stacked.col_dim], strides[plan.row_dim] == stacked.stack
    budget = STAGE_BYTES // LAYING_OUT_SHARE if to else STAGE_BYTES
    least = READ_ROW_TILES if rows_run and not to else 1
    row_chunk, col_chunk = _stacked_chunk(plan, stacked.stack, width, rows_run and to, budget, least)
    r_size, c_size, _ = plan.tile
    units = math.prod(geometry.dims[d] for d in plan.batch) * -(-plan.rows // (r_size * row_chunk)) * -(
        -plan.cols // (c_size * col_chunk))
    staged = row_chunk * r_size * stacked.stack * col_chunk * c_size * width
    run_bytes = row_chunk * r_size * stacked.stack * width  # (a column's staged run, at most)
    runs = _runs_room(row_chunk * r_size, col_chunk * c_size, stacked.stack, width,
                      rows_run and ((sc * width) % ALIASED == 0 or run_bytes >= STAGED_RUN))
    stream = int(data.nbytes >= run.stream_bytes)
    base = _tiled_geometry(plan, geometry, stream, 0)._replace(canon=_canon(geometry))
    stack = (stacked.stack, sc, row_chunk, int(to), col_chunk)
    batch = _batch(plan, geometry.dims)
    item = (np.zeros(1, geometry.storage) if pad is None else pad).reshape(1)[0]  # (reading back: the type alone)
    flat = logical.reshape(-1)
    kernel = kernels.tiled_stacked
    room = r_size * c_size * width + LINE  # (a tile, laying out)

    def chunks(part: tuple[int, int]) -> None:
        scratch, stage = dispatch.scratch(room), np.empty(staged + runs + 2 * LINE, np.uint8)
        args = base._replace(first=part[0], last=part[1])
        ends = (address(flat), address(data)) if to else (address(data), address(flat))
        kernel(*ends, address(scratch), item, args, batch, address(stage), stack)

    dispatch.run_parts(chunks, dispatch.parts(units, data.nbytes, run))
    return True
