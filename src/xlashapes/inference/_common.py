"""Shared helpers of the inference rules: operand checks, attribute reading, result shapes, window arithmetic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dtypes import ELEMENT_TYPES, ElementType
from ..errors import ShapeError
from ..layout import INT64_MAX, default_layout
from ..shape import UNBOUNDED_SIZE, Shape, tuple_shape
from ..text import shape_text

PRED = ELEMENT_TYPES["pred"]
S32 = ELEMENT_TYPES["s32"]
U32 = ELEMENT_TYPES["u32"]
_MISSING = object()


@dataclass(frozen=True)
class Signature:
    """A called computation as inference sees it: its parameter shapes and its root (result) shape.

    >>> from xlashapes import parse_shape
    >>> Signature((parse_shape("f32[]"), parse_shape("f32[]")), parse_shape("f32[]")).result.is_scalar
    True
    """

    parameters: tuple[Shape, ...]
    result: Shape

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", tuple(self.parameters))
        for shape in (*self.parameters, self.result):
            if not isinstance(shape, Shape):
                raise ShapeError(f"a Signature holds Shapes, not {type(shape).__name__}")


@dataclass(frozen=True)
class Call:
    """One instruction's inputs as the rules read them."""

    opcode: str
    operands: tuple[Shape, ...]
    attributes: Mapping[str, Any]
    computations: Mapping[str, Signature]

    # ----- operands -------------------------------------------------------------------------------
    def count(self, *allowed: int) -> None:
        """ShapeError unless there are exactly one of ``allowed`` operands."""
        if len(self.operands) not in allowed:
            wanted = " or ".join(map(str, allowed))
            raise ShapeError(f"{self.opcode} takes {wanted} operand{'s' if allowed != (1,) else ''}, "
                             f"got {len(self.operands)}")

    def at_least(self, minimum: int) -> None:
        """ShapeError unless there are at least ``minimum`` operands."""
        if len(self.operands) < minimum:
            raise ShapeError(f"{self.opcode} takes at least {minimum} operands, got {len(self.operands)}")

    def array(self, index: int, what: str | None = None) -> Shape:
        """Operand ``index``, which must be an array."""
        shape = self.operands[index]
        if not shape.is_array:
            raise ShapeError(f"{self.opcode} expects an array as {what or f'operand {index}'}, got {text(shape)}")
        return shape

    def arrays(self) -> tuple[Shape, ...]:
        """Every operand, each required to be an array."""
        return tuple(self.array(i) for i in range(len(self.operands)))

    # ----- attributes -----------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        """True when attribute ``key`` was given."""
        return key in self.attributes

    def get(self, key: str, default: Any = _MISSING) -> Any:
        """Attribute ``key`` (ShapeError naming it when absent and no default).

        A mapping with a ``typed`` method (``HloInstruction.attributes``) is read through it.
        """
        if key in self.attributes:
            typed = getattr(self.attributes, "typed", None)
            return typed(key) if callable(typed) else self.attributes[key]
        if default is _MISSING:
            raise ShapeError(f"{self.opcode} needs attribute {key}")
        return default

    def integer(self, key: str, default: Any = _MISSING) -> int:
        """An integer attribute."""
        value = self.get(key, default)
        if isinstance(value, (tuple, list)) and len(value) == 1:
            value = value[0]
        if type(value) is not int:
            raise ShapeError(f"attribute {key} of {self.opcode} must be an integer, got {value!r}")
        return value

    def integers(self, key: str, default: Any = _MISSING) -> tuple[int, ...]:
        """An integer-list attribute (``{1,2}`` read as ``(1, 2)``; a single int is a 1-list)."""
        value = self.get(key, default)
        if type(value) is int:
            return (value,)
        if not isinstance(value, (tuple, list)) or any(type(v) is not int for v in value):
            raise ShapeError(f"attribute {key} of {self.opcode} must be a list of integers, got {value!r}")
        return tuple(value)

    def flag(self, key: str, default: bool = False) -> bool:
        """A boolean attribute."""
        value = self.get(key, default)
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        if not isinstance(value, bool):
            raise ShapeError(f"attribute {key} of {self.opcode} must be true or false, got {value!r}")
        return value

    def word(self, key: str, default: Any = _MISSING) -> str:
        """An enum-like word attribute (``direction=LT``, ``fft_type=RFFT``)."""
        value = self.get(key, default)
        if not isinstance(value, str):
            raise ShapeError(f"attribute {key} of {self.opcode} must be a word, got {value!r}")
        return value

    def signature(self, key: str) -> Signature:
        """The signature of the computation named by attribute ``key``."""
        name = self.get(key)
        if isinstance(name, (tuple, list)):
            if len(name) != 1:
                raise ShapeError(f"attribute {key} of {self.opcode} names {len(name)} computations, expected one")
            name = name[0]
        return self.named_signature(str(name), key)

    def named_signature(self, name: str, key: str) -> Signature:
        """The signature of computation ``name`` (ShapeError when it is unknown)."""
        name = name.lstrip("%")
        found = self.computations.get(name)
        if found is None:
            found = self.computations.get("%" + name)
        if found is None:
            raise ShapeError(f"{self.opcode} calls computation {name} ({key}=), whose signature was not given")
        return found


