"""The numba building blocks of the compiled kernels: the cached ``njit`` and LLVM intrinsics (raw loads and stores,
streaming stores, sub-byte squeezes, prefetches), typed by an element "witness" scalar; the register shuffles built
on them are :mod:`._shuffles`."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils as _cgutils
from numba.core import compiler as _compiler
from numba.core import config as _config
from numba.extending import intrinsic

from ._cache import cache_directory, kernels_digest
from ._kinds import LINE, MOST_PLANES, grouped_side, lanes_of, side_of

F = TypeVar("F", bound=Callable[..., Any])
cgutils: Any = _cgutils
compiler: Any = _compiler

# typed constants for calls: a literal 0 or 1 would make numba compile the callee once more for it
_0, _1 = np.int64(0), np.int64(1)
UNIT = 4096  # bytes a kernel writes at a time, so that reading and writing overlap
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_LINE_VECTOR = ir.VectorType(_I64, LINE // 8)


def _cached(decorate: Callable[[F], Any], function: F) -> F:
    """``decorate(function)`` with numba's cache in :func:`cache_directory` (numba fixes it at decoration time).

    numba's setting is process-wide: it is restored at once, so the user's own cached functions keep theirs.
    """
    config: Any = _config
    saved = config.CACHE_DIR
    config.CACHE_DIR = _writable(os.path.join(cache_directory(), _SOURCES)) or saved  # else numba's own choice
    try:
        return cast(F, decorate(function))
    finally:
        config.CACHE_DIR = saved


_SOURCES = kernels_digest()  # numba checks a function's own file only: each version of the sources its own folder


def _writable(folder: str) -> str | None:
    """``folder``, made if need be, when this process can write there; else None."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK | os.X_OK) else None


def _jit(function: F) -> F:
    """numba's ``njit`` (cached, without the GIL), typed for mypy."""
    return _cached(njit(cache=True, nogil=True), function)


def _inline(function: F) -> F:
    """``_jit``, inlined into its callers at numba's IR level."""
    return _cached(njit(cache=True, nogil=True, inline="always"), function)


def _subroutine(function: F) -> F:
    """A kernel's callee that returns nothing, compiled into each library that calls it and nowhere else.

    numba makes a ``_jit`` callee a library of its own, optimized and made into machine code on its own, then
    links it into each caller, whose library is optimized and made into machine code again: a callee of a callee
    paid LLVM three times over. A subroutine is typed and lowered once per process and argument types, into a
    library that LLVM never optimizes on its own, and its code is linked into the library of each entry being
    compiled that calls it (:func:`_compiled_into`), so LLVM sees each entry's code once (the first compiled use of
    f32 kernels: 5.0-5.4 s down to 3.3-3.5 s in paired runs on this machine) and numba types a subroutine that many
    entries call once (every kernel of the suite's warm-up: 86 -> 73 s). It cannot be called from Python.
    """

    def call(typingctx: Any, *args: Any) -> Any:
        signature = types.void(*args)  # (numba offers non-literal argument types first)

        def codegen(context: Any, builder: Any, signature: Any, values: Any) -> Any:
            context.call_internal(builder, _compiled_into(context, function, signature), signature, values)
            return context.get_dummy_value()

        return signature, codegen

    parameters = list(inspect.signature(function).parameters.values())  # numba folds a call's arguments by them
    typer: Any = call
    typer.__signature__ = inspect.Signature([inspect.Parameter("typingctx", inspect.Parameter.POSITIONAL_ONLY),
                                             *parameters])
    return cast(F, intrinsic(typer))


def _compiled_into(context: Any, function: Callable[..., Any], signature: Any) -> Any:
    """The function descriptor of ``function`` compiled for ``signature``; in an entry's library, its code and the
    code of the subroutines it calls are linked in, each once (:func:`_subroutine_code`)."""
    library = context.active_code_library
    done = library.__dict__.setdefault("_xlashapes_subroutines", {})
    key = (function, signature.args)
    if key not in done:
        descriptor = _subroutine_code(context, function, signature)[0]
        if library.__dict__.get("_xlashapes_scratch"):
            done[key] = descriptor  # (noted: linked into each entry along with the subroutine that calls it)
        else:
            _link(library, key, done)
    return done[key]


