"""NumPy arrays to and from the exact bytes of any XLA layout, and relayout from one layout to another.

A physical buffer is the logical array with its legacy padding (``padded_dimensions``), put in physical order
(``minor_to_major`` reversed), padded, split and transposed by every tile level into the tiled physical dims
(:func:`xlashapes.layout.tiled_dimensions`), read row-major, padded to a multiple of ``L(n)`` elements and packed
into bytes: with ``E(n)`` below 8 bits each byte holds ``8/n`` elements, the first in the low-order bits, as XLA's
CPU runtime packs s4/u4/s2/u2/s1/u1/f4e2m1fn. Everything works on raw bits, so NaN payloads and -0.0 survive.

>>> import numpy as np
>>> from xlashapes import parse_shape
>>> s = parse_shape("s4[6]{0:E(4)}")
>>> x = np.array([1, 2, 3, 4, 5, -1], dtype=s.element_type.numpy_dtype)
>>> to_physical(x, s).tobytes().hex()
'2143f5'
>>> from_physical(b"\\x21\\x43\\xf5", s).tolist()
[1, 2, 3, 4, 5, -1]

The fast path splits every logical dim into the factors the tiles cut it into, so that a whole layout (all tile
levels at once) is one transposed copy between two strided views, done by NumPy with blocking for the cache.
Layouts whose tiles pad inside a dim, or merge ``*`` dims off a factor boundary, use the plain level-by-level
path (``_reference_elements``), which the tests also compare the fast path against.

With numba installed (``pip install xlashapes[fast]``), arrays of 1 MiB or more in the common layout families go
through compiled kernels instead (:mod:`xlashapes._kernels`, imported on first use, compiled once and cached on
disk): 2-d tiles ``T(R,C)`` with an optional row interleave ``(P,1)`` over any leading dims, transposes of untiled
layouts, and E(1)/E(2)/E(4) packing. They give the same bytes as the NumPy path (the tests compare the two), on
the calling thread unless :data:`THREADS` says otherwise. ``XLASHAPES_NO_NUMBA=1`` turns them off.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise, product
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .dtypes import ElementType
from .errors import ShapeError
from .layout import COMBINE_DIMENSION, Layout, apply_tile, checked_int, element_bits, tile_split
from .shape import UNBOUNDED_SIZE, Shape

__all__ = ["MEMORY_LIMIT", "THREADS", "from_physical", "relayout", "to_physical"]

MEMORY_LIMIT = 16 * 2**30
"""Largest array or buffer (bytes) these functions allocate unless ``memory_limit=`` says otherwise."""

THREADS = 1
"""Threads the compiled (numba) kernels split one large conversion over; each writes its own part of the output,
so the bytes do not depend on it. 1, the default, keeps every conversion on the calling thread."""

_SMALL_BYTES = 1 << 16  # copies this small go straight to np.copyto
_BLOCK_BYTES = 1 << 18  # working set of one cache block
_WIDEN_BYTES = 4096  # common contiguous runs up to this size become one (void) element
_SHORT_AXIS = 16  # a dst-contiguous axis this short is looped over in Python
_TILE_BYTES = 1 << 18  # one block of a transposing copy, staged through a buffer
_GATHER_STRIDE = 1024  # NumPy inner loops reading src further apart than this go through the buffer
_MAX_LOOPS = 256  # most Python-level passes over one cache block
_NUMBA_BYTES = 1 << 20  # arrays at least this large go through the compiled kernels, when numba is there
_STREAM_BYTES = 8 << 20  # kernels write outputs at least this large with streaming stores (as a big memcpy does)
_THREAD_BYTES = 4 << 20  # with THREADS > 1, conversions at least this large are split over the threads

_STORAGE: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)
}
_LE16 = np.dtype("<u2")

Chains = tuple[tuple[int, ...], ...]


# ----- public API ---------------------------------------------------------------------------------------------
def to_physical(
    value: Any,
    shape: Shape | str,
    *,
    out: Any = None,
    padding_value: Any = None,
    memory_limit: int | None = None,
) -> Any:
    """The exact bytes (a uint8 array of ``shape.byte_size()``) of ``value`` laid out as ``shape`` says.

    ``value`` must have the shape's dims and the element type's NumPy dtype (ml_dtypes for bf16, fp8, s4 ...).
    ``out`` (a writable contiguous array or bytearray of the right size) receives the bytes; an array ``out`` is
    returned itself, a bytearray as a uint8 array sharing its memory.
    ``padding_value`` is what tile, legacy and tail padding hold: default 0, or ``Layout.padding_value`` for
    legacy ``padded_dimensions`` layouts. A tuple shape takes a (nested) sequence of arrays and returns a tuple
    of buffers, one per leaf, in the same nesting.

    >>> to_physical(np.arange(6, dtype=np.uint8).reshape(2, 3), "u8[2,3]{0,1}").tolist()
    [0, 3, 1, 4, 2, 5]
    """
    array_shape = _resolved_shape(shape)
    limit = _memory_limit(memory_limit)
    if array_shape.is_tuple:
        _check_total(array_shape, limit)
        items = _tuple_items(value, array_shape, "value")
        outs = _tuple_items(out, array_shape, "out") if out is not None else [None] * len(items)
        return tuple(
            to_physical(v, sub, out=o, padding_value=padding_value, memory_limit=limit)
            for v, sub, o in zip(items, array_shape.tuple_shapes, outs)
        )
    geometry = _geometry(array_shape)
    x = _logical_storage(value, geometry)
    pad = _padding_storage(geometry, padding_value)
    buffer = _output_bytes(out, geometry.nbytes, limit, x)
    _write_physical(x, geometry, pad, buffer, limit)
    return out if isinstance(out, np.ndarray) else buffer


def from_physical(
    buffer: Any,
    shape: Shape | str,
    *,
    out: np.ndarray[Any, Any] | None = None,
    memory_limit: int | None = None,
) -> Any:
    """The logical array (the element type's NumPy dtype) held by ``buffer`` in ``shape``'s layout.

    ``buffer`` is bytes, bytearray, memoryview or a NumPy array (e.g. from ``np.fromfile``) of exactly
    ``shape.byte_size()`` bytes. A tuple shape takes a (nested) sequence of buffers, one per leaf.

    >>> from_physical(bytes([0, 3, 1, 4, 2, 5]), "u8[2,3]{0,1}").tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    array_shape = _resolved_shape(shape)
    limit = _memory_limit(memory_limit)
    if array_shape.is_tuple:
        items = _tuple_items(buffer, array_shape, "buffer")
        outs = _tuple_items(out, array_shape, "out") if out is not None else [None] * len(items)
        return tuple(
            from_physical(b, sub, out=o, memory_limit=limit)
            for b, sub, o in zip(items, array_shape.tuple_shapes, outs)
        )
    geometry = _geometry(array_shape)
    data = _input_bytes(buffer, geometry)
    result = _logical_output(out, geometry, limit, data)
    _read_physical(data, geometry, result.view(geometry.storage), limit)
    return result


def relayout(
    buffer: Any,
    source: Shape | str,
    target: Shape | str,
    *,
    out: Any = None,
    padding_value: Any = None,
    memory_limit: int | None = None,
) -> Any:
    """The bytes of ``target``'s layout holding the array that ``buffer`` holds in ``source``'s layout.

    Equal to ``to_physical(from_physical(buffer, source), target)``, but copies straight from one layout to the
    other when their tiles split the dims compatibly.

    >>> relayout(bytes([0, 3, 1, 4, 2, 5]), "u8[2,3]{0,1}", "u8[2,3]{1,0}").tolist()
    [0, 1, 2, 3, 4, 5]
    """
    src_shape, dst_shape = _resolved_shape(source), _resolved_shape(target)
    limit = _memory_limit(memory_limit)
    if src_shape.is_tuple or dst_shape.is_tuple:
        if not (src_shape.is_tuple and dst_shape.is_tuple) or len(src_shape.tuple_shapes) != len(
            dst_shape.tuple_shapes
        ):
            raise ShapeError(f"cannot relayout {src_shape} to {dst_shape}: the tuple structures differ")
        _check_total(dst_shape, limit)
        items = _tuple_items(buffer, src_shape, "buffer")
        outs = _tuple_items(out, dst_shape, "out") if out is not None else [None] * len(items)
        return tuple(
            relayout(b, s, t, out=o, padding_value=padding_value, memory_limit=limit)
            for b, s, t, o in zip(items, src_shape.tuple_shapes, dst_shape.tuple_shapes, outs)
        )
    src, dst = _geometry(src_shape), _geometry(dst_shape)
    if src.etype != dst.etype or src.dims != dst.dims:
        raise ShapeError(
            f"cannot relayout {src_shape} to {dst_shape}: element type and dimensions must be the same"
        )
    data = _input_bytes(buffer, src)
    pad = _padding_storage(dst, padding_value)
    result = _output_bytes(out, dst.nbytes, limit, data)
    if not _relayout_direct(data, src, dst, pad, result, limit):
        _check_size(math.prod(src.dims) * src.storage.itemsize, limit, f"the logical array of {src_shape}")
        logical = np.empty(src.dims, src.storage)
        _read_physical(data, src, logical, limit)
        _write_physical(logical, dst, pad, result, limit)
    return out if isinstance(out, np.ndarray) else result


# ----- shapes, limits and checked inputs ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Geometry:
    """Everything about one array shape that its bytes depend on."""

    shape: Shape
    etype: ElementType
    dims: tuple[int, ...]
    layout: Layout
    dtype: np.dtype[Any]
    storage: np.dtype[Any]
    bits: int
    tiled: tuple[int, ...]
    count: int
    aligned: int
    nbytes: int

    @property
    def packed(self) -> bool:
        """True when several elements share a byte (E(1), E(2), E(4))."""
        return self.bits < 8

    @property
    def value_mask(self) -> int:
        """The bits of one element's storage byte that hold its value (sub-byte types)."""
        return (1 << self.etype.bits) - 1 if self.etype.bits < 8 else 0xFF


def _void(width: int) -> np.dtype[Any]:
    """The plain-bytes dtype of ``width`` bytes (copied as one element)."""
    return np.dtype(f"V{width}")


def _resolved_shape(shape: Any) -> Shape:
    """``shape`` itself, or parsed from shape text."""
    if isinstance(shape, Shape):
        return shape
    if isinstance(shape, str):
        from .text import parse_shape

        return parse_shape(shape)
    raise ShapeError(f"expected a Shape or shape text, got {type(shape).__name__}")


def _memory_limit(limit: Any) -> int:
    """The per-call memory limit, or the module default."""
    if limit is None:
        limit = MEMORY_LIMIT
    number = checked_int(limit, "memory_limit")
    if number < 0:
        raise ShapeError(f"memory_limit must be >= 0, got {number}")
    return number


def _check_size(nbytes: int, limit: int, what: str) -> None:
    """ShapeError when ``nbytes`` is over the memory limit."""
    if nbytes > limit:
        raise ShapeError(
            f"{what} takes {nbytes} bytes, more than the memory limit of {limit} bytes "
            "(pass memory_limit= or set xlashapes.physical.MEMORY_LIMIT)"
        )


def _check_total(shape: Shape, limit: int) -> None:
    """ShapeError when a tuple's leaf buffers together are over the memory limit."""
    for _, leaf in shape.leaves():
        if leaf.is_array and any(size == UNBOUNDED_SIZE for size in leaf.dimensions):
            return  # the leaf itself reports it
    _check_size(shape.byte_size(), limit, f"the buffers of {shape}")


def _tuple_items(items: Any, shape: Shape, what: str) -> list[Any]:
    """The entries of a (list or tuple) ``items`` matching the tuple ``shape``."""
    if not isinstance(items, (list, tuple)):
        raise ShapeError(f"{shape} is a tuple: {what} must be a list or tuple, got {type(items).__name__}")
    if len(items) != len(shape.tuple_shapes):
        raise ShapeError(f"{shape} has {len(shape.tuple_shapes)} elements but {what} has {len(items)}")
    return list(items)


def _geometry(shape: Shape) -> _Geometry:
    """The checked geometry of an array shape; ShapeError for shapes that have no bytes to convert."""
    try:
        hash(shape)
    except TypeError:  # e.g. an unhashable value inside its layout: no caching
        return _new_geometry(shape)
    return _cached_geometry(shape)


@lru_cache(maxsize=512)
def _cached_geometry(shape: Shape) -> _Geometry:
    """``_new_geometry`` through a cache."""
    return _new_geometry(shape)


def _new_geometry(shape: Shape) -> _Geometry:
    """The geometry of ``shape``, checked from scratch."""
    if not shape.is_array:
        raise ShapeError(f"{shape} is not an array: it has no elements to convert")
    for i, size in enumerate(shape.dimensions):
        if size == UNBOUNDED_SIZE:
            raise ShapeError(f"{shape}: dimension {i} is unbounded ('?') and has no size to lay out")
    shape.validate()
    layout = shape.layout_or_default()
    if not layout.is_dense:
        raise ShapeError(f"{shape}: sparse layouts ({''.join(layout.dim_level_types)}) have no dense bytes")
    etype = shape.element_type
    dtype = etype.numpy_dtype
    if dtype.itemsize != etype.byte_width or dtype.itemsize not in (*_STORAGE, 16):
        raise ShapeError(f"{shape}: NumPy dtype {dtype} does not hold one {etype} per {etype.byte_width} bytes")
    bits = _memory_bits(etype, layout, shape)
    tiled = shape.physical_dimensions()
    count = math.prod(tiled)
    aligned = shape.physical_element_count()
    storage = _STORAGE.get(dtype.itemsize) or _void(16)
    return _Geometry(shape, etype, shape.dimensions, layout, dtype, storage, bits, tiled, count, aligned,
                     shape.byte_size())


def _memory_bits(etype: ElementType, layout: Layout, shape: Shape) -> int:
    """Bits per element in memory; ShapeError for an E(n) whose bytes are not defined exactly."""
    bits = element_bits(etype, layout)
    if bits == etype.byte_width * 8:
        return bits
    if bits in (1, 2, 4) and (etype.is_integral or etype.kind == "pred" or bits == etype.bits):
        return bits
    raise ShapeError(
        f"{shape}: E({bits}) cannot be represented exactly for {etype}: use E({etype.byte_width * 8}) "
        f"(one element per {etype.byte_width} byte(s)) or, for sub-byte types, E(1), E(2) or E(4)"
    )


def _logical_storage(value: Any, geometry: _Geometry) -> np.ndarray[Any, Any]:
    """``value`` checked against the shape, viewed as unsigned storage words (no copy)."""
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError, OverflowError) as err:
            raise ShapeError(f"cannot make an array for {geometry.shape} from {type(value).__name__}: {err}") from None
    if value.dtype != geometry.dtype:
        value = _native_order(value, geometry)
    if value.shape != geometry.dims:
        raise ShapeError(
            f"array has dims {list(value.shape)} but {geometry.shape} has {list(geometry.dims)}"
        )
    storage: np.ndarray[Any, Any] = value.view(geometry.storage)
    return storage


