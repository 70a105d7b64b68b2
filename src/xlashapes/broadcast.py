"""Broadcasting exactly as XLA defines it: result shapes, element-wise binary ops on NumPy arrays, explicit HLO.

The rules (XLA's ``docs/broadcasting.md`` and ``ShapeInference::InferElementwiseBinaryOpShape``):

* Both operands must be arrays of the same element type; XLA never converts implicitly.
* Equal ranks: each pair of dimensions must be equal or one of them 1 (degenerate); the result takes the other
  size. Both operands may have 1s in different places (the "outer operation": (2,1) and (1,3) give (2,3)).
  ``broadcast_dimensions`` must then be empty or the identity.
* Different ranks: a scalar broadcasts without help. Otherwise ``broadcast_dimensions`` is required, has one entry
  per dimension of the lower-rank operand, names the dimension of the higher-rank operand it matches, and is
  strictly increasing (so no dimension is used twice). Matched sizes must be equal or one of them 1. The
  lower-rank operand is first expanded to the higher rank with 1s everywhere else ("InDim" broadcasting), then the
  degenerate rule above makes both shapes equal (composition: (4) and (1,2) with (0) give (4,2)).

Dynamic dimensions (``<=N`` bounded, ``?`` unbounded) combine as XLA's shape inference does it:

* Equal-rank shapes whose sizes all agree (``<=N`` counting as N) and that have no ``?`` keep those sizes; a
  dimension is dynamic when it is dynamic in either operand: ``3`` and ``<=3`` give ``<=3``.
* Otherwise, per dimension, in this order: when the lhs size is 1 (``1`` or ``<=1``) the result is the rhs
  dimension, when the rhs size is 1 it is the lhs dimension (so ``1`` and ``?`` give ``?``; XLA is not symmetric
  here: in ``f32[<=1,2]`` with ``f32[1,1]`` dimension 0 becomes ``1``, swapped it becomes ``<=1``); equal sizes give
  that size, dynamic if either is (``?`` and ``?`` give ``?``); when one side is ``?`` the result is the other side
  (``5`` and ``?`` give ``5``; ``<=5`` and ``?`` give ``<=5`` -- XLA's code does this although a comment next to it
  says ``?``); anything else is an error (``<=5`` and ``3`` are incompatible: a bound counts as the size).
* With different ranks the matched dimensions must have equal sizes or a size 1, exactly as above but with no
  special case for ``?`` (``3`` cannot match ``?``, ``?`` matches ``?`` and ``1``), and when one of the two is
  dynamic and the other not, the sizes must be equal or the size-1 side must be static (``<=1`` cannot match ``5``).
  The expanded lower-rank shape then takes the lhs role in the per-dimension rules above.

Element-wise semantics (``binary_op``) follow what XLA computes (CPU runtime, HLO evaluator): integers wrap around
modulo 2^bits; integer division truncates toward zero, ``x / 0`` is -1 (all bits set for unsigned types) and
``INT_MIN / -1`` is ``INT_MIN``; the remainder takes the dividend's sign, ``x % 0`` is ``x`` and ``INT_MIN % -1``
is 0; shift amounts are read as unsigned and an amount of at least the bit width gives 0 (``shift-left``,
``shift-right-logical``) or the sign fill (``shift-right-arithmetic``); ``shift-right-arithmetic`` on unsigned
types and ``shift-right-logical`` on signed ones reinterpret the bits; ``and``/``or``/``xor`` are bitwise on
integers and logical on ``pred``, where ``add``/``maximum`` are ``or`` and ``multiply``/``minimum`` are ``and``;
``maximum``/``minimum`` propagate NaN and order -0.0 below +0.0; floats narrower than 32 bits are computed in f32
and rounded once (NaN becomes -0.0 in types without NaN, such as f4e2m1fn); ``compare`` gives ``pred`` with IEEE
semantics (NaN is unordered). Complex operands allow add, subtract, multiply, divide, power and compare EQ/NE.
Integer ``power`` is exact
modulo 2^bits for non-negative exponents; a negative exponent gives 1 for base 1, +-1 for base -1 and 0 otherwise.
(XLA's backends differ among themselves there: XLA:CPU uses only the low 6 bits of the exponent and reads an
unsigned exponent with its top bit set as negative, the HLO evaluator gives 0 for ``(-1) ** -k``; where they
disagree this module gives the exact integer result.) Float ``divide`` is correctly rounded; XLA:CPU rewrites
``x / broadcast(y)`` into ``x * broadcast(1 / y)`` after lowering, which can be 1 ulp off.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

import numpy as np

from .dtypes import ELEMENT_TYPES, PRED, SIGNED, ElementType, element_type
from .errors import ShapeError
from .layout import checked_int, checked_ints, default_layout
from .shape import UNBOUNDED_SIZE, Shape
from .text import parse_shape, shape_text

DEFAULT_MAX_ELEMENTS = 1 << 24
"""Largest result (in elements) ``binary_op`` computes unless given ``max_elements``; read at call time."""

BINARY_OPS: tuple[str, ...] = (
    "add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "and", "or", "xor",
    "shift-left", "shift-right-arithmetic", "shift-right-logical", "atan2", "compare",
)
"""XLA's element-wise binary opcodes, by their HLO names."""

