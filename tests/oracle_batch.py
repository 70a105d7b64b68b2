"""XLA's shape parser/printer answering many texts per round trip (the worker of xla_oracle, batched).

One request carries a list of shape texts; the worker answers each on its own line as soon as it has it, so when
XLA aborts the process on one text, the answers before it are kept, that text is marked ``crash`` and the rest
go to a new worker. On a busy machine this saves one process switch per text.
"""

from __future__ import annotations

import atexit
import json
from typing import Any

from xla_oracle import WorkerProcess, available

_BATCH_WORKER = r"""
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
for line in sys.stdin:
    for text in json.loads(line)["shapes"]:
        sys.stdout.write(json.dumps(shape(text)) + "\n")
        sys.stdout.flush()
"""

CRASH: dict[str, Any] = {"ok": False, "crash": True, "error": "XLA aborted the process"}


class BatchOracle(WorkerProcess):
    """XLA's verdicts on many shape texts per round trip."""

    def __init__(self) -> None:
        super().__init__(_BATCH_WORKER)

    def print_shapes(self, texts: list[str]) -> list[dict[str, Any]]:
        """XLA's verdict on each text: {"ok": True, "text": printed} or {"ok": False, "error"/"crash"}."""
        answers: list[dict[str, Any]] = []
        while len(answers) < len(texts):
            pending = texts[len(answers):]
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(json.dumps({"shapes": pending}) + "\n")
                process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
            for _ in pending:
                line = process.stdout.readline()
                if not line:  # XLA aborted on this text: record it, restart with the rest
                    process.wait()
                    self._process = None
                    answers.append(dict(CRASH))
                    break
                answers.append(json.loads(line))
        return answers


_BATCH: BatchOracle | None = None


def batch_oracle() -> BatchOracle | None:
    """The shared batch oracle of this session, or None without jaxlib."""
    global _BATCH
    if not available():
        return None
    if _BATCH is None:
        _BATCH = BatchOracle()
        atexit.register(_BATCH.close)
    return _BATCH
