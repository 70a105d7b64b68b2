"""Sub-byte packing: E(1), E(2), E(4) fields, the first element in the low-order bits of each byte."""

from __future__ import annotations

from typing import Any

import numpy as np

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


def _elements(data: np.ndarray[Any, Any], geometry: _Geometry, run: Run, what: str) -> np.ndarray[Any, Any]:
    """Physical ``data`` as element storage: unpacked into a new array (size checked) when packed, else a view."""
    if not geometry.packed:
        return data.view(geometry.storage)
    _check_size(geometry.aligned, run.limit, what)
    elements = np.empty(geometry.aligned, np.uint8)
    _unpack(data, geometry, elements, run)
    return elements