def _native_order(value: np.ndarray[Any, Any], geometry: _Geometry) -> np.ndarray[Any, Any]:
    """``value`` with a byte-swapped dtype of the right type, swapped to native order; else ShapeError."""
    try:
        native = value.dtype.newbyteorder("=")
    except (TypeError, ValueError):
        native = value.dtype
    if native != geometry.dtype or value.dtype == native:
        raise ShapeError(
            f"array dtype {value.dtype} does not match {geometry.etype} (NumPy dtype {geometry.dtype}); "
            f"convert it first, e.g. with .astype({geometry.dtype.name!r})"
        )
    swapped: np.ndarray[Any, Any] = value.byteswap().view(geometry.dtype)
    return swapped


def _padding_storage(geometry: _Geometry, padding_value: Any) -> np.ndarray[Any, Any]:
    """The padding element as a 0-d storage array in canonical form."""
    layout = geometry.layout
    if padding_value is None:
        padding_value = layout.padding_value if layout.padded_dimensions is not None else 0
    if isinstance(padding_value, (np.ndarray, np.generic)) and np.asarray(padding_value).dtype == geometry.dtype:
        element = np.array(padding_value, dtype=geometry.dtype)
    else:
        if np.iscomplexobj(padding_value) and not geometry.etype.is_complex:
            raise ShapeError(f"padding value {padding_value!r} is complex but {geometry.etype} is not")
        try:
            element = np.array(padding_value, dtype=geometry.dtype)
        except (TypeError, ValueError, OverflowError) as err:
            raise ShapeError(f"padding value {padding_value!r} is not a {geometry.etype}: {err}") from None
        if geometry.etype.kind in ("signed", "unsigned", "pred") and element.ndim == 0:
            if element.item() != padding_value:
                raise ShapeError(f"padding value {padding_value!r} cannot be represented exactly in {geometry.etype}")
    if element.ndim != 0:
        raise ShapeError(f"padding value must be a scalar, got an array of dims {list(element.shape)}")
    storage: np.ndarray[Any, Any] = element.view(geometry.storage).copy()
    _canonicalize(storage.reshape(1), geometry)
    return storage


