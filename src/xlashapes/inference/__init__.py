"""Shape inference for every HLO opcode, as XLA's ``service/shape_inference.cc`` and the HLO verifier define it.

``infer_shape(opcode, operand_shapes, attributes, computations)`` gives the result shape XLA infers (default
layout); ``check_shape(...)`` says whether a written shape is what XLA accepts, including for the opcodes whose
shape must be written (broadcast, reshape, convert, iota, custom-call, ...). Attribute values are the typed values
``HloInstruction.attributes.typed(key)`` returns (``dimensions`` -> tuple of ints, ``window`` -> dict, ...).

>>> from xlashapes import parse_shape
>>> str(infer_shape("dot", [parse_shape("f32[2,3]"), parse_shape("f32[3,4]")],
...                 {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}))
'f32[2,4]{1,0}'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..dtypes import ElementType, Kind
from ..errors import ShapeError, XlaShapesError
from ..shape import Shape
from . import collectives, control, data_movement, elementwise, gather_scatter, linalg, reduction
from ._common import Call, Signature, compatible, text
from .elementwise import BINARY_OPCODES, UNARY_OPCODES

__all__ = [
    "INFERRED_OPCODES",
    "PARSER_INFERRED_OPCODES",
    "WRITTEN_SHAPE_OPCODES",
    "Signature",
    "check_shape",
    "infer_shape",
]

Rule = Callable[[Call], Shape]
_T = TypeVar("_T")

_RULES: dict[str, Rule] = {
    **dict.fromkeys(UNARY_OPCODES, elementwise.unary_shape),
    **dict.fromkeys(BINARY_OPCODES, elementwise.binary_shape),
    "select": elementwise.ternary_shape,
    "clamp": elementwise.ternary_shape,
    "reduce-precision": elementwise.reduce_precision_shape,
    "transpose": data_movement.transpose_shape,
    "reverse": data_movement.reverse_shape,
    "slice": data_movement.slice_shape,
    "dynamic-slice": data_movement.dynamic_slice_shape,
    "dynamic-update-slice": data_movement.dynamic_update_slice_shape,
    "concatenate": data_movement.concatenate_shape,
    "pad": data_movement.pad_shape,
    "get-dimension-size": data_movement.get_dimension_size_shape,
    "set-dimension-size": data_movement.set_dimension_size_shape,
    "dot": linalg.dot_shape,
    "ragged-dot": linalg.ragged_dot_shape,
    "scaled-dot": linalg.scaled_dot_shape,
    "convolution": linalg.convolution_shape,
    "cholesky": linalg.cholesky_shape,
    "triangular-solve": linalg.triangular_solve_shape,
    "fft": linalg.fft_shape,
    "batch-norm-training": linalg.batch_norm_shape,
    "batch-norm-inference": linalg.batch_norm_shape,
    "batch-norm-grad": linalg.batch_norm_shape,
    "reduce": reduction.reduce_shape,
    "reduce-window": reduction.reduce_window_shape,
    "select-and-scatter": reduction.select_and_scatter_shape,
    "sort": reduction.sort_shape,
    "map": reduction.map_shape,
    "topk": reduction.topk_shape,
    "gather": gather_scatter.gather_shape,
    "scatter": gather_scatter.scatter_shape,
    "tuple": control.tuple_op_shape,
    "get-tuple-element": control.get_tuple_element_shape,
    "while": control.while_shape,
    "conditional": control.conditional_shape,
    "call": control.call_shape,
    "fusion": control.call_shape,
    "async-start": control.async_start_shape,
    "async-update": control.same_as_operand,
    "async-done": control.async_done_shape,
    "add-dependency": control.same_as_operand,
    "opt-barrier": control.same_as_operand,
    "after-all": control.token_result,
    "outfeed": control.token_result,
    "send-done": control.token_result,
    "send": control.send_shape,
    "recv-done": control.recv_done_shape,
    "copy-start": control.copy_start_shape,
    "copy-done": control.copy_done_shape,
    "partition-id": control.id_shape,
    "replica-id": control.id_shape,
    "rng-get-and-update-state": control.rng_state_shape,
    "scan": control.scan_shape,
    "all-reduce": collectives.all_reduce_shape,
    "all-reduce-start": collectives.all_reduce_shape,
    "all-reduce-done": collectives.collective_done_shape,
    "all-gather": collectives.all_gather_shape,
    "all-gather-start": collectives.all_gather_start_shape,
    "all-gather-done": collectives.collective_done_shape,
    "reduce-scatter": collectives.reduce_scatter_shape,
    "all-to-all": collectives.all_to_all_shape,
    "ragged-all-to-all": collectives.ragged_all_to_all_shape,
    "collective-permute": collectives.collective_permute_shape,
    "collective-permute-start": collectives.collective_permute_start_shape,
    "collective-permute-done": collectives.collective_done_shape,
    "collective-broadcast": collectives.collective_broadcast_shape,
}

INFERRED_OPCODES: frozenset[str] = frozenset(_RULES)
"""Every opcode ``infer_shape`` knows a rule for: a written shape must be compatible with the inferred one."""

PARSER_INFERRED_OPCODES: frozenset[str] = frozenset(
    UNARY_OPCODES | BINARY_OPCODES | {
        "select", "clamp", "transpose", "reverse", "concatenate", "pad", "get-dimension-size",
        "set-dimension-size", "dot", "ragged-dot", "scaled-dot", "convolution", "cholesky", "triangular-solve", "fft",
        "batch-norm-training", "batch-norm-inference", "batch-norm-grad", "reduce", "reduce-window",
        "select-and-scatter", "sort", "map",
        "topk", "gather", "scatter", "tuple", "get-tuple-element", "while", "conditional", "call", "scan",
        "add-dependency", "after-all", "partition-id", "replica-id", "broadcast"}
)
"""Opcodes XLA's parser accepts without a written shape (it fills in ``infer_shape``'s answer).

