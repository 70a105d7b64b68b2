"""The layout XLA's parser gives an instruction written without a shape (inference itself gives default layouts).

XLA's ShapeInference builds some results from an operand's shape (layout included) and others with
``ShapeUtil::MakeShape`` (default layout). Checked against XLA's parser (jaxlib 0.10.2), operand by operand:
element-wise ops, reverse, set-dimension-size, cholesky, fft, batch-norm-*, select-and-scatter, domain keep their
first operand's layout; clamp its operand's (the middle one); select its predicate's (on_true's for a scalar
predicate); triangular-solve ``b``'s; scatter and sort their operands'; tuple, get-tuple-element, while,
add-dependency their operands' shapes; call and conditional the (first) called computation's root; transpose
permutes its operand's layout so that it stays a bitcast; scan stacks the callee's per-step output layouts
(``_stacked``) and keeps its carries'. Everything else (dot, convolution, reduce, pad,
concatenate, gather, map, topk ...) has the default layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..broadcast import BINARY_OPS
from ..inference import Signature
from ..shape import Shape, tuple_shape

__all__ = ["with_xla_layout"]

_ELEMENTWISE = frozenset(BINARY_OPS) | frozenset("""abs cbrt ceil compare copy cosine count-leading-zeros erf
exponential exponential-minus-one floor imag is-finite log log-plus-one logistic negate not popcnt real
round-nearest-afz round-nearest-even rsqrt sign sine sqrt tan tanh atan2 complex domain reverse set-dimension-size
cholesky fft batch-norm-inference batch-norm-training batch-norm-grad select-and-scatter while add-dependency
opt-barrier""".split())


def _relaid(inferred: Shape, source: Shape | None) -> Shape:
    """``inferred`` with ``source``'s layout wherever both are arrays of one rank (tuples element by element)."""
    if source is None:
        return inferred
    if inferred.is_tuple:
        if not source.is_tuple:
            if inferred.tuple_shapes:  # batch-norm: the first element is laid out like the operand
                return tuple_shape([_relaid(inferred.tuple_shapes[0], source), *inferred.tuple_shapes[1:]])
            return inferred
        if len(source.tuple_shapes) != len(inferred.tuple_shapes):
            return inferred
        return tuple_shape([_relaid(i, s) for i, s in zip(inferred.tuple_shapes, source.tuple_shapes)])
    if not (inferred.is_array and source.is_array) or source.layout is None or source.rank != inferred.rank:
        return inferred
    layout = source.layout
    if layout.element_size_in_bits and inferred.element_type != source.element_type:
        layout = layout.replace(element_size_in_bits=0)  # XLA's ChangeElementType drops E(n) (s4 compare -> pred)
    return Shape.trusted(inferred.element_type, inferred.dimensions, inferred.dynamic_dimensions, layout)


def _transposed(inferred: Shape, operand: Shape, permutation: Any) -> Shape:
    """``inferred`` with the operand's layout permuted like its dimensions (XLA's ShapeUtil::PermuteDimensions)."""
    layout = operand.layout
    if layout is None or not inferred.is_array or not isinstance(permutation, tuple) \
            or sorted(permutation) != list(range(inferred.rank)) or len(layout.minor_to_major) != inferred.rank:
        return inferred
    inverse = [0] * len(permutation)
    for position, dimension in enumerate(permutation):
        inverse[dimension] = position
    permuted = layout.replace(minor_to_major=tuple(inverse[d] for d in layout.minor_to_major))
    return Shape.trusted(inferred.element_type, inferred.dimensions, inferred.dynamic_dimensions, permuted)


def _stacked(inferred: Shape, step: Shape, dimension: int) -> Shape:
    """``inferred`` (``step`` with a dimension inserted at ``dimension``) laid out as XLA inserts it: the new
    dimension right above the step's dimension ``dimension`` in minor-to-major order, or most minor at the end."""
    layout = step.layout
    if layout is None or not (inferred.is_array and step.is_array) or inferred.rank != step.rank + 1 \
            or len(layout.minor_to_major) != step.rank:
        return inferred
    order = [d + (d >= dimension) for d in layout.minor_to_major]
    at = order.index(dimension + 1) + 1 if dimension < step.rank else 0
    order.insert(at, dimension)
    stacked = layout.replace(minor_to_major=tuple(order))
    return Shape.trusted(inferred.element_type, inferred.dimensions, inferred.dynamic_dimensions, stacked)


