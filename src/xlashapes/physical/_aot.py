"""The compiled kernels' machine code kept on disk and loaded without numba: a new process pays ~0.05 s, not 0.3 s.

**Why.** numba's own cache (``cache=True``) still needs ``import numba`` (~0.17 s) and its dispatchers (~0.1 s
more) in every new process. The machine code is all that a call needs: numba compiles each kernel overload with
its callees compiled into it (:func:`._intrinsics._subroutine`), and keeps the object code of the result
(``CodeLibrary._get_compiled_object()``).

**What is kept.** After the first numba call of an entry point (:mod:`._entries`) for one set of argument types,
that overload's object code is written to ``<kernel cache>/aot-<host>/``, with a header naming the entry, the
argument-types key, the symbol and the machine types of its argument words, and a digest of the code. The
directory is keyed by the kernel-source digest (:func:`._cache.kernels_directory`), and ``<host>`` by llvmlite's
host CPU name and feature string, the llvmlite, numba and Python versions and the machine: code built for
another CPU or another numba is never read. Files are written whole (a temporary file, then a rename). When a
process compiles, the caches of other kernel-source versions and the kept code of other hosts that no process has
used for 30 days are removed (loading kept code marks its directories used).

**What is loaded.** :class:`Entry` calls the overload's *native* function (numba's calling convention: a status
word, a return slot, an exception slot, then the arguments flattened into words) through ``ctypes``, which drops
the GIL during the call, so the threaded paths keep working. Only ``llvmlite.binding`` is imported: an MCJIT
engine for the host, ``add_object_file`` and ``get_function_address``. Before an object is added, its undefined
symbols are read from its ELF symbol table and each is given an address, so that MCJIT never meets one it cannot
resolve (that aborts the process): C library and Python API symbols from the process itself; the few numba
runtime functions a kernel itself may call (``NRT_MemInfo_alloc_aligned`` and ``NRT_MemInfo_call_dtor`` for a
kernel's own small ``np.zeros``) from a minimal allocator compiled here (a meminfo header and the data in one
``malloc`` block, with the field order numba's inlined reference counting reads); and numba's ``numba_*`` and
``NRT_adapt_*`` helpers, which only the overload's CPython wrapper (never called here) refers to, a trap. Any other
symbol, a wrong key, a short or corrupt file, or a load error: the entry silently takes numba's path (which then
writes the object). A nonzero status (a kernel that raised, e.g. a division by zero) reruns the call through
numba, so that the same Python exception as before is raised.

**Shipped with the package.** Where this host has no kept object for an overload, :func:`load` takes the one the
package ships for the host's baseline CPU (:mod:`._prebuilt`: the same files, built ahead of time for x86-64 and
64-bit ARM Linux hosts), checked the same way but for the host key (the archive as a whole was checked for this host).

**Compiled once across processes.** Processes that start together on a cold cache (the test suite's warm-up and
its tests, parallel ``xlashapes pack`` jobs) would each compile every kernel they meet. Before compiling an
overload, a process takes that overload's lock file (``flock``) in the kept code's directory and looks for its
kept code again: a process that had to wait for another one compiling it loads that code instead of compiling it
too (:func:`compiling`; no lock where files cannot be locked, at most ``LOCK_WAIT`` seconds of waiting).

**Measured** (``bench_physical.py --no-matrix --startup``, f32[16384,1024]{0,1:T(8,128)} to and from, this 2-core
machine): a new process's first conversion costs 0.07 s more than a second one with kept code (llvmlite 0.03 s,
engine 0.01 s, loading the objects), 0.42-0.47 s with numba's cache; writing the objects adds milliseconds to the
cold first use; peak RSS 231 MiB against 286 MiB with numba (166 MiB on the NumPy path).

**Why not separate ``cfunc`` wrappers.** The brief proposed one ``numba.cfunc`` per entry and width taking only
int64 words. Measured here: compiling such a wrapper costs 0.7-1.2 s per entry and width on first use (numba
re-generates the kernel's machine code into the wrapper's module), which would push the cold first use past 3 s;
and a ``cfunc`` wrapper reports errors through numba's Python helpers (``numba_gil_ensure``, ``numba_unpickle``),
so those would have to resolve without numba. The native functions numba already compiled cost nothing more to
keep, are the very code the numba path runs, and report errors as a status the caller can act on.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from typing import Any

from ._cache import cache_directory, kernels_digest, kernels_directory, mark_used, prune_stale
from ._entries import ENTRIES, flattened, keyed_words, native_entry
from ._prebuilt import archive

MAGIC = b"xlashapes-aot-1\n"
"""First bytes of a kept object file (then one line of JSON header, then the object code)."""

_WORD_TYPES = {"i8": "c_uint8", "i16": "c_uint16", "i32": "c_uint32", "i64": "c_int64", "ptr": "c_void_p",
               "float": "c_float", "double": "c_double"}  # ctypes' names (ctypes is imported on first load)
_NRT = ("NRT_MemInfo_alloc_aligned", "NRT_MemInfo_alloc_safe_aligned", "NRT_MemInfo_call_dtor", "NRT_Free",
        "NRT_Allocate")
# a minimal numba runtime: meminfo {refct, dtor, dtor_info, data, size, external allocator} and data in one block
_RUNTIME_IR = """
declare ptr @malloc(i64)
declare void @free(ptr)
define ptr @NRT_MemInfo_alloc_aligned(i64 %size, i32 %align) {
entry:
  %a = zext i32 %align to i64
  %small = icmp ult i64 %a, 16
  %al = select i1 %small, i64 16, i64 %a
  %head = add i64 %size, 48
  %total = add i64 %head, %al
  %p = call ptr @malloc(i64 %total)
  %none = icmp eq ptr %p, null
  br i1 %none, label %fail, label %ok
fail:
  ret ptr null
ok:
  %base = ptrtoint ptr %p to i64
  %m = sub i64 %al, 1
  %d0 = add i64 %base, 48
  %d1 = add i64 %d0, %m
  %nm = xor i64 %m, -1
  %d = and i64 %d1, %nm
  %data = inttoptr i64 %d to ptr
  store i64 1, ptr %p
  %f1 = getelementptr i8, ptr %p, i64 8
  store ptr null, ptr %f1
  %f2 = getelementptr i8, ptr %p, i64 16
  store ptr null, ptr %f2
  %f3 = getelementptr i8, ptr %p, i64 24
  store ptr %data, ptr %f3
  %f4 = getelementptr i8, ptr %p, i64 32
  store i64 %size, ptr %f4
  %f5 = getelementptr i8, ptr %p, i64 40
  store ptr null, ptr %f5
  ret ptr %p
}
define ptr @NRT_MemInfo_alloc_safe_aligned(i64 %size, i32 %align) {
  %p = call ptr @NRT_MemInfo_alloc_aligned(i64 %size, i32 %align)
  ret ptr %p
}
define void @NRT_MemInfo_call_dtor(ptr %mi) {
  call void @free(ptr %mi)
  ret void
}
define void @NRT_Free(ptr %p) {
  call void @free(ptr %p)
  ret void
}
define ptr @NRT_Allocate(i64 %size) {
  %p = call ptr @malloc(i64 %size)
  ret ptr %p
}
"""
_TRAPPED = ("numba_", "NRT_adapt_")  # numba helpers only a CPython wrapper calls: they get a trap


NO_AOT_VARIABLE = "XLASHAPES_NO_AOT"
"""Set to anything but empty or 0: kept machine code is neither loaded nor written (numba's path, as before)."""


def aot_enabled() -> bool:
    """False when ``XLASHAPES_NO_AOT`` turns kept machine code off.

    >>> isinstance(aot_enabled(), bool)
    True
    """
    return os.environ.get(NO_AOT_VARIABLE, "").strip() in ("", "0")


def numba_available() -> bool:
    """True when numba can be imported (found on the path, not blocked), without importing it.

    >>> isinstance(numba_available(), bool)
    True
    """
    if "numba" in sys.modules:
        return sys.modules["numba"] is not None
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=1)
def host_key() -> dict[str, str] | None:
    """What kept machine code must have been built for: the host CPU and features (llvmlite), the llvmlite,
    numba and Python versions, the machine; None without llvmlite or numba."""
    try:
        import platform

        import llvmlite
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features().flatten()
        cpu = llvm.get_host_cpu_name()
    except Exception:  # no llvmlite, or one that cannot load here
        return None
    version = _numba_version()
    if version is None:
        return None
    return {
        "cpu": str(cpu), "features": str(features), "llvmlite": str(llvmlite.__version__), "numba": version,
        "python": sys.version, "machine": platform.machine(), "platform": sys.platform,
        "numba_cpu": os.environ.get("NUMBA_CPU_NAME", "") + "|" + os.environ.get("NUMBA_CPU_FEATURES", ""),
    }


