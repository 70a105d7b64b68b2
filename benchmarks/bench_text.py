"""Shapes parsed + printed per second on a realistic mix, against XLA's own parser when jax is installed.

Run by hand: ``python benchmarks/bench_text.py``. Prints shapes/s for xlashapes (uncached and through the
parse cache that HLO dumps hit, since they repeat shapes) and for XLA's C++ parser reading the same shapes as
parameters of one module, and the ratios.
"""

from __future__ import annotations

import random
import re
import time

import xlashapes as xs
from xlashapes.text import careful_parse_shape

MIX = [
    "f32[]", "s32[]", "pred[]", "f32[128]{0}", "bf16[8,128]{1,0}", "f32[1024,1024]{1,0}",
    "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}", "bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}",
    "f32[256,512]{1,0:T(8,128)}", "s8[64,1024]{1,0:T(8,128)(4,1)}", "s32[2048]{0:T(1024)}",
    "bf16[8192]{0:T(1024)(128)(2,1)}", "f32[2,3,4,5]{3,2,1,0}", "f32[16,16]{0,1}", "u32[]",
    "(f32[2]{0}, s32[])", "(bf16[8,128]{1,0:T(8,128)(2,1)}, f32[8,128]{1,0:T(8,128)}, s32[], u32[])",
    "f32[<=128,64]{1,0}", "s4[128]{0:E(4)}", "f8e4m3fn[512,512]{1,0:T(8,128)(4,1)}", "pred[1024]{0:T(1024)}",
]


def workload(n: int, seed: int = 0) -> list[str]:
    """n shape texts drawn from the mix, each made unique by varying one dimension (defeats caching)."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        text = rng.choice(MIX)
        size = i % 4093 + 1
        texts.append(re.sub(r"\[(<=)?\d+", lambda m, size=size: f"[{m.group(1) or ''}{size}", text, count=1))
    return texts


def valid(texts: list[str]) -> list[str]:
    out = []
    for text in texts:
        try:
            xs.parse_shape(text)
            out.append(text)
        except xs.XlaShapesError:
            pass
    return out


def time_ours(texts: list[str], mode: str) -> float:
    """Seconds to parse and print every text: "careful" (tokenizer only), "uncached" or "cached"."""
    parse = careful_parse_shape if mode == "careful" else xs.parse_shape
    if mode == "uncached":
        xs.parse_shape.cache_clear()
    start = time.perf_counter()
    for text in texts:
        str(parse(text))
    return time.perf_counter() - start


def time_xla(texts: list[str]) -> float | None:
    try:
        from jaxlib import _hlo
    except ImportError:
        return None
    lines = [f"  p{i} = {text} parameter({i})" for i, text in enumerate(texts)]
    module = "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n  ROOT t = () tuple()\n}\n"
    start = time.perf_counter()
    _hlo.hlo_module_from_text(module).to_string()
    return time.perf_counter() - start


def main() -> None:
    texts = valid(workload(50_000))
    n = len(texts)
    careful = min(time_ours(texts, "careful") for _ in range(3))
    uncached = min(time_ours(texts, "uncached") for _ in range(3))
    time_ours(texts, "cached")
    cached = min(time_ours(texts, "cached") for _ in range(3))
    print(f"shapes: {n} from a mix of {len(MIX)} realistic forms")
    print(f"xlashapes careful parser only:   {n / careful:12,.0f} shapes/s")
    print(f"xlashapes parse+print, uncached: {n / uncached:12,.0f} shapes/s")
    print(f"xlashapes parse+print, cached:   {n / cached:12,.0f} shapes/s")
    xla = time_xla(texts)
    if xla is None:
        print("XLA: jaxlib not installed (pip install jax) — no baseline")
        return
    print(f"XLA C++ parse+print (as a module of {n} parameters): {n / xla:12,.0f} shapes/s")
    print(f"ratio ours/XLA: uncached {xla / uncached:.2f}x, cached {xla / cached:.2f}x (>1 means faster than XLA)")


if __name__ == "__main__":
    main()
