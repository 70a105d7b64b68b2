"""Index math for every layout: logical index <-> linear offset in the physical (tiled) buffer.

The geometry is the tile walk of :mod:`xlashapes.tiling`: the logical dims are put in physical order
(``minor_to_major`` reversed, legacy ``padded_dimensions`` as their sizes), then each tile in turn left-pads the
dims with 1s to its length, merges ``*`` dims into the next more minor one, splits every covered dim ``d`` into
``(ceil(d/t), t)`` and moves the ``t`` parts to the minor end. An element's linear index is its row-major offset
in the final dims (:meth:`Shape.physical_dimensions`); offsets up to ``Shape.physical_element_count()`` that hold
no element (tile padding, legacy padding, tail padding ``L(n)``) are padding.

Arrays of indices or offsets go through the levels a chunk at a time with NumPy (``linear_index`` 0.8-1.2x
``np.ravel_multi_index``); ``multi_index`` of many offsets records its walk once per shape as a short program that
one compiled kernel runs for every layout (:func:`inverse_program`, :mod:`xlashapes.physical._inverse`:
0.84-0.95x ``np.unravel_index`` where the NumPy path took 1.4-1.9x). Like the physical bytes' kernels, it runs for
outputs of 64 MiB and up in a new process, of 1 MiB once their compiled code is loaded, and never with
``XLASHAPES_NO_NUMBA=1``; the NumPy path is the reference the tests compare it against.

>>> from xlashapes import parse_shape
>>> s = parse_shape("f32[3,5]{1,0:T(2,2)}")
>>> linear_index(s, (2, 3)), multi_index(s, 17), multi_index(s, 9)
(17, (2, 3), None)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from typing import Any, NamedTuple, SupportsIndex, overload

import numpy as np
from numpy.typing import NDArray

from ._ints import checked_int
from .errors import ShapeError
from .shape import Shape
from .text import parse_shape
from .tiling import TileStep, tile_step, untiled_dimensions

__all__ = [
    "dimension_stride",
    "indices_in_memory_order",
    "indices_in_memory_order_array",
    "linear_index",
    "multi_index",
    "next_index",
]

ShapeLike = Shape | str
Int64Array = NDArray[np.int64]

_CHUNK = 1 << 14
"""Rows handled per step of the vectorized loops: the temporaries stay in the CPU cache."""

_TABLE_LIMIT = 1 << 16
"""Largest dimension whose per-index offsets are precomputed into a lookup table."""

_TABLE_RANK_LIMIT = 64
"""Highest rank that gets lookup tables (building one costs rank + tile levels steps, so all cost rank squared)."""

_BRUTE_FORCE_LIMIT = 1 << 20
"""Largest element count for which ``dimension_stride`` checks every step when no closed form decides it."""


# ----------------------------------------------------------------------------------------------------
# Geometry: the tile levels
# ----------------------------------------------------------------------------------------------------


def _tiled_forward(step: TileStep, coords: list[Any]) -> None:
    """Coordinates (ints or int64 arrays) in ``step``'s input dims turned into its output dims, in place."""
    k = step.covered
    if k == 0:
        return
    if step.pad:
        coords[:0] = [0] * step.pad
    covered = coords[len(coords) - k :]
    del coords[len(coords) - k :]
    inners: list[Any] = []
    position = 0
    for group in step.groups:
        merged: Any = 0
        for size in group.sizes:
            merged = merged * size + covered[position]
            position += 1
        outer, inner = divmod(merged, group.tile)
        coords.append(outer)
        inners.append(inner)
    coords.extend(inners)


def _tiled_backward(step: TileStep, coords: list[Any], valid: Any) -> Any:
    """Coordinates in ``step``'s output dims turned back into its input dims, in place; and which name an element."""
    count = len(step.groups)
    if step.covered == 0:
        return valid
    inners = coords[len(coords) - count :]
    outers = coords[len(coords) - 2 * count : len(coords) - count]
    del coords[len(coords) - 2 * count :]
    for group, outer, inner in zip(step.groups, outers, inners):
        merged = outer * group.tile + inner
        valid = valid & (merged < group.merged)
        parts: list[Any] = []
        for size in reversed(group.sizes):
            merged, part = divmod(merged, size)
            parts.append(part)
        coords.extend(reversed(parts))
    if step.pad:
        del coords[: step.pad]
    return valid


