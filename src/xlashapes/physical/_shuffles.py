"""Register shuffles of the compiled kernels: LLVM intrinsics that transpose squares of rows, turn sub-tiles around,
(de)interleave rows into words and pack sub-byte fields, all with shufflevector on whole vectors (one line or a few
words at a time), typed by an element "witness" scalar (:mod:`._intrinsics` has the loads, stores and decorators)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from llvmlite import ir
from numba import types

from ._intrinsics import (
    _I32,
    _I64,
    _LINE_VECTOR,
    _at,
    _concatenated,
    _element,
    _intrinsic,
    _mask,
    _offset,
    _stream_store,
    _table_pointer,
    cgutils,
)
from ._kinds import LINE, MOST_PLANES, lanes_of, side_of


def _store(builder: Any, value: Any, pointer: Any, nontemporal: bool) -> None:
    """Store ``value``: plainly (any alignment), or streaming a whole aligned line past the cache."""
    if not nontemporal:
        builder.store(value, pointer, align=1)
        return
    _stream_store(builder, value, pointer)


def _stores(builder: Any, pairs: list[tuple[Any, Any]], stream: Any, rows: list[int] | None = None) -> None:
    """Store each (value, pointer), streamed where the run-time integer ``stream`` is nonzero, else plainly; with
    ``rows`` (each pair's destination row), ``stream`` above 1 streams rows from ``stream - 1`` on, leaving the rest."""
    flag = builder.icmp_unsigned("!=", stream, ir.Constant(stream.type, 0))
    with builder.if_else(flag) as (streamed, plain):
        with streamed:
            for k, (value, pointer) in enumerate(pairs):
                keep = builder.icmp_unsigned("<=", stream, ir.Constant(stream.type, rows[k] + 1)) if rows else None
                with nullcontext() if keep is None else builder.if_then(keep, likely=True):
                    _store(builder, value, pointer, True)
        with plain:
            for value, pointer in pairs:
                _store(builder, value, pointer, False)


def _masked_stores(builder: Any, pairs: list[tuple[Any, Any]], keep: list[bool]) -> None:
    """Store the bytes ``keep`` says of each (value, pointer) of one line, plainly, the others left as they are (and
    not accessed: a masked store)."""
    line = ir.VectorType(ir.IntType(8), LINE)
    flags = ir.VectorType(ir.IntType(1), LINE)
    kind = ir.FunctionType(ir.VoidType(), [line, line.as_pointer(), _I32, flags])
    name = "llvm.masked.store.v64i8.p0"
    function = builder.module.globals.get(name) or ir.Function(builder.module, kind, name=name)
    mask = ir.Constant(flags, [int(k) for k in keep])
    for value, pointer in pairs:
        builder.call(function, [builder.bitcast(value, line), builder.bitcast(pointer, line.as_pointer()),
                                ir.Constant(_I32, 1), mask])


def _square_intrinsic(codegen: Callable[..., Any], grouped: bool) -> Any:
    """The intrinsic of a square transposer's ``codegen``: arguments (dst, d_step, src, s_step, stream, witness),
    with ``grouped`` a ``g_step`` and a ``shift`` after ``s_step``."""
    if grouped:
        @_intrinsic
        def grouped_square(typingctx: Any, dst: Any, d_step: Any, src: Any, s_step: Any, g_step: Any, shift: Any,
                           stream: Any, witness: Any) -> Any:
            return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, types.intp, types.intp,
                              witness), codegen

        return grouped_square

    @_intrinsic
    def square(typingctx: Any, dst: Any, d_step: Any, src: Any, s_step: Any, stream: Any, witness: Any) -> Any:
        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

    return square


def _transposer(side: int, grouped: bool = False, native: bool = True, canonical: bool = False,
                paired: bool = False) -> Any:
    """An intrinsic: element (j, i) of a square block at ``dst`` = element (i, j) at ``src``, in registers.

    The block is ``side`` elements square (0: ``side_of`` the element width). Row steps are in elements; the
    ``stream`` argument (nonzero: each destination row is a whole line on a line boundary) streams the rows out.
    The stages are :func:`_squares`. ``grouped``: the destination rows come in groups of ``2**shift`` (tiles of a
    tiled transpose whose sub-tile words leave them that many rows each): row ``j`` at ``dst + (j % 2**shift) *
    d_step + (j >> shift) * g_step``, ``g_step`` and ``shift`` arguments after ``s_step`` (a run-time group size:
    one square's code for every size); such squares of bytes are one line a side (:func:`_byte_square`). With
    ``native`` false, a width whose own side is ``side`` gets no code: its callers take the side-0 transposer
    instead (an intrinsic's code is emitted at each call site, for every width). ``canonical``: the bytes made 0 or 1
    as they are read (pred; words of several byte by byte). ``paired`` (4- and 8-byte words; no code for others):
    two squares, the second from the next ``side`` source rows to the line after each destination row's, the two
    lines of each row stored one after the other (streamed to rows a multiple of 4 KiB apart one line at a time, 64
    rows wrote at 14 GB/s on this host's Xeon, two lines a row at 25).
    """

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        element, width = _element(context, signature.args[-1])
        if not native and side == side_of(width):
            return context.get_dummy_value()  # (never called for this width: no code)
        if grouped and width == 1:
            _byte_square(builder, args, True, canonical=canonical)
            return context.get_dummy_value()
        if paired and width < 4:
            return context.get_dummy_value()
        n = side or side_of(width)
        vector = ir.VectorType(element, n)
        squares = []
        for first in (0, n) if paired else (0,):
            loaded = [builder.load(_at(builder, _offset(builder, args[2], args[3], first + i, width), vector), align=1)
                      for i in range(n)]
            squares.append(_squares(builder, [_canonical_bytes(builder, row) for row in loaded] if canonical else
                                    loaded))
        targets = [_square_row(builder, args, j, grouped, width, vector) for j in range(n)]
        _stores(builder, [(moved[j], builder.gep(targets[j], [ir.Constant(_I64, k)]))
                          for j in range(n) for k, moved in enumerate(squares)], args[-2],
                None if grouped or paired else list(range(n)))
        return context.get_dummy_value()

    return _square_intrinsic(codegen, grouped)


