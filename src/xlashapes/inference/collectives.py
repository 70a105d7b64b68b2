"""Collectives: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute/broadcast, async forms."""

from __future__ import annotations

from typing import Any

from ..errors import ShapeError
from ..shape import UNBOUNDED_SIZE, Shape
from ._common import U32, Call, array_shape, check_scalar_computation, like, text, tuple_of


def _result(shapes: list[Shape]) -> Shape:
    return like(shapes[0]) if len(shapes) == 1 else tuple_of(shapes)


def group_size(call: Call) -> int | None:
    """The number of participants per group from ``replica_groups`` (None when no group is written).

    >>> group_size(Call("all-gather", (), {"replica_groups": ((0, 1), (2, 3))}, {}))
    2
    """
    groups: Any = call.get("replica_groups", ())
    if not isinstance(groups, (tuple, list)) or not groups:
        return None
    first = groups[0]
    if not isinstance(first, (tuple, list)):
        raise ShapeError(f"replica_groups must be a list of groups, got {groups!r}")
    sizes = {len(group) for group in groups}
    if len(sizes) != 1:
        raise ShapeError(f"replica_groups {groups!r} are not all of one size")
    return len(first)


def _operands(call: Call) -> list[Shape]:
    call.at_least(1)
    return list(call.arrays())


def all_reduce_shape(call: Call) -> Shape:
    """shape_inference.cc, InferAllReduceShape: the operand(s), a tuple when several (also all-reduce-start).

    >>> from xlashapes import parse_shape
    >>> str(all_reduce_shape(Call("all-reduce", (parse_shape("f32[4]"),), {}, {})))
    'f32[4]{0}'
    """
    shapes = _operands(call)
    _check_reducer(call, shapes)
    return _result(shapes)


def _check_reducer(call: Call, shapes: list[Shape]) -> None:
    """The to_apply computation reduces two scalars of every operand's element type."""
    if "to_apply" in call.attributes and call.computations:
        signature = call.signature("to_apply")
        for shape in shapes:
            check_scalar_computation(call, signature, [shape.element_type], "to_apply")
            if signature.parameters[0].element_type != shape.element_type:
                raise ShapeError(f"{call.opcode}: the to_apply computation reduces {signature.parameters[0]} values, "
                                 f"not the {shape.element_type} of {text(shape)}")


def _gather_dimension(call: Call, shapes: list[Shape]) -> int:
    dim = call.integer("dimensions")
    for shape in shapes:
        if not 0 <= dim < shape.rank:
            raise ShapeError(f"{call.opcode} dimension {dim} is out of range for {text(shape)}")
    return dim


def _scaled(call: Call, shapes: list[Shape], multiply: bool) -> list[Shape]:
    dim = _gather_dimension(call, shapes)
    count = group_size(call)
    if count is None:
        raise ShapeError(f"{call.opcode} without replica_groups needs a written shape (the group size is the "
                         f"module's replica or partition count)")
    results = []
    for shape in shapes:
        dims = list(shape.dimensions)
        size = dims[dim]
        if multiply:  # shape_inference.cc, InferAllGatherShape: ? stays ?
            dims[dim] = size if size == UNBOUNDED_SIZE else size * count
        else:  # InferReduceScatterShape: the size must divide; a dynamic dimension becomes ?
            if size != UNBOUNDED_SIZE and size % count:
                raise ShapeError(f"{call.opcode} dimension {dim} of {text(shape)} does not split into {count} shards")
            dims[dim] = UNBOUNDED_SIZE if shape.dynamic_dimensions[dim] else size // count
        results.append(array_shape(shape.element_type, dims, shape.dynamic_dimensions))
    return results


def all_gather_shape(call: Call) -> Shape:
    """shape_inference.cc, InferAllGatherShape: dimension ``dimensions`` times the group size.

    >>> from xlashapes import parse_shape
    >>> str(all_gather_shape(Call("all-gather", (parse_shape("f32[2,3]"),), {"dimensions": (0,),
    ...                      "replica_groups": ((0, 1, 2, 3),)}, {})))
    'f32[8,3]{1,0}'
    """
    shapes = _operands(call)
    return _result(_scaled(call, shapes, True))


def all_gather_start_shape(call: Call) -> Shape:
    """shape_inference.cc, InferAllGatherStartShape: (operand(s), gathered result(s)).

    >>> from xlashapes import parse_shape
    >>> str(all_gather_start_shape(Call("all-gather-start", (parse_shape("f32[2]"),), {"dimensions": (0,),
    ...                            "replica_groups": ((0, 1),)}, {})))
    '(f32[2]{0}, f32[4]{0})'
    """
    shapes = _operands(call)
    return tuple_of([_result(shapes), _result(_scaled(call, shapes, True))])


def reduce_scatter_shape(call: Call) -> Shape:
    """shape_inference.cc, InferReduceScatterShape: dimension ``dimensions`` divided by the group size.

    >>> from xlashapes import parse_shape
    >>> str(reduce_scatter_shape(Call("reduce-scatter", (parse_shape("f32[8]"),), {"dimensions": (0,),
    ...                          "replica_groups": ((0, 1),)}, {})))
    'f32[4]{0}'
    """
    shapes = _operands(call)
    _check_reducer(call, shapes)
    return _result(_scaled(call, shapes, False))