COMPARISON_DIRECTIONS: tuple[str, ...] = ("EQ", "NE", "LT", "LE", "GT", "GE")
"""The ``direction=`` values ``compare`` takes."""

ShapeLike: TypeAlias = "Shape | str | Sequence[int]"
"""A ``Shape``, shape text such as ``"f32[2,3]"``, or plain dimension sizes such as ``(2, 3)``."""

_ALIASES = {"sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder", "pow": "power",
            "max": "maximum", "min": "minimum"}
_SHIFTS = frozenset({"shift-left", "shift-right-arithmetic", "shift-right-logical"})
_NO_PRED = frozenset({"subtract", "divide", "remainder", "power", "atan2"}) | _SHIFTS
_NO_COMPLEX = frozenset({"remainder", "maximum", "minimum", "and", "or", "xor", "atan2"}) | _SHIFTS
_PRED_OR_INTEGER = frozenset({"and", "or", "xor"}) | _SHIFTS
_ORDERED = frozenset({"LT", "LE", "GT", "GE"})


# ----------------------------------------------------------------------------------------------------
# Operands
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Operand:
    """One side of a broadcast: sizes, dynamic flags, element type (None for bare sizes) and its printed name."""

    dims: tuple[int, ...]
    dynamic: tuple[bool, ...]
    etype: ElementType | None
    name: str

    @property
    def rank(self) -> int:
        return len(self.dims)

    def is_unbounded(self, i: int) -> bool:
        return self.dynamic[i] and self.dims[i] == UNBOUNDED_SIZE

    @property
    def has_unbounded(self) -> bool:
        return any(self.is_unbounded(i) for i in range(self.rank))

    def size_text(self, i: int) -> str:
        """Dimension ``i`` as shape text writes it: ``5``, ``<=5`` or ``?``."""
        if self.is_unbounded(i):
            return "?"
        return f"<={self.dims[i]}" if self.dynamic[i] else str(self.dims[i])


def _shape_operand(shape: Shape, side: str) -> _Operand:
    if not shape.is_array:
        kind = "a tuple" if shape.is_tuple else f"{shape.element_type}"
        raise ShapeError(f"{side} is {kind} ({shape_text(shape, print_layout=False)}); broadcasting needs an array")
    return _Operand(shape.dimensions, shape.dynamic_dimensions, shape.element_type,
                    shape_text(shape, print_layout=False))


def _operand(value: object, side: str) -> _Operand:
    """``value`` (Shape, shape text or dimension sizes) as an operand, or ShapeError/ParseError."""
    if isinstance(value, Shape):
        return _shape_operand(value, side)
    if isinstance(value, str):
        return _shape_operand(parse_shape(value), side)
    if isinstance(value, np.ndarray):
        raise ShapeError(f"{side} is a NumPy array; pass its shape (array.shape) or use binary_op for values")
    dims = checked_ints(cast(Any, value), f"{side} dimensions")
    for i, size in enumerate(dims):
        if size < 0:
            raise ShapeError(f"{side} dimension {i} has negative size {size} in {dims}")
    return _Operand(dims, (False,) * len(dims), None, str(dims))


def _shape_of(value: object, side: str) -> _Operand:
    """Like ``_operand`` but insists on an element type (a Shape or shape text)."""
    operand = _operand(value, side)
    if operand.etype is None:
        raise ShapeError(f"{side} {operand.name} has no element type; give a Shape or shape text like 'f32[2,3]'")
    return operand