def _canonicalize(storage: np.ndarray[Any, Any], geometry: _Geometry) -> None:
    """Put pred and sub-byte elements in canonical form in place: 0/1, or only the value bits set."""
    if geometry.etype.kind == "pred":
        np.minimum(storage, 1, out=storage)
    elif geometry.etype.bits < 8:
        np.bitwise_and(storage, geometry.value_mask, out=storage)


def _output_bytes(out: Any, nbytes: int, limit: int, source: Any) -> np.ndarray[Any, Any]:
    """``out`` as a writable flat uint8 array of ``nbytes``, or a new one within the memory limit."""
    if out is None:
        _check_size(nbytes, limit, "the physical buffer")
        return np.empty(nbytes, np.uint8)
    if isinstance(out, np.ndarray):
        array = out
    else:
        try:
            array = np.frombuffer(out, dtype=np.uint8)
        except (TypeError, ValueError, BufferError) as err:
            raise ShapeError(f"out must be a writable NumPy array or bytearray: {err}") from None
    if not array.flags.c_contiguous or not array.flags.writeable or array.dtype.hasobject:
        raise ShapeError("out must be a writable, C-contiguous array of plain data")
    if array.nbytes != nbytes:
        raise ShapeError(f"out has {array.nbytes} bytes but the physical buffer takes {nbytes}")
    if isinstance(source, np.ndarray) and np.may_share_memory(array, source):
        raise ShapeError("out overlaps the input; pass a separate buffer")
    return array.reshape(-1).view(np.uint8)


def _input_bytes(buffer: Any, geometry: _Geometry) -> np.ndarray[Any, Any]:
    """``buffer`` (bytes, bytearray, memoryview or array) as a flat uint8 array of exactly ``byte_size`` bytes."""
    if isinstance(buffer, np.ndarray):
        if buffer.dtype.hasobject:
            raise ShapeError("a buffer cannot be an array of Python objects")
        data = np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)
    elif isinstance(buffer, str):
        raise ShapeError("a buffer must be bytes, bytearray, memoryview or a NumPy array, not str")
    else:
        try:
            data = np.frombuffer(buffer, dtype=np.uint8)
        except (TypeError, ValueError, BufferError) as err:
            raise ShapeError(
                f"a buffer must be bytes, bytearray, memoryview or a NumPy array, not {type(buffer).__name__}: {err}"
            ) from None
    if data.size != geometry.nbytes:
        raise ShapeError(f"buffer has {data.size} bytes but {geometry.shape} takes {geometry.nbytes}")
    return data


def _logical_output(
    out: np.ndarray[Any, Any] | None, geometry: _Geometry, limit: int, source: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """``out`` checked as the logical result, or a new array within the memory limit."""
    if out is None:
        _check_size(math.prod(geometry.dims) * geometry.dtype.itemsize, limit, f"the array of {geometry.shape}")
        return np.empty(geometry.dims, geometry.dtype)
    if not isinstance(out, np.ndarray) or out.dtype != geometry.dtype or out.shape != geometry.dims:
        raise ShapeError(f"out must be a {geometry.dtype} array of dims {list(geometry.dims)}")
    if not out.flags.writeable:
        raise ShapeError("out is read-only")
    if np.may_share_memory(out, source):
        raise ShapeError("out overlaps the buffer; pass a separate array")
    return out


# ----- the two directions ---------------------------------------------------------------------------------------
def _write_physical(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], limit: int
) -> None:
    """Lay the logical storage array ``x`` out into ``buffer`` (flat uint8 of ``byte_size``)."""
    if _compiled_write(x, geometry, pad, buffer, limit):
        return
    plan = _plan(geometry.dims, geometry.layout)
    if geometry.packed:
        if plan is not None and plan.identity and x.flags.c_contiguous and geometry.count == geometry.aligned:
            _pack(x.reshape(-1), geometry, buffer)
            return
        _check_size(geometry.aligned, limit, "the unpacked elements")
        elements = np.empty(geometry.aligned, np.uint8)
        _fill_elements(x, geometry, pad, elements, plan)
        _pack(elements, geometry, buffer)
        return
    elements = buffer.view(geometry.storage)
    _fill_elements(x, geometry, pad, elements, plan)
    if geometry.etype.kind == "pred" or geometry.etype.bits < 8:
        _canonicalize(buffer, geometry)


