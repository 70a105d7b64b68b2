"""Timing shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def best_times(runs: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """The fastest of ``repeat`` rounds for each run, in seconds; rounds interleave the runs to share any noise."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best
