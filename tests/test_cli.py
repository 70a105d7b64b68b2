"""The command line: in-process through ``main`` (tests/cli_runner.py), and a few real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import xlashapes as xs
from cli_runner import assert_fails, run
from xlashapes.cli import SEED_SHAPE
from xlashapes.cli._common import read_bytes, read_text


def test_explain_default_is_the_seed_shape() -> None:
    result = run("explain")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == SEED_SHAPE
    assert "p=8, z=1, y=1280, x=16384" in result.stdout
    assert "tile (2,1)" in result.stdout and "VMEM" in result.stdout


def test_explain_json_matches_the_library() -> None:
    text = "f32[3,5]{1,0:T(2,2)L(32)}"
    result = run("explain", text, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    shape = xs.parse_shape(text)
    assert report["shape"] == str(shape)
    assert report["bytes"]["physical"] == shape.byte_size() == 128
    assert report["elements"] == {"logical": 15, "legacy_padding": 0, "tile_padding": 9, "tail_padding": 8,
                                  "physical": 32}
    assert report["tiling"][-1]["dims"] == list(shape.physical_dimensions())
    assert report["bytes"]["xla_array_size_first_tile_only"] == shape.xla_array_size()


def test_explain_tuple_json() -> None:
    result = run("explain", "(f32[2]{0}, s4[3]{0:E(4)}, token[])", "--json")
    report = json.loads(result.stdout)
    assert report["total_bytes"] == 10
    assert [leaf["index"] for leaf in report["leaves"]] == [[0], [1], [2]]


@pytest.mark.parametrize("text", ["F32[3]", "f32[3,5]{1,0:S(1)T(2)}", "f32[2]{0:L(0)}", "f32[", "f32[3]{0:T(2)}}"])
def test_bad_shape_exits_2_with_a_caret(text: str) -> None:
    result = run("explain", text)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "^" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) <= 5


def test_invalid_layout_is_reported_not_crashed() -> None:
    result = run("explain", "f32[3,5]{1,1}")
    assert result.returncode == 2
    assert "not a permutation" in result.stdout and "Traceback" not in result.stderr
    assert_fails(result, "f32[3,5]{1,1} has no size", "not a permutation")
    assert_fails(run("explain", "(f32[2]{0}, f32[<=3,?])", "--json"), "f32[<=3,?]", "unbounded")


def test_console_script_and_help() -> None:
    code = "from xlashapes.cli import main; raise SystemExit(main(['--help']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "explain" in result.stdout
    result = run("explain", "--help")
    assert result.returncode == 0 and "examples:" in result.stdout


def test_broadcast_command() -> None:
    assert run("broadcast").stdout.strip() == "f32[2,3]{1,0}"
    assert run("broadcast", "f32[2,1]", "f32[1,3]").stdout.strip() == "f32[2,3]{1,0}"
    result = run("broadcast", "f32[1,2]", "f32[4,3,1]", "--dims", "1,2", "--json")
    report = json.loads(result.stdout)
    assert report["result"] == str(xs.broadcast_shape("f32[1,2]", "f32[4,3,1]", broadcast_dimensions=(1, 2)))
    assert report["result"] == "f32[4,3,2]{2,1,0}"
    hlo = run("broadcast", "f32[2,3]", "f32[3]", "--dims", "1", "--hlo").stdout
    assert "broadcast(" in hlo and "dimensions={1}" in hlo
    bad = run("broadcast", "f32[7,2,5]", "f32[7,2,6]")
    assert bad.returncode == 2 and "dimension 2" in bad.stderr and "Traceback" not in bad.stderr
    assert run("broadcast", "f32[2,3]", "f32[3]", "--dims", "x").returncode == 2


def test_explain_tpu_advice() -> None:
    result = run("explain", "f32[3,1000]", "--tpu", "--json")
    report = json.loads(result.stdout)
    advice = xs.tpu_advice(xs.parse_shape("f32[3,1000]"))
    assert report["tpu"]["shape"] == str(advice.shape) == "f32[3,1000]{1,0:T(4,128)}"
    assert report["tpu"]["physical_bytes"] == advice.shape.byte_size() == 4 * 1024 * 4
    assert "small tile" in run("explain", "f32[3,1000]", "--tpu").stdout


def test_pack_unpack_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import ml_dtypes
    import numpy as np

    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    np.save(tmp_path / "x.npy", x)
    text = "f32[3,5]{1,0:T(2,2)}"
    packed = run("pack", str(tmp_path / "x.npy"), text, str(tmp_path / "x.bin"), "--json")
    assert packed.returncode == 0, packed.stderr
    assert json.loads(packed.stdout)["bytes"] == xs.parse_shape(text).byte_size() == 96
    raw = (tmp_path / "x.bin").read_bytes()
    assert raw == xs.to_physical(x, text).tobytes()
    assert run("unpack", str(tmp_path / "x.bin"), text, str(tmp_path / "y.npy")).returncode == 0
    assert np.array_equal(np.load(tmp_path / "y.npy"), x)
    # s4 packing: first element in the low-order bits (REFERENCE: [1,2,3,4,5,-1] -> 21 43 f5).
    np.save(tmp_path / "v.npy", np.array([1, 2, 3, 4, 5, -1], dtype=np.int8))
    assert run("pack", str(tmp_path / "v.npy"), "s4[6]{0:E(4)}", str(tmp_path / "v.bin")).returncode == 0
    assert (tmp_path / "v.bin").read_bytes() == bytes([0x21, 0x43, 0xF5])
    # ml_dtypes arrays (saved as raw void bytes by np.save) keep their bits.
    b = np.array([1.5, -0.0, np.nan], dtype=ml_dtypes.bfloat16)
    np.save(tmp_path / "b.npy", b)
    assert run("pack", str(tmp_path / "b.npy"), "bf16[3]", str(tmp_path / "b.bin")).returncode == 0
    assert (tmp_path / "b.bin").read_bytes() == b.tobytes()


def test_pack_unpack_bad_input(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    np.save(tmp_path / "x.npy", np.full((2, 2), 1000, dtype=np.int32))
    for args in (("pack", str(tmp_path / "x.npy"), "s8[2,2]", str(tmp_path / "o.bin")),
                 ("pack", str(tmp_path / "x.npy"), "s32[2,3]", str(tmp_path / "o.bin")),
                 ("pack", str(tmp_path / "missing.npy"), "s32[2,2]", str(tmp_path / "o.bin")),
                 ("unpack", str(tmp_path / "x.npy"), "s32[7]", str(tmp_path / "o.npy")),
                 ("unpack", str(tmp_path / "missing.bin"), "s32[2]", str(tmp_path / "o.npy"))):
        result = run(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and result.stderr.strip()


def test_index_and_offset_json_match_the_library() -> None:
    text = "s4[3,5]{0,1:T(2,2)E(4)}"
    shape = xs.parse_shape(text)
    for index in ((0, 0), (2, 4), (1, 3)):
        report = json.loads(run("index", text, ",".join(map(str, index)), "--json").stdout)
        offset = xs.linear_index(shape, index)
        assert report["element_offset"] == offset
        assert report["byte_offset"] * 8 + report.get("bit_offset", 0) == offset * 4
        back = json.loads(run("offset", text, str(offset), "--json").stdout)
        assert tuple(back["index"]) == index and back["padding"] is False
    padding = json.loads(run("offset", "f32[3,5]{1,0:T(2,2)}", "9", "--json").stdout)
    assert padding["padding"] is True and padding["index"] is None
    assert run("offset", "f32[3,5]{1,0:T(2,2)}", "24").returncode == 2  # past the end of the buffer


def test_no_command_prints_help_and_version() -> None:
    result = run()
    assert result.returncode == 0 and "explain" in result.stdout and "memory" in result.stdout
    assert run("--version").stdout.startswith("xlashapes ")


def test_version_says_which_compiled_kernels_large_conversions_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from xlashapes.physical import _prebuilt

    lines = run("--version").stdout.splitlines()
    assert len(lines) == 2 and lines[1].startswith("compiled kernels: ")
    if _prebuilt.archive() is not None:
        assert f"machine code shipped for {_prebuilt.archive().name}, nothing to compile" in lines[1]
    monkeypatch.setenv("XLASHAPES_NO_NUMBA", "1")
    assert run("--version").stdout.splitlines()[1] == "compiled kernels: the NumPy path (XLASHAPES_NO_NUMBA is set)"


# ----------------------------------------------------------------------------------------------------------------
# Failures: exit 2, one line on stderr, never a traceback (issue 15)
# ----------------------------------------------------------------------------------------------------------------



def test_broken_pipe_is_one_line_not_a_traceback() -> None:
    """`xlashapes explain - | head -1` on a long report: the reader closes the pipe early (and stdin works)."""
    leaves = "(" + ", ".join(["f32[2]{0}"] * 3000) + ")"
    process = subprocess.Popen([sys.executable, "-m", "xlashapes", "explain", "-"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdin.write(leaves)
    process.stdin.close()
    first = process.stdout.readline()
    process.stdout.close()
    assert process.wait(timeout=60) == 2
    err = process.stderr.read()
    process.stderr.close()
    assert first.startswith("(f32[2]{0}, f32[2]{0}")
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.strip().splitlines() == ["xlashapes explain: output closed before everything was written (broken pipe)"]


def test_full_disk_output_is_one_line(tmp_path: Path) -> None:
    """`xlashapes explain > /dev/full`: the write error is reported, once, at exit 2."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "xlashapes", "explain", "f32[2]"], stdout=full,
                                stderr=subprocess.PIPE, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["xlashapes explain: cannot write the output: No space left on device"]