def _numba_version() -> str | None:
    """A digest of numba's version file (found without importing numba), or None."""
    try:
        spec = importlib.util.find_spec("numba")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = next(iter(spec.submodule_search_locations))
    try:
        with open(os.path.join(folder, "_version.py"), "rb") as source:
            return hashlib.sha256(source.read()).hexdigest()[:16]
    except OSError:
        return None


def aot_directory() -> str | None:
    """Where this host's kept objects for this version of the kernels are (None: no llvmlite or numba).

    >>> folder = aot_directory()
    >>> folder is None or os.path.basename(folder).startswith("aot-")
    True
    """
    key = host_key()
    if key is None:
        return None
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(kernels_directory(), "aot-" + digest)


def _object_path(folder: str, module: str, name: str, key: str) -> str:
    """The file of one entry's overload for the argument-types ``key``."""
    return os.path.join(folder, f"{module.strip('_')}.{name}.{hashlib.sha256(key.encode()).hexdigest()[:16]}.o")


def save(module: str, name: str, key: str, dispatcher: Any, args: tuple[Any, ...]) -> bool:
    """Write the object code of the overload ``dispatcher`` just ran for ``args``; False when none was written."""
    if not aot_enabled():
        return False
    folder = aot_directory()
    native = native_entry(dispatcher, args)
    host = host_key()
    if folder is None or native is None or host is None:
        return False
    symbol, words, code = native
    header = {"entry": f"{module}.{name}", "key": key, "host": host, "symbol": symbol, "words": words,
              "sha256": hashlib.sha256(code).hexdigest(), "size": len(code)}
    return _write(_object_path(folder, module, name, key), MAGIC + json.dumps(header).encode() + b"\n" + code)


