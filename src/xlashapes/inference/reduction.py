"""Ops that apply a computation across elements: reduce, reduce-window, select-and-scatter, sort, map, topk."""

from __future__ import annotations

from ..errors import ShapeError
from ..shape import UNBOUNDED_SIZE, Shape
from ._common import (
    PRED,
    S32,
    Call,
    array_shape,
    check_scalar_computation,
    compatible,
    dimension_list,
    like,
    same_dimensions,
    text,
    tuple_of,
    window_dims,
    windowed_dimensions,
)


def _split_inputs(call: Call) -> tuple[tuple[Shape, ...], tuple[Shape, ...]]:
    """Variadic ops take N inputs then N init values."""
    count = len(call.operands)
    if count < 2 or count % 2:
        raise ShapeError(f"{call.opcode} takes N inputs and N init values, got {count} operands")
    n = count // 2
    inputs = tuple(call.array(i, f"input {i}") for i in range(n))
    inits = tuple(call.array(n + i, f"init value {i}") for i in range(n))
    for i, init in enumerate(inits):
        if not init.is_scalar:
            raise ShapeError(f"{call.opcode} init value {i} must be a scalar, got {text(init)}")
    for i, shape in enumerate(inputs[1:], 1):
        if not same_dimensions(shape, inputs[0]):
            raise ShapeError(f"{call.opcode} input {i} {text(shape)} does not have the dims of input 0 "
                             f"{text(inputs[0])}")
    return inputs, inits


def _accumulator_types(call: Call, inputs: tuple[Shape, ...], inits: tuple[Shape, ...]) -> list[Shape]:
    """The reducer's result scalars (checked against the init values and input types)."""
    if "to_apply" not in call.attributes:
        raise ShapeError(f"{call.opcode} needs attribute to_apply")
    signature = call.signature("to_apply")
    result = check_scalar_computation(call, signature, [s.element_type for s in inputs], "to_apply")
    n = len(inputs)
    accumulators = list(result.tuple_shapes) if result.is_tuple else [result]
    for i in range(n):
        init, acc = inits[i], accumulators[i]
        if not compatible(acc, init, ignore_fp_precision=True):
            raise ShapeError(f"{call.opcode}: the reducer's accumulator {text(acc)} does not match init value {i} "
                             f"{text(init)}")
        element = array_shape(inputs[i].element_type, ())
        if not compatible(element, signature.parameters[n + i], ignore_fp_precision=True):
            raise ShapeError(f"{call.opcode}: the reducer's parameter {n + i} {text(signature.parameters[n + i])} "
                             f"does not take elements of input {i} {text(inputs[i])}")
    return accumulators