# ----------------------------------------------------------------------------------------------------
# Closed form: each physical coordinate as a sum of ((index[dim] // div) % mod) * mult digits
# ----------------------------------------------------------------------------------------------------


class _Digit(NamedTuple):
    """``((index[dim] // div) % mod) * mult``; ``mod`` None means no modulus."""

    dim: int
    div: int
    mod: int | None
    mult: int


class _Coord(NamedTuple):
    """A physical coordinate: a sum of digits, or (``digits`` None) no closed form, depending on ``dims``."""

    digits: tuple[_Digit, ...] | None
    dims: frozenset[int]


_ZERO = _Coord((), frozenset())
"""A coordinate that is always 0."""


def _digit_range(digit: _Digit, sizes: Sequence[int]) -> int:
    """How many values the digit takes over the valid indices of its dim."""
    count = -(-sizes[digit.dim] // digit.div)
    return count if digit.mod is None else min(count, digit.mod)


def _normalized(digit: _Digit, sizes: Sequence[int]) -> _Digit | None:
    """The digit without a modulus that never wraps, or None when it is always 0."""
    if _digit_range(digit, sizes) <= 1:
        return None
    if digit.mod is not None and digit.mod >= -(-sizes[digit.dim] // digit.div):
        return _Digit(digit.dim, digit.div, None, digit.mult)
    return digit


def _digits_coord(digits: Sequence[_Digit | None]) -> _Coord:
    kept = tuple(d for d in digits if d is not None)
    return _Coord(kept, frozenset(d.dim for d in kept))


def _merged_coord(parts: Sequence[_Coord], sizes: Sequence[int]) -> _Coord:
    """The coordinate of ``*``-merged dims: ``((c0 * s1 + c1) * s2 + c2) ...``."""
    if len(parts) == 1:  # no '*': the coordinate itself
        return parts[0]
    dims = frozenset().union(*(p.dims for p in parts))
    if any(p.digits is None for p in parts):
        return _Coord(None, dims)
    scales = list(accumulate(reversed([*sizes[1:], 1]), lambda a, b: a * b))[::-1]
    digits = [_Digit(d.dim, d.div, d.mod, d.mult * scale) for p, scale in zip(parts, scales) for d in p.digits or ()]
    return _Coord(tuple(digits), dims)


def _split_digit(digit: _Digit, tile: int, sizes: Sequence[int]) -> list[_Digit | None]:
    """The digit as a part that is a multiple of ``tile`` plus a part below it, when one straddles ``tile``."""
    mult = digit.mult
    if mult % tile == 0 or mult > tile or tile % mult or (_digit_range(digit, sizes) - 1) * mult < tile:
        return [digit]
    q = tile // mult
    if digit.mod is not None and digit.mod % q:
        return [digit]
    high = _Digit(digit.dim, digit.div * q, None if digit.mod is None else digit.mod // q, tile)
    low = _Digit(digit.dim, digit.div, q, mult)
    return [_normalized(high, sizes), _normalized(low, sizes)]


def _split_coord(coord: _Coord, tile: int, sizes: Sequence[int]) -> tuple[_Coord, _Coord]:
    """``coord // tile`` and ``coord % tile`` in closed form when the tile falls on digit boundaries."""
    if not coord.digits:  # no closed form, or always 0
        return coord, coord
    digits = [d for digit in coord.digits for d in _split_digit(digit, tile, sizes) if d is not None]
    high = [_Digit(d.dim, d.div, d.mod, d.mult // tile) for d in digits if d.mult % tile == 0]
    low = [d for d in digits if d.mult % tile]
    if sum((_digit_range(d, sizes) - 1) * d.mult for d in low) >= tile:
        return _Coord(None, coord.dims), _Coord(None, coord.dims)
    return _digits_coord(high), _digits_coord(low)


def _symbolic_forward(step: TileStep, coords: list[_Coord], sizes: Sequence[int]) -> None:
    """``_tiled_forward`` on symbolic coordinates, in place."""
    k = step.covered
    if k == 0:
        return
    if step.pad:
        coords[:0] = [_ZERO] * step.pad
    covered = coords[len(coords) - k :]
    del coords[len(coords) - k :]
    inners: list[_Coord] = []
    position = 0
    for group in step.groups:
        count = len(group.sizes)
        merged = _merged_coord(covered[position : position + count], group.sizes)
        position += count
        outer, inner = _split_coord(merged, group.tile, sizes)
        coords.append(outer)
        inners.append(inner)
    coords.extend(inners)


def _canonical_terms(digits: Sequence[_Digit]) -> tuple[_Digit, ...]:
    """One dim's digits sorted by divisor, with neighbours that form one larger digit joined."""
    joined: list[_Digit] = []
    for digit in sorted(digits, key=lambda d: d.div):
        last = joined[-1] if joined else None
        if last is not None and last.mod is not None and digit.div == last.div * last.mod and (
            digit.mult == last.mult * last.mod
        ):
            mod = None if digit.mod is None else last.mod * digit.mod
            joined[-1] = _Digit(last.dim, last.div, mod, last.mult)
        else:
            joined.append(digit)
    return tuple(joined)


# ----------------------------------------------------------------------------------------------------
# The plan: everything about one shape that the index math needs, computed once
# ----------------------------------------------------------------------------------------------------


@dataclass
class _Plan:
    """Index math for one array shape."""

    text: str
    sizes: tuple[int, ...]
    order: tuple[int, ...]
    levels: tuple[TileStep, ...]
    final: tuple[int, ...]
    strides: tuple[int, ...]
    physical_count: int
    final_count: int
    element_count: int
    terms: dict[int, tuple[_Digit, ...]]
    separable: bool
    tables: dict[int, Int64Array]
    inverse: list[tuple[Int64Array, int] | None] = field(default_factory=list)  # inverse_program's, once made

    @property
    def rank(self) -> int:
        return len(self.sizes)


def _array_shape(shape: Any) -> Shape:
    """``shape`` (a Shape or shape text) as an array shape, or ShapeError/ParseError."""
    if isinstance(shape, str):
        shape = parse_shape(shape)
    if not isinstance(shape, Shape):
        raise ShapeError(f"expected a Shape or shape text, got {type(shape).__name__}")
    if not shape.is_array:
        raise ShapeError(f"index math needs an array shape, not {shape}")
    return shape


def _plan(shape: Any) -> _Plan:
    """The (cached) index plan of ``shape``."""
    return _cached_plan(_array_shape(shape))


@lru_cache(maxsize=64)
def _cached_plan(shape: Shape) -> _Plan:
    """The plan of ``shape`` through a small cache (shapes and their layouts are hashable)."""
    return _new_plan(shape)


def _new_plan(shape: Shape) -> _Plan:
    """Levels, closed-form terms and strides of ``shape``; ShapeError for shapes without index math."""
    physical_count = shape.physical_element_count()  # validates; ShapeError for '?' dims and int64 overflow
    layout = shape.layout_or_default()
    if not layout.is_dense:
        raise ShapeError(f"{shape} has a sparse layout; index math covers dense layouts only")
    sizes = shape.dimensions
    order = layout.major_to_minor
    walked = list(untiled_dimensions(sizes, layout))
    coords = [_digits_coord([_normalized(_Digit(d, 1, None, 1), sizes)]) for d in order]
    levels: list[TileStep] = []
    for tile in layout.tiles:
        step = tile_step(walked, tile)
        _symbolic_forward(step, coords, sizes)
        levels.append(step)
    dims = tuple(walked)
    strides = tuple(accumulate(reversed(dims[1:]), lambda a, b: a * b, initial=1))[::-1] if dims else ()
    opaque = [c.dims for c in coords if c.digits is None]
    entangled = frozenset().union(*opaque)
    per_dim: dict[int, list[_Digit]] = {d: [] for d in range(len(sizes)) if d not in entangled}
    for coord, stride in zip(coords, strides):
        for digit in coord.digits or ():
            if digit.dim in per_dim:
                per_dim[digit.dim].append(_Digit(digit.dim, digit.div, digit.mod, digit.mult * stride))
    return _Plan(
        text=str(shape),
        sizes=sizes,
        order=order,
        levels=tuple(levels),
        final=dims,
        strides=strides,
        physical_count=physical_count,
        final_count=math.prod(dims),
        element_count=math.prod(sizes),
        terms={d: _canonical_terms(digits) for d, digits in per_dim.items()},
        separable=all(len(dims) <= 1 for dims in opaque),
        tables={},
    )


# ----------------------------------------------------------------------------------------------------
# Evaluation shared by the scalar and the vectorized paths (Python ints or int64 arrays)
# ----------------------------------------------------------------------------------------------------


def _offsets_by_levels(plan: _Plan, index: Sequence[Any]) -> Any:
    """Linear offsets of checked logical ``index`` columns by walking every tile level."""
    coords: list[Any] = [index[d] for d in plan.order]
    for level in plan.levels:
        _tiled_forward(level, coords)
    total: Any = 0
    for coord, stride in zip(coords, plan.strides):
        total = total + coord * stride
    return total


def _indices_by_levels(plan: _Plan, offsets: Any) -> tuple[list[Any], Any]:
    """Logical index columns of checked in-range ``offsets``, and whether each names an element."""
    valid: Any = offsets < plan.final_count
    coords: list[Any] = []
    rest = offsets * valid  # tail padding walks as offset 0, so no arithmetic leaves the physical dims
    for size in reversed(plan.final):
        rest, coord = divmod(rest, size)
        coords.append(coord)
    coords.reverse()
    for level in reversed(plan.levels):
        valid = _tiled_backward(level, coords, valid)
    index: list[Any] = [0] * plan.rank
    for position, dim in enumerate(plan.order):
        index[dim] = coords[position]
        valid = valid & (coords[position] < plan.sizes[dim])
    return index, valid


# ----------------------------------------------------------------------------------------------------
# Input checking
# ----------------------------------------------------------------------------------------------------


def _checked_index(plan: _Plan, index: Any) -> tuple[int, ...]:
    """One logical index as ints within bounds, or ShapeError naming the dimension."""
    if isinstance(index, (str, bytes)) or not isinstance(index, (Sequence, np.ndarray)):
        raise ShapeError(f"an index must be a sequence of integers, got {index!r}")
    if isinstance(index, np.ndarray) and index.ndim != 1:
        raise ShapeError(f"one index must be 1-D, got an array of shape {index.shape}")
    if len(index) != plan.rank:
        raise ShapeError(f"index {_show(index)} has {len(index)} entries but {plan.text} has rank {plan.rank}")
    values = tuple(_int(v, f"index[{i}]") for i, v in enumerate(index))
    for dim, (value, size) in enumerate(zip(values, plan.sizes)):
        if not 0 <= value < size:
            raise ShapeError(f"index {values}: {value} is out of range for dimension {dim} (size {size}) "
                             f"of {plan.text}")
    return values


def _int(value: Any, what: str) -> int:
    """``value`` as an int64 Python int, or ShapeError (also for objects whose ``__index__`` fails)."""
    try:
        return checked_int(value, what)
    except ShapeError:
        raise
    except (TypeError, ValueError, OverflowError):
        raise ShapeError(f"{what} must be an integer, got {value!r}") from None


def _show(index: Any) -> str:
    try:
        return repr(tuple(index))
    except Exception:  # pragma: no cover - only for the message
        return repr(index)


def _int64_array(values: Any, what: str) -> Int64Array:
    """``values`` as an int64 array; ShapeError unless it is an integer array (uint64 wraps, then fails bounds)."""
    array = values if isinstance(values, np.ndarray) else _as_array(values, what)
    if array.dtype.kind not in "iu":
        raise ShapeError(f"{what} must be an integer array, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def _as_array(values: Any, what: str) -> NDArray[Any]:
    try:
        array = np.asarray(values)
    except (ValueError, TypeError, OverflowError) as err:
        raise ShapeError(f"{what} is not a rectangular integer array: {err}") from None
    return array.astype(np.int64) if array.size == 0 and array.dtype.kind == "f" else array  # [] -> no offsets


def _first_out_of_range(rows: Int64Array, limits: Sequence[int]) -> tuple[int, int]:
    """Row and column of the first entry of ``rows`` (M, k) outside ``0 <= v < limits[col]``."""
    bad = (rows < 0) | (rows >= np.asarray(limits, dtype=np.int64))
    row, col = divmod(int(np.flatnonzero(bad)[0]), rows.shape[1])
    return row, col


def _index_error(plan: _Plan, original: NDArray[Any], rows: Int64Array, start: int) -> ShapeError:
    """The ShapeError for the first out-of-range entry of the chunk ``rows`` that starts at row ``start``."""
    row, dim = _first_out_of_range(rows, plan.sizes)
    entry = original.reshape(-1, plan.rank)[start + row]
    return ShapeError(f"index[{start + row}] = {tuple(entry.tolist())}: {entry[dim]} is out of range for "
                      f"dimension {dim} (size {plan.sizes[dim]}) of {plan.text}")


def _offset_error(plan: _Plan, original: NDArray[Any], offsets: Int64Array, start: int) -> ShapeError:
    """The ShapeError for the first out-of-range offset of the chunk ``offsets`` that starts at ``start``."""
    row, _ = _first_out_of_range(offsets[:, None], (plan.physical_count,))
    value = original.reshape(-1)[start + row]
    return ShapeError(f"offset[{start + row}] = {value} is out of range: {plan.text} has "
                      f"{plan.physical_count} physical elements")


def _check_rows(chunk: Int64Array, limits: Sequence[int], uniform: bool) -> bool:
    """True when every column of ``chunk`` lies in ``0 <= v < limits[col]`` (negatives wrap high as uint64)."""
    unsigned = chunk.view(np.uint64)
    if uniform:
        return bool(unsigned.max() < limits[0])
    return all(unsigned[:, col].max() < limit for col, limit in enumerate(limits))


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
    length = min(_CHUNK, rows.shape[0])
    scratch = (np.empty(length, dtype=np.int64), np.empty(length, dtype=np.int64))
    for start in range(0, rows.shape[0], _CHUNK):
        chunk = rows[start : start + _CHUNK]
        if not _check_rows(chunk, plan.sizes, uniform):
            raise _index_error(plan, original, chunk, start)
        n = chunk.shape[0]
        _offsets_into(plan, evaluators, chunk, out[start : start + n], (scratch[0][:n], scratch[1][:n]))
    return out


# ----------------------------------------------------------------------------------------------------
# Vectorized inverse
# ----------------------------------------------------------------------------------------------------


def _divmod(value: Any, by: int) -> tuple[Any, Any]:
    """``(value // by, value % by)``: a shift and a mask for a power of two, else one division and a multiply (NumPy
    divides int64 arrays by a scalar without a division instruction, but its remainder and divmod use one: 2.5x
    slower here; 10M offsets of f32 ``[3000,5000]{0,1:T(8,128)}`` 1.85 -> 1.7x ``np.unravel_index``).

    >>> _divmod(100, 24), _divmod(100, 16)
    ((4, 4), (6, 4))
    """
    if by & (by - 1) == 0:
        return value >> (by.bit_length() - 1), value & (by - 1)
    quotient = value // by
    return quotient, value - quotient * by


def _joined(outer: Any, tile: int, inner: Any) -> Any:
    """``outer * tile + inner``, as a shift and an or when ``tile`` is a power of two (``inner < tile``)."""
    if isinstance(outer, int) and outer == 0:
        return inner
    if tile == 1 and isinstance(inner, int) and inner == 0:  # (a dim a tile of 1 covers: as it was, no pass)
        return outer
    if tile & (tile - 1) == 0:
        shifted = outer << (tile.bit_length() - 1)
        return shifted if isinstance(inner, int) and inner == 0 else shifted | inner
    return outer * tile + inner


class _Arrays:
    """The inverse walk's operations on int64 arrays of ``rows`` offsets (the NumPy path): a value is an array or an
    int; ``valid`` (None: every row so far) says which rows name an element."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.valid: Any = None

    def split(self, value: Any, by: int) -> tuple[Any, Any]:
        return _divmod(value, by)

    def join(self, outer: Any, tile: int, inner: Any) -> Any:
        return _joined(outer, tile, inner)

    def below(self, value: Any, limit: int) -> None:
        condition = value < limit
        if isinstance(condition, (bool, np.bool_)):
            if not condition:
                self.valid = np.zeros(self.rows, dtype=np.bool_)
            return
        self.valid = condition if self.valid is None else self.valid & condition


class _Register(NamedTuple):
    """A register of a recorded program (a column of values per offset); 0 holds the offsets."""

    number: int


class _Unrecordable(Exception):
    """The walk needs a value the compiled kernel's operations do not make (the NumPy path takes such shapes)."""


class _Recorder:
    """The inverse walk's operations recorded as a program for the compiled kernel (:mod:`xlashapes.physical.
    _inverse`): a value is a :class:`_Register` or an int constant; registers are numbered as made, then reused
    (:func:`_allocated`)."""

    def __init__(self) -> None:
        self.operations: list[list[Any]] = []
        self.count = 1

    def _new(self) -> _Register:
        self.count += 1
        return _Register(self.count - 1)

    def split(self, value: Any, by: int) -> tuple[Any, Any]:
        if isinstance(value, int):
            return divmod(value, by)
        if by == 1:
            return value, 0
        quotient, remainder = self._new(), self._new()
        shift = by.bit_length() - 1 if by & (by - 1) == 0 else -1
        self.operations.append(["split", value.number, by, quotient.number, remainder.number, shift])
        return quotient, remainder

    def join(self, outer: Any, tile: int, inner: Any) -> Any:
        if isinstance(outer, int) and isinstance(inner, int):
            return outer * tile + inner
        if isinstance(outer, int) and outer == 0:
            return inner
        if tile == 1 and isinstance(inner, int) and inner == 0:
            return outer
        if isinstance(outer, int) or (isinstance(inner, int) and inner != 0):
            raise _Unrecordable
        joined = self._new()
        self.operations.append(["join", outer.number, tile, joined.number, inner.number if inner else -1, 0])
        return joined

    def below(self, value: Any, limit: int) -> None:
        if isinstance(value, int):
            if value >= limit:
                raise _Unrecordable
            return
        self.operations.append(["below", value.number, limit, 0, 0, 0])

    def store(self, value: Any, dim: int) -> None:
        if isinstance(value, int) and value != 0:
            raise _Unrecordable
        self.operations.append(["store", -1 if isinstance(value, int) else value.number, dim, 0, 0, 0])


def _fast_backward(step: TileStep, coords: list[Any], bounds: list[int], ops: Any) -> None:
    """``_tiled_backward`` through ``ops`` (:class:`_Arrays`, :class:`_Recorder`), checking a merged dim only where
    its known bound can exceed it (bounds in step)."""
    count = len(step.groups)
    if step.covered == 0:
        return
    inners = coords[len(coords) - count :]
    outers = coords[len(coords) - 2 * count : len(coords) - count]
    inner_bounds = bounds[len(coords) - count :]
    outer_bounds = bounds[len(coords) - 2 * count : len(coords) - count]
    del coords[len(coords) - 2 * count :]
    del bounds[len(bounds) - 2 * count :]
    for group, outer, inner, outer_bound, inner_bound in zip(step.groups, outers, inners, outer_bounds,
                                                             inner_bounds):
        merged = ops.join(outer, group.tile, inner)
        bound = (outer_bound - 1) * group.tile + inner_bound
        if bound > group.merged:
            ops.below(merged, group.merged)
            bound = group.merged
        parts: list[Any] = []
        part_bounds: list[int] = []
        for size in reversed(group.sizes[1:]):
            merged, part = ops.split(merged, size)
            parts.append(part)
            part_bounds.append(min(size, bound))
            bound = -(-bound // size)
        parts.append(merged)
        part_bounds.append(bound)
        coords.extend(reversed(parts))
        bounds.extend(reversed(part_bounds))
    if step.pad:
        del coords[: step.pad]
        del bounds[: step.pad]


def _inverse_walk(plan: _Plan, offsets: Any, ops: Any) -> list[Any]:
    """The coordinates (in ``plan.order``) of the in-range ``offsets`` through ``ops``: the level walk with shifts and
    masks for powers of two and only the checks padding needs."""
    if plan.final_count < plan.physical_count:
        ops.below(offsets, plan.final_count)
    coords: list[Any] = []
    bounds: list[int] = []
    rest: Any = offsets
    for size in reversed(plan.final[1:]):
        if size == 1:
            coords.append(0)
        else:
            rest, coord = ops.split(rest, size)
            coords.append(coord)
        bounds.append(size)
    if plan.final:
        coords.append(rest)  # past final[0] only in the tail padding, which ``valid`` already refuses
        bounds.append(plan.final[0])
    coords.reverse()
    bounds.reverse()
    for level in reversed(plan.levels):
        _fast_backward(level, coords, bounds, ops)
    for position, dim in enumerate(plan.order):
        if bounds[position] > plan.sizes[dim]:
            ops.below(coords[position], plan.sizes[dim])
    return coords


def _fast_indices(plan: _Plan, chunk: Int64Array, target: Int64Array, valid_out: NDArray[np.bool_]) -> None:
    """Logical indices of the checked in-range offsets ``chunk`` into ``target`` (-1 rows on padding) and
    ``valid_out`` (:func:`_inverse_walk` on arrays)."""
    ops = _Arrays(chunk.shape[0])
    coords = _inverse_walk(plan, chunk, ops)
    if ops.valid is None:
        for position, dim in enumerate(plan.order):
            target[:, dim] = coords[position]
        valid_out.fill(True)
        return
    padding = np.subtract(ops.valid, 1, dtype=np.int64)  # 0 on elements, -1 (all bits set) on padding
    for position, dim in enumerate(plan.order):
        np.bitwise_or(coords[position], padding, out=target[:, dim])
    valid_out[...] = ops.valid


def inverse_program(shape: ShapeLike) -> tuple[Int64Array, int] | None:
    """The compiled ``multi_index`` kernel's program for ``shape`` and its count of registers, or None when its walk
    needs what the program cannot hold (:mod:`xlashapes.physical._inverse`).

    >>> program, registers = inverse_program("f32[3,5]{1,0:T(2,2)}")  # (final dims [2,3,2,2])
    >>> program.shape, registers, program[:3, 2].tolist()
    ((9, 6), 5, [2, 2, 3])
    """
    return _program_of(_plan(shape))


def _program_of(plan: _Plan) -> tuple[Int64Array, int] | None:
    """:func:`inverse_program` of ``plan``, recorded once."""
    if not plan.inverse:
        plan.inverse.append(_recorded(plan))
    return plan.inverse[0]


def _recorded(plan: _Plan) -> tuple[Int64Array, int] | None:
    """:func:`inverse_program` of ``plan``, recorded (None for shapes without elements: all padding)."""
    if not _fast_inverse(plan) or plan.element_count == 0:
        return None
    recorder = _Recorder()
    try:
        coords = _inverse_walk(plan, _Register(0), recorder)
        for position, dim in enumerate(plan.order):
            recorder.store(coords[position], dim)
    except _Unrecordable:
        return None
    from .physical._kernel_args import INVERSE_OPERATIONS as codes

    operations, count = _allocated(recorder.operations)
    return np.array([[codes[name], *words] for name, *words in operations], dtype=np.int64).reshape(-1, 6), count


_READ = {"split": (1,), "join": (1, 4), "below": (1,), "store": (1,)}
"""The registers each operation reads (its words)."""
_WRITTEN = {"split": (3, 4), "join": (3,), "below": (), "store": ()}
"""The registers each operation writes."""


def _allocated(operations: list[list[Any]]) -> tuple[list[list[Any]], int]:
    """``operations`` with their registers renumbered so that one no longer read is reused, and how many there are.

    An operation never writes a register it reads: the compiler vectorizes a loop over two registers of one array
    only when it finds at run time that they do not overlap (else a loop of one value at a time, 2x slower).

    >>> _allocated([["split", 0, 8, 1, 2, 3], ["join", 1, 8, 3, 2, 0], ["store", 3, 0, 0, 0, 0]])
    ([['split', 0, 8, 1, 2, 3], ['join', 1, 8, 0, 2, 0], ['store', 0, 0, 0, 0, 0]], 3)
    """
    last: dict[int, int] = {}
    for k, operation in enumerate(operations):
        for slot in (*_READ[operation[0]], *_WRITTEN[operation[0]]):
            if operation[slot] >= 0:
                last[operation[slot]] = k
    names = {0: 0}
    free: list[int] = []
    count = 1
    renamed = []
    for k, virtual_operation in enumerate(operations):
        operation = list(virtual_operation)
        for slot in _READ[operation[0]]:
            if operation[slot] >= 0:
                operation[slot] = names[operation[slot]]
        for slot in _WRITTEN[operation[0]]:
            free.sort()
            number = free.pop(0) if free else count
            count = max(count, number + 1)
            names[virtual_operation[slot]] = operation[slot] = number
        for slot in (*_READ[operation[0]], *_WRITTEN[operation[0]]):
            if virtual_operation[slot] >= 0 and last[virtual_operation[slot]] == k and operation[slot] not in free:
                free.append(operation[slot])
        renamed.append(operation)
    return renamed, count


def _fast_inverse(plan: _Plan) -> bool:
    """True when ``_fast_indices`` covers ``plan``: every tile entry is positive."""
    return all(group.tile > 0 for level in plan.levels for group in level.groups)


def _multi_indices(plan: _Plan, offsets: Any) -> tuple[Int64Array, NDArray[np.bool_]]:
    """Vectorized ``multi_index``: int offsets (...) to indices (..., rank) (-1 on padding) and a valid mask."""
    original = _as_array(offsets, "offsets") if not isinstance(offsets, np.ndarray) else offsets
    array = _int64_array(original, "offsets")
    flat = array.reshape(-1)
    indices = np.empty((flat.shape[0], plan.rank), dtype=np.int64)
    valid = np.empty(flat.shape[0], dtype=np.bool_)
    if _compiled_indices(plan, flat, indices, valid, original):
        return indices.reshape((*array.shape, plan.rank)), valid.reshape(array.shape)
    fast = _fast_inverse(plan)
    for start in range(0, flat.shape[0], _CHUNK):
        chunk = flat[start : start + _CHUNK]
        if not _check_rows(chunk[:, None], (plan.physical_count,), True):
            raise _offset_error(plan, original, chunk, start)
        target = indices[start : start + _CHUNK]
        if fast:
            _fast_indices(plan, chunk, target, valid[start : start + _CHUNK])
            continue
        columns, ok = _indices_by_levels(plan, chunk)
        for dim, column in enumerate(columns):
            target[:, dim] = column
        target[~ok] = -1
        valid[start : start + _CHUNK] = ok
    return indices.reshape((*array.shape, plan.rank)), valid.reshape(array.shape)


_FIRST_KERNEL_BYTES = 64 << 20
"""Outputs at least this large take the compiled kernel in a process that has not loaded the physical bytes' engine
(``physical._dispatch.FIRST_NUMBA_BYTES``; once it is loaded, its thresholds decide)."""

_KERNEL_LIMIT = 1 << 52
"""Offsets the compiled kernel takes: below this they are exact as doubles (its divisions by reciprocals)."""


def _compiled_indices(plan: _Plan, flat: Int64Array, indices: Int64Array, valid: NDArray[np.bool_],
                      original: NDArray[Any]) -> bool:
    """Fill ``indices`` and ``valid`` for the offsets ``flat`` with the compiled kernel; False when it does not run
    here (small work, as the physical bytes' thresholds say; no kernels; a program it cannot hold)."""
    nbytes = indices.nbytes + valid.nbytes
    if plan.physical_count > _KERNEL_LIMIT or not plan.rank:
        return False
    if nbytes < _FIRST_KERNEL_BYTES and "xlashapes.physical._dispatch" not in sys.modules:
        return False  # (no import of the physical engine, 0.2 s, for work it would not take)
    from .physical import _dispatch as dispatch

    if nbytes < dispatch.run_settings(0, 1, nbytes).numba_bytes:
        return False
    recorded = _program_of(plan)
    kernels = dispatch.indexer() if recorded is not None else None
    if kernels is None or recorded is None:
        return False
    program, count = recorded
    from .physical._aot import Unavailable

    offsets = np.ascontiguousarray(flat)
    registers = np.empty((count + 1, _KERNEL_CHUNK), dtype=np.int64)
    bad = np.empty(1, dtype=np.int64)
    try:
        kernels.multi_indices(offsets, indices, valid.view(np.uint8), program, registers, plan.physical_count, bad)
    except Unavailable:
        return False
    if bad[0] >= 0:
        start = int(bad[0])
        raise _offset_error(plan, original, offsets[start : start + _KERNEL_CHUNK], start)
    return True


_KERNEL_CHUNK = 512
"""Offsets per pass of the compiled kernel's operations: registers of 4 KiB, a program's few dozen in the L2 cache."""


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
    if plan.physical_count <= 2 * plan.element_count + _CHUNK:
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
    if plan.physical_count > 4 * plan.element_count + _CHUNK:
        yield from (tuple(row) for row in indices_in_memory_order_array(shape).tolist())
        return
    for start in range(0, plan.physical_count, _CHUNK):
        offsets = np.arange(start, min(start + _CHUNK, plan.physical_count), dtype=np.int64)
        indices, valid = _multi_indices(plan, offsets)
        yield from (tuple(row) for row in indices[valid].tolist())
