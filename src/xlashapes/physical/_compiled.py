"""The compiled paths: which kernel family covers a layout, and the calls that run it over threads."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from typing import Any

import numpy as np

from ..layout import Layout
from ..tiling import tiled_dimensions
from . import _dispatch as dispatch
from . import _tuned
from ._dispatch import Run, address
from ._geometry import _Geometry, _geometry
from ._kernel_args import TiledGeometry
from ._kinds import JOIN_BYTES, LINE, direct_strips, odd_tiles, tile_rows_joined, tiled_entry
from ._packing import _pack, _unpack

CHUNK_BYTES = 1 << 20  # unpacked sub-byte elements staged at a time: no temporary as large as the array,
# and small enough to stay in the cache between the tile kernel and the packing


@dataclass(frozen=True)
class _Tiled:
    """A layout the tiled kernels cover: ``T(R,C)`` or ``T(R,C)(P,1)`` on the two most minor physical dims."""

    # The column dim is the logical last dim; row_dim is the logical row dim (-1 for rank 1: one phantom row);
    # batch the other dims in physical order (major to minor).

    rows: int
    cols: int
    row_dim: int
    tile: tuple[int, int, int]
    batch: tuple[int, ...]


def _compiled_plan(dims: tuple[int, ...], layout: Layout) -> _Tiled | None:
    """The kernel family covering ``layout`` exactly, or None."""
    return _cached_compiled_plan(dims, layout)  # layouts and shapes are hashable: normalized in their constructors


@lru_cache(maxsize=1024)
def _cached_compiled_plan(dims: tuple[int, ...], layout: Layout) -> _Tiled | None:
    """``_compiled_plan`` through a cache."""
    rank = len(dims)
    tile = _tile_of(dims, layout)
    order = tuple(layout.major_to_minor)
    if tile is None or order[-1] != rank - 1:
        return None  # (permutations: the generic kernel; tiles across the minor dim: ._stacked)
    row_dim = order[-2] if rank >= 2 else -1
    return _checked(_Tiled(dims[row_dim] if row_dim >= 0 else 1, dims[-1], row_dim, tile, order[:-2]), dims, layout)


def _tile_of(dims: tuple[int, ...], layout: Layout) -> tuple[int, int, int] | None:
    """(R, C, p) of a ``T(R,C)`` or ``T(R,C)(p,1)`` layout (``T(C)``: R = 1) with elements and no padded dims, else
    None."""
    tiles = tuple(tuple(tile) for tile in layout.tiles)
    if layout.padded_dimensions is not None or math.prod(dims) == 0 or not dims or not tiles:
        return None
    first = tiles[0]
    if len(tiles) > 2 or len(first) not in (1, 2) or min(first) < 1:
        return None
    r_size, c_size = (1, first[0]) if len(first) == 1 else first
    p = 1
    if len(tiles) == 2:
        if len(tiles[1]) != 2 or tiles[1][1] != 1 or tiles[1][0] < 1 or r_size % tiles[1][0]:
            return None
        p = tiles[1][0]
    return r_size, c_size, p


def _checked(plan: _Tiled, dims: tuple[int, ...], layout: Layout, stack: int = 1) -> _Tiled | None:
    """``plan`` when its tiles count the layout's tiled elements (``stack``: times the stacked dim's size), else
    None (not the structure assumed: defensive)."""
    r_size, c_size, _ = plan.tile
    tiled = math.prod(dims[d] for d in plan.batch) * stack * -(-plan.rows // r_size) * -(-plan.cols // c_size)
    return plan if tiled * r_size * c_size == math.prod(tiled_dimensions(dims, layout)) else None


def _c_strides(dims: Sequence[int]) -> list[int]:
    """Row-major element strides of ``dims``."""
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    return strides


def _compiled_choice(
    logical: np.ndarray[Any, Any], geometry: _Geometry, run: Run, to: bool
) -> tuple[_Tiled, Any] | None:
    """The kernel plan and the kernels module for converting ``logical`` (``to`` the layout, or back), or None when
    no compiled kernel applies."""
    # 8-byte elements (f64, s64, c64: not TPU formats) go through the generic kernel: fewer compiled variants
    if logical.nbytes < run.numba_bytes or geometry.storage.itemsize not in (1, 2, 4):
        return None
    if not logical.flags.c_contiguous:
        return None
    plan = _compiled_plan(geometry.dims, geometry.layout)  # (permutations: the generic kernel)
    if plan is not None and geometry.packed and _row_major_tiles(plan, geometry.dims):
        return None  # E(n) fields whose tiles are the rows as they are: packed in one pass (no tile at a time)
    if plan is not None and geometry.packed and plan.tile[2] not in (1, 2, 4):
        return None  # (8,1) sub-tiles (T(64,128)(8,1)E(4)), which the tiled kernels move element by element (20x /
        # 9x memcpy of the packed bytes): as grouped bytes (._grouped), 4.0-4.4 / 4.4-4.7 (2.0-2.35 of the logical)
    fields = plan is not None and geometry.packed and _fused_bits(plan, geometry) > 0  # (packed tile by tile)
    if plan is not None and not fields and not _partial_tiles(plan, to, geometry.storage.itemsize) and (
            plan.tile[2] == 1 or geometry.storage.itemsize > 2):
        # no row interleave, or not the TPU's 8- and 16-bit formats: the generic kernel (reading in order, streaming
        # out) is as fast or faster, and one fewer compiled variant; but E(n) fields, which it would unpack and pack
        # in passes of their own
        return None
    kernels = dispatch.kernels() if plan is not None else None
    if plan is None or kernels is None:
        return None
    return plan, kernels


def _row_major_tiles(plan: _Tiled, dims: tuple[int, ...]) -> bool:
    """True when the tiles of ``plan`` put the elements in row-major order with no padding (tiles of one row along
    a dim they divide, the batch dims in order): ``s4[32,500,24,256]{3,2,1,0:T(1,128)E(4)}`` took the tiled kernel
    a tile of 64 bytes at a time, 12x memcpy, against 0.7 for packing the rows in one pass.

    >>> _row_major_tiles(_Tiled(24, 256, 1, (1, 128, 1), (0,)), (32, 24, 256))
    True
    """
    r_size, c_size, _ = plan.tile
    batch_in_order = list(plan.batch) == sorted(plan.batch) and all(d < plan.row_dim for d in plan.batch)
    return r_size == 1 and plan.cols % c_size == 0 and batch_in_order


def _partial_tiles(plan: _Tiled, to: bool, width: int) -> bool:
    """True when tiles of more than one row, without sub-tiles, are cut short in a way the tiled kernels move faster
    than the generic one (which copies the whole tiles and the rest as two boxes, each over every row, and fills the
    padding in a pass of its own): read back, rows longer than a tile cut short (bf16 ``[16384,1000]{1,0:T(8,128)}``
    'from' 2.45x memcpy -> 1.3, u8 ``[4096,4000]`` 2.9 -> 1.9, f32 ``[2396,8,500]{2,1,0:T(2,128)}`` 2.3 -> 1.5; rows
    of at most a tile's columns the generic kernel reads back faster, with the shipped code: u8 ``[N,100]{1,0:
    T(8,128)}`` 1.85-2.1 against 1.4 of the physical bytes, bf16 1.4 against 1.15, f32 1.5 against 1.15, s32
    ``[N,30]`` 0.57 against 0.37, f32 ``[N,7,30]{2,1,0:T(8,128)}`` 0.63 against 0.42); laid out, fewer
    rows than a tile (f32 ``[N,7,50]{2,1,0:T(8,128)}`` 1.9 -> 0.45-0.6 of the physical bytes), rows of one tile not
    whole tiles (``[N,3,50]{...T(2,128)}`` 2.8 -> 0.7), or whole tiles of rows of 512 bytes and more with columns
    past a tile (f32 ``[N,100,200]{2,1,0:T(2,128)}`` 2.3 -> 0.75, ``[16384,1000]{1,0:T(8,128)}`` 1.8 -> 1.4; with
    rows cut short too, ``[N,7,500]{...T(2,128)}``, 2.6 against 1.9; bf16 and u8 tile rows past a tile are laid out
    as fast or faster by the generic kernel, rows of one tile in whole tiles by :func:`._plan._padded_transfer`,
    one-row tiles as runs either way).

    >>> tiles = _Tiled(96, 1000, 0, (8, 128, 1), ())
    >>> _partial_tiles(tiles, False, 1), _partial_tiles(tiles, True, 1), _partial_tiles(tiles, True, 4)
    (True, False, True)
    >>> _partial_tiles(_Tiled(96, 100, 0, (8, 128, 1), ()), False, 4)
    False
    """
    r_size, c_size, p = plan.tile
    if p != 1 or r_size == 1 or (plan.rows % r_size == 0 and plan.cols % c_size == 0):
        return False
    whole_rows = plan.rows % r_size == 0
    if not to:
        return plan.cols > c_size
    if plan.rows < r_size or (plan.cols < c_size and not whole_rows):
        return True
    return plan.cols > c_size and c_size * width >= 512 and whole_rows


def _tiled_geometry(plan: _Tiled, geometry: _Geometry, stream: int, row_bytes: int) -> TiledGeometry:
    """The kernels' named arguments for a tiled plan (first and last tile row still 0)."""
    strides = _c_strides(geometry.dims)
    r_size, c_size, p = plan.tile
    row_stride = strides[plan.row_dim] if plan.row_dim >= 0 else 0
    return TiledGeometry(plan.rows, plan.cols, row_stride, r_size, c_size, p, geometry.count, geometry.aligned,
                         stream, row_bytes, 0, 0)