_SUBROUTINES: dict[Any, tuple[Any, Any, list[Any]]] = {}


def _subroutine_code(context: Any, function: Callable[..., Any], signature: Any) -> tuple[Any, Any, list[Any]]:
    """(function descriptor, library, the subroutines it calls) of ``function`` typed and lowered for
    ``signature``, once per process.

    numba's ``compile_internal`` into a library of its own that is never made into machine code, and that holds
    the function alone: the subroutines it calls are only noted (:func:`_link` links them into each entry once).
    """
    key = (function, signature.args)
    if key not in _SUBROUTINES:
        flags: Any = compiler.Flags()
        flags.nrt = True  # the kernels' own small arrays
        flags.no_compile = flags.no_cpython_wrapper = flags.no_cfunc_wrapper = True
        scratch = context.codegen().create_library(f"xlashapes_{function.__name__}")
        scratch.__dict__["_xlashapes_scratch"] = True
        descriptor = compiler.compile_internal(context.typing_context, context, scratch, function, signature.args,
                                               signature.return_type, flags, locals={}).fndesc
        needs = list(scratch.__dict__.get("_xlashapes_subroutines", {}))
        _SUBROUTINES[key] = (descriptor, scratch, needs)
    return _SUBROUTINES[key]


def _link(library: Any, key: Any, done: dict[Any, Any]) -> None:
    """Link the code of subroutine ``key`` into ``library``, and of the subroutines it calls that are not there."""
    descriptor, scratch, needs = _SUBROUTINES[key]
    done[key] = descriptor
    library._final_module.link_in(scratch._final_module.clone())  # (its functions' passes were run in scratch)
    for linked in scratch._linking_libraries:  # (numba's own overloads the subroutine calls, e.g. min)
        library.add_linking_library(linked)
    for need in needs:
        if need not in done:
            _link(library, need, done)


def _intrinsic(function: Callable[..., Any]) -> Any:
    """numba's ``intrinsic`` decorator, typed for mypy."""
    return intrinsic(function)


# ----- LLVM building blocks -------------------------------------------------------------------------------------
def _at(builder: Any, address: Any, pointee: Any) -> Any:
    """A pointer to ``pointee`` at an integer address."""
    return builder.inttoptr(address, pointee.as_pointer())


def _offset(builder: Any, address: Any, step: Any, k: int, width: int) -> Any:
    """``address + k * step * width`` (``step`` an LLVM integer, in elements of ``width`` bytes)."""
    return builder.add(address, builder.mul(step, ir.Constant(_I64, k * width)))


def _mask(values: list[int]) -> ir.Constant:
    """A shufflevector mask."""
    return ir.Constant(ir.VectorType(_I32, len(values)), values)


def _concatenated(builder: Any, parts: list[Any]) -> Any:
    """Equal vectors joined end to end (any count: undefined ones fill it up to a power of 2 at the end)."""
    parts = list(parts)
    while len(parts) & (len(parts) - 1):
        parts.append(ir.Constant(parts[0].type, None))
    while len(parts) > 1:
        join = _mask(list(range(2 * parts[0].type.count)))
        parts = [builder.shuffle_vector(parts[i], parts[i + 1], join) for i in range(0, len(parts), 2)]
    return parts[0]


def _element(context: Any, witness: Any) -> tuple[Any, int]:
    """The LLVM type of a witness scalar's type and its size in bytes."""
    element = context.get_value_type(witness)
    return element, element.width // 8


@_intrinsic
def _get(typingctx: Any, base: Any, index: Any, witness: Any) -> Any:
    """Element ``index`` (of the witness's type) of the array at address ``base``, any alignment."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        element, _ = _element(context, signature.args[2])
        return builder.load(builder.gep(_at(builder, args[0], element), [args[1]]), align=1)

    return witness(types.intp, types.intp, witness), codegen


@_intrinsic
def _put(typingctx: Any, base: Any, index: Any, value: Any) -> Any:
    """Store ``value`` as element ``index`` (of the value's type) of the array at address ``base``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        element, _ = _element(context, signature.args[2])
        builder.store(args[2], builder.gep(_at(builder, args[0], element), [args[1]]), align=1)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp, value), codegen


