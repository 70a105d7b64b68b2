"""``multi_index`` of many offsets: the level walk backwards over chunks of offsets, with NumPy or as a recorded
program that one compiled kernel runs for every layout (:mod:`xlashapes.physical._inverse`).

The walk (:func:`_inverse_walk`) is written once against a small set of operations (split a value by a size, join
an outer and an inner part, check a bound): :class:`_Arrays` does them on int64 arrays (the NumPy path, the
reference), :class:`_Recorder` writes them down as the kernel's program (:func:`inverse_program`).
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._index_plan import (
    CHUNK,
    Int64Array,
    ShapeLike,
    _as_array,
    _check_rows,
    _indices_by_levels,
    _int64_array,
    _offset_error,
    _Plan,
    _plan,
)
from .tiling import TileStep


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
    for start in range(0, flat.shape[0], CHUNK):
        chunk = flat[start : start + CHUNK]
        if not _check_rows(chunk[:, None], (plan.physical_count,), True):
            raise _offset_error(plan, original, chunk, start)
        target = indices[start : start + CHUNK]
        if fast:
            _fast_indices(plan, chunk, target, valid[start : start + CHUNK])
            continue
        columns, ok = _indices_by_levels(plan, chunk)
        for dim, column in enumerate(columns):
            target[:, dim] = column
        target[~ok] = -1
        valid[start : start + CHUNK] = ok
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

    usual = flat.flags.c_contiguous and flat.flags.writeable and flat.flags.aligned
    offsets = flat if usual else np.array(flat, dtype=np.int64)  # (one kernel overload, the one shipped)
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
