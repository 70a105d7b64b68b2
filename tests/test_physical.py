"""Physical bytes of every layout: the documents' examples, XLA's CPU runtime, the plain reference path, bad input."""

from __future__ import annotations

import ctypes
import functools
import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from xlashapes import physical
from xlashapes.layout import COMBINE_DIMENSION
from xlashapes.physical import _copy as copies
from xlashapes.physical import _dispatch as dispatch
from xlashapes.physical import _packing as packing
from xlashapes.physical import _plan as plans
from xlashapes.physical import _reference as reference
from xlashapes.physical import _slabbed as slabbed
from xlashapes.physical import from_physical, relayout, to_physical
from xlashapes.physical._geometry import _geometry, _padding_storage

STAR = COMBINE_DIMENSION
ARRAY_TYPES = [name for name, kind in xs.ELEMENT_TYPES.items() if kind.is_array_type]
SUB_BYTE_FIELDS = {"s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "f4e2m1fn": 4}


# ----- helpers ------------------------------------------------------------------------------------------------
def random_array(etype: str, dims: tuple[int, ...], seed: int) -> np.ndarray:
    """Random bits of ``etype`` (NaN payloads, -0.0, non-canonical sub-byte storage all included)."""
    dtype = xs.element_type(etype).numpy_dtype
    raw = np.random.default_rng(seed).integers(0, 256, size=(*dims, dtype.itemsize), dtype=np.uint8)
    return raw.view(dtype).reshape(dims)


def canonical_bits(x: np.ndarray) -> np.ndarray:
    """The storage bytes of ``x`` as XLA means them: pred 0/1, sub-byte types only their value bits."""
    etype = xs.element_type(x.dtype)
    raw = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    if etype.name == "pred":
        return (raw != 0).astype(np.uint8)
    if etype.bits < 8:
        return raw & np.uint8((1 << etype.bits) - 1)
    return raw.copy()


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """True when two arrays have the same dtype, dims and canonical bits."""
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(canonical_bits(a), canonical_bits(b))


def element_bits_equal(actual: bytes | np.ndarray, expected: bytes | np.ndarray, count: int, bits: int) -> bool:
    """Compare two packed buffers, ignoring the unspecified bits after the last element of a partly filled byte."""
    a = np.frombuffer(bytes(actual), np.uint8).copy()
    b = np.frombuffer(bytes(expected), np.uint8).copy()
    if a.size != b.size:
        return False
    used = count * bits % 8
    if used and a.size:
        a[-1] &= (1 << used) - 1
        b[-1] &= (1 << used) - 1
    return bool(np.array_equal(a, b))


def floats(buffer: np.ndarray) -> list[float]:
    """A physical buffer of f32 as a list of floats."""
    return buffer.view(np.float32).tolist()


# ----- the documents' examples ----------------------------------------------------------------------------------
A_TO_F = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)  # a b c / d e f


def test_row_major_2x3_is_a_b_c_d_e_f() -> None:
    assert floats(to_physical(A_TO_F, "f32[2,3]{1,0}")) == [1, 2, 3, 4, 5, 6]


def test_column_major_2x3_is_a_d_b_e_c_f() -> None:
    assert floats(to_physical(A_TO_F, "f32[2,3]{0,1}")) == [1, 4, 2, 5, 3, 6]


def test_legacy_padding_column_major_3x5() -> None:
    shape = xs.make_shape("f32", [2, 3], layout=xs.Layout((0, 1), padded_dimensions=(3, 5)))
    buffer = to_physical(A_TO_F, shape)
    assert floats(buffer) == [1, 4, 0, 2, 5, 0, 3, 6, 0, 0, 0, 0, 0, 0, 0]
    assert len(buffer) == shape.byte_size() == 60
    assert np.array_equal(from_physical(buffer, shape), A_TO_F)


def test_legacy_padding_uses_layout_padding_value_unless_overridden() -> None:
    shape = xs.make_shape("f32", [2, 3], layout=xs.Layout((0, 1), padded_dimensions=(3, 5), padding_value=-1))
    assert floats(to_physical(A_TO_F, shape))[:3] == [1, 4, -1]
    assert floats(to_physical(A_TO_F, shape, padding_value=9))[-1] == 9


