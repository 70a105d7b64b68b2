"""Packed fields as bytes: E(n) layouts whose bytes are a ``u8`` layout of the elements grouped along one dim.

A byte of E(4) fields holds two elements that follow each other in the layout's physical order. When they are
always two neighbours along one logical dim (the minor dim of an untiled layout, the minor dim of the only tile
level, or the row dim of ``(2,1)`` sub-tiles), the bytes are exactly those of a ``u8`` layout of the array whose
pairs along that dim were made into bytes first (``s4[64,128]{0,1:T(8,128)(2,1)E(4)}`` holds the bytes of
``u8[32,128]{0,1:T(4,128)}``). The same holds for E(2) with four elements and E(1) with eight. A conversion is then
one of bytes, by the byte kernels, and one pass of the ``regroup`` kernel that makes the bytes (or splits them); a
relayout between two layouts grouping the same neighbours is a relayout of bytes. ``group`` and ``ungroup`` are the
NumPy reference of that kernel (the tests compare them, and they do the last group of a dim cut short).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..layout import Layout
from ..shape import Shape, make_shape
from . import _dispatch as dispatch
from ._copy import _merged_axes
from ._dispatch import Run, address
from ._geometry import _Geometry


@dataclass(frozen=True)
class Grouping:
    """``per`` neighbours along logical dim ``axis`` share a byte (``bits`` each, the first in the low-order bits);
    ``shape`` is the ``u8`` layout of the bytes, the dim ``axis`` counted in bytes."""

    axis: int
    per: int
    bits: int
    shape: Shape

    def rows(self, low: int, high: int, size: int) -> tuple[int, int]:
        """The logical indices of the grouped dim (of ``size``) whose elements make bytes [low, high) along it."""
        return min(size, low * self.per), min(size, high * self.per)


def grouping(geometry: _Geometry) -> Grouping | None:
    """How the packed layout of ``geometry`` is a ``u8`` layout of grouped elements, or None.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> g = grouping(_geometry(parse_shape("s4[64,100]{0,1:T(8,128)(2,1)E(4)}")))
    >>> g.axis, g.per, str(g.shape)
    (1, 2, 'u8[64,50]{0,1:T(4,128)}')
    """
    return _cached_grouping(geometry)


@lru_cache(maxsize=256)
def _cached_grouping(geometry: _Geometry) -> Grouping | None:
    """``grouping`` through a cache."""
    layout, dims, bits = geometry.layout, geometry.dims, geometry.bits
    plain = geometry.etype.kind != "pred" and geometry.etype.bits == bits
    whole = geometry.aligned == geometry.count and geometry.nbytes * 8 == geometry.count * bits
    if not (geometry.packed and plain and whole) or layout.padded_dimensions is not None or not dims:
        return None
    per = 8 // bits
    found = _grouped_tiles(layout, len(dims), per)
    if found is None:
        return None
    axis, tiles = found
    if not tiles and dims[axis] % per:
        return None  # (untiled: the bytes of a row would straddle the next one)
    grouped = tuple(-(-n // per) if d == axis else n for d, n in enumerate(dims))
    shape = make_shape("u8", grouped, layout=Layout(layout.minor_to_major, tiles=tiles))
    if shape.byte_size() != geometry.nbytes:
        return None  # (defensive: not the structure assumed)
    return Grouping(axis, per, bits, shape)


def short_runs(found: Grouping, dims: tuple[int, ...]) -> bool:
    """True when the ``regroup`` kernel would make the groups in runs of fewer than 64 elements, not whole words (the
    logical dims after the grouped one, in C order; 1: the grouped dim's own run), most of them one by one
    (``s4[1,500,64,1024,5]{3,4,1,2,0:E(4)}``, runs of 5: 15x memcpy of the packed bytes, 57x when each run was a call
    of its own; in bands, unpacked and packed, 6.3 / 3.4).

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> [short_runs(grouping(_geometry(parse_shape(t))), parse_shape(t).dimensions)
    ...  for t in ("s4[64,8,5]{1,2,0:E(4)}", "s4[64,8,16]{1,2,0:E(4)}", "s4[64,8,6]{2,1,0:E(4)}")]
    [True, False, False]
    """
    inner = math.prod(dims[found.axis + 1 :])
    return 1 < inner < 64 and inner % 8 != 0


def _grouped_tiles(layout: Layout, rank: int, per: int) -> tuple[int, tuple[tuple[int, ...], ...]] | None:
    """(the dim whose neighbours share a byte, the byte layout's tiles) for ``per`` fields a byte, or None."""
    order, tiles = layout.minor_to_major, layout.tiles
    if not tiles:
        return order[0], ()
    first = tiles[0]
    if any(t < 1 for tile in tiles for t in tile) or len(first) > rank:
        return None  # (``*`` combined dims, or tiles that add dims)
    if len(tiles) == 1 and first[-1] % per == 0:
        return order[0], ((*first[:-1], first[-1] // per),)
    if len(tiles) == 2 and len(first) >= 2 and rank >= 2 and len(tiles[1]) == 2 and tiles[1][1] == 1:
        p = tiles[1][0]
        if p % per or first[-2] % p:
            return None
        rows = (*first[:-2], first[-2] // per, first[-1])
        return order[1], (rows,) if p == per else (rows, (p // per, 1))
    return None


def _along(axis: int, index: slice) -> tuple[slice, ...]:
    """The index selecting ``index`` of dim ``axis`` (every index of the dims before it)."""
    return (*(slice(None),) * axis, index)


def pad_byte(pad: np.ndarray[Any, Any], grouping: Grouping) -> np.ndarray[Any, Any]:
    """The byte of padding fields: the padding element's field in each place (a 0-d ``u8`` array)."""
    field = int(pad.reshape(-1)[0]) & ((1 << grouping.bits) - 1)
    return np.array(sum(field << (j * grouping.bits) for j in range(grouping.per)), np.uint8)


def group(part: np.ndarray[Any, Any], grouping: Grouping, pad: np.ndarray[Any, Any], out: np.ndarray[Any, Any],
          scratch: np.ndarray[Any, Any]) -> None:
    """Fill ``out`` (``u8``, ``part``'s dims with the grouped one in bytes) with the fields of ``part`` (storage
    bytes) grouped into bytes; a last group past the dim's end takes padding fields. ``scratch`` has ``out.size``.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> g = grouping(_geometry(parse_shape("u4[3,4]{1,0:E(4)}")))
    >>> x = np.arange(12, dtype=np.uint8).reshape(3, 4)
    >>> y = np.empty((3, 2), np.uint8)
    >>> group(x, g, np.zeros((), np.uint8), y, np.empty(6, np.uint8))
    >>> [hex(v) for v in y.reshape(-1)]
    ['0x10', '0x32', '0x54', '0x76', '0x98', '0xba']
    """
    axis, per, bits = grouping.axis, grouping.per, grouping.bits
    field = np.uint8((1 << bits) - 1)
    size = part.shape[axis]
    full = size // per
    if full:
        target = out[_along(axis, slice(0, full))]
        np.bitwise_and(part[_along(axis, slice(0, full * per, per))], field, out=target)
        shifted = scratch[: target.size].reshape(target.shape)
        for j in range(1, per):
            np.bitwise_and(part[_along(axis, slice(j, full * per, per))], field, out=shifted)
            np.left_shift(shifted, j * bits, out=shifted)
            np.bitwise_or(target, shifted, out=target)
    if size % per:
        last = out[_along(axis, slice(full, full + 1))]
        last[...] = pad_byte(pad, grouping) & np.uint8(0xFF << (size % per * bits) & 0xFF)
        for j in range(size % per):
            last |= (part[_along(axis, slice(full * per + j, full * per + j + 1))] & field) << np.uint8(j * bits)


def ungroup(data: np.ndarray[Any, Any], grouping: Grouping, value: int, out: np.ndarray[Any, Any]) -> None:
    """Fill ``out`` (storage bytes) with the fields of the grouped bytes ``data``, each masked to ``value``.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> g = grouping(_geometry(parse_shape("u4[3,4]{1,0:E(4)}")))
    >>> x = np.empty((3, 4), np.uint8)
    >>> ungroup(np.array([[0x10, 0x32], [0x54, 0x76], [0x98, 0xba]], np.uint8), g, 15, x)
    >>> x.reshape(-1).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    """
    axis, per, bits = grouping.axis, grouping.per, grouping.bits
    size = out.shape[axis]
    for j in range(min(per, size)):
        member = out[_along(axis, slice(j, size, per))]
        fields = data[_along(axis, slice(0, member.shape[axis]))]
        np.right_shift(fields, j * bits, out=member)
        np.bitwise_and(member, np.uint8(value), out=member)


def regroup(grouped: np.ndarray[Any, Any], fields: np.ndarray[Any, Any], grouping: Grouping, pad: np.ndarray[Any, Any],
            value: int, to: bool, run: Run) -> None:
    """``group`` (``to``) or ``ungroup`` with the compiled kernel (split over ``run``'s threads), the last group past
    the dim's end by NumPy.

    ``grouped`` has ``fields``' dims with the grouped one in bytes; either may be strided.
    """
    axis, per = grouping.axis, grouping.per
    size = fields.shape[axis]
    full = size // per
    if full and fields.size:
        bytes_of_groups = grouped[_along(axis, slice(0, full))]
        first = fields[_along(axis, slice(0, full * per, per))]  # (each group's first element)
        merged = _merged_axes(bytes_of_groups.shape, bytes_of_groups.strides, first.strides) or [(1, 1, 1)]
        axes = merged if len(merged) > 1 else [(1, 0, 0), *merged]  # (the kernel loops over all axes but the last)
        axes = _inner_longest(axes)
        shape, g_steps, f_steps = (np.array(column, np.int64) for column in zip(*axes))
        kernel = dispatch.kernels().regroup
        stream = int(not to and fields.nbytes >= run.stream_bytes)  # (split fields: the conversion's output)

        def groups(part: tuple[int, int]) -> None:
            kernel(address(bytes_of_groups), address(first), shape, g_steps, f_steps, fields.strides[axis],
                   grouping.bits, value, int(to), stream, part)

        dispatch.run_parts(groups, dispatch.parts(int(shape[0]), bytes_of_groups.size, run))
    if size % per:
        last = _along(axis, slice(full, full + 1))
        if to:
            group(fields[_along(axis, slice(full * per, size))], grouping, pad, grouped[last],
                  np.empty(grouped[last].size, np.uint8))
        else:
            ungroup(grouped[last], grouping, value, fields[_along(axis, slice(full * per, size))])


SHORT_RUN = 64
"""Groups of a run the regroup kernel takes in a loop of their own: an innermost axis shorter than this, its runs not
contiguous on both sides, goes outside the longest axis (:func:`_inner_longest`)."""


def _inner_longest(axes: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The regroup kernel's axes (count, step of the groups, of the fields) with the longest innermost, where the
    innermost is shorter than ``SHORT_RUN`` and not contiguous on both sides: each innermost run is a call of the
    kernel's run loop (s4 ``[200,47934,7]{0,2,1:T(8,128)(2,1)E(4)}`` laid out, 3 groups a row: 123 ms for 46 MiB).

    >>> _inner_longest([(200, 191736, 335538), (47934, 4, 7), (3, 1, 2)])
    [(200, 191736, 335538), (3, 1, 2), (47934, 4, 7)]
    >>> _inner_longest([(200, 191736, 335538), (47934, 4, 8), (4, 1, 2)])[-1]
    (47934, 4, 8)
    """
    count, g_step, f_step = axes[-1]
    if count >= SHORT_RUN or (g_step == 1 and f_step == 1):
        return axes
    longest = max(range(len(axes)), key=lambda a: axes[a][0])
    if axes[longest][0] <= count:
        return axes
    return [axis for a, axis in enumerate(axes) if a != longest] + [axes[longest]]


def grouped_pair(src: _Geometry, dst: _Geometry) -> tuple[Shape, Shape, Grouping] | None:
    """The ``u8`` layouts whose relayout is that of two E(n) layouts grouping the same neighbours into bytes (the
    grouped dim a multiple of the group: no byte holds padding fields), and the target's grouping; else None.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> src, dst = (_geometry(parse_shape(t)) for t in ("s4[8,64,256]{1,2,0:T(8,128)(2,1)E(4)}",
    ...                                                  "s4[8,64,256]{2,1,0:T(8,128)E(4)}"))
    >>> [str(s) for s in grouped_pair(src, dst)[:2]]
    ['u8[8,64,128]{1,2,0:T(4,128)}', 'u8[8,64,128]{2,1,0:T(8,64)}']
    """
    a, b = grouping(src), grouping(dst)
    if a is None or b is None or (a.axis, a.per) != (b.axis, b.per) or src.dims[a.axis] % a.per:
        return None
    return a.shape, b.shape, b
