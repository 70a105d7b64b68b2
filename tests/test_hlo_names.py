"""Instruction and computation names as XLA's module gives them (its NameUniquer), checked against XLA's parser."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlashapes as xs
from hlo_helpers import assert_reads_like_xla, xla_verdict
from profiles import examples
from xlashapes.hlo import parse_hlo_module
from xlashapes.hlo._names import NameUniquer, sanitized_name

REDUCER = "{name} {{\n  {x} = f32[] parameter(0)\n  {y} = f32[] parameter(1)\n  ROOT {s} = f32[] add({x}, {y})\n}}\n"

FORMS = {
    "a name repeated in the entry": (
        "HloModule m\n" + REDUCER.format(name="add", x="x", y="y", s="s")
        + "ENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[] constant(0)\n"
          "  s = f32[] reduce(x, y), dimensions={0}, to_apply=add\n  ROOT s.1 = f32[] negate(s)\n}\n"),
    "names repeated in three computations": (
        "HloModule m\n" + REDUCER.format(name="add.1", x="x", y="y", s="s")
        + REDUCER.format(name="add", x="x.1", y="y", s="s.2")
        + "ENTRY e {\n  x = f32[4] parameter(0)\n  c = f32[] constant(0)\n"
          "  s = f32[] reduce(x, c), dimensions={0}, to_apply=add\n"
          "  ROOT s.1 = f32[] reduce(x, c), dimensions={0}, to_apply=add.1\n}\n"),
    "x.0 beside x": (
        "HloModule m\n" + REDUCER.format(name="add", x="x", y="y", s="s")
        + "ENTRY e {\n  x.0 = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
          "  ROOT r = f32[] reduce(x.0, z), dimensions={0}, to_apply=add\n}\n"),
    "x.0 alone stays": "ENTRY e {\n  x.0 = f32[4] parameter(0)\n  ROOT r = f32[4] negate(x.0)\n}\n",
    "leading zeros": "ENTRY e {\n  x.01 = f32[4] parameter(0)\n  x.00 = f32[4] negate(x.01)\n"
                     "  ROOT x.-0 = f32[4] negate(x.00)\n}\n",
    "negative suffix stays": "ENTRY e {\n  x.-1 = f32[4] parameter(0)\n  ROOT r = f32[4] negate(x.-1)\n}\n",
    "inline computation first": (
        "HloModule m\n" + REDUCER.format(name="add", x="x", y="y", s="s")
        + "ENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[] constant(0)\n"
          "  x.1 = f32[] reduce(x, y), dimensions={0}, to_apply={ a = f32[] parameter(0)\n"
          "    y = f32[] parameter(1)\n    ROOT s = f32[] add(a, y) }\n  ROOT x.2 = f32[] negate(x.1)\n}\n"),
    "computation named __c": (
        "HloModule m\n__c {\n  a = f32[] parameter(0)\n  ROOT r = f32[] negate(a)\n}\n"
        "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=__c\n}\n"),
    "computation and instruction share a name": (
        "HloModule m\nc {\n  a = f32[] parameter(0)\n  ROOT c = f32[] negate(a)\n}\n"
        "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=c\n}\n"),
    "control predecessors follow the rename": (
        "HloModule m\n" + REDUCER.format(name="add", x="x", y="y", s="s")
        + "ENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[] constant(0)\n"
          "  n = f32[4] negate(x), control-predecessors={y}\n"
          "  ROOT s = f32[] reduce(n, y), dimensions={0}, to_apply=add, control-predecessors={x}\n}\n"),
    "computation c.0 beside c": (
        "HloModule m\nc {\n  a = f32[] parameter(0)\n  ROOT r = f32[] negate(a)\n}\n"
        "c.0 {\n  b = f32[] parameter(0)\n  ROOT q = f32[] negate(b)\n}\n"
        "ENTRY e {\n  p = f32[] parameter(0)\n  d = f32[] call(p), to_apply=c.0\n"
        "  ROOT k = f32[] call(d), to_apply=c\n}\n"),
    "region_1.0 alone stays": (
        "HloModule m\nregion_1.0 {\n  a.0.c1 = f32[] parameter(0)\n  ROOT r.0 = f32[] negate(a.0.c1)\n}\n"
        "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=region_1.0\n}\n"),
    "header-less module named after its renamed entry": "ENTRY __e {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "__xla_ prefix stays": "ENTRY e {\n  %__xla_p = f32[] parameter(0)\n  ROOT r = f32[] negate(%__xla_p)\n}\n",
}


@pytest.mark.parametrize("name", list(FORMS))
def test_names_read_like_xla(name: str, xla: Any) -> None:
    module = assert_reads_like_xla(xla, FORMS[name])
    theirs = xla_verdict(xla, FORMS[name])["module"]
    for ours, their in zip(sorted(module.computations, key=lambda c: c.name),
                           sorted(theirs.computations, key=lambda c: c.name)):
        assert [i.control_predecessors for i in ours.instructions] == [
            i.control_predecessors for i in their.instructions if i.name in {j.name for j in ours.instructions}]


def test_repeated_names_are_renamed_as_xla_renames_them() -> None:
    module = parse_hlo_module(FORMS["names repeated in three computations"])
    assert [[i.name for i in c.instructions] for c in module.computations] == [
        ["x", "y", "s"], ["x.1", "y.1", "s.2"], ["x.2", "c", "s.1", "s.3"]]
    assert module.entry.root.operands == ["x.2", "c"]


def test_signature_names_follow_their_parameters() -> None:
    text = ("HloModule m\nadd (x: f32[], y: f32[]) -> f32[] {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(x, y)\n}\nENTRY e (x: f32[4]) -> f32[] {\n  x = f32[4] parameter(0)\n"
            "  c = f32[] constant(0)\n  ROOT s = f32[] reduce(x, c), dimensions={0}, to_apply=add\n}\n")
    entry = parse_hlo_module(text).entry
    assert entry.parameters is not None and [n for n, _ in entry.parameters] == ["x.1"]
    assert str(parse_hlo_module(str(parse_hlo_module(text)))) == str(parse_hlo_module(text))


def test_renamed_computation_is_called_by_its_new_name() -> None:
    module = parse_hlo_module(FORMS["computation named __c"])
    assert [c.name for c in module.computations] == ["a_c", "e"]
    assert module.entry.root.called_computations == ["a_c"]
    assert "to_apply=%a_c" in str(module)


def test_a_repeat_inside_one_computation_stays_a_problem() -> None:
    module = parse_hlo_module("ENTRY e {\n  p = f32[] parameter(0)\n  p = f32[] negate(p)\n"
                              "  ROOT r = f32[] negate(p)\n}")
    assert [i.name for i in module.entry.instructions] == ["p", "p", "r"]
    assert [p.message for p in module.problems()] == ["instruction p is already defined on line 2"]


@pytest.mark.parametrize("name", ["pred", "s32", "token", "__s", "f8e4m3fn"])
def test_names_xlas_sanitizer_changes_are_refused(name: str, xla: Any) -> None:
    text = f"ENTRY e {{\n  %{name} = f32[] parameter(0)\n  ROOT r = f32[] negate(%{name})\n}}\n"
    assert not xla.parse_module(text)["ok"]
    with pytest.raises(xs.ParseError, match=f"illegal instruction name {name}") as error:
        parse_hlo_module(text)
    assert (error.value.line, error.value.column) == (2, 3)


def test_tuple_is_a_name() -> None:
    module = parse_hlo_module("ENTRY e {\n  %tuple = f32[] parameter(0)\n  ROOT r = f32[] negate(%tuple)\n}\n")
    assert module.entry.root.operands == ["tuple"]


@pytest.mark.parametrize(("written", "given"), [
    (["x", "x", "x.1", "x.01", "y.0", "y"], ["x", "x.1", "x.2", "x.3", "y.0", "y.1"]),
    (["a.5", "a", "a", "a.5", "a.00"], ["a.5", "a", "a.1", "a.2", "a.3"]),
    (["b.-1", "b.-1", "b.99999999999999999999"], ["b.-1", "b.0", "b.99999999999999999999"]),
])
def test_name_uniquer_sequences(written: list[str], given: list[str]) -> None:
    uniquer = NameUniquer()
    assert [uniquer.unique(name) for name in written] == given


def test_sanitizer() -> None:
    assert [sanitized_name(n) for n in ("__x", "__xla_x", "s4", "tuple", "a b", "9x")] == [
        "a_x", "__xla_x", "s4_", "tuple", "a_b", "_x"]


_NAMES = st.sampled_from(["x", "x.0", "x.1", "x.01", "x.2", "y", "y.0", "y.1", "z.-1", "r"])


@st.composite
def modules_with_names(draw: st.DrawFn) -> str:
    """Two to four computations whose instruction names collide in every way the uniquer knows."""
    count = draw(st.integers(2, 4))
    parts = []
    for k in range(count):
        names = draw(st.lists(_NAMES, min_size=1, max_size=4, unique=True))
        lines = [f"  {names[0]} = f32[] parameter(0)"]
        lines += [f"  {name} = f32[] negate({previous})" for previous, name in pairwise(names)]
        lines[-1] = lines[-1].replace("  ", "  ROOT ", 1)
        header = "ENTRY e" if k == count - 1 else f"c{k}"
        parts.append(header + " {\n" + "\n".join(lines) + "\n}\n")
    return "HloModule m\n" + "".join(parts)


@settings(max_examples=examples(40), deadline=None)
@given(modules_with_names())
def test_generated_names_read_like_xla(text: str) -> None:
    from xla_oracle import oracle

    assert_reads_like_xla(oracle(), text)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.from_regex(r"[a-z_]{1,3}(\.-?[0-9]{1,3})?", fullmatch=True), max_size=30))
def test_uniquer_gives_distinct_names_and_keeps_distinct_canonical_ones(names: list[str]) -> None:
    uniquer = NameUniquer()
    given_names = [uniquer.unique(name) for name in names]
    assert len(set(given_names)) == len(given_names)
    canonical = [n for n in names if sanitized_name(n) == n]
    if len(set(names)) == len(names) and canonical == names and not any(
            ("." in n and (n.split(".")[-1].lstrip("-").startswith("0") or n.split(".")[-1] == "-0"))
            or n + ".0" in names for n in names):
        assert given_names == names


def test_a_line_left_to_the_careful_parser_is_not_a_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    from xlashapes.hlo import parser

    calls: list[int] = []
    monkeypatch.setattr(parser, "apply_xla_names", lambda computations: calls.append(len(computations)))
    text = ("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  a = f32[] add(p, f32[] constant(1))\n"
            "  ROOT n = f32[] negate(a)\n}\n")
    module = parse_hlo_module(text)
    assert [i.name for i in module.entry.instructions] == ["p", "constant.anon", "a", "n"]
    assert calls == []  # every name distinct: the renaming pass does not run
    parse_hlo_module(text.replace("ROOT n", "ROOT a"))
    assert calls == [1]