@_intrinsic
def _get_word(typingctx: Any, base: Any, index: Any) -> Any:
    """uint64 number ``index`` at address ``base``, any alignment."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.load(builder.gep(_at(builder, args[0], _I64), [args[1]]), align=1)

    return types.uint64(types.intp, types.intp), codegen


@_intrinsic
def _put_word(typingctx: Any, base: Any, index: Any, value: Any) -> Any:
    """Store uint64 number ``index`` at address ``base``, any alignment."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        builder.store(args[2], builder.gep(_at(builder, args[0], _I64), [args[1]]), align=1)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp, types.uint64), codegen


def _byte_copy(move: bool) -> Any:
    """An intrinsic copying ``n`` bytes from one address to another (``memmove`` semantics when ``move``)."""

    @_intrinsic
    def copy(typingctx: Any, dst: Any, src: Any, n: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            byte = ir.IntType(8)
            copier = cgutils.raw_memmove if move else cgutils.raw_memcpy
            copier(builder, _at(builder, args[0], byte), _at(builder, args[1], byte), args[2], 1)
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp), codegen

    return copy


_copy = _byte_copy(False)
_move = _byte_copy(True)


def _stream_store(builder: Any, value: Any, pointer: Any) -> None:
    """Store ``value`` (a whole line) to the line-aligned ``pointer`` streaming, past the cache."""
    store = builder.store(value, pointer, align=LINE)
    store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(_I32, 1)]))


def _streamer(lines: int) -> Any:
    """An intrinsic copying ``lines`` cache lines to a line-aligned address with non-temporal stores."""

    @_intrinsic
    def stream(typingctx: Any, dst: Any, src: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            target = _at(builder, args[0], _LINE_VECTOR)
            source = _at(builder, args[1], _LINE_VECTOR)
            values = [builder.load(builder.gep(source, [ir.Constant(_I64, k)]), align=1) for k in range(lines)]
            for k, value in enumerate(values):
                _stream_store(builder, value, builder.gep(target, [ir.Constant(_I64, k)]))
            return context.get_dummy_value()

        return types.void(types.intp, types.intp), codegen

    return stream


@_intrinsic
def _stream_joined(typingctx: Any, dst: Any, first: Any, k: Any, second: Any) -> Any:
    """Stream one line to the line-aligned ``dst``: its first ``k`` bytes (0 to a line) from address ``first``, the
    rest from ``second + k`` (a line read at each address, whole, and the bytes picked)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        byte_line = ir.VectorType(ir.IntType(8), LINE)
        low = builder.load(_at(builder, args[1], byte_line), align=1)
        high = builder.load(_at(builder, args[3], byte_line), align=1)
        count = builder.trunc(args[2], ir.IntType(8))
        splat = builder.insert_element(ir.Constant(byte_line, None), count, ir.Constant(_I32, 0))
        splat = builder.shuffle_vector(splat, ir.Constant(byte_line, None), _mask([0] * LINE))
        below = builder.icmp_unsigned("<", ir.Constant(byte_line, list(range(LINE))), splat)
        _stream_store(builder, builder.select(below, low, high), _at(builder, args[0], byte_line))
        return context.get_dummy_value()

    return types.void(types.intp, types.intp, types.intp, types.intp), codegen


_stream = _streamer(1)
_stream4 = _streamer(4)


def _byte_splat(builder: Any, value: Any) -> Any:
    """A line of bytes, each the low byte of the integer ``value``."""
    byte_line = ir.VectorType(ir.IntType(8), LINE)
    one = builder.insert_element(ir.Constant(byte_line, None), builder.trunc(value, ir.IntType(8)),
                                 ir.Constant(_I32, 0))
    return builder.shuffle_vector(one, ir.Constant(byte_line, None), _mask([0] * LINE))


def _field_liner(streamed: bool) -> Any:
    """An intrinsic storing to ``dst`` the line at ``src``, each byte shifted right ``shift`` bits and masked by
    ``mask`` (one field of each byte of groups); ``streamed``: to a line-aligned ``dst``, past the cache."""

    @_intrinsic
    def field_line(typingctx: Any, dst: Any, src: Any, shift: Any, mask: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            byte_line = ir.VectorType(ir.IntType(8), LINE)
            value = builder.load(_at(builder, args[1], byte_line), align=1)
            value = builder.and_(builder.lshr(value, _byte_splat(builder, args[2])), _byte_splat(builder, args[3]))
            if streamed:
                _stream_store(builder, value, _at(builder, args[0], byte_line))
            else:
                builder.store(value, _at(builder, args[0], byte_line), align=1)
            return context.get_dummy_value()

        return types.void(types.intp, types.intp, types.intp, types.intp), codegen

    return field_line


_field_line = _field_liner(False)
_field_line_streamed = _field_liner(True)


@_intrinsic
def _or_field_line(typingctx: Any, dst: Any, src: Any, shift: Any, mask: Any) -> Any:
    """The line at ``dst`` |= each byte of the line at ``src`` masked by ``mask``, shifted left ``shift`` bits (a
    field of each byte of groups put in place)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        byte_line = ir.VectorType(ir.IntType(8), LINE)
        target = _at(builder, args[0], byte_line)
        value = builder.and_(builder.load(_at(builder, args[1], byte_line), align=1), _byte_splat(builder, args[3]))
        value = builder.or_(builder.load(target, align=1), builder.shl(value, _byte_splat(builder, args[2])))
        builder.store(value, target, align=1)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp, types.intp, types.intp), codegen