def text(shape: Shape) -> str:
    """A shape as XLA prints it without its layout (for messages)."""
    return shape_text(shape, print_layout=False)


def array_shape(etype: ElementType, dimensions: Sequence[int], dynamic: Sequence[bool] | None = None) -> Shape:
    """An array with the default layout; ShapeError when a size is out of int64 range."""
    dims = tuple(dimensions)
    for size in dims:
        if size > INT64_MAX:
            raise ShapeError(f"a result dimension of size {size} exceeds int64")
    flags = tuple(dynamic) if dynamic is not None else (False,) * len(dims)
    flags = tuple(f or d == UNBOUNDED_SIZE for f, d in zip(flags, dims))
    return Shape(etype, dims, flags, default_layout(len(dims)))


def like(shape: Shape, etype: ElementType | None = None) -> Shape:
    """``shape`` (array or tuple) with default layouts, optionally with another element type."""
    if shape.is_tuple:
        return tuple_shape([like(s, etype) for s in shape.tuple_shapes])
    if not shape.is_array:
        return Shape(shape.element_type)
    return array_shape(etype or shape.element_type, shape.dimensions, shape.dynamic_dimensions)


def tuple_of(shapes: Sequence[Shape]) -> Shape:
    """A tuple of ``shapes`` (with default layouts)."""
    return tuple_shape([like(s) for s in shapes])


def same_dimensions(a: Shape, b: Shape) -> bool:
    """XLA's ShapeUtil::SameDimensions ignoring dynamism (a ``?`` matches any size)."""
    if a.rank != b.rank:
        return False
    return all(x == y or UNBOUNDED_SIZE in (x, y) for x, y in zip(a.dimensions, b.dimensions))


def compatible(a: Shape, b: Shape, *, ignore_fp_precision: bool = False) -> bool:
    """XLA's ShapeUtil::Compatible (or CompatibleIgnoringFpPrecision): layout and dynamism ignored."""
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes)
                and all(compatible(x, y, ignore_fp_precision=ignore_fp_precision)
                        for x, y in zip(a.tuple_shapes, b.tuple_shapes)))
    if not (a.is_array and b.is_array):
        return a.element_type == b.element_type
    if not same_dimensions(a, b):
        return False
    if ignore_fp_precision and a.element_type.is_floating and b.element_type.is_floating:
        return True
    return a.element_type == b.element_type


def dimension_list(values: Sequence[int], rank: int, what: str, *, unique: bool = True) -> tuple[int, ...]:
    """``values`` as dimension numbers of a rank-``rank`` array; ShapeError if out of range or repeated."""
    seen: set[int] = set()
    for value in values:
        if not 0 <= value < rank:
            raise ShapeError(f"{what} names dimension {value}, out of range for rank {rank}")
        if unique and value in seen:
            raise ShapeError(f"{what} names dimension {value} twice")
        seen.add(value)
    return tuple(values)


