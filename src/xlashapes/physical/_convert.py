"""The two directions (logical array to bytes and back) and relayout, on the NumPy path or a compiled kernel."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from . import _dispatch as dispatch
from . import _tuned
from ._compiled import _compiled_plan, _compiled_read, _compiled_write
from ._dispatch import Run
from ._geometry import _canonical_copy, _canonicalize, _check_size, _Geometry, _geometry
from ._grouped import Grouping, grouping, pad_byte, regroup, short_runs
from ._kinds import LINE
from ._packing import _elements, _pack, _packed_transpose, _unpack
from ._permuted import permuted_convert
from ._plan import (
    _common_boundaries,
    _fill_padding,
    _fine_transfer,
    _outer_rows,
    _padded_transfer,
    _padding_boxes,
    _physical_view,
    _plain_chains,
    _Plan,
    _plan,
    _transfer,
    _window,
    compiled_padding,
    fine_padding,
)
from ._reference import _reference_elements, _reference_logical
from ._stacked import stacked_convert
from ._transposed import transposed_convert
from ._trials import RestOf, rest_tried
from ._widened import widened_convert


def _write_physical(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> None:
    """Lay the logical storage array ``x`` out into ``buffer`` (flat uint8 of ``byte_size``)."""
    if _compiled_write(x, geometry, pad, buffer, run):
        return
    rest_of = partial(_written, _write_unstacked, pad, run)
    if not _routed("stacked", partial(stacked_convert, x, geometry, pad, buffer, run, True), rest_of, geometry, x,
                   buffer, run, True):
        rest_of(x, geometry, buffer)


def _routed(
    name: str, route: Callable[[], bool], rest_of: RestOf, geometry: _Geometry, logical: np.ndarray[Any, Any],
    data: np.ndarray[Any, Any], run: Run, to: bool,
) -> bool:
    """``route()`` (False where it does not apply); where it does, a copy of ``_tuned.TUNE_BYTES`` and more times it
    against the conversion without it (``rest_of`` on the whole, on trial in part: :mod:`._trials`), and keeps the
    faster (the rules that pick the routes through slabs and bands were measured against the generic kernel of their
    day: 'from', x memcpy, route -> without: stacked f16 ``[29127,12,16,3]{0,2,3,1:T(8,128)(2,1)}`` 3.0 -> 9.9 but
    pred ``[1398101,12,2]{0,1,2:T(8,128)(4,1)}`` 5.3 -> 3.9, f32 ``[2621,200,16]{0,1,2:T(4,128)}`` 2.7 -> 2.0; bands
    u8 ``[1024,7,668,7]{2,1,0,3:T(8,128)(4,1)}`` 2.7 -> 9.0 but s8 ``[12,116,1000,24]{2,0,1,3:T(8,128)(4,1)}`` 4.0
    -> 2.5; read back, the slabs of :mod:`._transposed`: ``._transposed.FEW_ROWS``). On the NumPy path nothing is
    timed: its conversions are not the compiled path's plans (timed under the same key, the NumPy conversion without
    the stacked route, 288 ms for f32 ``[21840,2048,3]{0,1,2:T(8,128)}``, dropped the compiled one, 65 ms, for a
    stacked kernel of 125)."""
    if max(logical.nbytes, data.nbytes) < _tuned.TUNE_BYTES or dispatch.walker() is None:
        return route()
    key = (name, geometry.shape, to, _tuned.page_offset(dispatch.address(logical)),
           _tuned.page_offset(dispatch.address(data)), run.threads)
    return _tuned.run_fastest(key, [route, partial(rest_tried, route, rest_of, geometry, logical, data)])


def _written(convert: Callable[..., None], pad: np.ndarray[Any, Any], run: Run, x: np.ndarray[Any, Any],
             geometry: _Geometry, buffer: np.ndarray[Any, Any]) -> None:
    """A step of :func:`_write_physical` as a :data:`RestOf` (``convert(x, geometry, pad, buffer, run)``)."""
    convert(x, geometry, pad, buffer, run)


def _read(convert: Callable[..., None], run: Run, result: np.ndarray[Any, Any], geometry: _Geometry,
          data: np.ndarray[Any, Any]) -> None:
    """A step of :func:`_read_physical` as a :data:`RestOf` (``convert(data, geometry, result, run)``)."""
    convert(data, geometry, result, run)


def _write_unstacked(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> None:
    """The rest of :func:`_write_physical` past the stacked route: through the widened array or not."""
    if not widened_convert(x, geometry, pad, buffer, run, True, _write_physical,
                           partial(_written, _write_routes, pad, run)):
        _write_routes(x, geometry, pad, buffer, run)


def _write_routes(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> None:
    """The rest of :func:`_write_physical`: the routes through slabs, then the plan's boxes."""
    rest_of = partial(_written, _write_plan, pad, run)
    if transposed_convert(x, geometry, pad, buffer, run, True, _write_physical) or _routed(
            "bands", partial(permuted_convert, x, geometry, pad, buffer, run, True, _write_physical), rest_of,
            geometry, x, buffer, run, True):
        return
    rest_of(x, geometry, buffer)