def all_to_all_shape(call: Call) -> Shape:
    """shape_inference.cc, InferAllToAllShape / InferAllToAllTupleShape: the operand(s) unchanged.

    >>> from xlashapes import parse_shape
    >>> str(all_to_all_shape(Call("all-to-all", (parse_shape("f32[4,8]"),), {"dimensions": (1,),
    ...                      "replica_groups": ((0, 1),)}, {})))
    'f32[4,8]{1,0}'
    """
    shapes = _operands(call)
    if call.has("dimensions"):
        if len(shapes) != 1:
            raise ShapeError("all-to-all with a split dimension takes one operand")
        dim = _gather_dimension(call, shapes)
        shape = shapes[0]
        if any(d and size != UNBOUNDED_SIZE for d, size in zip(shape.dynamic_dimensions, shape.dimensions)):
            raise ShapeError(f"all-to-all does not take bounded dynamic shapes like {text(shape)}")
        count = group_size(call)
        size = shape.dimensions[dim]
        if count and size != UNBOUNDED_SIZE and size % count:
            raise ShapeError(f"all-to-all split dimension {dim} of {text(shape)} does not split into {count}")
        return like(shape)
    for i, shape in enumerate(shapes):
        if UNBOUNDED_SIZE in shape.dimensions:
            raise ShapeError(f"all-to-all of several operands does not take unbounded shapes like {text(shape)}")
        if shape != shapes[0] and not shape.equal(shapes[0], ignore_memory_space=True):
            raise ShapeError(f"all-to-all operand {i} {text(shape)} differs from operand 0 {text(shapes[0])}")
    return _result(shapes)


def collective_broadcast_shape(call: Call) -> Shape:
    """shape_inference.cc, InferCollectiveBroadcastShape: operand 0's shape.

    >>> from xlashapes import parse_shape
    >>> str(collective_broadcast_shape(Call("collective-broadcast", (parse_shape("f32[4]"),), {}, {})))
    'f32[4]{0}'
    """
    call.at_least(1)
    return like(call.array(0))


def collective_permute_shape(call: Call) -> Shape:
    """shape_inference.cc, InferCollectivePermuteShape: the operand (the output buffer for the in-place form).

    >>> from xlashapes import parse_shape
    >>> str(collective_permute_shape(Call("collective-permute", (parse_shape("f32[4]"),),
    ...                              {"source_target_pairs": ((0, 1),)}, {})))
    'f32[4]{0}'
    """
    call.at_least(1)
    if len(call.operands) == 4:
        return like(call.operands[1])
    shapes = _operands(call)
    return _result(shapes)


def collective_permute_start_shape(call: Call) -> Shape:
    """shape_inference.cc, InferCollectivePermuteStartShape: (operand, result, u32[], u32[]) contexts.

    >>> from xlashapes import parse_shape
    >>> str(collective_permute_start_shape(Call("collective-permute-start", (parse_shape("f32[4]"),), {}, {})))
    '(f32[4]{0}, f32[4]{0}, u32[], u32[])'
    """
    call.at_least(1)
    context = array_shape(U32, ())
    if len(call.operands) == 4:
        return tuple_of([call.operands[0], call.operands[1], context, context])
    operands = _result(_operands(call))
    return tuple_of([operands, operands, context, context])


def collective_done_shape(call: Call) -> Shape:
    """all-gather-done, collective-permute-done: element 1 of the start's tuple; all-reduce-done: the operand.

    >>> from xlashapes import parse_shape
    >>> str(collective_done_shape(Call("all-gather-done", (parse_shape("(f32[2], f32[4])"),), {}, {})))
    'f32[4]{0}'
    """
    call.count(1)
    operand = call.operands[0]
    if call.opcode == "all-reduce-done":
        return like(operand)
    if not operand.is_tuple or len(operand.tuple_shapes) < 2:
        raise ShapeError(f"{call.opcode} takes the tuple its start returns, got {text(operand)}")
    return like(operand.tuple_shapes[1])


def ragged_all_to_all_shape(call: Call) -> Shape:
    """shape_inference.cc, InferRaggedAllToAllShape: the output buffer (operand 1).

    >>> from xlashapes import parse_shape
    >>> s = parse_shape("s64[2]")
    >>> str(ragged_all_to_all_shape(Call("ragged-all-to-all", (parse_shape("f32[8]"), parse_shape("f32[6]"),
    ...                             s, s, s, s), {}, {})))
    'f32[6]{0}'
    """
    call.count(6)
    data, output = call.array(0, "input"), call.array(1, "output")
    if data.element_type != output.element_type or data.rank != output.rank:
        raise ShapeError(f"ragged-all-to-all input {text(data)} and output {text(output)} differ in type or rank")
    for i in range(2, 6):
        offsets = call.array(i)
        if not offsets.element_type.is_integral:
            raise ShapeError(f"ragged-all-to-all offsets and sizes are integers, operand {i} is {text(offsets)}")
    return like(output)
