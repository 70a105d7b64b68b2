"""Ops that move or pick elements: broadcast, reshape, transpose, slices, concatenate, pad, reverse, iota, sizes."""

from __future__ import annotations

import math

from ..errors import ShapeError
from ..shape import UNBOUNDED_SIZE, Shape
from ._common import S32, Call, array_shape, dimension_list, like, text
from .elementwise import higher_precision


def broadcast_parser_shape(call: Call) -> Shape:
    """hlo_parser.cc + shape_inference.cc, InferBroadcastShape: XLA's parser reads ``dimensions`` as new major sizes.

    XLA's parser, given ``broadcast(p), dimensions={0,1}`` without a shape, prepends sizes 0 and 1 to the
    operand's dims (the client-level Broadcast); a written shape is what real modules carry.

    >>> from xlashapes import parse_shape
    >>> str(broadcast_parser_shape(Call("broadcast", (parse_shape("f32[2]"),), {"dimensions": (3,)}, {})))
    'f32[3,2]{1,0}'
    """
    call.count(1)
    operand = call.array(0)
    sizes = call.integers("dimensions")
    if UNBOUNDED_SIZE in operand.dimensions:
        raise ShapeError(f"broadcast of an unbounded operand {text(operand)} needs a written shape")
    for size in sizes:
        if size < 0:
            raise ShapeError(f"broadcast size {size} is negative")
    return array_shape(operand.element_type, sizes + operand.dimensions,
                       (False,) * len(sizes) + operand.dynamic_dimensions)


def check_broadcast(call: Call, shape: Shape) -> None:
    """hlo_verifier.cc, HandleBroadcast: operand dim i has the size of result dim dimensions[i], same type.

    >>> from xlashapes import parse_shape
    >>> check_broadcast(Call("broadcast", (parse_shape("f32[3]"),), {"dimensions": (1,)}, {}), parse_shape("f32[2,3]"))
    """
    call.count(1)
    operand = call.array(0)
    if not shape.is_array or shape.element_type != operand.element_type:
        raise ShapeError(f"broadcast of {text(operand)} gives {operand.element_type} arrays, not {text(shape)}")
    dims = call.integers("dimensions")
    if len(dims) != operand.rank:
        raise ShapeError(f"broadcast dimensions has {len(dims)} entries, the operand {text(operand)} has rank "
                         f"{operand.rank}")
    for i, dim in enumerate(dims):
        if not 0 <= dim < shape.rank or shape.dimensions[dim] != operand.dimensions[i]:
            raise ShapeError(f"broadcast operand dimension {i} (size {operand.dimensions[i]}) does not match "
                             f"dimension {dim} of {text(shape)}")


def check_reshape(call: Call, shape: Shape) -> None:
    """hlo_verifier.cc, HandleReshape: same element type and element count.

    >>> from xlashapes import parse_shape
    >>> check_reshape(Call("reshape", (parse_shape("f32[2,3]"),), {}, {}), parse_shape("f32[6]"))
    """
    call.count(1)
    operand = call.array(0)
    if not shape.is_array or shape.element_type != operand.element_type:
        raise ShapeError(f"reshape keeps the element type of {text(operand)}, not {text(shape)}")
    if operand.is_static and shape.is_static:
        if math.prod(operand.dimensions) != math.prod(shape.dimensions):
            raise ShapeError(f"reshape of {text(operand)} to {text(shape)} changes the element count")


def check_dynamic_reshape(call: Call, shape: Shape) -> None:
    """hlo_verifier.cc, HandleDynamicReshape: one s32 scalar size per result dimension, same element type.

    >>> from xlashapes import parse_shape
    >>> s = parse_shape("s32[]")
    >>> check_dynamic_reshape(Call("dynamic-reshape", (parse_shape("f32[6]"), s, s), {}, {}), parse_shape("f32[<=2,3]"))
    """
    call.at_least(1)
    operand = call.array(0)
    if not shape.is_array or shape.element_type != operand.element_type:
        raise ShapeError(f"dynamic-reshape keeps the element type of {text(operand)}, not {text(shape)}")
    if len(call.operands) - 1 != shape.rank:
        raise ShapeError(f"dynamic-reshape to rank {shape.rank} needs {shape.rank} size operands, got "
                         f"{len(call.operands) - 1}")
    for size in call.operands[1:]:
        if not size.is_scalar or size.element_type != S32:
            raise ShapeError(f"dynamic-reshape sizes are s32 scalars, got {text(size)}")