def save_constants(module: str, values: dict[str, int]) -> bool:
    """Write a kernel module's integer constants: the file tells a later process that this module's kernels were
    compiled here (so their kept machine code may be tried before numba is imported). Kernel caches of other
    source versions, and kept code of other hosts, unused for ``STALE_DAYS``, are removed then (a compile is rare:
    once per version and host)."""
    folder = aot_directory()
    if folder is None:
        return False
    prune_stale(cache_directory(), "kernels-", kernels_digest())
    prune_stale(kernels_directory(), "aot-", os.path.basename(folder))
    return _write(os.path.join(folder, f"{module.strip('_')}.constants.json"), json.dumps(values).encode())


def _write(path: str, data: bytes) -> bool:
    """``data`` into ``path`` whole (a temporary file in the same folder, then a rename); False on any error."""
    import tempfile

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return False
    return True


def constants(module: str) -> dict[str, int] | None:
    """The kept integer constants of a kernel module (the host's, else the shipped ones), or None.

    >>> constants("_no_such_module") is None
    True
    """
    name = f"{module.strip('_')}.constants.json"
    folder = aot_directory()
    data = None
    if folder is not None:
        try:
            with open(os.path.join(folder, name), "rb") as source:
                data = source.read()
        except OSError:
            pass
    shipped = archive() if data is None and aot_enabled() else None
    data = shipped.read(name) if shipped is not None else data
    try:
        values = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return values if isinstance(values, dict) and all(isinstance(v, int) for v in values.values()) else None


LOCK_WAIT = 300.0
"""Seconds a process waits for another one compiling the same kernel overload before compiling it itself."""


@contextmanager
def compiling(module: str, name: str, key: str) -> Iterator[None]:
    """Hold the lock of one entry's overload while compiling it: processes that start together on a cold cache
    (the suite's warm-up and its tests, parallel ``xlashapes pack`` jobs) compile each overload once, the others
    wait and load its kept code. No lock (nothing to wait for) where files cannot be locked.

    >>> with compiling("_walk", "walk_squares", "no such key"):
    ...     pass
    """
    folder = aot_directory() if aot_enabled() else None
    handle = None
    try:
        import fcntl

        if folder is not None and key:
            os.makedirs(folder, exist_ok=True)
            handle = open(_object_path(folder, module, name, key)[:-2] + ".lock", "wb")
            deadline = time.monotonic() + LOCK_WAIT
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
    except (ImportError, OSError):
        pass
    try:
        yield
    finally:
        if handle is not None:
            handle.close()  # (closing the file releases the lock)


