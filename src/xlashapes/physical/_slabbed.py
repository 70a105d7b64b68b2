"""Conversions one slab at a time: bounded temporaries for packed and irregular layouts, memory maps, files, and
relayouts through the logical array (in slabs, or slabs of the source written into windows of the target or into
the byte runs of an untiled target)."""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from ._chunks import Bands, Slabs, bands, chunk_steps, row_index, slabs
from ._compiled import _compiled_plan, tiled_whole
from ._convert import _read_physical, _write_physical, grouped_route
from ._copy import _copy
from ._dispatch import Run, kernels
from ._geometry import _Geometry, _geometry
from ._packing import _pack_at, _unpack_at
from ._plan import _fill_padding, _outer_rows, _physical_view, _plain_chains, _plan, _transfer, _window

CHUNK_BYTES = 8 << 20
"""Bytes of one slab chunk (of the physical buffer): what a conversion holds in temporaries at a time."""

Progress = Callable[[int, int], None]
"""Called with (bytes done, bytes in all) after each chunk."""


def release(array: Any) -> None:
    """Unmap a memory map's pages from this process: its RSS stays about one chunk whatever the file's size (for
    the side the chunks go through in order; chunks that are column blocks of the other side touch all of it).

    The maps are shared, so nothing is lost: the pages stay in the page cache (dirty ones are written back by the
    system in its own time) and are mapped again when touched.
    """
    while isinstance(array, np.ndarray):
        handle = getattr(array, "_mmap", None)
        if isinstance(handle, mmap.mmap):
            shared = isinstance(array, np.memmap) and array.mode in ("r", "r+", "w+", "readonly", "readwrite", "write")
            if shared and not handle.closed and hasattr(handle, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
                handle.madvise(mmap.MADV_DONTNEED)  # never for copy-on-write maps: that would drop their changes
            return
        array = array.base


def is_mapped(array: Any) -> bool:
    """True when ``array`` is (a view of) a memory map.

    >>> is_mapped(np.zeros(3))
    False
    """
    while isinstance(array, np.ndarray):
        if isinstance(getattr(array, "_mmap", None), mmap.mmap):
            return True
        array = array.base
    return False


def wants_slabs(geometry: _Geometry, run: Run, to: bool, *arrays: Any) -> bool:
    """True when a conversion (``to`` the bytes, or from them; ``arrays``: the source, then the target) should go slab
    by slab: large and packed (but E(n) fields whose groups the byte kernels move, whole or in windows, and those a
    tiled kernel or the packing kernels take whole with no temporary: :func:`._compiled.tiled_whole`,
    :func:`_packed_in_order`), irregular (no factor plan), or mapped."""
    if geometry.nbytes <= CHUNK_BYTES:
        return False
    if any(is_mapped(a) for a in arrays):
        return True
    if geometry.packed:
        logical = arrays[0] if to else arrays[-1]
        return grouped_route(geometry, max(a.nbytes for a in arrays), run, to) is None and not (
            tiled_whole(logical, geometry, run, to) or _packed_in_order(logical, geometry, run))
    return _plan(geometry.dims, geometry.layout) is None


def _packed_in_order(logical: np.ndarray[Any, Any], geometry: _Geometry, run: Run) -> bool:
    """True when the packing kernels take a packed layout whole with no temporary: its fields in the logical array's
    order (an identity plan, no tail padding), that array contiguous, fields of the type's own bits (no codes made
    first), the compiled path on. In slabs of 8 MiB, s4 ``[N,500,24,256]{3,2,1,0:T(1,128)E(4)}`` (512 MiB) took a
    kernel call each, split over the threads each."""
    plan = _plan(geometry.dims, geometry.layout)
    return (plan is not None and plan.identity and logical.flags.c_contiguous and geometry.count == geometry.aligned
            and geometry.etype.kind != "pred" and geometry.bits == geometry.etype.bits
            and logical.nbytes >= run.numba_bytes and kernels() is not None)


def write_in_slabs(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run,
    progress: Progress | None = None, layout: Slabs | None = None,
) -> bool:
    """``_write_physical`` one chunk of slabs at a time; False (nothing done) when the layout has no slabs."""
    band = _bands(geometry) if layout is None else None
    if band is not None:
        write_in_bands(x, geometry, pad, buffer, run, band, progress)
        return True
    cut = layout or slabs(geometry.shape, geometry.bits)
    if cut is None:
        return False
    for rows, piece, start, end in chunk_steps(cut, CHUNK_BYTES):
        part = x[rows]  # (the generic kernel reads strided slabs; the 2-d tiled kernels want them contiguous)
        follows = part.flags.c_contiguous  # (a column block touches every page of x: handing them back is futile)
        if not follows and _compiled_plan(piece.dims, piece.layout) is not None:
            part = np.ascontiguousarray(part)
        _write_physical(part, piece, pad, buffer[start:end], run)
        release(buffer)
        if follows:
            release(x)
        if progress is not None:
            progress(end, geometry.nbytes)
    return True


def read_in_slabs(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run,
    progress: Progress | None = None, layout: Slabs | None = None,
) -> bool:
    """``_read_physical`` one chunk of slabs at a time into the storage array ``result``; False without slabs."""
    band = _bands(geometry) if layout is None else None
    if band is not None:
        read_in_bands(data, geometry, result, run, band, progress)
        return True
    cut = layout or slabs(geometry.shape, geometry.bits)
    if cut is None:
        return False
    for rows, piece, start, end in chunk_steps(cut, CHUNK_BYTES):
        target = result[rows]  # (packed layouts the generic kernel takes: filled in place, strided or not)
        direct = target.flags.c_contiguous or (piece.packed and _compiled_plan(piece.dims, piece.layout) is None)
        staged = target if direct else np.empty(target.shape, target.dtype)
        _read_physical(data[start:end], piece, staged, run)
        if staged is not target:
            target[...] = staged
        if target.flags.c_contiguous:  # (a column block touches every page of the result: the next would fault
            release(result)  # them all in again)
        release(data)
        if progress is not None:
            progress(end, geometry.nbytes)
    return True


def _bands(geometry: _Geometry) -> Bands | None:
    """The bands a packed layout (without tail padding) is converted in, when they read the logical array in
    longer runs than its slabs; else None."""
    whole = geometry.count == geometry.aligned and geometry.nbytes * 8 == geometry.count * geometry.bits
    return bands(geometry.shape, geometry.bits, CHUNK_BYTES) if geometry.packed and whole else None


def write_in_bands(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run,
    cut: Bands, progress: Progress | None = None,
) -> None:
    """Lay a packed layout out a chunk of rows at a time: unpacked into a buffer in the physical order of the rows
    (the byte layout's own route), then each of the chunk's ranges packed into its fields."""
    inside, out = _as_whole(run, geometry.nbytes, stream=False), _as_whole(run, geometry.nbytes)
    byte = pad.view(np.uint8)
    room = np.empty(cut.ranges * cut.inner * min(cut.rows_per_chunk, cut.extent), np.uint8)
    for low, high in cut.chunks():
        length = (high - low) * cut.inner
        unpacked = room[: cut.ranges * length]
        part = x[row_index(cut.axis, low, high)]
        _write_physical(part.view(np.uint8), _geometry(cut.piece(low, high)), byte, unpacked, inside)
        for k, start in enumerate(cut.starts(low)):
            _pack_at(unpacked[k * length : (k + 1) * length], geometry, buffer, start, out)
        release(buffer)
        if part.flags.c_contiguous:
            release(x)
        if progress is not None:
            progress(high * geometry.nbytes // cut.extent, geometry.nbytes)


def read_in_bands(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run, cut: Bands,
    progress: Progress | None = None,
) -> None:
    """Fill the storage array ``result`` a chunk of rows at a time: each of the chunk's ranges unpacked into a
    buffer, then read back by the byte layout's own route."""
    inside, out = _as_whole(run, geometry.nbytes, stream=False), _as_whole(run, result.nbytes)
    room = np.empty(cut.ranges * cut.inner * min(cut.rows_per_chunk, cut.extent), np.uint8)
    for low, high in cut.chunks():
        length = (high - low) * cut.inner
        unpacked = room[: cut.ranges * length]
        for k, start in enumerate(cut.starts(low)):
            _unpack_at(data, geometry, unpacked[k * length : (k + 1) * length], start, inside)
        target = result[row_index(cut.axis, low, high)]
        _read_physical(unpacked, _geometry(cut.piece(low, high)), target.view(np.uint8), out)
        release(data)
        if target.flags.c_contiguous:
            release(result)
        if progress is not None:
            progress(high * geometry.nbytes // cut.extent, geometry.nbytes)


def _as_whole(run: Run, nbytes: int, stream: bool = True) -> Run:
    """``run`` for the pieces of a conversion of ``nbytes``: compiled where the whole would be, and streamed too
    unless ``stream`` is False (pieces that are read again at once stay in the cache)."""
    streamed = stream and nbytes >= run.stream_bytes
    return replace(run, numba_bytes=0 if nbytes >= run.numba_bytes else run.numba_bytes,
                   stream_bytes=0 if streamed else run.stream_bytes)


def _write_rows(logical: np.ndarray[Any, Any], cut: Slabs, low: int, high: int, pad: np.ndarray[Any, Any],
                result: np.ndarray[Any, Any], run: Run) -> None:
    """Lay the logical rows [low, high) of ``cut``'s axis out as the target piece holding them (its own kernels),
    into its bytes of ``result``, whose pages are then handed back."""
    first, last = low // cut.weight, -(-high // cut.weight)
    d0, d1 = cut.byte_range(first, last)
    _write_physical(logical, _geometry(cut.piece(first, last)), pad, result[d0:d1], run)
    release(result)


def _chunk_room(dims: tuple[int, ...], axis: int, storage: np.dtype[Any], grid: int,
                per_row: int = 0) -> tuple[int, np.ndarray[Any, Any]]:
    """Rows of ``axis`` a chunk of about ``CHUNK_BYTES`` takes at ``per_row`` bytes a row (0: the logical array's), a
    multiple of ``grid``, and one buffer holding that many rows of the logical array (for all the chunks: its pages
    faulted in once)."""
    n = dims[axis]
    row = math.prod(dims) // max(1, n)
    per_row = per_row or max(1, row * storage.itemsize)
    rows = max(grid, CHUNK_BYTES // per_row // grid * grid)
    return rows, np.empty(row * min(rows, n), storage)


def relayout_in_slabs(
    data: np.ndarray[Any, Any], src: _Geometry, dst: _Geometry, pad: np.ndarray[Any, Any],
    result: np.ndarray[Any, Any], run: Run,
) -> bool:
    """Relayout through a logical chunk at a time, when both layouts cut the same axis into slabs."""
    a, b = slabs(src.shape, src.bits), slabs(dst.shape, dst.bits)
    if a is None or b is None or a.axis != b.axis:
        return False
    n = src.dims[a.axis]
    per_row = max(1, src.nbytes // max(1, n), dst.nbytes // max(1, n))
    out = _as_whole(run, result.nbytes)
    for low, high, logical in _logical_chunks(data, src, a, math.lcm(a.weight * a.step, b.weight * b.step), run,
                                              per_row):
        _write_rows(logical, b, low, high, pad, result, out)
    return True


def relayout_in_windows(
    data: np.ndarray[Any, Any], src: _Geometry, dst: _Geometry, pad: np.ndarray[Any, Any],
    result: np.ndarray[Any, Any], run: Run,
) -> bool:
    """Relayout through a logical chunk at a time, cut from the source's slabs (its own kernels read them) and
    written into the window of the target that holds the same rows (the generic kernel, between factor views);
    False (nothing written) when the source has no slabs or either layout is packed or has no factor plan."""
    cut, plan = slabs(src.shape, src.bits), _plan(dst.dims, dst.layout)
    if cut is None or plan is None or src.packed or dst.packed or src.nbytes == 0:
        return False
    elements = result.view(dst.storage)
    elements[dst.count :] = pad
    view = _physical_view(elements, plan)
    _fill_padding(view, plan, pad, run=run)
    out = _as_whole(run, result.nbytes)
    grid = math.lcm(cut.weight * cut.step, _outer_rows(plan, cut.axis))
    for low, high, logical in _logical_chunks(data, src, cut, grid, run):
        window, chains, extents = _window(view, plan, cut.axis, low, high)
        _transfer(window, chains, logical.reshape(logical.shape + (1,) * plan.phantoms), _plain_chains(extents),
                  extents, out)
        release(result)
    return True


def relayout_from_windows(
    data: np.ndarray[Any, Any], src: _Geometry, dst: _Geometry, pad: np.ndarray[Any, Any],
    result: np.ndarray[Any, Any], run: Run,
) -> bool:
    """Relayout through a logical chunk at a time, cut from the target's slabs: read from the window of the source
    that holds the same rows (the generic kernel, between factor views) and laid out by the target's own kernels
    (:func:`relayout_in_windows` the other way round); False (nothing written) when the target has no slabs or either
    layout is packed or has no factor plan."""
    cut, plan = slabs(dst.shape, dst.bits), _plan(src.dims, src.layout)
    if cut is None or plan is None or src.packed or dst.packed or dst.nbytes == 0:
        return False
    view = _physical_view(data[: src.nbytes].view(src.storage), plan)
    n = dst.dims[cut.axis]
    grid = math.lcm(cut.weight * cut.step, _outer_rows(plan, cut.axis))
    rows, room = _chunk_room(src.dims, cut.axis, src.storage, grid)
    read, out = _as_whole(run, data.nbytes, stream=False), _as_whole(run, result.nbytes)
    for low in range(0, n, rows):
        high = min(n, low + rows)
        window, chains, extents = _window(view, plan, cut.axis, low, high)
        dims = (*src.dims[: cut.axis], high - low, *src.dims[cut.axis + 1 :])
        logical = room[: math.prod(dims)].reshape(dims)
        _transfer(logical.reshape(dims + (1,) * plan.phantoms), _plain_chains(extents), window, chains, extents, read)
        _write_rows(logical, cut, low, high, pad, result, out)
    return True


def relayout_in_runs(
    data: np.ndarray[Any, Any], src: _Geometry, dst: _Geometry, pad: np.ndarray[Any, Any],
    result: np.ndarray[Any, Any], run: Run,
) -> bool:
    """Relayout through a logical chunk at a time, cut from the source's slabs (its own kernels read them) and laid
    out by the target's own kernels as the piece of an untiled target holding the same rows, which in the target is
    one byte run in each of its rows of the dims before that axis (packed layouts too: a run holds whole bytes);
    False (nothing written) when the source has no slabs or the target is tiled, padded, or its runs are not whole
    bytes."""
    cut, layout = slabs(src.shape, src.bits), dst.layout
    if cut is None or layout.tiles or layout.padded_dimensions is not None or src.nbytes == 0:
        return False
    order = tuple(layout.major_to_minor)
    at = order.index(cut.axis)
    outer = math.prod(dst.dims[d] for d in order[:at])
    inner_bits = math.prod(dst.dims[d] for d in order[at + 1 :]) * dst.bits
    row_bytes, partial = divmod(dst.dims[cut.axis] * inner_bits, 8)
    if partial or outer * row_bytes != dst.nbytes:  # (a row's run off whole bytes, or tail padding past them)
        return False
    rows = result[: dst.nbytes].reshape(outer, row_bytes)
    grid = math.lcm(cut.weight * cut.step, 8 // math.gcd(8, inner_bits))  # (chunks start on whole bytes)
    out = _as_whole(run, result.nbytes)
    whole = layout.replace(tail_padding_alignment_in_elements=1)  # (a piece's bytes: its runs, nothing after them)
    staged: np.ndarray[Any, Any] | None = None
    for low, high, logical in _logical_chunks(data, src, cut, grid, run):
        dims = list(dst.dims)
        dims[cut.axis] = high - low
        piece = _geometry(replace(dst.shape, dimensions=tuple(dims), layout=whole))
        if staged is None:
            staged = np.empty(piece.nbytes, np.uint8)  # (the first chunk is the largest)
        _write_physical(logical, piece, pad, staged[: piece.nbytes], out)
        _copy(rows[:, low * inner_bits // 8 : high * inner_bits // 8], staged[: piece.nbytes].reshape(outer, -1), out)
        release(result)
    return True


def _logical_chunks(
    data: np.ndarray[Any, Any], src: _Geometry, cut: Slabs, grid: int, run: Run, per_row: int = 0,
) -> Iterator[tuple[int, int, np.ndarray[Any, Any]]]:
    """(low, high, the logical array's rows [low, high) of ``cut``'s axis) for each chunk of the source's slabs:
    about ``CHUNK_BYTES`` at ``per_row`` bytes a row (0: the logical array's), starting on multiples of ``grid``
    rows, read by the source's own kernels into one buffer for all chunks (its pages faulted in once)."""
    n = src.dims[cut.axis]
    run = _as_whole(run, data.nbytes, stream=False)
    rows, room = _chunk_room(src.dims, cut.axis, src.storage, grid, per_row)
    for low in range(0, n, rows):
        high = min(n, low + rows)
        first, last = low // cut.weight, -(-high // cut.weight)
        piece = _geometry(cut.piece(first, last))
        s0, s1 = cut.byte_range(first, last)
        logical = room[: math.prod(piece.dims)].reshape(piece.dims)
        _read_physical(data[s0:s1], piece, logical, run)
        yield low, high, logical
        release(data)
