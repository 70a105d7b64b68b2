"""Element-wise ops (``xlashapes.ops``): known answers, and differential tests against JAX and XLA:CPU.

Differential tests: ``binary_op`` against JAX (``lax.broadcast_in_dim`` + ``lax.<op>``, XLA:CPU underneath), and the
HLO text of ``lower_binary`` compiled and run on XLA's CPU backend (a worker process, like the parser oracle, so an
XLA abort cannot take pytest down). Compiling is what costs, so cases are batched: the Hypothesis tests draw their
examples when this module is imported, and every XLA:CPU case (drawn or listed) is compiled in merged modules
(``oracle_cpu.CpuRunner.run_many``), every JAX case in one jitted function, by the worker process in the
background while pytest runs other tests; the tests then compare ``xlashapes.ops`` with those answers.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xla_oracle
import xlashapes as xs
from oracle_cpu import Background, cpu_runner
from profiles import examples
from test_broadcast import LOWERING_CASES, broadcast_cases
from xlashapes import broadcast as xb
from xlashapes import ops

# ----------------------------------------------------------------------------------------------------
# Element-wise semantics: known answers (each one observed on XLA's CPU runtime, jaxlib 0.10.2)
# ----------------------------------------------------------------------------------------------------

I32_MIN = -(2**31)


@pytest.mark.parametrize(
    ("op", "dtype", "lhs", "rhs", "expected"),
    [
        ("divide", np.int32, [7, -7, 7, -7, 5, I32_MIN, 0], [2, 2, -2, -2, 0, -1, 0], [3, -3, -3, 3, -1, I32_MIN, -1]),
        ("remainder", np.int32, [7, -7, 7, -7, 5, I32_MIN, -5], [2, 2, -2, -2, 0, -1, 0], [1, -1, 1, -1, 5, 0, -5]),
        ("divide", np.uint32, [7, 5, 0], [2, 0, 0], [3, 2**32 - 1, 2**32 - 1]),
        ("remainder", np.uint32, [7, 5, 0], [2, 0, 0], [1, 5, 0]),
        ("power", np.int32, [2, -1, -1, 1, 2, 0, 0, -2, -3], [10, -1, -2, -5, -1, -1, 0, 3, -1],
         [1024, -1, 1, 1, 0, 0, 1, -8, 0]),
        ("power", np.uint8, [2, 3, 0, 255], [9, 5, 0, 2], [0, 243, 1, 1]),
        ("shift-left", np.int32, [1, 1, 1, -1, 1], [3, 31, 32, -1, 100], [8, I32_MIN, 0, 0, 0]),
        ("shift-right-arithmetic", np.int32, [-8, -8, 8, -8, 8], [1, 32, 32, -1, 31], [-4, -1, 0, -1, 0]),
        ("shift-right-logical", np.int32, [-8, -8, 8, -8], [1, 32, 28, -1], [2147483644, 0, 0, 0]),
        ("shift-right-arithmetic", np.uint8, [128, 200, 7], [1, 9, 1], [192, 255, 3]),
        ("shift-right-logical", np.int8, [-128, -1], [1, 7], [64, 1]),
        ("shift-left", ml_dtypes.int4, [1, 3, -1], [3, 2, 4], [-8, -4, 0]),
        ("add", np.int8, [127, -128], [1, -1], [-128, 127]),
        ("multiply", ml_dtypes.uint4, [15, 7], [15, 3], [1, 5]),
    ],
)
def test_integer_semantics_known_answers(op: str, dtype: Any, lhs: list[int], rhs: list[int],
                                         expected: list[int]) -> None:
    result = ops.binary_op(op, np.array(lhs).astype(dtype), np.array(rhs).astype(dtype))
    assert result.dtype == np.dtype(dtype)
    assert result.astype(np.int64).tolist() == np.array(expected).astype(dtype).astype(np.int64).tolist()


def test_pred_semantics() -> None:
    p = np.array([0, 0, 1, 1], bool)
    q = np.array([0, 1, 0, 1], bool)
    for op, expected in [("add", [0, 1, 1, 1]), ("maximum", [0, 1, 1, 1]), ("or", [0, 1, 1, 1]),
                         ("multiply", [0, 0, 0, 1]), ("minimum", [0, 0, 0, 1]), ("and", [0, 0, 0, 1]),
                         ("xor", [0, 1, 1, 0])]:
        result = ops.binary_op(op, p, q)
        assert result.dtype == np.bool_ and result.tolist() == [bool(v) for v in expected], op
    assert ops.compare(p, q, "LT").tolist() == [False, True, False, False]


def test_float_maximum_minimum_propagate_nan_and_order_signed_zeros() -> None:
    nan = np.nan
    a = np.array([nan, 1, nan, -0.0, 0.0, 1], np.float32)
    b = np.array([1, nan, nan, 0.0, -0.0, 2], np.float32)
    high, low = ops.maximum(a, b), ops.minimum(a, b)
    assert np.isnan(high[:3]).all() and np.isnan(low[:3]).all()
    assert high[3:].tolist() == [0.0, 0.0, 2.0] and not np.signbit(high[3:5]).any()
    assert low[3:].tolist() == [0.0, 0.0, 1.0] and np.signbit(low[3:5]).all()


def test_compare_gives_pred_with_ieee_semantics() -> None:
    a = np.array([np.nan, 1, np.nan, -0.0, 0.0, 1], np.float32)
    b = np.array([1, np.nan, np.nan, 0.0, -0.0, 2], np.float32)
    table = {"EQ": [0, 0, 0, 1, 1, 0], "NE": [1, 1, 1, 0, 0, 1], "LT": [0, 0, 0, 0, 0, 1],
             "LE": [0, 0, 0, 1, 1, 1], "GT": [0, 0, 0, 0, 0, 0], "GE": [0, 0, 0, 1, 1, 0]}
    for direction, expected in table.items():
        result = ops.compare(a, b, direction)
        assert result.dtype == np.bool_ and result.tolist() == [bool(v) for v in expected]


def test_float_remainder_is_fmod() -> None:
    a = np.array([5.5, -5.5, 5.5, 1, np.inf], np.float32)
    b = np.array([2, 2, -2, 0, 2], np.float32)
    result = ops.remainder(a, b)
    assert result[:3].tolist() == [1.5, -1.5, 1.5] and np.isnan(result[3:]).all()


def test_narrow_floats_round_once_from_f32() -> None:
    a = np.array([1, 256, 0.1], ml_dtypes.bfloat16)
    b = np.array([2**-9, 1, 0.2], ml_dtypes.bfloat16)
    expected = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    result = ops.add(a, b)
    assert result.dtype == ml_dtypes.bfloat16
    assert result.tobytes() == expected.tobytes()


def test_nan_becomes_negative_zero_in_types_without_nan() -> None:
    """XLA:CPU converts NaN to -0.0 in f4e2m1fn (which has no NaN); ml_dtypes alone would keep NaN's sign."""
    zero = np.zeros(2, ml_dtypes.float4_e2m1fn)
    result = ops.divide(zero, zero)
    assert result.view(np.uint8).tolist() == [8, 8]


