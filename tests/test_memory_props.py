"""Properties of the peak-memory analysis on generated modules, and of the dump readers on generated text.

Generated scheduled modules (elementwise and shape-changing ops, copies, tuples, loop fusions, a while loop)
must give a valid buffer assignment: heap chunks live at the same time never overlap in memory, values
sharing an allocation never interfere, the heap holds at least the most bytes live at once, and the four
figures add up. Readers take any text without crashing: a result or a ParseError.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes.memory import memory_report
from xlashapes.memory._assign import BACKENDS, _Assigner, _MaxTree, assign
from xlashapes.memory._dataflow import analyze
from xlashapes.memory.dumps import read_buffer_assignment, read_live_range, read_memory_usage_report

SHAPES = ("f32[64]{0}", "f32[16,4]{1,0}", "f32[4,16]{1,0}", "s32[64]{0}", "f32[128]{0}")
UNARY = ("exponential", "negate", "tanh", "copy")
BINARY = ("add", "multiply", "maximum", "subtract")


@dataclass
class Program:
    text: str
    params: int


@st.composite
def programs(draw: st.DrawFn) -> Program:
    """A scheduled module: parameters, then random instructions over the values defined so far."""
    lines: list[str] = []
    fused: list[str] = []
    values: list[tuple[str, str]] = []  # (name, shape)
    params = draw(st.integers(1, 3))
    for i in range(params):
        shape = draw(st.sampled_from(SHAPES))
        lines.append(f"  p{i} = {shape} parameter({i})")
        values.append((f"p{i}", shape))
    count = draw(st.integers(1, 14))
    for k in range(count):
        name = f"v{k}"
        kind = draw(st.sampled_from(("unary", "binary", "reshape", "tuple", "fusion", "while", "dus")))
        operand, shape = draw(st.sampled_from(values))
        if kind == "unary" and shape.startswith("f32"):
            op = draw(st.sampled_from(UNARY))
            lines.append(f"  {name} = {shape} {op}({operand})")
        elif kind == "binary":
            partners = [v for v in values if v[1] == shape]
            other = draw(st.sampled_from(partners))[0]
            lines.append(f"  {name} = {shape} {draw(st.sampled_from(BINARY))}({operand}, {other})")
        elif kind == "reshape" and shape in ("f32[16,4]{1,0}", "f32[4,16]{1,0}"):
            target = "f32[4,16]{1,0}" if shape == "f32[16,4]{1,0}" else "f32[16,4]{1,0}"
            lines.append(f"  {name} = {target} transpose({operand}), dimensions={{1,0}}")
            shape = target
        elif kind == "tuple":
            other, other_shape = draw(st.sampled_from(values))
            lines.append(f"  {name}.t = ({shape}, {other_shape}) tuple({operand}, {other})")
            lines.append(f"  {name} = {shape} get-tuple-element({name}.t), index=0")
        elif kind == "fusion" and shape.startswith("f32"):
            fused.append(f"fused_{k} {{\n  q = {shape} parameter(0)\n  ROOT r = {shape} sine(q)\n}}\n")
            lines.append(f"  {name} = {shape} fusion({operand}), kind=kLoop, calls=fused_{k}")
        elif kind == "while":
            fused.append(f"cond_{k} {{\n  c = ({shape}) parameter(0)\n  ROOT t = pred[] constant(false)\n}}\n"
                         f"body_{k} {{\n  b = ({shape}) parameter(0)\n"
                         f"  e = {shape} get-tuple-element(b), index=0\n  n = {shape} negate(e)\n"
                         f"  ROOT o = ({shape}) tuple(n)\n}}\n")
            lines.append(f"  {name}.i = {shape} copy({operand})")
            lines.append(f"  {name}.t = ({shape}) tuple({name}.i)")
            lines.append(f"  {name}.w = ({shape}) while({name}.t), condition=cond_{k}, body=body_{k}")
            lines.append(f"  {name} = {shape} get-tuple-element({name}.w), index=0")
        elif kind == "dus" and shape == "f32[64]{0}":
            lines.append(f"  {name}.s = f32[4]{{0}} slice({operand}), slice={{[0:4]}}")
            lines.append(f"  {name}.c = f32[64]{{0}} copy({operand})")
            lines.append(f"  {name}.z = s32[] constant(3)")
            lines.append(f"  {name} = f32[64]{{0}} dynamic-update-slice({name}.c, {name}.s, {name}.z)")
        else:
            lines.append(f"  {name} = {shape} copy({operand})")
        values.append((name, shape))
    derived = [v for v in values if not v[0].startswith("p")]
    outputs = draw(st.lists(st.sampled_from(derived), min_size=1, max_size=3, unique=True))
    shapes = ", ".join(s for _, s in outputs)
    lines.append(f"  ROOT out = ({shapes}) tuple({', '.join(n for n, _ in outputs)})")
    text = "HloModule gen, is_scheduled=true\n\n" + "\n".join(fused) + "\nENTRY main {\n" + "\n".join(lines) + "\n}\n"
    return Program(text, params)


@settings(max_examples=examples(80), deadline=None)
@given(programs(), st.sampled_from(("cpu", "gpu")))
def test_assignment_is_valid(program: Program, backend: str) -> None:
    module = xs.parse_hlo_module(program.text)
    flow = analyze(module)
    assignment = assign(flow, backend)
    report = memory_report(module, backend=backend)
    params = [i for i in module.entry.instructions if i.opcode == "parameter"]
    assert report.arguments_bytes == sum(p.shape.byte_size() for p in params)
    assert report.peak_bytes == report.arguments_bytes + report.outputs_bytes + report.temp_bytes - report.alias_bytes
    assert report.peak_bytes >= report.arguments_bytes + report.outputs_bytes - report.alias_bytes
    assert report.temp_bytes >= max(report.temp_timeline, default=0)
    heap = assignment.heap_buffers
    alignment = BACKENDS[backend]
    assert report.temp_bytes <= sum(b.size for b in heap) + alignment * len(heap)
    for a in heap:  # chunks live at once never overlap in memory
        assert a.offset % alignment == 0 and a.offset + a.size <= report.temp_bytes
        for b in heap:
            if a is b or a.chunk == b.chunk or a.end < b.start or b.end < a.start:
                continue
            assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (a.values[0].instruction.name,
                                                                                   b.values[0].instruction.name)
    checker = _Assigner(flow, backend)
    for allocation in assignment.allocations:
        if allocation.kind == "temp":
            continue
        members = [v for buffer in allocation.buffers for v in buffer.values]
        for i, x in enumerate(members):
            for y in members[i + 1:]:
                if flow.find(x.id) != flow.find(y.id):
                    assert not checker.interferes(x, y), (x.instruction.name, y.instruction.name)
    for info in report.live_at_peak:
        assert info.kind in ("parameter", "output", "temp", "constant")
        if info.kind == "temp":
            assert info.start <= report.peak_time <= info.end


@settings(max_examples=examples(50), deadline=None)
@given(programs())
def test_unscheduled_is_an_upper_bound_of_scheduled(program: Program) -> None:
    scheduled = memory_report(xs.parse_hlo_module(program.text))
    unscheduled = memory_report(xs.parse_hlo_module(program.text.replace(", is_scheduled=true", "")))
    assert unscheduled.is_upper_bound and not scheduled.is_upper_bound
    assert unscheduled.peak_bytes >= scheduled.peak_bytes - 64 * len(scheduled.buffers)


def test_errors_are_shape_errors() -> None:
    undefined = "HloModule m, is_scheduled=true\nENTRY e {\n  ROOT a = f32[2]{0} negate(nothing)\n}\n"
    with pytest.raises(xs.XlaShapesError):
        memory_report(xs.parse_hlo_module(undefined))
    looping = ("HloModule m, is_scheduled=true\nbody {\n  b = (f32[2]{0}) parameter(0)\n"
               "  ROOT w = (f32[2]{0}) while(b), condition=body, body=body\n}\n"
               "ENTRY e {\n  p = (f32[2]{0}) parameter(0)\n"
               "  ROOT w = (f32[2]{0}) while(p), condition=body, body=body\n}\n")
    with pytest.raises(xs.ShapeError, match="nest"):
        memory_report(xs.parse_hlo_module(looping))
    missing = "HloModule m, is_scheduled=true\nENTRY e {\n  p = (f32[2]{0}) parameter(0)\n" \
              "  ROOT w = (f32[2]{0}) while(p), condition=nowhere, body=nowhere\n}\n"
    with pytest.raises(xs.ShapeError, match="not defined"):
        memory_report(xs.parse_hlo_module(missing))


@st.composite
def assignment_texts(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    """A buffer-assignment dump and the figures it must sum to."""
    lines = ["BufferAssignment:"]
    figures = {"argument_size_in_bytes": 0, "output_size_in_bytes": 0, "alias_size_in_bytes": 0,
               "temp_size_in_bytes": 0}
    for index in range(draw(st.integers(0, 8))):
        size = draw(st.integers(0, 2**40))
        kind = draw(st.sampled_from(("param", "donated", "out", "temp", "constant", "thread-local", "tuple-out")))
        attributes = {
            "param": f"parameter {index}, shape |f32[4]| at ShapeIndex {{}}",
            "donated": f"parameter {index}, shape |f32[4]| at ShapeIndex {{0}}, maybe-live-out",
            "out": "maybe-live-out", "temp": "preallocated-temp", "constant": "constant",
            "thread-local": "thread-local", "tuple-out": "output shape is |(f32[4], s32[])|, maybe-live-out"}[kind]
        lines.append(f"allocation {index}: size {size}, {attributes}:")
        lines.append(f" value: <{index} v.{index}{{}} @0> (size={size},offset=0): f32[4]{{0}}")
        if kind in ("param", "donated"):
            figures["argument_size_in_bytes"] += size
        if kind in ("donated", "out", "tuple-out"):
            figures["output_size_in_bytes"] += size
        if kind == "donated":
            figures["alias_size_in_bytes"] += size
        if kind == "temp":
            figures["temp_size_in_bytes"] += size
    lines.append("\nTotal bytes used: 0 (0B)\n\nUsed values:\n<1 v.1 @0>")
    return "\n".join(lines) + "\n", figures


@settings(max_examples=examples(200))
@given(assignment_texts())
def test_buffer_assignment_reader_sums_by_kind(case: tuple[str, dict[str, int]]) -> None:
    text, figures = case
    assert read_buffer_assignment(text).figures() == figures


@settings(max_examples=examples(300))
@given(st.text(alphabet=st.sampled_from("allocation value: <>{}(),=0123456789 \n-_.|@size offset Total bytes"),
               max_size=300))
def test_readers_take_any_text(text: str) -> None:
    for reader in (read_buffer_assignment, read_memory_usage_report, read_live_range):
        try:
            reader(text)
        except xs.ParseError:
            pass


@settings(max_examples=examples(200))
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=40), st.integers(-1, 45), st.integers(-6, 6))
def test_max_tree_finds_the_rightmost_position_above_a_bound(values: list[int], limit: int, bound: int) -> None:
    tree = _MaxTree(len(values))
    for position, value in enumerate(values):
        tree.set(position, value)
    want = max((i for i in range(min(limit, len(values) - 1) + 1) if values[i] > bound), default=-1)
    assert tree.rightmost(limit, bound) == want


CORPUS = sorted((Path(__file__).parent / "data" / "memory").glob("*.hlo"))


@settings(max_examples=examples(80), deadline=None)
@given(st.sampled_from(CORPUS), st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(("drop", "copy", "edit"))),
                                         min_size=1, max_size=3))
def test_mutated_real_modules_give_a_report_or_a_clean_error(path: Path, edits: list[tuple[int, str]]) -> None:
    lines = path.read_text().splitlines()
    for position, edit in edits:
        i = position % len(lines)
        if edit == "drop":
            del lines[i]
        elif edit == "copy":
            lines.insert(i, lines[(position * 7) % len(lines)])
        else:
            lines[i] = lines[i].replace("parameter(0)", "parameter(3)").replace("index=0", "index=5")
    try:
        module = xs.parse_hlo_module("\n".join(lines))
    except xs.XlaShapesError:
        return
    try:
        report = memory_report(module)
    except xs.XlaShapesError:
        return
    assert report.peak_bytes >= 0 and report.temp_bytes >= max(report.temp_timeline, default=0)


def test_unbounded_dimensions_are_listed_not_sized() -> None:
    text = ("HloModule m, is_scheduled=true\nENTRY e {\n  p = f32[?,3]{1,0} parameter(0)\n"
            "  q = f32[<=4,3]{1,0} negate(p)\n  ROOT r = f32[?,3]{1,0} negate(q)\n}\n")
    report = memory_report(xs.parse_hlo_module(text))
    assert report.unsized == ("p", "r")
    assert {b.instruction: b.physical_bytes for b in report.buffers} == {"p": 0, "q": 48, "r": 0}
