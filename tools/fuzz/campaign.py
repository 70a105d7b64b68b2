"""The long bad-input campaign: every public entry point, in one worker process with time and memory limits.

    nice -n 19 python tools/fuzz/campaign.py --minutes 60 --out /tmp/fuzz      # one core, one worker at a time

The parent hands the worker batches (target, seed, first input number, count); the worker regenerates each input
from that key (``generators.input_for``), so a finding is reproduced by its key alone. Per input the worker
enforces a time limit (an interval timer) and an address-space limit (RLIMIT_AS); the parent kills a worker whose
heartbeat stops (a hang inside C code, e.g. a regular expression) or that dies, and records the input it was on.
Findings: an exception other than ParseError/ShapeError, an input slower than 100 ms per KB (confirmed by a
second run), a peak-RSS jump of more than 200 MB on one input, or resident memory that keeps growing.
``findings.jsonl`` and ``summary.json`` go to ``--out``; ``--replay TARGET SEED N`` re-runs one input.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import resource
import signal
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "src"))

MEMORY_LIMIT = 3 * 2**30  # address space of the worker
HANG_SECONDS = 20.0  # no heartbeat for this long: the worker is killed and the input recorded as a hang
RSS_JUMP = 200 * 2**20


class InputTimeout(Exception):
    """Raised by the interval timer inside a slow input."""


def _alarm(signum: int, frame: Any) -> None:
    raise InputTimeout()


def size_of(value: Any) -> int:
    """The size in bytes that the time budget scales with."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (tuple, list)):
        return sum(size_of(v) for v in value)
    return 16


def budget(value: Any, target: str = "") -> float:
    """Seconds an input may take: 100 ms per KB, at least 100 ms (more for whole commands, generators.FLOOR)."""
    import generators

    return max(0.1 * max(1.0, size_of(value) / 1024), generators.FLOOR.get(target, 0.0))