def test_complex_power_special_cases() -> None:
    x = np.array([0j, 1 + 1j, 1, 2], np.complex64)
    y = np.array([0j, 0j, 5 + 3j, 0.5], np.complex64)
    np.testing.assert_allclose(ops.power(x, y), [1, 1, 1, np.sqrt(2)], rtol=1e-6)


# ----------------------------------------------------------------------------------------------------
# Differential tests: values
# ----------------------------------------------------------------------------------------------------

INT_TYPES = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "s4", "u4", "s2", "u2"]
FLOAT_TYPES = ["f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2"]
COMPLEX_TYPES = ["c64", "c128"]
ALL_OPS = list(ops.BINARY_OPS)


def _random_values(rng: np.random.Generator, etype: xs.ElementType, dims: tuple[int, ...], op: str,
                   side: str) -> np.ndarray[Any, Any]:
    dtype = etype.numpy_dtype
    if etype.kind == "pred":
        return rng.integers(0, 2, dims).astype(bool)
    if etype.is_integral:
        signed = etype.kind == "signed"
        low, high = (-(2 ** (etype.bits - 1)), 2 ** (etype.bits - 1) - 1) if signed else (0, 2**etype.bits - 1)
        if side == "rhs" and op in ("shift-left", "shift-right-arithmetic", "shift-right-logical"):
            low, high = max(low, -2), min(high, etype.bits + 2)
        if op == "power":
            # the exponent range where XLA:CPU's integer power is exact (it reads only 6 exponent bits)
            low, high = (max(low, -3), min(high, 63)) if side == "rhs" else (max(low, -4), min(high, 4))
        values = rng.integers(low, high, dims, endpoint=True, dtype=np.int64 if signed else np.uint64)
        special = np.array([0, 1, high, low] + ([-1] if signed else []), dtype=values.dtype)
        mask = rng.random(dims) < 0.2
        values = np.where(mask, rng.choice(special, dims), values)
        return values.astype(dtype)
    if etype.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
    reals = rng.standard_normal(dims) * (2.0 if op == "power" else 8.0)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    reals = np.where(rng.random(dims) < 0.1, rng.choice(special, dims), reals)
    return reals.astype(dtype)