def _write_plan(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> None:
    """The rest of :func:`_write_routes`: the packed routes, then the plan's boxes."""
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
    if _canonical_in_order(x, geometry, buffer, plan, True, run):
        return
    elements = buffer.view(geometry.storage)
    with dispatch.canonical_writes(geometry.etype.kind == "pred") as account:
        _fill_elements(x, geometry, pad, elements, plan, run)
    if _second_pass(geometry, account, x.nbytes):
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
    source = x.reshape(x.shape + (1,) * plan.phantoms)
    if run is not None and _padded_transfer(view, plan, source, pad, run):
        return  # (rows that end in padding: laid out with it, in one pass)
    boxes = list(_padding_boxes(view, plan))
    transfer = partial(_transfer, view, plan.chains, source, _plain_chains(plan.extents), plan.extents, run)
    by_boxes = partial(_padded_then, partial(_fill_padding, view, plan, pad, boxes=boxes, run=run), transfer)
    whole = partial(_padded_then, partial(elements[: geometry.count].__setitem__, Ellipsis, pad), transfer)
    if run is not None and fine_padding(view, boxes):
        whole()  # (one pass over the whole buffer, then the elements over it)
    elif run is None or not compiled_padding(boxes, run) or elements.nbytes < _tuned.TUNE_BYTES:
        by_boxes()
    else:  # (the padding's runs by the kernel, or the pass: which is faster depends on how the copy then writes
        # the lines they share: f16 [200,83886]{0,1:T(8,128)(2,1)} 'to' 5.2 -> 4.3 ms by the kernel, pred
        # [100,335544]{0,1:T(8,128)(4,1)} 5.4 -> 6.6, its copy 3.3 -> 4.5)
        key = ("padding", geometry.shape, _tuned.page_offset(dispatch.address(x)),
               _tuned.page_offset(dispatch.address(elements)), run.threads)
        _tuned.run_fastest(key, [by_boxes, whole])


def _padded_then(padding: Callable[[], object], transfer: Callable[[], object]) -> bool:
    """``padding()``, then ``transfer()`` (the elements over it); True (done), as a plan of
    :func:`._tuned.run_fastest` returns."""
    padding()
    transfer()
    return True


def _read_physical(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run
) -> None:
    """Fill the logical storage array ``result`` from the physical bytes ``data``."""
    if result.size == 0 or _compiled_read(data, geometry, result, run):
        return
    rest_of = partial(_read, _read_unstacked, run)
    if not _routed("stacked", partial(stacked_convert, result, geometry, None, data, run, False), rest_of, geometry,
                   result, data, run, False):
        rest_of(result, geometry, data)


def _read_unstacked(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run
) -> None:
    """The rest of :func:`_read_physical` past the stacked route: through the widened array or not."""
    if not widened_convert(result, geometry, None, data, run, False, _read_physical,
                           partial(_read, _read_routes, run)):
        _read_routes(data, geometry, result, run)


def _read_routes(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run
) -> None:
    """The rest of :func:`_read_physical`: the routes through slabs, then the plan's boxes."""
    rest_of = partial(_read, _read_plan, run)
    if _routed("slabs", partial(transposed_convert, result, geometry, None, data, run, False, _read_physical),
               rest_of, geometry, result, data, run, False) or _routed(
            "bands", partial(permuted_convert, result, geometry, None, data, run, False, _read_physical), rest_of,
            geometry, result, data, run, False):
        return
    rest_of(result, geometry, data)


def _read_plan(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run
) -> None:
    """The rest of :func:`_read_routes`: the packed routes, then the plan's boxes."""
    plan = _plan(geometry.dims, geometry.layout)
    if geometry.packed:
        if plan is not None and plan.identity and result.flags.c_contiguous:
            _unpack(data, geometry, result.reshape(-1), run)
            return
        if _packed_transpose(result, geometry, data, run, False) or _read_grouped(data, geometry, result, run):
            return
    if _canonical_in_order(result, geometry, data, plan, False, run):
        return
    elements = _elements(data, geometry, run, "the unpacked elements")
    with dispatch.canonical_writes(geometry.etype.kind == "pred" and not geometry.packed) as account:
        if plan is None:
            result[...] = _reference_logical(elements, geometry.dims, geometry.layout)
        else:
            target = result.reshape(result.shape + (1,) * plan.phantoms)
            _transfer(target, _plain_chains(plan.extents), _physical_view(elements, plan), plan.chains,
                      plan.extents, run)
    if not geometry.packed and _second_pass(geometry, account, result.nbytes):
        _canonicalize(result, geometry)


def _second_pass(geometry: _Geometry, account: dispatch.Canonical | None, nbytes: int) -> bool:
    """True where a pred or sub-byte layout's bytes still need the pass that makes them canonical: its copies did
    not leave all ``nbytes`` logical bytes so (:mod:`._canonical`)."""
    wanted = geometry.etype.kind == "pred" or geometry.etype.bits < 8
    return wanted and not (account is not None and account.covers(nbytes))


def _canonical_in_order(
    logical: np.ndarray[Any, Any], geometry: _Geometry, data: np.ndarray[Any, Any], plan: _Plan | None, to: bool,
    run: Run,
) -> bool:
    """Copy a pred or unpacked sub-byte layout whose bytes are its logical array in order (no padding) between the
    two, made canonical on the way (:func:`._geometry._canonical_copy`, split over ``run``'s threads); False (nothing
    done) for any other layout or a logical array not contiguous."""
    if geometry.packed or not (geometry.etype.kind == "pred" or geometry.etype.bits < 8):
        return False
    if plan is None or not plan.identity or geometry.nbytes != logical.nbytes or not logical.flags.c_contiguous:
        return False
    flat = logical.reshape(-1).view(np.uint8)
    dst, src = (data[: geometry.nbytes], flat) if to else (flat, data[: geometry.nbytes])

    def part(bounds: tuple[int, int]) -> None:
        _canonical_copy(dst[bounds[0] : bounds[1]], src[bounds[0] : bounds[1]], geometry)

    dispatch.run_parts(part, dispatch.parts(dst.size, dst.size, run, LINE))
    return True


GROUP_BYTES = 64 << 20
"""Grouped fields (:mod:`._grouped`) up to this many bytes are made whole, then laid out; more, a window of about an
eighth of it at a time."""

LONG_GROUPED_ROWS = 1024
"""Logical minor dims at least this long, paired by ``(p,1)`` sub-tiles of E(n) fields, are read back unpacked in
their own tiles, shorter ones as the bytes of their groups, which moved them faster (x memcpy, ~32 MiB, 'from',
grouped against unpacked): s4 ``[1398101,48]{0,1:T(8,128)(2,1)E(4)}`` 2.3 against 9.8, ``[5592405,12]{0,1:...}`` 5.8
against 8.3, ``[524288,128]{0,1:...}`` 2.8 against 4.5, ``[4096,512,32]{1,2,0:...}`` 3.1 against 4.6,
``[300,1000,200]{0,2,1:...}`` 3.0 against 3.4; but ``[1000,1000,64]{1,2,0:...}`` 3.4 against 2.8, and from 1024 on
the unpacked fields were as fast or faster (``[65536,1024]{0,1:...}`` 2.6 against 2.9, ``[8192,8192]`` 2.7 both)."""


def grouped_route(geometry: _Geometry, nbytes: int, run: Run, to: bool, whole: bool = True) -> Grouping | None:
    """The grouping of E(n) fields the byte kernels move (:mod:`._grouped`), when the compiled path runs (the NumPy
    path is the reference) and the groups are made whole or the byte layout has windows; else None.

    Not when reading back ``(p,1)`` sub-tiles that pair the elements of a logical minor dim of ``LONG_GROUPED_ROWS``
    or more, or into a part of the result that is not ``whole`` (a slab's column block): the byte layout's tiles
    then hold runs of ``R/p`` bytes of the array's rows (4 for ``T(8,128)(2,1)``), which the byte kernels read back
    more slowly than they read back the unpacked fields in their own tiles
    (``s4[65536,1024]{0,1:T(8,128)(2,1)E(4)}`` 'from' 2.9x against 2.6x whole, 5.5x against 2.6x in column blocks of
    256 rows; 'to' is as fast or faster grouped).
    """
    found = grouping(geometry) if geometry.packed else None
    if found is None or nbytes < run.numba_bytes or dispatch.walker() is None:
        return None
    tiled = _compiled_plan(geometry.dims, geometry.layout)
    if tiled is not None and tiled.tile[2] in (1, 2, 4):
        return None  # (the tiled kernels pack and unpack them tile by tile, in slabs; not (8,1) sub-tiles, which
        # they move element by element: s4 T(64,128)(8,1)E(4) 20x / 9x the packed bytes, as bytes T(32,128)(4,1))
    if not to and len(geometry.layout.tiles) == 2 and found.axis == len(geometry.dims) - 1 and (
            geometry.dims[-1] >= LONG_GROUPED_ROWS or not whole):
        return None
    if not geometry.layout.tiles and short_runs(found, geometry.dims):
        return None
    whole = _grouped_whole(found, run)
    return found if whole or _plan(found.shape.dimensions, found.shape.layout_or_default()) is not None else None


def _grouped_whole(found: Grouping, run: Run) -> bool:
    """True when the bytes of the groups are made whole (within ``GROUP_BYTES`` and the memory limit)."""
    return math.prod(found.shape.dimensions) <= min(GROUP_BYTES, run.limit)


def _write_grouped(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], run: Run
) -> bool:
    """Lay E(n) fields out as the bytes of their groups: whole, or a window at a time; False when that does not
    apply."""
    found = grouped_route(geometry, max(x.nbytes, buffer.nbytes), run, True)
    if found is None:
        return False
    byte = pad_byte(pad, found)
    if _grouped_whole(found, run):
        with dispatch.temporary(math.prod(found.shape.dimensions)) as room:
            grouped = room.reshape(found.shape.dimensions)
            regroup(grouped, x, found, pad, geometry.value_mask, True, run)
            _write_physical(grouped, _geometry(found.shape), byte, buffer, replace(run, numba_bytes=0))
        return True
    plan = _plan(found.shape.dimensions, found.shape.layout_or_default())
    assert plan is not None  # (grouped_route)
    view = _physical_view(buffer[: geometry.nbytes], plan)
    _fill_padding(view, plan, byte, run=run)
    for part, grouped, window, chains, extents in _grouped_windows(x, found, plan, view):
        regroup(grouped, part, found, pad, geometry.value_mask, True, run)
        _transfer(window, chains, grouped.reshape(grouped.shape + (1,) * plan.phantoms), _plain_chains(extents),
                  extents, replace(run, numba_bytes=0))
    return True


