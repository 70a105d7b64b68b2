"""XLA's element-wise binary ops on NumPy arrays: ``add`` ... ``compare`` with XLA's broadcasting and semantics.

``binary_op(op, x, y, broadcast_dimensions, direction)`` computes what XLA computes (CPU runtime, HLO evaluator);
the fifteen wrappers (``add``, ``subtract`` ... ``atan2``, ``compare``) name one op each. The broadcasting rules
themselves live in :mod:`xlashapes.broadcast` (``broadcast_shape``, ``binary_op_shape``, ``lower_binary``).

Semantics, op by op: integers wrap around modulo 2^bits; integer division truncates toward zero, ``x / 0`` is -1
(all bits set for unsigned types) and ``INT_MIN / -1`` is ``INT_MIN``; the remainder takes the dividend's sign,
``x % 0`` is ``x`` and ``INT_MIN % -1`` is 0; shift amounts are read as unsigned and an amount of at least the bit
width gives 0 (``shift-left``, ``shift-right-logical``) or the sign fill (``shift-right-arithmetic``);
``shift-right-arithmetic`` on unsigned types and ``shift-right-logical`` on signed ones reinterpret the bits;
``and``/``or``/``xor`` are bitwise on integers and logical on ``pred``, where ``add``/``maximum`` are ``or`` and
``multiply``/``minimum`` are ``and``; ``maximum``/``minimum`` propagate NaN and order -0.0 below +0.0; floats
narrower than 32 bits are computed in f32 and rounded once (NaN becomes -0.0 in types without NaN, such as
f4e2m1fn); ``compare`` gives ``pred`` with IEEE semantics (NaN is unordered). Complex operands allow add,
subtract, multiply, divide, power and compare EQ/NE.

Two documented decisions where XLA's backends disagree among themselves:

* Integer ``power`` is exact modulo 2^bits for non-negative exponents; a negative exponent gives 1 for base 1,
  +-1 for base -1 and 0 otherwise. (XLA:CPU uses only the low 6 bits of the exponent and reads an unsigned
  exponent with its top bit set as negative; the HLO evaluator gives 0 for ``(-1) ** -k``; where they disagree
  this module gives the exact integer result.)
* Float ``divide`` is correctly rounded; XLA:CPU rewrites ``x / broadcast(y)`` into ``x * broadcast(1 / y)``
  after lowering, which can be 1 ulp off.

>>> import numpy as np
>>> divide(np.array([7, -7], np.int32), np.array([2, 0], np.int32)).tolist()
[3, -1]
>>> compare(np.array([1.0, np.nan], np.float32), np.float32(1), "EQ").tolist()
[True, False]
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ._ints import checked_int
from ._opcodes import BINARY_OPS, COMPARISON_DIRECTIONS, SHIFTS, canonical_direction, canonical_op
from ._typing import Array
from .broadcast import binary_op_shape, broadcast_array, checked_broadcast_dimensions
from .dtypes import PRED, SIGNED, ElementType, element_type
from .errors import ShapeError
from .layout import default_layout
from .shape import Shape
from .text import shape_text

__all__ = [
    "BINARY_OPS",
    "COMPARISON_DIRECTIONS",
    "DEFAULT_MAX_ELEMENTS",
    "add",
    "and_",
    "atan2",
    "binary_op",
    "canonical_direction",
    "canonical_op",
    "compare",
    "divide",
    "maximum",
    "minimum",
    "multiply",
    "or_",
    "power",
    "remainder",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "subtract",
    "xor",
]

DEFAULT_MAX_ELEMENTS = 1 << 24
"""Largest result (in elements) ``binary_op`` computes unless given ``max_elements``; read at call time."""


_NUMPY_SCALAR_EXAMPLES = {bool: "np.bool_", int: "np.int32", float: "np.float32", complex: "np.complex64"}


def _as_array(value: object, side: str) -> Array:
    """``value`` as a plain native-byte-order ndarray; Python scalars are refused (they have no XLA type)."""
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        example = _NUMPY_SCALAR_EXAMPLES.get(type(value), "np.float32")
        raise ShapeError(
            f"{side} is a Python {type(value).__name__}, which has no XLA element type; give a NumPy array or "
            f"scalar of the other operand's dtype, e.g. {example}({value!r})")
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "__array__"):
        try:
            array = np.asarray(value)
        except Exception as err:  # any failure to convert is bad input
            raise ShapeError(f"{side} cannot be converted to a NumPy array: {err}") from None
    else:
        raise ShapeError(f"{side} must be a NumPy array, got {type(value).__name__}")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def _array_shape(array: Array) -> Shape:
    """The Shape of a NumPy array (its dtype's element type, its sizes, the default layout)."""
    dims = tuple(int(d) for d in array.shape)
    return Shape(element_type(array.dtype), dims, (), default_layout(len(dims)))


def _element_limit(max_elements: object) -> int:
    if max_elements is None:
        return int(DEFAULT_MAX_ELEMENTS)
    limit = checked_int(max_elements, "max_elements")
    if limit < 0:
        raise ShapeError(f"max_elements must be non-negative, got {limit}")
    return limit


def binary_op(
    op: str,
    x: Any,
    y: Any,
    broadcast_dimensions: Sequence[int] | None = None,
    direction: str | None = None,
    *,
    max_elements: int | None = None,
) -> Array:
    """XLA's element-wise ``op`` on NumPy arrays ``x`` and ``y`` with XLA's broadcasting and semantics.

    Both arrays must have the same dtype (ml_dtypes types such as bfloat16 included); results larger than
    ``max_elements`` (default ``DEFAULT_MAX_ELEMENTS``) are refused before anything is allocated.

    >>> binary_op("add", np.array([[1, 2, 3], [4, 5, 6]], np.int32), np.array([7, 8, 9], np.int32), [1])
    array([[ 8, 10, 12],
           [11, 13, 15]], dtype=int32)
    """
    name = canonical_op(op)
    how = canonical_direction(name, direction)
    a, b = _as_array(x, "x"), _as_array(y, "y")
    left, right = _array_shape(a), _array_shape(b)
    dims = checked_broadcast_dimensions(broadcast_dimensions)
    result = binary_op_shape(name, left, right, dims, how)
    sizes = result.dimensions
    count = math.prod(sizes)
    limit = _element_limit(max_elements)
    if count > limit:
        pair = f"{shape_text(left, print_layout=False)} and {shape_text(right, print_layout=False)}"
        raise ShapeError(
            f"{name} of {pair} would produce {count} elements ({sizes}), more than the limit of "
            f"{limit}; pass max_elements= to allow it")
    etype = left.element_type
    return _evaluate(name, how, broadcast_array(a, sizes, dims), broadcast_array(b, sizes, dims), etype)


def _evaluate(
    op: str, direction: str | None, a: Array, b: Array, etype: ElementType
) -> Array:
    with np.errstate(all="ignore"):
        if etype.kind == PRED:
            return _pred_op(op, direction, a, b)
        if etype.is_integral:
            return _integer_op(op, direction, a, b, etype)
        if etype.is_complex:
            return _complex_op(op, direction, a, b)
        return _float_op(op, direction, a, b, etype)


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "EQ": operator.eq, "NE": operator.ne, "LT": operator.lt, "LE": operator.le, "GT": operator.gt,
    "GE": operator.ge,
}