def _batch(plan: _Tiled, dims: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """(sizes, logical strides) of the dims before the tiled two, in physical order, as the kernels take them."""
    strides = _c_strides(dims)
    return np.array([[dims[d] for d in plan.batch], [strides[d] for d in plan.batch]], np.int64).reshape(2, -1)


def _fused_bits(plan: _Tiled, geometry: _Geometry) -> int:
    """E(bits) the tiled kernels pack each tile into on the way, 8 for unpacked layouts, 0 when a packed layout
    goes through staging instead (sign-extended or pred fields, tail padding, tiles not whole words)."""
    if not geometry.packed:
        return 8
    r_size, c_size, _ = plan.tile
    whole = geometry.aligned == geometry.count and geometry.nbytes * 8 == geometry.count * geometry.bits
    plain = geometry.etype.kind != "pred" and geometry.bits == geometry.etype.bits
    return geometry.bits if whole and plain and r_size * c_size * geometry.bits % 64 == 0 else 0


def _canon(geometry: _Geometry) -> int:
    """What the tiled kernels do to make element bytes canonical: -1 pred (0/1), a value mask, or 0 (nothing)."""
    if geometry.etype.kind == "pred":
        return -1
    return geometry.value_mask if geometry.etype.bits < 8 else 0


def _strip_elements(plan: _Tiled) -> int:
    """Physical elements of one tile row (the unit the tiled kernels split work on)."""
    r_size, c_size, _ = plan.tile
    return -(-plan.cols // c_size) * r_size * c_size


def _packed_chunks(units: int, unit_elements: int, bits: int, budget: int) -> list[tuple[int, int]]:
    """Ranges of ``units`` whose unpacked elements fit ``budget`` bytes and start on whole packed bytes.

    >>> _packed_chunks(10, 3, 4, 12)
    [(0, 4), (4, 8), (8, 10)]
    """
    step = 1
    while step * unit_elements * bits % 8:
        step *= 2
    step = max(step, budget // max(1, unit_elements) // step * step)
    return [(first, min(units, first + step)) for first in range(0, units, step)]


def _compiled_write(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> bool:
    """Lay ``x`` out with a compiled kernel; False when none applies (or numba is missing)."""
    chosen = _compiled_choice(x, geometry, run, True)
    if chosen is None:
        return False
    plan, kernels = chosen
    source = x.reshape(-1)
    item = pad.reshape(1)[0]
    _tiled_write(kernels, plan, source, geometry, item, buffer, run)
    return True


def _tiled_write(
    kernels: Any, plan: _Tiled, source: np.ndarray[Any, Any], geometry: _Geometry, item: Any,
    buffer: np.ndarray[Any, Any], run: Run,
) -> None:
    """The tiled kernel over every tile row, making pred and sub-byte elements canonical and packing E(n) fields
    tile by tile; other packed layouts go through a bounded scratch, chunk by chunk."""
    batch = _batch(plan, geometry.dims)
    strip = _strip_elements(plan)
    units = geometry.count // strip
    bits = _fused_bits(plan, geometry)
    if bits:
        stream = int(buffer.nbytes >= run.stream_bytes)
        canon = _canon(geometry) if bits == 8 else 0  # packing keeps only the value bits itself
        _tiled_to(kernels, plan, source, geometry, item, buffer, (0, units), stream, batch, run, (bits, canon))
        return
    chunks = _packed_chunks(units, strip, geometry.bits, CHUNK_BYTES)
    compiled = replace(run, numba_bytes=0)  # the chunks are small, the array is not: pack with the kernel too
    tail = geometry.aligned - geometry.count
    staging = np.empty(min(geometry.aligned, (chunks[0][1] - chunks[0][0]) * strip + tail), np.uint8)
    for first, last in chunks:
        n = (last - first) * strip + (tail if last == units else 0)
        target = staging[:n]
        _tiled_to(kernels, plan, source, geometry, item, target, (first, last), 0, batch, run, (8, 0))
        start = first * strip * geometry.bits // 8
        end = geometry.nbytes if last == units else last * strip * geometry.bits // 8
        _pack(target, geometry, buffer[start:end], compiled)


def _tiled_to(
    kernels: Any, plan: _Tiled, source: np.ndarray[Any, Any], geometry: _Geometry, item: Any,
    target: np.ndarray[Any, Any], strips: tuple[int, int], stream: int, batch: np.ndarray[Any, Any], run: Run,
    fused: tuple[int, int],
) -> None:
    """Tile rows [first, last) of ``source`` laid out at ``target`` (which starts with tile row ``first``);
    ``fused`` = (bits, canon) of the kernel (:class:`TiledGeometry`)."""
    width = geometry.storage.itemsize
    r_size, c_size, _ = plan.tile
    strip_bytes = _strip_elements(plan) * width * min(8, fused[0]) // 8
    base = _tiled_geometry(plan, geometry, stream, 0)._replace(bits=fused[0], canon=fused[1])
    offset = strips[0]
    odd = odd_tiles(plan.rows, plan.cols, plan.tile, width)  # (rows cut short, tall tiles, big strips)
    kernel = getattr(kernels, tiled_entry("tiled_to_odd" if odd else "tiled_to", fused[1] != 0, fused[0] < 8))

    def tiles(part: tuple[int, int]) -> None:
        scratch = dispatch.scratch(2 * r_size * c_size * width + 256)
        args = base._replace(first=offset + part[0], last=offset + part[1])
        kernel(address(source), address(target) + part[0] * strip_bytes, address(scratch), item, args, batch)

    dispatch.run_parts(tiles, dispatch.parts(strips[1] - strips[0], target.nbytes, run))


def folded(geometry: _Geometry) -> _Geometry | None:
    """The geometry of a rank-1 ``T(R*C)(C)(p,1)`` layout's 2-d twin ``[N/C,C]{1,0:T(R,C)(p,1)}``, where ``C``
    divides ``N`` (the same bytes, element for element), else None. Read back, the tiled kernel takes the twin's
    tile rows (this 2-core Intel Xeon, 512 MiB, x memcpy: bf16 ``{0:T(1024)(128)(2,1)}`` 1.68 -> 1.35); laid out, the
    generic kernel's walk of the rank-1 tiles was the faster (1.18 against 1.34).

    >>> from xlashapes import parse_shape
    >>> str(folded(_geometry(parse_shape("bf16[4096]{0:T(1024)(128)(2,1)}"))).shape)
    'bf16[32,128]{1,0:T(8,128)(2,1)}'
    >>> folded(_geometry(parse_shape("bf16[4000]{0:T(1024)(128)(2,1)}"))) is None
    True
    """
    layout, dims = geometry.layout, geometry.dims
    if len(dims) != 1 or geometry.packed or layout.padded_dimensions is not None or len(layout.tiles) != 3:
        return None
    first, second, third = layout.tiles
    if len(first) != 1 or len(second) != 1 or len(third) != 2 or third[1] != 1 or min(*first, *second) < 1:
        return None
    rows, cols = first[0] // second[0], second[0]
    if first[0] % cols or dims[0] % cols or rows % max(1, third[0]):
        return None
    twin = _geometry(replace(geometry.shape, dimensions=(dims[0] // cols, cols), dynamic_dimensions=(),
                             layout=replace(layout, minor_to_major=(1, 0), tiles=((rows, cols), third))))
    same = (twin.nbytes, twin.aligned, twin.count) == (geometry.nbytes, geometry.aligned, geometry.count)
    return twin if same else None


def tiled_whole(logical: np.ndarray[Any, Any], geometry: _Geometry, run: Run, to: bool) -> bool:
    """True when a tiled kernel takes the whole conversion of ``logical`` (``to`` the layout, or back) whose
    temporaries are bounded anyway (E(n) fields packed tile by tile, or staged ``CHUNK_BYTES`` at a time): a packed
    layout then needs no slabs (:func:`._slabbed.wants_slabs`). In slabs, s4 ``[65536,8192]{1,0:T(8,128)(2,1)E(4)}``
    took 32 kernel calls of 8 MiB each (x memcpy, 512 MiB, this 2-core Xeon, to / from: one thread 1.01-1.04 /
    1.44-1.49, two 0.76-0.82 / 1.02-1.08); whole, 0.90-0.93 / 1.31-1.33 and 0.49-0.50 / 0.57-0.77."""
    twin = folded(geometry) if not to and logical.flags.c_contiguous else None
    if twin is not None:
        geometry, logical = twin, logical.reshape(twin.dims)
    return _compiled_choice(logical, geometry, run, to) is not None


def _compiled_read(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run
) -> bool:
    """Fill ``result`` from the bytes ``data`` with a compiled kernel; False when none applies."""
    twin = folded(geometry) if result.flags.c_contiguous else None
    if twin is not None:
        geometry, result = twin, result.reshape(twin.dims)
    chosen = _compiled_choice(result, geometry, run, False)
    if chosen is None:
        return False
    plan, kernels = chosen
    target = result.reshape(-1)
    out = target.view(np.uint8)
    stream = int(result.nbytes >= run.stream_bytes)
    dims = geometry.dims
    item = np.zeros(1, geometry.storage)[0]
    strip = _strip_elements(plan)
    units = geometry.count // strip
    batch = _batch(plan, dims)
    bits = _fused_bits(plan, geometry)
    if bits:  # canonical bytes (and unpacked fields) tile by tile in the kernel
        source = data if bits < 8 else data.view(geometry.storage)
        _tiled_from(kernels, plan, source, geometry, item, out, (0, units), stream, batch, run,
                    (bits, _canon(geometry)))
        return True
    chunks = _packed_chunks(units, strip, geometry.bits, CHUNK_BYTES)
    staging = np.empty((chunks[0][1] - chunks[0][0]) * strip, np.uint8)
    for first, last in chunks:
        source = staging[: (last - first) * strip]
        start = first * strip * geometry.bits // 8
        _unpack(data[start : start + -(-source.size * geometry.bits // 8)], geometry, source,
                replace(run, numba_bytes=0))
        _tiled_from(kernels, plan, source, geometry, item, out, (first, last), stream, batch, run, (8, 0))
    return True


def _tiled_from(
    kernels: Any, plan: _Tiled, source: np.ndarray[Any, Any], geometry: _Geometry, item: Any,
    out: np.ndarray[Any, Any], strips: tuple[int, int], stream: int, batch: np.ndarray[Any, Any], run: Run,
    fused: tuple[int, int],
) -> None:
    """Tile rows [first, last) at ``source`` (which starts with tile row ``first``) into the logical ``out``;
    ``fused`` = (bits, canon) of the kernel (:class:`TiledGeometry`)."""
    width = geometry.storage.itemsize
    r_size, c_size, _ = plan.tile
    row_bytes = max(c_size * width, 4096 // r_size) // 64 * 64 + 256  # one unit and two lines, rounded
    base = _tiled_geometry(plan, geometry, stream, row_bytes)._replace(bits=fused[0], canon=fused[1])
    strip_bytes = _strip_elements(plan) * width * min(8, fused[0]) // 8
    offset = strips[0]
    joined = fused[0] >= 8 and fused[1] == 0 and tile_rows_joined(base.rows, base.cols, base.row_stride, plan.tile,
                                                                   width)
    if joined:
        kernel = kernels.tiled_from_tile_rows
    else:
        kernel = getattr(kernels, tiled_entry("tiled_from", fused[1] != 0, fused[0] < 8))

    def tiles(direct: int, part: tuple[int, int]) -> None:
        # rows (or a joined strip's: JOIN_BYTES), an unpacked tile
        scratch = np.empty(max(r_size * row_bytes, JOIN_BYTES + 2 * LINE) + r_size * c_size * width + 64, np.uint8)
        args = base._replace(first=offset + part[0], last=offset + part[1], direct=direct)
        kernel(address(source) + part[0] * strip_bytes, address(out), address(scratch), item, args, batch)

    def read(direct: int) -> bool:
        dispatch.run_parts(partial(tiles, direct), dispatch.parts(strips[1] - strips[0], out.nbytes, run))
        return True

    if not (stream and address(out) % LINE == 0 and out.nbytes >= _tuned.TUNE_BYTES and direct_strips(
            base.rows, base.cols, base.row_stride, plan.tile, width, fused[0] == 8 and not joined)):
        read(0)
        return
    key = ("tiles read", base._replace(first=offset, last=strips[1]), width, run.threads,
           _tuned.page_offset(address(out)))
    _tuned.run_fastest(key, [partial(read, 1), partial(read, 0)])  # (whole tiles first: a single call takes them)
