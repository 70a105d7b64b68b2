"""Python for 64-bit ARM Linux on this x86-64 host, under QEMU's user-mode emulator: to build and check the aarch64
machine code shipped with the package (``tools/build_prebuilt.py``), or to run anything of the project there.

    python tools/aarch64_python.py -c "import platform; print(platform.machine())"   # aarch64

The first use prepares ``$XLASHAPES_AARCH64_ROOT`` (default ``~/.cache/xlashapes-aarch64``; about 400 MiB, a
minute): Debian's ``qemu-user-static`` on the host (apt, as root), Debian's arm64 packages of Python 3.11 and the
libraries it and the wheels load, unpacked into ``root/`` (``apt-get download`` and ``dpkg -x``: nothing runs as
arm64 to install them, so no binfmt registration is needed), and the arm64 wheels of numpy, ml_dtypes, numba and
llvmlite at this host's own versions (and pytest, pytest-xdist, hypothesis) in ``site/`` (``pip install --target
--platform``).
QEMU runs the arm64 interpreter with ``QEMU_LD_PREFIX=root``, so its libraries and standard library are found there,
and as ``argv[0]`` a script that starts it again, so that ``sys.executable`` works for subprocesses.
Emulated, numba compiles ~25x slower than natively (the whole kernel warm-up: ~40 min).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = os.environ.get("XLASHAPES_AARCH64_ROOT") or os.path.expanduser("~/.cache/xlashapes-aarch64")
QEMU = "qemu-aarch64-static"
PACKAGES = ("python3.11", "libpython3.11-stdlib", "libstdc++6", "libgcc-s1", "libgomp1")
WHEELS = ("numpy", "ml_dtypes", "numba", "llvmlite")  # at this host's versions
TEST_WHEELS = ("pytest", "pytest-xdist", "hypothesis")  # (the project's pytest options name -n)
PLATFORMS = ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64")  # (glibc 2.36 in bookworm)


def _run(command: list[str], **kwargs: object) -> str:
    """``command``'s output; exits with its error output when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} ...: {done.stderr.strip()[-2000:]}")
    return str(done.stdout)


def _closure(packages: tuple[str, ...]) -> list[str]:
    """The arm64 packages that ``packages`` need, themselves included (apt's recursive dependencies)."""
    listed = _run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                   "--no-breaks", "--no-replaces", "--no-enhances", *(f"{p}:arm64" for p in packages)])
    return sorted({line.split(":")[0] for line in listed.splitlines() if line[:1].isalnum() and "<" not in line})


def prepare() -> None:
    """Make ``ROOT`` (the emulator, the arm64 root and the wheels) unless it is there with these wheels."""
    pins = [f"{name}=={metadata.version(name)}" for name in WHEELS]
    mark = " ".join([*pins, *TEST_WHEELS]) + "\n"
    ready = Path(ROOT, "ready")
    if ready.exists() and ready.read_text() == mark:
        return
    if shutil.which(QEMU) is None:
        quiet = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        _run(["apt-get", "install", "-y", "-q", "qemu-user-static"], env=quiet)
    if "arm64" not in _run(["dpkg", "--print-foreign-architectures"]).split():
        _run(["dpkg", "--add-architecture", "arm64"])
        _run(["apt-get", "update", "-q"])
    debs, root, site = (os.path.join(ROOT, name) for name in ("debs", "root", "site"))
    for folder in (debs, root):
        os.makedirs(folder, exist_ok=True)
    for package in _closure(PACKAGES):  # (arch-independent ones have no :arm64 version)
        if subprocess.run(["apt-get", "download", "-q", f"{package}:arm64"], cwd=debs, capture_output=True).returncode:
            _run(["apt-get", "download", "-q", package], cwd=debs)
    for name in sorted(os.listdir(debs)):
        _run(["dpkg", "-x", os.path.join(debs, name), root])
    _run([sys.executable, "-m", "pip", "install", "-q", "--target", site, "--python-version", "3.11",
          "--implementation", "cp", "--abi", "cp311", "--only-binary=:all:",
          *(f"--platform={tag}" for tag in PLATFORMS),
          *pins, *TEST_WHEELS])
    ready.write_text(mark)


def command() -> list[str]:
    """The command that starts the emulated interpreter (after :func:`prepare`): ``ROOT/python``, a script that runs
    it under QEMU as its own ``argv[0]``, so that its ``sys.executable`` starts new emulated processes too."""
    script = os.path.join(ROOT, "python")
    if not os.path.exists(script):
        with open(script + ".tmp", "w") as out:
            out.write(f'#!/bin/sh\nexec {QEMU} -0 "$0" {os.path.join(ROOT, "root", "usr", "bin", "python3.11")} "$@"\n')
        os.chmod(script + ".tmp", 0o755)
        os.replace(script + ".tmp", script)
    return [script]


def environment(paths: list[str], base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) for the emulated interpreter, with ``paths`` before its wheels."""
    env = dict(os.environ if base is None else base)
    env["QEMU_LD_PREFIX"] = os.path.join(ROOT, "root")
    env["PYTHONPATH"] = os.pathsep.join([*paths, os.path.join(ROOT, "site")])
    return env


def main() -> None:
    prepare()
    project = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [os.path.join(project, "src"), os.path.join(project, "tests")]
    sys.exit(subprocess.run([*command(), *sys.argv[1:]], env=environment(paths)).returncode)


if __name__ == "__main__":
    main()
