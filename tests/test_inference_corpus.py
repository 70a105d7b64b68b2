"""Every instruction of the JAX corpus (9 programs, before and after XLA's optimizations) against check_shape.

XLA wrote these modules, so every written shape is right: for each instruction whose opcode has a rule, the shape
inferred from its operands' shapes, its typed attributes and its called computations' signatures must be
compatible with the written one (layout ignored), and the ops whose shape must be written must pass the verifier
checks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xlashapes import HloInstruction, HloModule, ParseError, Shape, ShapeError, parse_hlo_module
from xlashapes.inference import INFERRED_OPCODES, WRITTEN_SHAPE_OPCODES, Signature, check_shape, infer_shape

# the tracked programs, not the benchmark dump that benchmarks/bench_hlo.py caches beside them (git-ignored)
CORPUS = sorted(p for p in (Path(__file__).parent / "corpus").glob("*.hlo") if ".large." not in p.name)
_SKIPPED_KEYS = frozenset({"metadata", "backend_config", "frontend_attributes", "sharding", "statistics"})


def signatures(module: HloModule) -> dict[str, Signature]:
    """Every computation's parameter shapes and root shape."""
    found = {}
    for computation in module.computations:
        params = sorted(computation.parameter_instructions, key=lambda p: p.parameter_number or 0)
        found[computation.name] = Signature(tuple(p.shape for p in params), computation.root.shape)
    return found


def typed(instruction: HloInstruction) -> dict[str, Any]:
    """The instruction's attributes as ``typed()`` reads them (keys inference never reads left out)."""
    values = {}
    for key in instruction.attributes:
        if key not in _SKIPPED_KEYS:
            try:
                values[key] = instruction.attributes.typed(key)
            except ParseError:
                continue
    return values


def corpus_instructions() -> Iterator[tuple[Path, HloInstruction, list[Shape], dict[str, Signature]]]:
    """Every instruction of the corpus with its operands' shapes and the module's computation signatures."""
    for path in CORPUS:
        module = parse_hlo_module(path.read_text())
        sigs = signatures(module)
        for computation in module.computations:
            shapes = {ins.name: ins.shape for ins in computation.instructions}
            for ins in computation.instructions:
                yield path, ins, [shapes[name] for name in ins.operands], sigs


def corpus_results() -> tuple[Counter[str], list[str]]:
    """(instructions checked per opcode, every disagreement)."""
    checked: Counter[str] = Counter()
    problems = []
    for path, ins, operands, sigs in corpus_instructions():
        if ins.opcode not in INFERRED_OPCODES | WRITTEN_SHAPE_OPCODES:
            continue
        try:
            check_shape(ins.opcode, operands, ins.shape, typed(ins), sigs)
        except ShapeError as error:
            problems.append(f"{path.name}:{ins.line} {ins.opcode} {ins.name}: {error}")
        checked[ins.opcode] += 1
    return checked, problems


@pytest.mark.skipif(not CORPUS, reason="no corpus")
def test_every_corpus_instruction_passes_check_shape() -> None:
    checked, problems = corpus_results()
    assert problems == []
    assert sum(checked.values()) > 2000
    for opcode in ("dot", "convolution", "gather", "scatter", "reduce", "reduce-window", "while", "fusion",
                   "all-gather", "reduce-scatter", "fft", "sort", "select-and-scatter", "topk", "broadcast"):
        assert checked[opcode] > 0, opcode


def test_corpus_inferred_shapes_equal_written_ones() -> None:
    """For the inferable opcodes the inferred shape also has the written element type and dynamic dimensions."""
    count = 0
    for path, ins, operands, sigs in corpus_instructions():
        if ins.opcode in INFERRED_OPCODES:
            inferred = infer_shape(ins.opcode, operands, typed(ins), sigs)
            assert inferred.equal(ins.shape, ignore_layout=True), (path.name, ins.line)
            count += 1
    assert count > 1000


MEMORY_CORPUS = sorted((Path(__file__).parent / "data" / "memory").glob("*.hlo"))


@pytest.mark.skipif(not MEMORY_CORPUS, reason="no memory corpus")
@pytest.mark.parametrize("path", MEMORY_CORPUS, ids=lambda p: p.stem)
def test_optimized_cpu_modules_pass_the_verifier(path: Path) -> None:
    """XLA:CPU's optimized modules (s8 x s8 -> s32 dots, fusions, copies ...) give problems() == []."""
    module = parse_hlo_module(path.read_text())
    assert module.problems() == []
    assert sum(len(c.instructions) for c in module.computations) > 5


@pytest.mark.parametrize(("lhs", "rhs", "written", "accepted"), [
    ("s8", "s8", "s32", True), ("s8", "s8", "f32", True), ("f32", "f32", "bf16", True), ("bf16", "bf16", "f32", True),
    ("s8", "s32", "s32", True), ("s32", "s32", "s8", False), ("s8", "s32", "s16", False), ("u16", "u16", "u8", False),
])
def test_dot_written_element_type_is_the_preferred_type(lhs: str, rhs: str, written: str, accepted: bool) -> None:
    """HloVerifier passes a dot's written element type as the preferred type; a non-float never narrows."""
    from xlashapes import parse_shape

    attributes = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}
    operands = [parse_shape(f"{lhs}[2,3]"), parse_shape(f"{rhs}[3,4]")]
    if accepted:
        check_shape("dot", operands, parse_shape(f"{written}[2,4]"), attributes)
        with pytest.raises(ShapeError, match="is not the inferred"):  # the dimensions are still checked
            check_shape("dot", operands, parse_shape(f"{written}[2,5]"), attributes)
    else:
        with pytest.raises(ShapeError, match="narrower"):
            check_shape("dot", operands, parse_shape(f"{written}[2,4]"), attributes)
