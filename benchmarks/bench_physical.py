"""Time to_physical/from_physical on 64 MiB arrays against np.copyto of the same bytes (run by hand).

    /work/venv/bin/python benchmarks/bench_physical.py [--repeat R] [--only SUBSTRING]

Every conversion writes into a preallocated ``out``; the memcpy baseline copies the logical array's bytes into a
preallocated array, timed in the same rounds (rounds interleave all runs so they share any noise). Ratios are
time / memcpy time: 1.0 is memcpy speed.

The ``1MiB x`` column is the same memcpy done in 1 MiB pieces: one big memcpy uses non-temporal stores (no
read-for-ownership of the destination), which no blocked or strided copy gets, so that column is the floor any
cache-blocked NumPy copy can reach on this machine.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

import xlashapes as xs
from xlashapes.physical import from_physical, to_physical

CASES = (
    ("f32 T(8,128)", "f32[4096,4096]{1,0:T(8,128)}"),
    ("bf16 T(8,128)(2,1)", "bf16[4096,8192]{1,0:T(8,128)(2,1)}"),
    ("s8 T(8,128)(4,1)", "s8[8192,8192]{1,0:T(8,128)(4,1)}"),
    ("f32 {0,1} transpose", "f32[4096,4096]{0,1}"),
    ("s4 E(4) packing", "s4[8192,8192]{1,0:E(4)}"),
)


def best_times(runs: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """The fastest of ``repeat`` rounds for each run, in seconds."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def random_array(shape: xs.Shape, rng: np.random.Generator) -> np.ndarray:
    """Random bits of the shape's element type (every bit pattern, NaNs included)."""
    dtype = shape.element_type.numpy_dtype
    raw = rng.integers(0, 256, size=shape.element_count() * dtype.itemsize, dtype=np.uint8)
    if shape.element_type.bits < 8:
        raw &= (1 << shape.element_type.bits) - 1  # canonical sub-byte storage: only the value bits
    return raw.view(dtype).reshape(shape.dimensions)


def copy_in_pieces(dst: np.ndarray, src: np.ndarray, piece: int = 1 << 20) -> None:
    """memcpy in 1 MiB pieces (each too small for the non-temporal stores of one big memcpy)."""
    for start in range(0, src.size, piece):
        np.copyto(dst[start : start + piece], src[start : start + piece])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(
        f"{'layout':20} {'shape':36} {'MiB':>4} {'memcpy ms':>9} {'1MiB x':>6} "
        f"{'to ms':>7} {'to x':>5} {'from ms':>7} {'from x':>6}"
    )
    for name, text in CASES:
        if args.only not in name:
            continue
        shape = xs.parse_shape(text)
        x = random_array(shape, rng)
        buffer = np.empty(shape.byte_size(), np.uint8)
        back = np.empty_like(x)
        copy_src = x.reshape(-1).view(np.uint8)
        copy_dst = np.empty_like(copy_src)
        to_physical(x, shape, out=buffer)
        from_physical(buffer, shape, out=back)
        if not np.array_equal(back.view(np.uint8), x.view(np.uint8)):
            raise SystemExit(f"{name}: round trip is not bit-exact")
        memcpy, pieces, to_time, from_time = best_times(
            [
                partial(np.copyto, copy_dst, copy_src),
                partial(copy_in_pieces, copy_dst, copy_src),
                partial(to_physical, x, shape, out=buffer),
                partial(from_physical, buffer, shape, out=back),
            ],
            args.repeat,
        )
        print(
            f"{name:20} {text:36} {x.nbytes / 2**20:4.0f} {memcpy * 1e3:9.2f} {pieces / memcpy:6.2f} "
            f"{to_time * 1e3:7.2f} {to_time / memcpy:5.2f} {from_time * 1e3:7.2f} {from_time / memcpy:6.2f}"
        )


if __name__ == "__main__":
    main()