def window_output_size(size: int, window: int, stride: int, low: int, high: int, base_dilation: int,
                       window_dilation: int, what: str) -> int:
    """One dimension of a windowed op's result (XLA's ShapeInference::InferWindowOutputShape)."""
    if window <= 0:
        raise ShapeError(f"{what}: window size {window} must be positive")
    if stride <= 0:
        raise ShapeError(f"{what}: window stride {stride} must be positive")
    if base_dilation < 1 or window_dilation < 1:
        raise ShapeError(f"{what}: dilation must be at least 1, got {base_dilation} and {window_dilation}")
    if size == UNBOUNDED_SIZE:
        return UNBOUNDED_SIZE
    dilated_base = 0 if size == 0 else (size - 1) * base_dilation + 1
    padded = low + high + dilated_base
    if padded < 0:
        raise ShapeError(f"{what}: padding {low}_{high} leaves a negative size {padded} (XLA aborts on this)")
    dilated_window = (window - 1) * window_dilation + 1
    if padded < dilated_window:
        return 0
    return (padded - dilated_window) // stride + 1


@dataclass(frozen=True)
class WindowDim:
    """One dimension of a ``window={...}`` attribute with XLA's defaults filled in."""

    size: int
    stride: int = 1
    low: int = 0
    high: int = 0
    base_dilation: int = 1
    window_dilation: int = 1
    reversal: bool = False


def window_dims(value: Any, rank: int, what: str) -> tuple[WindowDim, ...]:
    """The typed ``window`` attribute (a dict of per-dimension tuples) as ``rank`` WindowDims."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise ShapeError(f"{what}: window must be a dict like {{'size': (3, 3)}}, got {value!r}")
    sizes = tuple(value.get("size", ()))
    if len(sizes) != rank:
        raise ShapeError(f"{what}: the window has {len(sizes)} dimensions, expected {rank}")

    def field(key: str, default: Any) -> tuple[Any, ...]:
        values = tuple(value.get(key, (default,) * rank))
        if len(values) != rank:
            raise ShapeError(f"{what}: window {key} has {len(values)} entries, expected {rank}")
        return values

    pads = field("pad", (0, 0))
    for pad in pads:
        if not isinstance(pad, (tuple, list)) or len(pad) != 2:
            raise ShapeError(f"{what}: window pad entries are (low, high) pairs, got {pad!r}")
    strides, lhs, rhs = field("stride", 1), field("lhs_dilate", 1), field("rhs_dilate", 1)
    reversal = field("rhs_reversal", 0)
    return tuple(WindowDim(int(s), int(st), int(p[0]), int(p[1]), int(b), int(w), bool(r))
                 for s, st, p, b, w, r in zip(sizes, strides, pads, lhs, rhs, reversal))


def windowed_dimensions(shape: Shape, window: Sequence[WindowDim],
                        what: str) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The dims (and dynamic flags) of ``shape`` after ``window`` (each dim one WindowDim)."""
    sizes = []
    for i, (size, dim) in enumerate(zip(shape.dimensions, window)):
        sizes.append(window_output_size(size, dim.size, dim.stride, dim.low, dim.high, dim.base_dilation,
                                        dim.window_dilation, f"{what} dimension {i}"))
    return tuple(sizes), tuple(shape.dynamic_dimensions)


def check_scalar_computation(call: Call, signature: Signature, operand_types: Sequence[ElementType],
                             key: str) -> Shape:
    """Checks a reducer-like computation ``(T1.., T1..) -> (T1..)`` over scalars; returns its result."""
    n = len(operand_types)
    if len(signature.parameters) != 2 * n:
        raise ShapeError(f"{call.opcode}: the {key} computation takes {len(signature.parameters)} parameters, "
                         f"expected {2 * n}")
    results = signature.result.tuple_shapes if signature.result.is_tuple and n != 1 else (signature.result,)
    if signature.result.is_tuple and n == 1:
        results = signature.result.tuple_shapes if len(signature.result.tuple_shapes) == 1 else (signature.result,)
    if len(results) != n:
        raise ShapeError(f"{call.opcode}: the {key} computation returns {text(signature.result)}, expected {n} "
                         f"scalar{'s' if n > 1 else ''}")
    for i, result in enumerate(results):
        if not result.is_scalar:
            raise ShapeError(f"{call.opcode}: the {key} computation must return scalars, got {text(result)}")
        for param in (signature.parameters[i], signature.parameters[n + i]):
            if not compatible(param, result):
                raise ShapeError(f"{call.opcode}: the {key} computation's accumulator {text(result)} does not match "
                                 f"its parameter {text(param)}")
    return signature.result