def _compared(direction: str | None, a: Array, b: Array) -> Array:
    assert direction is not None
    return np.asarray(_COMPARISONS[direction](a, b), dtype=np.bool_)


def _pred_op(op: str, direction: str | None, a: Array, b: Array) -> Array:
    if op == "compare":
        return _compared(direction, a, b)
    if op in ("add", "maximum", "or"):
        return np.asarray(np.logical_or(a, b), dtype=np.bool_)
    if op in ("multiply", "minimum", "and"):
        return np.asarray(np.logical_and(a, b), dtype=np.bool_)
    return np.asarray(np.logical_xor(a, b), dtype=np.bool_)


# ----- integers: values are int64 (signed) / uint64 (unsigned); bit patterns are uint64 below 2^bits -----

def _mask(bits: int) -> np.uint64:
    return cast(np.uint64, np.uint64((1 << bits) - 1))


def _pattern(values: Array, bits: int) -> Array:
    """The low ``bits`` bits of ``values`` (two's complement), as uint64."""
    wide = values.view(np.uint64) if values.dtype == np.int64 else values.astype(np.uint64)
    return np.asarray(wide & _mask(bits))


def _signed(pattern: Array, bits: int) -> Array:
    """A ``bits``-bit two's complement pattern read as a signed int64 value."""
    values = np.asarray(pattern, dtype=np.uint64).view(np.int64)
    if bits == 64:
        return values
    return np.where(values >= (1 << (bits - 1)), values - (1 << bits), values)


