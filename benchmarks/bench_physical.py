"""to_physical / from_physical / relayout against np.copyto of the same bytes: the whole matrix (run by hand).

    python benchmarks/bench_physical.py [--quick] [--sizes 64,512] [--threads 1,2] [--only TEXT] [--cpu]
                                        [--unaligned] [--startup] [--cold] [--rss] [--huge DIR]
                                        [--survey N [--seed S] [--against-numpy]]

Each row is one layout, one direction, one size and one thread count; the columns are time / memcpy time (1.0 is
memcpy speed) for the NumPy path (``XLASHAPES_NO_NUMBA=1``, single thread) and the compiled path. memcpy is
``np.copyto`` of the same number of bytes between preallocated arrays, timed in the same rounds (rounds
interleave every run so they share the machine's noise). ``--cpu`` times with the thread's CPU clock instead of
the wall clock: on a machine shared with other work this leaves out the time the process waits for a core (not
the time it waits for memory); threaded runs always use the wall clock. Every conversion writes into a
preallocated ``out``, on a 64-byte cache line as the arrays ``to_physical`` / ``from_physical`` allocate are (and
XLA's buffers); ``--unaligned`` puts them 16 bytes past one, where NumPy puts large arrays (streaming stores then
need the rows shifted onto the line grid, which the transposes with short rows cannot do). The first compiled call
compiles (or loads the cache) and is not timed.

``--startup`` times new processes: import + one 4 MiB conversion on the NumPy path, the first compiled use with
an empty kernel cache (cold) and with a filled one (warm); ``--cold`` times each layout's first compiled use
(to and from, 64 MiB, a new process with an empty kernel cache). ``--rss`` runs each case in a new process and prints
its peak RSS above the input array, against the output's size. ``--huge DIR`` streams an 8 GiB array through
``pack_file`` / ``unpack_file`` in DIR (needs 24 GiB of disk) and prints the time and peak RSS of each.
``--survey N`` times N random layouts of every family (rank 2-5, any dim order, every element type and tiling;
seeded by ``--seed``), worst first: the table's layouts were chosen, these were not. ``--against-numpy`` also
checks each one's bytes, both ways, against the NumPy path's (a sweep of seeds 1-29 so found a kernel that wrote past
its scratch).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import ml_dtypes
import numpy as np

import xlashapes as xs
from _timing import best_times
from xlashapes import physical
from xlashapes.physical import _dispatch as dispatch
from xlashapes.physical import from_physical, relayout, to_physical
from xlashapes.physical._slabbed import release

TPU = "TPU tiling (goal <= 1.5x)"
OTHER = "other layout (goal <= 2x)"
# (name, shape text for 64 MiB with {N} for the scaled dim, N at 64 MiB, group); sizes scale the {N} dim
CASES = (
    ("f32 T(8,128)", "f32[{N},4096]{{1,0:T(8,128)}}", 4096, TPU),
    ("bf16 T(8,128)(2,1)", "bf16[{N},8192]{{1,0:T(8,128)(2,1)}}", 4096, TPU),
    ("s8 T(8,128)(4,1)", "s8[{N},8192]{{1,0:T(8,128)(4,1)}}", 8192, TPU),
    ("f8e4m3fn T(8,128)(4,1)", "f8e4m3fn[{N},8192]{{1,0:T(8,128)(4,1)}}", 8192, TPU),
    ("pred T(8,128)(4,1)", "pred[{N},8192]{{1,0:T(8,128)(4,1)}}", 8192, TPU),
    ("s4 E(4) tiled", "s4[{N},8192]{{1,0:T(8,128)(2,1)E(4)}}", 8192, TPU),
    ("u4 E(4) untiled", "u4[{N},8192]{{1,0:E(4)}}", 8192, TPU),
    ("bf16 rank-1 T(1024)(128)(2,1)", "bf16[{N}]{{0:T(1024)(128)(2,1)}}", 33554432, TPU),
    ("f32 T(2,128) (2 rows)", "f32[{N},2,1024]{{2,1,0:T(2,128)}}", 8192, TPU),
    ("f32 T(4,128) (4 rows)", "f32[{N},4,1024]{{2,1,0:T(4,128)}}", 4096, TPU),
    ("f32 {0,1} transpose", "f32[{N},4096]{{0,1}}", 4096, OTHER),
    ("bf16 {0,1} transpose", "bf16[{N},8192]{{0,1}}", 4096, OTHER),
    ("bf16 {0,1} odd sides", "bf16[{N},8191]{{0,1}}", 4095, OTHER),
    ("s8 {0,1} transpose", "s8[{N},8192]{{0,1}}", 8192, OTHER),
    ("u8 {0,1} odd sides", "u8[{N},8191]{{0,1}}", 8194, OTHER),
    ("bf16 rank-3 transpose", "bf16[{N},128,256]{{1,2,0}}", 1024, OTHER),
    ("bf16 batched transposes of 4096 x 2000", "bf16[{N},4096,2000]{{1,2,0}}", 4, OTHER),
    ("f32 rank-6 transpose", "f32[{N},8,8,16,8,16]{{1,3,5,0,2,4}}", 128, OTHER),
    ("u8 3 channels to planes", "u8[{N},224,224,3]{{2,1,3,0}}", 446, OTHER),
    ("u8 12 channels to planes", "u8[{N},224,224,12]{{2,1,3,0}}", 112, OTHER),
    ("u8 96 channels to planes", "u8[{N},224,224,96]{{2,1,3,0}}", 14, OTHER),
    ("u8 minor batch of 100 {0,2,1}", "u8[100,{N},1024]{{0,2,1}}", 656, OTHER),
    ("f32 tiled transpose", "f32[{N},4096]{{0,1:T(8,128)}}", 4096, OTHER),
    ("bf16 tiled transpose (2,1)", "bf16[{N},8192]{{0,1:T(8,128)(2,1)}}", 4096, OTHER),
    ("bf16 tiled transpose (2,1), odd rows", "bf16[{N},8191]{{0,1:T(8,128)(2,1)}}", 4096, OTHER),
    ("bf16 rank-3 reversed {0,1,2}", "bf16[4,{N},2048]{{0,1,2}}", 4096, OTHER),
    ("u8 rank-3 reversed, 48 rows 4 KiB apart", "u8[48,{N},1024]{{0,1,2}}", 1400, OTHER),
    ("f32 partial-rank T(128)", "f32[{N},4096]{{1,0:T(128)}}", 4096, OTHER),
    ("f32 * combined T(2,*,128)", "f32[{N},8,512]{{2,1,0:T(2,*,128)}}", 4096, OTHER),
    ("s16 legacy padding", "s16[{N},8191]", 4096, OTHER),  # padded_dimensions set below
    ("u4 E(4) {0,1} transpose", "u4[{N},16384]{{0,1:E(4)}}", 4096, OTHER),
    ("u2 E(2) packing", "u2[{N},8192]{{1,0:E(2)}}", 8192, OTHER),
    ("s4 E(4) rank-3 permuted (2,1)", "s4[{N},256,512]{{1,0,2:T(8,128)(2,1)E(4)}}", 512, OTHER),
    ("s4 E(4) tiles cut short T(8,128)E(4)", "s4[{N},72,87,210]{{3,2,1,0:T(8,128)E(4)}}", 52, OTHER),
    ("u8 (4,1) tile rows cut short (24 of 32)", "u8[{N},8,24,512]{{3,2,1,0:T(32,128)(4,1)}}", 680, OTHER),
    ("u8 one-row tiles T(1,256) on rows of 500", "u8[{N},256,500]{{2,1,0:T(1,256)}}", 524, OTHER),
    ("s4 one-row tiles T(1,128)E(4) in order", "s4[{N},500,24,256]{{3,2,1,0:T(1,128)E(4)}}", 22, OTHER),
    ("s8 T(8,128)(4,1) on rows of 100", "s8[{N},100]{{1,0:T(8,128)(4,1)}}", 671088, TPU),
    ("bf16 T(8,128) on rows of 1000", "bf16[{N},1000]{{1,0:T(8,128)}}", 33552, TPU),
    ("f32 T(8,128) on rows of 100", "f32[{N},100]{{1,0:T(8,128)}}", 167768, TPU),
    ("pred stacked (4,1) {2,0,3,1}, minor dim of 7", "pred[7,{N},384,7]{{2,0,3,1:T(8,128)(4,1)}}", 3566, OTHER),
    ("bf16 stacked (2,1) {0,2,3,1}, minor dim of 8", "bf16[128,{N},64,8]{{0,2,3,1:T(8,128)(2,1)}}", 512, OTHER),
    ("u8 stacked (4,1) {2,1,3,0}, 3 channels", "u8[{N},96,512,3]{{2,1,3,0:T(8,128)(4,1)}}", 456, OTHER),
    ("f32 stacked {0,1,2}, minor dim of 3", "f32[{N},2048,3]{{0,1,2:T(8,128)}}", 2730, OTHER),
)
RELAYOUTS = (  # (name, source, target, N at 64 MiB)
    ("relayout T(8,128) -> {0,1}", "f32[{N},4096]{{1,0:T(8,128)}}", "f32[{N},4096]{{0,1}}", 4096),
    ("relayout {1,0} -> T(8,128)(2,1)", "bf16[{N},8192]{{1,0}}", "bf16[{N},8192]{{1,0:T(8,128)(2,1)}}", 4096),
    ("relayout bf16 T(8,128) -> T(4,128)(2,1)", "bf16[{N},8192]{{1,0:T(8,128)}}", "bf16[{N},8192]{{1,0:T(4,128)(2,1)}}",
     4096),
    ("relayout (2,1) -> {0,1:..(2,1)} fine", "bf16[{N},8192]{{1,0:T(8,128)(2,1)}}",
     "bf16[{N},8192]{{0,1:T(8,128)(2,1)}}", 4096),
    ("relayout s8 {0,1:..(4,1)} -> (4,1) fine", "s8[{N},8192]{{0,1:T(8,128)(4,1)}}",
     "s8[{N},8192]{{1,0:T(8,128)(4,1)}}", 8192),
    ("relayout u4 E(4) -> {0,1:E(4)}", "u4[{N},16384]{{1,0:E(4)}}", "u4[{N},16384]{{0,1:E(4)}}", 8192),
    ("relayout s4 (2,1)E(4) -> {0,1:..} fine", "s4[{N},16384]{{1,0:T(8,128)(2,1)E(4)}}",
     "s4[{N},16384]{{0,1:T(8,128)(2,1)E(4)}}", 8192),
    ("relayout bf16 tiled transposes T(8,128)", "bf16[{N},8192]{{0,1:T(8,128)}}", "bf16[{N},8192]{{1,0:T(8,128)}}",
     4096),
    ("relayout s4 E(4) grouped alike", "s4[{N},256,512]{{1,2,0:T(8,128)(2,1)E(4)}}",
     "s4[{N},256,512]{{2,1,0:T(8,128)E(4)}}", 512),
    ("relayout bf16 NHWC batch moved (2,1)", "bf16[{N},64,64,256]{{3,2,1,0:T(8,128)(2,1)}}",
     "bf16[{N},64,64,256]{{3,0,2,1:T(8,128)(2,1)}}", 32),
)
NO_NUMBA = "XLASHAPES_NO_NUMBA"


def shape_of(text: str, n: int) -> xs.Shape:
    """The benchmark shape with its scaled dim ``n`` (legacy padding added where the name says so)."""
    shape = xs.parse_shape(text.format(N=n))
    if "8191]" in text and "{" not in text.format(N=n).split("]")[-1]:  # (no layout given: legacy padding)
        layout = xs.Layout((0, 1), padded_dimensions=(n + 3, 8192))
        shape = xs.make_shape(str(shape.element_type), list(shape.dimensions), layout=layout)
    return shape


def random_array(shape: xs.Shape, rng: np.random.Generator) -> np.ndarray:
    """Random bits of the shape's element type (every bit pattern, NaNs included; canonical sub-byte storage)."""
    dtype = shape.element_type.numpy_dtype
    raw = rng.integers(0, 256, size=shape.element_count() * dtype.itemsize, dtype=np.uint8)
    if shape.element_type.bits < 8:
        raw &= (1 << shape.element_type.bits) - 1
    if str(shape.element_type) == "pred":
        raw &= 1
    return raw.view(dtype).reshape(shape.dimensions)


