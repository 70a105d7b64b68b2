"""The `memory` command: peak summary, dump directories, --by, --oom, --json, pictures, bad input; the OOM format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cli_runner
import xlashapes as xs
from cli_runner import assert_fails
from profiles import examples
from xlashapes.memory import memory_report
from xlashapes.memory.oom import expansion_text, human_readable_bytes, oom_entry, oom_lines

DATA = Path(__file__).parent / "data" / "memory"


def run(capsys: pytest.CaptureFixture[str], *args: str, stdin: str = "") -> tuple[int, str, str]:
    result = cli_runner.run("memory", *args, stdin=stdin)
    return result.returncode, result.stdout, result.stderr


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path) -> None:
    assert_fails(cli_runner.run("memory", "/dev/zero"), "not text", "NUL byte")
    assert_fails(cli_runner.run("memory", "--top", "-1"), "--top", "at least 0")
    assert_fails(cli_runner.run("memory", str(tmp_path / "missing.hlo")), "No such file")
    (tmp_path / "latin.hlo").write_bytes(b"HloModule \xe9")
    assert_fails(cli_runner.run("memory", str(tmp_path / "latin.hlo")), "not UTF-8")


def test_module_from_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    text = (DATA / "mlp_train.hlo").read_text()
    code, out, _ = run(capsys, "-", "--json", stdin=text)
    assert code == 0 and json.loads(out)["peak_bytes"] == memory_report(xs.parse_hlo_module(text)).peak_bytes


def test_default_is_the_peak_summary_of_the_bundled_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("module jit_step: peak ")
    assert [line.split()[0] for line in lines[1:6]] == ["arguments", "outputs", "alias", "temp", "peak"]
    assert "live at the peak:" in out and "upper bound" in out


def test_json_has_peak_bytes_and_every_component(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(DATA / "mlp_donated.hlo"), "--json", "--by", "source")
    data = json.loads(out)
    figures = json.loads((DATA / "mlp_donated.json").read_text())
    assert code == 0
    assert data["peak_bytes"] == (data["arguments_bytes"] + data["outputs_bytes"] + data["temp_bytes"]
                                  - data["alias_bytes"])
    assert data["xla"] == {k: figures[k] for k in data["xla"]} and len(data["xla"]) == 4
    assert data["xla_memory_usage_report_bytes"] >= data["peak_bytes"]
    assert data["alias_bytes"] == figures["alias_size_in_bytes"] > 0
    assert sum(data["grouped"].values()) == sum(b["physical_bytes"] for b in data["live_at_peak"]) or \
        data["live_at_peak_count"] > len(data["live_at_peak"])
    assert data["by_memory_space"]["0"]["peak"] == data["peak_bytes"]


def test_dump_directory_shows_xla_figures_beside_ours(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stem = "module_0007.jit_prog.cpu_after_optimizations"
    (tmp_path / f"{stem}.txt").write_text((DATA / "transformer_train.hlo").read_text())
    (tmp_path / f"{stem}-buffer-assignment.txt").write_text(
        (DATA / "transformer_train.buffer-assignment.txt").read_text())
    (tmp_path / f"{stem}-memory-usage-report.txt").write_text(
        (DATA / "transformer_train.memory-usage-report.txt").read_text())
    (tmp_path / "module_0007.jit_prog.before_optimizations.txt").write_text("HloModule x\n")
    (tmp_path / "module_0002.jit_small.cpu_after_optimizations.txt").write_text(
        (DATA / "int8_matmul.hlo").read_text())
    code, out, err = run(capsys, str(tmp_path), "--top", "3")
    assert code == 0 and "XLA's own figures" in out and "(ours +0.00%)" in out
    assert "2 optimized modules" in err and out.startswith("module jit_prog_transformer_train:")
    assert "XLA's memory-usage-report: " in out
    assert out.count("\n  ") >= 3


def test_before_optimizations_module_is_labelled_an_upper_bound(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(Path(__file__).parent / "corpus" / "while_cond.unopt.hlo"))
    assert code == 0 and out.splitlines()[0].split(":")[1].strip().startswith("upper bound")
    assert "not scheduled" in out


def test_group_by_op_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(DATA / "transformer_train.hlo"), "--by", "op_name", "--top", "50")
    report = memory_report(xs.parse_hlo_module((DATA / "transformer_train.hlo").read_text()))
    rows = out.split("bytes live at the peak by op_name:\n")[1].splitlines()
    assert code == 0 and len(rows) == len(report.grouped("op_name"))
    assert sum(int(row.split()[0].replace(",", "")) for row in rows) == sum(report.grouped("op_name").values())


def test_oom_lists_largest_allocations(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(DATA / "convnet_train.hlo"), "--oom", "--top", "4")
    assert code == 0 and "Largest program allocations in hbm:" in out
    assert out.count("Size: ") == 4 and out.count("Allocation type: ") == 4 and "Unpadded size: " in out


def test_pictures_are_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg, html = tmp_path / "t.svg", tmp_path / "r.html"
    code, _, err = run(capsys, str(DATA / "scan_rnn.hlo"), "--svg", str(svg), "--html", str(html))
    assert code == 0 and "wrote" in err
    assert svg.read_text().startswith("<svg") and 'id="peak-marker"' in svg.read_text()
    page = html.read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/file.hlo"], "cannot read"),
    (["--top", "-1"], "--top"),
])
def test_bad_input_is_one_clean_error(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2 and message in err and not out and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_unreadable_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, str(empty))
    assert code == 2 and "cannot read" in err
    binary = tmp_path / "b.hlo"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    code, _, err = run(capsys, str(binary))
    assert code == 2 and "cannot read" in err
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.hlo"
        locked.write_text("HloModule m\n")
        locked.chmod(0)
        code, _, err = run(capsys, str(locked))
        assert code == 2 and "cannot read" in err
    code, _, err = run(capsys, str(DATA / "mlp_train.hlo"), "--svg", str(tmp_path / "no" / "dir" / "x.svg"))
    assert code == 2 and "cannot write" in err


def test_bad_hlo_points_at_the_position(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m, is_scheduled=true\nENTRY e {\n  ROOT x = f32[2]{0:S(1)T(2)} parameter(0)\n}\n")
    code, _, err = run(capsys, str(bad))
    assert code == 2 and "^" in err and "Traceback" not in err


# --- the TPU out-of-memory format -------------------------------------------------------------------------

@pytest.mark.parametrize("shape, size, unpadded, extra, expansion", [
    # lines of real TPU out-of-memory reports (see REFERENCE.md)
    ("f32[128,256,896,18]{0,3,2,1:T(8,128)}", "2.62G", "1.97G", "672.00M", "1.3x"),
    ("bf16[2048,1,2048,128]{0,1,3,2:T(4,128)(2,1)}", "4.00G", "1.00G", "3.00G", "4.0x"),
    ("s32[8388608,8,4]{2,1,0:T(8,128)}", "32.00G", "1.00G", "31.00G", "32.0x"),
])
def test_oom_entry_reproduces_real_tpu_report_lines(shape: str, size: str, unpadded: str, extra: str,
                                                    expansion: str) -> None:
    parsed = xs.parse_shape(shape)
    physical, logical = parsed.byte_size(), parsed.xla_byte_size_of()
    assert human_readable_bytes(physical, "") == size
    assert human_readable_bytes(logical, "") == unpadded
    assert human_readable_bytes(physical - logical, "") == extra
    assert expansion_text(physical, logical) == expansion
    report = memory_report(xs.parse_hlo_module(
        f"HloModule m, is_scheduled=true\nENTRY e {{\n  ROOT p = {shape} parameter(0), "
        'metadata={op_name="jit(f)/dot" source_file="model.py" source_line=7}\n}\n', ), backend="tpu")
    lines = oom_entry(1, report.live_at_peak[0])
    assert f"  1. Size: {size}" in lines and f"     Unpadded size: {unpadded}" in lines
    assert f"     Extra memory due to padding: {extra} ({expansion} expansion)" in lines
    assert '     Operator: op_name="jit(f)/dot" source_file="model.py" source_line=7' in lines
    assert any(line.startswith("Total hbm usage >= ") for line in oom_lines(report))


def _tsl_reference(num_bytes: int) -> str:
    """tsl's algorithm written out step by step (independent of the implementation's loop)."""
    if num_bytes < 1024:
        return f"{num_bytes}B"
    for power, letter in enumerate("KMGTPE", 1):
        if num_bytes < 1024 ** (power + 1) or letter == "E":
            scaled = num_bytes // 1024 ** (power - 1)  # integer divisions before the last one
            return f"{scaled / 1024:.{1 if letter == 'K' else 2}f}{letter}iB"
    raise AssertionError


@settings(max_examples=examples(300))
@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_human_readable_bytes_follows_tsl(num_bytes: int) -> None:
    assert human_readable_bytes(num_bytes) == _tsl_reference(num_bytes)
    assert human_readable_bytes(-num_bytes) == ("-" if num_bytes else "") + _tsl_reference(num_bytes)


def test_human_readable_bytes_edges() -> None:
    assert [human_readable_bytes(n) for n in (0, 1023, 1024, 2**20 - 1, 2**20, 2**30)] == [
        "0B", "1023B", "1.0KiB", "1024.0KiB", "1.00MiB", "1.00GiB"]
    assert human_readable_bytes(-(2**63)) == "-8E"
