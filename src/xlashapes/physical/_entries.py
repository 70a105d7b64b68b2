"""The kernel entry points the dispatch calls, their arguments as machine words, and (numba side) their machine code.

An entry is one ``njit`` kernel of ``_walk`` or ``_kernels`` called from Python, compiled by numba once per
argument types (the element width of its ``pad`` witness, above all). numba's native calling convention passes
``(return slot, exception slot, arguments...)`` with every argument flattened into machine words: an int or a
NumPy scalar is one word, a tuple (and the NamedTuple geometries) its fields in order, an array its data model's
fields (meminfo, parent, size, itemsize, data address, shape, strides). :func:`flattened` builds those words from
the Python arguments without numba; :func:`native_entry` (numba loaded) gives the compiled overload's symbol,
the machine types of its words and its object code, and checks that the two flattenings agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ENTRIES = {
    "_walk": ("walk_runs", "walk_groups", "walk_wide", "walk_wide_lines", "walk_quarters", "walk_rows", "walk_squares",
              "walk_planes", "walk_short", "walk_turns", "shifted_rows", "staged_transpose",
              "staged_transpose_canonical", "direct_transpose", "padded_rows", "cut_rows", "padding_runs"),
    "_kernels": ("tiled_to_physical", "tiled_to_canonical", "tiled_to_packed", "tiled_to_odd_physical",
                 "tiled_to_odd_canonical", "tiled_to_odd_packed", "tiled_from_physical",
                 "tiled_from_canonical", "tiled_from_packed", "tiled_from_tile_rows", "pack", "unpack",
                 "transpose_nibbles", "swap_fields", "turn_lines", "regroup", "tile_squares"),
    "_stacks": ("tiled_stacked",),
    "_inverse": ("multi_indices",),
    "_tables": ("merged_squares", "merged_lines", "merged_staged", "merged_squares_canonical", "merged_lines_canonical",
                "merged_staged_canonical", "merged_direct", "merged_direct_lines", "merged_direct_canonical",
                "merged_direct_lines_canonical", "permuted_blocks"),
}
"""The kernels the dispatch calls, by module (the call sites' attribute names)."""

WORDS = ("i8", "i16", "i32", "i64", "ptr", "float", "double")
"""Machine types of argument words an entry may take (anything else is not written ahead of time)."""


def signature_key(args: tuple[Any, ...]) -> str:
    """A text naming the numba argument types ``args`` take (one compiled overload per key), or "" when an
    argument is of a kind the entries do not take.

    >>> signature_key((1, np.uint16(0), np.zeros(3, np.int64), (2, 3)))
    'i,<u2,A1<i8Cwa,(i,i)'
    """
    return keyed_words(args)[0]


def keyed_words(args: tuple[Any, ...]) -> tuple[str, list[int | float]]:
    """:func:`signature_key` and :func:`flattened` of ``args`` in one pass (a kernel call takes both: the key picks
    the overload, the words are its arguments); the words are incomplete where the key is "".

    >>> keyed_words((7, np.uint8(3), (1, 2)))
    ('i,|u1,(i,i)', [7, 3, 1, 2])
    """
    parts: list[str] = []
    words: list[int | float] = []
    for value in args:
        if type(value) is int:  # (most arguments: addresses, counts, flags)
            if not -(1 << 63) <= value < (1 << 63):
                return "", words
            parts.append("i")
            words.append(value)
            continue
        key = _key_of(value)
        if not key:
            return "", words
        parts.append(key)
        _flatten(value, words)
    return ",".join(parts), words


def _key_of(value: Any) -> str:
    """The key of one argument ("" for an unsupported kind)."""
    if isinstance(value, np.ndarray):
        flags, dtype = value.flags, value.dtype
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        writable = "w" if flags.writeable else "r"
        aligned = "a" if flags.aligned else "u"
        return f"A{value.ndim}{dtype.str}{layout}{writable}{aligned}" if dtype.kind in "iuf" else ""
    if isinstance(value, bool | np.bool_):
        return "b"
    if isinstance(value, int):
        return "i" if -(1 << 63) <= value < (1 << 63) else ""
    if isinstance(value, np.generic):
        if value.dtype == np.int64:
            return "i"  # numba types an int64 scalar as it types a Python int
        return value.dtype.str if value.dtype.kind in "iuf" else ""
    if isinstance(value, tuple):
        inner = [_key_of(item) for item in value]
        name = type(value).__name__ if type(value) is not tuple else ""
        return "" if "" in inner else f"{name}({','.join(inner)})"
    return ""


def flattened(args: tuple[Any, ...]) -> list[int | float]:
    """The machine words of ``args`` in numba's native calling convention (arrays as their data model's fields).

    >>> flattened((7, (1, 2), np.uint8(3)))
    [7, 1, 2, 3]
    """
    words: list[int | float] = []
    for value in args:
        _flatten(value, words)
    return words


def _flatten(value: Any, words: list[int | float]) -> None:
    """Append the words of one argument."""
    if isinstance(value, np.ndarray):
        words += [0, 0, value.size, value.itemsize, int(value.ctypes.data), *value.shape, *value.strides]
    elif isinstance(value, tuple):
        for item in value:
            _flatten(item, words)
    elif isinstance(value, float | np.floating):
        words.append(float(value))
    else:
        words.append(int(value))


def native_entry(dispatcher: Any, args: tuple[Any, ...]) -> tuple[str, list[str], bytes] | None:
    """(symbol, word types, object code) of the overload ``dispatcher`` ran for ``args``; None when there is none
    (not compiled for exactly these types, no object code kept) or its words do not match :func:`flattened`.

    Needs numba (imported by the caller: the dispatcher is a numba one).
    """
    from numba import typeof  # the caller has loaded numba: this costs nothing

    try:
        signature = tuple(typeof(value) for value in args)  # type: ignore[no-untyped-call]
        result = dispatcher.overloads.get(signature)
        if result is None:
            return None
        code = _object_code(dispatcher, signature, result)
        kind = result.target_context.call_conv.get_function_type(result.fndesc.restype, result.fndesc.argtypes)
        words = [_word(str(t)) for t in kind.args[2:]]
        symbol = str(result.fndesc.llvm_func_name)
    except Exception:  # numba internals differ from what this module knows: no object written
        return None
    if len(words) != len(flattened(args)) or "" in words:
        return None
    return symbol, words, code


def _object_code(dispatcher: Any, signature: tuple[Any, ...], result: Any) -> bytes:
    """The object code of one compiled overload: kept by its library when numba compiled it in this process; when
    numba loaded it from its cache (the engine then took the library's copy), read again from numba's cache file."""
    try:
        return bytes(result.library._get_compiled_object())
    except RuntimeError:  # loaded from numba's cache: the object is in its data file
        cache = dispatcher._cache
        data = cache._cache_file.load(cache._index_key(signature, result.target_context.codegen()))
        name, kind, payload = data[0]
        if kind != "object":
            raise ValueError(f"{name}: numba kept {kind}, not object code") from None
        return bytes(payload[0])


def _word(text: str) -> str:
    """The machine type of one LLVM argument type ("" when not one of :data:`WORDS`).

    >>> _word("i8*"), _word("i64"), _word("{i8*, i32}")
    ('ptr', 'i64', '')
    """
    if text.endswith("*") or text == "ptr":
        return "ptr"
    return text if text in WORDS else ""
