"""Benchmark: parse a large optimized HLO dump with xlashapes and with XLA's own C++ parser (run by hand).

    python benchmarks/bench_hlo.py [--layers N] [--repeat R] [--regenerate]

Parse times stop the clock before the parsed module is freed (for both parsers); a second line includes the free.
The dump comes from the gradient of a deep transformer-like JAX model (layers unrolled), compiled for CPU. It is
cached in ``tests/corpus/deep_model.large.opt.hlo`` (git-ignored: ``tests/corpus/*.large*``) and regenerated when
missing or smaller than 8 MB.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CACHE = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "deep_model.large.opt.hlo"
MIN_BYTES = 8_000_000


def make_dump(layers: int) -> str:
    """Compile the gradient of a ``layers``-deep model and return the optimized HLO text."""
    import jax
    import jax.numpy as jnp

    def block(x: Any, p: dict[str, Any]) -> Any:
        h = (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-6) * p["g"]
        q, k, v = (jnp.einsum("td,dhk->htk", h, p[name]) for name in ("q", "k", "v"))
        a = jax.nn.softmax(jnp.einsum("htk,hsk->hts", q, k) / 8.0, axis=-1)
        x = x + jnp.einsum("hts,hsk,hkd->td", a, v, p["o"])
        m = jax.nn.gelu(x.astype(jnp.bfloat16) @ p["w1"].astype(jnp.bfloat16)).astype(jnp.float32)
        return x + m @ p["w2"]

    def loss(params: list[dict[str, Any]], x: Any) -> Any:
        for p in params:
            x = block(x, p)
        return jnp.mean(x**2)

    d, heads, hidden = 64, 4, 128
    key = jax.random.key(0)
    params = [{"g": jnp.ones((d,)), "q": jax.random.normal(key, (d, heads, 16)),
               "k": jax.random.normal(key, (d, heads, 16)), "v": jax.random.normal(key, (d, heads, 16)),
               "o": jax.random.normal(key, (heads, 16, d)), "w1": jax.random.normal(key, (d, hidden)),
               "w2": jax.random.normal(key, (hidden, d))} for _ in range(layers)]
    step = jax.jit(jax.value_and_grad(loss))
    return str(step.lower(params, jnp.ones((32, d))).compile().as_text())


def dump(layers: int, regenerate: bool) -> str:
    """The cached dump, generated first when missing, too small or asked for."""
    if regenerate or not CACHE.exists() or CACHE.stat().st_size < MIN_BYTES:
        started = time.perf_counter()
        text = make_dump(layers)
        CACHE.write_text(text)
        print(f"generated {CACHE.name}: {len(text) / 1e6:.1f} MB in {time.perf_counter() - started:.0f} s")
    return CACHE.read_text()


def timed(parse: Callable[[str], Any], text: str) -> float:
    """Seconds one parse of ``text`` takes (the result is freed after the clock stops)."""
    gc.collect()
    started = time.perf_counter()
    result = parse(text)
    seconds = time.perf_counter() - started
    del result
    return seconds


def timed_with_free(parse: Callable[[str], Any], text: str) -> float:
    """Seconds one parse of ``text`` and freeing its result take."""
    gc.collect()
    started = time.perf_counter()
    parse(text)
    return time.perf_counter() - started


def best_times(parsers: list[Callable[[str], Any]], text: str, repeat: int,
               timer: Callable[[Callable[[str], Any], str], float] = timed) -> list[float]:
    """The best of ``repeat`` runs of each parser, interleaved so that machine load hits both alike."""
    best = [math.inf] * len(parsers)
    for _ in range(repeat):
        for i, parse in enumerate(parsers):
            best[i] = min(best[i], timer(parse, text))
    return best


def main() -> None:
    """Parse the dump with both parsers and print MB/s and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=160, help="model depth when generating the dump")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per parser (the best counts)")
    parser.add_argument("--regenerate", action="store_true", help="rebuild the cached dump")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from jaxlib import _hlo

    from xlashapes.hlo import parse_hlo_module

    text = dump(args.layers, args.regenerate)
    megabytes = len(text.encode()) / 1e6
    module = parse_hlo_module(text)
    count = sum(len(c.instructions) for c in module.computations)
    print(f"{CACHE.name}: {megabytes:.1f} MB, {len(module.computations)} computations, {count} instructions")
    ours, xla = best_times([parse_hlo_module, _hlo.hlo_module_from_text], text, args.repeat)
    print(f"xlashapes.hlo.parse_hlo_module     {megabytes / ours:6.1f} MB/s  ({ours * 1e3:.0f} ms)")
    print(f"jaxlib._hlo.hlo_module_from_text   {megabytes / xla:6.1f} MB/s  ({xla * 1e3:.0f} ms)")
    print(f"ratio (xlashapes speed / XLA speed) {xla / ours:5.2f}")
    ours_free, xla_free = best_times([parse_hlo_module, _hlo.hlo_module_from_text], text, max(1, args.repeat // 2),
                                     timed_with_free)
    print(f"parse and free the result: xlashapes {ours_free * 1e3:.0f} ms, XLA {xla_free * 1e3:.0f} ms, "
          f"ratio {xla_free / ours_free:5.2f}")
    # problems() is linear: the time per MB on a quarter of the dump and on the whole dump are alike.
    quarter = text[: text.index("\n}\n", len(text) // 4) + 3]
    rates = []
    for part in (quarter, text):
        parsed = parse_hlo_module(part)
        runs = max(1, args.repeat // 2)
        seconds = min(timed(lambda _text, parsed=parsed: parsed.problems(), part) for _ in range(runs))
        size = len(part.encode()) / 1e6
        rates.append(size / seconds)
        print(f"problems() on {size:5.1f} MB          {rates[-1]:6.1f} MB/s  ({seconds * 1e3:.0f} ms)")
    print(f"ratio (whole dump rate / quarter rate) {rates[1] / rates[0]:5.2f}  (1.00 is linear)")


if __name__ == "__main__":
    main()