def test_unwritable_picture(tmp_path: Path) -> None:
    assert_fails(run("draw", "f32[2]", "-o", str(tmp_path / "missing_dir" / "x.svg")), "cannot write",
                 "missing_dir/x.svg", "No such file or directory")
    assert_fails(run("draw", "f32[2]", "-o", str(tmp_path)), "use a .svg or .png")
    (tmp_path / "d.svg").mkdir()
    assert_fails(run("draw", "f32[2]", "-o", str(tmp_path / "d.svg")), "cannot write", "d.svg")


def test_pack_refuses_npz_strings_objects_and_directories(tmp_path: Path) -> None:
    import numpy as np

    np.savez(tmp_path / "x.npz", a=np.ones(2, np.float32))
    np.save(tmp_path / "s.npy", np.array(["ab", "c"]))
    np.save(tmp_path / "r.npy", np.zeros(2, dtype=[("a", "<f4")]))
    np.save(tmp_path / "o.npy", np.array([1, None], dtype=object), allow_pickle=True)
    out = str(tmp_path / "o.bin")
    assert_fails(run("pack", str(tmp_path / "x.npz"), "f32[2]", out), ".npz archive", "np.save")
    assert_fails(run("pack", str(tmp_path / "s.npy"), "f32[2]", out), "<U2", "not numbers")
    assert_fails(run("pack", str(tmp_path / "r.npy"), "f32[2]", out), "not numbers")
    assert_fails(run("pack", str(tmp_path / "o.npy"), "f32[2]", out), "cannot read", "o.npy")
    assert_fails(run("pack", str(tmp_path), "f32[2]", out), "directory")
    assert not (tmp_path / "o.bin").exists()