def _scanned(inferred: Shape, attributes: Mapping[str, Any], computations: Mapping[str, Signature]) -> Shape:
    """scan: per-step outputs stacked (see ``_stacked``), final carries as the callee's root lays them out."""
    name, dimension, carries = attributes.get("to_apply"), attributes.get("dimensions"), attributes.get("num_carries")
    signature = computations.get(name) if isinstance(name, str) else None
    if isinstance(dimension, tuple) and len(dimension) == 1:
        dimension = dimension[0]
    if signature is None or not inferred.is_tuple or not isinstance(dimension, int) or not isinstance(carries, int):
        return inferred
    root = signature.result
    results = root.tuple_shapes if root.is_tuple else (root,)
    if len(results) != len(inferred.tuple_shapes) or not 0 <= carries <= len(results):
        return inferred
    outputs = len(results) - carries
    return tuple_shape([_stacked(i, r, dimension) if n < outputs else _relaid(i, r)
                        for n, (i, r) in enumerate(zip(inferred.tuple_shapes, results))])


def _source(opcode: str, operands: Sequence[Shape], attributes: Mapping[str, Any],
            computations: Mapping[str, Signature]) -> Shape | None:
    """The shape whose layouts XLA's inference carries into the result of ``opcode`` (None: default layouts)."""
    if not operands:
        return None
    if opcode in _ELEMENTWISE:
        return operands[0]
    if opcode == "select" and len(operands) == 3:
        return operands[0] if operands[0].is_array and operands[0].rank else operands[1]
    if opcode in ("clamp", "triangular-solve") and len(operands) >= 2:
        return operands[1]
    if opcode == "tuple":
        return tuple_shape(list(operands))
    if opcode == "sort":
        return operands[0] if len(operands) == 1 else tuple_shape(list(operands))
    if opcode == "scatter" and len(operands) % 2 == 1:
        count = len(operands) // 2
        return operands[0] if count == 1 else tuple_shape(list(operands[:count]))
    if opcode == "get-tuple-element":
        index = attributes.get("index")
        tuple_ = operands[0]
        if isinstance(index, int) and tuple_.is_tuple and 0 <= index < len(tuple_.tuple_shapes):
            return tuple_.tuple_shapes[index]
        return None
    if opcode in ("call", "conditional"):
        return _called_root(opcode, attributes, computations)
    return None


def _called_root(opcode: str, attributes: Mapping[str, Any], computations: Mapping[str, Signature]) -> Shape | None:
    """The root shape of ``to_apply`` (call) or of the first branch (conditional)."""
    if opcode == "call":
        name = attributes.get("to_apply")
    else:
        branches = attributes.get("branch_computations")
        name = branches[0] if isinstance(branches, tuple) and branches else attributes.get("true_computation")
    signature = computations.get(name) if isinstance(name, str) else None
    return signature.result if signature is not None else None


def with_xla_layout(opcode: str, operands: Sequence[Shape], inferred: Shape,
                    attributes: Mapping[str, Any] | None = None,
                    computations: Mapping[str, Signature] | None = None) -> Shape:
    """``inferred`` (default layouts) with the layouts XLA's parser gives an instruction written without a shape.

    >>> from xlashapes.text import parse_shape
    >>> x = parse_shape("f32[2,3]{0,1}")
    >>> str(with_xla_layout("compare", [x, x], parse_shape("pred[2,3]")))
    'pred[2,3]{0,1}'
    >>> str(with_xla_layout("transpose", [parse_shape("f32[2,3,4]{0,2,1}")], parse_shape("f32[3,4,2]"),
    ...                     {"dimensions": (1, 2, 0)}))
    'f32[3,4,2]{2,1,0}'
    """
    attributes = attributes or {}
    if opcode == "transpose" and len(operands) == 1:
        return _transposed(inferred, operands[0], attributes.get("dimensions"))
    if opcode == "scan":
        return _scanned(inferred, attributes, computations or {})
    return _relaid(inferred, _source(opcode, operands, attributes, computations or {}))