def check_iota(call: Call, shape: Shape) -> None:
    """hlo_verifier.cc, HandleIota: an array of rank >= 1 whose iota_dimension exists.

    >>> from xlashapes import parse_shape
    >>> check_iota(Call("iota", (), {"iota_dimension": 0}, {}), parse_shape("s32[4]"))
    """
    call.count(0)
    if not shape.is_array or shape.rank == 0:
        raise ShapeError(f"iota makes an array of rank at least 1, not {text(shape)}")
    dim = call.integer("iota_dimension")
    if not 0 <= dim < shape.rank:
        raise ShapeError(f"iota_dimension {dim} is out of range for {text(shape)}")


def transpose_shape(call: Call) -> Shape:
    """shape_inference.cc, InferTransposeShape: result dim i is operand dim dimensions[i].

    >>> from xlashapes import parse_shape
    >>> str(transpose_shape(Call("transpose", (parse_shape("f32[2,<=3]"),), {"dimensions": (1, 0)}, {})))
    'f32[<=3,2]{1,0}'
    """
    call.count(1)
    operand = call.array(0)
    perm = call.integers("dimensions")
    if len(perm) != operand.rank or sorted(perm) != list(range(operand.rank)):
        raise ShapeError(f"transpose dimensions {list(perm)} is not a permutation of the {operand.rank} dimensions "
                         f"of {text(operand)}")
    return array_shape(operand.element_type, [operand.dimensions[p] for p in perm],
                       [operand.dynamic_dimensions[p] for p in perm])


def reverse_shape(call: Call) -> Shape:
    """shape_inference.cc, InferReverseShape: the operand's shape; dimensions in range and distinct.

    >>> from xlashapes import parse_shape
    >>> str(reverse_shape(Call("reverse", (parse_shape("f32[2,3]"),), {"dimensions": (0,)}, {})))
    'f32[2,3]{1,0}'
    """
    call.count(1)
    operand = call.array(0)
    dimension_list(call.integers("dimensions"), operand.rank, "reverse dimensions")
    return like(operand)