def _same_values(ours: np.ndarray[Any, Any], theirs: np.ndarray[Any, Any], op: str, etype: xs.ElementType,
                 *, fused: bool = False) -> None:
    """Bit-exact, except a few ulps for transcendental ops, complex multiply/divide and (``fused``) divide.

    ``fused``: XLA:CPU turns ``x / broadcast(y)`` into ``x * broadcast(1 / y)``, which can be 1 ulp off.
    """
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape
    if ours.dtype == np.bool_ or etype.is_integral:
        np.testing.assert_array_equal(ours, theirs)
        return
    approximate = op in ("power", "atan2") or (etype.is_complex and op in ("multiply", "divide"))
    approximate = approximate or (fused and op == "divide")
    eps = float(ml_dtypes.finfo(ours.real.dtype).eps)
    if approximate and etype.is_complex:  # (a complex result is some ulps of its modulus off, not of each part: the
        # real part of a drawn (-0.64-0.08j)**y = -4.53-34.77j was 3e-14 off: 30 eps of the part, 3.9 of the modulus)
        for part in (np.real, np.imag):
            assert (np.isnan(part(ours)) == np.isnan(part(theirs))).all(), (ours, theirs)
        a, b = ours.astype(np.complex128), theirs.astype(np.complex128)
        np.testing.assert_allclose(a, b, rtol=16 * eps, atol=16 * eps, equal_nan=True)
        return
    if etype.is_complex:
        parts = [(ours.real, theirs.real), (ours.imag, theirs.imag)]
    else:
        parts = [(ours.astype(np.float64), theirs.astype(np.float64))]
    for a, b in parts:
        a, b = a.astype(np.float64), b.astype(np.float64)
        if approximate:
            np.testing.assert_allclose(a, b, rtol=16 * eps, atol=16 * eps, equal_nan=True)
            continue
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        assert same.all(), (a[~same], b[~same])
        zeros = (a == 0) & (b == 0)
        assert (np.signbit(a[zeros]) == np.signbit(b[zeros])).all()