def test_unpack_reads_at_most_the_shape(tmp_path: Path) -> None:
    assert_fails(run("unpack", "/dev/zero", "f32[4]", str(tmp_path / "y.npy")), "larger than 16 bytes")
    assert_fails(run("unpack", str(tmp_path), "f32[4]", str(tmp_path / "y.npy")), "directory")
    (tmp_path / "short.bin").write_bytes(b"\0" * 15)
    assert_fails(run("unpack", str(tmp_path / "short.bin"), "f32[4]", str(tmp_path / "y.npy")), "15 bytes", "16")


def test_safe_reader(tmp_path: Path) -> None:
    with pytest.raises(xs.ShapeError, match="directory"):
        read_text(str(tmp_path))
    with pytest.raises(xs.ShapeError, match=r"not text \(NUL byte at offset 0\)"):
        read_text("/dev/zero")
    (tmp_path / "latin.hlo").write_bytes("HloModule caf\xe9".encode("latin-1"))
    with pytest.raises(xs.ShapeError, match=r"not UTF-8 text \(byte 0xe9 at offset 13\)"):
        read_text(str(tmp_path / "latin.hlo"))
    (tmp_path / "big.hlo").write_text("x" * 1000)
    with pytest.raises(xs.ShapeError, match="larger than 999 bytes"):
        read_text(str(tmp_path / "big.hlo"), limit=999)
    assert read_text(str(tmp_path / "big.hlo"), limit=1000) == "x" * 1000
    with pytest.raises(xs.ShapeError, match=r"cannot read input .*No such file"):
        read_bytes(str(tmp_path / "missing"))