def _integer_values(array: Array, etype: ElementType) -> Array:
    return array.astype(np.int64 if etype.kind == SIGNED else np.uint64)


def _integer_result(wide: Array, etype: ElementType, dtype: np.dtype[Any]) -> Array:
    pattern = _pattern(np.asarray(wide), etype.bits)
    values = _signed(pattern, etype.bits) if etype.kind == SIGNED else pattern
    return values.astype(dtype)


def _integer_op(
    op: str, direction: str | None, a: Array, b: Array, etype: ElementType
) -> Array:
    va, vb = _integer_values(a, etype), _integer_values(b, etype)
    if op == "compare":
        return _compared(direction, va, vb)
    bits = etype.bits
    pa, pb = _pattern(va, bits), _pattern(vb, bits)
    wide: Array
    if op == "maximum":
        wide = np.maximum(va, vb)
    elif op == "minimum":
        wide = np.minimum(va, vb)
    elif op in _PATTERN_OPS:
        wide = _PATTERN_OPS[op](pa, pb)
    elif op in SHIFTS:
        wide = _shifted(op, pa, pb, bits)
    elif op in ("divide", "remainder"):
        wide = _divided(op, va, vb, etype)
    else:
        wide = _integer_power(pa, vb, va, etype)
    return _integer_result(wide, etype, a.dtype)


_PATTERN_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def _shifted(op: str, pa: Array, pb: Array, bits: int) -> Array:
    """Shifts with XLA's saturation: the amount is unsigned and ``amount >= bits`` shifts everything out."""
    out_of_range = pb >= np.uint64(bits)
    amount = np.where(out_of_range, np.uint64(0), pb)
    if op == "shift-left":
        return np.where(out_of_range, np.uint64(0), pa << amount)
    if op == "shift-right-logical":
        return np.where(out_of_range, np.uint64(0), pa >> amount)
    values = _signed(pa, bits)
    filled = np.where(values < 0, np.int64(-1), np.int64(0))
    return np.where(out_of_range, filled, values >> amount.astype(np.int64))


def _divided(op: str, va: Array, vb: Array, etype: ElementType) -> Array:
    """C-style truncating division / remainder with XLA's answers for ``x / 0`` and ``INT_MIN / -1``."""
    zero = vb == 0
    if etype.kind != SIGNED:
        safe = np.where(zero, np.uint64(1), vb)
        if op == "divide":
            return np.where(zero, _mask(etype.bits), va // safe)
        return np.where(zero, va, va % safe)
    smallest = -(1 << (etype.bits - 1))
    overflow = (va == smallest) & (vb == -1)
    safe = np.where(zero | overflow, np.int64(1), vb)
    floor = va // safe
    quotient = floor + ((va - floor * safe != 0) & ((va < 0) != (safe < 0)))
    if op == "divide":
        return np.asarray(np.where(zero, np.int64(-1), np.where(overflow, np.int64(smallest), quotient)))
    return np.asarray(np.where(zero, va, np.where(overflow, np.int64(0), va - quotient * safe)))


def _integer_power(
    base: Array, exponent: Array, base_values: Array,
    etype: ElementType,
) -> Array:
    """Exact ``base ** exponent`` modulo 2^64 by squaring; negative exponents give 1, +-1 (base -1) or 0."""
    negative = exponent < 0 if etype.kind == SIGNED else np.zeros(exponent.shape, dtype=bool)
    remaining = np.where(negative, 0, exponent).astype(np.uint64)
    result = np.ones(base.shape, dtype=np.uint64)
    square = base.astype(np.uint64)
    while remaining.any():
        result = np.where(remaining & np.uint64(1), result * square, result)
        square = square * square
        remaining = remaining >> np.uint64(1)
    if etype.kind != SIGNED:
        return result
    odd = (exponent & 1) == 1
    unit = np.where(base_values == 1, 1, np.where(base_values == -1, np.where(odd, -1, 1), 0)).astype(np.int64)
    return np.where(negative, unit, _signed(_pattern(result, etype.bits), etype.bits))


# ----- floating point -----


def _float_op(
    op: str, direction: str | None, a: Array, b: Array, etype: ElementType
) -> Array:
    work = np.float64 if etype.bits > 32 else np.float32
    fa, fb = a.astype(work), b.astype(work)
    if op == "compare":
        return _compared(direction, fa, fb)
    if op == "maximum":
        result = _float_extremum(fa, fb, larger=True)
    elif op == "minimum":
        result = _float_extremum(fa, fb, larger=False)
    else:
        result = _FLOAT_OPS[op](fa, fb)
    return _rounded(np.asarray(result), a.dtype)


@functools.cache
def _has_nan(dtype: np.dtype[Any]) -> bool:
    return bool(np.isnan(np.array(np.nan, np.float32).astype(dtype).astype(np.float32)))


def _rounded(values: Array, dtype: np.dtype[Any]) -> Array:
    """``values`` rounded to ``dtype``; in types without NaN (f4e2m1fn, f6...) NaN becomes -0.0, as XLA has it."""
    if dtype.itemsize < 2 and not _has_nan(dtype):
        values = np.where(np.isnan(values), -0.0, values)
    return values.astype(dtype)


_FLOAT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide, "remainder": np.fmod,
    "power": np.power, "atan2": np.arctan2,
}


