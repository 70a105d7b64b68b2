"""The no-liveness upper bound of HLO modules: buffers, totals, TPU estimate, and the `memory` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import xlashapes as xs
from xlashapes.cli._common import example_path
from xlashapes.cli.memory import EXAMPLE_MODULE
from xlashapes.memory import defines_buffer, materialized_computations
from xlashapes.memory import upper_bound_report as memory_report  # the old no-liveness sum, renamed

CORPUS = Path(__file__).parent / "corpus"
DUMPS = sorted(p for p in CORPUS.glob("*.hlo") if ".large." not in p.name)  # not the benchmark dump


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xlashapes", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", DUMPS, ids=[p.name for p in DUMPS])
def test_totals_equal_the_sum_of_byte_sizes_of_listed_buffers(path: Path) -> None:
    module = xs.parse_hlo_module(path.read_text())
    report = memory_report(module)
    assert report.physical_bytes == sum(b.shape.byte_size() for b in report.buffers)
    assert sum(report.by_memory_space().values()) == report.physical_bytes
    assert sum(report.by_computation().values()) == report.physical_bytes
    names = {(b.computation, b.instruction) for b in report.buffers}
    runs = {c.name for c in materialized_computations(module)}
    for computation in module.computations:
        for instruction in computation.instructions:
            expected = computation.name in runs and defines_buffer(instruction, computation)
            assert ((computation.name, instruction.name) in names) == expected, instruction.name


def test_fused_computations_hold_no_buffers() -> None:
    module = xs.parse_hlo_module(Path(example_path(EXAMPLE_MODULE)).read_text())
    runs = {c.name for c in materialized_computations(module)}
    fused = {name for i in module.instructions() if i.opcode == "fusion" for name in i.called_computations}
    assert fused and not (fused & runs)
    assert module.entry.name in runs


def test_seed_module_memory_spaces() -> None:
    module = xs.parse_hlo_module(Path(example_path("seed_tpu.hlo")).read_text())
    report = memory_report(module)
    spaces = report.by_memory_space()
    # fusion.32 (bf16[32,32,8192]) and fusion.3 (bf16[32,32,4096]) live in S(1): three 4096-wide slabs.
    assert spaces[1] == 3 * xs.parse_shape("bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}").byte_size()
    buffers = {b.instruction: b for b in report.buffers}
    assert "tuple.4" not in buffers and "param.0" not in buffers  # aliases, and the fused computation
    assert buffers["multiply.2"].physical_bytes == 96 and buffers["multiply.2"].logical_bytes == 60


def test_tpu_estimate_relays_untiled_arrays() -> None:
    module = xs.parse_hlo_module(Path(example_path(EXAMPLE_MODULE)).read_text())
    plain, tpu = memory_report(module), memory_report(module, tpu=True)
    assert tpu.physical_bytes >= plain.physical_bytes
    for before, after in zip(plain.buffers, tpu.buffers):
        assert after.shape.equal(before.shape, ignore_layout=True)
        for _, leaf in after.shape.leaves():
            if leaf.is_array and leaf.rank:
                assert leaf.layout is not None and leaf.layout.tiles


def test_memory_command_default_and_json() -> None:
    result = run("memory")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("module jit_step:")
    report = json.loads(run("memory", "--json", "--top", "3").stdout)["upper_bound"]
    assert report["physical_bytes"] == sum(b["physical_bytes"] for b in report["buffers"])
    assert report["physical_bytes"] == sum(xs.parse_shape(b["shape"]).byte_size() for b in report["buffers"])
    assert len(report["largest"]) == 3
    tpu = json.loads(run("memory", "--tpu", "--json").stdout)["upper_bound"]
    assert tpu["physical_bytes"] >= report["physical_bytes"]


def test_memory_command_bad_input(tmp_path: Path) -> None:
    (tmp_path / "bad.hlo").write_text("HloModule m\nENTRY e {\n  ROOT x = f32[2]{0:S(1)T(2)} parameter(0)\n}\n")
    result = run("memory", str(tmp_path / "bad.hlo"))
    assert result.returncode == 2 and "^" in result.stderr and "Traceback" not in result.stderr
    missing = run("memory", str(tmp_path / "missing.hlo"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_malformed_tuple_index_is_a_parse_error() -> None:
    module = xs.parse_hlo_module("HloModule m\nENTRY e {\n  p = (f32[2], f32[3]) parameter(0)\n"
                                 "  ROOT g = f32[2] get-tuple-element(p), index=0x\n}\n")
    with pytest.raises(xs.ParseError, match="attribute index") as error:
        xs.memory_report(module)
    assert error.value.line == 4