@pytest.mark.parametrize("option", ["--max-rows", "--max-cols"])
@pytest.mark.parametrize("value", ["0", "-1", "1000000000", "x"])
def test_draw_limits_are_bounded(option: str, value: str) -> None:
    assert_fails(run("draw", "f32[4,4]", "-o", "never.svg", option, value), option)


def test_missing_arguments_are_not_filled_with_examples() -> None:
    assert_fails(run("index", "f32[8,8]"), "give the index", "0,0")
    assert_fails(run("offset", "f32[8,8]"), "give the linear offset")
    assert_fails(run("broadcast", "f32[2,3]"), "give two operand shapes")
    # no special case for the example's text: the same answer with or without the printed layout
    plain, printed = run("broadcast", "f32[2,3]", "f32[3]"), run("broadcast", "f32[2,3]{1,0}", "f32[3]")
    assert_fails(plain, "broadcast_dimensions")
    assert_fails(printed, "broadcast_dimensions")
    assert plain.stderr.replace("{1,0}", "") == printed.stderr.replace("{1,0}", "")


@pytest.mark.parametrize(("args", "answer"), [
    (("index",), "element offset 17, byte 68"), (("offset",), "index (2,3)"), (("broadcast",), "f32[2,3]{1,0}"),
    (("explain",), SEED_SHAPE)])
def test_examples_only_without_arguments_and_said_so(args: tuple[str, ...], answer: str) -> None:
    result = run(*args)
    assert result.returncode == 0 and answer in result.stdout
    assert "no arguments given" in result.stderr and "example" in result.stderr


def test_a_failure_with_no_arguments_is_its_one_line() -> None:
    # an option given with the bundled example that fails: only the error, not the example's note before it
    result = run("broadcast", "--direction", "")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "no arguments given" not in result.stderr and "direction" in result.stderr


def test_negative_indices_count_from_the_end() -> None:
    result = run("index", "f32[3,5]", "-1,0")
    assert result.returncode == 0, result.stderr
    offset = xs.linear_index("f32[3,5]", (2, 0))
    assert result.stdout.strip() == f"f32[3,5]{{1,0}} index (2,0) -> element offset {offset}, byte {offset * 4}"
    tiled = run("index", "f32[3,5]{1,0:T(2,2)}", "-1,-2", "--json")
    assert json.loads(tiled.stdout)["element_offset"] == xs.linear_index("f32[3,5]{1,0:T(2,2)}", (2, 3)) == 17
    assert_fails(run("index", "f32[3,5]", "-4,0"), "index -4 is out of range for dimension 0 (size 3)")
    assert_fails(run("index", "f32[?,5]", "-1,0"), "unbounded")
    assert_fails(run("index", "f32[3,5]", "1,2,3"), "3 entries", "rank 2")
    assert_fails(run("offset", "f32[3,5]", "-1"), "offset -1 is negative")


def test_offset_and_index_errors_name_their_argument() -> None:
    assert_fails(run("offset", "f32[3,5]", "abc"), "offset 'abc' is not an integer")
    assert_fails(run("offset", "f32[3,5]", "1,2"), "offset '1,2'")
    assert_fails(run("index", "f32[3,5]", "x,1"), "index 'x,1'")
    assert_fails(run("broadcast", "f32[2,3]", "f32[3]", "--dims", "x"), "--dims 'x'")
    assert_fails(run("index", "(f32[2], s32[])", "0"), "one array shape")


def test_usage_errors_are_one_line() -> None:
    assert_fails(run("bogus"), "invalid choice")
    assert_fails(run("explain", "f32[2]", "--bogus"), "unrecognized arguments: --bogus")
    assert_fails(run("index", "f32[2]", "0", "1"), "unrecognized arguments")
    report = json.loads(run("explain", "f32[2]", "--bogus", "--json").stdout)
    assert report["error"]["kind"] == "UsageError" and "--bogus" in report["error"]["message"]


