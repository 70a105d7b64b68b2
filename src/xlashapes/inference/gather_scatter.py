"""Gather and scatter: dimension numbers that map index batches and windows onto the operand."""

from __future__ import annotations

from ..errors import ShapeError
from ..shape import UNBOUNDED_SIZE, Shape
from ._common import Call, array_shape, check_scalar_computation, like, same_dimensions, text, tuple_of


def _sorted_unique(values: tuple[int, ...], limit: int, what: str, *, sort: bool = True) -> None:
    if sort and list(values) != sorted(values):
        raise ShapeError(f"{what} {list(values)} must be sorted")
    if len(set(values)) != len(values):
        raise ShapeError(f"{what} {list(values)} repeats a dimension")
    for value in values:
        if not 0 <= value < limit:
            raise ShapeError(f"{what} names dimension {value}, out of range [0, {limit})")


def _index_batch(indices: Shape, index_vector_dim: int, what: str) -> tuple[list[int], list[bool], int]:
    """The batch dims of the indices (all but index_vector_dim) and the index vector's length."""
    if not 0 <= index_vector_dim <= indices.rank:
        raise ShapeError(f"{what} index_vector_dim {index_vector_dim} is out of range for indices {text(indices)}")
    if not indices.element_type.is_integral:
        raise ShapeError(f"{what} indices must be integers, got {text(indices)}")
    dims = [d for i, d in enumerate(indices.dimensions) if i != index_vector_dim]
    flags = [f for i, f in enumerate(indices.dynamic_dimensions) if i != index_vector_dim]
    length = 1 if index_vector_dim == indices.rank else indices.dimensions[index_vector_dim]
    return dims, flags, length


def gather_shape(call: Call) -> Shape:
    """shape_inference.cc, InferGatherShape: index batch dims interleaved with the slice's offset dims.

    >>> from xlashapes import parse_shape
    >>> attrs = {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
    ...          "index_vector_dim": 1, "slice_sizes": (1, 3)}
    >>> str(gather_shape(Call("gather", (parse_shape("f32[5,3]"), parse_shape("s32[4,1]")), attrs, {})))
    'f32[4,3]{1,0}'
    """
    call.count(2)
    operand, indices = call.array(0, "operand"), call.array(1, "start indices")
    offset_dims = call.integers("offset_dims", ())
    collapsed = call.integers("collapsed_slice_dims", ())
    start_map = call.integers("start_index_map", ())
    operand_batching = call.integers("operand_batching_dims", ())
    indices_batching = call.integers("start_indices_batching_dims", ())
    index_vector_dim = call.integer("index_vector_dim")
    slice_sizes = call.integers("slice_sizes")
    batch_dims, batch_flags, length = _index_batch(indices, index_vector_dim, "gather")
    output_rank = len(offset_dims) + len(batch_dims)
    _sorted_unique(offset_dims, output_rank, "gather offset_dims")
    _check_index_dims("gather", operand.rank, indices.rank, index_vector_dim, length,
                      ("collapsed_slice_dims", collapsed), ("operand_batching_dims", operand_batching),
                      ("start_index_map", start_map), ("start_indices_batching_dims", indices_batching))
    if len(slice_sizes) != operand.rank:
        raise ShapeError(f"gather slice_sizes has {len(slice_sizes)} entries for rank {operand.rank} {text(operand)}")
    if len(offset_dims) + len(collapsed) + len(operand_batching) != operand.rank:
        raise ShapeError(f"gather: offset_dims ({len(offset_dims)}) + collapsed_slice_dims ({len(collapsed)}) + "
                         f"operand_batching_dims ({len(operand_batching)}) must equal the operand rank {operand.rank}")
    for i, (size, bound) in enumerate(zip(slice_sizes, operand.dimensions)):
        if size < 0 or (bound != UNBOUNDED_SIZE and size > bound):
            raise ShapeError(f"gather slice size {size} of dimension {i} is outside [0, {bound}]")
    for dim in (*collapsed, *operand_batching):
        if slice_sizes[dim] > 1:
            raise ShapeError(f"gather collapses dimension {dim}, whose slice size {slice_sizes[dim]} is not 0 or 1")
    for a, b in zip(operand_batching, indices_batching):
        x, y = operand.dimensions[a], indices.dimensions[b]
        if x != y and UNBOUNDED_SIZE not in (x, y):
            raise ShapeError(f"gather batching dims differ: operand dim {a} ({x}) and indices dim {b} ({y})")
    dropped = set(collapsed) | set(operand_batching)
    window = [i for i in range(operand.rank) if i not in dropped]
    offsets = set(offset_dims)
    dims, flags = [], []
    offset_seen = batch_seen = 0
    for i in range(output_rank):
        if i in offsets:
            source = window[offset_seen]
            offset_seen += 1
            dims.append(slice_sizes[source])
            flags.append(operand.dynamic_dimensions[source] and slice_sizes[source] == operand.dimensions[source])
        else:
            dims.append(batch_dims[batch_seen])
            flags.append(batch_flags[batch_seen])
            batch_seen += 1
    return array_shape(operand.element_type, dims, flags)


