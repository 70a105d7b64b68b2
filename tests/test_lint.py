"""ruff and mypy stay clean (skipped where they are not installed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import background

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("tool", ["ruff", "mypy"])
def test_clean(tool: str) -> None:
    if shutil.which(tool) is None and not (Path(sys.executable).parent / tool).exists():
        pytest.skip(f"{tool} not installed")
    if tool == "mypy":  # started in the background when the session began (tests/background.py)
        code, output = background.result("mypy")
        assert code == 0, output
        return
    args = [sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks", "tools"]
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
