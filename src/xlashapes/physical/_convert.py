"""The two directions (logical array to bytes and back) and relayout, on the NumPy path or a compiled kernel."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from . import _dispatch as dispatch
from ._chunks import slabs
from ._compiled import _compiled_read, _compiled_write
from ._dispatch import Run
from ._geometry import _canonicalize, _check_size, _Geometry, _geometry
from ._grouped import Grouping, grouping, pad_byte, regroup
from ._packing import _elements, _pack, _packed_transpose, _unpack
from ._plan import (
    _common_boundaries,
    _fill_padding,
    _fine_transfer,
    _physical_view,
    _plain_chains,
    _Plan,
    _plan,
    _transfer,
)
from ._reference import _reference_elements, _reference_logical


def _write_physical(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> None:
    """Lay the logical storage array ``x`` out into ``buffer`` (flat uint8 of ``byte_size``)."""
    if _compiled_write(x, geometry, pad, buffer, run):
        return
    plan = _plan(geometry.dims, geometry.layout)
    if geometry.packed:
        if plan is not None and plan.identity and x.flags.c_contiguous and geometry.count == geometry.aligned:
            _pack(x.reshape(-1), geometry, buffer, run)
            return
        if _packed_transpose(x, geometry, buffer, run, True) or _write_grouped(x, geometry, pad, buffer, run):
            return
        _check_size(geometry.aligned, run.limit, "the unpacked elements")
        elements = np.empty(geometry.aligned, np.uint8)
        _fill_elements(x, geometry, pad, elements, plan, run)
        _pack(elements, geometry, buffer, run)
        return
    elements = buffer.view(geometry.storage)
    _fill_elements(x, geometry, pad, elements, plan, run)
    if geometry.etype.kind == "pred" or geometry.etype.bits < 8:
        _canonicalize(buffer, geometry)


def _fill_elements(
    x: np.ndarray[Any, Any],
    geometry: _Geometry,
    pad: np.ndarray[Any, Any],
    elements: np.ndarray[Any, Any],
    plan: _Plan | None,
    run: Run | None = None,
) -> None:
    """Every physical element (flat storage array of ``aligned`` entries): the array's and the padding."""
    if x.size == 0:
        elements[...] = pad
        return
    if plan is None:
        elements[...] = _reference_elements(x, geometry.layout, pad, geometry.aligned)
        return
    elements[geometry.count :] = pad
    view = _physical_view(elements, plan)
    _fill_padding(view, plan, pad)
    source = x.reshape(x.shape + (1,) * plan.phantoms)
    _transfer(view, plan.chains, source, _plain_chains(plan.extents), plan.extents, run)


def _read_physical(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run
) -> None:
    """Fill the logical storage array ``result`` from the physical bytes ``data``."""
    if result.size == 0 or _compiled_read(data, geometry, result, run):
        return
    plan = _plan(geometry.dims, geometry.layout)
    if geometry.packed:
        if plan is not None and plan.identity and result.flags.c_contiguous:
            _unpack(data, geometry, result.reshape(-1), run)
            return
        if _packed_transpose(result, geometry, data, run, False) or _read_grouped(data, geometry, result, run):
            return
    elements = _elements(data, geometry, run, "the unpacked elements")
    if plan is None:
        result[...] = _reference_logical(elements, geometry.dims, geometry.layout)
    else:
        target = result.reshape(result.shape + (1,) * plan.phantoms)
        _transfer(target, _plain_chains(plan.extents), _physical_view(elements, plan), plan.chains, plan.extents,
                  run)
    if not geometry.packed and (geometry.etype.kind == "pred" or geometry.etype.bits < 8):
        _canonicalize(result, geometry)


GROUP_BYTES = 64 << 20
"""Grouped fields (:mod:`._grouped`) up to this many bytes are made whole, then laid out; more, in pieces of an
eighth of it."""


def grouped_whole(geometry: _Geometry, nbytes: int, run: Run) -> Grouping | None:
    """The grouping of E(n) fields the byte kernels move (:mod:`._grouped`), when the compiled path runs (the NumPy
    path is the reference) and all the groups fit one piece, else None."""
    found = grouping(geometry) if geometry.packed else None
    if found is None or nbytes < run.numba_bytes or dispatch.walker() is None:
        return None
    return found if math.prod(found.shape.dimensions) <= min(GROUP_BYTES, run.limit) else None