def where(error: BaseException) -> str:
    """The innermost frame inside xlashapes (else the innermost frame) as ``file:line``."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "xlashapes" in f.filename and "tools/fuzz" not in f.filename] or frames
    last = ours[-1] if ours else None
    return f"{Path(last.filename).name}:{last.lineno}" if last else "?"


def rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_one(run: Any, value: Any, limit: float) -> tuple[str | None, float]:
    """Run one input; returns (what went wrong or None, CPU seconds: other processes' load does not count)."""
    import xlashapes as xs

    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.process_time()
    try:
        run(value)
        problem = None
    except xs.XlaShapesError:
        problem = None
    except InputTimeout:
        problem = "timeout"
    except RecursionError as error:
        problem = f"RecursionError@{where(error)}"
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        problem = f"{type(error).__name__}@{where(error)}: {str(error)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return problem, time.process_time() - start


def worker(beat_path: str) -> None:
    """Read batches from stdin, write findings and batch ends to stdout as JSON lines."""
    import generators

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(5000)
    beat_file = open(beat_path, "r+b")
    beat = mmap.mmap(beat_file.fileno(), 16)
    out = sys.stdout
    sys.stdout = open(os.devnull, "w")
    base_rss: int | None = None
    for line in sys.stdin:
        job = json.loads(line)
        target, seed, first, count = job["target"], job["seed"], job["first"], job["count"]
        run = generators.TARGETS[target][1]
        for number in range(first, first + count):
            beat[:16] = struct.pack("<qd", number, time.time())
            try:
                value = generators.input_for(target, seed, number)
            except Exception as error:
                out.write(json.dumps({"generator_error": f"{target}/{number}: {error!r}"}) + "\n")
                continue
            before = peak()
            limit = min(max(2.0, 20 * budget(value, target)), 10.0)
            problem, seconds = run_one(run, value, limit)
            if problem is None and seconds > budget(value, target):
                _, seconds2 = run_one(run, value, limit)  # confirm: the machine is shared
                if min(seconds, seconds2) > budget(value, target):
                    problem = f"slow: {min(seconds, seconds2):.3f} s for {size_of(value)} bytes"
            if problem is None and peak() - before > RSS_JUMP:
                problem = f"memory: peak RSS +{(peak() - before) >> 20} MB"
            if problem is not None:
                out.write(json.dumps({"target": target, "seed": seed, "number": number, "problem": problem,
                                      "input": repr(value)[:2000], "size": size_of(value)}) + "\n")
                out.flush()
        now = rss()
        base_rss = now if base_rss is None else base_rss
        out.write(json.dumps({"done": count, "rss": now, "growth": now - base_rss}) + "\n")
        out.flush()


class Worker:
    """One worker process and its heartbeat file."""

    def __init__(self, out: Path) -> None:
        self.beat_path = out / "heartbeat"
        self.beat_path.write_bytes(b"\0" * 16)
        self.process = subprocess.Popen([sys.executable, __file__, "--worker", str(self.beat_path)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        os.set_blocking(self.process.stdout.fileno(), False)  # type: ignore[union-attr]
        self.pending = ""

    def heartbeat(self) -> tuple[int, float]:
        number, stamp = struct.unpack("<qd", self.beat_path.read_bytes()[:16])
        return number, stamp

    def lines(self) -> list[str]:
        try:
            chunk = self.process.stdout.read()  # type: ignore[union-attr]
        except (BlockingIOError, TypeError):
            chunk = None
        if chunk:
            self.pending += chunk
        *done, self.pending = self.pending.split("\n")
        return done

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def campaign(minutes: float, out: Path, seed: int, batch: int, targets: list[str]) -> None:
    import generators

    out.mkdir(parents=True, exist_ok=True)
    findings = open(out / "findings.jsonl", "a")
    counts = {t: 0 for t in targets}
    problems: dict[str, int] = {}
    deadline = time.time() + minutes * 60
    started = time.time()
    worker_ = Worker(out)
    next_number = {t: 0 for t in targets}
    max_growth = 0

    def record(entry: dict[str, Any]) -> None:
        findings.write(json.dumps(entry) + "\n")
        findings.flush()
        key = f"{entry['target']} {entry['problem'].split(':')[0]}"
        problems[key] = problems.get(key, 0) + 1

    while time.time() < deadline:
        for target in targets:
            if time.time() >= deadline:
                break
            weight = generators.TARGETS[target][2]
            count = batch * weight
            first = next_number[target]
            next_number[target] += count
            worker_.process.stdin.write(json.dumps({"target": target, "seed": seed, "first": first,  # type: ignore
                                                    "count": count}) + "\n")
            worker_.process.stdin.flush()  # type: ignore[union-attr]
            finished = False
            while not finished:
                time.sleep(0.05)
                for line in worker_.lines():
                    entry = json.loads(line)
                    if "done" in entry:
                        finished = True
                        counts[target] += entry["done"]
                        max_growth = max(max_growth, entry["growth"])
                    elif "generator_error" in entry:
                        print("generator error:", entry["generator_error"], file=sys.stderr)
                    else:
                        record(entry)
                if finished:
                    break
                number, stamp = worker_.heartbeat()
                dead = worker_.process.poll() is not None
                if dead or (stamp and time.time() - stamp > HANG_SECONDS):
                    what = f"crash (exit {worker_.process.returncode})" if dead else f"hang > {HANG_SECONDS:.0f} s"
                    value = generators.input_for(target, seed, number)
                    record({"target": target, "seed": seed, "number": number, "problem": what,
                            "input": repr(value)[:2000], "size": size_of(value)})
                    worker_.kill()
                    counts[target] += number - first + 1
                    worker_ = Worker(out)
                    rest = first + count - number - 1
                    if rest > 0:
                        worker_.process.stdin.write(json.dumps({"target": target, "seed": seed,  # type: ignore
                                                                "first": number + 1, "count": rest}) + "\n")
                        worker_.process.stdin.flush()  # type: ignore[union-attr]
                    else:
                        finished = True
        summary = {"seed": seed, "seconds": round(time.time() - started), "inputs": sum(counts.values()),
                   "by_target": counts, "findings": problems, "max_rss_growth_mb": max_growth >> 20}
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    worker_.kill()


def replay(target: str, seed: int, number: int) -> None:
    import generators

    value = generators.input_for(target, seed, number)
    print(repr(value)[:4000])
    run = generators.TARGETS[target][1]
    start = time.perf_counter()
    run(value)
    print(f"ok in {time.perf_counter() - start:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", metavar="HEARTBEAT", help=argparse.SUPPRESS)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/xlashapes-fuzz"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=50, help="inputs per unit of target weight per round")
    parser.add_argument("--targets", default="", help="comma-separated targets (default: all)")
    parser.add_argument("--replay", nargs=3, metavar=("TARGET", "SEED", "N"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
    elif args.replay:
        replay(args.replay[0], int(args.replay[1]), int(args.replay[2]))
    else:
        import generators

        targets = args.targets.split(",") if args.targets else list(generators.TARGETS)
        campaign(args.minutes, args.out, args.seed, args.batch, targets)


if __name__ == "__main__":
    main()
