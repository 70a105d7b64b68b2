"""Slow, independent checks started in the background when the session starts, so they use the second core.

The suite runs in two pytest-xdist workers (``-n 2`` in the project's pytest options); run as one process
(``-n 0``), that process is single-threaded most of the time. Two jobs do not need it: mypy (``test_lint`` waits
for its verdict) and the first compilation of the numba kernels. A background run of ``kernel_worker`` (every entry
point and element width) compiles them into the shared kernel cache, in the order the compiled-kernel tests need
them, while the tests go on. When a test process reaches the compiled-kernel tests before the warm-up is over, each
kernel is still compiled once: a process waits for the other one compiling the same kernel and loads its kept code
(``_aot.compiling``), and compiles itself the ones the warm-up has not reached. Each test still runs and asserts in
a test process; the background run's outcome is not used. Under xdist, the first worker (``gw0``) starts the
warm-up, and ``test_lint`` runs mypy itself in whichever worker it lands, while the other worker goes on.
Where the machine code shipped with the package runs on this host (``_prebuilt``), the tests run it and nothing
needs compiling but the few kernels ``test_physical_aot`` compiles itself: the warm-up compiles only those.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_TESTS = ("tests/test_physical_stacked.py", "tests/test_physical.py", "tests/test_physical_fast.py",
                "tests/test_physical_generic.py", "tests/test_physical_grouped.py", "tests/test_physical_aot.py")
"""The compiled-kernel tests, run last in this order (the stacked layouts' first: the warm-up compiles their kernels
among the first, so the others' get more time)."""

_jobs: dict[str, subprocess.Popen[str]] = {}


def start(name: str, args: list[str], env: dict[str, str] | None = None) -> None:
    """Start ``args`` (a Python module run) as background job ``name`` unless it already runs (``env``: added to
    the environment)."""
    if name not in _jobs:
        _jobs[name] = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                       env={**os.environ, **(env or {})})


def result(name: str, timeout: float = 600) -> tuple[int, str]:
    """Wait for job ``name`` (started now if it was not) and return its exit code and output."""
    job = _jobs.get(name)
    if job is None:
        start(name, JOBS[name])
        job = _jobs[name]
    output, _ = job.communicate(timeout=timeout)
    return job.returncode, output


def stop_all() -> None:
    """End every job still running (the session is over)."""
    for job in _jobs.values():
        if job.poll() is None:
            job.kill()
            job.communicate()


def numba_wanted() -> bool:
    """True when the compiled kernels would be used (numba installed and not switched off)."""
    if os.environ.get("XLASHAPES_NO_NUMBA", "").strip() not in ("", "0"):
        return False
    try:
        import importlib.util

        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


def warm_up_env() -> dict[str, str]:
    """The warm-up's settings: where the shipped machine code runs on this host, only the cases whose kernels
    ``test_physical_aot`` compiles itself (``kernel_worker.COMPILED``), into numba's cache alone (no kept objects:
    the tests, and later processes on this cache, run the shipped code, not code compiled here); else every case."""
    from xlashapes.physical import _aot, _prebuilt

    if _prebuilt.archive() is None:
        return {}
    import kernel_worker

    return {_prebuilt.NO_PREBUILT_VARIABLE: "1", _aot.NO_AOT_VARIABLE: "1",
            "XLASHAPES_WORKER_CASES": "|".join(kernel_worker.COMPILED)}


JOBS = {
    "mypy": ["-m", "mypy"],
    "kernels": [str(ROOT / "tests" / "kernel_worker.py")],
}
