"""The plain level-by-level path: pad, reshape and transpose one tile level at a time (the tests' reference)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..layout import Layout
from ..shape import Shape
from ..tiling import apply_tile, tile_split
from ._geometry import _canonicalize, _geometry, _input_bytes, _logical_storage, _padding_storage, _resolved_shape
from ._packing import _codes


def _reference_to_physical(value: Any, shape: Shape | str, padding_value: Any = None) -> np.ndarray[Any, Any]:
    """to_physical done the obvious way: pad, reshape and transpose level by level, then pack element by element."""
    geometry = _geometry(_resolved_shape(shape))
    x = _logical_storage(value, geometry)
    pad = _padding_storage(geometry, padding_value)
    if x.size == 0:
        elements = np.full(geometry.aligned, pad)
    else:
        elements = _reference_elements(x, geometry.layout, pad, geometry.aligned)
    elements = elements.copy()
    if geometry.etype.kind == "pred" or geometry.etype.bits < 8:
        _canonicalize(elements, geometry)
    if not geometry.packed:
        return np.asarray(elements.view(np.uint8))
    codes = _codes(elements, geometry) & np.uint8((1 << geometry.bits) - 1)
    return _reference_pack(codes, geometry.bits, geometry.nbytes)


def _reference_from_physical(buffer: Any, shape: Shape | str) -> np.ndarray[Any, Any]:
    """from_physical done the obvious way: unpack element by element, then undo each level in reverse."""
    geometry = _geometry(_resolved_shape(shape))
    data = _input_bytes(buffer, geometry)
    if geometry.packed:
        elements = _reference_unpack(data, geometry.bits, geometry.aligned) & np.uint8(geometry.value_mask)
    else:
        elements = data.view(geometry.storage).copy()
    if math.prod(geometry.dims) == 0:
        return np.empty(geometry.dims, geometry.dtype)
    logical = _reference_logical(elements, geometry.dims, geometry.layout).copy()
    if geometry.etype.kind == "pred" or geometry.etype.bits < 8:
        _canonicalize(logical, geometry)
    return np.asarray(logical.view(geometry.dtype))


def _reference_pack(codes: np.ndarray[Any, Any], bits: int, nbytes: int) -> np.ndarray[Any, Any]:
    """Element i's ``bits`` bits at bit ``i * bits`` of the little-endian bit stream."""
    per = 8 // bits
    padded = np.zeros(nbytes * per, np.uint16)
    padded[: codes.size] = codes
    shifts = np.arange(per, dtype=np.uint16) * bits
    return np.asarray((padded.reshape(nbytes, per) << shifts).sum(axis=1), dtype=np.uint8)


def _reference_unpack(data: np.ndarray[Any, Any], bits: int, count: int) -> np.ndarray[Any, Any]:
    """Element i = bits ``i * bits`` .. ``i * bits + bits - 1`` of the little-endian bit stream."""
    per = 8 // bits
    shifts = np.arange(per, dtype=np.uint8) * bits
    fields = (data[:, None] >> shifts) & np.uint8((1 << bits) - 1)
    return np.asarray(fields.reshape(-1)[:count], dtype=np.uint8)


def _padded_to(a: np.ndarray[Any, Any], sizes: Sequence[int], pad: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``a`` in the corner of a new array of ``sizes`` filled with ``pad``."""
    result = np.empty(tuple(sizes), a.dtype)
    result[...] = pad
    result[tuple(slice(0, n) for n in a.shape)] = a
    return result


def _tile_geometry(
    dims: Sequence[int], tile: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """For one tile on ``dims`` (see ``layout.tile_split``): head, merged covered dims, tile sizes, padded sizes."""
    head, merged, sizes = tile_split(dims, tile)
    padded = tuple(-(-m // t) * t for m, t in zip(merged, sizes))
    return tuple(head), tuple(merged), tuple(sizes), padded


def _tile_permutation(h: int, m: int) -> tuple[int, ...]:
    """Axes of (head, o0, t0, o1, t1, ...) reordered to (head, o0, o1, ..., t0, t1, ...)."""
    return tuple(range(h)) + tuple(h + 2 * i for i in range(m)) + tuple(h + 2 * i + 1 for i in range(m))


def _reference_tile(a: np.ndarray[Any, Any], tile: Sequence[int], pad: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """One tile level: merge ``*`` dims, pad each covered dim to the tile, split it, move the tile parts minor."""
    if not tile:
        return a
    head, merged, sizes, padded = _tile_geometry(a.shape, tile)
    a = np.ascontiguousarray(a).reshape(head + merged)
    a = _padded_to(a, head + padded, pad)
    split = head + tuple(x for p, t in zip(padded, sizes) for x in (p // t, t))
    return np.ascontiguousarray(a.reshape(split).transpose(_tile_permutation(len(head), len(merged))))


def _reference_untile(a: np.ndarray[Any, Any], tile: Sequence[int], before: Sequence[int]) -> np.ndarray[Any, Any]:
    """Undo one tile level: ``a`` has the tiled dims, the result the dims ``before`` it."""
    if not tile:
        return a
    head, merged, sizes, padded = _tile_geometry(before, tile)
    split = head + tuple(x for p, t in zip(padded, sizes) for x in (p // t, t))
    perm = _tile_permutation(len(head), len(merged))
    a = a.reshape(tuple(split[i] for i in perm)).transpose(np.argsort(perm)).reshape(head + padded)
    a = a[(slice(None),) * len(head) + tuple(slice(0, m) for m in merged)]
    return np.ascontiguousarray(a).reshape(tuple(before))


def _reference_elements(
    x: np.ndarray[Any, Any], layout: Layout, pad: np.ndarray[Any, Any], aligned: int
) -> np.ndarray[Any, Any]:
    """All physical elements, level by level: legacy padding, physical order, each tile, then L(n) padding."""
    a = x
    if layout.padded_dimensions is not None:
        a = _padded_to(a, layout.padded_dimensions, pad)
    a = a.transpose(layout.major_to_minor)
    for tile in layout.tiles:
        a = _reference_tile(a, tile, pad)
    flat = np.ascontiguousarray(a).reshape(-1)
    tail = np.empty(aligned - flat.size, flat.dtype)
    tail[...] = pad
    return np.concatenate([flat, tail])


def _reference_logical(elements: np.ndarray[Any, Any], dims: Sequence[int], layout: Layout) -> np.ndarray[Any, Any]:
    """The logical array from all physical elements, undoing each level in reverse order."""
    levels = _tile_levels(dims, layout)
    a = elements[: math.prod(levels[-1])].reshape(levels[-1])
    for tile, before in zip(reversed(layout.tiles), reversed(levels[:-1])):
        a = _reference_untile(a, tile, before)
    a = a.transpose(np.argsort(layout.major_to_minor))
    where = (*(slice(0, n) for n in dims), Ellipsis)
    return np.asarray(a[where])


def _tile_levels(dims: Sequence[int], layout: Layout) -> list[list[int]]:
    """The physical dims before the first tile level and after each one (legacy padding included).

    >>> _tile_levels((3, 5), Layout((1, 0), tiles=((2, 2),)))
    [[3, 5], [2, 3, 2, 2]]
    """
    sizes = layout.padded_dimensions if layout.padded_dimensions is not None else tuple(dims)
    levels = [[sizes[d] for d in layout.major_to_minor]]
    for tile in layout.tiles:
        levels.append(apply_tile(levels[-1], tile))
    return levels