Quirks of XLA's parser (jaxlib 0.10.2): for ``broadcast`` it reads ``dimensions`` as new major sizes; a variadic
``reduce-window`` (several inputs) is refused without a written shape although the verifier knows its rule.
"""

_WRITTEN: dict[str, Callable[[Call, Shape], None] | None] = {
    "broadcast": data_movement.check_broadcast,
    "reshape": data_movement.check_reshape,
    "dynamic-reshape": data_movement.check_dynamic_reshape,
    "iota": data_movement.check_iota,
    "rng": control.check_rng,
    "rng-bit-generator": control.check_rng_bit_generator,
    "infeed": control.check_io,
    "recv": control.check_io,
    "convert": None,
    "bitcast-convert": None,
    "stochastic-convert": None,
    "bitcast": None,
    "parameter": None,
    "constant": None,
    "custom-call": None,
}

WRITTEN_SHAPE_OPCODES: frozenset[str] = frozenset(_WRITTEN)

_VERIFIER_ONLY: dict[str, Callable[[Call, Shape], None]] = {
    "sort": reduction.check_sort,
    "after-all": control.check_tokens,
    "add-dependency": control.check_tokens,
}
"""Checks HloVerifier makes beyond shape inference (run by ``check_shape`` after the shapes agree)."""
"""Opcodes whose shape must be written; ``check_shape`` checks what XLA's verifier checks for them."""


def _call(opcode: str, operands: Sequence[Shape], attributes: Mapping[str, Any] | None,
          computations: Mapping[str, Signature] | None) -> Call:
    if not isinstance(opcode, str):
        raise ShapeError(f"the opcode must be a string, got {opcode!r}")
    shapes = tuple(operands)
    for i, shape in enumerate(shapes):
        if not isinstance(shape, Shape):
            raise ShapeError(f"operand {i} of {opcode} must be a Shape, got {type(shape).__name__}")
    return Call(opcode, shapes, attributes or {}, computations or {})


def infer_shape(opcode: str, operands: Sequence[Shape], attributes: Mapping[str, Any] | None = None,
                computations: Mapping[str, Signature] | None = None) -> Shape:
    """The result shape XLA's ShapeInference gives ``opcode`` applied to ``operands`` with these attributes.

    >>> from xlashapes import parse_shape
    >>> str(infer_shape("add", [parse_shape("f32[2,<=3]"), parse_shape("f32[2,3]")]))
    'f32[2,<=3]{1,0}'
    >>> infer_shape("reshape", [parse_shape("f32[6]")])
    Traceback (most recent call last):
    ...
    xlashapes.errors.ShapeError: reshape: XLA cannot infer this shape; it must be written
    """
    call = _call(opcode, operands, attributes, computations)
    if opcode == "broadcast":
        return _guarded(data_movement.broadcast_parser_shape, call)
    rule = _RULES.get(opcode)
    if rule is None:
        if opcode in _WRITTEN:
            raise ShapeError(f"{opcode}: XLA cannot infer this shape; it must be written")
        raise ShapeError(f"unknown opcode {opcode!r}; no shape can be inferred, a written shape is needed")
    return _guarded(rule, call)