def _read_grouped(data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], run: Run) -> bool:
    """Fill ``result`` from the bytes of E(n) fields' groups: whole, or a window at a time; False when that does not
    apply."""
    found = grouped_route(geometry, max(data.nbytes, result.nbytes), run, False, result.flags.c_contiguous)
    if found is None:
        return False
    none, count = np.zeros((), np.uint8), math.prod(found.shape.dimensions)
    in_place = _splits_in_place(found, result)
    if in_place or _grouped_whole(found, run):
        # in place: the groups' bytes in the back of the result's own, split from there front to back
        back = result.reshape(-1).view(np.uint8)[result.nbytes - count :]
        room = nullcontext(back) if in_place else dispatch.temporary(count)
        with room as held:
            grouped = held.reshape(found.shape.dimensions)
            _read_physical(data, _geometry(found.shape), grouped, replace(run, numba_bytes=0))
            stages = _in_place_stages(found, grouped.nbytes, run) if in_place else [(0, found.shape.dimensions[0])]
            for low, high in stages:
                rows = found.rows(low, high, result.shape[0]) if found.axis == 0 else (low, high)
                split = replace(run, threads=1) if in_place and high == stages[-1][1] else run
                regroup(grouped[low:high], result[rows[0] : rows[1]], found, none, geometry.value_mask, False, split)
        return True
    plan = _plan(found.shape.dimensions, found.shape.layout_or_default())
    assert plan is not None  # (grouped_route)
    view = _physical_view(data[: geometry.nbytes], plan)
    for part, grouped, window, chains, extents in _grouped_windows(result, found, plan, view):
        _transfer(grouped.reshape(grouped.shape + (1,) * plan.phantoms), _plain_chains(extents), window, chains,
                  extents, replace(run, numba_bytes=0, stream_bytes=1 << 62))  # (read again at once: not streamed)
        regroup(grouped, part, found, none, geometry.value_mask, False, run)
    return True


