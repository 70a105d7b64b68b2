"""Index math for every layout: logical index <-> linear offset in the physical (tiled) buffer.

The geometry is the tile walk of :mod:`xlashapes.tiling`: the logical dims are put in physical order
(``minor_to_major`` reversed, legacy ``padded_dimensions`` as their sizes), then each tile in turn left-pads the
dims with 1s to its length, merges ``*`` dims into the next more minor one, splits every covered dim ``d`` into
``(ceil(d/t), t)`` and moves the ``t`` parts to the minor end. An element's linear index is its row-major offset
in the final dims (:meth:`Shape.physical_dimensions`); offsets up to ``Shape.physical_element_count()`` that hold
no element (tile padding, legacy padding, tail padding ``L(n)``) are padding.

Arrays of indices or offsets go through the levels a chunk at a time with NumPy (``linear_index`` 0.8-1.2x
``np.ravel_multi_index``); ``multi_index`` of many offsets records its walk once per shape as a short program that
one compiled kernel runs for every layout (:func:`._index_inverse.inverse_program`, :mod:`xlashapes.physical._inverse`:
0.70-0.91x ``np.unravel_index`` from 100K to 10M offsets, where the NumPy path took 1.0-1.9x). Like the physical
bytes' kernels, it runs for outputs of 64 MiB and up in a new process, of 1 MiB once their compiled code is loaded,
and never with ``XLASHAPES_NO_NUMBA=1``; the NumPy path is the reference the tests compare it against.

>>> from xlashapes import parse_shape
>>> s = parse_shape("f32[3,5]{1,0:T(2,2)}")
>>> linear_index(s, (2, 3)), multi_index(s, 17), multi_index(s, 9)
(17, (2, 3), None)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, SupportsIndex, overload

import numpy as np
from numpy.typing import NDArray

from ._index_inverse import _multi_indices
from ._index_plan import (
    CHUNK,
    Int64Array,
    ShapeLike,
    _check_rows,
    _checked_index,
    _Digit,
    _index_error,
    _indices_by_levels,
    _int,
    _int64_array,
    _offsets_by_levels,
    _Plan,
    _plan,
)
from .errors import ShapeError

__all__ = [
    "dimension_stride",
    "indices_in_memory_order",
    "indices_in_memory_order_array",
    "linear_index",
    "multi_index",
    "next_index",
]

_TABLE_LIMIT = 1 << 16
"""Largest dimension whose per-index offsets are precomputed into a lookup table."""

_TABLE_RANK_LIMIT = 64
"""Highest rank that gets lookup tables (building one costs rank + tile levels steps, so all cost rank squared)."""

_BRUTE_FORCE_LIMIT = 1 << 20
"""Largest element count for which ``dimension_stride`` checks every step when no closed form decides it."""


# ----------------------------------------------------------------------------------------------------
# Vectorized forward
# ----------------------------------------------------------------------------------------------------


def _terms_into(terms: Sequence[_Digit], column: Int64Array, out: Int64Array, scratch: Int64Array) -> None:
    """``out = sum(((column // div) % mod) * mult)``: one pass per operation, shifts and masks for powers of 2."""
    if not terms:
        out.fill(0)
        return
    for i, term in enumerate(terms):
        target = out if i == 0 else scratch
        source = column
        if term.div > 1:
            _apply(np.right_shift, np.floor_divide, source, term.div, target)
            source = target
        if term.mod is not None:
            _apply(np.bitwise_and, np.remainder, source, term.mod, target)
            source = target
        if term.mult > 1:
            _apply(np.left_shift, np.multiply, source, term.mult, target)
        elif source is not target:
            np.copyto(target, source)
        if i:
            np.add(out, target, out=out)


def _apply(power_of_two: np.ufunc, general: np.ufunc, source: Int64Array, by: int, out: Int64Array) -> None:
    """``general(source, by)`` into ``out``, as the cheaper bit operation when ``by`` is a power of two."""
    if by & (by - 1):
        general(source, by, out=out)
    elif power_of_two is np.bitwise_and:
        power_of_two(source, by - 1, out=out)
    else:
        power_of_two(source, by.bit_length() - 1, out=out)


def _table(plan: _Plan, dim: int) -> Int64Array:
    """Offsets contributed by ``dim`` alone, for each of its indices (only for separable layouts)."""
    table = plan.tables.get(dim)
    if table is None:
        index: list[Any] = [0] * plan.rank
        index[dim] = np.arange(plan.sizes[dim], dtype=np.int64)
        table = np.asarray(_offsets_by_levels(plan, index), dtype=np.int64)
        table = np.ascontiguousarray(np.broadcast_to(table, (plan.sizes[dim],)))
        plan.tables[dim] = table
    return table


Evaluators = list[tuple[int, "Int64Array | tuple[_Digit, ...]"]]
"""Per dim: a lookup table of its offset contributions, or closed-form terms."""


def _dim_evaluators(plan: _Plan) -> Evaluators | None:
    """How each dim's offset contribution is computed: a lookup table or closed-form terms; None: walk levels."""
    if not plan.separable:
        return None
    evaluators: Evaluators = []
    tables = plan.rank <= _TABLE_RANK_LIMIT  # each table walks every dim and level once
    for dim, size in enumerate(plan.sizes):
        if tables and size <= _TABLE_LIMIT:
            evaluators.append((dim, _table(plan, dim)))
        elif dim in plan.terms:
            evaluators.append((dim, plan.terms[dim]))
        else:
            return None
    return evaluators


def _offsets_into(plan: _Plan, evaluators: Evaluators | None, chunk: Int64Array, out: Int64Array,
                  scratch: tuple[Int64Array, Int64Array]) -> None:
    """Linear offsets of the checked rows of ``chunk`` written into ``out`` (scratch: two buffers as long)."""
    if evaluators is None:
        out[...] = _offsets_by_levels(plan, [chunk[:, d] for d in range(plan.rank)])
        return
    if not evaluators:
        out.fill(0)  # rank 0: the one element sits at offset 0
        return
    for i, (dim, how) in enumerate(evaluators):
        target = out if i == 0 else scratch[0]
        if isinstance(how, np.ndarray):
            how.take(chunk[:, dim], out=target, mode="wrap")  # rows already checked: no bounds work here
        else:
            _terms_into(how, chunk[:, dim], target, scratch[1])
        if i:
            np.add(out, target, out=out)


def _linear_indices(plan: _Plan, original: NDArray[Any]) -> Int64Array:
    """Vectorized ``linear_index``: an int array (..., rank) to int64 offsets (...)."""
    array = _int64_array(original, "indices")
    if array.ndim == 0 or array.shape[-1] != plan.rank:
        raise ShapeError(f"indices must have shape (..., {plan.rank}) for {plan.text}, got {array.shape}")
    rows = array.reshape(math.prod(array.shape[:-1]), plan.rank)
    out = np.empty(rows.shape[0], dtype=np.int64)
    if rows.shape[0] == 0:
        return out.reshape(array.shape[:-1])
    if plan.rank == 0:
        out.fill(0)
        return out.reshape(array.shape[:-1])
    return _evaluated(plan, _dim_evaluators(plan), original, rows, out).reshape(array.shape[:-1])


def _evaluated(plan: _Plan, evaluators: Evaluators | None, original: NDArray[Any], rows: Int64Array,
               out: Int64Array) -> Int64Array:
    """``out`` filled with the offsets of ``rows`` (M, rank), checked chunk by chunk."""
    uniform = min(plan.sizes) == max(plan.sizes)
    length = min(CHUNK, rows.shape[0])
    scratch = (np.empty(length, dtype=np.int64), np.empty(length, dtype=np.int64))
    for start in range(0, rows.shape[0], CHUNK):
        chunk = rows[start : start + CHUNK]
        if not _check_rows(chunk, plan.sizes, uniform):
            raise _index_error(plan, original, chunk, start)
        n = chunk.shape[0]
        _offsets_into(plan, evaluators, chunk, out[start : start + n], (scratch[0][:n], scratch[1][:n]))
    return out


# ----------------------------------------------------------------------------------------------------
# Public functions
# ----------------------------------------------------------------------------------------------------


@overload
def linear_index(shape: ShapeLike, index: Sequence[SupportsIndex]) -> int: ...
@overload
def linear_index(shape: ShapeLike, index: NDArray[Any]) -> Int64Array: ...
def linear_index(shape: ShapeLike, index: Sequence[SupportsIndex] | NDArray[Any]) -> int | Int64Array:
    """Offset in elements of a logical index in the physical buffer; an int array (..., rank) gives (...).

    >>> linear_index("f32[3,5]{1,0:T(2,2)}", (2, 3))
    17
    >>> linear_index("f32[2,3]{0,1}", np.array([[0, 1], [1, 2]])).tolist()
    [2, 5]
    """
    plan = _plan(shape)
    if isinstance(index, np.ndarray):
        return _linear_indices(plan, index)
    if isinstance(index, Sequence) and any(isinstance(v, (list, tuple, np.ndarray)) for v in index):
        raise ShapeError("many indices go in a NumPy integer array of shape (N, rank), not nested sequences")
    values = _checked_index(plan, index)
    return int(_offsets_by_levels(plan, values))


@overload
def multi_index(  # type: ignore[overload-overlap]  # an ndarray also has __index__; arrays take this one
    shape: ShapeLike, offset: NDArray[Any] | Sequence[SupportsIndex]
) -> tuple[Int64Array, NDArray[np.bool_]]: ...
@overload
def multi_index(shape: ShapeLike, offset: SupportsIndex) -> tuple[int, ...] | None: ...
def multi_index(
    shape: ShapeLike, offset: SupportsIndex | NDArray[Any] | Sequence[SupportsIndex]
) -> tuple[int, ...] | tuple[Int64Array, NDArray[np.bool_]] | None:
    """The logical index at a linear offset, None on padding; an array of offsets gives (indices, valid).

    For an int array of offsets (...): indices (..., rank) int64 with -1 rows on padding, and a bool mask (...).

    >>> multi_index("f32[3,5]{1,0:T(2,2)}", 17), multi_index("f32[3,5]{1,0:T(2,2)}", 9)
    ((2, 3), None)
    """
    plan = _plan(shape)
    if isinstance(offset, (np.ndarray, Sequence)) and not isinstance(offset, (str, bytes)):
        return _multi_indices(plan, offset)
    value = _int(offset, "offset")
    if not 0 <= value < plan.physical_count:
        raise ShapeError(f"offset {value} is out of range: {plan.text} has {plan.physical_count} physical elements")
    index, valid = _indices_by_levels(plan, value)
    return tuple(int(i) for i in index) if valid else None


def next_index(shape: ShapeLike, index: Sequence[SupportsIndex]) -> tuple[int, ...] | None:
    """The logical index after ``index`` in row-major order (last dim fastest), None after the last one.

    >>> next_index("f32[2,3]", (0, 2)), next_index("f32[2,3]", (1, 2))
    ((1, 0), None)
    """
    plan = _plan(shape)
    values = list(_checked_index(plan, index))
    for dim in reversed(range(plan.rank)):
        values[dim] += 1
        if values[dim] < plan.sizes[dim]:
            return tuple(values)
        values[dim] = 0
    return None


def dimension_stride(shape: ShapeLike, dimension: SupportsIndex) -> int | None:
    """Elements between index[dimension] = k and k + 1 (others fixed) when the same for every k; -1 is the last dim.

    None when tiling makes the step vary. Untiled layouts always have one: the product of the more minor
    physical (padded) dims, as XLA's IndexUtil::GetDimensionStride. With no step to measure (size 0 or 1, or an
    array without elements) the stride is the offset the unit index along ``dimension`` gets from the layout
    arithmetic (for untiled layouts again the product of the more minor dims). When a ``*`` merges the
    dimension with another one through a tile that doesn't fall on digit boundaries, every step is checked if
    the array has at most 2**20 elements; larger such arrays get None (the stride could not be shown constant).

    >>> dimension_stride("f32[3,5]{0,1}", 1), dimension_stride("f32[3,5]{1,0:T(2,2)}", 1)
    (3, None)
    """
    plan = _plan(shape)
    dim = _int(dimension, "dimension")
    if not -plan.rank <= dim < plan.rank:
        raise ShapeError(f"dimension {dim} is out of range for rank {plan.rank} shape {plan.text}")
    dim %= plan.rank
    if plan.sizes[dim] <= 1 or plan.element_count == 0:
        unit = [0] * plan.rank
        unit[dim] = 1
        return int(_offsets_by_levels(plan, unit))
    if dim in plan.terms:
        terms = plan.terms[dim]
        single = len(terms) == 1 and terms[0].div == 1 and terms[0].mod is None
        return terms[0].mult if single else None
    if plan.element_count <= _BRUTE_FORCE_LIMIT:
        return _brute_force_stride(plan, dim)
    return None


def _brute_force_stride(plan: _Plan, dim: int) -> int | None:
    """The step of ``dim`` checked at every element (small arrays only)."""
    grid = np.indices(plan.sizes, dtype=np.int64).reshape(plan.rank, plan.element_count)
    offsets = np.asarray(_offsets_by_levels(plan, list(grid)), dtype=np.int64).reshape(plan.sizes)
    steps = np.unique(np.diff(offsets, axis=dim))
    return int(steps[0]) if steps.size == 1 else None


def indices_in_memory_order_array(shape: ShapeLike) -> Int64Array:
    """Every logical index, (element_count, rank) int64, sorted by linear offset (physical memory order).

    >>> indices_in_memory_order_array("f32[2,3]{0,1}").tolist()
    [[0, 0], [1, 0], [0, 1], [1, 1], [0, 2], [1, 2]]
    """
    plan = _plan(shape)
    if plan.physical_count <= 2 * plan.element_count + CHUNK:
        indices, valid = _multi_indices(plan, np.arange(plan.physical_count, dtype=np.int64))
        return indices[valid]
    grid: Int64Array = np.indices(plan.sizes, dtype=np.int64).reshape(plan.rank, plan.element_count).T
    return grid[np.argsort(_linear_indices(plan, grid), kind="stable")]


def indices_in_memory_order(shape: ShapeLike) -> Iterator[tuple[int, ...]]:
    """Yield every logical index in physical memory order (lazily; cost grows with the physical size).

    >>> list(indices_in_memory_order("f32[2,2]{0,1}"))
    [(0, 0), (1, 0), (0, 1), (1, 1)]
    """
    plan = _plan(shape)
    if plan.physical_count > 4 * plan.element_count + CHUNK:
        yield from (tuple(row) for row in indices_in_memory_order_array(shape).tolist())
        return
    for start in range(0, plan.physical_count, CHUNK):
        offsets = np.arange(start, min(start + CHUNK, plan.physical_count), dtype=np.int64)
        indices, valid = _multi_indices(plan, offsets)
        yield from (tuple(row) for row in indices[valid].tolist())
