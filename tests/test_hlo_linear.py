"""Issue 15 for HLO text: 1 MB lines of every pathological kind parse or fail in linear time and bounded memory."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import pytest

import xlashapes as xs
from xlashapes.hlo import MAX_DEVICES, parse_hlo_module, parse_instruction

MB = 1 << 20


def module(line: str) -> str:
    return f"HloModule m\nENTRY e {{\n  a = f32[2] parameter(0)\n{line}\n}}\n"


def outcome(text: str, fast: bool = True) -> str:
    """Parse and run problems(): 'ok', or the error's reason."""
    try:
        parsed = parse_hlo_module(text, fast=fast)
        parsed.problems()
    except xs.ParseError as error:
        return error.reason
    return "ok"


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


OPERANDS = ", ".join(f"a{i}" for i in range(MB // 7))
SHAPED = ", ".join(f"f32[2] a{i}" for i in range(MB // 14))
LONG_LINES = {
    "operand list": f"  ROOT r = f32[2] add({OPERANDS})",
    "operand list, bad end": f"  ROOT r = f32[2] add({OPERANDS}$)",
    "operand list, open paren": f"  ROOT r = f32[2] add({OPERANDS}(",
    "operand list, unclosed": f"  ROOT r = f32[2] add({OPERANDS}",
    "shaped operands, bad end": f"  ROOT r = f32[2] add({SHAPED}, )",
    "nested parens": "  ROOT r = f32[2] add(" + "(a)" * (MB // 3) + ")",
    "braces in a value": "  ROOT r = f32[2] add(a), x={" + '""' * (MB // 2) + "{",
    "string": '  ROOT r = f32[2] add(a), metadata={op_name="' + "x" * MB + '"}',
    "string, unterminated": '  ROOT r = f32[2] add(a), metadata={op_name="' + "x" * MB,
    "escapes": '  ROOT r = f32[2] custom-call(a), custom_call_target="' + "\\\\" * (MB // 2) + '"',
    "attributes": "  ROOT r = f32[2] add(a)" + "".join(f", k{i}=v" for i in range(MB // 8)) + " $",
    "long name then ':' (under the fast path's 256 KB cut)": "  ROOT r = f32[2] add(" + "m_1a" * 50_000 + ":)",
    "iota groups": "  ROOT r = f32[2] all-reduce(a), replica_groups=[1,30000000]<=[30000000], to_apply=e",
}


def parsed(text: str, fast: bool) -> object:
    """The module, or the ParseError's reason."""
    try:
        return parse_hlo_module(text, fast=fast)
    except xs.ParseError as error:
        return error.reason


@pytest.mark.parametrize("name", list(LONG_LINES))
def test_long_lines_take_linear_time(name: str) -> None:
    text = module(LONG_LINES[name])
    results = []
    for fast in (True, False):
        started = time.perf_counter()
        results.append(parsed(text, fast))
        assert time.perf_counter() - started < 1.0, (name, fast)
    assert results[0] == results[1]
    if isinstance(results[0], xs.HloModule):  # problems() is linear too (one problem per bad operand here)
        assert seconds(results[0].problems) < 4.0, name


def test_a_long_string_takes_little_memory() -> None:
    text = module('  ROOT r = f32[2] custom-call(a), custom_call_target="' + "y" * (4 * MB) + '"')
    tracemalloc.start()
    try:
        parsed = parse_hlo_module(text, fast=False)
        assert len(parsed.entry.root.attributes.typed("custom_call_target")) == 4 * MB
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * MB, peak  # the text itself and a few copies, no per-character regex state


def test_huge_iota_replica_groups_are_refused_in_bounded_memory() -> None:
    text = ("HloModule m\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
            "ENTRY e {\n  a = f32[2] parameter(0)\n  ROOT r = f32[2] all-reduce(a), "
            "replica_groups=[1,30000000]<=[30000000], to_apply=add\n}\n")
    tracemalloc.start()
    try:
        problems = parse_hlo_module(text).problems()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * MB, peak
    assert len(problems) == 1 and f"more than {MAX_DEVICES}" in problems[0].message and problems[0].line == 9


@pytest.mark.parametrize("attribute", [
    "replica_groups=[2,2305843009213693952]<=[4611686018427387904]",
    "replica_groups=[4611686018427387904,2]<=[2,4611686018427387904]T(1,0)",
    "replica_groups=mesh['x'=4611686018427387904,'y'=2] {'y'}",
    "sharding={devices=[4611686018427387904,2]<=[9223372036854775807]}",
    "sharding={devices=[2305843009213693952,2]0,1,2,3}",
    "replica_groups=[2,-2]<=[4]",
])
def test_device_counts_near_int64_are_parse_errors(attribute: str) -> None:
    ins = parse_instruction(f"x = f32[] all-reduce(y), {attribute}")
    key = attribute.split("=", 1)[0]
    with pytest.raises(xs.ParseError) as error:
        ins.attributes.typed(key)
    assert error.value.position is not None and error.value.position > 0


def test_device_lists_within_the_limit_read() -> None:
    ins = parse_instruction("x = f32[] all-reduce(y), replica_groups=[256,4]<=[1024]")
    groups = ins.attributes.typed("replica_groups")
    assert len(groups) == 256 and groups[1] == (4, 5, 6, 7)
    ins = parse_instruction("x = f32[] foo(), sharding={devices=[2,0]<=[0]}")
    assert ins.sharding is not None and ins.sharding.devices == ()



def test_shapeless_calls_read_each_callee_signature_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """3000 shapeless calls of 3 large computations build 3 signatures, not one per call (linear time)."""
    import xlashapes.hlo.parser as parser_module

    built: list[object] = []
    real = parser_module.Signature

    def counting(*args: object) -> object:
        built.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(parser_module, "Signature", counting)
    body = "".join(f"  n{i} = f32[2] negate(x)\n" for i in range(3000))
    callees = "".join(f"c{k} {{\n  x = f32[2] parameter(0)\n{body}  ROOT r = f32[2] negate(x)\n}}\n" for k in range(3))
    calls = "".join(f"  k{i} = call(a), to_apply=c{i % 3}\n" for i in range(3000))
    text = f"HloModule m\n{callees}ENTRY e {{\n  a = f32[2] parameter(0)\n{calls}  ROOT z = f32[2] negate(a)\n}}\n"
    module_ = parse_hlo_module(text)
    assert len(module_.entry.instructions) == 3002 and str(module_.entry.instructions[1].shape) == "f32[2]{0}"
    assert len(built) == 3


def test_deeply_nested_inline_operands_are_parse_errors() -> None:
    deep = "add(" * 5000 + "x" + ")" * 5000
    with pytest.raises(xs.ParseError, match="nested too deeply"):
        parse_instruction("%r = f32[] " + deep)
    with pytest.raises(xs.ParseError, match="nested too deeply"):
        parse_hlo_module("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] " + deep + "\n}\n")