def on_path(threads: int, run: Callable[[], object]) -> None:
    """``run`` on the NumPy path (``threads`` 0) or on the compiled path with ``threads`` threads."""
    saved = os.environ.get(NO_NUMBA)
    os.environ[NO_NUMBA] = "0" if threads else "1"
    saved_first = dispatch.FIRST_NUMBA_BYTES
    if threads:  # arrays from 1 MiB take the compiled path, as in a long-running process that has loaded it
        dispatch.FIRST_NUMBA_BYTES = dispatch.NUMBA_BYTES
    saved_threads, physical.THREADS = physical.THREADS, max(1, threads)
    try:
        run()
    finally:
        physical.THREADS = saved_threads
        dispatch.FIRST_NUMBA_BYTES = saved_first
        if saved is None:
            del os.environ[NO_NUMBA]
        else:
            os.environ[NO_NUMBA] = saved


def matrix(args: argparse.Namespace) -> None:
    """Print the ratio matrix."""
    rng = np.random.default_rng(0)
    threads = [int(t) for t in args.threads.split(",")]
    print(f"clock: {'thread CPU time' if args.cpu else 'wall'} (threaded rows: wall); ratio = time / memcpy time; "
          f"out= arrays {'16 bytes past a cache line' if args.unaligned else 'on a cache line'}")
    print(f"{'layout':40} {'MiB':>4} {'dir':>4} {'memcpy ms':>9} {'numpy':>6} " +
          " ".join(f"{'x' + str(t):>6}" for t in threads))
    for size in (int(s) for s in args.sizes.split(",")):
        for count in (t for t in threads if t > 1):
            print(f"memcpy of {size} MiB split over {count} threads / on one (wall): "
                  f"{memcpy_scaling(size << 20, count, args.repeat):.2f} (below 1.0 only if one thread does not "
                  "already use all the memory bandwidth; the x-columns are against one thread)")
        for name, text, n, _ in CASES:
            if args.only not in name:
                continue
            shape = shape_of(text, max(1, n * size // 64))
            x = random_array(shape, rng)
            buffer = empty(shape.byte_size(), args.unaligned)
            back = empty(x.nbytes, args.unaligned).view(x.dtype).reshape(x.shape)
            jobs = {"to": partial(to_physical, x, shape, out=buffer), "from": partial(from_physical, buffer, shape,
                                                                                       out=back)}
            report(args, name, size, jobs, x.nbytes, threads, partial(check, x, buffer, back, name))
            del x, buffer, back, jobs
        for name, text, other, n in RELAYOUTS:
            if args.only not in name:
                continue
            source, target = shape_of(text, n * size // 64), shape_of(other, n * size // 64)
            x = random_array(source, rng)
            data = to_physical(x, source)
            out = empty(target.byte_size(), args.unaligned)
            report(args, name, size, {"re": partial(relayout, data, source, target, out=out)}, x.nbytes, threads,
                   partial(print, end=""))
            del x, data, out


def memcpy_scaling(nbytes: int, threads: int, repeat: int) -> float:
    """Wall time of ``np.copyto`` of ``nbytes`` split over ``threads`` threads, over its time on one thread."""
    src, dst = np.ones(nbytes, np.uint8), np.zeros(nbytes, np.uint8)
    bounds = [nbytes * k // threads for k in range(threads + 1)]
    with ThreadPoolExecutor(threads) as pool:
        def split() -> None:
            list(pool.map(lambda k: np.copyto(dst[bounds[k] : bounds[k + 1]], src[bounds[k] : bounds[k + 1]]),
                          range(threads)))

        one, many = best_times([partial(np.copyto, dst, src), split], repeat)
    return many / one


def empty(nbytes: int, unaligned: bool) -> np.ndarray:
    """A new uint8 array of ``nbytes`` for ``out=``: on a cache line as the library's own outputs (and XLA's
    buffers) are, or 16 bytes past one, where NumPy puts large arrays (``--unaligned``)."""
    room = np.empty(nbytes + 128, np.uint8)
    start = -room.ctypes.data % 64 + (16 if unaligned else 0)
    return room[start : start + nbytes]


def check(x: np.ndarray, buffer: np.ndarray, back: np.ndarray, name: str) -> None:
    """SystemExit unless the round trip was bit-exact."""
    if not np.array_equal(back.view(np.uint8), x.view(np.uint8)):
        raise SystemExit(f"{name}: the round trip is not bit-exact")


def report(args: argparse.Namespace, name: str, size: int, jobs: dict[str, Callable[[], object]], nbytes: int,
           threads: list[int], verify: Callable[[], None]) -> None:
    """Time every job on every path against memcpy and print one row per direction."""
    src = np.ones(nbytes, np.uint8)
    dst = np.empty_like(src)
    for direction, job in jobs.items():
        paths = [0, *threads]
        for path in paths:  # warm up: compile or load the kernels, touch the pages
            on_path(path, job)
            if direction != "to":  # the round trip is complete after "from"
                verify()
        clock = time.thread_time if args.cpu else time.perf_counter
        copy = partial(np.copyto, dst, src)
        # (the NumPy path in rounds of its own: its temporaries, up to several times the array, left the memcpy timed
        # right after it up to twice as slow on this VM, which made the compiled paths' ratios look better than
        # they are: s4 rank-3 permuted 'to', memcpy 76-110 ms there against 46-52 otherwise)
        numpy_copy, numpy_time = timed([copy, partial(on_path, 0, job)], args.repeat, clock)
        single = [p for p in threads if p == 1]
        times = dict(zip([-1, *single], timed([copy, *[partial(on_path, p, job) for p in single]], args.repeat,
                                              clock)))
        threaded = [p for p in threads if p > 1]
        if threaded:
            wall = timed([copy, *[partial(on_path, p, job) for p in threaded]], args.repeat, time.perf_counter)
            times.update(zip([-2, *threaded], wall))
        memcpy = times[-1]
        cells = [f"{times[p] / (times[-2] if p > 1 else memcpy):6.2f}" for p in threads]
        print(f"{name:40} {size:4} {direction:>4} {memcpy * 1e3:9.2f} {numpy_time / numpy_copy:6.2f} "
              + " ".join(cells), flush=True)


def timed(runs: list[Callable[[], object]], repeat: int, clock: Callable[[], float]) -> list[float]:
    """``best_times`` with the given clock."""
    saved = time.perf_counter
    time.perf_counter = clock  # best_times reads time.perf_counter
    try:
        return best_times(runs, repeat)
    finally:
        time.perf_counter = saved


# ----- a random survey: layouts of every family, not only the table's ------------------------------------------
SURVEY_TYPES = (  # (element type, layouts' tails: untiled, tilings)
    ("f32", ("", "T(8,128)", "T(4,128)", "T(2,128)", "T(128)")), ("s32", ("", "T(8,128)")),
    ("bf16", ("", "T(8,128)(2,1)", "T(16,128)(2,1)", "T(8,128)")), ("f16", ("", "T(8,128)(2,1)")),
    ("s8", ("", "T(8,128)(4,1)", "T(32,128)(4,1)")), ("u8", ("", "T(8,128)(4,1)", "T(1,256)")),
    ("pred", ("", "T(8,128)(4,1)")), ("s4", ("E(4)", "T(8,128)(2,1)E(4)", "T(8,128)E(4)")),
)
SURVEY_SIDES = (2, 3, 5, 7, 8, 12, 16, 24, 48, 64, 100, 128, 200, 256, 384, 500, 1000, 1024, 2048)


def survey_layouts(seed: int, count: int, nbytes: int) -> list[str]:
    """``count`` random layouts (rank 2-5, any dim order, a third in order; every element type and tiling of
    ``SURVEY_TYPES``), one dim scaled so that the logical array is about ``nbytes``."""
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    while len(texts) < count:
        name, tails = SURVEY_TYPES[rng.integers(len(SURVEY_TYPES))]
        tail = tails[rng.integers(len(tails))]
        rank = int(rng.integers(2, 6))
        dims = [int(rng.choice(SURVEY_SIDES)) for _ in range(rank)]
        bits = xs.parse_shape(f"{name}[]").element_type.bits
        scaled = int(rng.integers(rank))
        dims[scaled] = max(1, dims[scaled] * nbytes * 8 // max(1, int(np.prod(dims)) * bits))
        order = list(range(rank)) if rng.random() < 0.3 else [int(k) for k in rng.permutation(rank)]
        text = f"{name}[{','.join(map(str, dims))}]{{{','.join(map(str, order))}{':' + tail if tail else ''}}}"
        try:
            size = xs.parse_shape(text).byte_size()
        except ValueError:
            continue  # (a tiling this shape cannot take)
        if nbytes // 4 <= size <= nbytes * 5 // 2:
            texts.append(text)
    return texts


def survey(args: argparse.Namespace) -> None:
    """Time ``args.survey`` random layouts (``args.seed``; 32 MiB) to and from physical on the compiled path, one
    thread, against memcpy of the larger of their logical and physical bytes; print them worst first, then how many
    are over 2x."""
    clock = time.thread_time if args.cpu else time.perf_counter
    rows = []
    for text in survey_layouts(args.seed, args.survey, 32 << 20):
        shape = xs.parse_shape(text)
        x = random_array(shape, np.random.default_rng(0))
        buffer = empty(shape.byte_size(), args.unaligned)
        back = empty(x.nbytes, args.unaligned).view(x.dtype).reshape(x.shape)
        nbytes = max(shape.byte_size(), x.nbytes)
        src, dst = np.ones(nbytes, np.uint8), np.zeros(nbytes, np.uint8)
        jobs = [partial(on_path, 1, partial(to_physical, x, shape, out=buffer)),
                partial(on_path, 1, partial(from_physical, buffer, shape, out=back))]
        for job in jobs:
            job()
        check(x, buffer, back, text)
        if args.against_numpy:  # (the compiled path's bytes, both ways, equal to the NumPy path's)
            on_path(0, partial(to_physical, x, shape, out=dst[: buffer.size]))
            if not np.array_equal(dst[: buffer.size], buffer):
                raise SystemExit(f"{text}: laid out, the compiled path's bytes differ from the NumPy path's")
            on_path(1, partial(from_physical, dst[: buffer.size], shape, out=back))
            if not np.array_equal(back.view(np.uint8), x.view(np.uint8)):
                raise SystemExit(f"{text}: read back, the compiled path differs from the NumPy path")
        if args.first_calls:  # (every timed call a first one: no timings kept from the calls before)
            jobs = [partial(first_call, job) for job in jobs]
        memcpy, to, back_time = timed([partial(np.copyto, dst, src), *jobs], args.repeat, clock)
        rows.append((to / memcpy, back_time / memcpy, text, shape.byte_size() >> 20))
        del x, buffer, back, src, dst
    print(f"survey of {len(rows)} random layouts (seed {args.seed}, ~32 MiB; x memcpy of the larger of their logical "
          "and physical bytes; compiled path, one thread), worst first:")
    print(f"{'to':>6} {'from':>6}  layout")
    for to, back_time, text, mib in sorted(rows, key=lambda row: -max(row[0], row[1])):
        print(f"{to:6.2f} {back_time:6.2f}  {text}  ({mib} MiB)")
    tos, froms = sorted(row[0] for row in rows), sorted(row[1] for row in rows)
    print(f"over 2x: {sum(t > 2 for t in tos)} to, {sum(f > 2 for f in froms)} from; median {tos[len(tos) // 2]:.2f} "
          f"to, {froms[len(froms) // 2]:.2f} from")


def first_call(job: Callable[[], object]) -> None:
    """``job()`` as a first call: the plan timings of the calls before it forgotten (``xlashapes.physical._tuned``)."""
    from xlashapes.physical import _tuned

    _tuned.forget()
    job()


# ----- start-up and memory, in new processes -------------------------------------------------------------------
STARTUP = (
    "import time, resource; t = time.perf_counter(); import numpy as np, xlashapes as xs; "
    "x = np.zeros(({rows}, 1024), np.float32); s = xs.parse_shape('f32[{rows},1024]{{0,1:T(8,128)}}'); "
    "c = time.perf_counter(); a, z = np.ones_like(x), np.ones_like(x); del a, z; touch = time.perf_counter() - c; "
    "c = time.perf_counter(); b = xs.to_physical(x, s); xs.from_physical(b, s); first = time.perf_counter() - c; "
    "total = time.perf_counter() - t; c = time.perf_counter(); b = xs.to_physical(x, s); xs.from_physical(b, s); "
    "again = time.perf_counter() - c; import sys; "
    "print(total, first, again, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, 'numba' in sys.modules, "
    "'llvmlite' in sys.modules, touch)"
)


def startup() -> None:
    """Print new-process times: small work (stays on NumPy), and 64 MiB on NumPy, compiled cold and warm (kept
    machine code loaded without numba, and numba's own cache with ``XLASHAPES_NO_AOT=1``).

    Each row: the process's wall time up to the end of its first conversion (import included), that conversion's
    time, a second identical conversion's, and the first one's extra cost over the second. Before the first, the
    process touches new memory of the outputs' size once (its time is printed): a new process's first use of fresh
    memory is slow on some machines (about 2 ms a MiB on this project's, for NumPy alone), and that is the
    machine's cost, not the library's start-up.
    """
    def run(rows: int, env: dict[str, str]) -> tuple[float, float, float, float, str, float]:
        out = subprocess.run([sys.executable, "-c", STARTUP.format(rows=rows)], env={**os.environ, **env},
                             capture_output=True, text=True, check=True).stdout.split()
        loaded = "numba" if out[4] == "True" else "llvmlite, no numba" if out[5] == "True" else "neither"
        return float(out[0]), float(out[1]), float(out[2]), float(out[3]) / 1024, loaded, float(out[6])

    on = {NO_NUMBA: "0", "XLASHAPES_NO_AOT": "0"}
    with tempfile.TemporaryDirectory() as cache:
        kept = {**on, "XLASHAPES_CACHE_DIR": cache}
        rows = [("4 MiB, XLASHAPES_NO_NUMBA=1", 1024, {NO_NUMBA: "1"}),
                ("4 MiB, compiled allowed", 1024, kept),
                ("64 MiB, XLASHAPES_NO_NUMBA=1", 16384, {NO_NUMBA: "1"}),
                ("64 MiB, compiled, empty cache, shipped code", 16384, kept),
                ("64 MiB, compiled, empty cache, no shipped code", 16384, {**kept, "XLASHAPES_NO_PREBUILT": "1"}),
                ("64 MiB, compiled, warm, kept machine code", 16384, kept),
                ("64 MiB, compiled, warm, numba (NO_AOT=1)", 16384, {**kept, "XLASHAPES_NO_AOT": "1"})]
        print("new process: import + to_physical + from_physical of f32[N,1024]{0,1:T(8,128)} (wall clock)")
        print(f"  {'':44} {'total':>7} {'1st conv':>9} {'2nd conv':>9} {'extra':>7}   {'peak RSS':>9}   "
              f"{'new memory':>10}   loaded")
        for name, count, env in rows:
            total, first, again, rss, loaded, touch = run(count, env)
            print(f"  {name:44} {total:6.2f}s {first:8.3f}s {again:8.3f}s {first - again:6.3f}s   "
                  f"{rss:5.0f} MiB   {touch:9.3f}s   {loaded}")


COLD = (
    "import sys, time; sys.path.insert(0, {bench!r}); import numpy as np, xlashapes as xs; "
    "from bench_physical import shape_of, random_array; s = shape_of({text!r}, {n}); "
    "x = random_array(s, np.random.default_rng(0)); runs = []; "
    "exec('for _ in range(2):\\n c = time.perf_counter(); b = xs.to_physical(x, s); xs.from_physical(b, s); "
    "runs.append(time.perf_counter() - c)'); from xlashapes.physical import _aot; "
    "print(*runs, 'numba' in sys.modules, _aot.engine_loaded())"
)


def cold(args: argparse.Namespace) -> None:
    """Print each layout's first compiled use (64 MiB, to and from) in a new process with an empty kernel cache:
    the first conversion's time, a second's, and the difference (loading the shipped machine code, or compiling:
    ``--no-prebuilt``, or a host the shipped code is not for)."""
    bench = os.path.dirname(os.path.abspath(__file__))
    print("first compiled use per layout: new process, empty kernel cache, to_physical + from_physical of 64 MiB "
          f"(wall clock){', shipped code off' if args.no_prebuilt else ''}")
    print(f"  {'':32} {'1st':>7} {'2nd':>7} {'extra':>8}   kernels")
    worst = 0.0
    for name, text, n, _ in CASES:
        if args.only not in name:
            continue
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, NO_NUMBA: "0", "XLASHAPES_NO_AOT": "0", "XLASHAPES_CACHE_DIR": cache,
                   "XLASHAPES_NO_PREBUILT": "1" if args.no_prebuilt else "0"}
            out = subprocess.run([sys.executable, "-c", COLD.format(bench=bench, text=text, n=n)], env=env,
                                 capture_output=True, text=True, check=True).stdout.split()
        first, again = float(out[0]), float(out[1])
        kernels = "compiled (numba)" if out[2] == "True" else "shipped, no numba" if out[3] == "True" else "NumPy path"
        if kernels != "NumPy path":  # (under FIRST_NUMBA_BYTES, a new process keeps to the NumPy path)
            worst = max(worst, first - again)
        print(f"  {name:32} {first:6.2f}s {again:6.2f}s {first - again:7.2f}s   {kernels}")
    print(f"  {'worst':32} {'':7} {'':7} {worst:7.2f}s")


RSS = (
    "import sys, os, numpy as np; sys.path.insert(0, {bench!r}); "
    "os.environ['XLASHAPES_NO_NUMBA'] = {flag!r}; "
    "import xlashapes as xs; from bench_physical import shape_of, random_array; s = shape_of({text!r}, {n}); "
    "x = random_array(s, np.random.default_rng(0)); buf = xs.to_physical(x, s) if {back} else None; "
    "from xlashapes.physical import _dispatch as d; d.kernels(), d.walker(); saved, d.NUMBA_BYTES = d.NUMBA_BYTES, 0; "
    "small = shape_of({text!r}, 1); y = random_array(small, np.random.default_rng(0)); "
    "xs.from_physical(xs.to_physical(y, small), small); d.NUMBA_BYTES = saved; "  # kernels loaded before measuring
    "status = lambda key: int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith(key))); "
    "open('/proc/self/clear_refs', 'w').write('5'); base = status('VmRSS:'); "  # resets the peak (VmHWM)
    "out = xs.from_physical(buf, s) if {back} else xs.to_physical(x, s); "
    "print((status('VmHWM:') - base) / 1024, out.nbytes / 2**20)"
)


def rss(args: argparse.Namespace) -> None:
    """Print each case's peak RSS growth in a new process, against the output's size (goal: output + 64 MiB)."""
    size = int(args.sizes.split(",")[0])
    bench = os.path.dirname(os.path.abspath(__file__))
    print(f"peak RSS growth in one conversion (Linux VmHWM) / output size, MiB, {size} MiB arrays "
          "(goal: <= output + 64)")
    for name, text, n, _ in CASES:
        if args.only not in name:
            continue
        cells = []
        for flag in ("1", "0"):
            for back in (False, True):
                code = RSS.format(bench=bench, text=text, n=max(1, n * size // 64), flag=flag, back=back)
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                grown, output = (float(v) for v in out.stdout.split())
                cells.append(f"{grown:6.1f}/{output:6.1f}")
        print(f"  {name:32} numpy to {cells[0]} from {cells[1]}   compiled to {cells[2]} from {cells[3]}")
    for name, text, other, n in RELAYOUTS:
        if args.only not in name:
            continue
        cells = []
        for flag in ("1", "0"):
            code = RSS_RELAYOUT.format(bench=bench, text=text, other=other, n=max(1, n * size // 64), flag=flag)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            grown, output = (float(v) for v in out.stdout.split())
            cells.append(f"{grown:6.1f}/{output:6.1f}")
        print(f"  {name:40} numpy {cells[0]}   compiled {cells[1]}")


RSS_RELAYOUT = (
    "import sys, os, numpy as np; sys.path.insert(0, {bench!r}); "
    "os.environ['XLASHAPES_NO_NUMBA'] = {flag!r}; "
    "import xlashapes as xs; from bench_physical import shape_of, random_array; s = shape_of({text!r}, {n}); "
    "t = shape_of({other!r}, {n}); data = xs.to_physical(random_array(s, np.random.default_rng(0)), s); "
    "from xlashapes.physical import _dispatch as d; d.kernels(), d.walker(); saved, d.NUMBA_BYTES = d.NUMBA_BYTES, 0; "
    "small, other = shape_of({text!r}, 8), shape_of({other!r}, 8); "
    "xs.relayout(xs.to_physical(random_array(small, np.random.default_rng(0)), small), small, other); "
    "d.NUMBA_BYTES = saved; "  # kernels loaded before measuring
    "status = lambda key: int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith(key))); "
    "open('/proc/self/clear_refs', 'w').write('5'); base = status('VmRSS:'); "  # resets the peak (VmHWM)
    "out = xs.relayout(data, s, t); print((status('VmHWM:') - base) / 1024, out.nbytes / 2**20)"
)


HUGE = (
    "import resource, sys, time; from xlashapes.physical.files import {call}; t = time.perf_counter(); "
    "{call}({a!r}, {shape!r}, {b!r}); "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
)


def huge(folder: str) -> None:
    """Stream an 8 GiB bf16 array through pack_file and unpack_file; print time and peak RSS."""
    rows, cols = 262144, 16384
    shape = f"bf16[{rows},{cols}]{{1,0:T(8,128)(2,1)}}"
    npy, bin_path, back = (os.path.join(folder, name) for name in ("huge.npy", "huge.bin", "back.npy"))
    array = np.lib.format.open_memmap(npy, mode="w+", dtype=ml_dtypes.bfloat16, shape=(rows, cols))  # header V2
    for start in range(0, rows, 8192):
        rows_bits = (np.arange(start, start + 8192) % 65521).astype(np.uint16)[:, None]
        array.view(np.uint16)[start : start + 8192] = rows_bits
        array.flush()
        release(array)  # keep this process small too
    array.flush()
    del array
    print(f"8 GiB round trip through files: {shape}")
    for call, a, b in (("pack_file", npy, bin_path), ("unpack_file", bin_path, back)):
        code = HUGE.format(call=call, a=a, shape=shape, b=b)
        seconds, peak = (float(v) for v in subprocess.run([sys.executable, "-c", code], capture_output=True,
                                                           text=True, check=True).stdout.split())
        print(f"  {call:12} {seconds:7.1f} s  {8 * 1024 / seconds:7.0f} MiB/s  peak RSS {peak:7.1f} MiB")
    same = all(np.array_equal(np.load(npy, mmap_mode="r")[k : k + 8192], np.load(back, mmap_mode="r")[k : k + 8192])
               for k in range(0, rows, 8192))
    print(f"  round trip bit-exact: {same}")
    for path in (npy, bin_path, back):
        os.remove(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="64 MiB only, 3 rounds, 1 thread")
    parser.add_argument("--sizes", default="64,512", help="MiB of the logical array, comma-separated")
    parser.add_argument("--threads", default="1,2", help="thread counts of the compiled path, comma-separated")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="only layouts whose name contains this")
    parser.add_argument("--cpu", action="store_true", help="time with the thread's CPU clock (shared machines)")
    parser.add_argument("--unaligned", action="store_true",
                        help="out= arrays 16 bytes past a cache line (as np.empty puts large arrays), not on one")
    parser.add_argument("--startup", action="store_true", help="also time new processes (cold and warm)")
    parser.add_argument("--cold", action="store_true", help="also time each layout's first compiled use")
    parser.add_argument("--rss", action="store_true", help="also measure peak RSS per case in new processes")
    parser.add_argument("--huge", metavar="DIR", help="also stream an 8 GiB array through files in DIR")
    parser.add_argument("--no-matrix", action="store_true", help="skip the ratio matrix")
    parser.add_argument("--survey", type=int, default=0, metavar="N",
                        help="also time N random layouts of every family (32 MiB), worst first")
    parser.add_argument("--seed", type=int, default=0, help="--survey: the random layouts' seed")
    parser.add_argument("--first-calls", action="store_true",
                        help="--survey: time first calls (the plans' timings forgotten before each)")
    parser.add_argument("--against-numpy", action="store_true",
                        help="--survey: also check the compiled path's bytes against the NumPy path's (both ways)")
    parser.add_argument("--no-prebuilt", action="store_true",
                        help="--cold: without the shipped machine code (every layout compiles)")
    args = parser.parse_args()
    if args.survey < 0 or args.seed < 0:
        parser.error("--survey and --seed take numbers from 0")
    if args.quick:
        args.sizes, args.repeat, args.threads = "64", 3, "1"
    # new processes first: a child's peak RSS starts from this process's at the fork (Linux keeps it across exec)
    if args.startup:
        startup()
    if args.cold:
        cold(args)
    if args.rss:
        rss(args)
    if not args.no_matrix:
        matrix(args)
    if args.survey:
        survey(args)
    if args.huge:
        huge(args.huge)


if __name__ == "__main__":
    main()
