"""Bad input everywhere: a few hundred inputs of the campaign's generators (tools/fuzz) through every entry point.

Each input may only raise ParseError/ShapeError, within 100 ms per KB. The long run is ``tools/fuzz/campaign.py``
(its findings in tools/fuzz/FINDINGS.md). Findings already filed against another area are listed in KNOWN with
the file that owns them: a test that meets only known findings is an expected failure naming them, and any new
finding fails it. Once the owner's fix is merged the test passes; then delete the KNOWN entry.
"""

from __future__ import annotations

import gc
import re
import sys
import time
import traceback
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "fuzz"))

import generators

import xlashapes as xs

KNOWN: dict[str, str] = {
    # problem pattern: the area (file) that owns it, as filed in tools/fuzz/FINDINGS.md (all fixed and merged now)
}

COUNTS = {"parse_shape": 60, "parse_layout": 30, "make_shape": 25, "constructors": 25, "index": 30, "broadcast": 25,
          "tpu": 20, "proto": 30, "jax_layout": 15, "instruction": 30, "module": 4, "memory": 3, "physical": 12,
          "explain": 20, "cli": 6}


def problems_of(target: str, count: int, seed: int = 20261123) -> list[str]:
    """What went wrong on the first ``count`` inputs of ``target``: foreign exceptions and slow inputs."""
    run = generators.TARGETS[target][1]
    found = []
    for number in range(count):
        value = generators.input_for(target, seed, number)
        start = time.process_time()
        try:
            run(value)
        except xs.XlaShapesError:
            pass
        except Exception as error:
            frames = [f for f in traceback.extract_tb(error.__traceback__)
                      if "xlashapes" in f.filename or "generators" in f.filename]
            place = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
            found.append(f"{type(error).__name__}@{place}: {error} <- {value!r:.200}")
            continue
        seconds = time.process_time() - start
        budget = max(0.1 * max(1.0, generators_size(value) / 1024), generators.FLOOR.get(target, 0)) * 5
        if seconds > budget:
            found.append(f"slow: {seconds:.3f} s <- {value!r:.200}")
    return found


def generators_size(value: object) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (tuple, list)):
        return sum(generators_size(v) for v in value)
    return 16


def expect_none(found: list[str]) -> None:
    """Pass on no findings; expected failure when every finding is a KNOWN one; fail on anything new."""
    if not found:
        return
    owners = [next((owner for pattern, owner in KNOWN.items() if re.search(pattern, f)), None) for f in found]
    new = [f for f, owner in zip(found, owners) if owner is None]
    assert not new, "\n".join(new[:5])
    pytest.xfail("known findings (owner's fix pending): " + "; ".join(sorted({o for o in owners if o})))


@pytest.mark.parametrize("target", sorted(COUNTS))
def test_generated_inputs_raise_only_our_errors(target: str) -> None:
    expect_none(problems_of(target, COUNTS[target]))


def test_generators_are_deterministic_and_cover_every_target() -> None:
    assert set(COUNTS) | {"pathological"} == set(generators.TARGETS)
    for target in COUNTS:
        assert repr(generators.input_for(target, 5, 7)) == repr(generators.input_for(target, 5, 7))
    assert len({repr(generators.input_for("parse_shape", 1, n)) for n in range(50)}) > 40


def test_a_known_finding_is_recognized_and_a_new_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KNOWN, r"IndexError@tpu\.py:\d+", "core: tpu.py (layout that is not a permutation)")
    with pytest.raises(pytest.xfail.Exception):
        expect_none(["IndexError@tpu.py:208: tuple index out of range <- 'f32[2,2]{0,7}'"])
    with pytest.raises(AssertionError):
        expect_none(["KeyError@shape.py:1: 'x' <- 'f32[2]'"])


# ---------------------------------------------------------------------------------------------------------------
# Linear time: a long line of each pathological pattern parses or fails at >= 1 MB/s
# ---------------------------------------------------------------------------------------------------------------

SIZE = 128 * 1024
SECONDS_PER_MB = 3.0  # CPU seconds: a guard against super-linear time, with slack (FINDINGS.md has 1 MB)
INDEX_SECONDS_PER_MB = 6.0  # index math through 40k tile levels or rank 60k is not a parse: a larger constant
KNOWN_SLOW: dict[str, tuple[str, int]] = {
    # name: (owner, a size at which the quadratic time already shows and still costs < 1 s); all fixed now
}


@pytest.mark.parametrize("name", sorted(generators.PATHOLOGICAL))
def test_pathological_lines_take_linear_time(name: str) -> None:
    kind, unit, prefix, suffix = generators.PATHOLOGICAL[name]
    size = KNOWN_SLOW[name][1] if name in KNOWN_SLOW else SIZE  # known slow: a shorter line
    text = prefix + unit * (size // len(unit)) + suffix
    gc.disable()  # a collection of the whole session's heap is not the parser's time (none runs while disabled)
    start = time.thread_time()  # the parser's own CPU time: not that of the threads jax keeps in this process
    try:
        generators.run_pathological((kind, text))
    except xs.XlaShapesError:
        pass
    except Exception as error:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if "xlashapes" in f.filename]
        place = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
        if name in KNOWN_SLOW:
            pytest.xfail(f"{KNOWN_SLOW[name][0]}: {type(error).__name__}")
        expect_none([f"{type(error).__name__}@{place}: {error} <- {name}"])
    finally:
        seconds = time.thread_time() - start
        gc.enable()
    per_mb = INDEX_SECONDS_PER_MB if kind == "index" else SECONDS_PER_MB
    limit = max(per_mb * len(text) / 2**20, 0.05)
    if seconds > limit and name in KNOWN_SLOW:
        pytest.xfail(f"{KNOWN_SLOW[name][0]}: {seconds:.2f} s for {len(text):,} bytes")
    assert seconds <= limit, f"{name}: {seconds:.2f} s for {len(text):,} bytes"


# ---------------------------------------------------------------------------------------------------------------
# The command line on any text: exit 0 or 2, never a traceback, a failure is one line (three with a caret)
# ---------------------------------------------------------------------------------------------------------------

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cli_runner import Result, run  # noqa: E402
from profiles import examples  # noqa: E402

TEXT = st.one_of(st.text(max_size=40), st.sampled_from(generators.SHAPE_SEEDS),
                 st.builds(lambda seed: generators.any_shape_text(__import__("random").Random(seed)), st.integers()))


def _one_failure_line(result: Result) -> None:
    code, err = result.returncode, result.stderr
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        lines = err.rstrip("\n").split("\n")
        assert lines[0].startswith("xlashapes") and len(lines) in (1, 3), err


@settings(max_examples=examples(60))
@given(TEXT, st.sampled_from(["explain", "draw", "index", "offset"]), st.text(max_size=12))
def test_cli_on_any_shape_text(text: str, command: str, extra: str) -> None:
    args = {"explain": [text, "--json"], "draw": [text, "-o", "/nonexistent-dir/x.svg"], "index": [text, extra],
            "offset": [text, extra]}[command]
    _one_failure_line(run(command, *args))


@settings(max_examples=examples(30))
@given(TEXT, TEXT, st.one_of(st.none(), st.text(max_size=8)))
@example(lhs="f32[2]", rhs="f32[2]", dims="²")  # a digit to str.isdigit, not to int (Hypothesis found it)
@example(lhs="--dir", rhs="", dims=None)  # --direction '' with the example: its note and the error were two lines
def test_cli_broadcast_on_any_text(lhs: str, rhs: str, dims: str | None) -> None:
    _one_failure_line(run("broadcast", lhs, rhs, *([] if dims is None else ["--dims", dims])))