STAGE_SPLIT_BYTES = 4 << 20
"""Least bytes of groups an in-place split over threads takes in one stage (:func:`_in_place_stages`)."""


def _in_place_stages(found: Grouping, count: int, run: Run) -> list[tuple[int, int]]:
    """The stages (ranges of the first dim of the groups' bytes, ``count`` of them in all, in the back of the result)
    an in-place split goes in: over ``run``'s threads, each stage the rows whose fields land before every byte not yet
    split (half the rest, for two fields a byte), so that its threads never write where another reads; the last one,
    under ``STAGE_SPLIT_BYTES``, on one thread. Two threads on s4 ``[4096,256,512]{1,0,2:T(8,128)(2,1)E(4)}`` read
    back (512 MiB): the split 73 -> 45 ms.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> found = grouping(_geometry(parse_shape("s4[4096,256,512]{1,0,2:T(8,128)(2,1)E(4)}")))
    >>> stages = _in_place_stages(found, 256 << 20, Run(1 << 40, 2))
    >>> stages[:3], stages[-1], len(stages)
    ([(0, 1024), (1024, 1536), (1536, 1792)], (2016, 2048), 7)
    """
    rows = found.shape.dimensions[0]
    if run.threads < 2 or rows < 2:
        return [(0, rows)]
    row, per = count // rows, found.per
    stages, low = [], 0
    while (rows - low) * row > STAGE_SPLIT_BYTES:
        high = (rows * (per - 1) + low) // per  # (its last fields end where the first unsplit byte begins)
        if high <= low:
            break
        stages.append((low, high))
        low = high
    return [*stages, (low, rows)]


