"""The index plan of a shape: its tile levels, closed-form terms and strides, and the checks of indices and offsets.

The geometry and checks behind :mod:`xlashapes.indexing` (the walk is described there), shared by its forward path and
the vectorized inverse (:mod:`._index_inverse`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._ints import checked_int
from .errors import ShapeError
from .shape import Shape
from .text import parse_shape
from .tiling import TileStep, tile_step, untiled_dimensions

ShapeLike = Shape | str
Int64Array = NDArray[np.int64]

CHUNK = 1 << 14
"""Rows handled per step of the vectorized loops: the temporaries stay in the CPU cache."""

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