@st.composite
def value_cases(draw: st.DrawFn, types: list[str], op_names: list[str]) -> tuple[Any, ...]:
    op = draw(st.sampled_from(op_names))
    etype = xs.element_type(draw(st.sampled_from(types)))
    direction = draw(st.sampled_from(ops.COMPARISON_DIRECTIONS)) if op == "compare" else None
    try:
        xb.binary_op_shape(op, f"{etype.name}[]", f"{etype.name}[]", direction=direction)
    except xs.ShapeError:
        etype = xs.element_type("s32" if op in ("and", "or", "xor") or op.startswith("shift") else "f32")
    lhs, rhs, dims, out = draw(broadcast_cases(max_rank=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = _random_values(rng, etype, lhs, op, "lhs")
    y = _random_values(rng, etype, rhs, op, "rhs")
    return op, direction, etype, x, y, dims, out


def _drawn(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples of ``strategy`` drawn by Hypothesis, to be checked together in one batch."""
    drawn: list[Any] = []

    @settings(max_examples=examples(count), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case: Any) -> None:
        drawn.append(case)

    collect()
    return drawn


def _shape_text(array: np.ndarray[Any, Any]) -> str:
    return f"{xs.element_type(array.dtype).name}[{','.join(map(str, array.shape))}]"


JAX_OPS = [op for op in ALL_OPS if op != "power"] + ["power"]
JAX_TYPES = ["pred", *INT_TYPES[:-2], *FLOAT_TYPES, *COMPLEX_TYPES]
CPU_TYPES = ["pred", *INT_TYPES, *FLOAT_TYPES, *COMPLEX_TYPES]


def _jax_compatible(case: tuple[Any, ...]) -> tuple[Any, ...]:
    op, direction, etype, x, y, dims, out = case
    if op == "power" and etype.is_integral:
        etype, x, y = xs.element_type("f32"), x.astype(np.float32), y.astype(np.float32)  # lax.pow is float only
    if etype.kind == "pred" and op in ("add", "multiply", "maximum", "minimum"):
        op = {"add": "or", "multiply": "and", "maximum": "or", "minimum": "and"}[op]  # JAX rejects bool arithmetic
    return op, direction, etype, x, y, dims, out


EDGE_CASES = [
    ("divide", np.int64, [7, -7, -(2**63), 5, -9], [2, 2, -1, 0, 0]),
    ("remainder", np.int64, [7, -7, -(2**63), 5, -9], [2, -2, -1, 0, 0]),
    ("divide", np.uint64, [2**64 - 1, 5, 0], [2, 0, 0]),
    ("remainder", ml_dtypes.int4, [-8, -8, 7, -3], [-1, 0, 2, 2]),
    ("divide", ml_dtypes.int4, [-8, -8, 7, -3], [-1, 0, 2, 2]),
    ("shift-left", np.int64, [1, 1, -1, 3], [63, 64, -1, 2]),
    ("shift-right-arithmetic", np.int64, [-(2**63), -5, 5, -1], [63, 64, 65, -7]),
    ("shift-right-logical", np.uint64, [2**64 - 1, 8, 8], [63, 64, 3]),
    ("shift-right-arithmetic", ml_dtypes.uint4, [8, 15, 7, 9], [1, 4, 1, 15]),
    ("power", np.int64, [3, -3, 2, -1, -1, 1, 5], [40, 3, 63, -5, -6, -100, -1]),
    ("power", np.int8, [3, -3, 2, -1, -1, 1, -128], [5, 5, 7, -5, -6, -100, 1]),
    ("power", np.uint16, [3, 65535, 2, 0], [20, 3, 15, 0]),
    ("maximum", np.float64, [np.nan, 1, -0.0, 0.0, -np.inf], [1, np.nan, 0.0, -0.0, 3]),
    ("minimum", np.float16, [np.nan, 1, -0.0, 0.0, np.inf], [1, np.nan, 0.0, -0.0, 3]),
    ("maximum", ml_dtypes.bfloat16, [-0.0, 0.0, np.nan], [0.0, -0.0, 2]),
    ("divide", np.float32, [1, -1, 0, np.inf], [0, 0, 0, np.inf]),
    ("remainder", np.float64, [5.5, -5.5, 1, np.inf, 3], [2, 2, 0, 2, np.inf]),
    ("power", np.float32, [0, 0, -8, 2, 1, np.nan], [-1, 0, 1 / 3, 0.5, np.nan, 0]),
    ("add", ml_dtypes.float8_e4m3fn, [448, 240, -448], [448, 16, -32]),
    ("multiply", np.uint32, [2**32 - 1, 65536], [2**32 - 1, 65536]),
    ("subtract", ml_dtypes.uint2, [0, 1, 3], [1, 3, 0]),
]

CPU_LOWERING_CASES = [c for c in LOWERING_CASES if "<=" not in c[1] and "<=" not in c[2]]


def _edge_case(op: str, dtype: Any, lhs: list[Any], rhs: list[Any]) -> tuple[Any, ...]:
    x, y = np.array(lhs, dtype=dtype), np.array(rhs, dtype=dtype)
    return xb.lower_binary(op, _shape_text(x), _shape_text(y)), x, y, (), None


def _lowering_case(op: str, lhs: str, rhs: str, dims: Any, direction: Any) -> tuple[Any, ...]:
    rng = np.random.default_rng(5)
    left, right = xs.parse_shape(lhs), xs.parse_shape(rhs)
    x = _random_values(rng, left.element_type, left.dimensions, op, "lhs")
    y = _random_values(rng, right.element_type, right.dimensions, op, "rhs")
    return xb.lower_binary(op, lhs, rhs, dims, direction), x, y, dims, direction


# ----- every op with every element type XLA:CPU can compute, on the composition example -----

UNRUNNABLE = {"s1", "u1", "f6e2m3fn", "f6e3m2fn"}  # XLA:CPU / StableHLO / JAX reject these element types


def _sweep() -> list[tuple[str, str, str | None]]:
    cases = []
    for op in ops.BINARY_OPS:
        for index, etype in enumerate(t for t in xs.ELEMENT_TYPES.values() if t.numpy_name is not None):
            directions = ("EQ", "NE") if etype.is_complex else ops.COMPARISON_DIRECTIONS
            direction = directions[index % len(directions)] if op == "compare" else None
            try:
                xb.binary_op_shape(op, f"{etype.name}[]", f"{etype.name}[]", direction=direction)
            except xs.ShapeError:
                continue
            if etype.name not in UNRUNNABLE:
                cases.append((op, etype.name, direction))
    return cases


SWEEP = _sweep()


def _sweep_operands(op: str, type_name: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    etype = xs.element_type(type_name)
    rng = np.random.default_rng(sum(map(ord, op + type_name)))
    return _random_values(rng, etype, (1, 2), op, "lhs"), _random_values(rng, etype, (4, 3, 1), op, "rhs")


def _sweep_case(op: str, type_name: str, direction: Any) -> tuple[Any, ...]:
    x, y = _sweep_operands(op, type_name)
    return xb.lower_binary(op, _shape_text(x), _shape_text(y), (1, 2), direction), x, y, (1, 2), direction


POWER_BITS_CASE = (xb.lower_binary("power", "s32[3]", "s32[3]"), np.array([3, 3, 2], np.int32),
                   np.array([64, 65, 64], np.int32), (), None)


JAX_SWEEP_TYPES = {"pred", "s8", "u32", "s64", "s4", "u2", "bf16", "f16", "f64", "f8e4m3fn", "f4e2m1fn", "c64"}
JAX_SWEEP = [c for c in SWEEP if c[1] in JAX_SWEEP_TYPES
             and not (c[1] == "pred" and c[0] in ("add", "multiply"))
             and not (c[0] == "power" and xs.element_type(c[1]).is_integral)]



# ----- the oracles' answers: every case above in one background batch, started when this module is imported -----

LAX_DRAWN = [_jax_compatible(case) for case in _drawn(value_cases(JAX_TYPES, JAX_OPS), 60)]
CPU_DRAWN = _drawn(value_cases(CPU_TYPES, ALL_OPS), 60)


def _cpu_batch() -> dict[tuple[str, int], tuple[Any, ...]]:
    """Every XLA:CPU case: (lowered module, x, y, broadcast_dimensions, direction) by (group, index)."""
    cases: dict[tuple[str, int], tuple[Any, ...]] = {}
    for i, (op, direction, _, x, y, dims, _) in enumerate(CPU_DRAWN):
        cases["drawn", i] = xb.lower_binary(op, _shape_text(x), _shape_text(y), dims, direction), x, y, dims, direction
    for i, edge in enumerate(EDGE_CASES):
        cases["edge", i] = _edge_case(*edge)
    for i, lowering in enumerate(CPU_LOWERING_CASES):
        cases["lowering", i] = _lowering_case(*lowering)
    for i, sweep in enumerate(SWEEP):
        cases["sweep", i] = _sweep_case(*sweep)
    cases["power bits", 0] = POWER_BITS_CASE
    return cases


def _lax_batch() -> list[tuple[Any, ...]]:
    """Every JAX case (op, direction, x, y, dims, out): the drawn ones, then JAX_SWEEP."""
    cases = [(op, direction, x, y, dims, out) for op, direction, _, x, y, dims, out in LAX_DRAWN]
    for op, type_name, direction in JAX_SWEEP:
        x, y = _sweep_operands(op, type_name)
        cases.append((op, direction, x, y, (1, 2), (4, 3, 2)))
    return cases


CPU_BATCH = _cpu_batch()
LAX_BATCH = _lax_batch()
Answers = tuple[dict[tuple[str, int], "np.ndarray[Any, Any] | str"], list[np.ndarray[Any, Any]]]


def _answers() -> Answers:
    runner = cpu_runner()
    cpu = runner.run_many([(module, [x, y]) for module, x, y, _, _ in CPU_BATCH.values()])
    return dict(zip(CPU_BATCH, cpu)), runner.lax_many(LAX_BATCH)


PENDING: Background[Answers] | None = Background(_answers) if xla_oracle.available() else None


def cpu_answer(answers: Answers, key: tuple[str, int]) -> np.ndarray[Any, Any]:
    """XLA:CPU's result for case ``key``; the test fails with XLA's message when XLA could not run it."""
    answer = answers[0][key]
    assert not isinstance(answer, str), answer
    return answer


@pytest.fixture(scope="module")
def answers() -> Answers:
    """XLA:CPU's and JAX's answers to every case (skipped without jax)."""
    if PENDING is None:
        pytest.skip("jax/jaxlib not installed (pip install -e .[test,jax])")
    return PENDING.result()


def test_binary_op_matches_jax_lax(answers: Answers) -> None:
    theirs = answers[1][: len(LAX_DRAWN)]
    assert len(theirs) == len(LAX_DRAWN) >= 1
    for (op, direction, etype, x, y, dims, out), expected in zip(LAX_DRAWN, theirs):
        ours = ops.binary_op(op, x, y, dims, direction)
        assert ours.shape == out
        _same_values(ours, expected, op, etype)


def test_lowered_hlo_runs_on_xla_cpu_like_binary_op(answers: Answers) -> None:
    assert len(CPU_DRAWN) >= 1
    for i, (op, direction, etype, x, y, dims, out) in enumerate(CPU_DRAWN):
        ours = ops.binary_op(op, x, y, dims, direction)
        assert ours.shape == out, CPU_BATCH["drawn", i][0]
        _same_values(ours, cpu_answer(answers, ("drawn", i)), op, etype, fused=True)


@pytest.mark.parametrize("index", range(len(EDGE_CASES)), ids=[f"{c[0]}-{np.dtype(c[1]).name}" for c in EDGE_CASES])
def test_edge_cases_match_xla_cpu(answers: Answers, index: int) -> None:
    op, dtype = EDGE_CASES[index][:2]
    _, x, y, _, _ = CPU_BATCH["edge", index]
    _same_values(ops.binary_op(op, x, y), cpu_answer(answers, ("edge", index)), op, xs.element_type(np.dtype(dtype)))


@pytest.mark.parametrize("index", range(len(CPU_LOWERING_CASES)),
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CPU_LOWERING_CASES])
def test_lowering_cases_run_on_xla_cpu(answers: Answers, index: int) -> None:
    op, lhs = CPU_LOWERING_CASES[index][:2]
    _, x, y, dims, direction = CPU_BATCH["lowering", index]
    ours = ops.binary_op(op, x, y, dims, direction)
    _same_values(ours, cpu_answer(answers, ("lowering", index)), op, xs.parse_shape(lhs).element_type, fused=True)


@pytest.mark.parametrize("index", range(len(SWEEP)), ids=["-".join(map(str, c)) for c in SWEEP])
def test_every_op_and_type_matches_xla_cpu(answers: Answers, index: int) -> None:
    op, type_name, direction = SWEEP[index]
    _, x, y, _, _ = CPU_BATCH["sweep", index]
    ours = ops.binary_op(op, x, y, (1, 2), direction)
    _same_values(ours, cpu_answer(answers, ("sweep", index)), op, xs.element_type(type_name), fused=True)


@pytest.mark.parametrize("index", range(len(JAX_SWEEP)), ids=["-".join(map(str, c)) for c in JAX_SWEEP])
def test_every_op_and_type_matches_jax(answers: Answers, index: int) -> None:
    """One type of each kind (JAX rejects add/multiply on bool and integer lax.pow); the rest goes through lax."""
    op, type_name, direction = JAX_SWEEP[index]
    x, y = _sweep_operands(op, type_name)
    ours = ops.binary_op(op, x, y, (1, 2), direction)
    _same_values(ours, answers[1][len(LAX_DRAWN) + index], op, xs.element_type(type_name))


def test_xla_cpu_integer_power_reads_only_six_exponent_bits(answers: Answers) -> None:
    """Pins the documented divergence: binary_op is exact, XLA:CPU computes 3**64 as 3**0 and 3**65 as 3**1."""
    _, x, y, _, _ = CPU_BATCH["power bits", 0]
    assert cpu_answer(answers, ("power bits", 0)).tolist() == [1, 3, 1]
    exact = [pow(3, 64, 2**32), pow(3, 65, 2**32), 0]
    assert ops.power(x, y).astype(np.int64).tolist() == [v - 2**32 if v >= 2**31 else v for v in exact]


def test_a_case_xla_cannot_run_fails_alone(answers: Answers) -> None:
    """The batch runner's own promise: a case XLA:CPU rejects gets XLA's message, its batch mates their results."""
    x = np.array([1, 2], np.float32)
    odd = np.zeros(2, ml_dtypes.float6_e2m3fn)  # XLA:CPU cannot compile f6 arithmetic (UNRUNNABLE)
    results = cpu_runner().run_many([(xb.lower_binary("add", "f32[2]", "f32[2]"), [x, x]),
                                     (xb.lower_binary("add", "f6e2m3fn[2]", "f6e2m3fn[2]"), [odd, odd])])
    first, second = results
    assert isinstance(first, np.ndarray) and first.tolist() == [2.0, 4.0]
    assert isinstance(second, str) and "f6e2m3fn" in second
