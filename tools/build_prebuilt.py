"""Build the compiled kernels' machine code shipped with the package (``src/xlashapes/physical/prebuilt/*.zip``).

    python tools/build_prebuilt.py            # every baseline, two at a time (about 75 s each on this machine)

For each baseline CPU (``_prebuilt.BASELINES``: x86-64-v4 with and without VBMI, x86-64-v3; Linux), a new process
compiles every
kernel overload that the suite's kernel worker (``tests/kernel_worker.py``: every entry point and element width,
both directions, one and two threads) and the benchmark's layouts (``benchmarks/bench_physical.py``, at 1/16 of
their size) use, with numba told to build for that CPU (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``) into an empty
kernel cache. The kept objects it writes (``_aot.save``) and the kernel modules' constants are then put in one zip
per baseline, with a manifest naming the kernel sources' digest, the CPU and the features a host needs to run them.
Run it again whenever a kernel source changes: ``test_physical_prebuilt`` fails until then.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "src"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "benchmarks")]

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
    """In the building process: run every case on the compiled path (numba compiles and keeps each overload)."""
    import kernel_worker

    report = kernel_worker.report()  # (sets the compiled-path thresholds to 0)
    extra = bench_cases()
    for text in extra:
        kernel_worker.digest_of(text)
    print(json.dumps({"cases": len(report["digests"]) + len(extra), "numba": report["numba"]}))


def build(baseline: _prebuilt.Baseline, out_folder: str) -> str:
    """Compile every case for ``baseline`` in a new process and write its zip; returns the zip's path."""
    with tempfile.TemporaryDirectory(prefix="xlashapes-prebuilt-") as cache:
        features = ",".join("+" + feature for feature in baseline.features)
        env = dict(os.environ, XLASHAPES_CACHE_DIR=cache, NUMBA_CPU_NAME=baseline.cpu, NUMBA_CPU_FEATURES=features,
                   PYTHONPATH=os.pathsep.join(sys.path[:3]))
        env[_prebuilt.NO_PREBUILT_VARIABLE] = "1"
        for variable in ("XLASHAPES_NO_NUMBA", "XLASHAPES_NO_AOT", "XLASHAPES_WORKER_CASES", "XLASHAPES_WORKER_PART"):
            env.pop(variable, None)  # (every case, compiled and kept)
        subprocess.run([sys.executable, __file__, "--work"], env=env, check=True)
        folders = glob.glob(os.path.join(cache, kernels_digest(), "aot-*"))
        if len(folders) != 1:
            raise SystemExit(f"expected one folder of kept objects for {baseline.name}, found {folders}")
        members = sorted(os.listdir(folders[0]))
        path = os.path.join(out_folder, baseline.name + ".zip")
        manifest = {"kernels": kernels_digest(), "name": baseline.name, "cpu": baseline.cpu,
                    "features": list(baseline.features),
                    "machine": baseline.machine, "platform": baseline.platform, "compiler": _compiler()}
        with zipfile.ZipFile(path + ".tmp", "w") as archive:
            for name in ["manifest.json", *members]:
                if name != "manifest.json" and not name.endswith((".o", ".constants.json")):
                    continue
                if name == "manifest.json":
                    data = json.dumps(manifest, indent=1, sort_keys=True).encode()
                else:
                    with open(os.path.join(folders[0], name), "rb") as source:
                        data = source.read()
                info = zipfile.ZipInfo(name, STAMP)
                info.compress_type = zipfile.ZIP_LZMA
                archive.writestr(info, data)
        os.replace(path + ".tmp", path)
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
    out_folder = os.path.dirname(_prebuilt.__file__)
    out_folder = os.path.join(out_folder, "prebuilt")
    os.makedirs(out_folder, exist_ok=True)
    with ThreadPoolExecutor(2) as pool:
        for path in pool.map(lambda baseline: build(baseline, out_folder), _prebuilt.BASELINES):
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
            print(f"{os.path.relpath(path, ROOT)}: {sum(n.endswith('.o') for n in names)} objects, "
                  f"{os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()