def test_broadcast_names_ranks_in_operand_order() -> None:
    assert_fails(run("broadcast", "f32[3,2]", "f32[3]"), "different ranks (f32[3,2] rank 2, f32[3] rank 1)")


def test_shape_from_stdin() -> None:
    result = run("index", "-", "2,3", stdin="f32[3,5]{1,0:T(2,2)}\n")
    assert result.returncode == 0 and "element offset 17" in result.stdout
    assert run("explain", "-", "--json", stdin="  s4[8]{0:E(4)}  ").returncode == 0
    assert_fails(run("explain", "-", stdin="   \n"), "no shape or instruction on stdin")
    assert_fails(run("broadcast", "-", "-", stdin=""), "no left operand on stdin")


def test_explain_a_pasted_instruction_line() -> None:
    line = ("%add.936 = bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)} add(bf16[8,1,1280,16384]{3,2,0,1:T(8,128)"
            "(2,1)} %exponential.183, %broadcast.3115), metadata={op_name=\"jit(f)/add\"}")
    result = run("explain", line)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "instruction add.936 (add), result:"
    assert lines[1].strip() == "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"
    assert "operand 0: %exponential.183" in lines and lines[-1].startswith("operand 1: %broadcast.3115 (its shape")
    report = json.loads(run("explain", "-", "--json", stdin="ROOT " + line).stdout)
    assert report["opcode"] == "add" and report["result"]["bytes"]["physical"] == 8 * 1280 * 16384 * 2
    assert report["operands"][0]["report"]["shape"] == report["result"]["shape"]
    assert report["operands"][1] == {"name": "broadcast.3115", "report": None}
    assert run("explain", "x = f32[3,1000]{1,0} parameter(0)", "--tpu", "--json").returncode == 0
    assert_fails(run("explain", "%a = f32[2]{0} add(%x"), caret=True)


def test_json_errors_have_one_base_for_line_and_column() -> None:
    text = "f32[3,5]{1,0:S(1)T(2,2)}"
    result = run("explain", text, "--json")
    assert_fails(result, caret=True)
    error = json.loads(result.stdout)["error"]
    with pytest.raises(xs.ParseError) as caught:
        xs.parse_shape(text)
    assert (error["kind"], error["line"], error["column"]) == ("ParseError", caught.value.line, caught.value.column)
    assert error["column"] == caught.value.position + 1  # 1-based, as in the text message
    assert f"(at line 1, column {error['column']})" in result.stderr
    caret = result.stderr.splitlines()[2]
    assert caret.index("^") - 4 == caught.value.position
    shape_error = json.loads(run("index", "f32[3,5]", "3,3", "--json").stdout)["error"]
    assert shape_error["kind"] == "ShapeError" and "out of range" in shape_error["message"]


def test_internal_errors_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import xlashapes.cli.shapes as shapes

    def boom(shape: object) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(shapes, "explain", boom)
    assert_fails(run("explain", "f32[2]"), "internal error", "KeyError")
    monkeypatch.setenv("XLASHAPES_DEBUG", "1")
    with pytest.raises(KeyError):
        run("explain", "f32[2]")


def test_os_errors_name_the_file_and_interrupts_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import xlashapes.cli.shapes as shapes

    def locked(shape: object) -> None:
        raise PermissionError(13, "Permission denied", "/locked/file")

    def interrupted(shape: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(shapes, "explain", locked)
    assert_fails(run("explain", "f32[2]"), "cannot access /locked/file: Permission denied")
    monkeypatch.setattr(shapes, "explain", interrupted)
    result = run("explain", "f32[2]")
    assert result.returncode == 130 and result.stderr == "xlashapes explain: interrupted\n"


def test_tpu_advice_is_skipped_for_a_broken_layout() -> None:
    result = run("explain", "c128[2,2]{0,-21}", "--tpu")
    assert_fails(result, "has no size")
    assert "on TPU" not in result.stdout and "NO SIZE" in result.stdout
    tuple_report = json.loads(run("explain", "(f32[2], s32[3])", "--tpu", "--json").stdout)
    assert tuple_report["tpu"]["shape"] == str(xs.tpu_advice(xs.parse_shape("(f32[2], s32[3])")).shape)
