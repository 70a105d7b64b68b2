"""Benchmark: the peak-memory analysis of a large HLO dump against the time to parse it (run by hand).

    python benchmarks/bench_memory.py [--megabytes 100] [--repeat 1] [--module NAME]

The dump is built here, not stored: corpus module ``NAME`` (tests/data/memory/NAME.hlo) is repeated inside one
entry computation (every instruction and called computation renamed per copy, every copy reading the same entry
parameters, the entry returning a tuple of every copy's result) until the text reaches the wanted size. The
claim measured: ``memory_report`` takes less than 2x the parse time, and its memory grows linearly (peak
traced memory per MB of text is printed at two sizes).
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from xlashapes.hlo import parse_hlo_module  # noqa: E402
from xlashapes.memory import memory_report  # noqa: E402

DATA = HERE.parent / "tests" / "data" / "memory"
_NAME = re.compile(r"%([A-Za-z_][A-Za-z0-9_.\-]*)")


def scaled_module(name: str, megabytes: float) -> str:
    """Corpus module ``name`` repeated in one entry computation until the text has ``megabytes`` MB."""
    text = (DATA / f"{name}.hlo").read_text()
    _, _, body = text.partition("\n\n")
    blocks = [b for b in body.split("\n\n") if b.strip()]
    tables = [b for b in blocks if not b.lstrip().startswith(("%", "ENTRY"))]
    computations = [b for b in blocks if b.lstrip().startswith("%")]
    entry = next(b for b in blocks if b.lstrip().startswith("ENTRY"))
    entry_lines = entry.strip().splitlines()
    signature, instructions = entry_lines[0], entry_lines[1:-1]
    params = [line for line in instructions if " parameter(" in line]
    param_names = {m.group(1) for line in params for m in [_NAME.search(line)] if m}
    others = [line for line in instructions if " parameter(" not in line]
    copies = max(1, int(megabytes * 1e6 / max(len(entry) + sum(map(len, computations)), 1)))
    out = [f"HloModule scaled_{name}, is_scheduled=true", *tables]
    roots = []
    for k in range(copies):
        def rename(match: re.Match[str], k: int = k) -> str:
            return match.group(0) if match.group(1) in param_names else f"%{match.group(1)}.c{k}"
        out.extend(_NAME.sub(rename, c) for c in computations)
    body_lines = []
    for k in range(copies):
        for line in others:
            renamed = _NAME.sub(lambda m, k=k: m.group(0) if m.group(1) in param_names else f"%{m.group(1)}.c{k}",
                                line)
            if renamed.lstrip().startswith("ROOT "):
                renamed = renamed.replace("ROOT ", "", 1)
                roots.append(_NAME.search(renamed).group(0))  # type: ignore[union-attr]
            body_lines.append(renamed)
    root_shape = str(parse_hlo_module(text).entry.root.shape)
    result = "(" + ", ".join([root_shape] * copies) + ")"
    signature = signature.split(") -> ")[0] + f") -> {result} {{"
    tail = f"  ROOT %all_copies = {result} tuple({', '.join(roots)})"
    out.append("\n".join([signature, *params, *body_lines, tail, "}"]))
    return "\n\n".join(out) + "\n"


def measure(text: str) -> tuple[float, float, int, int]:
    """(parse seconds, analysis seconds, peak traced bytes of the analysis, instructions)."""
    gc.collect()
    start = time.perf_counter()
    module = parse_hlo_module(text)
    parsed = time.perf_counter()
    report = memory_report(module)
    analysed = time.perf_counter()
    count = sum(len(c.instructions) for c in module.computations)
    del report
    gc.collect()
    tracemalloc.start()
    memory_report(module)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return parsed - start, analysed - parsed, peak, count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=100.0)
    parser.add_argument("--module", default="transformer_train")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for size in (args.megabytes / 4, args.megabytes):
        text = scaled_module(args.module, size)
        best = min((measure(text) for _ in range(args.repeat)), key=lambda r: r[0] + r[1])
        parse, analysis, peak, count = best
        mb = len(text) / 1e6
        print(f"{mb:8.1f} MB, {count:,} instructions: parse {parse:7.2f} s, analysis {analysis:7.2f} s "
              f"(ratio {analysis / parse:4.2f}x), analysis memory {peak / 2**20:8.1f} MiB "
              f"({peak / 2**20 / mb:5.2f} MiB per MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