class Native:
    """One loaded overload: ``native(args)`` runs it and returns numba's status (0: done)."""

    def __init__(self, address: int, words: list[str]) -> None:
        import ctypes

        types = [getattr(ctypes, _WORD_TYPES[word]) for word in words]
        self.function = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, *types)(address)
        self.count = len(words)
        self.slots = ctypes.c_int64 * 8  # the return slot and the exception slot (fresh for each call: threads)
        self.address_of = ctypes.addressof

    def __call__(self, args: tuple[Any, ...]) -> int:
        return self.run(flattened(args))

    def run(self, words: list[int | float]) -> int:
        """Run it on its arguments' machine words (:func:`._entries.flattened`); numba's status (0: done)."""
        if len(words) != self.count:
            return -1
        slots = self.slots()
        base = self.address_of(slots)
        return int(self.function(base, base + 32, *words))


def load(module: str, name: str, key: str) -> Native | None:
    """The kept overload of one entry for the argument-types ``key``, loaded: the host's own (compiled here), else
    the shipped one (:mod:`._prebuilt`); None when there is none usable.

    >>> load("_walk", "walk_squares", "no such key") is None
    True
    """
    if not aot_enabled() or not key:
        return None
    parsed = _kept(module, name, key)
    if parsed is None:
        return None
    symbol, words, code = parsed
    try:
        address = _engine().add(code, symbol)
    except Exception:  # llvmlite refused the object, or a symbol it needs has no address here
        return None
    return None if address is None else Native(address, words)


def _kept(module: str, name: str, key: str) -> tuple[str, list[str], bytes] | None:
    """(symbol, words, code) of the overload's object: the host's own, else the shipped one; None without either."""
    folder = aot_directory()
    host = host_key()
    path = _object_path(folder or "", module, name, key)
    if folder is not None and host is not None:
        try:
            with open(path, "rb") as source:
                parsed = _parsed(source.read(), f"{module}.{name}", key, host)
        except OSError:
            parsed = None
        if parsed is not None:
            _mark_used(folder)
            return parsed
    shipped = archive()
    data = shipped.read(os.path.basename(path)) if shipped is not None else None
    return None if data is None else _parsed(data, f"{module}.{name}", key, None)


@cache
def _mark_used(folder: str) -> None:
    """Mark ``folder`` and its kernel cache as used by this process, once (:func:`._cache.mark_used`)."""
    mark_used(folder, os.path.dirname(folder))


def _parsed(data: bytes, entry: str, key: str, host: dict[str, str] | None) -> tuple[str, list[str], bytes] | None:
    """(symbol, words, code) of a kept file, when it is whole and made for this entry, key and host (any host:
    None, for the shipped files, whose archive was checked for this host).

    >>> _parsed(MAGIC + b'{"entry": "_walk.pack"}' + b"\\n", "_walk.pack", "", {}) is None
    True
    """
    if not data.startswith(MAGIC):
        return None
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        return None
    try:
        header = json.loads(data[len(MAGIC) : end])
    except ValueError:
        return None
    code = data[end + 1 :]
    if not isinstance(header, dict) or header.get("entry") != entry or header.get("key") != key:
        return None
    if (host is not None and header.get("host") != host) or header.get("size") != len(code):
        return None
    if header.get("sha256") != hashlib.sha256(code).hexdigest():
        return None
    words, symbol = header.get("words"), header.get("symbol")
    if not isinstance(symbol, str) or not isinstance(words, list) or not all(w in _WORD_TYPES for w in words):
        return None
    return symbol, words, code