@_intrinsic
def _move_line(typingctx: Any, dst: Any, src: Any) -> Any:
    """Copy one line's worth of bytes (the ranges may overlap), through a register."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        value = builder.load(_at(builder, args[1], _LINE_VECTOR), align=1)
        builder.store(value, _at(builder, args[0], _LINE_VECTOR), align=1)
        return context.get_dummy_value()

    return types.void(types.intp, types.intp), codegen


@_intrinsic
def _fence(typingctx: Any) -> Any:
    """A full memory fence (orders the streaming stores before whatever follows the kernel)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


def _constant(of_width: Callable[[int], int]) -> Any:
    """An intrinsic returning ``of_width(bytes of the witness's type)`` as a compile-time constant."""

    @_intrinsic
    def constant(typingctx: Any, witness: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return ir.Constant(_I64, of_width(_element(context, signature.args[0])[1]))

        return types.intp(witness), codegen

    return constant


_width = _constant(lambda width: width)
_lanes = _constant(lanes_of)
_side = _constant(side_of)
_grouped_side = _constant(grouped_side)
_most_planes = _constant(lambda width: MOST_PLANES.get(width, 0))


# the masks of the rounds that pack the low ``bits`` bits of each byte of a uint64 (rounds: shift, mask after)
_PACKING = {
    4: (0x0F0F0F0F0F0F0F0F, ((4, 0x00FF00FF00FF00FF), (8, 0x0000FFFF0000FFFF), (16, 0x00000000FFFFFFFF))),
    2: (0x0303030303030303, ((6, 0x000F000F000F000F), (12, 0x000000FF000000FF), (24, 0x000000000000FFFF))),
    1: (0x0101010101010101, ((7, 0x0003000300030003), (14, 0x0000000F0000000F), (28, 0x00000000000000FF))),
}


def _squeezer(bits: int) -> Any:
    """An intrinsic taking the low ``bits`` bits of each byte of a uint64, packed into its low ``8*bits`` bits (first
    byte lowest): three shift-or-mask rounds."""
    low, rounds = _PACKING[bits]

    @_intrinsic
    def squeeze(typingctx: Any, word: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            v = builder.and_(args[0], ir.Constant(_I64, low))
            for shift, mask in rounds:
                v = builder.and_(builder.or_(v, builder.lshr(v, ir.Constant(_I64, shift))), ir.Constant(_I64, mask))
            return v

        return types.uint64(types.uint64), codegen

    return squeeze


def _spreader(bits: int) -> Any:
    """The inverse of :func:`_squeezer`: the low ``8*bits`` bits of a uint64 spread into the low ``bits`` bits of
    each byte."""
    low, rounds = _PACKING[bits]
    masks = [*[mask for _, mask in rounds[:-1]][::-1], low]  # each round's mask, last round first

    @_intrinsic
    def spread(typingctx: Any, value: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            v = args[0]
            for (shift, _), mask in zip(rounds[::-1], masks, strict=True):
                v = builder.and_(builder.or_(v, builder.shl(v, ir.Constant(_I64, shift))), ir.Constant(_I64, mask))
            return v

        return types.uint64(types.uint64), codegen

    return spread


_squeeze4, _squeeze2, _squeeze1 = _squeezer(4), _squeezer(2), _squeezer(1)
_spread4, _spread2, _spread1 = _spreader(4), _spreader(2), _spreader(1)


@_intrinsic
def _prefetch_rows(typingctx: Any, address: Any, step: Any, length: Any, rows: Any) -> Any:
    """Hint the cache to fetch ``rows`` rows of ``length`` bytes (at most a line), ``step`` bytes apart, for reading:
    the first and the last byte of each (a row off the line grid spans two lines)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        byte = ir.IntType(8).as_pointer()
        kind = ir.FunctionType(ir.VoidType(), [byte, _I32, _I32, _I32])
        fetch = builder.module.declare_intrinsic("llvm.prefetch", [byte], kind)  # (llvmlite mangles the name)
        hints = [ir.Constant(_I32, 0), ir.Constant(_I32, 3), ir.Constant(_I32, 1)]  # read, keep, data
        last = builder.sub(args[2], ir.Constant(_I64, 1))
        with cgutils.for_range(builder, args[3]) as loop:
            row = builder.add(args[0], builder.mul(loop.index, args[1]))
            for at in (row, builder.add(row, last)):
                builder.call(fetch, [builder.inttoptr(at, byte), *hints])
        return context.get_dummy_value()

    return types.void(types.intp, types.intp, types.intp, types.intp), codegen


@_intrinsic
def _table_entry(typingctx: Any, table: Any, k: Any) -> Any:
    """Entry ``k`` of the int64 table at address ``table``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.load(_table_pointer(builder, args[0], args[1]), align=8)

    return types.intp(types.intp, types.intp), codegen


def _table_pointer(builder: Any, table: Any, k: Any) -> Any:
    """A pointer to entry ``k`` (an LLVM integer) of the int64 table at address ``table``."""
    return _at(builder, builder.add(table, builder.mul(k, ir.Constant(_I64, 8))), _I64)


@_intrinsic
def _prefetch_write(typingctx: Any, address: Any) -> Any:
    """Hint the cache to fetch the line at ``address`` for writing (its partial stores then find it there)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        byte = ir.IntType(8).as_pointer()
        kind = ir.FunctionType(ir.VoidType(), [byte, _I32, _I32, _I32])
        fetch = builder.module.declare_intrinsic("llvm.prefetch", [byte], kind)
        hints = [ir.Constant(_I32, 1), ir.Constant(_I32, 3), ir.Constant(_I32, 1)]  # write, keep, data
        builder.call(fetch, [builder.inttoptr(args[0], byte), *hints])
        return context.get_dummy_value()

    return types.void(types.intp), codegen


def _run_prefetcher(locality: int) -> Any:
    """An intrinsic: hint the cache to fetch ``lines`` lines from ``address`` on, for reading, into the cache level
    of ``locality`` (3: the first level; 2: the second)."""

    @_intrinsic
    def prefetch_run(typingctx: Any, address: Any, lines: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            byte = ir.IntType(8).as_pointer()
            kind = ir.FunctionType(ir.VoidType(), [byte, _I32, _I32, _I32])
            fetch = builder.module.declare_intrinsic("llvm.prefetch", [byte], kind)
            hints = [ir.Constant(_I32, 0), ir.Constant(_I32, locality), ir.Constant(_I32, 1)]  # read, level, data
            with cgutils.for_range(builder, args[1]) as loop:
                at = builder.add(args[0], builder.mul(loop.index, ir.Constant(_I64, LINE)))
                builder.call(fetch, [builder.inttoptr(at, byte), *hints])
            return context.get_dummy_value()

        return types.void(types.intp, types.intp), codegen

    return prefetch_run


_prefetch_run = _run_prefetcher(3)
_prefetch_run_l2 = _run_prefetcher(2)  # (runs read long after: many lines in flight, past the first level's few)
