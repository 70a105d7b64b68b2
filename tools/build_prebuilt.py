"""Build the compiled kernels' machine code shipped with the package (``src/xlashapes/physical/prebuilt/*.zip``).

    python tools/build_prebuilt.py                  # every baseline, two at a time
    python tools/build_prebuilt.py --only aarch64   # the named baselines only

For each baseline CPU (``_prebuilt.BASELINES``: x86-64-v4 with and without VBMI, x86-64-v3, -v2, 64-bit ARM; Linux), a
new process compiles every kernel overload that the suite's kernel worker (``tests/kernel_worker.py``: every entry point
and element width, both directions, one and two threads) and the benchmark's layouts (``benchmarks/bench_physical.py``,
at 1/16 of their size) use, with numba told to build for that CPU (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``) into an
empty kernel cache. The kept objects it writes (``_aot.save``) and the kernel modules' constants are then put in one zip
per baseline, with a manifest naming the kernel sources' digest, the CPU and the features a host needs to run them.
A baseline tuned for another CPU than its level (``znver4``) is built twice: the entries of ``_prebuilt.PLAIN_ENTRIES``
come from the second build, with the level's generic tuning (``Baseline.plain``).
Run it again whenever a kernel source changes: ``test_physical_prebuilt`` fails until then.

Each build's bytes (every case's digest) must equal this host's NumPy path's. The aarch64 baseline is built under
QEMU's user-mode emulator (``tools/aarch64_python.py``, which prepares it on first use: apt, as root), ~10 min
against ~75 s for an x86-64 one; its archive is then checked there too: every case run from the shipped code in a
new process with an empty kernel cache, without numba being imported, with the same bytes.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "src"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "benchmarks"),
                os.path.join(ROOT, "tools")]

from xlashapes.physical import _prebuilt  # noqa: E402
from xlashapes.physical._cache import kernels_digest  # noqa: E402

STAMP = (2026, 1, 1, 0, 0, 0)  # every member's date: the same sources and compiler give the same archive


def bench_cases() -> list[str]:
    """The benchmark's layouts at 1/16 of their 64 MiB size, as the kernel worker writes them (``text``,
    ``text>{target layout}`` for relayouts, ``...:P(rows,columns)}`` for legacy padding)."""
    import bench_physical as bench

    texts = []
    for _, text, n, _ in bench.CASES:
        shape = bench.shape_of(text, max(1, n // 16))
        padded = (shape.layout.padded_dimensions or ()) if shape.layout is not None else ()
        if padded:
            texts.append(str(shape).split("{")[0] + "{0,1:P(" + ",".join(map(str, padded)) + ")}")
        else:
            texts.append(str(shape))
    for _, source, target, n in bench.RELAYOUTS:
        target_text = target.format(N=max(1, n // 16))
        texts.append(source.format(N=max(1, n // 16)) + ">" + target_text[target_text.index("{") :])
    return texts


def work() -> None:
    """In the building process: run every case on the compiled path (numba compiles and keeps each overload); prints
    the digests of the bytes, whether numba was imported and the entries that ran from kept or shipped code."""
    import kernel_worker

    report = kernel_worker.report()  # (sets the compiled-path thresholds to 0)
    digests = dict(report["digests"])
    for text in bench_cases():
        digests[text] = kernel_worker.digest_of(text)
    print(json.dumps({"cases": len(digests), "numba": report["numba"], "native": report["native"],
                      "digests": digests}))


RUN_VARIABLES = ("XLASHAPES_NO_NUMBA", "XLASHAPES_NO_AOT", _prebuilt.NO_PREBUILT_VARIABLE, "XLASHAPES_WORKER_CASES",
                 "XLASHAPES_WORKER_PART")  # (this process's choices of path and cases, none of which a run inherits)


def environment(**values: str) -> dict[str, str]:
    """This process's environment for a ``--work`` run: the project on the path, ``values`` set, and none of
    ``RUN_VARIABLES`` but those given."""
    env = {key: value for key, value in os.environ.items() if key not in RUN_VARIABLES}
    return {**env, "PYTHONPATH": os.pathsep.join(sys.path[:4]), **values}


def worked(env: dict[str, str], emulated: bool) -> dict[str, Any]:
    """What ``--work`` printed, run with ``env`` on this host or (``emulated``) under the aarch64 emulator."""
    if emulated:
        import aarch64_python

        aarch64_python.prepare()
        env = aarch64_python.environment(env["PYTHONPATH"].split(os.pathsep), env)
        start = aarch64_python.command()
    else:
        start = [sys.executable]
    done = subprocess.run([*start, __file__, "--work"], env=env, check=True, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@cache
def host_digests() -> dict[str, str]:
    """The digests of every case's bytes on the NumPy path on this host (the reference each build is checked
    against)."""
    digests: dict[str, str] = worked(environment(XLASHAPES_NO_NUMBA="1"), False)["digests"]
    return digests


def checked(baseline: _prebuilt.Baseline) -> None:
    """Run every case from the archive just built, under the emulator, in a new process with an empty kernel cache:
    each from the shipped code (numba never imported), with the bytes of this host's NumPy path."""
    with tempfile.TemporaryDirectory(prefix="xlashapes-prebuilt-check-") as cache:
        ran = worked(environment(XLASHAPES_CACHE_DIR=cache), True)
    if ran["numba"]:
        raise SystemExit(f"{baseline.name}: numba was imported running the shipped code (an overload missing?)")
    if ran["digests"] != host_digests():
        raise SystemExit(f"{baseline.name}: the shipped code's bytes differ from this host's NumPy path")


