"""Broadcasting exactly as XLA defines it: result shapes, operands viewed at the result size, explicit HLO.

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

The element-wise ops themselves (their values: ``add`` ... ``compare``) live in :mod:`xlashapes.ops`; this module
has what depends only on the broadcasting: result shapes (``broadcast_shape``, ``binary_op_shape``), NumPy arrays
viewed at the result size (``broadcast_array``) and the explicit HLO an element-wise op lowers to
(``lower_binary``). ``BINARY_OPS``, ``COMPARISON_DIRECTIONS`` and ``canonical_op``/``canonical_direction`` are
re-exported here for the modules that import them from this path.

>>> str(broadcast_shape("f32[1,2]", "f32[4,3,1]", broadcast_dimensions=(1, 2)))
'f32[4,3,2]{2,1,0}'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast, overload

import numpy as np

from ._ints import checked_ints
from ._opcodes import BINARY_OPS, COMPARISON_DIRECTIONS, canonical_direction, canonical_op, result_element_type
from ._typing import Array
from .dtypes import ElementType
from .errors import ShapeError
from .layout import default_layout
from .shape import UNBOUNDED_SIZE, Shape
from .text import parse_shape, shape_text

__all__ = [
    "BINARY_OPS",
    "COMPARISON_DIRECTIONS",
    "ShapeLike",
    "binary_op_shape",
    "broadcast_array",
    "broadcast_shape",
    "canonical_direction",
    "canonical_op",
    "checked_broadcast_dimensions",
    "lower_binary",
]

ShapeLike: TypeAlias = "Shape | str | Sequence[int]"
"""A ``Shape``, shape text such as ``"f32[2,3]"``, or plain dimension sizes such as ``(2, 3)``."""


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
            f"{pair} have different ranks ({large.name} rank {large.rank}, {small.name} rank {small.rank}): XLA needs "
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


@overload
def broadcast_shape(
    lhs: Shape | str, rhs: Shape | str, broadcast_dimensions: Sequence[int] | None = None
) -> Shape: ...


@overload
def broadcast_shape(
    lhs: Sequence[int], rhs: Sequence[int], broadcast_dimensions: Sequence[int] | None = None
) -> tuple[int, ...]: ...


def broadcast_shape(
    lhs: ShapeLike, rhs: ShapeLike, broadcast_dimensions: Sequence[int] | None = None
) -> Shape | tuple[int, ...]:
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
    etype = result_element_type(name, left.etype, how)
    return Shape(etype, sizes, flags, default_layout(len(sizes)))


def broadcast_array(array: Array, sizes: Sequence[int], broadcast_dimensions: Sequence[int] | None = None) -> Array:
    """``array`` as a read-only view of the result size ``sizes``, as XLA broadcasts an operand.

    A lower-rank array is first placed at ``broadcast_dimensions`` (its dimension i becomes dimension
    ``broadcast_dimensions[i]``, 1 elsewhere), then its size-1 dimensions are repeated; nothing is copied.
    Sizes are not re-checked against XLA's rules: ``broadcast_shape`` gives sizes that fit.

    >>> broadcast_array(np.array([7, 8, 9]), (2, 3), (1,)).tolist()
    [[7, 8, 9], [7, 8, 9]]
    """
    if not isinstance(array, np.ndarray):
        raise ShapeError(f"broadcast_array needs a NumPy array, got {type(array).__name__}")
    dims = checked_broadcast_dimensions(broadcast_dimensions)
    target = checked_ints(cast(Any, sizes), "sizes")
    if array.ndim < len(target) and array.ndim:
        if len(dims) != array.ndim or any(not 0 <= d < len(target) for d in dims):
            raise ShapeError(f"broadcast_dimensions {dims} do not place a rank-{array.ndim} array in rank "
                             f"{len(target)}")
        placed = [1] * len(target)
        for i, where in enumerate(dims):
            placed[where] = array.shape[i]
        array = array.reshape(placed)
    try:
        return np.broadcast_to(array, target)
    except ValueError as err:
        raise ShapeError(f"an array of shape {array.shape} cannot be broadcast to {target}: {err}") from None


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
