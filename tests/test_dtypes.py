"""Element types: kinds as an enum, and every spelling JAX and NumPy users pass."""

from __future__ import annotations

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import xlashapes as xs
from xlashapes.dtypes import ELEMENT_TYPES, Kind, element_type, hlo_name_for


def test_kinds_are_an_enum_that_is_also_a_string() -> None:
    assert element_type("pred").kind is Kind.PRED and element_type("s4").kind is Kind.SIGNED
    assert element_type("u8").kind is Kind.UNSIGNED and element_type("bf16").kind is Kind.FLOAT
    assert element_type("c64").kind is Kind.COMPLEX and element_type("token").kind is Kind.TOKEN
    assert Kind.PRED == "pred" and str(Kind.FLOAT) == "float" and f"{Kind.SIGNED}" == "signed"
    assert json.dumps({"kind": Kind.UNSIGNED}) == '{"kind": "unsigned"}'
    assert {t.kind for t in ELEMENT_TYPES.values()} == set(Kind)


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("bf16", "bf16"), ("bfloat16", "bf16"), ("float32", "f32"), ("float16", "f16"), ("float64", "f64"),
        ("int4", "s4"), ("uint4", "u4"), ("int8", "s8"), ("uint32", "u32"), ("int64", "s64"), ("bool", "pred"),
        ("bool_", "pred"), ("complex64", "c64"), ("float8_e4m3fn", "f8e4m3fn"), ("float4_e2m1fn", "f4e2m1fn"),
        (np.float32, "f32"), (np.dtype("int8"), "s8"), (np.dtype(np.complex128), "c128"), (bool, "pred"),
        (ml_dtypes.bfloat16, "bf16"), (np.dtype(ml_dtypes.int4), "s4"), (ml_dtypes.float8_e5m2, "f8e5m2"),
        (np.uint16, "u16"), (np.bool_, "pred"),
    ],
)
def test_every_numpy_spelling(spelling: object, name: str) -> None:
    assert element_type(spelling).name == name


def test_jax_dtypes_without_importing_jax_at_runtime() -> None:
    jnp = pytest.importorskip("jax.numpy")
    for spelling, name in ((jnp.bfloat16, "bf16"), (jnp.float32, "f32"), (jnp.int4, "s4"), (jnp.bool_, "pred"),
                           (jnp.zeros(2, jnp.int8).dtype, "s8")):
        assert element_type(spelling).name == name


def test_the_spellings_reach_the_constructors() -> None:
    assert str(xs.make_shape("bfloat16", [2])) == "bf16[2]{0}"
    assert str(xs.make_shape(np.float32, [2, 3])) == "f32[2,3]{1,0}"
    assert xs.Layout((0,), index_primitive_type=np.uint32).index_primitive_type is element_type("u32")


@pytest.mark.parametrize(
    ("spelling", "message"),
    [("F32", "did you mean f32"), ("Float32", "did you mean f32"), ("f8", "unknown element type 'f8'"),
     ("float", "unknown element type"), ("", "unknown"), (None, "None"), (3.5, "unknown"), ([1], "unknown"),
     (np.dtype("U3"), "has no XLA element type"), (object, "has no XLA element type")],
)
def test_unknown_spellings_are_shape_errors(spelling: object, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        element_type(spelling)


def test_hlo_name_for_numpy_words() -> None:
    assert hlo_name_for("float32") == "f32" and hlo_name_for("BF16") == "bf16" and hlo_name_for("int4") == "s4"
    assert hlo_name_for("tuple") is None and hlo_name_for("x") is None


def test_shapes_and_hlo_text_are_read_without_importing_ml_dtypes() -> None:
    # ml_dtypes 0.7.0 takes ~0.5 s to import: the package and the commands that never make a bf16/fp8/int4 array
    # leave it unimported; the first such dtype imports it.
    code = ("import sys, numpy as np, xlashapes as xs\n"
            "s = xs.parse_shape('bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}')\n"
            "m = xs.parse_hlo_module('HloModule m\\nENTRY e { p = bf16[4,8]{1,0} parameter(0)\\n"
            "ROOT n = bf16[4,8]{1,0} negate(p) }')\n"
            "print(s.byte_size(), xs.element_type(np.float32).name, xs.element_type('int8').numpy_dtype,\n"
            "      'ml_dtypes' in sys.modules)\n"
            "print(xs.element_type('bf16').numpy_dtype, 'ml_dtypes' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["335544320 f32 int8 False", "bfloat16 True"]


def test_numpy_dtype_names_are_the_dtypes_own() -> None:
    named = [t for t in ELEMENT_TYPES.values() if t.numpy_name is not None]
    assert len(named) == 32
    for etype in named:
        assert etype.numpy_dtype_name == str(etype.numpy_dtype), etype
    assert ELEMENT_TYPES["token"].numpy_dtype_name is None
