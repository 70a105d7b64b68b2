"""The checked facts about one array shape that its bytes depend on, and the checked inputs and outputs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..dtypes import ElementType
from ..errors import ShapeError
from ..layout import Layout
from ..shape import UNBOUNDED_SIZE, Shape
from ..text import parse_shape
from ..tiling import element_bits

_STORAGE: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)
}


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
        return parse_shape(shape)
    raise ShapeError(f"expected a Shape or shape text, got {type(shape).__name__}")


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
    return _cached_geometry(shape)  # layouts and shapes are hashable: normalized in their constructors


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
    """The padding element as a 0-d storage array in canonical form; by default all zero bits.

    Zero bits, not the value 0 converted to the type: f8e8m0fnu has no zero, and ``0`` would become NaN (0xFF).
    """
    layout = geometry.layout
    if padding_value is None:
        padding_value = layout.padding_value if layout.padded_dimensions is not None else None
        if padding_value is None or (padding_value == 0 and math.copysign(1.0, padding_value) > 0):
            return np.zeros((), geometry.storage)
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
    if geometry.etype.kind == "pred" or geometry.etype.bits < 8:
        _canonical_copy(storage, storage, geometry)


def _canonical_copy(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], geometry: _Geometry) -> None:
    """``dst[...] = src`` with pred and sub-byte elements put in canonical form on the way, in one pass (a copy,
    then :func:`_canonicalize` over it, reads the bytes twice: pred ``[87381,384]{1,0}`` 1.6x memcpy; this, 1.1).

    >>> from ..text import parse_shape
    >>> out = np.zeros(3, np.uint8)
    >>> _canonical_copy(out, np.array([0, 2, 1], np.uint8), _geometry(parse_shape("pred[3]")))
    >>> out.tolist()
    [0, 1, 1]
    """
    if geometry.etype.kind == "pred":  # (np.minimum on uint8 loops slowly; this is vectorized)
        np.not_equal(src, 0, out=dst.view(np.bool_))
    else:
        np.bitwise_and(src, np.uint8(geometry.value_mask), out=dst)


def _line_aligned(nbytes: int) -> np.ndarray[Any, Any]:
    """A new uint8 array of ``nbytes`` starting on a 64-byte cache line (as XLA aligns its buffers), so that the
    compiled kernels can stream whole lines into it.

    >>> _line_aligned(100).ctypes.data % 64, _line_aligned(100).size
    (0, 100)
    """
    room = np.empty(nbytes + 64, np.uint8)
    start = -room.ctypes.data % 64
    return room[start : start + nbytes]


def _output_bytes(out: Any, nbytes: int, limit: int, source: Any) -> np.ndarray[Any, Any]:
    """``out`` as a writable flat uint8 array of ``nbytes``, or a new one within the memory limit."""
    if out is None:
        _check_size(nbytes, limit, "the physical buffer")
        return _line_aligned(nbytes)
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
        return _line_aligned(math.prod(geometry.dims) * geometry.dtype.itemsize).view(geometry.dtype).reshape(
            geometry.dims)
    if not isinstance(out, np.ndarray) or out.dtype != geometry.dtype or out.shape != geometry.dims:
        raise ShapeError(f"out must be a {geometry.dtype} array of dims {list(geometry.dims)}")
    if not out.flags.writeable:
        raise ShapeError("out is read-only")
    if np.may_share_memory(out, source):
        raise ShapeError("out overlaps the buffer; pass a separate array")
    return out