def undefined_symbols(code: bytes) -> list[str] | None:
    """The undefined symbols of a 64-bit little-endian ELF object, or None when ``code`` is not one (or is cut).

    >>> undefined_symbols(b"not an object") is None
    True
    """
    try:
        if code[:6] != b"\x7fELF\x02\x01" or struct.unpack_from("<H", code, 0x10)[0] != 1:  # ET_REL
            return None
        (section_offset,) = struct.unpack_from("<Q", code, 0x28)
        size, count = struct.unpack_from("<HH", code, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", code, section_offset + k * size) for k in range(count)]
        if size != 64 or not any(section[1] == 2 for section in sections):
            return None
        names: list[str] = []
        for section in sections:
            if section[1] != 2:  # SHT_SYMTAB
                continue
            strings = sections[section[6]]
            start, length, step = section[4], section[5], section[9] or 24
            if start + length > len(code) or strings[4] + strings[5] > len(code):
                return None
            for at in range(start + step, start + length, step):  # (entry 0 is the null symbol)
                name_at, info, _, index = struct.unpack_from("<IBBH", code, at)
                if index == 0 and info >> 4 in (1, 2) and name_at:
                    end = code.index(b"\0", strings[4] + name_at)
                    names.append(code[strings[4] + name_at : end].decode())
        return names
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None


class _Engine:
    """One MCJIT engine for the host, holding the minimal runtime and every loaded object."""

    def __init__(self) -> None:
        import ctypes

        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.llvm = llvm
        target = llvm.Target.from_default_triple()
        self.machine = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                                    features=llvm.get_host_cpu_features().flatten(),
                                                    codemodel="jitdefault", jit=True)
        self.ctypes = ctypes
        self.process = ctypes.CDLL(None)
        for name in ("malloc", "free"):
            self._from_process(name)
        runtime = self._module(_RUNTIME_IR)
        self.engine = llvm.create_mcjit_compiler(runtime, self.machine)
        self.engine.finalize_object()
        self.defined = set(_NRT)
        self.kept: list[Any] = []
        self.lock = threading.Lock()

    def _module(self, text: str) -> Any:
        """An IR module for the host from assembly text."""
        module = self.llvm.parse_assembly(text)
        module.triple = self.llvm.get_process_triple()
        module.data_layout = str(self.machine.target_data)
        module.verify()
        return module

    def _from_process(self, name: str) -> bool:
        """Make ``name`` resolve to the process's own symbol (C library, Python API); False when it has none."""
        try:
            address = self.ctypes.cast(self.process[name], self.ctypes.c_void_p).value
        except AttributeError:
            return False
        if not address:
            return False
        self.llvm.add_symbol(name, address)
        return True

    def add(self, code: bytes, symbol: str) -> int | None:
        """Load one object and return the address of ``symbol`` (None when a symbol it needs cannot be given)."""
        needed = undefined_symbols(code)
        if needed is None:
            return None
        with self.lock:
            traps = []
            for name in needed:
                if name in self.defined or self._from_process(name):
                    continue
                if not name.startswith(_TRAPPED) or '"' in name or "\\" in name:
                    return None
                traps.append(name)
            if traps:
                text = "declare void @llvm.trap()\n" + "".join(
                    f'define void @"{name}"() {{\n  call void @llvm.trap()\n  unreachable\n}}\n' for name in traps)
                self.engine.add_module(self._module(text))
                self.defined.update(traps)
            objects = self.llvm.ObjectFileRef.from_data(code)
            self.engine.add_object_file(objects)
            self.kept.append(objects)
            self.engine.finalize_object()
            address = int(self.engine.get_function_address(symbol))
        return address or None


_ENGINE: list[_Engine] = []
_ENGINE_LOCK = threading.Lock()


def _engine() -> _Engine:
    """The process's engine, made on first use."""
    with _ENGINE_LOCK:
        if not _ENGINE:
            _ENGINE.append(_Engine())
        return _ENGINE[0]


def engine_loaded() -> bool:
    """True once this process has loaded kept machine code (the compiled path is then as cheap as with numba).

    >>> isinstance(engine_loaded(), bool)
    True
    """
    return bool(_ENGINE)


class Unavailable(RuntimeError):
    """A kernel without kept machine code needed numba, and numba could not be imported or could not compile it (the
    call is done again on the NumPy path: :func:`xlashapes.physical._dispatch.with_fallback`)."""


def _compile_error() -> type[Exception]:
    """numba's class of compile-time errors (typing, lowering: a kernel's own run-time exceptions are not among
    them); numba is imported by the time a kernel runs through it."""
    from numba.core.errors import NumbaError

    error: type[Exception] = NumbaError
    return error


