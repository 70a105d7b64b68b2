"""XLA itself as a test oracle: its HLO parser/printer in a worker process that may abort safely.

XLA's parser aborts the whole process on some inputs (``T(2,-1)``, ``L(0)``), so every question goes to a
worker subprocess; when the worker dies, the answer is ``"crash"`` and a new worker is started.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
from typing import Any

WORKER = r"""
import json, sys, os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from jaxlib import _hlo
def shape(text):
    module = "HloModule m\nENTRY e {\n  ROOT p = " + text + "\n  parameter(0)\n}\n"
    try:
        out = _hlo.hlo_module_from_text(module).to_string()
    except Exception as err:
        return {"ok": False, "error": str(err)}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("ROOT %p = "):
            return {"ok": True, "text": line[len("ROOT %p = "):-len(" parameter(0)")]}
    return {"ok": False, "error": "no ROOT line in " + out}
def module(text):
    try:
        return {"ok": True, "text": _hlo.hlo_module_from_text(text).to_string()}
    except Exception as err:
        return {"ok": False, "error": str(err)}
for line in sys.stdin:
    request = json.loads(line)
    if "shapes" in request:  # a batch: one answer line per text
        for text in request["shapes"]:
            sys.stdout.write(json.dumps(shape(text)) + "\n")
            sys.stdout.flush()
        continue
    answer = shape(request["shape"]) if "shape" in request else module(request["module"])
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"""


def available() -> bool:
    """True when jaxlib (XLA) can be imported in this environment."""
    try:
        import jaxlib._hlo  # noqa: F401
    except Exception:
        return False
    return True


class WorkerProcess:
    """A long-lived Python worker running ``script`` (JSON request per line in, JSON answer per line out).

    When XLA aborts the worker, the answer is {"ok": False, "crash": True} and the next request starts a new one.
    """

    def __init__(self, script: str) -> None:
        self._script = script
        self._process: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", self._script],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        return self._process

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            process.wait()
            self._process = None
            return {"ok": False, "crash": True, "error": "XLA aborted the process"}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()


class Oracle(WorkerProcess):
    """XLA's HLO parser and printer in a worker process."""

    def __init__(self) -> None:
        super().__init__(WORKER)

    def print_shape(self, text: str) -> dict[str, Any]:
        """XLA's verdict on shape ``text``: {"ok": True, "text": printed} or {"ok": False, "error"/"crash"}."""
        return self.ask({"shape": text})

    def parse_module(self, text: str) -> dict[str, Any]:
        """XLA's parse + print of a whole HLO module."""
        return self.ask({"module": text})


_ORACLE: Oracle | None = None


def oracle() -> Oracle:
    """The shared oracle of this test session."""
    global _ORACLE
    if _ORACLE is None:
        _ORACLE = Oracle()
        atexit.register(_ORACLE.close)
    return _ORACLE
