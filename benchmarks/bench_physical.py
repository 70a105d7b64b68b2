"""Time to_physical/from_physical on 64 MiB arrays against np.copyto of the same bytes (run by hand).

    /work/venv/bin/python benchmarks/bench_physical.py [--repeat R] [--only SUBSTRING] [--threads N]

Every conversion writes into a preallocated ``out``; the memcpy baseline copies the logical array's bytes into a
preallocated array, timed in the same rounds (rounds interleave all runs so they share any noise). Ratios are
time / memcpy time: 1.0 is memcpy speed. Each case runs twice, once on the NumPy path (``XLASHAPES_NO_NUMBA=1``)
and once on the compiled numba kernels (skipped when numba is not installed); both are single-threaded, as
``np.copyto`` is. The first numba call compiles (cached on disk afterwards) and is not timed. A last row per case
(``xN``) runs the kernels on N threads (``xlashapes.physical.THREADS``; ``--threads 1`` leaves it out): still
divided by the single-threaded memcpy.

The ``1MiB x`` column is the same memcpy done in 1 MiB pieces: one big memcpy uses non-temporal stores (no
read-for-ownership of the destination), which no blocked or strided copy with plain stores gets; the numba kernels
use non-temporal stores themselves.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from collections.abc import Callable
from functools import partial

import numpy as np

import xlashapes as xs
from _timing import best_times
from xlashapes import physical
from xlashapes.physical import from_physical, to_physical

CASES = (
    ("f32 T(8,128)", "f32[4096,4096]{1,0:T(8,128)}"),
    ("bf16 T(8,128)(2,1)", "bf16[4096,8192]{1,0:T(8,128)(2,1)}"),
    ("s8 T(8,128)(4,1)", "s8[8192,8192]{1,0:T(8,128)(4,1)}"),
    ("f32 {0,1} transpose", "f32[4096,4096]{0,1}"),
    ("s4 E(4) packing", "s4[8192,8192]{1,0:E(4)}"),
)
NO_NUMBA = "XLASHAPES_NO_NUMBA"




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


def on_path(threads: int, run: Callable[[], object]) -> None:
    """Run ``run`` on the NumPy path (``threads`` 0) or on the numba kernels with ``threads`` threads."""
    saved, saved_threads = os.environ.get(NO_NUMBA), physical.THREADS
    os.environ[NO_NUMBA] = "0" if threads else "1"
    physical.THREADS = max(1, threads)
    try:
        run()
    finally:
        physical.THREADS = saved_threads
        if saved is None:
            del os.environ[NO_NUMBA]
        else:
            os.environ[NO_NUMBA] = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    have_numba = importlib.util.find_spec("numba") is not None and os.environ.get(NO_NUMBA, "") in ("", "0")
    paths = ([0, 1] + ([args.threads] if args.threads > 1 else [])) if have_numba else [0]
    rng = np.random.default_rng(0)
    print(
        f"{'layout':20} {'shape':36} {'MiB':>4} {'memcpy ms':>9} {'1MiB x':>6} {'path':>5} "
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
        runs: list[Callable[[], object]] = [
            partial(np.copyto, copy_dst, copy_src), partial(copy_in_pieces, copy_dst, copy_src)
        ]
        expected = None
        for threads in paths:
            for _ in range(2):  # compile and warm up
                on_path(threads, partial(to_physical, x, shape, out=buffer))
                on_path(threads, partial(from_physical, buffer, shape, out=back))
            if not np.array_equal(back.view(np.uint8), x.view(np.uint8)):
                raise SystemExit(f"{name}: round trip is not bit-exact")
            if expected is None:
                expected = buffer.copy()
            elif not np.array_equal(buffer, expected):
                raise SystemExit(f"{name}: the numba kernels and the NumPy path give different bytes")
            runs += [
                partial(on_path, threads, partial(to_physical, x, shape, out=buffer)),
                partial(on_path, threads, partial(from_physical, buffer, shape, out=back)),
            ]
        times = best_times(runs, args.repeat)
        memcpy, pieces = times[:2]
        for k, threads in enumerate(paths):
            to_time, from_time = times[2 + 2 * k : 4 + 2 * k]
            head = f"{name:20} {text:36} {x.nbytes / 2**20:4.0f} {memcpy * 1e3:9.2f} {pieces / memcpy:6.2f}"
            path = {0: "numpy", 1: "numba"}.get(threads, f"x{threads}")
            print(
                f"{head if k == 0 else ' ' * len(head)} {path:>5} "
                f"{to_time * 1e3:7.2f} {to_time / memcpy:5.2f} {from_time * 1e3:7.2f} {from_time / memcpy:6.2f}"
            )


if __name__ == "__main__":
    main()
