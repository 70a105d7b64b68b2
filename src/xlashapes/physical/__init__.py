"""NumPy arrays to and from the exact bytes of any XLA layout, and relayout from one layout to another.

A physical buffer is the logical array with its legacy padding (``padded_dimensions``), put in physical order
(``minor_to_major`` reversed), padded, split and transposed by every tile level into the tiled physical dims
(:func:`xlashapes.layout.tiled_dimensions`), read row-major, padded to a multiple of ``L(n)`` elements and packed
into bytes: with ``E(n)`` below 8 bits each byte holds ``8/n`` elements, the first in the low-order bits, as XLA's
CPU runtime packs s4/u4/s2/u2/s1/u1/f4e2m1fn. Everything works on raw bits, so NaN payloads and -0.0 survive.

>>> import numpy as np
>>> from xlashapes import parse_shape
>>> s = parse_shape("s4[6]{0:E(4)}")
>>> x = np.array([1, 2, 3, 4, 5, -1], dtype=s.element_type.numpy_dtype)
>>> to_physical(x, s).tobytes().hex()
'2143f5'
>>> from_physical(b"\\x21\\x43\\xf5", s).tolist()
[1, 2, 3, 4, 5, -1]

The fast path splits every logical dim into the factors the tiles cut it into, so that a whole layout (all tile
levels at once) is one copy between two strided views of the same factors (``_plan``). Layouts whose tiles pad
inside a dim, or merge ``*`` dims off a factor boundary, use the plain level-by-level path (``_reference``), which
the tests compare every other path against.

The modules: ``_geometry`` (checked inputs, outputs and the facts about a shape), ``_plan`` (factor views), ``_copy``
(the copy engine: NumPy, or the generic compiled kernel), ``_packing`` (sub-byte fields), ``_grouped`` (E(n) layouts
that are byte layouts of grouped elements), ``_convert`` (the two directions and relayout), ``_chunks`` / ``_slabbed``
(work one slab of the most major dim at a time, or one band of a dim further in), ``_blocks`` (relayouts moving 2 x 2
blocks whole, or squares of lines), ``files`` (``.npy`` files through a layout, larger than memory), ``_dispatch`` (when
compiled code runs: thresholds, threads, the kernel cache), ``_compiled`` (the 2-d kernels' calls), ``_stacked`` (tiled
layouts whose tiles run across the minor dim, a chunk at a time through a stage), ``_transposed`` (tiled transposes
whose ``(p,1)`` sub-tiles' rows are an odd length, through slabs of the transposed array laid out in order),
``_permuted`` (sub-tiled layouts whose short logical minor dim is outside the tiles, through bands of the array permuted
into physical order), ``_intrinsics`` (the numba building blocks), ``_shuffles`` (register transposes and interleaves),
``_kernels`` / ``_walk`` / ``_side_by_side`` / ``_stacks`` / ``_tables`` (the numba kernels), ``_entries`` / ``_aot``
(their machine code kept on disk and loaded without numba), ``_prebuilt`` (that machine code shipped for baseline CPUs),
``_widened`` (odd ``(p,1)``-grouped minor dims through the widened array), ``_trials`` (a conversion without a route
tried on a part of its slabs first) and ``_reference``.

**Compiled path.** numba is a default dependency where it ships wheels (x86-64 and 64-bit ARM, CPython < 3.14; an
environment marker leaves it out elsewhere, and ``pip install xlashapes[fast]`` asks for it explicitly). Why numba and
not a C extension: the package stays pure Python (one wheel for every platform, no compiler at install time), and numba
is the only well-kept way to get vectorized machine code (shuffles, streaming stores) from Python; its cost is paid only
by large conversions: arrays under ``FIRST_NUMBA_BYTES`` (64 MiB) never import it in a process that has not loaded numba
yet, and once it is loaded arrays from ``NUMBA_BYTES`` (1 MiB) use it. Small work never imports numba. The kernels are
few and general: the generic kernel of ``_walk`` walks the factor views of *any* layout the plan covers, in both
directions and for relayout (runs; 2- to 8-way row (de)interleaves, as TPU sub-tiles and channels make them; 9 to 32
bytes' worth of planes interleaved into channels, a 16-byte lane of planes at a time gathered into whole lines;
register transposes of blocks from 2 rows up; streaming whole lines out; a run contiguous on both sides, as a ``(2,1)``
sub-tile's row pair, moves as one word); transposing walks read one line's worth of source rows ~2 KiB at a time and
write whole destination lines (rows off the line grid are shifted onto it; short rows at different offsets, as legacy
padding makes, go through ``shifted_rows``); 2-d transposes with both sides 128 words and up (64 bytes: ``{0,1}`` of any
size, legacy padding; from 32 elements onto short destination rows back to back, as a minor batch dim makes) go
through ``_transposes``: onto destination rows on the line grid, ``direct_transpose`` moves the whole squares straight
from the source, a band of a line or two of rows swept a few lines at a time while the next sweep's lines are
prefetched into the second cache level (memory read while the squares stream out), 8-byte words too; rows at other
offsets, pred made 0/1, E(n) fields and the edges go through ``staged_transpose``, which copies blocks of source rows
into the cache one long run at a time (prefetched 8 rows or 4 KiB ahead) before transposing them out, each destination
row's lines streamed from its own line boundary, or short rows back to back as one run; bytes on the line grid are
staged as 2-byte words of two interleaved rows, squares of whole lines, bytes off it 64 x 64 at a time, and E(4) /
E(2) fields (``u4[m,n]{0,1:E(4)}``) are
packed or unpacked as the source rows are staged (four or eight rows' fields to one row of words), so a packed transpose
is one pass with no unpacked temporary. The 2-d tiled kernels (any ``T(R,C)(P,1)`` with ``P > 1``: the TPU's 8- and
16-bit formats, pred made 0/1 and plain E(n) fields packed tile by tile on the way) are faster special cases, and so
is ``tiled_stacked`` (tiles stacked along the minor dim, whose few elements would make the walk's blocks three-axis:
``_stacked``); ``pack`` /
``unpack`` do E(1)/E(2)/E(4). Arrays these functions allocate start on a 64-byte line (as XLA's buffers do), so that
whole lines can be streamed into them. Transposing walks prefetch the next block's source lines while they move the
current one; 2- and 4-byte squares of whole lines are transposed by in-lane unpacks and block shuffles. The generic
kernel is one entry point per kind of block (``_kinds``: runs, grouped squares, wide blocks (rows that make whole
lines side by side, and other rows) and quarter-line blocks, row (de)interleaves, planes to channels, short source
rows, squares), and the tiled kernels one per extra step (none, canonical bytes, E(n) packing), chosen in Python;
numba compiles only the kind a conversion uses, so a layout's first compiled use pays for its own code (0.8 to 2.7 s,
to and from, cold, on the benchmark's layouts, 48 rows 4 KiB apart 3.3 s, 12 channels to
planes 2.9-3.4 s; ``bench_physical.py --cold``). Each entry point compiles once
per element width on first use (its callees are subroutines compiled into its own code, so that LLVM optimizes and
emits each kernel's code once: :func:`._intrinsics._subroutine`) and is cached with numba's
``cache=True`` in ``$XLASHAPES_CACHE_DIR``, else
``$XDG_CACHE_HOME/xlashapes``, else ``~/.cache/xlashapes``; its machine code is also kept there (keyed by the host CPU
and the numba version), and a new process runs that through llvmlite alone, without importing numba (``_aot``;
``XLASHAPES_NO_AOT=1`` turns it off). On Linux, x86-64 (SSE4.2 and up) and 64-bit ARM, nothing compiles: the package
ships that machine code built ahead of time for baseline CPUs (``_prebuilt``; ``tools/build_prebuilt.py``), so a
layout's first compiled use costs ~0.04 s, not 2-4 s; other systems compile on first use. ``XLASHAPES_NO_NUMBA=1``
forces the NumPy path, which stays the reference: every compiled path gives its bytes exactly (the tests compare
them).

**Packed fields as bytes.** When the elements sharing each byte of an E(n) layout are always neighbours along one
logical dim (untiled: the minor dim; one tile level: its minor side; ``(p,1)`` sub-tiles: their rows), its bytes are
exactly those of a ``u8`` layout of the array whose groups along that dim were made into bytes first
(``s4[64,128]{0,1:T(8,128)(2,1)E(4)}`` holds the bytes of ``u8[32,128]{0,1:T(4,128)}``; ``_grouped``). The layouts no
tiled or packed-transpose kernel takes (permuted rank 3 and up, tiles in other orders) go that way on the compiled path:
the ``regroup`` kernel makes or splits the bytes of the groups (whole up to 64 MiB of them, else a chunk of the first
dim at a time moved into the window of the byte layout that holds it), and the byte kernels move them
(``s4[512,256,512]{1,0,2:T(8,128)(2,1)E(4)}`` 'to' 6.4 -> 2.4x the copy of the logical array; they were unpacked,
moved and packed again). A relayout between two layouts that group the same neighbours (the grouped dim a multiple of
the group, so that no byte holds padding fields) is a relayout of bytes (4.45 -> 1.87x).

**Relayout.** From or to the plain row-major layout, a relayout is :func:`to_physical` or :func:`from_physical` on the
buffer viewed as the logical array (their own kernels). Between two other layouts it is one copy between their factor
views (between tiled transposes, whose blocks are a few rows of each side's tiles, the compiled ``tile_squares`` moves
squares of one line a side made of several tiles' rows on each side, bytes' source lines gathered first: bf16
``{0,1:T(8,128)}`` to ``{1,0:T(8,128)}`` 2.3 -> 1.7x memcpy, u16 ``T(2,64)`` 7.9 -> 1.9x, u8 ``T(8,128)`` 3.35 ->
1.6x), unless that copy is fine-grained: sub-tiles turned around inside tiles (``{1,0:T(8,128)(2,1)}`` to
``{0,1:T(8,128)(2,1)}``) leave the generic kernel blocks of 2 x 2 elements, one step of its walk each (44x memcpy).
Sub-tiles turned around (``T(R,C)(p,1)`` of whole bytes, tiles partly filled too, or ``(2,1)E(4)``, the two minor dims
swapped: s8 ``{0,1:T(8,128)(4,1)}`` to ``{1,0:T(8,128)(4,1)}``, bf16 ``(2,1)``, s4) go in one compiled pass, a square of
lines at a time: the few source lines that hold the same elements as as many target lines are turned around in registers
(1.3-1.5x memcpy; ``turn_lines``). Sub-tiles pairing another dim on each side, the minor dim kept (NHWC activations'
batch dim moved, ``{3,2,1,0:T(8,128)(2,1)}`` to ``{3,0,2,1:T(8,128)(2,1)}``), are one walk of the generic kernel, ``p``
lines of words turned into ``p`` lines in registers (``TURNS``: 2.5 -> 0.85-0.9x memcpy). Onto ``(p,1)`` sub-tiles whose
``p`` paired elements follow each other in the source (its minor dim, untiled or in one tile level: ``{0,1:T(8,128)}``
to ``{1,0:T(8,128)(2,1)}``), the relayout is one of words of ``p`` elements (``_paired_words``: bf16 3.2 -> 2.65x, s8
4.0 -> 2.6x). Two other kinds move their 2 x 2 blocks whole (``_blocks``; in memory, on both paths): ``T(R,C)(2,1)``
layouts with their two minor dims swapped (bf16, or E(4)), where each block is one word in both layouts, relaid out as
words and then its middle two fields swapped in place (bf16 with tiles partly filled, the NumPy path; bf16 3.1 ->
2.2-2.5x memcpy); and untiled E(4) transposes whose source's minor dim is the target's second-minor one
(``u4[m,n]{1,0:E(4)}`` to ``{0,1:E(4)}``, any rank), whose bytes are relaid out as ``u8``, which leaves the two bytes of
each block side by side in a row two target rows long, where ``transpose_nibbles`` turns their nibbles around (1.2x the
copy of the logical array). The others, and other packed layouts (whose direct copy would unpack both sides whole), go
through the logical array: a chunk of slabs at a time when both layouts cut the same dim; else chunks of the source's
slabs, read by its own kernels and written into the windows of the target's factor view that hold their rows (3-4x
memcpy; ``_slabbed``), or, when only the target has a tiled kernel of its own, chunks of the target's slabs read from
the windows of the source that hold their rows and laid out by that kernel (bf16 ``{0,1:T(8,128)}`` to
``{1,0:T(8,128)(2,1)}`` 5.0 -> 3.1x), or, for an untiled target (packed too: ``{1,0:E(4)}`` to ``{0,1:E(4)}``), laid out
by the target's own kernels as pieces copied into the byte runs that hold those rows (one chunk in memory, not the whole
logical array); else whole, up to ``FINE_TEMPORARY`` (packed: any size the memory limit allows).

**Large arrays.** ``out=`` takes preallocated arrays and memory maps; packed layouts, irregular ones and memory
maps are converted one chunk of slabs at a time (bounded temporaries; pages handed back after each chunk), and
untiled packed layouts whose slabs would each read all of the array (their most major dim a minor logical one:
``s4[5,6710886,2]{0,1,2:E(4)}``) one band at a time: rows of a dim further in, a few ranges of fields, unpacked in the
physical order by the byte kernels and packed into their ranges (``_chunks.bands``; 76 -> 7 x memcpy of the packed
bytes), and
:func:`pack_file` / :func:`unpack_file` stream ``.npy`` files larger than memory. ``threads=`` (or
:data:`THREADS`) splits large compiled conversions over threads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._ints import checked_int
from ..errors import ShapeError
from ..shape import Shape
from . import _slabbed as slabbed
from ._blocks import (
    _nibble_rows,
    _paired_words,
    _swap_fields,
    _transpose_nibbles,
    _turn_lines,
    _turned_blocks,
    _turned_lines,
)
from ._compiled import _compiled_plan
from ._convert import _plain, _read_physical, _relayout_direct, _write_physical
from ._dispatch import release_temporaries, run_settings, with_fallback
from ._geometry import (
    _check_size,
    _check_total,
    _geometry,
    _input_bytes,
    _logical_output,
    _logical_storage,
    _output_bytes,
    _padding_storage,
    _resolved_shape,
    _tuple_items,
)
from ._grouped import grouped_pair, pad_byte
from ._slabbed import (
    read_in_slabs,
    relayout_from_windows,
    relayout_in_runs,
    relayout_in_slabs,
    relayout_in_windows,
    wants_slabs,
    write_in_slabs,
)
from .files import pack_file, terminal_progress, unpack_file

__all__ = [
    "MEMORY_LIMIT", "THREADS", "from_physical", "pack_file", "relayout", "release_temporaries", "terminal_progress",
    "to_physical", "unpack_file",
]

FINE_TEMPORARY = 64 << 20
"""Largest logical array a fine-grained relayout goes through whole (4-5x memcpy, not 10-50x) when it cannot go in
chunks (the source has no slabs); larger ones copy directly (``{1,0:T(8,128)(2,1)}`` to ``{0,1:T(8,128)(2,1)}``:
2 x 2 blocks)."""
MEMORY_LIMIT = 16 * 2**30
"""Largest array or buffer (bytes) these functions allocate unless ``memory_limit=`` says otherwise."""

THREADS = 1
"""Threads the compiled kernels split one large conversion over (unless ``threads=`` says otherwise); each writes
its own part of the output, so the bytes do not depend on it. 1, the default, keeps every conversion on the
calling thread."""


def to_physical(
    value: Any,
    shape: Shape | str,
    *,
    out: Any = None,
    padding_value: Any = None,
    memory_limit: int | None = None,
    threads: int | None = None,
) -> Any:
    """The exact bytes (a uint8 array of ``shape.byte_size()``) of ``value`` laid out as ``shape`` says.

    ``value`` must have the shape's dims and the element type's NumPy dtype (ml_dtypes for bf16, fp8, s4 ...).
    ``out`` (a writable contiguous array or bytearray of the right size) receives the bytes; an array ``out`` is
    returned itself, a bytearray as a uint8 array sharing its memory.
    ``padding_value`` is what tile, legacy and tail padding hold: default 0, or ``Layout.padding_value`` for
    legacy ``padded_dimensions`` layouts. A tuple shape takes a (nested) sequence of arrays and returns a tuple
    of buffers, one per leaf, in the same nesting.

    >>> to_physical(np.arange(6, dtype=np.uint8).reshape(2, 3), "u8[2,3]{0,1}").tolist()
    [0, 3, 1, 4, 2, 5]
    """
    array_shape = _resolved_shape(shape)
    limit = _memory_limit(memory_limit)
    if array_shape.is_tuple:
        _check_total(array_shape, limit)
        items = _tuple_items(value, array_shape, "value")
        outs = _tuple_items(out, array_shape, "out") if out is not None else [None] * len(items)
        return tuple(
            to_physical(v, sub, out=o, padding_value=padding_value, memory_limit=limit, threads=threads)
            for v, sub, o in zip(items, array_shape.tuple_shapes, outs)
        )
    geometry = _geometry(array_shape)
    x = _logical_storage(value, geometry)
    pad = _padding_storage(geometry, padding_value)
    buffer = _output_bytes(out, geometry.nbytes, limit, x)
    run = run_settings(limit, THREADS if threads is None else threads, max(x.nbytes, geometry.nbytes))

    def write() -> None:
        if not (wants_slabs(geometry, run, True, x, buffer) and write_in_slabs(x, geometry, pad, buffer, run)):
            _write_physical(x, geometry, pad, buffer, run)

    with_fallback(write)
    return out if isinstance(out, np.ndarray) else buffer


def from_physical(
    buffer: Any,
    shape: Shape | str,
    *,
    out: np.ndarray[Any, Any] | None = None,
    memory_limit: int | None = None,
    threads: int | None = None,
) -> Any:
    """The logical array (the element type's NumPy dtype) held by ``buffer`` in ``shape``'s layout.

    ``buffer`` is bytes, bytearray, memoryview or a NumPy array (e.g. from ``np.fromfile``) of exactly
    ``shape.byte_size()`` bytes. A tuple shape takes a (nested) sequence of buffers, one per leaf.

    >>> from_physical(bytes([0, 3, 1, 4, 2, 5]), "u8[2,3]{0,1}").tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    array_shape = _resolved_shape(shape)
    limit = _memory_limit(memory_limit)
    if array_shape.is_tuple:
        items = _tuple_items(buffer, array_shape, "buffer")
        outs = _tuple_items(out, array_shape, "out") if out is not None else [None] * len(items)
        return tuple(
            from_physical(b, sub, out=o, memory_limit=limit, threads=threads)
            for b, sub, o in zip(items, array_shape.tuple_shapes, outs)
        )
    geometry = _geometry(array_shape)
    data = _input_bytes(buffer, geometry)
    result = _logical_output(out, geometry, limit, data)
    run = run_settings(limit, THREADS if threads is None else threads, max(result.nbytes, geometry.nbytes))
    storage = result.view(geometry.storage)

    def read() -> None:
        if not (wants_slabs(geometry, run, False, data, result) and read_in_slabs(data, geometry, storage, run)):
            _read_physical(data, geometry, storage, run)

    with_fallback(read)
    return result


def relayout(
    buffer: Any,
    source: Shape | str,
    target: Shape | str,
    *,
    out: Any = None,
    padding_value: Any = None,
    memory_limit: int | None = None,
    threads: int | None = None,
) -> Any:
    """The bytes of ``target``'s layout holding the array that ``buffer`` holds in ``source``'s layout.

    Equal to ``to_physical(from_physical(buffer, source), target)``, but copies straight from one layout to the
    other when their tiles split the dims compatibly.

    >>> relayout(bytes([0, 3, 1, 4, 2, 5]), "u8[2,3]{0,1}", "u8[2,3]{1,0}").tolist()
    [0, 1, 2, 3, 4, 5]
    """
    src_shape, dst_shape = _resolved_shape(source), _resolved_shape(target)
    limit = _memory_limit(memory_limit)
    if src_shape.is_tuple or dst_shape.is_tuple:
        if not (src_shape.is_tuple and dst_shape.is_tuple) or len(src_shape.tuple_shapes) != len(
            dst_shape.tuple_shapes
        ):
            raise ShapeError(f"cannot relayout {src_shape} to {dst_shape}: the tuple structures differ")
        _check_total(dst_shape, limit)
        items = _tuple_items(buffer, src_shape, "buffer")
        outs = _tuple_items(out, dst_shape, "out") if out is not None else [None] * len(items)
        return tuple(
            relayout(b, s, t, out=o, padding_value=padding_value, memory_limit=limit, threads=threads)
            for b, s, t, o in zip(items, src_shape.tuple_shapes, dst_shape.tuple_shapes, outs)
        )
    src, dst = _geometry(src_shape), _geometry(dst_shape)
    if src.etype != dst.etype or src.dims != dst.dims:
        raise ShapeError(
            f"cannot relayout {src_shape} to {dst_shape}: element type and dimensions must be the same"
        )
    data = _input_bytes(buffer, src)
    pad = _padding_storage(dst, padding_value)
    result = _output_bytes(out, dst.nbytes, limit, data)
    run = run_settings(limit, THREADS if threads is None else threads, max(src.nbytes, dst.nbytes))
    big = max(src.nbytes, dst.nbytes) > slabbed.CHUNK_BYTES

    def copy() -> None:
        if _plain(src):  # the source bytes are the logical array: to_physical's kernels
            x = data[: src.nbytes].view(src.storage).reshape(src.dims)
            if not (wants_slabs(dst, run, True, x, result) and write_in_slabs(x, dst, pad, result, run)):
                _write_physical(x, dst, pad, result, run)
            return
        if _plain(dst):  # the target bytes are: from_physical's
            storage = result[: dst.nbytes].view(dst.storage).reshape(dst.dims)
            if not (wants_slabs(src, run, False, data, storage) and read_in_slabs(data, src, storage, run)):
                _read_physical(data, src, storage, run)
            return
        grouped = grouped_pair(src, dst)
        if grouped is not None:  # (E(n) fields grouped alike on both sides: a relayout of bytes)
            relayout(data, grouped[0], grouped[1], out=result, padding_value=int(pad_byte(pad, grouped[2])),
                     memory_limit=limit, threads=threads)
            return
        packed = src.packed or dst.packed  # (a direct copy would unpack both sides whole)
        if big and packed and relayout_in_slabs(data, src, dst, pad, result, run):
            return
        if not packed and _relayout_direct(data, src, dst, pad, result, run, coarse=True):
            return
        mapped = slabbed.is_mapped(data) or slabbed.is_mapped(result)  # (files: in chunks, below)
        lines = None if mapped else _turned_lines(src, dst)
        if lines is not None and _turn_lines(data, result, lines, dst, pad, run):  # (sub-tiles turned around)
            return
        blocks = None if mapped or padding_value is not None else _turned_blocks(src, dst)
        if blocks is not None:  # (sub-tiles turned around: 2 x 2 blocks as words, then their fields in place)
            relayout(data, blocks[0], blocks[1], out=result, memory_limit=limit, threads=threads)
            _swap_fields(result, blocks[2], run)
            return
        words = None if mapped or padding_value is not None else _paired_words(src, dst)
        if words is not None:  # (sub-tiles whose pairs follow each other in the source: moved as words)
            relayout(data, words[0], words[1], out=result, memory_limit=limit, threads=threads)
            return
        nibbles = _nibble_rows(src, dst) if packed and not mapped else None
        if nibbles is not None:  # (E(4) transposes: the bytes, then the nibbles of each byte pair)
            n = nibbles[1].byte_size()
            relayout(data[:n], nibbles[0], nibbles[1], out=result[:n], memory_limit=limit, threads=threads)
            _transpose_nibbles(result[:n].reshape(-1, nibbles[2]), run)
            return
        # packed, fine-grained (sub-tiles turned around inside tiles) or no direct copy: through the logical array,
        # in slabs when both layouts cut the same dim, else in the source's slabs written into windows of the
        # target (or the target's slabs read from windows of the source, when only the target has a tiled kernel of
        # its own), else whole when that is small enough (or packed), else directly
        windows = (relayout_from_windows, relayout_in_windows)
        if _compiled_plan(src.dims, src.layout) is not None or _compiled_plan(dst.dims, dst.layout) is None:
            windows = windows[::-1]
        if relayout_in_slabs(data, src, dst, pad, result, run) or any(
                way(data, src, dst, pad, result, run) for way in windows) or relayout_in_runs(
                data, src, dst, pad, result, run):
            return
        size = math.prod(src.dims) * src.storage.itemsize
        if size > FINE_TEMPORARY and not packed and _relayout_direct(data, src, dst, pad, result, run):
            return
        _check_size(size, limit, f"the logical array of {src_shape}")
        logical = np.empty(src.dims, src.storage)
        _read_physical(data, src, logical, run)
        _write_physical(logical, dst, pad, result, run)

    with_fallback(copy)
    return out if isinstance(out, np.ndarray) else result


def _memory_limit(limit: Any) -> int:
    """The per-call memory limit, or the module default."""
    if limit is None:
        limit = MEMORY_LIMIT
    number = checked_int(limit, "memory_limit")
    if number < 0:
        raise ShapeError(f"memory_limit must be >= 0, got {number}")
    return number
