"""XLA's shape parser/printer answering many texts per round trip (the worker of xla_oracle, batched).

One request carries a list of shape texts; the worker answers each on its own line as soon as it has it, so when
XLA aborts the process on one text, the answers before it are kept, that text is marked ``crash`` and the rest
go to a new worker. On a busy machine this saves one process switch per text.
"""

from __future__ import annotations

import atexit
import json
from typing import Any

from xla_oracle import WORKER, WorkerProcess, available

CRASH: dict[str, Any] = {"ok": False, "crash": True, "error": "XLA aborted the process"}


class BatchOracle(WorkerProcess):
    """XLA's verdicts on many shape texts per round trip."""

    def __init__(self) -> None:
        super().__init__(WORKER)

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
