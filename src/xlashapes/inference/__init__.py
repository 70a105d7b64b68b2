"""Shape inference for HLO instructions (a small stand-in: the inference package replaces it at the merge).

This stand-in implements the contract of the full package for a few opcodes only: element-wise unary and binary
ops, compare, select, tuple and get-tuple-element. Everything else raises ``ShapeError`` saying a written shape is
needed.

>>> from xlashapes.text import parse_shape
>>> str(infer_shape("add", [parse_shape("f32[2,3]"), parse_shape("f32[2,3]")]))
'f32[2,3]{1,0}'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..broadcast import BINARY_OPS, broadcast_shape
from ..dtypes import ELEMENT_TYPES
from ..errors import ShapeError
from ..shape import Shape, make_shape, tuple_shape
from ..text import shape_text

__all__ = ["INFERRED_OPCODES", "Signature", "infer_shape"]


@dataclass(frozen=True)
class Signature:
    """A called computation as inference sees it: its parameter shapes and its root (result) shape."""

    parameters: tuple[Shape, ...]
    result: Shape


_UNARY = frozenset("""abs ceil copy cosine exponential exponential-minus-one floor log log-plus-one logistic negate
not round-nearest-afz round-nearest-even rsqrt sign sine sqrt cbrt tan tanh erf popcnt count-leading-zeros""".split())

_FLOATING_UNARY = frozenset("""ceil cosine exponential exponential-minus-one floor log log-plus-one logistic
round-nearest-afz round-nearest-even rsqrt sine sqrt cbrt tan tanh erf""".split())
_INTEGRAL_UNARY = frozenset("popcnt count-leading-zeros".split())

INFERRED_OPCODES: frozenset[str] = frozenset(BINARY_OPS) | _UNARY | {"compare", "select", "tuple", "get-tuple-element"}
"""Every opcode ``infer_shape`` knows a rule for."""


def _text(shape: Shape) -> str:
    """A shape as an error message shows it (no layout)."""
    return shape_text(shape, print_layout=False)


def _array(shape: Shape, element_type: str | None = None) -> Shape:
    """``shape`` with another element type when given, keeping its layout (XLA's ChangeElementType)."""
    etype = ELEMENT_TYPES[element_type] if element_type else shape.element_type
    return make_shape(etype, shape.dimensions, dynamic_dimensions=shape.dynamic_dimensions, layout=shape.layout)


def _same_arrays(opcode: str, operands: Sequence[Shape]) -> Shape:
    """The common array shape of element-wise operands (dimensions equal, scalars not broadcast implicitly)."""
    first = operands[0]
    for index, operand in enumerate(operands):
        if not operand.is_array:
            raise ShapeError(f"{opcode}: operand {index} is {_text(operand)}, not an array")
        if operand.dimensions != first.dimensions:
            raise ShapeError(f"{opcode}: operand {index} {_text(operand)} does not have the dimensions of "
                             f"operand 0 {_text(first)}")
    return first


def infer_shape(opcode: str, operands: Sequence[Shape], attributes: Mapping[str, Any] | None = None,
                computations: Mapping[str, Signature] | None = None) -> Shape:
    """The result shape XLA's ShapeInference gives ``opcode`` applied to ``operands`` with these attributes.

    >>> from xlashapes.text import parse_shape
    >>> str(infer_shape("compare", [parse_shape("f32[2]"), parse_shape("f32[2]")], {"direction": "LT"}))
    'pred[2]{0}'
    """
    attributes = attributes or {}
    if opcode == "tuple":
        return tuple_shape(list(operands))
    if opcode == "get-tuple-element":
        index = attributes.get("index")
        if len(operands) != 1 or not operands[0].is_tuple:
            raise ShapeError("get-tuple-element takes one tuple operand")
        if not isinstance(index, int) or not 0 <= index < len(operands[0].tuple_shapes):
            raise ShapeError(f"get-tuple-element: index={index} is not an element of {_text(operands[0])}")
        return operands[0].tuple_shapes[index]
    if opcode in _UNARY:
        if len(operands) != 1:
            raise ShapeError(f"{opcode} takes 1 operand, not {len(operands)}")
        etype = operands[0].element_type
        if opcode in _FLOATING_UNARY and not (etype.is_floating or etype.is_complex):
            raise ShapeError(f"{opcode} takes a floating-point or complex operand, not {etype}")
        if opcode in _INTEGRAL_UNARY and not etype.is_integral:
            raise ShapeError(f"{opcode} takes an integral operand, not {etype}")
        return _array(_same_arrays(opcode, operands))
    if opcode in BINARY_OPS or opcode == "compare":
        if len(operands) != 2:
            raise ShapeError(f"{opcode} takes 2 operands, not {len(operands)}")
        for index, operand in enumerate(operands):
            if not operand.is_array:
                raise ShapeError(f"{opcode}: operand {index} is {_text(operand)}, not an array")
        if operands[0].element_type != operands[1].element_type:
            raise ShapeError(f"{opcode}: operand types {operands[0].element_type} and {operands[1].element_type} "
                             "differ")
        shape: Shape = broadcast_shape(operands[0], operands[1])
        if shape.dimensions == operands[0].dimensions:  # same shapes: the lhs's layout, rhs's dynamic dims
            shape = make_shape(shape.element_type, shape.dimensions, dynamic_dimensions=shape.dynamic_dimensions,
                               layout=operands[0].layout)
        return _array(shape, "pred" if opcode == "compare" else None)
    if opcode == "select":
        if len(operands) != 3:
            raise ShapeError(f"select takes 3 operands, not {len(operands)}")
        shape = _same_arrays(opcode, operands[1:])
        if operands[1].element_type != operands[2].element_type:
            raise ShapeError("select: the two branches have different types")
        pred = operands[0]
        if pred.is_array and pred.dimensions == shape.dimensions:  # a full-rank predicate gives its layout
            return make_shape(shape.element_type, shape.dimensions, dynamic_dimensions=shape.dynamic_dimensions,
                              layout=pred.layout)
        return _array(shape)
    raise ShapeError(f"{opcode}: no shape inference rule here; a written shape is needed")
