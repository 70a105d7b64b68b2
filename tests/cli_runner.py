"""The command line run in-process: ``main([...])`` with stdin, stdout, stderr and the working directory captured.

Spawning an interpreter per CLI test costs ~0.3 s; this runs the same ``main`` the console script runs. Keep a few
real subprocess tests for what only a process shows (the entry point, broken pipes, stdin from a pipe).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from xlashapes.cli import main


@dataclass(frozen=True)
class Result:
    """What one command line run did: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def run(*args: str, stdin: str = "", cwd: str | Path | None = None) -> Result:
    """``xlashapes ARGS...`` in this process."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin, old_cwd = sys.stdin, os.getcwd()
    sys.stdin = io.StringIO(stdin)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as stop:  # main returns; a SystemExit escaping it is a bug the test should see
                raise AssertionError(f"main raised SystemExit({stop.code!r})") from None
    finally:
        sys.stdin = old_stdin
        os.chdir(old_cwd)
    return Result(code, out.getvalue(), err.getvalue())


def run_process(*args: str, stdin: str | None = None, cwd: str | Path | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m xlashapes ARGS...`` as a real subprocess."""
    return subprocess.run([sys.executable, "-m", "xlashapes", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def assert_fails(result: Result | subprocess.CompletedProcess[str], *fragments: str, caret: bool = False) -> None:
    """Exit 2, no traceback, one line on stderr (three with a parse error's line and caret) naming ``fragments``."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = result.stderr.rstrip("\n").split("\n")
    assert lines[0].startswith("xlashapes"), result.stderr
    if caret:
        assert len(lines) == 3 and lines[2].strip() == "^", result.stderr
    else:
        assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, result.stderr)