def test_tiled_f32_3x5_t2x2_figure() -> None:
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    buffer = to_physical(x, "f32[3,5]{1,0:T(2,2)}")
    expected = np.zeros(24, np.float32)
    for i in range(3):
        for j in range(5):
            expected[((i // 2) * 3 + j // 2) * 4 + (i % 2) * 2 + j % 2] = x[i, j]
    assert floats(buffer) == expected.tolist()
    assert buffer.view(np.float32)[17] == x[2, 3]  # element (2,3) -> linear index 17


def test_tiled_f32_4x8_t2x4_t2x1_figure() -> None:
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    buffer = to_physical(x, "f32[4,8]{1,0:T(2,4)(2,1)}").view(np.float32)
    position = {float(v): i for i, v in enumerate(buffer)}
    assert [position[x[0, c]] for c in range(8)] == [0, 2, 4, 6, 8, 10, 12, 14]
    assert [position[x[1, c]] for c in range(8)] == [1, 3, 5, 7, 9, 11, 13, 15]
    assert [position[x[2, c]] for c in range(8)] == [16, 18, 20, 22, 24, 26, 28, 30]


def test_tiled_8x8_t2x4_t2x1x1x1_element_6_5_is_51() -> None:
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    buffer = to_physical(x, "s32[8,8]{1,0:T(2,4)(2,1,1,1)}").view(np.int32)
    assert buffer[51] == x[6, 5]


def test_s4_packing_is_21_43_f5() -> None:
    shape = xs.parse_shape("s4[6]{0:E(4)}")
    x = np.array([1, 2, 3, 4, 5, -1], dtype=ml_dtypes.int4)
    buffer = to_physical(x, shape)
    assert buffer.tobytes() == bytes.fromhex("2143f5")
    assert from_physical(bytes.fromhex("2143f5"), shape).tolist() == [1, 2, 3, 4, 5, -1]


def test_s4_odd_count_leaves_only_unspecified_bits_free() -> None:
    shape = xs.parse_shape("s4[3]{0:E(4)}")
    buffer = to_physical(np.array([1, 2, -3], dtype=ml_dtypes.int4), shape)
    assert element_bits_equal(buffer, bytes.fromhex("21" "0d"), 3, 4)
    assert from_physical(bytes.fromhex("21" "fd"), shape).tolist() == [1, 2, -3]  # high nibble ignored


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("u2[5]{0:E(2)}", [1, 2, 3, 0, 3], "39" "03"),
        ("s2[4]{0:E(2)}", [-1, 1, -2, 0], "27"),
        ("u1[10]{0:E(1)}", [1, 0, 1, 1, 0, 0, 0, 1, 1, 0], "8d" "01"),
        ("f4e2m1fn[2]{0:E(4)}", [1.0, -6.0], "f2"),
        ("s2[2]{0:E(4)}", [-1, 1], "1f"),  # a signed value in a wider field is sign-extended
        ("u2[2]{0:E(4)}", [3, 1], "13"),
        ("s4[2]{0:E(8)}", [-1, 7], "0f" "07"),  # E(8) is one byte per element, value bits only
        ("s4[2]", [-2, 3], "0e" "03"),
        ("pred[10]{0:E(1)}", [1, 0, 1, 1, 0, 0, 0, 1, 1, 0], "8d" "01"),
    ],
)
def test_sub_byte_packing(text: str, values: list[float], expected: str) -> None:
    shape = xs.parse_shape(text)
    x = np.array(values).astype(shape.element_type.numpy_dtype)
    buffer = to_physical(x, shape)
    bits = shape.element_size_in_bits()
    assert element_bits_equal(buffer, bytes.fromhex(expected), len(values), bits)
    assert same_bits(from_physical(buffer, shape), x)


def test_pred_is_one_byte_zero_or_one() -> None:
    x = np.array([0, 1, 7, 0], dtype=np.uint8).view(np.bool_)
    assert to_physical(x, "pred[4]").tolist() == [0, 1, 1, 0]
    assert from_physical(bytes([0, 1, 2, 0]), "pred[4]").view(np.uint8).tolist() == [0, 1, 1, 0]


@pytest.mark.parametrize("text", ["pred[3000,1500]", "s4[2,1000,2500]{2,1,0}", "u2[5000,1000]", "pred[7]"])
@pytest.mark.parametrize("threads", [1, 2])
def test_in_order_pred_and_sub_byte_bytes_are_copied_canonical_in_one_pass(
    monkeypatch: pytest.MonkeyPatch, text: str, threads: int
) -> None:
    # bytes that are the logical array in order are copied and made canonical at once (no second pass over them),
    # in parts over two threads from 4 MiB on; stray high bits anywhere, first and last byte too, go either way
    from xlashapes.physical import _convert

    passes: list[str] = []
    monkeypatch.setattr(_convert, "_canonicalize", lambda *args: passes.append("second pass"))
    shape = xs.parse_shape(text)
    raw = np.random.default_rng(threads).integers(0, 256, size=shape.dimensions, dtype=np.uint8)
    raw.reshape(-1)[[0, -1]] = 0xFE
    x = raw.view(shape.element_type.numpy_dtype)
    buffer = to_physical(x, shape, threads=threads)
    assert np.array_equal(buffer, reference._reference_to_physical(x, shape))
    assert buffer.max() == {"pred": 1, "s4": 0xF, "u2": 3}[str(shape.element_type)]
    back = from_physical(raw.reshape(-1), shape, threads=threads)
    assert same_bits(back, reference._reference_from_physical(raw.reshape(-1), shape))
    assert passes == []


def test_nan_payloads_and_negative_zero_survive() -> None:
    bits = np.array([0x7FC01234, 0xFFA00001, 0x80000000, 0x7F800001], dtype=np.uint32)
    x = np.resize(bits, (4, 6)).view(np.float32)
    for text in ("f32[4,6]{0,1:T(2,4)(2,1)}", "f32[4,6]{1,0:T(8,128)L(512)}"):
        assert np.array_equal(from_physical(to_physical(x, text), text).view(np.uint32), x.view(np.uint32))
    half = np.array([0x7FC1, 0xFF81, 0x8000, 0x7F81] * 8, dtype=np.uint16).view(ml_dtypes.bfloat16).reshape(4, 8)
    text = "bf16[4,8]{1,0:T(8,128)(2,1)}"
    assert np.array_equal(from_physical(to_physical(half, text), text).view(np.uint16), half.view(np.uint16))


def test_nan_padding_value_is_bit_exact() -> None:
    nan = np.array([0x7FC0BEEF], np.uint32).view(np.float32)[0]
    buffer = to_physical(np.zeros((3, 5), np.float32), "f32[3,5]{1,0:T(2,2)}", padding_value=nan)
    assert buffer.view(np.uint32)[9] == 0x7FC0BEEF  # element (1, 4)'s tile neighbour (1, 5) is padding


def test_tail_padding_l_n() -> None:
    shape = xs.parse_shape("s32[3]{0:L(8)}")
    buffer = to_physical(np.array([1, 2, 3], np.int32), shape, padding_value=-1)
    assert buffer.view(np.int32).tolist() == [1, 2, 3, -1, -1, -1, -1, -1]


def test_memory_space_does_not_change_bytes() -> None:
    x = random_array("bf16", (16, 256), 1)
    plain = to_physical(x, "bf16[16,256]{1,0:T(8,128)(2,1)}")
    assert np.array_equal(to_physical(x, "bf16[16,256]{1,0:T(8,128)(2,1)S(1)}"), plain)
    assert np.array_equal(to_physical(x, "bf16[16,256]{1,0:T(8,128)(2,1)S(5)}"), plain)


def test_combined_dims_and_tiles_longer_than_rank() -> None:
    for text in (
        "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
        "f32[6,8]{1,0:T(*,4)}",
        "s16[5]{0:T(2,4,8)}",
        "u8[3,4]{0,1:T(2,2,2)(3,1)}",
        "f32[]{:T(4)}",
    ):
        shape = xs.parse_shape(text)
        x = random_array(str(shape.element_type), shape.dimensions, 3)
        buffer = to_physical(x, shape)
        assert len(buffer) == shape.byte_size()
        assert np.array_equal(buffer, reference._reference_to_physical(x, shape))
        assert same_bits(from_physical(buffer, shape), x)


def test_scalars_and_empty_arrays() -> None:
    assert to_physical(np.float32(2.5), "f32[]").view(np.float32).tolist() == [2.5]
    assert from_physical(np.float32(2.5).tobytes(), "f32[]").shape == ()
    empty = np.zeros((0, 3), np.float32)
    assert to_physical(empty, "f32[0,3]").size == 0
    assert from_physical(b"", "f32[0,3]").shape == (0, 3)
    padded = xs.make_shape("s8", [0, 2], layout=xs.Layout((1, 0), padded_dimensions=(2, 2), padding_value=7))
    assert to_physical(np.zeros((0, 2), np.int8), padded).tolist() == [7, 7, 7, 7]


def test_every_buffer_form_reads_the_same(tmp_path: Any) -> None:
    shape = xs.parse_shape("bf16[13,300]{0,1:T(8,128)(2,1)}")
    x = random_array("bf16", (13, 300), 5)
    buffer = to_physical(x, shape)
    path = tmp_path / "buffer.bin"
    buffer.tofile(path)
    for form in (
        buffer.tobytes(),
        bytearray(buffer.tobytes()),
        memoryview(buffer.tobytes()),
        np.fromfile(path, dtype=np.uint8),
        np.fromfile(path, dtype=np.uint16),
        np.memmap(path, dtype=np.uint8, mode="r"),
    ):
        assert same_bits(from_physical(form, shape), x)


def test_out_is_filled_and_returned() -> None:
    shape = xs.parse_shape("f32[16,256]{1,0:T(8,128)}")
    x = random_array("f32", (16, 256), 7)
    out = np.full(shape.byte_size(), 0xAB, np.uint8)
    assert to_physical(x, shape, out=out) is out
    assert np.array_equal(out, to_physical(x, shape))
    target = bytearray(shape.byte_size())
    to_physical(x, shape, out=target)
    assert bytes(target) == out.tobytes()
    back = np.empty_like(x)
    assert from_physical(out, shape, out=back) is back
    assert same_bits(back, x)


def test_non_contiguous_and_byte_swapped_inputs() -> None:
    shape = xs.parse_shape("f32[5,7]{0,1:T(2,4)}")
    x = random_array("f32", (7, 5), 9).T
    expected = to_physical(np.ascontiguousarray(x), shape)
    assert np.array_equal(to_physical(x, shape), expected)
    assert np.array_equal(to_physical(x.astype(x.dtype.newbyteorder(">")), shape), expected)
    flipped = random_array("f32", (5, 7), 10)[::-1, ::-1]
    assert np.array_equal(to_physical(flipped, shape), to_physical(flipped.copy(), shape))


def test_non_canonical_sub_byte_input_is_written_canonically() -> None:
    raw = np.array([0xF1, 0x32, 0xAB], np.uint8)
    x = raw.view(ml_dtypes.int4)
    assert to_physical(x, "s4[3]{0:E(4)}").tolist() == [0x21, 0x0B]
    assert to_physical(x, "s4[3]").tolist() == [0x01, 0x02, 0x0B]


def test_tuples_give_one_buffer_per_leaf() -> None:
    shape = xs.parse_shape("(f32[2,3]{0,1}, (s4[3]{0:E(4)}, pred[2]))")
    a = A_TO_F
    b = np.array([1, -2, 3], dtype=ml_dtypes.int4)
    c = np.array([True, False])
    buffers = to_physical([a, (b, c)], shape)
    assert floats(buffers[0]) == [1, 4, 2, 5, 3, 6]
    assert element_bits_equal(buffers[1][0], bytes.fromhex("e103"), 3, 4)
    assert buffers[1][1].tolist() == [1, 0]
    back = from_physical(buffers, shape)
    assert same_bits(back[0], a) and same_bits(back[1][0], b) and same_bits(back[1][1], c)
    swapped = relayout(buffers, shape, xs.parse_shape("(f32[2,3]{1,0}, (s4[3]{0:E(4)}, pred[2]))"))
    assert floats(swapped[0]) == [1, 2, 3, 4, 5, 6]
    assert to_physical([], "()") == ()


def test_relayout_straight_between_layouts() -> None:
    source = xs.parse_shape("bf16[256,512]{1,0:T(8,128)(2,1)}")
    target = xs.parse_shape("bf16[256,512]{0,1}")
    x = random_array("bf16", (256, 512), 11)
    buffer = relayout(to_physical(x, source), source, target)
    assert np.array_equal(buffer, to_physical(x, target))
    assert np.array_equal(relayout(buffer, target, source), to_physical(x, source))


def test_seed_example_round_trip() -> None:
    s = xs.parse_shape("bf16[256,512]{1,0:T(8,128)(2,1)}")
    x = random_array("bf16", (256, 512), 12)
    buf = to_physical(x, s)
    assert buf.dtype == np.uint8 and len(buf) == s.byte_size()
    y = from_physical(buf, s)
    assert y.dtype == ml_dtypes.bfloat16 and np.array_equal(y.view(np.uint16), x.view(np.uint16))


# ----- errors, not corruption -------------------------------------------------------------------------------------
SHAPE = "f32[2,3]{0,1:T(2,2)}"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: to_physical(np.zeros((2, 3), np.float64), SHAPE), "dtype"),
        (lambda: to_physical(np.zeros((3, 2), np.float32), SHAPE), "dims"),
        (lambda: to_physical([[1, 2, 3], [4, 5, 6]], SHAPE), "dtype"),
        (lambda: to_physical(np.zeros((2, 3), object), SHAPE), "dtype"),
        (lambda: to_physical(np.zeros((2, 3), np.float32), SHAPE, padding_value="x"), "padding"),
        (lambda: to_physical(np.zeros(2, np.int8), "s8[2]{0:L(4)}", padding_value=300), "padding"),
        (lambda: to_physical(np.zeros(2, np.int8), "s8[2]{0:L(4)}", padding_value=1.5), "padding"),
        (lambda: to_physical(np.zeros(2, np.float32), "f32[2]{0:L(4)}", padding_value=1j), "padding"),
        (lambda: to_physical(np.zeros(2, np.float32), "f32[2]{0:L(4)}", padding_value=[1, 2]), "padding"),
        (lambda: to_physical(np.zeros((2, 3), np.float32), SHAPE, out=np.zeros(3, np.uint8)), "out"),
        (lambda: to_physical(np.zeros((2, 3), np.float32), SHAPE, out=bytes(48)), "out"),
        (lambda: to_physical(np.zeros((2, 3), np.float32), SHAPE, out=[0] * 48), "out"),
        (lambda: to_physical(np.zeros((2, 3), np.float32), SHAPE, memory_limit=-1), "memory_limit"),
        (lambda: to_physical(np.zeros((2, 3), np.float32), SHAPE, memory_limit=10), "memory limit"),
        (lambda: to_physical(np.zeros(2, np.float32), "f32[2]{0:T(1000000000000)}"), "memory limit"),
        (lambda: to_physical(np.zeros(3, np.float32), "f32[?]"), "unbounded"),
        (lambda: to_physical(np.zeros(2, np.int8), "s8[2]{0:E(16)}"), "E(16)"),
        (lambda: to_physical(np.zeros(2, ml_dtypes.float6_e2m3fn), "f6e2m3fn[2]{0:E(6)}"), "E(6)"),
        (lambda: to_physical(np.zeros(2, ml_dtypes.float4_e2m1fn), "f4e2m1fn[2]{0:E(8)}", memory_limit=0), "limit"),
        (lambda: to_physical(None, "token[]"), "not an array"),
        (lambda: to_physical(np.zeros(2, np.float32), "(f32[2], f32[2])"), "list or tuple"),
        (lambda: to_physical([np.zeros(2, np.float32)], "(f32[2], f32[2])"), "has 2 elements"),
        (lambda: to_physical(np.zeros(2, np.float32), 42), "Shape or shape text"),
        (lambda: from_physical(bytes(47), SHAPE), "47 bytes"),
        (lambda: from_physical("abc", SHAPE), "not str"),
        (lambda: from_physical([1, 2, 3], SHAPE), "buffer"),
        (lambda: from_physical(np.zeros(6, object), SHAPE), "objects"),
        (lambda: from_physical(bytes(32), SHAPE, out=np.zeros((2, 3), np.float64)), "out"),
        (lambda: from_physical(bytes(32), SHAPE, memory_limit=8), "memory limit"),
        (lambda: relayout(bytes(32), SHAPE, "f32[3,2]"), "dimensions"),
        (lambda: relayout(bytes(32), SHAPE, "s32[2,3]"), "element type"),
        (lambda: relayout(bytes(32), SHAPE, "(f32[2,3])"), "tuple"),
    ],
)
def test_bad_input_is_a_shape_error(call: Any, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_sparse_layout_is_a_shape_error() -> None:
    shape = xs.Shape(xs.element_type("f32"), (4,), layout=xs.Layout((0,), dim_level_types=("C",)))
    with pytest.raises(xs.ShapeError, match="sparse"):
        to_physical(np.zeros(4, np.float32), shape)


def test_out_overlapping_the_input_is_a_shape_error() -> None:
    x = np.zeros(12, np.float32)
    with pytest.raises(xs.ShapeError, match="overlaps"):
        to_physical(x, "f32[12]", out=x.view(np.uint8))
    buffer = np.zeros(48, np.uint8)
    with pytest.raises(xs.ShapeError, match="overlaps"):
        from_physical(buffer, "f32[12]", out=buffer.view(np.float32))


def test_module_memory_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(physical, "MEMORY_LIMIT", 100)
    to_physical(np.zeros(25, np.float32), "f32[25]")
    with pytest.raises(xs.ShapeError, match="memory limit"):
        to_physical(np.zeros(26, np.float32), "f32[26]")
    to_physical(np.zeros(26, np.float32), "f32[26]", memory_limit=104)


# ----- XLA's CPU runtime ---------------------------------------------------------------------------------------------
CPU_TYPES = [
    "pred", "s2", "s4", "s8", "s16", "s32", "s64", "u2", "u4", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
    "f64", "c64", "c128", "f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz", "f8e4m3", "f8e3m4",
    "f4e2m1fn", "f8e8m0fnu",
]


@pytest.fixture(scope="module")
def jax_cpu() -> Any:
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.layout")
    return jax


def cpu_cases(etype: str) -> list[tuple[np.ndarray, xs.Shape, tuple[int, ...]]]:
    """Twelve random arrays of ``etype`` (rank 0 to 4, the last may have 0-size dims) with random dim orders."""
    rng = np.random.default_rng(sum(map(ord, etype)))
    cases = []
    for case in range(12):
        rank = int(rng.integers(0, 5))
        dims = tuple(int(d) for d in rng.integers(0 if case == 11 else 1, 7, size=rank))
        minor_to_major = tuple(int(d) for d in rng.permutation(rank))
        x = random_array(etype, dims, int(rng.integers(1 << 30)))
        if xs.element_type(etype).bits < 8 or etype == "pred":
            x = canonical_bits(x).view(x.dtype).reshape(dims)
        fields = SUB_BYTE_FIELDS.get(etype)
        cases.append((x, xs.make_shape(etype, dims, minor_to_major, element_size_in_bits=fields or 0), minor_to_major))
    return cases


@pytest.fixture(scope="module")
def xla_cpu_bytes(jax_cpu: Any) -> dict[str, list[bytes]]:
    """The bytes XLA's CPU runtime holds for every case of every type, each laid out as its shape says.

    One XLA program returns all of them (one compilation instead of one per case), each output with its own
    layout. Only the first ``byte_size()`` bytes are kept: XLA sizes s2/s4 buffers unpacked but packs the data
    into the first bytes.
    """
    from jax.experimental.layout import Format, Layout

    cases = [(etype, case) for etype in CPU_TYPES for case in cpu_cases(etype)]
    sharding = jax_cpu.sharding.SingleDeviceSharding(jax_cpu.devices("cpu")[0])
    orders = [tuple(m[::-1]) for _, (_, _, m) in cases]
    with jax_cpu.enable_x64(True):
        identity = jax_cpu.jit(
            lambda *arrays: arrays,
            out_shardings=tuple(Format(Layout(major_to_minor=order), sharding) for order in orders),
        )
        arrays = identity(*[x for _, (x, _, _) in cases])
        held: dict[str, list[bytes]] = {etype: [] for etype in CPU_TYPES}
        for (etype, (_, shape, _)), array, order in zip(cases, arrays, orders):
            array.block_until_ready()
            size = shape.byte_size()
            assert array.on_device_size_in_bytes() >= size
            assert array.format.layout.major_to_minor == order
            data = bytes((ctypes.c_uint8 * size).from_address(array.unsafe_buffer_pointer())) if size else b""
            held[etype].append(data)
    return held


@pytest.mark.parametrize("etype", CPU_TYPES)
def test_same_bytes_as_xla_cpu_runtime(xla_cpu_bytes: dict[str, list[bytes]], etype: str) -> None:
    for (x, shape, _), held in zip(cpu_cases(etype), xla_cpu_bytes[etype], strict=True):
        fields = SUB_BYTE_FIELDS.get(etype)
        ours = to_physical(x, shape)
        assert len(ours) == shape.byte_size(), shape
        assert element_bits_equal(ours, held, math.prod(shape.dimensions), fields or 8 * x.dtype.itemsize), shape
        assert same_bits(from_physical(held, shape), x), shape


# ----- properties: random shapes and layouts against the plain reference path ---------------------------------------
# The strategies the generators draw from, built once (the same distributions; Hypothesis need not rebuild and
# validate a new strategy on every draw).
TILE_COUNTS = st.integers(0, 3)
ALIGNMENTS = st.sampled_from([1, 1, 2, 3, 8])
MEMORY_SPACES = st.sampled_from([0, 1, 5])
BOOLEANS = st.booleans()
PADDINGS = st.integers(0, 2)
SEEDS = st.integers(0, 2**32)
CASE_TYPES = st.sampled_from([t for t in ARRAY_TYPES if t not in ("f6e2m3fn", "f6e3m2fn")] + ["f6e2m3fn"])


@functools.cache
def tile_lists(rank: int) -> st.SearchStrategy[list[int]]:
    """Tiles of 1 to rank + 2 entries."""
    return st.lists(st.sampled_from([1, 2, 3, 4, 8, STAR]), min_size=1, max_size=rank + 2)


@functools.cache
def element_sizes(options: tuple[int, ...]) -> st.SearchStrategy[int]:
    """E(n): 0, 8 or one of ``options``."""
    return st.sampled_from([0, 8, *options])


@functools.cache
def permutations(rank: int) -> st.SearchStrategy[list[int]]:
    """Dim orders of ``rank`` dims."""
    return st.permutations(range(rank))


@functools.cache
def dim_lists(low: int, high: int) -> st.SearchStrategy[list[int]]:
    """Up to 4 dims in [low, high]."""
    return st.lists(st.integers(low, high), max_size=4)


@st.composite
def layouts(draw: st.DrawFn, dims: tuple[int, ...], etype: str) -> xs.Layout:
    """A random layout for ``dims``: order, tiles (with '*', shorter and longer than rank), L, E, padding, S."""
    rank = len(dims)
    minor_to_major = tuple(draw(permutations(rank)))
    tiles = []
    for _ in range(draw(TILE_COUNTS)):
        tile = draw(tile_lists(rank))
        if tile and tile[-1] == STAR:
            tile[-1] = 2
        tiles.append(tuple(tile))
    fields: dict[str, Any] = {
        "tiles": tuple(tiles),
        "tail_padding_alignment_in_elements": draw(ALIGNMENTS),
        "memory_space": draw(MEMORY_SPACES),
    }
    kind = xs.element_type(etype)
    if kind.bits < 8:
        options = [b for b in (1, 2, 4) if b >= kind.bits and (kind.is_integral or b == kind.bits)]
        fields["element_size_in_bits"] = draw(element_sizes(tuple(options)))
    if etype == "pred":
        fields["element_size_in_bits"] = draw(element_sizes((1,)))
    if draw(BOOLEANS) and draw(BOOLEANS):
        fields["padded_dimensions"] = tuple(d + draw(PADDINGS) for d in dims)
    return xs.Layout(minor_to_major, **fields)


@st.composite
def cases(draw: st.DrawFn, max_dim: int = 9) -> tuple[xs.Shape, np.ndarray, xs.Shape]:
    """(shape, random array of it, another layout of the same array)."""
    etype = draw(CASE_TYPES)
    dims = tuple(draw(dim_lists(0 if draw(BOOLEANS) else 1, max_dim)))
    try:
        shape = xs.make_shape(etype, dims, layout=draw(layouts(dims, etype)))
        other = xs.make_shape(etype, dims, layout=draw(layouts(dims, etype)))
    except xs.ShapeError:  # a layout the foundation rejects
        assume(False)
    assume(shape.byte_size() <= 1 << 20 and other.byte_size() <= 1 << 20)
    x = random_array(etype, dims, draw(SEEDS))
    return shape, x, other


PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


@PROPERTY
@given(cases())
def test_round_trip_is_bit_exact(case: tuple[xs.Shape, np.ndarray, xs.Shape]) -> None:
    shape, x, _ = case
    buffer = to_physical(x, shape)
    assert buffer.dtype == np.uint8 and len(buffer) == shape.byte_size()
    assert same_bits(from_physical(buffer, shape), x)


@PROPERTY
@given(cases())
def test_fast_path_equals_reference_path(case: tuple[xs.Shape, np.ndarray, xs.Shape]) -> None:
    shape, x, _ = case
    buffer = to_physical(x, shape)
    assert np.array_equal(buffer, reference._reference_to_physical(x, shape))
    noise = np.random.default_rng(len(buffer)).integers(0, 256, size=len(buffer), dtype=np.uint8)
    assert same_bits(from_physical(noise, shape), reference._reference_from_physical(noise, shape))


@PROPERTY
@given(cases())
def test_relayout_equals_to_physical_of_from_physical(case: tuple[xs.Shape, np.ndarray, xs.Shape]) -> None:
    shape, x, other = case
    noise = np.random.default_rng(shape.byte_size()).integers(0, 256, size=shape.byte_size(), dtype=np.uint8)
    for buffer in (to_physical(x, shape), noise):
        expected = to_physical(from_physical(buffer, shape), other)
        assert np.array_equal(relayout(buffer, shape, other), expected)


@settings(PROPERTY, max_examples=180)  # (60 a route)
@given(cases(max_dim=40), st.sampled_from([1, 300, 1 << 12]), st.sampled_from(["windows", "from windows", "runs"]))
def test_chunked_relayouts_equal_reference_path(case: tuple[xs.Shape, np.ndarray, xs.Shape], budget: int,
                                                route: str) -> None:
    # chunks of the source's slabs (one step each, a few, all) written into windows of the target's factor view, or
    # chunks of the target's slabs read from windows of the source's, or laid out as pieces of an untiled target
    # (packed too) and copied into its byte runs
    shape, x, other = case
    src, dst = _geometry(shape), _geometry(other)
    result = np.full(dst.nbytes, 0xAB, np.uint8)
    saved = slabbed.CHUNK_BYTES
    chunked = {"windows": slabbed.relayout_in_windows, "from windows": slabbed.relayout_from_windows,
               "runs": slabbed.relayout_in_runs}[route]
    try:
        slabbed.CHUNK_BYTES = budget
        run = dispatch.run_settings(physical.MEMORY_LIMIT, 1, dst.nbytes)
        done = chunked(to_physical(x, shape), src, dst, _padding_storage(dst, None), result, run)
    finally:
        slabbed.CHUNK_BYTES = saved
    assume(done)
    assert np.array_equal(result, reference._reference_to_physical(x, other))


@pytest.mark.parametrize(("pair", "taken"), [
    (("bf16[256,512]{0,1:T(8,128)}", "bf16[256,512]{1,0:T(8,128)(2,1)}"), True),
    (("s8[130,260]{0,1:T(8,128)}", "s8[130,260]{1,0:T(8,128)(4,1)}"), True),
    (("bf16[136,520]{0,1:T(8,128)}", "bf16[136,520]{1,0:T(8,128)(2,1)}"), True),
    (("bf16[256,512]{1,0:T(8,128)(2,1)}", "bf16[256,512]{0,1:T(8,128)}"), False),
])
def test_relayouts_onto_a_tiled_kernel_go_in_the_targets_slabs(pair: tuple[str, str], taken: bool,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # fine-grained relayouts whose target has a tiled kernel of its own and whose source has none: chunks of the
    # target's slabs (8 KiB: several, the last one short) read from windows of the source and laid out by the
    # target's kernel; the other way round, the source's slabs written into windows of the target
    shape, other = (xs.parse_shape(text) for text in pair)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    done: list[bool] = []
    original = slabbed.relayout_from_windows
    monkeypatch.setattr(physical, "relayout_from_windows", lambda *args: done.append(original(*args)) or done[-1])
    monkeypatch.setattr(physical, "_turned_blocks", lambda *args: None)
    monkeypatch.setattr(slabbed, "CHUNK_BYTES", 1 << 13)
    buffer = to_physical(x, shape)
    assert np.array_equal(relayout(buffer, shape, other), reference._reference_to_physical(x, other))
    assert (done == [True]) == taken, done


@pytest.mark.parametrize("pair", [("u4[64,301]{1,0:E(4)}", "u4[64,301]{0,1:E(4)}"),  # (odd: not as bytes)
                                  ("u4[71,256]{0,1:E(4)}", "u4[71,256]{1,0:E(4)}"),
                                  ("s4[64,256]{1,0:T(8,128)E(4)}", "s4[64,256]{0,1:E(4)}"),
                                  ("u2[12,40,32]{2,1,0:E(2)}", "u2[12,40,32]{0,2,1:E(2)}")])
def test_packed_transposes_go_in_runs_of_the_target(pair: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    # the packed relayouts whose layouts cut different dims hold one chunk of the logical array, not all of it
    # (fields grouped alike in bytes on both sides are a relayout of bytes instead: test_physical_grouped)
    shape, other = (xs.parse_shape(text) for text in pair)
    x = np.random.default_rng(1).integers(0, 1 << shape.element_type.bits, shape.dimensions).astype(
        shape.element_type.numpy_dtype)
    done: list[bool] = []
    original = slabbed.relayout_in_runs
    monkeypatch.setattr(physical, "relayout_in_runs", lambda *args: done.append(original(*args)) or done[-1])
    monkeypatch.setattr(slabbed, "CHUNK_BYTES", 1 << 10)
    buffer = to_physical(x, shape)
    assert np.array_equal(relayout(buffer, shape, other), reference._reference_to_physical(x, other))
    assert done == [True]


TUNING = ("_SMALL_BYTES", "_BLOCK_BYTES", "_TILE_BYTES", "_WIDEN_BYTES", "_GATHER_STRIDE", "_MAX_LOOPS")


@PROPERTY
@given(cases(max_dim=40), st.sampled_from([0, 64, 1 << 10]), st.sampled_from([0, 1 << 10]), st.sampled_from([4, 256]))
def test_blocked_copies_equal_reference_path(
    case: tuple[xs.Shape, np.ndarray, xs.Shape], block: int, gather: int, loops: int
) -> None:
    shape, x, other = case
    saved = {name: getattr(copies, name) for name in TUNING}
    saved_packing = packing._BLOCK_BYTES
    try:
        for name, value in zip(TUNING, (0, block, 256, 16, gather, loops)):
            setattr(copies, name, value)
        packing._BLOCK_BYTES = block
        buffer = to_physical(x, shape)
        back = from_physical(buffer, shape)
        moved = relayout(buffer, shape, other)
    finally:
        for name, value in saved.items():
            setattr(copies, name, value)
        packing._BLOCK_BYTES = saved_packing
    assert np.array_equal(buffer, reference._reference_to_physical(x, shape))
    assert same_bits(back, x)
    assert np.array_equal(moved, reference._reference_to_physical(x, other))


@PROPERTY
@given(cases())
def test_elements_sit_at_their_linear_index(case: tuple[xs.Shape, np.ndarray, xs.Shape]) -> None:
    indexing = pytest.importorskip("xlashapes.indexing")
    shape, x, _ = case
    assume(x.size > 0)
    buffer = to_physical(x, shape)
    index = np.stack(np.unravel_index(np.arange(x.size), x.shape), axis=-1) if x.ndim else np.zeros((1, 0), int)
    try:
        offsets = np.asarray(indexing.linear_index(shape, index)).reshape(-1)
    except xs.ShapeError:
        assume(False)
    bits = shape.element_size_in_bits()
    expected = canonical_bits(x)
    if bits >= 8:
        width = bits // 8
        held = buffer.reshape(-1, width)[offsets].reshape(-1)
        assert np.array_equal(held, expected)
    else:
        bit = offsets * bits
        held = (buffer[bit // 8] >> (bit % 8).astype(np.uint8)) & np.uint8((1 << bits) - 1)
        assert np.array_equal(held & np.uint8((1 << xs.element_type(x.dtype).bits) - 1), expected)


def test_reference_pack_round_trips() -> None:
    codes = np.random.default_rng(0).integers(0, 16, size=101, dtype=np.uint8)
    for bits in (1, 2, 4):
        field = codes & np.uint8((1 << bits) - 1)
        packed = reference._reference_pack(field, bits, -(-field.size * bits // 8))
        assert np.array_equal(reference._reference_unpack(packed, bits, field.size), field)


def test_bounded_dynamic_dims_are_laid_out_at_their_bound() -> None:
    shape = xs.parse_shape("f32[<=4,3]{0,1}")
    x = random_array("f32", (4, 3), 13)
    assert np.array_equal(to_physical(x, shape), to_physical(x, "f32[4,3]{0,1}"))
    with pytest.raises(xs.ShapeError, match="dims"):
        to_physical(np.zeros((2, 3), np.float32), shape)


@pytest.mark.parametrize(
    "text",
    [
        "f32[1000,1000]{1,0:T(8,128)}",
        "bf16[1000,1000]{0,1:T(8,128)(2,1)}",
        "s8[100,300]{1,0:T(8,128)(4,1)}",
        "pred[100,300]{1,0:T(32,128)(32,1)}",
        "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}",
        "bf16[64,64]{1,0:T(8,128)(2,1,1,1)}",
        "f32[3,5]{1,0:T(2,2)L(4)}",
    ],
)
def test_tpu_formats_take_the_one_transpose_path(text: str) -> None:
    shape = xs.parse_shape(text)
    assert plans._plan(shape.dimensions, shape.layout_or_default()) is not None
