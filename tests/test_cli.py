"""The command line through its real entry points (subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import xlashapes as xs
from xlashapes.cli import SEED_SHAPE


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xlashapes", *args], capture_output=True, text=True, timeout=60)


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