def _float_extremum(a: Array, b: Array, *, larger: bool) -> Array:
    """XLA's maximum/minimum: NaN wins (the lhs one first) and -0.0 counts as smaller than +0.0."""
    pick_a = a > b if larger else a < b
    tie = a == b
    pick_a |= tie & (np.signbit(b) if larger else np.signbit(a))
    result = np.where(pick_a, a, b)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, result))


def _complex_op(
    op: str, direction: str | None, a: Array, b: Array
) -> Array:
    if op == "compare":
        return _compared(direction, a, b)
    if op == "power":
        return _complex_power(a, b)
    return np.asarray(_FLOAT_OPS[op](a, b)).astype(a.dtype)


def _complex_power(a: Array, b: Array) -> Array:
    """XLA's complex power: |a|^c * exp(-d*arg(a)) * cis(c*arg(a) + d*ln|a|); 1 when a == 1 or b == 0."""
    x, y, c, d = a.real, a.imag, b.real, b.imag
    squared = x * x + y * y
    angle = np.arctan2(y, x)
    magnitude = np.power(squared, c / 2) * np.exp(-d * angle)
    phase = c * angle + d / 2 * np.log(squared)
    result = magnitude * np.cos(phase) + 1j * (magnitude * np.sin(phase))
    return np.where((a == 1) | (b == 0), 1, result).astype(a.dtype)


# ----------------------------------------------------------------------------------------------------
# One function per op
# ----------------------------------------------------------------------------------------------------


def add(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
        max_elements: int | None = None) -> Array:
    """XLA ``add``; integers wrap around, on pred it is logical or.

    >>> add(np.array([127, 1], np.int8), np.int8(1)).tolist()
    [-128, 2]
    """
    return binary_op("add", x, y, broadcast_dimensions, max_elements=max_elements)


def subtract(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
             max_elements: int | None = None) -> Array:
    """XLA ``subtract`` (not for pred); integers wrap around.

    >>> subtract(np.array([0, 5], np.uint8), np.uint8(1)).tolist()
    [255, 4]
    """
    return binary_op("subtract", x, y, broadcast_dimensions, max_elements=max_elements)


def multiply(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
             max_elements: int | None = None) -> Array:
    """XLA ``multiply``; on pred it is logical and.

    >>> multiply(np.array([True, True]), np.array([True, False])).tolist()
    [True, False]
    """
    return binary_op("multiply", x, y, broadcast_dimensions, max_elements=max_elements)


def divide(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
           max_elements: int | None = None) -> Array:
    """XLA ``divide``: integers truncate toward zero (-7 / 2 == -3), ``x / 0`` is -1.

    >>> divide(np.array([-7, 7], np.int32), np.array([2, 0], np.int32)).tolist()
    [-3, -1]
    """
    return binary_op("divide", x, y, broadcast_dimensions, max_elements=max_elements)


def remainder(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
              max_elements: int | None = None) -> Array:
    """XLA ``remainder``: the dividend's sign (-7 % 2 == -1, like C and fmod), ``x % 0`` is ``x``.

    >>> remainder(np.array([-7, 5], np.int32), np.array([2, 0], np.int32)).tolist()
    [-1, 5]
    """
    return binary_op("remainder", x, y, broadcast_dimensions, max_elements=max_elements)