def _fill_elements(
    x: np.ndarray[Any, Any],
    geometry: _Geometry,
    pad: np.ndarray[Any, Any],
    elements: np.ndarray[Any, Any],
    plan: _Plan | None,
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
    _transfer(view, plan.chains, source, _plain_chains(plan.extents), plan.extents)


def _read_physical(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], limit: int
) -> None:
    """Fill the logical storage array ``result`` from the physical bytes ``data``."""
    if result.size == 0 or _compiled_read(data, geometry, result, limit):
        return
    plan = _plan(geometry.dims, geometry.layout)
    if geometry.packed:
        if plan is not None and plan.identity and result.flags.c_contiguous:
            _unpack(data, geometry, result.reshape(-1))
            return
        _check_size(geometry.aligned, limit, "the unpacked elements")
        elements = np.empty(geometry.aligned, np.uint8)
        _unpack(data, geometry, elements)
    else:
        elements = data.view(geometry.storage)
    if plan is None:
        result[...] = _reference_logical(elements, geometry.dims, geometry.layout)
    else:
        target = result.reshape(result.shape + (1,) * plan.phantoms)
        _transfer(target, _plain_chains(plan.extents), _physical_view(elements, plan), plan.chains, plan.extents)
    if not geometry.packed and (geometry.etype.kind == "pred" or geometry.etype.bits < 8):
        _canonicalize(result, geometry)


def _relayout_direct(
    data: np.ndarray[Any, Any],
    src: _Geometry,
    dst: _Geometry,
    pad: np.ndarray[Any, Any],
    result: np.ndarray[Any, Any],
    limit: int,
) -> bool:
    """Copy from one layout's bytes to the other's in one pass; False when the tiles split dims incompatibly."""
    src_plan, dst_plan = _plan(src.dims, src.layout), _plan(dst.dims, dst.layout)
    if src_plan is None or dst_plan is None or math.prod(src.dims) == 0:
        return False
    phantoms = max(src_plan.phantoms, dst_plan.phantoms)
    extents = src.dims + (1,) * phantoms
    src_chains = src_plan.chains + ((1,),) * (phantoms - src_plan.phantoms)
    dst_chains = dst_plan.chains + ((1,),) * (phantoms - dst_plan.phantoms)
    if any(_common_boundaries((a, b), n) is None for a, b, n in zip(src_chains, dst_chains, extents)):
        return False
    if src.packed:
        _check_size(src.aligned, limit, "the unpacked source elements")
        src_elements = np.empty(src.aligned, np.uint8)
        _unpack(data, src, src_elements)
    else:
        src_elements = data.view(src.storage)
    if dst.packed:
        _check_size(dst.aligned, limit, "the unpacked target elements")
        dst_elements = np.empty(dst.aligned, np.uint8)
    else:
        dst_elements = result.view(dst.storage)
    dst_elements[dst.count :] = pad
    dst_view = _physical_view(dst_elements, dst_plan)
    _fill_padding(dst_view, dst_plan, pad)
    src_view = _physical_view(src_elements, src_plan)
    src_view = src_view.reshape(src_view.shape + (1,) * (phantoms - src_plan.phantoms))
    dst_view = dst_view.reshape(dst_view.shape + (1,) * (phantoms - dst_plan.phantoms))
    _transfer(dst_view, dst_chains, src_view, src_chains, extents)
    if dst.packed:
        _pack(dst_elements, dst, result)
    elif dst.etype.kind == "pred" or dst.etype.bits < 8:
        _canonicalize(result, dst)
    return True


# ----- the compiled kernels (numba, optional) ----------------------------------------------------------------------
def _kernels() -> Any:
    """The compiled kernels module, or None when numba is missing or ``XLASHAPES_NO_NUMBA`` is set (not 0)."""
    if os.environ.get("XLASHAPES_NO_NUMBA", "").strip() not in ("", "0"):
        return None
    return _import_kernels()


@lru_cache(maxsize=1)
def _import_kernels() -> Any:
    """Import :mod:`xlashapes._kernels` (and numba) once; None without numba."""
    try:
        from . import _kernels as kernels
    except ImportError:
        return None
    return kernels


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


@dataclass(frozen=True)
class _Permuted:
    """An untiled, non-identity layout: a permutation of the logical dims (``order``, major to minor)."""

    order: tuple[int, ...]


def _compiled_plan(dims: tuple[int, ...], layout: Layout) -> _Tiled | _Permuted | None:
    """The kernel family covering ``layout`` exactly, or None."""
    try:
        hash(layout)
    except TypeError:
        return None
    return _cached_compiled_plan(dims, layout)


@lru_cache(maxsize=1024)
def _cached_compiled_plan(dims: tuple[int, ...], layout: Layout) -> _Tiled | _Permuted | None:
    """``_compiled_plan`` through a cache."""
    rank = len(dims)
    if layout.padded_dimensions is not None or math.prod(dims) == 0 or rank == 0:
        return None
    order = tuple(layout.major_to_minor)
    tiles = tuple(tuple(tile) for tile in layout.tiles)
    if not tiles:
        return _Permuted(order) if order != tuple(range(rank)) else None
    first = tiles[0]
    if len(tiles) > 2 or len(first) not in (1, 2) or min(first) < 1 or order[-1] != rank - 1:
        return None
    r_size, c_size = (1, first[0]) if len(first) == 1 else first
    p = 1
    if len(tiles) == 2:
        if len(tiles[1]) != 2 or tiles[1][1] != 1 or tiles[1][0] < 1 or r_size % tiles[1][0]:
            return None
        p = tiles[1][0]
    row_dim = order[-2] if rank >= 2 else -1
    plan = _Tiled(dims[row_dim] if row_dim >= 0 else 1, dims[-1], row_dim, (r_size, c_size, p), order[:-2])
    tiled = math.prod(dims[d] for d in plan.batch) * -(-plan.rows // r_size) * -(-plan.cols // c_size)
    if tiled * r_size * c_size != math.prod(_tiled_dims(dims, layout)):
        return None  # not the structure assumed (defensive)
    return plan


def _tiled_dims(dims: Sequence[int], layout: Layout) -> list[int]:
    """The physical dims of ``dims`` under every tile of ``layout`` (legacy padding not included)."""
    physical = [dims[d] for d in layout.major_to_minor]
    for tile in layout.tiles:
        physical = apply_tile(physical, tile)
    return physical


def _c_strides(dims: Sequence[int]) -> list[int]:
    """Row-major element strides of ``dims``."""
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    return strides


def _permutation(
    shape: Sequence[int], strides: Sequence[int]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], int]:
    """(shape, strides, axis to transpose with the last or -1) of a copy into a contiguous ``shape``, axes merged."""
    axes: list[list[int]] = []
    for n, step in zip(shape, strides):
        if n == 1:
            continue
        if axes and axes[-1][1] == step * n:
            axes[-1] = [axes[-1][0] * n, step]
        else:
            axes.append([n, step])
    if not axes:
        axes = [[1, 1]]
    unit = -1
    if axes[-1][1] != 1:
        unit = next((k for k, axis in enumerate(axes) if axis[1] == 1), -1)
    merged = np.array(axes, np.int64)
    return np.ascontiguousarray(merged[:, 0]), np.ascontiguousarray(merged[:, 1]), unit


def _scratch(nbytes: int) -> np.ndarray[Any, Any]:
    """A kernel's scratch buffer for units of ``nbytes``: at least 32 KiB, with room to move partial lines."""
    return np.empty(max(nbytes + 1024, 1 << 15), np.uint8)


def _address(array: np.ndarray[Any, Any]) -> int:
    """The address of an array's first byte (the kernels take addresses; the caller keeps the array alive)."""
    return int(array.ctypes.data)


_POOLS: dict[int, ThreadPoolExecutor] = {}  # by thread count, made on first use
_POOLS_LOCK = threading.Lock()