def slice_shape(call: Call) -> Shape:
    """shape_inference.cc, InferSliceShape: ceil((limit - start) / stride) per dimension.

    >>> from xlashapes import parse_shape
    >>> str(slice_shape(Call("slice", (parse_shape("f32[10]"),), {"slice": ((1, 10, 3),)}, {})))
    'f32[3]{0}'
    """
    call.count(1)
    operand = call.array(0)
    ranges = call.get("slice")
    if not isinstance(ranges, (tuple, list)) or len(ranges) != operand.rank:
        raise ShapeError(f"slice needs one [start:limit:stride] per dimension of {text(operand)}, got {ranges!r}")
    dims, flags = [], []
    for i, entry in enumerate(ranges):
        start, limit, stride = (*entry, 1)[:3]
        size = operand.dimensions[i]
        if start < 0:
            raise ShapeError(f"slice start {start} of dimension {i} is negative")
        if size != UNBOUNDED_SIZE and limit > size:
            raise ShapeError(f"slice limit {limit} of dimension {i} exceeds its size {size} in {text(operand)}")
        if start > limit:
            raise ShapeError(f"slice start {start} of dimension {i} is after its limit {limit}")
        if stride <= 0:
            raise ShapeError(f"slice stride {stride} of dimension {i} must be positive")
        dims.append((limit - start + stride - 1) // stride)
        # slicing one element out of a dynamic dimension makes it static; ? becomes the static slice size
        flags.append(operand.dynamic_dimensions[i] and size != UNBOUNDED_SIZE and dims[-1] != 1)
    return array_shape(operand.element_type, dims, flags)


def _check_indices(call: Call, indices: tuple[Shape, ...], rank: int) -> None:
    """Start indices: ``rank`` integral scalars of one type, or (old form) one rank-1 vector of ``rank``."""
    if indices and indices[0].rank == 1:  # the old form: one rank-1 index vector
        index = indices[0]
        if len(indices) != 1:
            raise ShapeError(f"{call.opcode} with a vector of start indices takes exactly one, got {len(indices)}")
        if not index.element_type.is_integral or index.dimensions[0] != rank:
            raise ShapeError(f"{call.opcode} start indices {text(index)} must be {rank} integers")
        return
    if len(indices) != rank:
        raise ShapeError(f"{call.opcode} needs {rank} start indices (one per operand dimension), got {len(indices)}")
    for index in indices:
        if not index.is_array or not index.is_scalar or not index.element_type.is_integral:
            raise ShapeError(f"{call.opcode} start indices must be integral scalars, got {text(index)}")
        if index.element_type != indices[0].element_type or index.rank != indices[0].rank:
            raise ShapeError(f"{call.opcode} start indices must share one type, got {text(indices[0])} and "
                             f"{text(index)}")


def dynamic_slice_shape(call: Call) -> Shape:
    """shape_inference.cc, InferDynamicSliceShape: the slice sizes, each within its dimension.

    >>> from xlashapes import parse_shape
    >>> i = parse_shape("s32[]")
    >>> call = Call("dynamic-slice", (parse_shape("f32[4,5]"), i, i), {"dynamic_slice_sizes": (2, 5)}, {})
    >>> str(dynamic_slice_shape(call))
    'f32[2,5]{1,0}'
    """
    call.at_least(1)
    operand = call.array(0)
    _check_indices(call, call.operands[1:], operand.rank)
    sizes = call.integers("dynamic_slice_sizes")
    if len(sizes) != operand.rank:
        raise ShapeError(f"dynamic-slice has {len(sizes)} slice sizes for rank {operand.rank} {text(operand)}")
    flags = []
    for i, (size, dim) in enumerate(zip(sizes, operand.dimensions)):
        if size < 0:
            raise ShapeError(f"dynamic-slice size {size} of dimension {i} is negative")
        if dim != UNBOUNDED_SIZE and size > dim:
            raise ShapeError(f"dynamic-slice size {size} of dimension {i} exceeds its size {dim}")
        flags.append(operand.dynamic_dimensions[i] and size > 1 and size == dim)
    return array_shape(operand.element_type, sizes, flags)


def dynamic_update_slice_shape(call: Call) -> Shape:
    """shape_inference.cc, InferDynamicUpdateSliceShape: the operand's shape; the update fits inside it.

    >>> from xlashapes import parse_shape
    >>> i = parse_shape("s32[]")
    >>> call = Call("dynamic-update-slice", (parse_shape("f32[4]"), parse_shape("f32[2]"), i), {}, {})
    >>> str(dynamic_update_slice_shape(call))
    'f32[4]{0}'
    """
    call.at_least(2)
    operand, update = call.array(0, "operand"), call.array(1, "update")
    _check_indices(call, call.operands[2:], operand.rank)
    if update.rank != operand.rank:
        raise ShapeError(f"dynamic-update-slice update {text(update)} must have the operand's rank {operand.rank}")
    a, b = operand.element_type, update.element_type
    if a != b:
        raise ShapeError(f"dynamic-update-slice update {text(update)} must have the operand's element type {a}")
    for i, (u, d) in enumerate(zip(update.dimensions, operand.dimensions)):
        if u > d:  # as XLA compares them: an update into a ? dimension is refused unless it is ? too
            raise ShapeError(f"dynamic-update-slice update dimension {i} ({u}) exceeds the operand's ({d})")
    flags = [x or (y and u == d) for x, y, u, d in zip(operand.dynamic_dimensions, update.dynamic_dimensions,
                                                       update.dimensions, operand.dimensions)]
    return array_shape(a, operand.dimensions, flags)


def concatenate_shape(call: Call) -> Shape:
    """shape_inference.cc, InferConcatOpShape: sizes add up along ``dimensions={d}``, all others equal.

    >>> from xlashapes import parse_shape
    >>> a, b = parse_shape("f32[2,3]"), parse_shape("f32[5,3]")
    >>> str(concatenate_shape(Call("concatenate", (a, b), {"dimensions": (0,)}, {})))
    'f32[7,3]{1,0}'
    """
    call.at_least(1)
    shapes = call.arrays()
    dim = call.integer("dimensions")
    first = shapes[0]
    if not 0 <= dim < first.rank:
        raise ShapeError(f"concatenate dimension {dim} is out of range for {text(first)}")
    etype = first.element_type
    dims = list(first.dimensions)
    flags = list(first.dynamic_dimensions)
    for shape in shapes[1:]:
        if shape.rank != first.rank:
            raise ShapeError(f"concatenate operands {text(first)} and {text(shape)} have different ranks")
        other = shape.element_type
        if other != first.element_type and not (other.is_floating and first.element_type.is_floating):
            raise ShapeError(f"concatenate operands {text(first)} and {text(shape)} have different element types")
        for i, size in enumerate(shape.dimensions):
            if i == dim or size == UNBOUNDED_SIZE:
                continue
            if dims[i] == UNBOUNDED_SIZE:  # the most specific size wins
                dims[i], flags[i] = size, shape.dynamic_dimensions[i]
            elif size != dims[i]:
                raise ShapeError(f"concatenate operands {text(first)} and {text(shape)} differ in dimension {i}")
            else:
                flags[i] = flags[i] or shape.dynamic_dimensions[i]
        etype = higher_precision(other, first.element_type)  # XLA compares each with the first; the last wins
    total = 0
    for shape in shapes:
        size = shape.dimensions[dim]
        if size == UNBOUNDED_SIZE or total == UNBOUNDED_SIZE:
            total = UNBOUNDED_SIZE
        else:
            total += size
    dims[dim] = total
    flags[dim] = any(shape.dynamic_dimensions[dim] for shape in shapes)
    return array_shape(etype, dims, flags)


def pad_shape(call: Call) -> Shape:
    """shape_inference.cc, InferPadShape: low + high + size + (size - 1) * interior per dimension.

    >>> from xlashapes import parse_shape
    >>> call = Call("pad", (parse_shape("f32[3]"), parse_shape("f32[]")), {"padding": ((1, 2, 1),)}, {})
    >>> str(pad_shape(call))
    'f32[8]{0}'
    """
    call.count(2)
    operand, value = call.array(0, "operand"), call.array(1, "padding value")
    if not value.is_scalar:
        raise ShapeError(f"pad's padding value must be a scalar, got {text(value)}")
    padding = call.get("padding")
    if not isinstance(padding, (tuple, list)) or len(padding) != operand.rank:
        raise ShapeError(f"padding has {len(padding) if isinstance(padding, (tuple, list)) else '?'} dimensions, the "
                         f"operand {text(operand)} has rank {operand.rank}")
    a, b = operand.element_type, value.element_type
    if a != b and not (a.is_floating and b.is_floating):
        raise ShapeError(f"pad's operand {text(operand)} and padding value {text(value)} have different types")
    dims = []
    for i, entry in enumerate(padding):
        low, high, interior = (*entry, 0)[:3]
        if interior < 0:
            raise ShapeError(f"interior padding {interior} of dimension {i} is negative")
        size = operand.dimensions[i]
        if size == UNBOUNDED_SIZE:
            dims.append(UNBOUNDED_SIZE)
            continue
        new = size + low + high + max(size - 1, 0) * interior
        if new < 0:
            raise ShapeError(f"padding makes dimension {i} negative ({new})")
        dims.append(new)
    return array_shape(higher_precision(a, b), dims, operand.dynamic_dimensions)


def get_dimension_size_shape(call: Call) -> Shape:
    """shape_inference.cc, InferGetDimensionSizeShape: an s32 scalar.

    >>> from xlashapes import parse_shape
    >>> str(get_dimension_size_shape(Call("get-dimension-size", (parse_shape("f32[<=4]"),), {"dimensions": (0,)}, {})))
    's32[]'
    """
    call.count(1)
    operand = call.array(0)
    dim = call.integer("dimensions")
    if not 0 <= dim < operand.rank:
        raise ShapeError(f"get-dimension-size dimension {dim} is out of range for {text(operand)}")
    _fits_s32(call, operand, dim)
    return array_shape(S32, ())


def _fits_s32(call: Call, operand: Shape, dim: int) -> None:
    if operand.dimensions[dim] > 2**31 - 1:
        raise ShapeError(f"{call.opcode}: dimension {dim} of {text(operand)} exceeds the s32 size limit")


def set_dimension_size_shape(call: Call) -> Shape:
    """shape_inference.cc, InferSetDimensionSizeShape: the operand with that dimension made dynamic.

    >>> from xlashapes import parse_shape
    >>> str(set_dimension_size_shape(Call("set-dimension-size", (parse_shape("f32[4]"), parse_shape("s32[]")),
    ...                                   {"dimensions": (0,)}, {})))
    'f32[<=4]{0}'
    """
    call.count(2)
    operand, size = call.array(0, "operand"), call.array(1, "size")
    dim = call.integer("dimensions")
    if not 0 <= dim < operand.rank:
        raise ShapeError(f"set-dimension-size dimension {dim} is out of range for {text(operand)}")
    if not size.is_scalar or size.element_type != S32:
        raise ShapeError(f"set-dimension-size takes an s32 scalar size, got {text(size)}")
    _fits_s32(call, operand, dim)
    flags = list(operand.dynamic_dimensions)
    flags[dim] = True
    return array_shape(operand.element_type, operand.dimensions, flags)
