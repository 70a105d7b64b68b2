"""Every compiled kernel's entry point and element width in one process, both directions, one and two threads.

Outputs sit 16 bytes past a cache line (so that legacy-padded rows go through ``shifted_rows``, and long transposed
rows are shifted and staged), but for the cases marked ``@0`` (on a line: the quarter-line wide walk). Prints
(JSON) the digests of the bytes and which entries ran from kept machine code.
``test_physical_aot`` runs it in new processes; the suite also runs it in the background when the session starts,
to fill the kernel cache before the main process needs the kernels (``background``).
Cases marked ``!`` run every plan that timing chooses among, one after the other, each writing the whole output.
``XLASHAPES_WORKER_PART=k/n`` takes every n-th case from the k-th; ``XLASHAPES_WORKER_CASES=a|b|...`` these cases.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import numpy as np

import xlashapes as xs
from xlashapes.physical import _copy, _tuned
from xlashapes.physical import _dispatch as dispatch

# In the order the compiled-kernel tests first need their kernels (``background.KERNEL_TESTS``), so that the warm-up
# compiles them in that order: the stacked layouts' property (the walks and the stacked kernel, every width), the tiled
# kernels' tests (tiles cut short, staged: tiled_to_odd_*), the permutations, then the generic kernel's tests (and
# OTHER_PATHS: cases that compile nothing new after these, but take other paths: streamed, two threads, relaid out).
NEEDED = [
    # the stacked layouts' property
    "u8[16,32,64]{1,2,0}", "s4[16,64,32]{0,2,1:T(8,128)(2,1)E(4)}", "pred[3,8,100,7]{2,0,3,1:T(8,128)(4,1)}",
    "u8[2,64,70,3]{2,1,3,0}", "s16[72,1030]{0,1:P(75,1040)}", "bf16[40,130,5]{1,0,2:T(16,128)(2,1)}",
    "f32[5,7]{0,1:T(2,4)}", "u8[4,64,200]{0,1,2}", "u4[64,256]{1,0:E(4)}", "u8[40,100]{1,0:T(1,128)}",
    "bf16[2,9,41,15]{2,1,3,0}", "f32[40,100]{1,0:T(1,128)}", "f64[64,64]{0,1}", "f32[64,256]{0,1}",
    "f32[64,40,3]{0,1,2:T(8,128)}",
    # the tiled kernels' tests
    "f32[3,6,256]{2,1,0:T(8,128)}", "s8[3,6,256]{2,1,0:T(8,128)(4,1)}", "pred[3,6,256]{2,1,0:T(8,128)(4,1)}",
    "bf16[3,6,256]{2,1,0:T(8,128)(2,1)}", "s4[3,6,256]{2,1,0:T(8,128)(2,1)E(4)}", "s8[64,256]{1,0:T(8,128)(4,1)}",
    "s4[64,256]{1,0:T(8,128)(2,1)E(4)}", "pred[64,256]{1,0:T(8,128)(4,1)}", "bf16[64,256]{1,0:T(8,128)(2,1)}",
    # the permutations
    "u8[2,64,70,12]{2,1,3,0}", "bf16[256,512]{0,1:T(8,128)(2,1)}", "f32[2,600,3,3]{1,0,3,2}",
    "bf16[2,9,41,8]{2,1,3,0}", "bf16[4,256,512]{0,1,2}@0",
    # the generic kernel's tests
    "bf16[40,100]{1,0:T(1,128)}", "u8[8,64,200]{0,1,2}", "bf16[16,64,100]{0,1,2}",
    "f32[256,256]{0,1:T(8,128)}>{1,0:T(8,128)}", "f64[3,10,9,3]{2,1,3,0}", "f64[40,100]{1,0:T(1,128)}",
    "u8[256,256]{0,1}", "bf16[64,256]{0,1}", "bf16[24,8,1280]{0,1,2}", "bf16[256,512]{0,1:T(8,128)}>{1,0:T(8,128)}",
    "u8[256,512]{0,1:T(4,128)}>{1,0:T(4,128)}", "f64[4,64,64]{0,1,2}", "u8[24,16,1280]{0,1,2}", "f32[12,40,100]{0,1,2}",
    "f32[72,1030]{0,1:P(75,1040)}", "f64[72,1030]{0,1:P(75,1040)}", "u4[64,256]{1,0:E(4)}>{0,1:E(4)}",
    "bf16[64,256]{1,0:T(8,16)(2,1)}>{0,1:T(4,4)(2,1)}", "bf16[64,256]{1,0:T(8,128)(2,1)}>{0,1:T(8,128)(2,1)}",
    "s8[256,256]{0,1:T(8,128)(4,1)}>{1,0:T(8,128)(4,1)}", "f32[128,256]{0,1:T(8,128)(2,1)}>{1,0:T(8,128)(2,1)}",
    "f64[128,128]{1,0:T(8,128)(2,1)}>{0,1:T(8,128)(2,1)}",
    "bf16[4,16,16,256]{3,2,1,0:T(8,128)(2,1)}>{3,0,2,1:T(8,128)(2,1)}",
    "s8[8,16,16,256]{3,2,1,0:T(8,128)(4,1)}>{3,0,2,1:T(8,128)(4,1)}",
    "f32[4,16,16,256]{3,2,1,0:T(8,128)(2,1)}>{3,0,2,1:T(8,128)(2,1)}",
    "f64[4,8,16,32]{3,2,1,0:T(8,32)(2,1)}>{3,0,2,1:T(8,32)(2,1)}",
    # squares over merged axes, every width; then every plan timing would take for them, one after the other (the
    # merged squares of each sweep and side, and staged through the cache)
    "u8[24,12,40,5]{0,1,2,3}", "bf16[479,50,7]{0,1,2}", "f32[24,2,38,12,37]{0,1,2,3,4}", "f64[24,12,40,5]{0,1,2,3}",
    "u8[24,12,40,5]{0,1,2,3}!", "bf16[479,50,7]{0,1,2}!", "f32[24,2,38,12,37]{0,1,2,3,4}!",
    "f64[24,12,40,5]{0,1,2,3}!",
    # pred's: the squares that make the bytes canonical as they move them (bytes; words of (4,1) sub-tiles; staged)
    "pred[24,12,40,5]{0,1,2,3}!", "pred[300,1001]{0,1:T(8,128)(4,1)}!", "pred[512,1024]{0,1}",
    # small blocks permuted inside, through lanes, every width
    "u8[64,3,12]{1,2,0}", "bf16[70,7,8]{1,2,0}", "f32[40,4,6]{1,2,0}", "f64[40,3,4]{1,2,0}",
]
OTHER_PATHS = [
    # other paths of kernels compiled above: stacked columns 1 or 4 KiB apart and rows following the minor dim, rows
    # ending in padding, staged and streamed transposes, E(n) fields grouped into bytes and relaid out as bytes
    "u8[24,200,12]{1,0,2:T(8,128)(4,1)}", "u8[300,256,4]{0,1,2:T(8,128)(4,1)}",
    "bf16[16,4,64,8]{0,2,3,1:T(8,128)(2,1)}", "u8[2,64,70,5]{2,1,3,0}", "u8[512,1024]{0,1}", "bf16[256,512]{0,1}",
    "f32[128,256]{0,1}", "u4[128,256]{0,1:E(4)}", "f32[64,256]{1,0:T(8,128)}", "bf16[256,512]{1,0:T(8,128)}",
    "s8[300,70]{0,1:T(8,128)(4,1)}", "bf16[128,256]{1,0:T(8,128)(2,1)}>{0,1:T(8,128)(2,1)}",
    "u4[256,256]{1,0:T(8,128)(2,1)E(4)}>{0,1:T(8,128)(2,1)E(4)}",
    "bf16[100,300]{1,0:T(8,128)(2,1)}>{0,1:T(8,128)(2,1)}", "u2[16,64,32]{1,0,2:E(2)}",
    "s4[16,64,256]{1,2,0:T(8,128)(2,1)E(4)}>{2,1,0:T(8,128)E(4)}", "s8[40,100]{1,0:T(8,128)(4,1)}",
    "bf16[24,100]{1,0:T(8,128)(2,1)}",
    # odd (p,1)-grouped minor dims through the widened array (its rows widened and cut back: bytes, 2-byte words)
    "pred[3,200,5]{0,2,1:T(8,128)(4,1)}", "bf16[5,300,7]{0,2,1:T(8,128)(2,1)}",
    # whole tiles read back a tile at a time, each row's piece streamed (both timed plans; pred made 0/1 on the way)
    "s8[20,640]{1,0:T(8,128)(4,1)}@0!", "pred[16,640]{1,0:T(8,128)(4,1)}@0!", "bf16[3,16,384]{2,1,0:T(8,128)(2,1)}@0!",
    # runs back to back gathered into whole lines (a timed plan), the rows of tiles cut short laid out with their
    # padding, a rank-1 tiling read back as its 2-d twin
    "f32[40,100]{1,0:T(8,128)}!", "u8[3,50,70]{2,1,0:T(2,128)}!", "bf16[24,1000]{1,0:T(8,128)}",
    "bf16[8192]{0:T(1024)(128)(2,1)}",
    # 2-d transposes onto rows on the line grid moved straight from the source, every width, the last square of each
    # side overlapping the one before
    "u8[128,200]{0,1}@0", "bf16[128,160]{0,1}@0", "f32[128,136]{0,1}@0", "f64[128,130]{0,1}@0",
    "f32[1024,136]{0,1}@0", "f64[512,130]{0,1}@0",  # (onto rows 4 KiB apart: squares in pairs)
    # merged squares onto rows on the line grid moved straight from the source (a large copy's first plan), every
    # width, pred's bytes (and words of (4,1) sub-tiles) made 0 or 1 on the way
    "bf16[4,64,256]{0,1,2}@0!", "u8[48,100,256]{0,1,2}@0!", "f32[8,40,1024]{0,1,2}@0!", "f64[4,32,512]{0,1,2}@0!",
    "pred[48,64,256]{0,1,2}@0!", "pred[256,1024]{0,1:T(8,128)(4,1)}@0!",
    # multi_index's kernel (one overload for every shape)
    "index:bf16[300,500]{0,1:T(8,128)(2,1)}"]
CASES = NEEDED + OTHER_PATHS
COMPILED = ["u4[64,256]{1,0:E(4)}", "f32[64,256]{0,1}", "bf16[40,100]{1,0:T(1,128)}", "s16[72,1030]{0,1:P(75,1040)}",
            "bf16[64,256]{1,0:T(8,128)(2,1)}"]
"""Cases whose kernels the suite compiles itself where the shipped machine code runs (``test_physical_aot``'s
compile-and-keep tests): two kernel modules, the overloads of walks, transposes, legacy padding, padding runs,
tiles and packing."""


def shape_of(text: str) -> xs.Shape:
    """The shape of ``text``; ``...{0,1:P(a,b)}``: a ``{0,1}`` layout with padded dimensions (a, b)."""
    if ":P(" not in text:
        return xs.parse_shape(text)
    head, pad = text.split(":P(")
    dims = [int(v) for v in head[head.index("[") + 1 : head.index("]")].split(",")]
    padded = tuple(int(v) for v in pad.rstrip(")}").split(","))
    return xs.make_shape(head[: head.index("[")], dims, layout=xs.Layout((0, 1), padded_dimensions=padded))


def placed(n: int, offset: int = 16) -> np.ndarray[Any, Any]:
    """``n`` bytes starting ``offset`` bytes past a cache line."""
    room = np.empty(n + 128, np.uint8)
    start = -room.ctypes.data % 64 + offset
    return room[start : start + n]


def digest_of(text: str) -> str:
    """The digest of the bytes both directions give for ``text``, with one and two threads (``...@k``: outputs
    ``k`` bytes past a cache line, else 16; ``...>{layout}``: and relaid out to that layout; ``...!``: every plan
    timing chooses among run, each over the whole output; ``index:...``: ``multi_index`` of random offsets)."""
    if text.startswith("index:"):
        shape = shape_of(text.removeprefix("index:"))
        offsets = np.random.default_rng(len(text)).integers(0, shape.physical_element_count(), 100_000)
        indices, valid = xs.multi_index(shape, offsets)
        return hashlib.sha256(indices.tobytes() + valid.tobytes()).hexdigest()
    if text.endswith("!"):
        saved = _tuned.TUNE_BYTES, _tuned.run_fastest
        _tuned.TUNE_BYTES, _tuned.run_fastest = 0, _every_plan
        try:
            return digest_of(text[:-1])
        finally:
            _tuned.TUNE_BYTES, _tuned.run_fastest = saved
    text, _, at = text.partition("@")
    text, _, other = text.partition(">")
    offset = int(at or 16)
    s = shape_of(text)
    dtype = np.dtype(s.element_type.numpy_dtype)
    n = int(np.prod(s.dimensions))
    x = np.random.default_rng(len(text)).integers(0, 256, n * dtype.itemsize, np.uint8).view(dtype)
    x = x.reshape(s.dimensions)
    if s.element_type.bits < 8:
        x = xs.from_physical(xs.to_physical(x, s), s)  # canonical sub-byte values
    digest = hashlib.sha256()
    for threads in (1, 2):
        b = xs.to_physical(x, s, out=placed(s.byte_size(), offset), threads=threads)
        y = xs.from_physical(b, s, out=placed(x.nbytes, offset).view(dtype).reshape(x.shape), threads=threads)
        digest.update(b.tobytes())
        digest.update(y.tobytes())
        if other:
            digest.update(xs.relayout(b, s, shape_of(text[: text.index("{")] + other), threads=threads).tobytes())
    return digest.hexdigest()


def _every_plan(key: Any, plans: Any) -> bool:
    """Every plan, the last one's bytes kept (each writes the whole output, or nothing where it returns False)."""
    return any([plan() for plan in plans])


def report() -> dict[str, Any]:
    """Digests of this process's share of the cases, the entries that ran from kept code, what was imported."""
    dispatch.NUMBA_BYTES = dispatch.FIRST_NUMBA_BYTES = dispatch.STREAM_BYTES = dispatch.THREAD_BYTES = 0
    _copy.SHIFT_BYTES = 512  # (rows of 512 bytes and up shifted onto lines)
    part, parts = (int(v) for v in os.environ.get("XLASHAPES_WORKER_PART", "0/1").split("/"))
    chosen = os.environ.get("XLASHAPES_WORKER_CASES", "")
    digests = {text: digest_of(text) for text in (chosen.split("|") if chosen else CASES)[part::parts]}
    native = {}
    for entries in (dispatch.walker(), dispatch.kernels(), dispatch.stacker(), dispatch.indexer()):
        for name, entry in vars(entries).items() if entries is not None else ():
            if hasattr(entry, "natives"):
                native[name] = sorted(key for key, loaded in entry.natives.items() if loaded is not None)
    return {"digests": digests, "native": native, "numba": "numba" in sys.modules,
            "llvmlite": "llvmlite" in sys.modules}


if __name__ == "__main__":
    print(json.dumps(report()))