def power(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
          max_elements: int | None = None) -> Array:
    """XLA ``power``; integer results wrap around, negative integer exponents give 0 except for bases +-1.

    >>> power(np.array([2, 2, -1], np.int32), np.array([10, -1, -3], np.int32)).tolist()
    [1024, 0, -1]
    """
    return binary_op("power", x, y, broadcast_dimensions, max_elements=max_elements)


def maximum(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
            max_elements: int | None = None) -> Array:
    """XLA ``maximum``: NaN propagates, +0.0 beats -0.0.

    >>> maximum(np.array([np.nan, -0.0], np.float32), np.array([1, 0], np.float32)).tolist()
    [nan, 0.0]
    """
    return binary_op("maximum", x, y, broadcast_dimensions, max_elements=max_elements)


def minimum(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
            max_elements: int | None = None) -> Array:
    """XLA ``minimum``: NaN propagates, -0.0 beats +0.0.

    >>> minimum(np.array([np.nan, 0.0], np.float32), np.array([1, -0.0], np.float32)).tolist()
    [nan, -0.0]
    """
    return binary_op("minimum", x, y, broadcast_dimensions, max_elements=max_elements)


def and_(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
         max_elements: int | None = None) -> Array:
    """XLA ``and``: logical on pred, bitwise on integers.

    >>> and_(np.array([12], np.int32), np.array([10], np.int32)).tolist()
    [8]
    """
    return binary_op("and", x, y, broadcast_dimensions, max_elements=max_elements)


def or_(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
        max_elements: int | None = None) -> Array:
    """XLA ``or``: logical on pred, bitwise on integers.

    >>> or_(np.array([12], np.int32), np.array([10], np.int32)).tolist()
    [14]
    """
    return binary_op("or", x, y, broadcast_dimensions, max_elements=max_elements)


def xor(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
        max_elements: int | None = None) -> Array:
    """XLA ``xor``: logical on pred, bitwise on integers.

    >>> xor(np.array([True, True]), np.array([True, False])).tolist()
    [False, True]
    """
    return binary_op("xor", x, y, broadcast_dimensions, max_elements=max_elements)


def shift_left(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
               max_elements: int | None = None) -> Array:
    """XLA ``shift-left``: amounts of at least the bit width (or negative) give 0.

    >>> shift_left(np.array([1, 1, 1], np.int32), np.array([3, 32, -1], np.int32)).tolist()
    [8, 0, 0]
    """
    return binary_op("shift-left", x, y, broadcast_dimensions, max_elements=max_elements)


def shift_right_arithmetic(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
                           max_elements: int | None = None) -> Array:
    """XLA ``shift-right-arithmetic``: sign-filling; amounts of at least the bit width give 0 or -1.

    >>> shift_right_arithmetic(np.array([-8, -8], np.int32), np.array([1, 40], np.int32)).tolist()
    [-4, -1]
    """
    return binary_op("shift-right-arithmetic", x, y, broadcast_dimensions, max_elements=max_elements)


def shift_right_logical(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
                        max_elements: int | None = None) -> Array:
    """XLA ``shift-right-logical``: zero-filling; amounts of at least the bit width give 0.

    >>> shift_right_logical(np.array([-8, -8], np.int32), np.array([28, 32], np.int32)).tolist()
    [15, 0]
    """
    return binary_op("shift-right-logical", x, y, broadcast_dimensions, max_elements=max_elements)


def atan2(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
          max_elements: int | None = None) -> Array:
    """XLA ``atan2(x, y)``: the angle of the point (y, x), for real floating-point types.

    >>> atan2(np.array([1.0], np.float64), np.array([0.0], np.float64)).round(4).tolist()
    [1.5708]
    """
    return binary_op("atan2", x, y, broadcast_dimensions, max_elements=max_elements)


def compare(x: Any, y: Any, direction: str, broadcast_dimensions: Sequence[int] | None = None, *,
            max_elements: int | None = None) -> Array:
    """XLA ``compare`` with ``direction`` EQ, NE, LT, LE, GT or GE; the result is a bool (pred) array.

    >>> compare(np.array([1, 2, 3], np.int32), np.int32(2), "LT").tolist()
    [True, False, False]
    """
    return binary_op("compare", x, y, broadcast_dimensions, direction, max_elements=max_elements)