def _grouped_pieces(geometry: _Geometry, nbytes: int, run: Run) -> tuple[Grouping, list[tuple[Any, ...]], Run] | None:
    """The grouping of E(n) fields the byte kernels move (as ``grouped_whole``, or in slabs of the groups), each
    piece's (logical rows, byte layout's geometry, byte range in the buffer), and the pieces' settings."""
    found = grouping(geometry) if geometry.packed else None
    if found is None or nbytes < run.numba_bytes or dispatch.walker() is None:
        return None
    if grouped_whole(geometry, nbytes, run) is not None:  # (long runs on both sides, one call of the byte kernels)
        whole = _geometry(found.shape)
        return found, [((), whole, 0, whole.nbytes)], replace(run, numba_bytes=0)
    cut = slabs(found.shape, 8)
    if cut is None:
        return None
    pieces = []
    for first, last in cut.chunks(GROUP_BYTES // 8):
        low, high = cut.rows(first, last)
        if cut.axis == found.axis:
            low, high = found.rows(low, high, geometry.dims[found.axis])
        rows = (slice(None),) * cut.axis + (slice(low, high),)
        pieces.append((rows, _geometry(cut.piece(first, last)), *cut.byte_range(first, last)))
    streamed = 0 if geometry.nbytes >= run.stream_bytes else run.stream_bytes
    return found, pieces, replace(run, numba_bytes=0, stream_bytes=streamed)


def _write_grouped(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> bool:
    """Lay E(n) fields out as the bytes of their groups, a piece at a time; False when that does not apply."""
    chosen = _grouped_pieces(geometry, max(x.nbytes, buffer.nbytes), run)
    if chosen is None:
        return False
    found, pieces, inner = chosen
    byte = pad_byte(pad, found)
    room = np.empty(max(math.prod(piece.dims) for _, piece, _, _ in pieces), np.uint8)
    for rows, piece, start, end in pieces:
        grouped = room[: math.prod(piece.dims)].reshape(piece.dims)
        regroup(grouped, x[rows], found, pad, geometry.value_mask, True)
        _write_physical(grouped, piece, byte, buffer[start:end], inner)
    return True


def _read_grouped(data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run) -> bool:
    """Fill ``result`` from the bytes of E(n) fields' groups, a piece at a time; False when that does not apply."""
    chosen = _grouped_pieces(geometry, max(data.nbytes, result.nbytes), run)
    if chosen is None:
        return False
    found, pieces, inner = chosen
    room = np.empty(max(math.prod(piece.dims) for _, piece, _, _ in pieces), np.uint8)
    for rows, piece, start, end in pieces:
        grouped = room[: math.prod(piece.dims)].reshape(piece.dims)
        _read_physical(data[start:end], piece, grouped, inner)
        regroup(grouped, result[rows], found, pad_byte(grouped, found), geometry.value_mask, False)
    return True


def _relayout_direct(
    data: np.ndarray[Any, Any],
    src: _Geometry,
    dst: _Geometry,
    pad: np.ndarray[Any, Any],
    result: np.ndarray[Any, Any],
    run: Run,
    coarse: bool = False,
) -> bool:
    """Copy from one layout's bytes to the other's in one pass; False (nothing written) when the tiles split dims
    incompatibly, or with ``coarse`` when that copy is fine-grained (:func:`._plan._fine_transfer`: unpacked layouts
    only)."""
    src_plan, dst_plan = _plan(src.dims, src.layout), _plan(dst.dims, dst.layout)
    if src_plan is None or dst_plan is None or math.prod(src.dims) == 0:
        return False
    phantoms = max(src_plan.phantoms, dst_plan.phantoms)
    extents = src.dims + (1,) * phantoms
    src_chains = src_plan.chains + ((1,),) * (phantoms - src_plan.phantoms)
    dst_chains = dst_plan.chains + ((1,),) * (phantoms - dst_plan.phantoms)
    if any(_common_boundaries((a, b), n) is None for a, b, n in zip(src_chains, dst_chains, extents)):
        return False
    if coarse and not (src.packed or dst.packed):  # (views of the bytes as they are: the copy's strides)
        src_view = _factor_view(data[: src.nbytes].view(src.storage), src_plan, phantoms)
        dst_view = _factor_view(result[: dst.nbytes].view(dst.storage), dst_plan, phantoms)
        if _fine_transfer(dst_view, dst_chains, src_view, src_chains, extents):
            return False
    src_elements = _elements(data, src, run, "the unpacked source elements")
    if dst.packed:
        _check_size(dst.aligned, run.limit, "the unpacked target elements")
        dst_elements = np.empty(dst.aligned, np.uint8)
    else:
        dst_elements = result.view(dst.storage)
    dst_elements[dst.count :] = pad
    _fill_padding(_physical_view(dst_elements, dst_plan), dst_plan, pad)
    src_view = _factor_view(src_elements, src_plan, phantoms)
    dst_view = _factor_view(dst_elements, dst_plan, phantoms)
    _transfer(dst_view, dst_chains, src_view, src_chains, extents, run)
    if dst.packed:
        _pack(dst_elements, dst, result, run)
    elif dst.etype.kind == "pred" or dst.etype.bits < 8:
        _canonicalize(result, dst)
    return True


def _factor_view(elements: np.ndarray[Any, Any], plan: _Plan, phantoms: int) -> np.ndarray[Any, Any]:
    """The plan's factor view of a layout's elements, with size-1 axes up to ``phantoms`` phantom dims."""
    view = _physical_view(elements, plan)
    shaped: np.ndarray[Any, Any] = view.reshape(view.shape + (1,) * (phantoms - plan.phantoms))
    return shaped


def _plain(geometry: _Geometry) -> bool:
    """True when a layout's bytes are exactly its logical array in row-major order (no padding, one element per
    storage word)."""
    plan = _plan(geometry.dims, geometry.layout)
    word = geometry.storage.itemsize
    whole = geometry.nbytes == geometry.count * word == geometry.aligned * word
    return not geometry.packed and whole and plan is not None and plan.identity