def checked_broadcast_dimensions(value: object) -> tuple[int, ...]:
    """``broadcast_dimensions`` as a tuple of ints (None means empty), or ShapeError.

    >>> checked_broadcast_dimensions([1])
    (1,)
    """
    if value is None:
        return ()
    return checked_ints(cast(Any, value), "broadcast_dimensions")


# ----------------------------------------------------------------------------------------------------
# Shape inference
# ----------------------------------------------------------------------------------------------------


def _pair(lhs: _Operand, rhs: _Operand) -> str:
    return f"{lhs.name} and {rhs.name}"


def _same_rank_dims(lhs: _Operand, rhs: _Operand, dims: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    identity = tuple(range(lhs.rank))
    if dims and dims != identity:
        raise ShapeError(
            f"{_pair(lhs, rhs)} have the same rank {lhs.rank}, so broadcast_dimensions must be empty or the "
            f"identity {identity}; got {dims}")
    if lhs.dims == rhs.dims and not lhs.has_unbounded and not rhs.has_unbounded:
        return lhs.dims, tuple(a or b for a, b in zip(lhs.dynamic, rhs.dynamic))
    return _degenerate_dims(lhs, rhs, lhs, rhs)


def _degenerate_dims(
    lhs: _Operand, rhs: _Operand, lhs_named: _Operand, rhs_named: _Operand
) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """Equal-rank broadcasting: sizes equal or 1 (``?`` yields to the other side); ``*_named`` go in messages."""
    sizes: list[int] = []
    flags: list[bool] = []
    for i, (left, right) in enumerate(zip(lhs.dims, rhs.dims)):
        if left == 1 or right == 1:
            take_rhs = left == 1
        elif left == right:
            sizes.append(left)
            flags.append(lhs.dynamic[i] or rhs.dynamic[i])
            continue
        elif lhs.is_unbounded(i) or rhs.is_unbounded(i):
            take_rhs = lhs.is_unbounded(i)
        else:
            raise ShapeError(
                f"{_pair(lhs_named, rhs_named)} cannot be broadcast: dimension {i} has size {lhs.size_text(i)} "
                f"in {lhs.name} and {rhs.size_text(i)} in {rhs.name}; sizes must be equal or one of them 1")
        source = rhs if take_rhs else lhs
        sizes.append(source.dims[i])
        flags.append(source.dynamic[i])
    return tuple(sizes), tuple(flags)


def _in_dim_operand(small: _Operand, large: _Operand, dims: tuple[int, ...], pair: str) -> _Operand:
    """The lower-rank operand expanded to the higher rank: its sizes at ``dims``, the larger one's elsewhere."""
    if not dims and small.rank:
        numpy_like = tuple(range(large.rank - small.rank, large.rank))
        raise ShapeError(
            f"{pair} have different ranks ({small.rank} and {large.rank}): XLA needs "
            f"broadcast_dimensions to say which dimensions of {large.name} the dimensions of {small.name} match "
            f"and never guesses as NumPy does (NumPy would use broadcast_dimensions={numpy_like})")
    if len(dims) != small.rank:
        raise ShapeError(
            f"broadcast_dimensions {dims} has {len(dims)} entries but the lower-rank operand {small.name} of "
            f"{pair} has rank {small.rank}; give one dimension of {large.name} per dimension")
    sizes = list(large.dims)
    flags = list(large.dynamic)
    for i, target in enumerate(dims):
        _check_in_dim(small, large, dims, i)
        sizes[target] = small.dims[i]
        flags[target] = small.dynamic[i]
    return _Operand(tuple(sizes), tuple(flags), small.etype, small.name)


def _check_in_dim(small: _Operand, large: _Operand, dims: tuple[int, ...], i: int) -> None:
    target = dims[i]
    where = f"broadcast_dimensions[{i}] = {target} (for dimension {i} of {small.name}, with {large.name})"
    if target < 0:
        raise ShapeError(f"{where} is negative; dimension numbers count from 0 and cannot be negative")
    if target >= large.rank:
        raise ShapeError(f"{where} is out of range: {large.name} has rank {large.rank}")
    s, g = small.dims[i], large.dims[target]
    if s != g and s != 1 and g != 1:
        raise ShapeError(
            f"{where}: dimension {i} of {small.name} has size {small.size_text(i)} but dimension {target} of "
            f"{large.name} has size {large.size_text(target)}; matched sizes must be equal or one of them 1")
    s_dynamic, g_dynamic = small.dynamic[i], large.dynamic[target]
    if s_dynamic != g_dynamic and not (s == g or (s == 1 and not s_dynamic) or (g == 1 and not g_dynamic)):
        raise ShapeError(
            f"{where}: dimension {i} of {small.name} ({small.size_text(i)}) and dimension {target} of "
            f"{large.name} ({large.size_text(target)}) differ in dynamism; only a static size 1 can match that")
    if i and dims[i - 1] >= target:
        if dims[i - 1] == target:
            raise ShapeError(
                f"{where}: dimension {target} of {large.name} is matched twice (by dimensions {i - 1} and {i} of "
                f"{small.name}); broadcast_dimensions {dims} must be strictly increasing")
        raise ShapeError(
            f"{where}: broadcast_dimensions {dims} must be strictly increasing, but {target} comes after "
            f"{dims[i - 1]}")


def _result_dims(
    lhs: _Operand, rhs: _Operand, dims: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """Sizes and dynamic flags of the broadcast of ``lhs`` and ``rhs`` (XLA's InferElementwiseBinaryOpShape)."""
    if lhs.etype is not None and rhs.etype is not None and lhs.etype != rhs.etype:
        raise ShapeError(
            f"{_pair(lhs, rhs)} have different element types ({lhs.etype} and {rhs.etype}); XLA does not convert "
            f"implicitly, convert one operand first")
    if lhs.rank == rhs.rank:
        return _same_rank_dims(lhs, rhs, dims)
    small, large = (lhs, rhs) if lhs.rank < rhs.rank else (rhs, lhs)
    expanded = _in_dim_operand(small, large, dims, _pair(lhs, rhs))
    return _degenerate_dims(expanded, large, lhs, rhs)


def broadcast_shape(lhs: ShapeLike, rhs: ShapeLike, broadcast_dimensions: Sequence[int] | None = None) -> Any:
    """The shape XLA gives an element-wise op on ``lhs`` and ``rhs``; ShapeError when they cannot broadcast.

    Sizes in, sizes out; Shapes or shape text in, a Shape (default layout) out.

    >>> broadcast_shape((2, 3), (3,), broadcast_dimensions=(1,))
    (2, 3)
    >>> broadcast_shape((1, 2), (4, 3, 1), broadcast_dimensions=(1, 2))
    (4, 3, 2)
    >>> str(broadcast_shape("f32[2,1]", "f32[<=4]", broadcast_dimensions=[1]))
    'f32[2,<=4]{1,0}'
    """
    left, right = _operand(lhs, "lhs"), _operand(rhs, "rhs")
    if (left.etype is None) != (right.etype is None):
        raise ShapeError(
            f"give both operands as shapes (Shape or text like 'f32[2,3]') or both as dimension sizes, not "
            f"{left.name} and {right.name}")
    sizes, flags = _result_dims(left, right, checked_broadcast_dimensions(broadcast_dimensions))
    if left.etype is None:
        return sizes
    return Shape(left.etype, sizes, flags, default_layout(len(sizes)))


def canonical_op(op: object) -> str:
    """The HLO name of binary op ``op``: ``"shift_left"`` → ``"shift-left"``, ``"Max"`` → ``"maximum"``."""
    if not isinstance(op, str):
        raise ShapeError(f"the op must be a name such as 'add', got {op!r}")
    name = op.strip().lower().replace("_", "-")
    name = _ALIASES.get(name, name)
    if name not in BINARY_OPS:
        raise ShapeError(f"unknown binary op {op!r}; expected one of {', '.join(BINARY_OPS)}")
    return name


def canonical_direction(op: str, direction: object) -> str | None:
    """The comparison direction for ``op`` (``"lt"`` → ``"LT"``): required for compare, refused otherwise."""
    if op != "compare":
        if direction is not None:
            raise ShapeError(f"a comparison direction ({direction!r}) was given for {op}, which is not compare")
        return None
    if direction is None:
        raise ShapeError(f"compare needs direction=, one of {', '.join(COMPARISON_DIRECTIONS)}")
    if not isinstance(direction, str) or direction.strip().upper() not in COMPARISON_DIRECTIONS:
        raise ShapeError(f"unknown comparison direction {direction!r}; expected one of "
                         f"{', '.join(COMPARISON_DIRECTIONS)}")
    return direction.strip().upper()


def _check_element_type(op: str, etype: ElementType, direction: str | None) -> None:
    what = f"{op} does not accept {etype} operands"
    if etype.kind == PRED and op in _NO_PRED:
        raise ShapeError(f"{what}: XLA allows pred only in add, multiply, maximum, minimum, and, or, xor, compare")
    if op in _PRED_OR_INTEGER and not (etype.is_integral or etype.kind == PRED):
        raise ShapeError(f"{what}: it needs {'integers' if op in _SHIFTS else 'pred or integers'}")
    if op == "atan2" and not etype.is_floating:
        raise ShapeError(f"{what}: it needs real floating-point values")
    if etype.is_complex and (op in _NO_COMPLEX or direction in _ORDERED):
        action = f"compare with direction {direction}" if op == "compare" else op
        raise ShapeError(f"{action} is not defined for complex {etype} operands (XLA:CPU has no such kernel)")


def binary_op_shape(
    op: str,
    lhs: Shape | str,
    rhs: Shape | str,
    broadcast_dimensions: Sequence[int] | None = None,
    direction: str | None = None,
) -> Shape:
    """The result Shape of XLA's binary ``op`` (``pred`` for compare), after checking the element types.

    >>> str(binary_op_shape("compare", "f32[2,3]", "f32[3]", [1], direction="LT"))
    'pred[2,3]{1,0}'
    """
    name = canonical_op(op)
    how = canonical_direction(name, direction)
    left, right = _shape_of(lhs, "lhs"), _shape_of(rhs, "rhs")
    sizes, flags = _result_dims(left, right, checked_broadcast_dimensions(broadcast_dimensions))
    assert left.etype is not None
    _check_element_type(name, left.etype, how)
    etype = ELEMENT_TYPES["pred"] if name == "compare" else left.etype
    return Shape(etype, sizes, flags, default_layout(len(sizes)))


# ----------------------------------------------------------------------------------------------------
# NumPy evaluation
# ----------------------------------------------------------------------------------------------------


_NUMPY_SCALAR_EXAMPLES = {bool: "np.bool_", int: "np.int32", float: "np.float32", complex: "np.complex64"}


def _as_array(value: object, side: str) -> np.ndarray[Any, Any]:
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


def _array_operand(array: np.ndarray[Any, Any]) -> _Operand:
    etype = element_type(array.dtype)
    dims = tuple(int(d) for d in array.shape)
    text = f"{etype.name}[{','.join(map(str, dims))}]"
    return _Operand(dims, (False,) * len(dims), etype, text)


def _expanded(array: np.ndarray[Any, Any], sizes: tuple[int, ...], dims: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """``array`` as a read-only view of shape ``sizes``: lower ranks are placed at ``dims`` first."""
    if array.ndim < len(sizes):
        placed = [1] * len(sizes)
        for i, target in enumerate(dims):
            placed[target] = array.shape[i]
        array = array.reshape(placed)
    return np.broadcast_to(array, sizes)


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
) -> np.ndarray[Any, Any]:
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
    left, right = _array_operand(a), _array_operand(b)
    dims = checked_broadcast_dimensions(broadcast_dimensions)
    sizes, _ = _result_dims(left, right, dims)
    assert left.etype is not None
    _check_element_type(name, left.etype, how)
    count = math.prod(sizes)
    limit = _element_limit(max_elements)
    if count > limit:
        raise ShapeError(
            f"{name} of {_pair(left, right)} would produce {count} elements ({sizes}), more than the limit of "
            f"{limit}; pass max_elements= to allow it")
    return _evaluate(name, how, _expanded(a, sizes, dims), _expanded(b, sizes, dims), left.etype)


def _evaluate(
    op: str, direction: str | None, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], etype: ElementType
) -> np.ndarray[Any, Any]:
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


def _compared(direction: str | None, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    assert direction is not None
    return np.asarray(_COMPARISONS[direction](a, b), dtype=np.bool_)


def _pred_op(op: str, direction: str | None, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
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


def _pattern(values: np.ndarray[Any, Any], bits: int) -> np.ndarray[Any, Any]:
    """The low ``bits`` bits of ``values`` (two's complement), as uint64."""
    wide = values.view(np.uint64) if values.dtype == np.int64 else values.astype(np.uint64)
    return np.asarray(wide & _mask(bits))


def _signed(pattern: np.ndarray[Any, Any], bits: int) -> np.ndarray[Any, Any]:
    """A ``bits``-bit two's complement pattern read as a signed int64 value."""
    values = np.asarray(pattern, dtype=np.uint64).view(np.int64)
    if bits == 64:
        return values
    return np.where(values >= (1 << (bits - 1)), values - (1 << bits), values)


def _integer_values(array: np.ndarray[Any, Any], etype: ElementType) -> np.ndarray[Any, Any]:
    return array.astype(np.int64 if etype.kind == SIGNED else np.uint64)


def _integer_result(wide: np.ndarray[Any, Any], etype: ElementType, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    pattern = _pattern(np.asarray(wide), etype.bits)
    values = _signed(pattern, etype.bits) if etype.kind == SIGNED else pattern
    return values.astype(dtype)


def _integer_op(
    op: str, direction: str | None, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], etype: ElementType
) -> np.ndarray[Any, Any]:
    va, vb = _integer_values(a, etype), _integer_values(b, etype)
    if op == "compare":
        return _compared(direction, va, vb)
    bits = etype.bits
    pa, pb = _pattern(va, bits), _pattern(vb, bits)
    wide: np.ndarray[Any, Any]
    if op == "maximum":
        wide = np.maximum(va, vb)
    elif op == "minimum":
        wide = np.minimum(va, vb)
    elif op in _PATTERN_OPS:
        wide = _PATTERN_OPS[op](pa, pb)
    elif op in _SHIFTS:
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


def _shifted(op: str, pa: np.ndarray[Any, Any], pb: np.ndarray[Any, Any], bits: int) -> np.ndarray[Any, Any]:
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


def _divided(op: str, va: np.ndarray[Any, Any], vb: np.ndarray[Any, Any], etype: ElementType) -> np.ndarray[Any, Any]:
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
    base: np.ndarray[Any, Any], exponent: np.ndarray[Any, Any], base_values: np.ndarray[Any, Any],
    etype: ElementType,
) -> np.ndarray[Any, Any]:
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
    op: str, direction: str | None, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], etype: ElementType
) -> np.ndarray[Any, Any]:
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