def _square_row(builder: Any, args: Any, j: int, grouped: bool, width: int, vector: Any) -> Any:
    """A pointer to destination row ``j`` of a square (args: dst, d_step, src, s_step[, g_step, shift], ...): ``j *
    d_step`` on, or ``grouped``, ``(j % 2**shift) * d_step + (j >> shift) * g_step`` (steps in ``width``-byte
    elements)."""
    if not grouped:
        return _at(builder, _offset(builder, args[0], args[1], j, width), vector)
    return _at(builder, _grouped_row(builder, args[0], args[1], args[4], args[5], j, width), vector)


def _grouped_row(builder: Any, base: Any, step: Any, g_step: Any, shift: Any, k: int, width: int) -> Any:
    """The address of row ``k`` of rows in groups of ``2**shift``: ``base + ((k % 2**shift) * step + (k >> shift) *
    g_step) * width`` (LLVM integers but ``k`` and ``width``)."""
    index = ir.Constant(_I64, k)
    within = builder.and_(index, builder.sub(builder.shl(ir.Constant(_I64, 1), shift), ir.Constant(_I64, 1)))
    row = builder.add(base, builder.mul(builder.mul(within, step), ir.Constant(_I64, width)))
    group = builder.lshr(index, shift)
    return builder.add(row, builder.mul(builder.mul(group, g_step), ir.Constant(_I64, width)))


def _squares(builder: Any, rows: list[Any]) -> list[Any]:
    """Rows of a square block of vectors transposed with shufflevector (one stage per bit of the row index).

    Squares of whole lines with 4 or more elements per 16 bytes (32 x 32 of 2-byte words, 16 x 16 of 4-byte ones)
    take :func:`_lane_squares`; others swap the off-diagonal sub-blocks of each power-of-two size in turn.
    """
    n = len(rows)
    if n >= 16 and rows[0].type.element.width * n == 8 * LINE:
        return _lane_squares(builder, rows)
    return _unit_squares(builder, rows, 1)


def _unit_squares(builder: Any, rows: list[Any], unit: int) -> list[Any]:
    """Rows of a square block of units of ``unit`` vector elements transposed (unit ``t`` of row ``i`` to unit ``i``
    of row ``t``), swapping the off-diagonal sub-blocks of each power-of-two size in turn."""
    n = len(rows)

    def orders(step: int) -> tuple[list[int], list[int]]:
        low = [u * unit + e for t in range(n) for u in [t if not t & step else n + t - step] for e in range(unit)]
        high = [u * unit + e for t in range(n) for u in [t + step if not t & step else n + t] for e in range(unit)]
        return low, high

    return _swapped_in_stages(builder, rows, orders)


Orders = Callable[[int], tuple[list[int], list[int]]]
"""The two shufflevector orders of one stage of swaps, by its step."""


def _swapped_in_stages(builder: Any, rows: list[Any], orders: Orders) -> list[Any]:
    """``rows`` after one stage for each power-of-two ``step`` below their count: rows ``i`` and ``i + step`` (``i``
    without that bit) become the two shufflevectors of the pair whose orders ``orders(step)`` gives."""
    step = 1
    while step < len(rows):
        low, high = (_mask(order) for order in orders(step))
        swapped = list(rows)
        for i in range(len(rows)):
            if not i & step:
                swapped[i] = builder.shuffle_vector(rows[i], rows[i + step], low)
                swapped[i + step] = builder.shuffle_vector(rows[i], rows[i + step], high)
        rows = swapped
        step *= 2
    return rows