def _parts(units: int, nbytes: int) -> list[tuple[int, int]]:
    """Ranges [first, last) of ``units`` work units, one per thread (just one below ``_THREAD_BYTES``)."""
    threads = checked_int(THREADS, "xlashapes.physical.THREADS")
    threads = max(1, min(threads, units)) if nbytes >= _THREAD_BYTES else 1
    return list(pairwise(units * k // threads for k in range(threads + 1)))


def _run_parts(run: Callable[[tuple[int, int]], None], parts: list[tuple[int, int]]) -> None:
    """``run`` each part: on this thread if there is one, else on a pool of threads (the kernels drop the GIL)."""
    if len(parts) == 1:
        run(parts[0])
        return
    with _POOLS_LOCK:
        pool = _POOLS.get(len(parts))
        if pool is None:
            pool = _POOLS[len(parts)] = ThreadPoolExecutor(len(parts), thread_name_prefix="xlashapes")
    for _ in pool.map(run, parts):
        pass


def _permute(
    kernels: Any, source: np.ndarray[Any, Any], out: np.ndarray[Any, Any], pad: Any, shape: np.ndarray[Any, Any],
    steps: np.ndarray[Any, Any], settings: list[int], unit: int,
) -> None:
    """The permute kernels: blocked transposes when an axis other than the last has source stride 1."""
    width = source.itemsize
    if unit >= 0:
        side = 8 if width == 8 else 16
        size = max(side, 256 // width) * (64 + 64 // width) * width

        def blocks(part: tuple[int, int]) -> None:
            scratch = _scratch(size)
            kernels.permute_blocks(_address(source), _address(out), _address(scratch), pad, shape, steps,
                                   np.array([*settings, unit, *part], np.int64))

        _run_parts(blocks, _parts(int(shape[unit]), out.nbytes))
    else:
        length = int(shape[-1])

        def runs(part: tuple[int, int]) -> None:
            scratch = _scratch(0)
            kernels.permute_runs(_address(source), _address(out) + part[0] * length * width, _address(scratch), pad,
                                 shape, steps, np.array([*settings, scratch.size, *part], np.int64))

        _run_parts(runs, _parts(settings[0] // length, out.nbytes))


def _compiled_choice(logical: np.ndarray[Any, Any], geometry: _Geometry) -> tuple[_Tiled | _Permuted, Any] | None:
    """The kernel plan and the kernels module for converting ``logical``, or None when no compiled kernel applies."""
    if logical.nbytes < _NUMBA_BYTES or geometry.storage.itemsize not in (1, 2, 4, 8):
        return None
    if not logical.flags.c_contiguous:
        return None
    plan = _compiled_plan(geometry.dims, geometry.layout)
    kernels = _kernels() if plan is not None else None
    if plan is None or kernels is None:
        return None
    return plan, kernels


def _compiled_write(
    x: np.ndarray[Any, Any], geometry: _Geometry, pad: np.ndarray[Any, Any], buffer: np.ndarray[Any, Any], limit: int
) -> bool:
    """Lay ``x`` out with a compiled kernel; False when none applies (or numba is missing)."""
    chosen = _compiled_choice(x, geometry)
    if chosen is None:
        return False
    plan, kernels = chosen
    if geometry.packed:
        _check_size(geometry.aligned, limit, "the unpacked elements")
        target = np.empty(geometry.aligned, np.uint8)
        stream = 0
    else:
        target = buffer
        stream = int(buffer.nbytes >= _STREAM_BYTES)
    source = x.reshape(-1)
    item = pad.reshape(1)[0]
    width = geometry.storage.itemsize
    strides = _c_strides(geometry.dims)
    if isinstance(plan, _Tiled):
        r_size, c_size, _ = plan.tile
        settings = [plan.rows, plan.cols, strides[plan.row_dim] if plan.row_dim >= 0 else 0, *plan.tile,
                    geometry.count, geometry.aligned, stream]
        batch = np.array([[geometry.dims[d] for d in plan.batch], [strides[d] for d in plan.batch]], np.int64)
        strip = -(-plan.cols // c_size) * r_size * c_size * width  # bytes of one tile row

        def tiles(part: tuple[int, int]) -> None:
            scratch = _scratch(r_size * c_size * width)
            kernels.tiled_to_physical(_address(source), _address(target) + part[0] * strip, _address(scratch), item,
                                      np.array([*settings, *part], np.int64), batch.reshape(2, -1))

        _run_parts(tiles, _parts(geometry.count * width // strip, target.nbytes))
    else:
        shape, steps, unit = _permutation([geometry.dims[d] for d in plan.order], [strides[d] for d in plan.order])
        _permute(kernels, source, target, item, shape, steps, [math.prod(geometry.dims), geometry.aligned, stream],
                 unit)
    if geometry.packed:
        _pack(target, geometry, buffer)
    elif geometry.etype.kind == "pred" or geometry.etype.bits < 8:
        _canonicalize(buffer, geometry)
    return True


def _compiled_read(
    data: np.ndarray[Any, Any], geometry: _Geometry, result: np.ndarray[Any, Any], limit: int
) -> bool:
    """Fill ``result`` from the bytes ``data`` with a compiled kernel; False when none applies."""
    chosen = _compiled_choice(result, geometry)
    if chosen is None:
        return False
    plan, kernels = chosen
    if geometry.packed:
        _check_size(geometry.aligned, limit, "the unpacked elements")
        source = np.empty(geometry.aligned, np.uint8)
        _unpack(data, geometry, source)
    else:
        source = data.view(geometry.storage)
    target = result.reshape(-1)
    out = target.view(np.uint8)
    stream = int(result.nbytes >= _STREAM_BYTES)
    dims = geometry.dims
    width = geometry.storage.itemsize
    item = np.zeros(1, geometry.storage)[0]
    if isinstance(plan, _Tiled):
        r_size, c_size, _ = plan.tile
        strides = _c_strides(dims)
        row_bytes = max(c_size * width, 4096 // r_size) // 64 * 64 + 256  # one unit and two lines, rounded
        settings = [plan.rows, plan.cols, strides[plan.row_dim] if plan.row_dim >= 0 else 0, *plan.tile, stream,
                    row_bytes]
        batch = np.array([[dims[d] for d in plan.batch], [strides[d] for d in plan.batch]], np.int64)
        special = {  # the TPU formats, compiled for their tile (for their element width only)
            (8, 128, 1, 4): kernels.tiled_from_physical_8x128, (8, 128, 2, 2): kernels.tiled_from_physical_8x128x2,
            (8, 128, 4, 1): kernels.tiled_from_physical_8x128x4,
        }
        kernel = special.get((*plan.tile, width), kernels.tiled_from_physical)
        strip = -(-plan.cols // c_size) * r_size * c_size * width  # bytes of one tile row

        def tiles(part: tuple[int, int]) -> None:
            scratch = np.empty(r_size * row_bytes, np.uint8)
            kernel(_address(source) + part[0] * strip, _address(out), _address(scratch), item,
                   np.array([*settings, *part], np.int64), batch.reshape(2, -1))

        _run_parts(tiles, _parts(geometry.count * width // strip, out.nbytes))
    else:
        physical = [dims[d] for d in plan.order]
        strides = _c_strides(physical)
        position = {d: k for k, d in enumerate(plan.order)}
        shape, steps, unit = _permutation(dims, [strides[position[d]] for d in range(len(dims))])
        _permute(kernels, source, out, item, shape, steps, [target.size, target.size, stream], unit)
    if not geometry.packed and (geometry.etype.kind == "pred" or geometry.etype.bits < 8):
        _canonicalize(result, geometry)
    return True


# ----- the plan: every physical dim as factors of logical dims --------------------------------------------------
@dataclass(frozen=True)
class _Plan:
    """A layout as one transpose: each logical axis split into factors, the factors in physical order.

    ``extents`` are the logical dims followed by ``phantoms`` axes of size 1 (dims that tiles longer than the
    rank add); ``chains[axis]`` its factor sizes, major to minor (their product is the padded size);
    ``order[k]`` is the factor (numbered along the concatenated chains) of physical factor axis ``k``.
    """

    extents: tuple[int, ...]
    chains: Chains
    order: tuple[int, ...]
    phantoms: int

    @property
    def identity(self) -> bool:
        """True when the physical elements are the logical array in row-major order, with no padding."""
        return self.order == tuple(range(len(self.order))) and all(
            math.prod(chain) == n for chain, n in zip(self.chains, self.extents)
        )


class _Atom:
    """One factor of a logical axis while the plan is being built (mutable)."""

    __slots__ = ("axis", "size")

    def __init__(self, axis: int, size: int) -> None:
        self.axis = axis
        self.size = size


def _plan(dims: tuple[int, ...], layout: Layout) -> _Plan | None:
    """The factor plan of a layout, or None when a tile pads inside a dim or merges dims off a factor boundary."""
    try:
        hash(layout)
    except TypeError:
        return _new_plan(dims, layout)
    return _cached_plan(dims, layout)


@lru_cache(maxsize=1024)
def _cached_plan(dims: tuple[int, ...], layout: Layout) -> _Plan | None:
    """``_new_plan`` through a cache."""
    return _new_plan(dims, layout)


def _new_plan(dims: tuple[int, ...], layout: Layout) -> _Plan | None:
    """The plan built by following every tile level on factors."""
    if math.prod(dims) == 0:
        return None
    sizes = layout.padded_dimensions if layout.padded_dimensions is not None else dims
    chains: list[list[_Atom]] = [[_Atom(d, sizes[d])] for d in range(len(dims))]
    extents = list(dims)

    def phantom() -> _Atom:
        atom = _Atom(len(chains), 1)
        chains.append([atom])
        extents.append(1)
        return atom

    physical: list[list[_Atom]] = [[chains[d][0]] for d in layout.major_to_minor]
    for tile in layout.tiles:
        k = len(tile)
        if k == 0:
            continue
        while len(physical) < k:
            physical.insert(0, [phantom()])
        head, covered = physical[: len(physical) - k], physical[len(physical) - k :]
        outers: list[list[_Atom]] = []
        inners: list[list[_Atom]] = []
        carry: list[_Atom] = []
        for atoms, t in zip(covered, tile):
            if t == COMBINE_DIMENSION:
                carry = carry + atoms
                continue
            split = _split_dim(carry + atoms, t, chains, phantom)
            if split is None:
                return None
            outers.append(split[0])
            inners.append(split[1])
            carry = []
        physical = head + outers + inners
    return _finished_plan(physical, chains, extents, dims, layout)


def _split_dim(
    atoms: list[_Atom], t: int, chains: list[list[_Atom]], phantom: Any
) -> tuple[list[_Atom], list[_Atom]] | None:
    """A dim's factors split into (outer, inner) with the inner ones making ``t``; None when that pads mid-dim."""
    rest = list(atoms) if atoms else [phantom()]
    inner: list[_Atom] = []
    covered = 1
    while rest and t % (covered * rest[-1].size) == 0:
        atom = rest.pop()
        inner.insert(0, atom)
        covered *= atom.size
    if covered == t:
        return rest, inner
    q = t // covered
    if not rest:  # the whole dim is smaller than the tile: pad its top factor
        top = inner[0]
        if chains[top.axis][0] is not top:
            return None
        top.size *= q
        return [], inner
    atom = rest[-1]
    if atom.size % q:
        if len(rest) != 1 or chains[atom.axis][0] is not atom:
            return None
        atom.size = -(-atom.size // q) * q
    low = _Atom(atom.axis, q)
    chain = chains[atom.axis]
    chain.insert(chain.index(atom) + 1, low)
    atom.size //= q
    return rest, [low, *inner]


def _finished_plan(
    physical: list[list[_Atom]], chains: list[list[_Atom]], extents: list[int], dims: tuple[int, ...], layout: Layout
) -> _Plan | None:
    """The immutable plan, checked against ``tiled_dimensions`` (None if they ever disagree)."""
    sizes = list(layout.padded_dimensions) if layout.padded_dimensions is not None else list(dims)
    reference = [sizes[d] for d in layout.major_to_minor]
    for tile in layout.tiles:
        reference = apply_tile(reference, tile)
    if [math.prod(a.size for a in atoms) for atoms in physical] != list(reference):
        return None
    number: dict[int, int] = {}
    for chain in chains:
        for atom in chain:
            number[id(atom)] = len(number)
    order = tuple(number[id(atom)] for atoms in physical for atom in atoms)
    if sorted(order) != list(range(len(number))):
        return None
    frozen = tuple(tuple(atom.size for atom in chain) for chain in chains)
    return _Plan(tuple(extents), frozen, order, len(extents) - len(dims))


def _plain_chains(extents: Sequence[int]) -> Chains:
    """Chains of an unsplit logical array: one factor per axis."""
    return tuple((n,) for n in extents)


def _physical_view(elements: np.ndarray[Any, Any], plan: _Plan) -> np.ndarray[Any, Any]:
    """The physical elements as the plan's factors in logical order (axis by axis, each chain major to minor)."""
    factor_sizes = [size for chain in plan.chains for size in chain]
    count = math.prod(factor_sizes)
    physical = elements[:count].reshape([factor_sizes[f] for f in plan.order])
    view: np.ndarray[Any, Any] = physical.transpose(np.argsort(plan.order))
    return view


# ----- boxes: the valid elements as strided blocks ---------------------------------------------------------------
Box = tuple[tuple[int, ...], tuple[int, ...]]


def _range_boxes(lo: int, hi: int, sizes: Sequence[int]) -> list[Box]:
    """Mixed-radix index range [lo, hi) as boxes (offsets, extents) over digits of ``sizes`` (major to minor).

    >>> _range_boxes(0, 13, (2, 8))
    [((0, 0), (1, 8)), ((1, 0), (1, 5))]
    """
    if lo >= hi:
        return []
    if not sizes:
        return [((), ())]
    below = math.prod(sizes[1:])
    lower = tuple(sizes[1:])
    first, last = lo // below, (hi - 1) // below
    if first == last:
        return [((first, *o), (1, *e)) for o, e in _range_boxes(lo - first * below, hi - first * below, lower)]
    boxes: list[Box] = []
    if lo % below:
        boxes += [((first, *o), (1, *e)) for o, e in _range_boxes(lo % below, below, lower)]
        first += 1
    end = hi // below
    if end > first:
        boxes.append(((first,) + (0,) * len(lower), (end - first, *lower)))
    if hi % below:
        boxes += [((end, *o), (1, *e)) for o, e in _range_boxes(0, hi % below, lower)]
    return boxes


def _box_slices(parts: Sequence[Box]) -> tuple[Any, ...]:
    """Index slices of one box per axis, concatenated (with ``...`` so that even 0-d views stay views)."""
    where = (*(slice(o, o + e) for offsets, extents in parts for o, e in zip(offsets, extents)), Ellipsis)
    return where


def _fill_padding(view: np.ndarray[Any, Any], plan: _Plan, pad: np.ndarray[Any, Any]) -> None:
    """Write ``pad`` to every element of the factor view that is outside the logical array."""
    valid = [_range_boxes(0, n, chain) for n, chain in zip(plan.extents, plan.chains)]
    invalid = [_range_boxes(n, math.prod(chain), chain) for n, chain in zip(plan.extents, plan.chains)]
    full = [[((0,) * len(chain), chain)] for chain in plan.chains]
    for axis in range(len(plan.chains)):
        if not invalid[axis]:
            continue
        for parts in product(*valid[:axis], invalid[axis], *full[axis + 1 :]):
            np.copyto(view[_box_slices(parts)], pad)


def _weights(chain: Sequence[int]) -> list[int]:
    """The logical stride of each factor: the product of the factors below it."""
    weights = [1] * len(chain)
    acc = 1
    for j in range(len(chain) - 1, -1, -1):
        weights[j] = acc
        acc *= chain[j]
    return weights


def _common_boundaries(chains: Sequence[Sequence[int]], n: int) -> tuple[int, ...] | None:
    """Factor boundaries (ascending weights below ``n``) refining all ``chains``, or None if there are none."""
    bounds = sorted({1} | {w for chain in chains for w in _weights(chain) if w < n})
    if any(hi % lo for lo, hi in pairwise(bounds)):
        return None
    return tuple(bounds)


def _refined_sizes(bounds: Sequence[int], n: int) -> tuple[int, ...]:
    """Factor sizes (major to minor) for boundaries ``bounds`` covering [0, n)."""
    sizes = [-(-n // bounds[-1])]
    sizes += [bounds[i + 1] // bounds[i] for i in range(len(bounds) - 2, -1, -1)]
    return tuple(sizes)


def _split_view(
    view: np.ndarray[Any, Any], chains: Chains, bounds: Sequence[Sequence[int]], extents: Sequence[int]
) -> np.ndarray[Any, Any]:
    """The factor view re-split at common boundaries (only in-range positions are ever indexed)."""
    shape: list[int] = []
    strides: list[int] = []
    first = 0
    for chain, axis_bounds, n in zip(chains, bounds, extents):
        weights = _weights(chain)
        kept = [(w, view.strides[first + j]) for j, w in enumerate(weights) if w < n]
        for bound, size in zip(reversed(axis_bounds), _refined_sizes(axis_bounds, n)):
            owner = next(((w, s) for w, s in kept if w <= bound), None)
            shape.append(size)
            strides.append(0 if owner is None else owner[1] * (bound // owner[0]))
        first += len(chain)
    return as_strided(view, shape=tuple(shape), strides=tuple(strides))


def _transfer(
    dst: np.ndarray[Any, Any], dst_chains: Chains, src: np.ndarray[Any, Any], src_chains: Chains,
    extents: Sequence[int],
) -> None:
    """Copy every logical element from one factor view to another (their chains must have common boundaries)."""
    bounds = []
    for a, b, n in zip(dst_chains, src_chains, extents):
        common = _common_boundaries((a, b), n)
        if common is None:
            raise AssertionError("transfer between factor views with no common refinement")  # callers check
        bounds.append(common)
    dst_split = _split_view(dst, dst_chains, bounds, extents)
    src_split = _split_view(src, src_chains, bounds, extents)
    boxes = [_range_boxes(0, n, _refined_sizes(b, n)) for b, n in zip(bounds, extents)]
    for parts in product(*boxes):
        where = _box_slices(parts)
        _copy(dst_split[where], src_split[where])


# ----- the copy engine ---------------------------------------------------------------------------------------------
def _copy(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any]) -> None:
    """``dst[...] = src`` for same-dtype strided views, organised for NumPy's loops and the cache."""
    if dst.size == 0:
        return
    d, s = _normalized(dst, src)
    d, s = _widened(d, s)
    if d.ndim <= 1 or d.nbytes <= _SMALL_BYTES or d.itemsize >= 64:
        np.copyto(d, s)
        return
    loop = _looped_axes(d.shape)
    inner = max(i for i in range(d.ndim) if i not in loop)
    if abs(s.strides[inner]) > _GATHER_STRIDE:
        _copy_staged(d, s)
    else:
        _copy_looped(d, s, loop)


def _normalized(
    dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Both views without size-1 axes, axes sorted by dst stride, axes contiguous in both merged."""
    axes = sorted(
        ((n, ds, ss) for n, ds, ss in zip(dst.shape, dst.strides, src.strides) if n != 1),
        key=lambda axis: -abs(axis[1]),
    )
    merged: list[tuple[int, int, int]] = []
    for n, ds, ss in axes:
        if merged and merged[-1][1] == ds * n and merged[-1][2] == ss * n:
            merged[-1] = (merged[-1][0] * n, ds, ss)
        else:
            merged.append((n, ds, ss))
    shape = tuple(a[0] for a in merged)
    return (
        as_strided(dst, shape=shape, strides=tuple(a[1] for a in merged)),
        as_strided(src, shape=shape, strides=tuple(a[2] for a in merged)),
    )


def _widened(
    d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A run contiguous in both (the last axis) viewed as one element, so NumPy loops over the next axis."""
    if d.ndim == 0:
        return d, s
    e = d.itemsize
    width = d.shape[-1] * e
    if d.strides[-1] != e or s.strides[-1] != e or width > _WIDEN_BYTES or d.shape[-1] == 1:
        return d, s
    dtype = _STORAGE.get(width) or _void(width)
    return d.view(dtype)[..., 0], s.view(dtype)[..., 0]


def _looped_axes(shape: Sequence[int]) -> list[int]:
    """Short dst-minor axes (interleaves) to loop over in Python, so that NumPy's inner loop is long.

    NumPy's copy loops run along dst's most minor axis (axes are sorted by dst stride); while that axis is short,
    it is looped over here instead.
    """
    loop: list[int] = []
    rest = list(range(len(shape)))
    while len(rest) > 1 and shape[rest[-1]] < _SHORT_AXIS:
        if math.prod(shape[i] for i in loop) * shape[rest[-1]] > _MAX_LOOPS:
            break
        loop.append(rest.pop())
    return loop


def _copy_looped(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], loop: Sequence[int] | None = None) -> None:
    """Copy with the short dst-minor axes ``loop`` looped in Python, one cache block (of the outer axis) at a time."""
    if loop is None:
        loop = _looped_axes(d.shape)
    if not loop:
        np.copyto(d, s)
        return
    order = [*loop, *(i for i in range(d.ndim) if i not in loop)]
    d, s = d.transpose(order), s.transpose(order)
    k = len(loop)
    per = max(1, _BLOCK_BYTES // max(1, d.nbytes // d.shape[k]))
    for start in range(0, d.shape[k], per):
        block = (slice(None),) * k + (slice(start, start + per),)
        d_block, s_block = d[block], s[block]
        for index in product(*(range(n) for n in d.shape[:k])):
            np.copyto(d_block[index], s_block[index])


def _copy_staged(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> None:
    """A transposing copy through a small buffer in src order, block by block of dst's and src's outer axes.

    Reading src into the buffer runs along src's contiguous runs, writing dst from the buffer along dst's; the
    buffer's padded rows keep the gather free of cache-set conflicts.
    """
    p = 0
    q = max(range(d.ndim), key=lambda i: (abs(s.strides[i]), -i))
    n_p, n_q = d.shape[p], d.shape[q]
    per_index = d.nbytes // (n_p * (n_q if q != p else 1))
    budget = max(1, _TILE_BYTES // max(1, per_index))
    if q == p:
        bp = bq = min(n_p, budget)
    else:
        bp = min(n_p, max(1, math.isqrt(budget)))
        bq = min(n_q, max(1, budget // bp))
        bp = min(n_p, max(1, budget // bq))
    src_order = sorted(range(d.ndim), key=lambda i: -abs(s.strides[i]))
    shape = list(d.shape)
    shape[p], shape[q] = bp, bq
    buffer_shape = [shape[i] for i in src_order]
    if buffer_shape[-1] * d.itemsize >= 64:
        buffer_shape[-1] += max(1, 64 // d.itemsize)
    storage = np.empty(buffer_shape, d.dtype)
    back = tuple(np.argsort(src_order))
    loop = _looped_axes(shape)
    for p0 in range(0, n_p, bp):
        for q0 in range(0, n_q, bq) if q != p else (0,):
            where = [slice(None)] * d.ndim
            where[p] = slice(p0, p0 + bp)
            if q != p:
                where[q] = slice(q0, q0 + bq)
            d_block, s_block = d[tuple(where)], s[tuple(where)]
            buffer = storage[tuple(slice(0, s_block.shape[i]) for i in src_order)]
            np.copyto(buffer, s_block.transpose(src_order))
            _copy_looped(d_block, buffer.transpose(back), loop)


# ----- packing sub-byte elements ---------------------------------------------------------------------------------
def _codes(elements: np.ndarray[Any, Any], geometry: _Geometry) -> np.ndarray[Any, Any]:
    """The E-bit field of each element: its value bits, sign-extended for a signed type in a wider field (pred: 0/1)."""
    if geometry.etype.kind == "pred":
        return np.asarray(elements != 0, dtype=np.uint8)
    if geometry.bits == geometry.etype.bits:
        return elements  # _pack masks to the field itself
    field = (1 << geometry.bits) - 1
    value = geometry.value_mask
    codes: np.ndarray[Any, Any] = elements & np.uint8(value)
    if geometry.etype.is_signed:
        sign = (codes >> (geometry.etype.bits - 1)) & 1
        codes |= sign * np.uint8(field & ~value)
    return codes


def _pack(elements: np.ndarray[Any, Any], geometry: _Geometry, out: np.ndarray[Any, Any]) -> None:
    """Pack uint8 element storage into ``out``, E bits each, the first element in the low-order bits."""
    codes = np.ascontiguousarray(_codes(elements, geometry))
    bits = geometry.bits
    n = codes.size
    kernels = _kernels() if n >= _NUMBA_BYTES else None
    if kernels is not None:
        stream = int(out.nbytes >= _STREAM_BYTES)

        def words(part: tuple[int, int]) -> None:
            scratch = _scratch(0)
            kernels.pack(_address(codes), n, _address(out), out.nbytes, _address(scratch), scratch.size, bits, stream,
                         part)

        _run_parts(words, _parts(n * bits // 64, out.nbytes))
    elif bits == 4:
        _pack4(codes, out)
    elif bits == 1:
        out[...] = np.packbits(codes & 1, bitorder="little")
    else:
        per = 8 // bits
        field = (1 << bits) - 1
        full = n // per
        grid = codes[: full * per].reshape(full, per)
        target = out[:full]
        np.bitwise_and(grid[:, 0], field, out=target)
        for j in range(1, per):
            target |= (grid[:, j] & field) << (j * bits)
        if n % per:
            out[full] = _tail_byte(codes[full * per :], bits)


def _tail_byte(codes: np.ndarray[Any, Any], bits: int) -> int:
    """The last, partly filled byte: the remaining elements from the low-order bits, zeros above."""
    field = (1 << bits) - 1
    return sum((int(c) & field) << (j * bits) for j, c in enumerate(codes))


def _pack4(codes: np.ndarray[Any, Any], out: np.ndarray[Any, Any]) -> None:
    """Pairs of elements into bytes: ``(a & 15) | (b & 15) << 4`` via 16-bit words, block by block."""
    pairs = codes.size // 2
    words = codes[: 2 * pairs].view(_LE16)
    step = max(64, _BLOCK_BYTES // 4)
    scratch = np.empty(min(step, max(pairs, 1)), np.uint16)
    for start in range(0, pairs, step):
        block = words[start : start + step]
        tmp = scratch[: block.size]
        np.bitwise_and(block, 0x0F0F, out=tmp)
        np.multiply(tmp, np.uint16(0x0110), out=tmp)  # high byte = a | b << 4
        np.right_shift(tmp, 8, out=tmp)
        np.copyto(out[start : start + block.size], tmp, casting="unsafe")
    if codes.size % 2:
        out[pairs] = codes[-1] & 0x0F


def _unpack(data: np.ndarray[Any, Any], geometry: _Geometry, elements: np.ndarray[Any, Any]) -> None:
    """Unpack E-bit fields into canonical uint8 element storage (``elements`` is 1-D, contiguous)."""
    bits = geometry.bits
    value = geometry.value_mask
    n = elements.size
    kernels = _kernels() if n >= _NUMBA_BYTES else None
    if kernels is not None:
        stream = int(elements.nbytes >= _STREAM_BYTES)

        def words(part: tuple[int, int]) -> None:
            scratch = _scratch(0)
            kernels.unpack(_address(data), _address(elements), n, _address(scratch), scratch.size, bits, value,
                           stream, part)

        _run_parts(words, _parts(n * bits // 64, elements.nbytes))
    elif bits == 4:
        _unpack4(data, elements, value)
    elif bits == 1:
        elements[...] = np.unpackbits(data, count=n, bitorder="little")
    else:
        per = 8 // bits
        for j in range(per):
            lane = elements[j::per]
            np.bitwise_and(data[: lane.size] >> (j * bits), value, out=lane)


def _unpack4(data: np.ndarray[Any, Any], elements: np.ndarray[Any, Any], value: int) -> None:
    """Bytes into pairs of elements ``b & 15, b >> 4`` (masked to the value bits) via 16-bit words."""
    n = elements.size
    pairs = n // 2
    words = elements[: 2 * pairs].view(_LE16)
    mask = np.uint16(value | value << 8)
    step = max(64, _BLOCK_BYTES // 4)
    scratch = np.empty(min(step, max(pairs, 1)), np.uint16)
    for start in range(0, pairs, step):
        block = words[start : start + step]
        tmp = scratch[: block.size]
        np.copyto(block, data[start : start + block.size], casting="unsafe")
        np.left_shift(block, 4, out=tmp)
        np.bitwise_or(block, tmp, out=block)
        np.bitwise_and(block, mask, out=block)
    if n % 2:
        elements[-1] = data[pairs] & value & 0x0F


# ----- the plain level-by-level path ------------------------------------------------------------------------------
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
    sizes = layout.padded_dimensions if layout.padded_dimensions is not None else tuple(dims)
    levels = [[sizes[d] for d in layout.major_to_minor]]
    for tile in layout.tiles:
        levels.append(apply_tile(levels[-1], tile))
    a = elements[: math.prod(levels[-1])].reshape(levels[-1])
    for tile, before in zip(reversed(layout.tiles), reversed(levels[:-1])):
        a = _reference_untile(a, tile, before)
    a = a.transpose(np.argsort(layout.major_to_minor))
    where = (*(slice(0, n) for n in dims), Ellipsis)
    return np.asarray(a[where])