def _rounded(values: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """``values`` rounded to ``dtype``; in types without NaN (f4e2m1fn, f6...) NaN becomes -0.0, as XLA has it."""
    if dtype.itemsize < 2 and not _has_nan(dtype):
        values = np.where(np.isnan(values), -0.0, values)
    return values.astype(dtype)


_FLOAT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide, "remainder": np.fmod,
    "power": np.power, "atan2": np.arctan2,
}


def _float_extremum(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], *, larger: bool) -> np.ndarray[Any, Any]:
    """XLA's maximum/minimum: NaN wins (the lhs one first) and -0.0 counts as smaller than +0.0."""
    pick_a = a > b if larger else a < b
    tie = a == b
    pick_a |= tie & (np.signbit(b) if larger else np.signbit(a))
    result = np.where(pick_a, a, b)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, result))


def _complex_op(
    op: str, direction: str | None, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    if op == "compare":
        return _compared(direction, a, b)
    if op == "power":
        return _complex_power(a, b)
    return np.asarray(_FLOAT_OPS[op](a, b)).astype(a.dtype)


def _complex_power(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """XLA's complex power: |a|^c * exp(-d*arg(a)) * cis(c*arg(a) + d*ln|a|); 1 when a == 1 or b == 0."""
    x, y, c, d = a.real, a.imag, b.real, b.imag
    squared = x * x + y * y
    angle = np.arctan2(y, x)
    magnitude = np.power(squared, c / 2) * np.exp(-d * angle)
    phase = c * angle + d / 2 * np.log(squared)
    result = magnitude * np.cos(phase) + 1j * (magnitude * np.sin(phase))
    return np.where((a == 1) | (b == 0), 1, result).astype(a.dtype)


# ----------------------------------------------------------------------------------------------------
# Convenience functions
# ----------------------------------------------------------------------------------------------------


def add(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
        max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``add``: ``add(np.ones((2, 3), np.float32), np.float32(1))`` is all 2s."""
    return binary_op("add", x, y, broadcast_dimensions, max_elements=max_elements)


def subtract(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
             max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``subtract`` (not for pred); integers wrap around."""
    return binary_op("subtract", x, y, broadcast_dimensions, max_elements=max_elements)


def multiply(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
             max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``multiply``; on pred it is logical and."""
    return binary_op("multiply", x, y, broadcast_dimensions, max_elements=max_elements)


def divide(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
           max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``divide``: integers truncate toward zero (-7 / 2 == -3), ``x / 0`` is -1."""
    return binary_op("divide", x, y, broadcast_dimensions, max_elements=max_elements)


def remainder(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
              max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``remainder``: the dividend's sign (-7 % 2 == -1, like C and fmod), ``x % 0`` is ``x``."""
    return binary_op("remainder", x, y, broadcast_dimensions, max_elements=max_elements)


def power(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
          max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``power``; integer results wrap around, negative integer exponents give 0 except for bases +-1."""
    return binary_op("power", x, y, broadcast_dimensions, max_elements=max_elements)


def maximum(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
            max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``maximum``: NaN propagates, +0.0 beats -0.0."""
    return binary_op("maximum", x, y, broadcast_dimensions, max_elements=max_elements)


def minimum(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
            max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``minimum``: NaN propagates, -0.0 beats +0.0."""
    return binary_op("minimum", x, y, broadcast_dimensions, max_elements=max_elements)


def and_(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
         max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``and``: logical on pred, bitwise on integers."""
    return binary_op("and", x, y, broadcast_dimensions, max_elements=max_elements)


def or_(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
        max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``or``: logical on pred, bitwise on integers."""
    return binary_op("or", x, y, broadcast_dimensions, max_elements=max_elements)


def xor(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
        max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``xor``: logical on pred, bitwise on integers."""
    return binary_op("xor", x, y, broadcast_dimensions, max_elements=max_elements)


def shift_left(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
               max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``shift-left``: amounts of at least the bit width (or negative) give 0."""
    return binary_op("shift-left", x, y, broadcast_dimensions, max_elements=max_elements)


def shift_right_arithmetic(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
                           max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``shift-right-arithmetic``: sign-filling; amounts of at least the bit width give 0 or -1."""
    return binary_op("shift-right-arithmetic", x, y, broadcast_dimensions, max_elements=max_elements)


def shift_right_logical(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
                        max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``shift-right-logical``: zero-filling; amounts of at least the bit width give 0."""
    return binary_op("shift-right-logical", x, y, broadcast_dimensions, max_elements=max_elements)


def atan2(x: Any, y: Any, broadcast_dimensions: Sequence[int] | None = None, *,
          max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``atan2(x, y)``: the angle of the point (y, x), for real floating-point types."""
    return binary_op("atan2", x, y, broadcast_dimensions, max_elements=max_elements)


def compare(x: Any, y: Any, direction: str, broadcast_dimensions: Sequence[int] | None = None, *,
            max_elements: int | None = None) -> np.ndarray[Any, Any]:
    """XLA ``compare`` with ``direction`` EQ, NE, LT, LE, GT or GE; the result is a bool (pred) array."""
    return binary_op("compare", x, y, broadcast_dimensions, direction, max_elements=max_elements)


# ----------------------------------------------------------------------------------------------------
# Lowering to HLO
# ----------------------------------------------------------------------------------------------------


def _array_shape(etype: ElementType, sizes: Sequence[int], flags: Sequence[bool]) -> Shape:
    return Shape(etype, tuple(sizes), tuple(flags), default_layout(len(sizes)))


def _lowered_operand(
    label: str, shape: Shape, result: Shape, dims: tuple[int, ...], lines: list[str]
) -> str:
    """Append the instructions that bring ``label`` (of ``shape``) to the result's size; return the last name."""
    name, current = _at_result_rank(label, shape, result, dims, lines)
    if current.dimensions == result.dimensions:
        return name
    return _at_result_size(label, name, current, result, lines)


def _at_result_rank(
    label: str, shape: Shape, result: Shape, dims: tuple[int, ...], lines: list[str]
) -> tuple[str, Shape]:
    """XlaBuilder's BroadcastToTargetRank: a lower-rank operand keeps its sizes at ``dims`` (scalars wait)."""
    if not 0 < shape.rank < result.rank:
        return label, shape
    sizes, flags = list(result.dimensions), [False] * result.rank
    for i, target in enumerate(dims):
        sizes[target] = shape.dimensions[i]
        flags[target] = shape.dynamic_dimensions[i]
    expanded = _array_shape(shape.element_type, sizes, flags)
    lines.append(f"  {label}.in_dim = {expanded} broadcast({label}), dimensions={{{','.join(map(str, dims))}}}")
    return f"{label}.in_dim", expanded


def _at_result_size(label: str, name: str, current: Shape, result: Shape, lines: list[str]) -> str:
    """XlaBuilder's AddBroadcastSequence: reshape the degenerate 1s away, then broadcast to the result size."""
    etype = current.element_type
    if current.rank == 0:
        target = _array_shape(etype, result.dimensions, [False] * result.rank)
        lines.append(f"  {label}.broadcast = {target} broadcast({name}), dimensions={{}}")
        return f"{label}.broadcast"
    kept = [i for i in range(result.rank) if current.dimensions[i] == result.dimensions[i]]
    for i in range(result.rank):
        if i not in kept and current.dynamic_dimensions[i]:
            raise ShapeError(
                f"cannot lower: dimension {i} of {label} {shape_text(current, print_layout=False)} is a dynamic "
                f"size 1 that would have to broadcast to {result.dimensions[i]}; XLA only expands static 1s")
    reshaped = _array_shape(etype, [current.dimensions[i] for i in kept],
                            [current.dynamic_dimensions[i] for i in kept])
    lines.append(f"  {label}.reshape = {reshaped} reshape({name})")
    expanded = _array_shape(etype, result.dimensions, current.dynamic_dimensions)
    lines.append(f"  {label}.broadcast = {expanded} broadcast({label}.reshape), "
                 f"dimensions={{{','.join(map(str, kept))}}}")
    return f"{label}.broadcast"


def lower_binary(
    op: str,
    lhs: Shape | str,
    rhs: Shape | str,
    broadcast_dimensions: Sequence[int] | None = None,
    direction: str | None = None,
) -> str:
    """A complete HLO module computing ``op`` with the broadcasting made explicit, as XlaBuilder emits it.

    The lower-rank operand is first broadcast to the result rank keeping its own sizes (``dimensions=`` are the
    broadcast dimensions); then any operand still smaller than the result loses its degenerate 1s in a
    ``reshape`` and is ``broadcast`` to the result size. Unbounded (``?``) shapes are refused: XLA lowers them to
    ``mhlo.dynamic_broadcast_in_dim`` custom calls instead.

    >>> print(lower_binary("add", "f32[2,3]", "f32[3]", broadcast_dimensions=(1,)))
    HloModule xlashapes_add
    <BLANKLINE>
    ENTRY main {
      lhs = f32[2,3]{1,0} parameter(0)
      rhs = f32[3]{0} parameter(1)
      rhs.in_dim = f32[2,3]{1,0} broadcast(rhs), dimensions={1}
      ROOT result = f32[2,3]{1,0} add(lhs, rhs.in_dim)
    }
    <BLANKLINE>
    """
    name = canonical_op(op)
    how = canonical_direction(name, direction)
    left = parse_shape(lhs) if isinstance(lhs, str) else lhs
    right = parse_shape(rhs) if isinstance(rhs, str) else rhs
    dims = checked_broadcast_dimensions(broadcast_dimensions)
    result = binary_op_shape(name, left, right, dims, how)
    for side, shape in (("lhs", left), ("rhs", right)):
        if any(size == UNBOUNDED_SIZE for size in shape.dimensions):
            raise ShapeError(f"cannot lower {side} {shape_text(shape, print_layout=False)}: unbounded ('?') "
                             f"dimensions need mhlo.dynamic_broadcast_in_dim, which this lowering does not emit")
    lines = [f"  lhs = {shape_text(left)} parameter(0)", f"  rhs = {shape_text(right)} parameter(1)"]
    lhs_name = _lowered_operand("lhs", left, result, dims if left.rank < right.rank else (), lines)
    rhs_name = _lowered_operand("rhs", right, result, dims if right.rank < left.rank else (), lines)
    attributes = f", direction={how}" if how else ""
    lines.append(f"  ROOT result = {result} {name}({lhs_name}, {rhs_name}){attributes}")
    module = "xlashapes_" + name.replace("-", "_")
    return f"HloModule {module}\n\nENTRY main {{\n" + "\n".join(lines) + "\n}\n"
