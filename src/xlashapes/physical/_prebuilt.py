"""The kernels' machine code shipped with the package, built ahead of time for baseline CPUs: no compile on first use.

**Why.** Compiling a layout's kernels on first use costs 2-4 s (numba typing and LLVM), once per host and kernel
version (:mod:`._aot` keeps the result). Shipping the objects that compile would write removes that first use on
the hosts most users have. ``tools/build_prebuilt.py`` compiles every kernel overload the suite's kernel worker and
the benchmark's layouts use, once per baseline CPU, with numba told to build for that CPU, and writes one zip per
baseline into ``prebuilt/``: the kept objects (:func:`._aot.save`'s files) and the kernel modules' constants, with a
manifest naming the kernel sources' digest, the CPU and the features a host needs.

**Which baselines.** Linux, best first for each machine. x86-64 (TPU hosts and most CI): ``x86-64-v4-vbmi`` (AVX-512
F/BW/CD/DQ/VL and VBMI/VBMI2: Ice Lake and later, Zen 4 and later), ``x86-64-v4`` (AVX-512 without the byte permutes:
Skylake-X, Cascade Lake), ``x86-64-v3`` (AVX2, FMA, BMI), ``x86-64-v2`` (SSE4.2, POPCNT: x86-64 CPUs from 2009 on, and
virtual CPUs that hide AVX). **Tuning.** Numba is told an LLVM CPU for each (``Baseline.cpu``): its scheduling model
decides how far loops unroll. The levels' own names (``x86-64-v4``) carry LLVM's generic tuning, which unrolls the tiled
kernels' loops a third as far as a Zen model does, and the short tile rows cost up to 1.8x for it (s8
``[67108,500]{1,0:T(8,128)(4,1)}`` 'to' 2.1 -> 1.04x memcpy here with ``znver4``; ``sapphirerapids`` 1.6, ``icelake-
server`` and ``skylake-avx512`` 2.1). So ``x86-64-v4-vbmi`` is tuned for ``znver4`` and ``x86-64-v3`` for ``znver3``
(the same row with AVX2 only: 2.1 -> 1.3): AMD Zen, this machine's CPU and many cloud hosts'; on Intel CPUs this tuning
is unmeasured. The build (``tools/build_prebuilt.py``) turns every feature the tuning CPU would add off by name
(``-gfni``, ``-vaes``, ...: every feature this LLVM knows beyond the baseline's), so the code still needs only the
baseline's; the instructions the objects use were diffed against a generic build's (new ones: ``bextr``, AVX-512 mask
and lane moves, all in the baseline). The tuning made some kernels slower: the generic walks and ``regroup``
(``PLAIN_ENTRIES``) are built in a second build with the level's generic tuning (``Baseline.plain``), in the same
archive (over the survey the walks were even under both tunings; the two it had slowed, s8 ``[64,64,1024,8]{0,1,2,3}``
'to' 4.6 -> 3.4x memcpy and s4 ``[3,100,384,500]{1,2,3,0:T(8,128)(2,1)E(4)}`` 'to' 6.6 -> 5.3, came back). ``x86-64-v4``
(Intel only: Skylake-X, Cascade Lake) and ``x86-64-v2`` keep the generic tuning: no such host here to measure one
against. Measured on this project's Zen 5 machine (``bench_physical.py --quick --cpu``, empty kernel caches, alternating
runs), against code built for the host itself: the median row the same (ratio 1.02-1.03 for v4), but without VBMI the
byte shuffles cost more (pred ``[7,N,384,7]{2,0,3,1:T(8,128)(4,1)}`` 'to' 2.6 native, 3.7-4.2 v4, 2.6-2.8 v4-vbmi), and
the generic tuning costs some rows (f32 ``[N,100]{1,0:T(8,128)}`` 'from' 1.1 native, 1.3-1.5). v3 code is ~5% slower
again at the median; v2 code (vectors of 16 bytes), run here (the whole ``--quick`` table, best of two, alternating with
v3): the median row 1.10x v3's time, the worst 1.5-2.5x (byte shuffles and sub-byte fields: pred ``T(8,128)(4,1)``
'from' 1.26 -> 2.1x memcpy, u2 ``E(2)`` 'from' 0.74 -> 1.84, bf16 tiled transposes relaid out 1.72 -> 4.0), still
without a compile. 64-bit ARM: ``aarch64`` (ARMv8-A with NEON, which every such CPU has: Graviton, Ampere, Grace,
Cortex-A72 and up), built and checked under QEMU's user-mode emulator (``tools/aarch64_python.py``): its bytes are those
of the NumPy path for every case, but its speed is not measured (no ARM hardware here). macOS, Windows and other
machines compile on first use (2-4 s a layout).

**When they are used.** :func:`._aot.load` looks in the host's own kept code first (code compiled here, for this
CPU), then here: an archive is used when it was built from these kernel sources (the digest of
:func:`._cache.kernels_digest`), for this machine and system, and the host's CPU has all of its features
(llvmlite's host features). Which numba built the objects does not matter: the loader calls them itself
(:class:`._aot.Native`, numba's native calling convention, whose argument words :mod:`._entries` checks against
numba's own whenever numba compiles), and resolves their symbols without numba. An overload missing from the
archive compiles as before. ``XLASHAPES_NO_PREBUILT=1`` turns the archives off.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
import zipfile
from dataclasses import dataclass
from functools import cache

from ._cache import kernels_digest


@dataclass(frozen=True)
class Baseline:
    """A CPU that shipped code is built for: its name (the archive's), LLVM's CPU name (the tuning) and the features
    a host must have to run it (the instructions numba may use); ``plain``, the LLVM CPU (the level's own name:
    generic tuning) that the kernels of ``PLAIN_ENTRIES`` are built for instead ("": none)."""

    name: str
    cpu: str
    features: tuple[str, ...]
    machine: str = "x86_64"
    platform: str = "linux"
    plain: str = ""

    def cpu_of(self, member: str) -> str:
        """The LLVM CPU the archive member ``member`` (``module.entry.key.o``) is built for.

        >>> BASELINES[0].cpu_of("walk.walk_groups.0.o"), BASELINES[0].cpu_of("kernels.tiled_to_physical.0.o")
        ('x86-64-v4', 'znver4')
        """
        return self.plain if self.plain and member.startswith(PLAIN_ENTRIES) else self.cpu


PLAIN_ENTRIES = ("walk.", "kernels.regroup.")
"""Archive members built with the generic tuning where a baseline names one (``Baseline.plain``): the Zen tuning
made these slower (``walk_groups``, s8 ``[64,64,1024,8]{0,1,2,3}`` 'to', 4.5 -> 6.9 ms; ``regroup``'s element by
element path, s4 ``[3,100,384,500]{1,2,3,0:T(8,128)(2,1)E(4)}`` 'to', 7.3 -> 10.9 ms), and the survey's walks gained
nothing from it."""


_V2 = ("64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2", "cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2",
       "ssse3", "crc32")
_V3 = (*_V2, "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = (*_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
BASELINES = (
    Baseline("x86-64-v4-vbmi", "znver4", (*_V4, "avx512vbmi", "avx512vbmi2"), plain="x86-64-v4"),
    Baseline("x86-64-v4", "x86-64-v4", _V4),
    Baseline("x86-64-v3", "znver3", _V3, plain="x86-64-v3"),
    Baseline("x86-64-v2", "x86-64-v2", _V2),
    Baseline("aarch64", "generic", (), "aarch64"),  # (ARMv8-A with NEON, which every 64-bit ARM CPU has)
)
"""The baselines shipped, best first (a host takes the first whose features it has)."""

NO_PREBUILT_VARIABLE = "XLASHAPES_NO_PREBUILT"
"""Set to anything but empty or 0: the shipped machine code is not used (kernels compile on first use). Read once per
process, when a compiled conversion first looks for machine code."""

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prebuilt")
"""Where the archives are (``<baseline name>.zip``)."""


def prebuilt_enabled() -> bool:
    """False when ``XLASHAPES_NO_PREBUILT`` turns the shipped machine code off.

    >>> isinstance(prebuilt_enabled(), bool)
    True
    """
    return os.environ.get(NO_PREBUILT_VARIABLE, "").strip() in ("", "0")


def manifest_problem(manifest: object, features: frozenset[str]) -> str | None:
    """Why an archive with ``manifest`` cannot run on this host with CPU ``features`` (None: it can).

    >>> manifest_problem({"kernels": "k"}, frozenset()) is not None
    True
    """
    if not isinstance(manifest, dict):
        return "no manifest"
    if manifest.get("kernels") != kernels_digest():
        return f"built from other kernel sources ({manifest.get('kernels')}, these are {kernels_digest()})"
    if manifest.get("machine") != platform.machine() or manifest.get("platform") != sys.platform:
        return f"built for {manifest.get('machine')} {manifest.get('platform')}"
    needed = manifest.get("features")
    if not isinstance(needed, list) or not all(isinstance(f, str) for f in needed):
        return "no feature list"
    missing = sorted(set(needed) - features)
    return f"this CPU lacks {', '.join(missing)}" if missing else None


def host_features() -> frozenset[str] | None:
    """The host CPU's features as LLVM names them: None without llvmlite (which loads the shipped code), empty where
    LLVM cannot tell them."""
    try:
        import llvmlite.binding as llvm
    except Exception:  # no llvmlite, or one that cannot load here
        return None
    try:
        return frozenset(name for name, on in llvm.get_host_cpu_features().items() if on)
    except Exception:  # (LLVM raises where it cannot read them: only archives that ask for none run)
        return frozenset()


class Archive:
    """One usable archive: ``read(name)`` gives a member's bytes (None when it has none)."""

    def __init__(self, path: str, archive: zipfile.ZipFile, name: str) -> None:
        self.path = path
        self.name = name
        self.archive = archive
        self.names = frozenset(archive.namelist())
        self.lock = threading.Lock()

    def read(self, name: str) -> bytes | None:
        if name not in self.names:
            return None
        try:
            with self.lock:
                return self.archive.read(name)
        except (OSError, zipfile.BadZipFile, EOFError, ValueError, RuntimeError):
            return None


def archive() -> Archive | None:
    """The first shipped archive this host can use, opened (None: none can, or they are turned off)."""
    found = _first_usable()
    return found if isinstance(found, Archive) else None


def archive_problem() -> str | None:
    """Why this host runs no shipped machine code (None: it does; else the last baseline's reason).

    >>> archive_problem() is None or isinstance(archive_problem(), str)
    True
    """
    found = _first_usable()
    return None if isinstance(found, Archive) else found


@cache
def _first_usable() -> Archive | str:
    """The first shipped archive this host can use, opened, or why none can (the last baseline's reason)."""
    if not prebuilt_enabled():
        return f"turned off ({NO_PREBUILT_VARIABLE})"
    problem = f"none shipped for {platform.machine()} {sys.platform}"
    features: frozenset[str] | None = None
    looked = False
    for baseline in BASELINES:
        path = os.path.join(FOLDER, baseline.name + ".zip")
        if (baseline.machine, baseline.platform) != (platform.machine(), sys.platform) or not os.path.exists(path):
            continue  # (another machine's archive: not even opened)
        try:
            opened = zipfile.ZipFile(path)
            manifest = json.loads(opened.read("manifest.json"))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError, RuntimeError):
            problem = f"{baseline.name}: a damaged archive"
            continue
        if not looked:
            features, looked = host_features(), True
        if features is None:
            opened.close()
            return "llvmlite cannot be imported (the shipped code is loaded through it)"
        reason = manifest_problem(manifest, features)
        if reason is None:
            return Archive(path, opened, baseline.name)
        problem = f"{baseline.name}: {reason}"
        opened.close()
    return problem