def scatter_shape(call: Call) -> Shape:
    """shape_inference.cc, InferScatterShape: the operand(s); updates are index batch dims plus window dims.

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> s = parse_shape("f32[]")
    >>> attrs = {"update_window_dims": (1,), "inserted_window_dims": (0,), "scatter_dims_to_operand_dims": (0,),
    ...          "index_vector_dim": 1, "to_apply": "add"}
    >>> operands = (parse_shape("f32[5,3]"), parse_shape("s32[4,1]"), parse_shape("f32[4,3]"))
    >>> str(scatter_shape(Call("scatter", operands, attrs, {"add": Signature((s, s), s)})))
    'f32[5,3]{1,0}'
    """
    count = len(call.operands)
    if count < 3 or count % 2 == 0:
        raise ShapeError(f"scatter takes N operands, the indices and N updates, got {count} operands")
    n = (count - 1) // 2
    operands = [call.array(i, f"operand {i}") for i in range(n)]
    indices = call.array(n, "scatter indices")
    updates = [call.array(n + 1 + i, f"update {i}") for i in range(n)]
    window_dims = call.integers("update_window_dims", ())
    inserted = call.integers("inserted_window_dims", ())
    to_operand = call.integers("scatter_dims_to_operand_dims", ())
    input_batching = call.integers("input_batching_dims", ())
    indices_batching = call.integers("scatter_indices_batching_dims", ())
    index_vector_dim = call.integer("index_vector_dim")
    first = operands[0]
    for i, shape in enumerate(operands[1:], 1):
        if not same_dimensions(shape, first):
            raise ShapeError(f"scatter operand {i} {text(shape)} does not have the dims of operand 0 {text(first)}")
    for i, (update, target) in enumerate(zip(updates, operands)):
        if not same_dimensions(update, updates[0]):
            raise ShapeError(f"scatter update {i} {text(update)} does not have the dims of update 0")
        a, b = update.element_type, target.element_type
        if a != b and not (a.is_floating and b.is_floating):
            raise ShapeError(f"scatter update {i} {text(update)} must have operand {i}'s element type {b}")
    operand = first
    batch_dims, _, length = _index_batch(indices, index_vector_dim, "scatter")
    update = updates[0]
    _sorted_unique(window_dims, update.rank, "scatter update_window_dims")
    _check_index_dims("scatter", operand.rank, indices.rank, index_vector_dim, length,
                      ("inserted_window_dims", inserted), ("input_batching_dims", input_batching),
                      ("scatter_dims_to_operand_dims", to_operand), ("scatter_indices_batching_dims", indices_batching))
    if len(window_dims) + len(inserted) + len(input_batching) != operand.rank:
        raise ShapeError(f"scatter: update_window_dims ({len(window_dims)}) + inserted_window_dims ({len(inserted)})"
                         f" + input_batching_dims ({len(input_batching)}) must equal the operand rank {operand.rank}")
    if update.rank != len(window_dims) + len(batch_dims):
        raise ShapeError(f"scatter updates {text(update)} must have rank {len(window_dims) + len(batch_dims)} "
                         f"(window dims + index batch dims)")
    dropped = set(inserted) | set(input_batching)
    window = [i for i in range(operand.rank) if i not in dropped]
    window_position = {d: k for k, d in enumerate(window_dims)}
    scatter_seen = 0
    for i, size in enumerate(update.dimensions):
        if i in window_position:
            slot = window[window_position[i]]
            bound = operand.dimensions[slot]
            if UNBOUNDED_SIZE not in (size, bound) and size > bound:
                raise ShapeError(f"scatter update window dimension {i} ({size}) exceeds operand dimension "
                                 f"{slot} ({bound})")
        else:
            expected = batch_dims[scatter_seen]
            scatter_seen += 1
            if UNBOUNDED_SIZE not in (size, expected) and size != expected:
                raise ShapeError(f"scatter update dimension {i} ({size}) must match the scatter indices' batch "
                                 f"dimension ({expected})")
    if "to_apply" in call.attributes and call.computations:
        check_scalar_computation(call, call.signature("to_apply"), [u.element_type for u in updates], "to_apply")
    return like(operand) if n == 1 else tuple_of(operands)


_Named = tuple[str, tuple[int, ...]]


def _check_index_dims(op: str, operand_rank: int, indices_rank: int, index_vector_dim: int, length: int,
                      dropped: _Named, operand_batching: _Named, index_map: _Named, indices_batching: _Named) -> None:
    """The dimension lists gather and scatter share (under their own attribute names), checked alike.

    shape_inference.cc, ValidateGatherDimensionNumbers / ValidateScatterDimensionNumbers: the dropped (collapsed or
    inserted) dims, the operand and index batching dims and the index-to-operand map.
    """
    _sorted_unique(dropped[1], operand_rank, f"{op} {dropped[0]}")
    _sorted_unique(operand_batching[1], operand_rank, f"{op} {operand_batching[0]}")
    _sorted_unique(index_map[1], operand_rank, f"{op} {index_map[0]}", sort=False)
    _sorted_unique(indices_batching[1], indices_rank, f"{op} {indices_batching[0]}", sort=False)
    if index_vector_dim in indices_batching[1]:
        raise ShapeError(f"{op} {indices_batching[0]} must not contain index_vector_dim")
    if set(dropped[1]) & set(operand_batching[1]):
        raise ShapeError(f"{op} {dropped[0]} and {operand_batching[0]} overlap")
    if len(operand_batching[1]) != len(indices_batching[1]):
        raise ShapeError(f"{op} {operand_batching[0]} and {indices_batching[0]} differ in length")
    if length != UNBOUNDED_SIZE and len(index_map[1]) != length:
        raise ShapeError(f"{op} {index_map[0]} has {len(index_map[1])} entries, the index vector {length}")