_FAILED: list[bool] = []  # set once numba failed to import or to compile: the compiled paths are off from then on


def numba_failed() -> bool:
    """True once a kernel needed numba in this process and numba could not be imported or could not compile it.

    >>> isinstance(numba_failed(), bool)
    True
    """
    return bool(_FAILED)


@cache
def numba_module(module: str) -> Any:
    """The numba kernel module ``xlashapes.physical.<module>`` (imports numba); its constants are kept on disk."""
    loaded = importlib.import_module(f"{__package__}.{module}")
    values = {k: v for k, v in vars(loaded).items() if k.isupper() and type(v) is int}
    if constants(module) != values:
        save_constants(module, values)
    return loaded


_UNSET: Any = object()
_FIRST_USES = [0.0, 0]  # seconds spent loading the overloads first met in this process; overloads compiled (or
# waited for while another process compiled them)
_CLOCK = time.perf_counter  # (bound here: the loading time is real seconds, whatever clock a test gives the tuner)


def first_uses() -> tuple[float, int]:
    """The seconds this process has spent loading kept machine code of overloads it met for the first time, and how
    many overloads it compiled or waited for another process to compile (a call that did either took longer than
    its kernels did).

    >>> seconds, compiled = first_uses(); seconds >= 0 and compiled >= 0
    True
    """
    return _FIRST_USES[0], int(_FIRST_USES[1])


class Entry:
    """One kernel entry point: its kept machine code when this process can load it, else numba's dispatcher
    (which then keeps its machine code). Other attributes are the dispatcher's (they import numba)."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        self.natives: dict[str, Native | None] = {}
        self.written: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, *args: Any) -> None:
        key, words = keyed_words(args)
        native = self.natives.get(key, _UNSET)
        if native is _UNSET:
            with self.lock:
                native = self.natives.get(key, _UNSET)
                if native is _UNSET:
                    start = _CLOCK()
                    native = self.natives[key] = load(self.module, self.name, key)
                    _FIRST_USES[0] += _CLOCK() - start
        if native is not None and native.run(words) == 0:
            return
        if native is None and key and key not in self.written:
            _FIRST_USES[1] += 1
            with compiling(self.module, self.name, key):  # another process compiling it: wait, then take its code
                native = load(self.module, self.name, key)
                if native is not None:
                    self.natives[key] = native
                    if native(args) == 0:
                        return
                else:
                    self.written.add(key)
                    save(self.module, self.name, key, self._numba_call(args), args)
                    return
        self._numba_call(args)

    def _numba_call(self, args: tuple[Any, ...]) -> Callable[..., Any]:
        """Call numba's dispatcher (compiling the overload on first use) and return it."""
        function = self.dispatcher()
        try:
            function(*args)
        except _compile_error() as error:  # numba is here but cannot compile the kernel (e.g. a release that
            _FAILED.append(True)  # changed what the kernels use of it): the NumPy path, from now on
            raise Unavailable(f"numba cannot compile {self.name}: {error}") from error
        return function

    def dispatcher(self) -> Callable[..., Any]:
        """numba's dispatcher of this entry (imports numba); :class:`Unavailable` when numba cannot be imported."""
        try:
            module = numba_module(self.module)
        except (ImportError, OSError) as error:  # found, but it cannot load here (e.g. a NumPy it does not support)
            _FAILED.append(True)
            raise Unavailable(f"numba cannot be imported: {error}") from error
        function: Callable[..., Any] = getattr(module, self.name)
        return function

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)


class Entries:
    """A kernel module's entry points (:class:`Entry`) under the module's names; its other attributes (none of
    which the dispatch reads) from the numba module itself."""

    def __init__(self, module: str) -> None:
        self._module = module
        for name in ENTRIES[module]:
            setattr(self, name, Entry(module, name))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_module":
            raise AttributeError(name)
        return getattr(numba_module(self._module), name)


def entries(module: str) -> Entries | None:
    """The entry points of kernel module ``module`` ("_walk", "_kernels"), or None when numba is missing or
    cannot load. Kept machine code is used where there is some; else numba's module is imported at once."""
    if not numba_available():
        return None
    if not aot_enabled() or constants(module) is None:  # nothing kept: numba now, as before (None if it cannot load)
        try:
            numba_module(module)
        except (ImportError, OSError):
            return None
    return Entries(module)