def _unpack_order(n: int, lane: int, group: int, high: bool) -> list[int]:
    """The shufflevector order (over ``a ++ b``, ``n`` elements each) interleaving ``group``-element units of the low
    (or high) halves of each ``lane``-element lane of ``a`` and ``b``: x86's unpack instructions."""
    order: list[int] = []
    for start in range(0, n, lane):
        base = start + (lane // 2 if high else 0)
        for k in range(0, lane // 2, group):
            order += [base + k + e for e in range(group)] + [n + base + k + e for e in range(group)]
    return order


def _lane_squares(builder: Any, rows: list[Any]) -> list[Any]:
    """A square of whole-line rows (4 lanes of 16 bytes) transposed: first within each lane, 16-byte blocks at a time,
    by unpacks (``log2(lane)`` stages: :func:`_lane_transposed`), then the lanes' blocks across each 4 rows by two
    block shuffles.

    Every stage is a cheap in-lane or block shuffle (no general two-source word permutes); which row holds which
    column at the end is followed by labels.
    """
    n = len(rows)
    lane = n // 4
    column_at = {spot: c for c, spot in _lane_where(n, lane).items()}
    rows = [row for first in range(0, n, lane) for row in _lane_transposed(builder, rows[first : first + lane])]
    # (element p of row r: lane p // lane of the rows' own group, holding their column at that spot, row p % lane)
    labels = [[(r - r % lane + p % lane, column_at[(r % lane, p // lane)]) for p in range(n)] for r in range(n)]
    out: list[Any] = [None] * n
    for m in range(lane):  # the 4 x 4 blocks of rows m, m + lane, ...: block (g, L) to (L, g)
        picked = [(rows[g * lane + m], labels[g * lane + m]) for g in range(4)]
        for _ in range(2):
            shuffled = []
            for (a, la), (b, lb) in ((picked[0], picked[1]), (picked[2], picked[3])):
                for picks in ((0, 2, 4, 6), (1, 3, 5, 7)):
                    order = [p * lane + e for p in picks for e in range(lane)]
                    shuffled.append((builder.shuffle_vector(a, b, _mask(order)), [(la + lb)[k] for k in order]))
            picked = [shuffled[0], shuffled[2], shuffled[1], shuffled[3]]
        for vector, label in picked:
            out[label[0][1]] = vector  # the row holding column c becomes row c
    return out


def _short_transposer(short: int, groups: int, flagged: bool = False, bytes_only: bool = False, real: int = 0) -> Any:
    """An intrinsic: a block of ``short`` destination rows of one line each (``LINE / width`` elements), from as
    many source rows of ``short`` elements; each line streamed out (``dst`` rows line-aligned). The source rows
    come in ``groups`` equal groups (each a part of every destination line), ``g_step`` bytes apart, the rows of a
    group ``s_step`` elements apart (one strided block: ``g_step`` is the step of a group's worth of rows; blocks
    side by side in the destination: the step between blocks). ``groups`` 0: blocks of ``short`` rows side by
    side, as many as fill a line. No code for an element width the shape does not fit (never called). ``flagged``:
    a ``stream`` argument before the witness says whether to stream the lines (else stored plainly, anywhere).
    ``bytes_only``: no code for wider words either (a caller that only calls it for bytes). ``real`` (fewer than
    ``short``, ``groups`` 0): blocks cut short, of that many rows, the others read as the last and their elements of
    each destination line left as they are (stored plainly, masked)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        element, width = _element(context, signature.args[-1])
        long = LINE // width
        rows_of_group = max(1, long // (groups or max(1, LINE // (short * width))))
        if rows_of_group < short or long < 2 * short or (bytes_only and width > 1):
            return context.get_dummy_value()
        vector = ir.VectorType(element, short)
        rows = []
        for i in range(long):
            start = _offset(builder, args[2], args[3], i // rows_of_group, 1)
            at = _offset(builder, start, args[4], min(i % rows_of_group, (real or rows_of_group) - 1), width)
            rows.append(builder.load(_at(builder, at, vector), align=1))
        squares = [_squares(builder, rows[k : k + short]) for k in range(0, long, short)]
        pairs = []
        for j in range(short):
            line = _concatenated(builder, [square[j] for square in squares])
            pairs.append((line, _at(builder, _offset(builder, args[0], args[1], j, width), line.type)))
        if real:
            _masked_stores(builder, pairs, [b // width % rows_of_group < real for b in range(LINE)])
        elif flagged:
            _stores(builder, pairs, args[5])
        else:
            for line, target in pairs:
                _store(builder, line, target, True)
        return context.get_dummy_value()

    if flagged:
        @_intrinsic
        def flagged_transpose(typingctx: Any, dst: Any, d_step: Any, src: Any, g_step: Any, s_step: Any, stream: Any,
                              witness: Any) -> Any:
            return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

        return flagged_transpose

    @_intrinsic
    def transpose(typingctx: Any, dst: Any, d_step: Any, src: Any, g_step: Any, s_step: Any, witness: Any) -> Any:
        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

    return transpose


def _byte_square(builder: Any, args: Any, grouped: bool, rows: int = 0,
                 rows_at: tuple[Callable[[int], Any], Callable[[int], Any]] | None = None, real: int = 0,
                 canonical: bool = False) -> None:
    """A square of one line a side of bytes (64 x 64) transposed in registers (steps in bytes): pairs of source rows
    interleaved into rows of 2-byte words, whose two 32 x 32 squares are then transposed as words; each destination
    row (:func:`_square_row`) is one line (streamed with the ``stream`` argument, the last but one). Source row ``k``
    is ``k * s_step`` on, or with ``rows``, ``(k // rows) * g_step + (k % rows) * s_step`` (arguments dst, d_step,
    src, g_step, s_step, ...: :func:`_line_square_transposer`); ``rows_at`` gives both rows' addresses instead
    (source row ``k``, destination row ``j``: :func:`_tile_square`). With ``real`` (fewer than ``rows``), each group
    of ``rows`` holds that many rows: the others are read as its last and their bytes of each destination row left
    as they are (masked stores). ``canonical``: the bytes made 0 or 1 as they are read (pred)."""
    byte, word = ir.IntType(8), ir.IntType(16)
    half, words = ir.VectorType(byte, LINE // 2), ir.VectorType(word, LINE // 2)
    order = _mask([v for u in range(LINE // 2) for v in (u, LINE // 2 + u)])

    def row(h: int, k: int) -> Any:
        if rows_at is not None:
            return builder.add(rows_at[0](k), ir.Constant(_I64, h * LINE // 2))
        start = builder.add(args[2], ir.Constant(_I64, h * LINE // 2))
        if not rows:
            return _offset(builder, start, args[3], k, 1)
        group = _offset(builder, start, args[3], k // rows, 1)
        return _offset(builder, group, args[4], min(k % rows, (real or rows) - 1), 1)

    def target(j: int) -> Any:
        if rows_at is not None:
            return _at(builder, rows_at[1](j), words)
        return _square_row(builder, args, j, grouped, 1, words)

    for h in range(2):  # destination rows 32h .. 32h + 31: the source rows' half lines h
        loaded = [builder.load(_at(builder, row(h, k), half), align=1) for k in range(LINE)]
        if canonical:
            loaded = [_canonical_bytes(builder, value) for value in loaded]
        joined = [builder.bitcast(builder.shuffle_vector(loaded[k], loaded[k + 1], order), words)
                  for k in range(0, LINE, 2)]
        pairs = [(column, target(h * LINE // 2 + u)) for u, column in enumerate(_squares(builder, joined))]
        if real:
            _masked_stores(builder, pairs, [b % rows < real for b in range(LINE)])
        else:
            _stores(builder, pairs, args[-2], None if grouped or rows or rows_at else [*range(h * 32, h * 32 + 32)])


@_intrinsic
def _tile_square(typingctx: Any, dst: Any, d_step: Any, dg_step: Any, d_shift: Any, src: Any, s_step: Any,
                 sg_step: Any, s_shift: Any, stream: Any, witness: Any) -> Any:
    """A square of one line a side transposed in registers whose rows come in groups on both sides (tiles on both
    sides of a relayout between tiled transposes): source row ``k`` at ``src + ((k % 2**s_shift) * s_step + (k >>
    s_shift) * sg_step) * width``, destination row ``j`` likewise with the ``d_`` arguments; each destination row is
    one line (streamed when ``stream``). Bytes go as :func:`_byte_square` does."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        element, width = _element(context, signature.args[-1])
        n = LINE // width

        def source(k: int) -> Any:
            return _grouped_row(builder, args[4], args[5], args[6], args[7], k, width)

        def dest(j: int) -> Any:
            return _grouped_row(builder, args[0], args[1], args[2], args[3], j, width)

        if width == 1:
            _byte_square(builder, args, False, 0, (source, dest))
            return context.get_dummy_value()
        vector = ir.VectorType(element, n)
        moved = _squares(builder, [builder.load(_at(builder, source(k), vector), align=1) for k in range(n)])
        _stores(builder, [(row, _at(builder, dest(j), vector)) for j, row in enumerate(moved)], args[-2])
        return context.get_dummy_value()

    return types.void(*(types.intp,) * 9, witness), codegen


def _canonical_bytes(builder: Any, value: Any) -> Any:
    """A vector of pred bytes made canonical: each byte 1 where it is not 0 (words of several pred bytes, as the
    ``(4,1)`` sub-tiles' are moved, byte by byte)."""
    lanes = ir.VectorType(ir.IntType(8), value.type.count * value.type.element.width // 8)
    as_bytes = builder.bitcast(value, lanes)
    made = builder.zext(builder.icmp_unsigned("!=", as_bytes, ir.Constant(lanes, None)), lanes)
    return builder.bitcast(made, value.type)


@_intrinsic
def _stream_canonical(typingctx: Any, dst: Any, src: Any) -> Any:
    """A line of pred bytes at ``src`` made canonical (each 1 where it is not 0) and streamed to the line ``dst``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        value = builder.load(_at(builder, args[1], _LINE_VECTOR), align=1)
        _store(builder, _canonical_bytes(builder, value), _at(builder, args[0], _LINE_VECTOR), True)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp), codegen


def _table_squarer(canonical: bool, paired: bool = False) -> Any:
    """An intrinsic: a square block transposed in registers (``side_of`` its width a side) whose rows are anywhere:
    source row ``k`` at ``src`` plus entry ``k`` of the int64 table at ``s_rows`` (bytes), destination row ``j`` at
    ``dst`` plus entry ``j`` of ``d_rows`` (rows of merged axes: :mod:`._merged`); streamed out when ``stream`` is
    nonzero (each destination row then a whole line on a line boundary), else stored plainly. ``canonical``: bytes
    made 0 or 1 on the way (pred); ``paired``: two squares, as :func:`_transposer` pairs them (the second's source
    rows the table's next ``side``)."""

    @_intrinsic
    def table_square(typingctx: Any, dst: Any, d_rows: Any, src: Any, s_rows: Any, stream: Any, witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            element, width = _element(context, signature.args[-1])
            n = side_of(width)
            vector = ir.VectorType(element, n)

            def row(base: Any, table: Any, k: int) -> Any:
                offset = builder.load(_table_pointer(builder, table, ir.Constant(_I64, k)), align=8)
                return _at(builder, builder.add(base, offset), vector)

            if paired and width < 4:
                return context.get_dummy_value()
            squares = []
            for first in (0, n) if paired else (0,):
                loaded = [builder.load(row(args[2], args[3], first + k), align=1) for k in range(n)]
                squares.append(_squares(builder, [_canonical_bytes(builder, value) for value in loaded] if canonical
                                        else loaded))
            _stores(builder, [(moved[j], builder.gep(row(args[0], args[1], j), [ir.Constant(_I64, k)]))
                              for j in range(n) for k, moved in enumerate(squares)], args[4])
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

    return table_square


def _table_line_squarer(canonical: bool) -> Any:
    """An intrinsic: a square of bytes one line a side (64 x 64) whose rows are anywhere, as :func:`_table_squarer`'s
    take them (tables of byte offsets), moved as :func:`_byte_square` does: each destination row one line (streamed
    when ``stream``); ``canonical``: bytes made 0 or 1 on the way. No code for wider words (their table squares are
    a line a side already)."""

    @_intrinsic
    def table_line_square(typingctx: Any, dst: Any, d_rows: Any, src: Any, s_rows: Any, stream: Any,
                          witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            if _element(context, signature.args[-1])[1] != 1:
                return context.get_dummy_value()

            def row(base: Any, table: Any) -> Callable[[int], Any]:
                return lambda k: builder.add(base, builder.load(_table_pointer(builder, table, ir.Constant(_I64, k)),
                                                                align=8))

            _byte_square(builder, args, False, 0, (row(args[2], args[3]), row(args[0], args[1])),
                         canonical=canonical)
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

    return table_line_square


_table_square = _table_squarer(False)
_table_square_canonical = _table_squarer(True)
_table_pair, _table_pair_canonical = _table_squarer(False, True), _table_squarer(True, True)
_table_line_square = _table_line_squarer(False)
_table_line_square_canonical = _table_line_squarer(True)


def _byte_transposer(canonical: bool) -> Any:
    """An intrinsic: a square of one line a side of bytes (64 x 64) transposed in registers, as ``_transpose`` does
    (steps in bytes; :func:`_byte_square`); ``canonical``: the bytes made 0 or 1 on the way (pred)."""

    @_intrinsic
    def transpose_bytes(typingctx: Any, dst: Any, d_step: Any, src: Any, s_step: Any, stream: Any,
                        witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            if _element(context, signature.args[-1])[1] == 1:  # (never called for wider words: no code)
                _byte_square(builder, args, False, canonical=canonical)
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

    return transpose_bytes


_transpose_bytes = _byte_transposer(False)
_transpose_bytes_canonical = _byte_transposer(True)


def _line_square_transposer(rows: int, real: int = 0) -> Any:
    """An intrinsic: a square of one line a side (``LINE / width`` elements, any word width) transposed in
    registers, whose source rows come in groups of ``rows``: row ``k`` at ``src + (k // rows) * g_step`` bytes ``+
    (k % rows) * s_step`` elements (blocks of ``rows`` rows side by side in the destination, as many as fill a
    line); each destination row (``d_step`` elements apart) is one line, streamed when ``stream`` (on the line grid)
    else stored plainly. With ``real`` (fewer than ``rows``): groups cut short, of that many rows, the others read as
    the last and their elements of each destination row left as they are (stored plainly, masked)."""

    @_intrinsic
    def transpose(typingctx: Any, dst: Any, d_step: Any, src: Any, g_step: Any, s_step: Any, stream: Any,
                  witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            element, width = _element(context, signature.args[6])
            n = LINE // width
            if n % rows:
                return context.get_dummy_value()
            if width == 1:  # (bytes: 64 x 64, as 2-byte words of row pairs)
                _byte_square(builder, args, False, rows, real=real)
                return context.get_dummy_value()
            vector = ir.VectorType(element, n)
            loaded = []
            for k in range(n):
                start = _offset(builder, args[2], args[3], k // rows, 1)
                at = _offset(builder, start, args[4], min(k % rows, (real or rows) - 1), width)
                loaded.append(builder.load(_at(builder, at, vector), align=1))
            pairs = [(row, _at(builder, _offset(builder, args[0], args[1], j, width), vector))
                     for j, row in enumerate(_squares(builder, loaded))]
            if real:
                _masked_stores(builder, pairs, [b // width % rows < real for b in range(LINE)])
            else:
                _stores(builder, pairs, args[5])
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

    return transpose


_line_square2, _line_square4 = _line_square_transposer(2), _line_square_transposer(4)
_cut_square42, _cut_square43 = _line_square_transposer(4, 2), _line_square_transposer(4, 3)  # (groups cut short)
_transpose_groups = _transposer(0, grouped=True)
_transpose = _transposer(0)
_transpose_pair = _transposer(0, paired=True)  # (two squares side by side on the destination)
_transpose_canonical = _transposer(0, canonical=True)  # (pred: the bytes made 0 or 1 on the way)
_transpose_short_nt = _short_transposer(8, 2)  # 8 destination rows of one line, streamed
_wide_lines2 = _short_transposer(8, 2, True)  # (the same, streamed or stored plainly: rows of half a line, two blocks
_wide_lines4 = _short_transposer(8, 4, True)  # side by side; a quarter of a line, four blocks;
_wide_lines8 = _short_transposer(8, 8, True)  # 8 bytes, eight blocks)
_byte_rows8 = _short_transposer(8, 2, True, bytes_only=True)  # (8 rows of bytes past a square's: the same code)
_transpose_short4_nt, _transpose_short2_nt = _short_transposer(4, 2), _short_transposer(2, 2)  # 4 / 2 dest rows
_side_by_side4 = _short_transposer(4, 0, True)  # blocks of 4 / 2 rows filling a line (streamed or not)
_side_by_side2 = _short_transposer(2, 0, True)
_cut_side42, _cut_side43 = _short_transposer(4, 0, True, real=2), _short_transposer(4, 0, True, real=3)
_transpose8 = _transposer(8)
_transpose16 = _transposer(16, native=False)  # (2-byte words: 1- and 4-byte words' own side is 16)


def _line_turner(p: int, nibbles: bool = False) -> Any:
    """An intrinsic: a square of ``LINE / (p * p * width)`` lines of ``(p,1)`` sub-tile words turned around (the
    lines of ``p``-element words along one dim, whose fields run along the other, become the lines of the words along
    the other): element (x, y) = (``p * u + k``, ``p * v + j``), field ``k`` of word ``p * v + j`` of source line
    ``u``, to field ``j`` of word ``p * u + k`` of destination line ``v``.

    Source line ``u`` is at ``src + (u % 2**shift) * s_step + (u >> shift) * s_group`` (bytes), destination line
    ``v`` likewise from ``dst`` (lines in groups of ``2**shift``: the sub-tile rows of one tile); each destination
    line is streamed when ``stream`` (on the line grid), else stored plainly. Each source line's bytes are first
    put in the order of the destination lines (one ``p`` x ``p`` block of fields per destination line, its fields
    turned around: one in-line permute), then those blocks are transposed across the lines
    (:func:`_unit_squares`). Blocks over a line (``p * p * width > LINE``) get no code. With ``nibbles`` (``p`` 2,
    bytes): the fields are 4-bit (``(2,1)E(4)``), each block two bytes, transposed across the lines whole
    (:func:`_squares`, 32 lines) and then its two middle nibbles swapped.
    """

    @_intrinsic
    def turn(typingctx: Any, dst: Any, d_step: Any, d_group: Any, src: Any, s_step: Any, s_group: Any, shift: Any,
             stream: Any, witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            width = _element(context, signature.args[-1])[1]
            block = 2 if nibbles else p * p * width
            if block > LINE or (nibbles and (p, width) != (2, 1)):
                return context.get_dummy_value()  # (never called: no code)
            lines = LINE // block
            order = list(range(LINE))
            for v in range(lines if not nibbles else 0):
                for k in range(p):
                    for j in range(p):
                        for b in range(width):
                            order[((v * p + k) * p + j) * width + b] = ((p * v + j) * p + k) * width + b
            bytes_of_line = ir.VectorType(ir.IntType(8), LINE)
            unit = max(1, block // 8)
            blocks = ir.VectorType(ir.IntType(8 * block), lines) if block <= 8 else _LINE_VECTOR
            rows = []
            for u in range(lines):
                at = _grouped_row(builder, args[3], args[4], args[5], args[6], u, 1)
                value = builder.load(_at(builder, at, bytes_of_line), align=1)
                if not nibbles:
                    value = builder.shuffle_vector(value, value, _mask(order))
                rows.append(builder.bitcast(value, blocks))
            turned = _squares(builder, rows) if nibbles else _unit_squares(builder, rows, unit)
            if nibbles:
                turned = [_swapped_nibbles(builder, row) for row in turned]
            pairs = [(row, _at(builder, _grouped_row(builder, args[0], args[1], args[2], args[6], v, 1), blocks))
                     for v, row in enumerate(turned)]
            _stores(builder, pairs, args[7])
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, types.intp, types.intp,
                          types.intp, witness), codegen

    return turn


def _field_turner(p: int) -> Any:
    """An intrinsic: ``p`` lines of words of ``p`` fields turned into ``p`` lines, field ``k`` of word ``l`` of
    destination line ``j`` = field ``j`` of word ``l`` of source line ``k`` (a ``p`` x ``p`` block of elements per
    word position: :func:`_field_squares`). Source line ``k`` is at ``src + k * s_step``, destination line ``j`` at
    ``dst + j * d_step`` (bytes), each streamed when ``stream`` (on the line grid), else stored plainly."""

    @_intrinsic
    def turn(typingctx: Any, dst: Any, d_step: Any, src: Any, s_step: Any, stream: Any, witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            element, width = _element(context, signature.args[-1])
            if p * width > LINE:
                return context.get_dummy_value()  # (never called: no code)
            vector = ir.VectorType(element, LINE // width)
            rows = [builder.load(_at(builder, _offset(builder, args[2], args[3], k, 1), vector), align=1)
                    for k in range(p)]
            pairs = [(row, _at(builder, _offset(builder, args[0], args[1], j, 1), vector))
                     for j, row in enumerate(_field_squares(builder, rows))]
            _stores(builder, pairs, args[4])
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, types.intp, witness), codegen

    return turn


def _field_squares(builder: Any, rows: list[Any]) -> list[Any]:
    """``p`` rows of words of ``p`` fields, the ``p`` x ``p`` block of each word position transposed (field ``k`` of
    row ``i`` to field ``i`` of row ``k``), swapping the off-diagonal sub-blocks of each power-of-two size in turn."""
    p, n = len(rows), rows[0].type.count

    def orders(step: int) -> tuple[list[int], list[int]]:
        return ([f if not f % p & step else n + f - step for f in range(n)],
                [f + step if not f % p & step else n + f for f in range(n)])

    return _swapped_in_stages(builder, rows, orders)


_turn_fields2, _turn_fields4 = _field_turner(2), _field_turner(4)


def _swapped_nibbles(builder: Any, row: Any) -> Any:
    """Each 16-bit word of ``row`` with its second and third nibbles swapped (a 2 x 2 block of nibbles turned)."""
    def splat(value: int) -> Any:
        return ir.Constant(row.type, [value] * row.type.count)

    t = builder.and_(builder.xor(builder.lshr(row, splat(4)), row), splat(0x00F0))
    return builder.xor(row, builder.or_(t, builder.shl(t, splat(4))))


_turn_lines2, _turn_lines4, _turn_nibbles = _line_turner(2), _line_turner(4), _line_turner(2, nibbles=True)


def _interleaver(p: int) -> Any:
    """An intrinsic: element ``c*p + k`` at ``dst`` = element ``c`` of row ``k``, for one line's worth of ``c``."""
    # The rows are ``step`` elements apart; ``p`` lines are written (streamed when ``stream``: ``dst`` on a line).

    @_intrinsic
    def interleave(typingctx: Any, dst: Any, src: Any, step: Any, stream: Any, witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            element, width = _element(context, signature.args[4])
            n = lanes_of(width)
            vector = ir.VectorType(element, n)
            rows = [builder.load(_at(builder, _offset(builder, args[1], args[2], k, width), vector), align=1)
                    for k in range(p)]
            joined = _concatenated(builder, rows)
            pairs = []
            for q in range(p):
                order = [((q * n + t) % p) * n + (q * n + t) // p for t in range(n)]
                line = builder.shuffle_vector(joined, ir.Constant(joined.type, None), _mask(order))
                target = builder.add(args[0], ir.Constant(_I64, q * LINE))
                pairs.append((line, _at(builder, target, vector)))
            _stores(builder, pairs, args[3])
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, witness), codegen

    return interleave


def _deinterleaver(p: int) -> Any:
    """An intrinsic, the inverse of ``_interleaver(p)``: row ``k`` (``step`` elements apart) gets elements ``c*p+k``
    (streamed when ``stream``: every row then starts on a line)."""

    @_intrinsic
    def deinterleave(typingctx: Any, dst: Any, step: Any, src: Any, stream: Any, witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            element, width = _element(context, signature.args[4])
            n = lanes_of(width)
            vector = ir.VectorType(element, n)
            lines = [builder.load(_at(builder, builder.add(args[2], ir.Constant(_I64, q * LINE)), vector), align=1)
                     for q in range(p)]
            joined = _concatenated(builder, lines)
            pairs = []
            for k in range(p):
                order = _mask([t * p + k for t in range(n)])
                row = builder.shuffle_vector(joined, ir.Constant(joined.type, None), order)
                pairs.append((row, _at(builder, _offset(builder, args[0], args[1], k, width), vector)))
            _stores(builder, pairs, args[3])
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp, witness), codegen

    return deinterleave


def _lane_where(n: int, lane: int) -> dict[int, tuple[int, int]]:
    """Where :func:`_lane_transposed` puts each column of ``lane`` rows of ``n`` elements: column ``c`` of every row,
    in row order, is lane ``L`` of row ``r`` for ``(r, L) = where[c]``."""
    labels = [[(r, c) for c in range(n)] for r in range(lane)]
    group = 1
    while group < lane:
        for i in range(lane):
            if not i & group:
                pair = labels[i] + labels[i + group]
                labels[i], labels[i + group] = ([pair[k] for k in _unpack_order(n, lane, group, high)]
                                                for high in (False, True))
        group *= 2
    where = {}
    for r in range(lane):
        for at in range(0, n, lane):
            part = labels[r][at : at + lane]
            assert [k for k, _ in part] == list(range(lane)) and len({c for _, c in part}) == 1
            where[part[0][1]] = (r, at // lane)
    return where


def _lane_transposed(builder: Any, rows: list[Any]) -> list[Any]:
    """Rows (one per element of a 16-byte lane) transposed within each 16-byte lane by unpacks (:func:`_lane_where`
    says where each column goes)."""
    n, lane = rows[0].type.count, len(rows)
    rows = list(rows)
    group = 1
    while group < lane:
        for i in range(lane):
            if not i & group:
                a, b = rows[i], rows[i + group]
                rows[i], rows[i + group] = (builder.shuffle_vector(a, b, _mask(_unpack_order(n, lane, group, high)))
                                            for high in (False, True))
        group *= 2
    return rows


@_intrinsic
def _interleave_lane_planes(typingctx: Any, dst: Any, src: Any, step: Any, count: Any, witness: Any) -> Any:
    """``dst[u*count + k] = src[u + k*step]`` for a line's worth of ``u`` and ``count`` rows (planes) ``step``
    elements apart (9 up to ``MOST_PLANES``), in whole lines: the rows' columns put in an order that leaves, after
    a transpose within 16-byte lanes (a lane's worth of rows at a time), four consecutive columns in each vector of
    each group of rows; the ``count`` elements of those four columns then gathered from the groups' vectors into
    lines (shuffles made for each count) and stored in their place, the last spilling up to a line past it (into
    the next four columns' place, which the next store fills; past the last, ``dst`` needs that room)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        element, width = _element(context, signature.args[4])
        counts = range(9, MOST_PLANES.get(width, 0) + 1)
        if not counts:
            return context.get_dummy_value()
        n, lane = lanes_of(width), 16 // width
        vector = ir.VectorType(element, n)
        dst, src, step, count = args[0], args[1], args[2], args[3]
        where = _lane_where(n, lane)
        order = _mask([4 * where[c][0] + where[c][1] for c in range(n)])  # (column 4r + L ends in lane L of row r)
        last = builder.sub(count, ir.Constant(_I64, 1))
        done = builder.append_basic_block("planes.done")
        by_groups = builder.switch(builder.udiv(builder.add(count, ir.Constant(_I64, lane - 1)),
                                                ir.Constant(_I64, lane)), done)
        for groups in sorted({-(-c // lane) for c in counts}):
            block = builder.append_basic_block(f"planes.groups{groups}")
            by_groups.add_case(ir.Constant(_I64, groups), block)
            builder.position_at_end(block)
            vectors = n // 4  # of each group: four columns each
            held = cgutils.alloca_once(builder, ir.ArrayType(vector, groups * vectors))
            for g in range(groups):
                rows = []
                for k in range(lane):
                    plane = ir.Constant(_I64, g * lane + k)
                    plane = builder.select(builder.icmp_unsigned("<", plane, count), plane, last)
                    at = builder.add(src, builder.mul(builder.mul(plane, step), ir.Constant(_I64, width)))
                    row = builder.load(_at(builder, at, vector), align=1)
                    rows.append(builder.shuffle_vector(row, ir.Constant(vector, None), order))
                for r, moved in enumerate(_lane_transposed(builder, rows)):
                    builder.store(moved, cgutils.gep_inbounds(builder, held, 0, g * vectors + r))
            by_count = builder.switch(count, done)
            for c in (c for c in counts if -(-c // lane) == groups):
                case = builder.append_basic_block(f"planes.{c}")
                by_count.add_case(ir.Constant(_I64, c), case)
                builder.position_at_end(case)
                # (a loop over the vectors, not unrolled: each count's shuffles are lowered once)
                with cgutils.for_range(builder, ir.Constant(_I64, vectors)) as loop:
                    parts = [builder.load(builder.gep(held, [ir.Constant(_I32, 0),
                                                             builder.add(loop.index, ir.Constant(_I64, g * vectors))]))
                             for g in range(groups)]
                    joined = _concatenated(builder, parts)
                    base = builder.mul(loop.index, ir.Constant(_I64, 4 * c * width))
                    for q in range(0, 4 * c, n):  # element j of the four columns: column j // c, row j % c
                        take = [(j // c) * lane + (j % c) % lane + (j % c) // lane * n if j < 4 * c else 0
                                for j in range(q, q + n)]
                        value = builder.shuffle_vector(joined, ir.Constant(joined.type, None), _mask(take))
                        target = builder.add(builder.add(dst, base), ir.Constant(_I64, q * width))
                        builder.store(value, _at(builder, target, vector), align=1)
                builder.branch(done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp, types.intp, types.intp, witness), codegen


_interleave2, _interleave3, _interleave4 = _interleaver(2), _interleaver(3), _interleaver(4)
_interleave5, _interleave6, _interleave7 = _interleaver(5), _interleaver(6), _interleaver(7)
_interleave8 = _interleaver(8)
_deinterleave2, _deinterleave3, _deinterleave4 = _deinterleaver(2), _deinterleaver(3), _deinterleaver(4)
_deinterleave5, _deinterleave6, _deinterleave7 = _deinterleaver(5), _deinterleaver(6), _deinterleaver(7)


def _interleaved(builder: Any, low: Any, high: Any) -> Any:
    """Two byte vectors of a line each joined element by element (``low[0], high[0], low[1], ...``): rows of 2-byte
    words."""
    order = _mask([v for u in range(low.type.count) for v in (u, low.type.count + u)])
    return builder.shuffle_vector(low, high, order)


def _packer(bits: int) -> Any:
    """An intrinsic: a line of bytes from each of ``2 * 8 / bits`` rows (``step`` bytes apart) packed ``bits`` bits
    per byte (E(bits), the first row in the low-order bits), the first half of the rows into the low bytes of two
    lines of 2-byte words at ``dst``, the second half into their high bytes."""
    per = 8 // bits

    @_intrinsic
    def pack(typingctx: Any, dst: Any, src: Any, step: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            line = ir.VectorType(ir.IntType(8), LINE)
            rows = [builder.load(_at(builder, _offset(builder, args[1], args[2], q, 1), line), align=1)
                    for q in range(2 * per)]
            halves = []
            for h in range(2):
                value = None
                for m in range(per):
                    field = rows[h * per + m]
                    if m < per - 1:  # (the last field's high bits are shifted out)
                        field = builder.and_(field, ir.Constant(line, [(1 << bits) - 1] * LINE))
                    if m:
                        field = builder.shl(field, ir.Constant(line, [m * bits] * LINE))
                    value = field if value is None else builder.or_(value, field)
                halves.append(value)
            words = _interleaved(builder, halves[0], halves[1])
            builder.store(words, _at(builder, args[0], words.type), align=1)
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp), codegen

    return pack


def _unpacker(bits: int) -> Any:
    """An intrinsic: a line's worth of ``bits``-bit fields (E(bits), the first in the low-order bits) from each of two
    rows of packed bytes (``step`` bytes apart), one field per byte, the first row's in the low bytes of two lines of
    2-byte words at ``dst``, the second row's in their high bytes."""
    per = 8 // bits

    @_intrinsic
    def unpack(typingctx: Any, dst: Any, src: Any, step: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            byte = ir.IntType(8)
            packed = ir.VectorType(byte, LINE // per)
            field = ir.Constant(packed, [(1 << bits) - 1] * (LINE // per))
            order = _mask([(u % per) * (LINE // per) + u // per for u in range(LINE)])  # field m of byte b: u = b*per+m
            halves = []
            for k in range(2):
                row = builder.load(_at(builder, _offset(builder, args[1], args[2], k, 1), packed), align=1)
                fields = [row if m == 0 else builder.lshr(row, ir.Constant(packed, [m * bits] * (LINE // per)))
                          for m in range(per)]
                fields = [builder.and_(value, field) if m < per - 1 else value for m, value in enumerate(fields)]
                halves.append(builder.shuffle_vector(_concatenated(builder, fields) if per > 1 else fields[0],
                                                     ir.Constant(ir.VectorType(byte, LINE), None), order))
            words = _interleaved(builder, halves[0], halves[1])
            builder.store(words, _at(builder, args[0], words.type), align=1)
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp), codegen

    return unpack


_pack_rows2, _pack_rows4 = _packer(2), _packer(4)
_unpack_rows2, _unpack_rows4 = _unpacker(2), _unpacker(4)


@_intrinsic
def _nibbles_joined(typingctx: Any, grouped: Any, fields: Any) -> Any:
    """A line of E(4) groups at ``grouped`` from two lines of fields at ``fields``: group word ``k`` from the low
    nibbles of field words ``2k`` (the low halves) and ``2k + 1`` (the high halves)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        words = [builder.load(_at(builder, builder.add(args[1], ir.Constant(_I64, 64 * h)), _LINE_VECTOR), align=1)
                 for h in range(2)]
        low, high = (builder.shuffle_vector(words[0], words[1], _mask(list(range(q, 16, 2)))) for q in range(2))
        nibbles = ir.Constant(_LINE_VECTOR, [0x0F0F0F0F0F0F0F0F] * 8)
        high = builder.shl(builder.and_(high, nibbles), ir.Constant(_LINE_VECTOR, [4] * 8))
        builder.store(builder.or_(builder.and_(low, nibbles), high), _at(builder, args[0], _LINE_VECTOR), align=1)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp), codegen


@_intrinsic
def _nibbles_split(typingctx: Any, grouped: Any, fields: Any, lanes: Any) -> Any:
    """The other way: two lines of fields at ``fields`` from a line of E(4) groups at ``grouped``, word ``2k`` the
    low nibbles of group word ``k`` and ``2k + 1`` its high ones, each byte masked by ``lanes``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        groups = builder.load(_at(builder, args[0], _LINE_VECTOR), align=1)
        lanes = builder.insert_element(ir.Constant(_LINE_VECTOR, None), args[2], ir.Constant(_I32, 0))
        lanes = builder.shuffle_vector(lanes, ir.Constant(_LINE_VECTOR, None), _mask([0] * 8))
        low = builder.and_(groups, lanes)
        high = builder.and_(builder.lshr(groups, ir.Constant(_LINE_VECTOR, [4] * 8)), lanes)
        for h in range(2):
            words = builder.shuffle_vector(low, high, _mask([i for k in range(4 * h, 4 * h + 4) for i in (k, k + 8)]))
            builder.store(words, _at(builder, builder.add(args[1], ir.Constant(_I64, 64 * h)), _LINE_VECTOR), align=1)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp, types.uint64), codegen