def _guarded(rule: Callable[..., _T], *args: Any) -> _T:
    """``rule(*args)``; attribute values of the wrong Python type become a ShapeError naming the opcode."""
    try:
        return rule(*args)
    except XlaShapesError:
        raise
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError) as error:
        what = f"{type(error).__name__}: {error}"
        raise ShapeError(f"{args[0].opcode}: malformed attribute or operand ({what})") from None


def check_shape(opcode: str, operands: Sequence[Shape], shape: Shape, attributes: Mapping[str, Any] | None = None,
                computations: Mapping[str, Signature] | None = None) -> None:
    """ShapeError unless ``shape`` is what XLA's verifier accepts for this instruction (layouts ignored).

    >>> from xlashapes import parse_shape
    >>> check_shape("broadcast", [parse_shape("f32[3]")], parse_shape("f32[2,3]"), {"dimensions": (1,)})
    >>> check_shape("slice", [parse_shape("f32[4]")], parse_shape("f32[3]"), {"slice": ((0, 2, 1),)})
    Traceback (most recent call last):
    ...
    xlashapes.errors.ShapeError: slice: the written shape f32[3] is not the inferred f32[2]
    """
    _guarded(_check_shape, Call(opcode if isinstance(opcode, str) else repr(opcode), (), {}, {}), opcode, operands,
             shape, attributes, computations)


def _check_shape(_: Call, opcode: str, operands: Sequence[Shape], shape: Shape,
                 attributes: Mapping[str, Any] | None, computations: Mapping[str, Signature] | None) -> None:
    call = _call(opcode, operands, attributes, computations)
    if not isinstance(shape, Shape):
        raise ShapeError(f"the written shape of {opcode} must be a Shape, got {type(shape).__name__}")
    if opcode in _RULES:
        inferred = _RULES[opcode](call)
        if opcode in _PREFERRED_TYPE_OPCODES:
            inferred = _preferred(call, inferred, shape)
        if not _matches(shape, inferred):
            raise ShapeError(f"{opcode}: the written shape {text(shape)} is not the inferred {text(inferred)}")
        extra = _VERIFIER_ONLY.get(opcode)
        if extra is not None:
            extra(call, shape)
        return
    if opcode in _WRITTEN:
        check = _WRITTEN[opcode]
        if check is not None:
            check(call, shape)
        elif opcode in ("convert", "bitcast-convert"):
            _check_conversion(call, shape)
        elif opcode == "stochastic-convert":
            call.count(2)
            _expect(call, shape, elementwise.stochastic_convert_shape(call.operands[0], call.operands[1],
                                                                      _element_type(call, shape)))
        return
    raise ShapeError(f"unknown opcode {opcode!r}")


_PREFERRED_TYPE_OPCODES = frozenset(("dot", "ragged-dot", "scaled-dot", "convolution"))
"""Opcodes whose written element type HloVerifier passes to inference as the preferred element type."""


def _preferred(call: Call, inferred: Shape, shape: Shape) -> Shape:
    """``inferred`` with the written element type, as XLA's MaybeUpcast allows (a non-float never narrows).

    >>> from xlashapes import parse_shape
    >>> str(_preferred(Call("dot", (), {}, {}), parse_shape("s8[2]"), parse_shape("s32[2]")))
    's32[2]{0}'
    """
    if not (shape.is_array and inferred.is_array) or shape.element_type == inferred.element_type:
        return inferred
    source, wanted = inferred.element_type, shape.element_type
    if source.kind is not Kind.FLOAT and wanted.bits < source.bits:
        raise ShapeError(f"{call.opcode}: the written element type {wanted} is narrower than the operands' {source}")
    return Shape.trusted(wanted, inferred.dimensions, inferred.dynamic_dimensions, inferred.layout)


def _element_type(call: Call, shape: Shape) -> ElementType:
    if not shape.is_array:
        raise ShapeError(f"{call.opcode} makes an array, not {text(shape)}")
    return shape.element_type


def _check_conversion(call: Call, shape: Shape) -> None:
    call.count(1)
    etype = _element_type(call, shape)
    if call.opcode == "convert":
        _expect(call, shape, elementwise.convert_shape(call.operands[0], etype))
    else:
        _expect(call, shape, elementwise.bitcast_convert_shape(call.operands[0], etype))


def _expect(call: Call, shape: Shape, inferred: Shape) -> None:
    if not _matches(shape, inferred):
        raise ShapeError(f"{call.opcode}: the written shape {text(shape)} is not the inferred {text(inferred)}")


def _matches(written: Shape, inferred: Shape) -> bool:
    """XLA's verifier in layout-insensitive mode: ShapeUtil::Compatible (dynamism and layout ignored)."""
    return compatible(written, inferred)