def _result(shapes: list[Shape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else tuple_of(shapes)


def reduce_shape(call: Call) -> Shape:
    """shape_inference.cc, InferReduceShape: input dims minus ``dimensions``, in the reducer's result type(s).

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> s = parse_shape("f32[]")
    >>> call = Call("reduce", (parse_shape("f32[2,<=3,4]"), s), {"dimensions": (0,), "to_apply": "add"},
    ...             {"add": Signature((s, s), s)})
    >>> str(reduce_shape(call))
    'f32[<=3,4]{1,0}'
    """
    inputs, inits = _split_inputs(call)
    dims = dimension_list(call.integers("dimensions"), inputs[0].rank, "reduce dimensions")
    accumulators = _accumulator_types(call, inputs, inits)
    first = inputs[0]
    reduced = set(dims)
    kept = [i for i in range(first.rank) if i not in reduced]
    return _result([array_shape(acc.element_type, [first.dimensions[i] for i in kept],
                                [first.dynamic_dimensions[i] for i in kept]) for acc in accumulators])


def reduce_window_shape(call: Call) -> Shape:
    """shape_inference.cc, InferReduceWindowShape: each input windowed, in the reducer's result type(s).

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> s = parse_shape("f32[]")
    >>> call = Call("reduce-window", (parse_shape("f32[4,6]"), s), {"window": {"size": (2, 2), "stride": (2, 2)},
    ...             "to_apply": "add"}, {"add": Signature((s, s), s)})
    >>> str(reduce_window_shape(call))
    'f32[2,3]{1,0}'
    """
    inputs, inits = _split_inputs(call)
    window = window_dims(call.get("window", None), inputs[0].rank, "reduce-window window")
    accumulators = _accumulator_types(call, inputs, inits)
    sizes, flags = windowed_dimensions(inputs[0], window, "reduce-window")
    return _result([array_shape(acc.element_type, sizes, flags) for acc in accumulators])


def select_and_scatter_shape(call: Call) -> Shape:
    """shape_inference.cc, InferSelectAndScatterShape: the operand's shape; source is the windowed operand.

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> s, p = parse_shape("f32[]"), parse_shape("pred[]")
    >>> call = Call("select-and-scatter", (parse_shape("f32[4]"), parse_shape("f32[2]"), s),
    ...             {"window": {"size": (2,), "stride": (2,)}, "select": "ge", "scatter": "add"},
    ...             {"ge": Signature((s, s), p), "add": Signature((s, s), s)})
    >>> str(select_and_scatter_shape(call))
    'f32[4]{0}'
    """
    call.count(3)
    operand, source, init = call.array(0, "operand"), call.array(1, "source"), call.array(2, "init value")
    if not init.is_scalar:
        raise ShapeError(f"select-and-scatter init value must be a scalar, got {text(init)}")
    if "select" in call.attributes:
        select = call.signature("select")
        element = array_shape(operand.element_type, ())
        if (len(select.parameters) != 2 or not select.result.is_array or select.result.element_type != PRED
                or not select.result.is_scalar):
            raise ShapeError("select-and-scatter's select computation must take two scalars and return pred[]")
        for param in select.parameters:
            if not compatible(param, element, ignore_fp_precision=True):
                raise ShapeError(f"select-and-scatter's select parameter {text(param)} does not take "
                                 f"{operand.element_type} elements")
    if "scatter" in call.attributes:
        check_scalar_computation(call, call.signature("scatter"), [source.element_type], "scatter")
    window = window_dims(call.get("window", None), operand.rank, "select-and-scatter window")
    sizes, _ = windowed_dimensions(operand, window, "select-and-scatter")
    if not same_dimensions(source, array_shape(source.element_type, sizes)):
        raise ShapeError(f"select-and-scatter source {text(source)} must have the windowed operand's dims "
                         f"[{','.join(map(str, sizes))}]")
    return like(operand)


def sort_shape(call: Call) -> Shape:
    """shape_inference.cc, InferVariadicOpShape for kSort: the operand(s), a tuple when several.

    >>> from xlashapes import parse_shape
    >>> a, b = parse_shape("f32[5]"), parse_shape("s32[5]")
    >>> str(sort_shape(Call("sort", (a, b), {"dimensions": (0,)}, {})))
    '(f32[5]{0}, s32[5]{0})'
    """
    call.at_least(1)
    shapes = call.arrays()
    for i, shape in enumerate(shapes[1:], 1):
        if not same_dimensions(shape, shapes[0]):
            raise ShapeError(f"sort operand {i} {text(shape)} does not have the dims of operand 0 {text(shapes[0])}")
    if "to_apply" in call.attributes and call.computations:
        comparator = call.signature("to_apply")
        if len(comparator.parameters) != 2 * len(shapes):
            raise ShapeError(f"sort's comparator takes {len(comparator.parameters)} parameters, expected "
                             f"{2 * len(shapes)}")
        result = comparator.result
        if not (result.is_array and result.is_scalar and result.element_type == PRED):
            raise ShapeError(f"sort's comparator must return pred[], got {text(result)}")
    return _result(list(shapes))


def check_sort(call: Call, shape: Shape) -> None:
    """hlo_verifier.cc, HandleSort: the sort dimension exists (shape inference does not look at it).

    >>> from xlashapes import parse_shape
    >>> check_sort(Call("sort", (parse_shape("f32[3]"),), {"dimensions": (1,)}, {}), parse_shape("f32[3]"))
    Traceback (most recent call last):
    ...
    xlashapes.errors.ShapeError: sort dimension 1 is out of range for f32[3]
    """
    dim = call.integer("dimensions")
    if not 0 <= dim < max(call.operands[0].rank, 1):
        raise ShapeError(f"sort dimension {dim} is out of range for {text(call.operands[0])}")


def map_shape(call: Call) -> Shape:
    """shape_inference.cc, InferMapShape: the operands' dims in the computation's result type.

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> s = parse_shape("f32[]")
    >>> call = Call("map", (parse_shape("f32[3]"), parse_shape("f32[3]")), {"dimensions": (0,), "to_apply": "add"},
    ...             {"add": Signature((s, s), s)})
    >>> str(map_shape(call))
    'f32[3]{0}'
    """
    call.at_least(1)
    shapes = call.arrays()
    first = shapes[0]
    for i, shape in enumerate(shapes[1:], 1):
        if not same_dimensions(shape, first):
            raise ShapeError(f"map operand {i} {text(shape)} does not have the dims of operand 0 {text(first)}")
    if call.has("dimensions"):
        dims = call.integers("dimensions")
        if dims != tuple(range(first.rank)):
            raise ShapeError(f"map dimensions {list(dims)} must be every dimension in order, "
                             f"{list(range(first.rank))}")
    signature = call.signature("to_apply")
    if len(signature.parameters) != len(shapes):
        raise ShapeError(f"map's computation takes {len(signature.parameters)} parameters for {len(shapes)} operands")
    result = signature.result
    if not (result.is_array and result.is_scalar):
        raise ShapeError(f"map's computation must return a scalar, got {text(result)}")
    for i, (param, shape) in enumerate(zip(signature.parameters, shapes)):
        if not (param.is_array and param.is_scalar) or param.element_type != shape.element_type:
            raise ShapeError(f"map's computation parameter {i} {text(param)} does not take {shape.element_type} "
                             f"elements")
    return array_shape(result.element_type, first.dimensions, first.dynamic_dimensions)


def topk_shape(call: Call) -> Shape:
    """shape_inference.cc, InferTopKShape: (values, s32 indices), the last dimension cut to k.

    >>> from xlashapes import parse_shape
    >>> str(topk_shape(Call("topk", (parse_shape("f32[4,10]"),), {"k": 3}, {})))
    '(f32[4,3]{1,0}, s32[4,3]{1,0})'
    """
    call.count(1)
    operand = call.array(0)
    k = call.integer("k")
    if operand.rank < 1:
        raise ShapeError(f"topk needs an operand of rank >= 1, got {text(operand)}")
    if operand.dimensions[-1] == UNBOUNDED_SIZE:
        raise ShapeError(f"topk needs a bounded last dimension, got {text(operand)}")
    if k < 0 or k > operand.dimensions[-1]:
        raise ShapeError(f"topk k={k} must be between 0 and the last dimension of {text(operand)}")
    dims = (*operand.dimensions[:-1], k)
    flags = (*operand.dynamic_dimensions[:-1], False)
    return tuple_of([array_shape(operand.element_type, dims, flags), array_shape(S32, dims, flags)])
