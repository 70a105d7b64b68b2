"""Shared helpers of the HLO tests: compare a module we read with what XLA's parser reads from the same text."""

from __future__ import annotations

from typing import Any

import xlashapes as xs
from xlashapes.hlo import HloModule, parse_hlo_module


def summary(module: HloModule) -> dict[str, dict[str, tuple[str, str, tuple[str, ...]]]]:
    """computation -> instruction -> (opcode, shape text, operands)."""
    return {c.name: {i.name: (i.opcode, xs.shape_text(i.shape), tuple(i.operands)) for i in c.instructions}
            for c in module.computations}


def xla_verdict(xla: Any, text: str) -> dict[str, Any]:
    """XLA's answer for ``text``: {"ok": True, "module": our reading of XLA's printout} or {"ok": False, ...}."""
    answer: dict[str, Any] = xla.parse_module(text)
    if answer.get("ok"):
        answer["module"] = parse_hlo_module(answer["text"])
    return answer


def assert_reads_like_xla(xla: Any, text: str) -> HloModule:
    """Both our paths read ``text`` as XLA does: same module name, computations, instructions, shapes, operands."""
    ours = parse_hlo_module(text)
    assert parse_hlo_module(text, fast=False) == ours
    answer = xla_verdict(xla, text)
    assert answer["ok"], answer
    theirs: HloModule = answer["module"]
    assert ours.name == theirs.name
    assert summary(ours) == summary(theirs)
    assert ours.entry.name == theirs.entry.name
    assert ours.problems() == [], ours.problems()
    return ours