def feature_string(baseline: _prebuilt.Baseline) -> str:
    """``NUMBA_CPU_FEATURES`` for ``baseline``: its features on and (built on its own kind of machine) every other
    feature this LLVM knows off, so a tuning CPU (``znver4``) brings its scheduling and none of its instructions."""
    on = ["+" + feature for feature in baseline.features]
    if baseline.machine != platform.machine():
        return ",".join(on)
    import llvmlite.binding as llvm

    known = sorted(llvm.get_host_cpu_features())  # (every feature name, whatever this CPU has)
    return ",".join(on + ["-" + feature for feature in known if feature not in baseline.features])


def compiled(baseline: _prebuilt.Baseline, cpu: str) -> dict[str, bytes]:
    """Every case compiled in a new process for ``baseline``'s features, tuned for LLVM CPU ``cpu``: the kept
    objects and constants files it wrote, by name."""
    with tempfile.TemporaryDirectory(prefix="xlashapes-prebuilt-") as cache:
        env = environment(XLASHAPES_CACHE_DIR=cache, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES=feature_string(baseline),
                          **{_prebuilt.NO_PREBUILT_VARIABLE: "1"})  # (every case, compiled and kept)
        built = worked(env, baseline.machine != platform.machine())
        if built["digests"] != host_digests():
            raise SystemExit(f"{baseline.name} ({cpu}): the compiled kernels' bytes differ from this host's")
        folders = glob.glob(os.path.join(cache, kernels_digest(), "aot-*"))
        if len(folders) != 1:
            raise SystemExit(f"expected one folder of kept objects for {baseline.name}, found {folders}")
        members = {}
        for name in sorted(os.listdir(folders[0])):
            if name.endswith((".o", ".constants.json")):
                with open(os.path.join(folders[0], name), "rb") as source:
                    members[name] = source.read()
        return members


def build(baseline: _prebuilt.Baseline, out_folder: str) -> str:
    """Compile every case for ``baseline`` (its ``plain`` entries in a second build, with the generic tuning) and
    write its zip; returns the zip's path."""
    members = compiled(baseline, baseline.cpu)
    if baseline.plain:
        plain = compiled(baseline, baseline.plain)
        if set(plain) != set(members):
            raise SystemExit(f"{baseline.name}: the two tunings' builds kept different entries")
        members = {name: (plain if baseline.cpu_of(name) == baseline.plain else members)[name] for name in members}
    path = os.path.join(out_folder, baseline.name + ".zip")
    manifest = {"kernels": kernels_digest(), "name": baseline.name, "cpu": baseline.cpu, "plain": baseline.plain,
                "features": list(baseline.features),
                "machine": baseline.machine, "platform": baseline.platform, "compiler": _compiler()}
    with zipfile.ZipFile(path + ".tmp", "w") as archive:
        for name in ["manifest.json", *sorted(members)]:
            data = json.dumps(manifest, indent=1, sort_keys=True).encode() if name == "manifest.json" else members[name]
            info = zipfile.ZipInfo(name, STAMP)
            info.compress_type = zipfile.ZIP_LZMA
            archive.writestr(info, data)
    os.replace(path + ".tmp", path)
    if baseline.machine != platform.machine():
        checked(baseline)
    return path


def _compiler() -> dict[str, str]:
    """The numba and llvmlite versions that built the objects (for the record: any version may load them)."""
    import llvmlite
    import numba

    return {"numba": str(numba.__version__), "llvmlite": str(llvmlite.__version__)}


def main() -> None:
    if sys.argv[1:] == ["--work"]:
        work()
        return
    names = [b.name for b in _prebuilt.BASELINES]
    parser = argparse.ArgumentParser(description="Build the shipped machine code, one zip per baseline CPU.")
    parser.add_argument("--only", metavar="NAMES", help=f"comma-separated baselines of: {', '.join(names)}")
    chosen = parser.parse_args().only
    wanted = names if chosen is None else chosen.split(",")
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        parser.error(f"no baseline named {', '.join(unknown)} (there are: {', '.join(names)})")
    baselines = [b for b in _prebuilt.BASELINES if b.name in wanted]
    host_digests()
    out_folder = os.path.dirname(_prebuilt.__file__)
    out_folder = os.path.join(out_folder, "prebuilt")
    os.makedirs(out_folder, exist_ok=True)
    with ThreadPoolExecutor(2) as pool:
        for path in pool.map(lambda baseline: build(baseline, out_folder), baselines):
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
            print(f"{os.path.relpath(path, ROOT)}: {sum(n.endswith('.o') for n in names)} objects, "
                  f"{os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()
