"""Sub-byte packing: E(1), E(2), E(4) fields, the first element in the low-order bits of each byte."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _copy, _transposes
from . import _dispatch as dispatch
from ._dispatch import Run, address
from ._geometry import _check_size, _Geometry

_BLOCK_BYTES = 1 << 18  # working set of one block of the NumPy packing loops

_LE16 = np.dtype("<u2")


def _codes(elements: np.ndarray[Any, Any], geometry: _Geometry) -> np.ndarray[Any, Any]:
    """The E-bit field of each element: its value bits, sign-extended for a signed type in a wider field (pred: 0/1)."""
    if geometry.etype.kind == "pred":
        return np.asarray(elements != 0, dtype=np.uint8)
    if geometry.bits == geometry.etype.bits:
        return elements  # _pack masks to the field itself
    field = (1 << geometry.bits) - 1
    value = geometry.value_mask
    codes: np.ndarray[Any, Any] = elements & np.uint8(value)
    if geometry.etype.is_signed:
        sign = (codes >> (geometry.etype.bits - 1)) & 1
        codes |= sign * np.uint8(field & ~value)
    return codes


def _pack(elements: np.ndarray[Any, Any], geometry: _Geometry, out: np.ndarray[Any, Any], run: Run) -> None:
    """Pack uint8 element storage into ``out``, E bits each, the first element in the low-order bits."""
    codes = np.ascontiguousarray(_codes(elements, geometry))
    bits = geometry.bits
    n = codes.size
    kernels = dispatch.kernels() if n >= run.numba_bytes else None
    if kernels is not None:
        stream = int(out.nbytes >= run.stream_bytes)

        def words(part: tuple[int, int]) -> None:
            scratch = dispatch.scratch(0)
            kernels.pack(address(codes), n, address(out), out.nbytes, address(scratch), scratch.size, bits, stream,
                         part)

        dispatch.run_parts(words, dispatch.parts(n * bits // 64, out.nbytes, run))
    elif bits == 4:
        _pack4(codes, out)
    elif bits == 1:
        out[...] = np.packbits(codes & 1, bitorder="little")
    else:
        per = 8 // bits
        field = (1 << bits) - 1
        full = n // per
        grid = codes[: full * per].reshape(full, per)
        target = out[:full]
        np.bitwise_and(grid[:, 0], field, out=target)
        for j in range(1, per):
            target |= (grid[:, j] & field) << (j * bits)
        if n % per:
            out[full] = _tail_byte(codes[full * per :], bits)


def _tail_byte(codes: np.ndarray[Any, Any], bits: int) -> int:
    """The last, partly filled byte: the remaining elements from the low-order bits, zeros above."""
    field = (1 << bits) - 1
    return sum((int(c) & field) << (j * bits) for j, c in enumerate(codes))


def _pack4(codes: np.ndarray[Any, Any], out: np.ndarray[Any, Any]) -> None:
    """Pairs of elements into bytes: ``(a & 15) | (b & 15) << 4`` via 16-bit words, block by block."""
    pairs = codes.size // 2
    words = codes[: 2 * pairs].view(_LE16)
    step = max(64, _BLOCK_BYTES // 4)
    scratch = np.empty(min(step, max(pairs, 1)), np.uint16)
    for start in range(0, pairs, step):
        block = words[start : start + step]
        tmp = scratch[: block.size]
        np.bitwise_and(block, 0x0F0F, out=tmp)
        np.multiply(tmp, np.uint16(0x0110), out=tmp)  # high byte = a | b << 4
        np.right_shift(tmp, 8, out=tmp)
        np.copyto(out[start : start + block.size], tmp, casting="unsafe")
    if codes.size % 2:
        out[pairs] = codes[-1] & 0x0F


def _unpack(data: np.ndarray[Any, Any], geometry: _Geometry, elements: np.ndarray[Any, Any], run: Run) -> None:
    """Unpack E-bit fields into canonical uint8 element storage (``elements`` is 1-D, contiguous)."""
    bits = geometry.bits
    value = geometry.value_mask
    n = elements.size
    kernels = dispatch.kernels() if n >= run.numba_bytes else None
    if kernels is not None:
        stream = int(elements.nbytes >= run.stream_bytes)

        def words(part: tuple[int, int]) -> None:
            scratch = dispatch.scratch(0)
            kernels.unpack(address(data), address(elements), n, address(scratch), scratch.size, bits, value,
                           stream, part)

        dispatch.run_parts(words, dispatch.parts(n * bits // 64, elements.nbytes, run))
    elif bits == 4:
        _unpack4(data, elements, value)
    elif bits == 1:
        elements[...] = np.unpackbits(data, count=n, bitorder="little")
    else:
        per = 8 // bits
        for j in range(per):
            lane = elements[j::per]
            np.bitwise_and(data[: lane.size] >> (j * bits), value, out=lane)


def _unpack4(data: np.ndarray[Any, Any], elements: np.ndarray[Any, Any], value: int) -> None:
    """Bytes into pairs of elements ``b & 15, b >> 4`` (masked to the value bits) via 16-bit words."""
    n = elements.size
    pairs = n // 2
    words = elements[: 2 * pairs].view(_LE16)
    mask = np.uint16(value | value << 8)
    step = max(64, _BLOCK_BYTES // 4)
    scratch = np.empty(min(step, max(pairs, 1)), np.uint16)
    for start in range(0, pairs, step):
        block = words[start : start + step]
        tmp = scratch[: block.size]
        np.copyto(block, data[start : start + block.size], casting="unsafe")
        np.left_shift(block, 4, out=tmp)
        np.bitwise_or(block, tmp, out=block)
        np.bitwise_and(block, mask, out=block)
    if n % 2:
        elements[-1] = data[pairs] & value & 0x0F


def _whole_bytes(first: int, n: int, per: int) -> tuple[int, int, int]:
    """For ``n`` fields from field ``first`` on, ``per`` a byte: (the fields before the first whole byte, the fields in
    whole bytes after them, that first whole byte).

    >>> _whole_bytes(1, 10, 2)
    (1, 8, 1)
    """
    head = min(n, -first % per)
    return head, (n - head) // per * per, (first + head) // per


def _pack_at(elements: np.ndarray[Any, Any], geometry: _Geometry, out: np.ndarray[Any, Any], first: int,
             run: Run) -> None:
    """Pack uint8 element storage into the packed bytes ``out`` from field ``first`` on: the whole bytes by
    ``_pack``, the fields in bytes shared with others one at a time (those others keep theirs).

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> out = np.array([0x21, 0x43], np.uint8)
    >>> _pack_at(np.array([7, 8], np.uint8), _geometry(parse_shape("u4[4]{0:E(4)}")), out, 1, Run(1 << 30, 1))
    >>> [hex(v) for v in out]
    ['0x71', '0x48']
    """
    head, body, start = _whole_bytes(first, elements.size, 8 // geometry.bits)
    n = elements.size
    if body:
        _pack(elements[head : head + body], geometry, out[start : start + body * geometry.bits // 8], run)
    field = (1 << geometry.bits) - 1
    for i in (*range(head), *range(head + body, n)):
        byte, shift = divmod((first + i) * geometry.bits, 8)
        code = int(_codes(elements[i : i + 1], geometry)[0]) & field
        out[byte] = (int(out[byte]) & ~(field << shift) & 0xFF) | code << shift


def _unpack_at(data: np.ndarray[Any, Any], geometry: _Geometry, elements: np.ndarray[Any, Any], first: int,
               run: Run) -> None:
    """Unpack ``elements.size`` fields of the packed bytes ``data`` from field ``first`` on into uint8 element
    storage: the whole bytes by ``_unpack``, the fields in bytes shared with others one at a time.

    >>> from ._geometry import _geometry
    >>> from ..text import parse_shape
    >>> elements, data = np.empty(2, np.uint8), np.array([0x71, 0x48], np.uint8)
    >>> _unpack_at(data, _geometry(parse_shape("u4[4]{0:E(4)}")), elements, 1, Run(1 << 30, 1))
    >>> elements.tolist()
    [7, 8]
    """
    head, body, start = _whole_bytes(first, elements.size, 8 // geometry.bits)
    n = elements.size
    if body:
        _unpack(data[start : start + body * geometry.bits // 8], geometry, elements[head : head + body], run)
    field = (1 << geometry.bits) - 1
    for i in (*range(head), *range(head + body, n)):
        byte, shift = divmod((first + i) * geometry.bits, 8)
        elements[i] = (int(data[byte]) >> shift) & field & geometry.value_mask


def _elements(data: np.ndarray[Any, Any], geometry: _Geometry, run: Run, what: str) -> np.ndarray[Any, Any]:
    """Physical ``data`` as element storage: unpacked into a new array (size checked) when packed, else a view."""
    if not geometry.packed:
        return data.view(geometry.storage)
    _check_size(geometry.aligned, run.limit, what)
    elements = np.empty(geometry.aligned, np.uint8)
    _unpack(data, geometry, elements, run)
    return elements


def _packed_transpose(
    logical: np.ndarray[Any, Any], geometry: _Geometry, physical: np.ndarray[Any, Any], run: Run, to: bool
) -> bool:
    """A 2-d transpose of E(2) or E(4) fields (``u4[m,n]{0,1:E(4)}``) in one pass, packed (``to`` the bytes) or
    unpacked on the way through the staged transpose kernel, with no unpacked temporary; False when it does not
    apply (or numba is missing)."""
    sides = _packed_sides(logical, geometry, to)
    target = physical if to else logical
    walk = dispatch.walker() if sides is not None and target.nbytes >= run.numba_bytes else None
    if sides is None or walk is None or target.nbytes < run.stream_bytes:
        return False
    big, small, du, si = sides
    per = 8 // geometry.bits
    if to:  # the kernel counts the destination's bytes: a source row of them is ``per`` rows of fields
        small, du, si = small // per, du // per, si * per
    at = address(target)
    shape, d_steps, s_steps = (np.array(v, np.int64) for v in ((big, small), (du, 1), (1, si)))
    mode = _transposes._stages(at, shape, d_steps, 1, 1, dense=False)  # (E(n) fields go row by row)
    if not mode:
        return False
    _transposes._staged(walk, at, address(logical if to else physical), np.uint8(0), shape, d_steps, s_steps,
                        target.nbytes, run, mode, geometry.bits, int(to))
    return True


def _packed_sides(logical: np.ndarray[Any, Any], geometry: _Geometry, to: bool) -> tuple[int, int, int, int] | None:
    """(big, small, du, si) of the 2-d transpose between the logical array (byte per field) and the E(2) or E(4)
    fields of ``geometry`` (``to`` them: destination rows of fields; else source rows), in elements, when it is one
    the staged kernel can pack on the way: plain fields, no tiles or padding, rows on whole bytes."""
    bits, layout = geometry.bits, geometry.layout
    plain = geometry.etype.kind != "pred" and geometry.etype.bits == bits and bits in (2, 4)
    whole = geometry.count == geometry.aligned and geometry.nbytes * 8 == geometry.count * bits
    if not (plain and whole) or layout.tiles or layout.padded_dimensions is not None or logical.itemsize != 1:
        return None
    if any(step <= 0 for step in logical.strides):
        return None
    fields = [0] * len(geometry.dims)
    step = 1
    for d in layout.minor_to_major:
        fields[d] = step
        step *= geometry.dims[d]
    pair = (fields, logical.strides) if to else (logical.strides, fields)
    axes = _copy._merged_axes(geometry.dims, *pair)
    if len(axes) != 2 or axes[0][2] != 1 or axes[1][1] != 1:
        return None
    (big, du, _), (small, _, si) = axes
    per = 8 // bits
    packed_rows = (du, small) if to else (si,)
    return None if any(v % per for v in packed_rows) else (big, small, du, si)