def _splits_in_place(found: Grouping, result: np.ndarray[Any, Any]) -> bool:
    """True when the bytes of the groups can be read back into the last ``1/per`` of ``result``'s own bytes (fields of
    one byte, C order, whole groups) and split from there into all of it: in the order the ``regroup`` kernel goes
    (C order, one thread), each group's fields land at or before its own byte, never on a byte not yet split. No
    temporary then (a 512 MiB s4 ``[4096,256,512]{1,0,2:T(8,128)(2,1)E(4)}`` read back went a window of groups at a
    time, 3.3-4.8x memcpy of the logical bytes; in place 1.84, its peak memory the result's).

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> found = grouping(_geometry(parse_shape("s4[64,100]{0,1:T(8,128)(2,1)E(4)}")))
    >>> _splits_in_place(found, np.empty((64, 100), np.int8)), _splits_in_place(found, np.empty((100, 64), np.int8).T)
    (True, False)
    """
    return (result.flags.c_contiguous and result.dtype.itemsize == 1 and result.shape[found.axis] % found.per == 0
            and math.prod(found.shape.dimensions) * found.per == result.nbytes)


_Window = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], tuple[tuple[int, ...], ...],
                tuple[int, ...]]


def _grouped_windows(
    logical: np.ndarray[Any, Any], found: Grouping, plan: _Plan, view: np.ndarray[Any, Any]
) -> Iterator[_Window]:
    """For each chunk of about ``GROUP_BYTES / 8`` of the groups' first dim: the logical array's rows it holds, one
    buffer for its groups (the same for all chunks), and the window of the byte layout's factor view ``view`` holding
    them, with its chains and extents."""
    dims = found.shape.dimensions
    grid = _outer_rows(plan, 0)
    row = math.prod(dims[1:])
    rows = max(grid, GROUP_BYTES // 8 // max(1, row) // grid * grid)
    with dispatch.temporary(row * min(rows, dims[0])) as room:
        for low in range(0, dims[0], rows):
            high = min(dims[0], low + rows)
            first, last = found.rows(low, high, logical.shape[0]) if found.axis == 0 else (low, high)
            window, chains, extents = _window(view, plan, 0, low, high)
            part = room[: (high - low) * row].reshape(high - low, *dims[1:])
            yield logical[first:last], part, window, chains, extents


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
        compiled = max(src.nbytes, dst.nbytes) >= run.numba_bytes and dispatch.kernels() is not None
        if _fine_transfer(dst_view, dst_chains, src_view, src_chains, extents, compiled):
            return False
    src_elements = _elements(data, src, run, "the unpacked source elements")
    if dst.packed:
        _check_size(dst.aligned, run.limit, "the unpacked target elements")
        dst_elements = np.empty(dst.aligned, np.uint8)
    else:
        dst_elements = result.view(dst.storage)
    dst_elements[dst.count :] = pad
    _fill_padding(_physical_view(dst_elements, dst_plan), dst_plan, pad, run=run)
    src_view = _factor_view(src_elements, src_plan, phantoms)
    dst_view = _factor_view(dst_elements, dst_plan, phantoms)
    with dispatch.canonical_writes(dst.etype.kind == "pred" and not dst.packed) as account:
        _transfer(dst_view, dst_chains, src_view, src_chains, extents, run)
    if dst.packed:
        _pack(dst_elements, dst, result, run)
    elif _second_pass(dst, account, math.prod(dst.dims) * dst.storage.itemsize):
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
