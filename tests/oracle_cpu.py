"""XLA's CPU backend and JAX's ``lax`` as test oracles, in a worker process, many cases per compile.

Compiling is what costs (~30 ms a module, of which ~15 ms per kernel); running is nearly free.
``CpuRunner.run_many`` merges independent lowered modules (``xlashapes.broadcast.lower_binary`` output) into
modules of up to ``CHUNK`` cases whose ROOT is the tuple of every case's result, each compiled and run once; when a
merged module fails, its cases run alone, so a failure names its own case. ``CpuRunner.lax_many`` computes
``lax.broadcast_in_dim`` + ``lax.<op>`` for many cases in one jitted function. ``Background`` runs such a batch on
a thread that only waits for the worker, so the worker compiles on the second core while pytest runs other tests.

The worker compiles with ``--xla_backend_optimization_level=0`` (LLVM's optimizations off), which halves XLA:CPU's
compile time. It changes no value the tests compare exactly: of the 364 parametrized XLA:CPU cases only complex
multiply and divide differ from the default level (by FMA contraction, a few ulp), and those are compared within
16 ulp at either level.
"""

from __future__ import annotations

import atexit
import base64
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

import xlashapes as xs
from xla_oracle import WorkerProcess

_RUNNER = r"""
import base64, json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import jax.extend.backend
from jaxlib import _hlo, xla_client as xc
import xlashapes as xs
backend = jax.extend.backend.get_backend("cpu")
device = backend.devices()[0]
def decode(spec):
    dtype = xs.element_type(spec["type"]).numpy_dtype
    return np.frombuffer(base64.b64decode(spec["data"]), dtype=dtype).reshape(spec["shape"])
def encode(array):
    array = np.asarray(array)
    return {"type": xs.element_type(array.dtype).name, "shape": list(array.shape),
            "data": base64.b64encode(array.tobytes()).decode()}
def run(request):
    proto = _hlo.hlo_module_from_text(request["module"]).as_serialized_hlo_module_proto()
    executable = backend.compile_and_load(xc._xla.mlir.hlo_to_stablehlo(proto), xc.DeviceList((device,)),
                                          xc.CompileOptions())
    outputs = executable.execute([jax.device_put(decode(a), device) for a in request["args"]])
    return [np.asarray(output) for output in outputs]
LAX_NAMES = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "remainder": "rem",
             "power": "pow", "maximum": "max", "minimum": "min", "and": "bitwise_and", "or": "bitwise_or",
             "xor": "bitwise_xor", "shift-left": "shift_left", "shift-right-arithmetic": "shift_right_arithmetic",
             "shift-right-logical": "shift_right_logical", "atan2": "atan2"}
def lax_run(request):
    # An optimization barrier after the broadcasts keeps XLA from rewriting an op through them (eager JAX, one
    # executable per primitive, never could), so each op sees exactly the broadcast operands.
    from jax import lax
    cases = request["lax"]
    def compute(operands):
        results = []
        for case, (x, y) in zip(cases, operands):
            out, dims = tuple(case["out"]), tuple(case["dims"])
            def expand(array):
                own = dims if array.ndim < len(out) else tuple(range(array.ndim))
                return lax.broadcast_in_dim(array, out, own)
            a, b = lax.optimization_barrier((expand(x), expand(y)))
            if case["op"] == "compare":
                results.append(getattr(lax, case["direction"].lower())(a, b))
            else:
                results.append(getattr(lax, LAX_NAMES[case["op"]])(a, b))
        return results
    operands = [(jax.numpy.asarray(decode(c["x"])), jax.numpy.asarray(decode(c["y"]))) for c in cases]
    return [np.asarray(r) for r in jax.jit(compute)(operands)]
for line in sys.stdin:
    try:
        request = json.loads(line)
        results = lax_run(request) if "lax" in request else run(request)
        answer = {"ok": True, "results": [encode(r) for r in results]}
    except Exception as err:
        answer = {"ok": False, "error": str(err)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"""

_NAME = re.compile(r"(?<![\w.%])(lhs|rhs|result)((?:\.[a-z_]+)?)\b")
_PARAMETER = re.compile(r"parameter\((\d+)\)")
_ROOT = re.compile(r"^\s*ROOT result = (\S+) ")


def _encode(array: np.ndarray[Any, Any]) -> dict[str, Any]:
    return {"type": xs.element_type(array.dtype).name, "shape": list(array.shape),
            "data": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()}


def _decode(spec: dict[str, Any]) -> np.ndarray[Any, Any]:
    dtype = xs.element_type(spec["type"]).numpy_dtype
    result: np.ndarray[Any, Any] = np.frombuffer(base64.b64decode(spec["data"]), dtype=dtype)
    return result.reshape(spec["shape"])


def merged_module(modules: Sequence[str], parameter_counts: Sequence[int]) -> str:
    """One HLO module computing every (single-ENTRY, ``lower_binary``-style) module; ROOT is the tuple of results.

    Case i's instructions are renamed ``c<i>.<name>`` and its parameters renumbered after the previous cases'.
    """
    lines: list[str] = []
    roots: list[tuple[str, str]] = []
    first = 0
    for index, (module, count) in enumerate(zip(modules, parameter_counts)):
        body = module[module.index("ENTRY main {") + len("ENTRY main {"): module.rindex("}")].strip("\n")
        for line in body.splitlines():
            root = _ROOT.match(line)
            if root:
                roots.append((f"c{index}.result", root.group(1)))
                line = line.replace("ROOT result", "result", 1)
            line = _NAME.sub(lambda m, i=index: f"c{i}.{m.group(1)}{m.group(2)}", line)
            line = _PARAMETER.sub(lambda m, base=first: f"parameter({base + int(m.group(1))})", line)
            lines.append(line)
        first += count
    shapes = ", ".join(shape for _, shape in roots)
    names = ", ".join(name for name, _ in roots)
    lines.append(f"  ROOT results = ({shapes}) tuple({names})")
    return "HloModule xlashapes_batch\n\nENTRY main {\n" + "\n".join(lines) + "\n}\n"


class CpuRunner(WorkerProcess):
    """Compiles and runs HLO text on XLA:CPU in a worker process (restarted if XLA aborts)."""

    def __init__(self) -> None:
        super().__init__(_RUNNER)

    def _execute(self, module: str, args: Sequence[np.ndarray[Any, Any]]) -> list[np.ndarray[Any, Any]] | str:
        answer = self.ask({"module": module, "args": [_encode(a) for a in args]})
        if answer.get("crash"):
            return "XLA aborted"
        if not answer["ok"]:
            return str(answer["error"])
        return [_decode(spec) for spec in answer["results"]]

    def run(self, module: str, *args: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The (single) result of ``module`` on ``args``; AssertionError with XLA's message when it fails."""
        outputs = self._execute(module, args)
        assert not isinstance(outputs, str), f"{outputs}\n{module}"
        return outputs[0]

    def run_many(self, cases: Sequence[tuple[str, Sequence[np.ndarray[Any, Any]]]]
                 ) -> list[np.ndarray[Any, Any] | str]:
        """The result of every (module, args) case, ``CHUNK`` cases per compiled module.

        A case XLA fails on gets XLA's message (a str) instead of a result, so it fails alone. (One module per
        ``CHUNK`` cases: XLA:CPU's compile time grows faster than linearly in the module size.)
        """
        results: list[np.ndarray[Any, Any] | str] = []
        for start in range(0, len(cases), CHUNK):
            chunk = cases[start : start + CHUNK]
            module = merged_module([m for m, _ in chunk], [len(args) for _, args in chunk])
            outputs = self._execute(module, [a for _, args in chunk for a in args])
            if isinstance(outputs, list) and len(outputs) == len(chunk):
                results.extend(outputs)
                continue
            for single, args in chunk:
                alone = self._execute(single, args)
                results.append(alone[0] if isinstance(alone, list) else f"{alone}\n{single}")
        return results

    def lax_many(self, cases: Sequence[tuple[str, str | None, Any, Any, tuple[int, ...], tuple[int, ...]]]
                 ) -> list[np.ndarray[Any, Any]]:
        """``lax.broadcast_in_dim`` + ``lax.<op>`` (x64 enabled) for every (op, direction, x, y, dims, out) case."""
        if not cases:
            return []
        request = {"lax": [{"op": op, "direction": direction, "x": _encode(np.asarray(x)), "y": _encode(np.asarray(y)),
                            "dims": list(dims), "out": list(out)} for op, direction, x, y, dims, out in cases]}
        answer = self.ask(request)
        assert answer.get("ok"), answer.get("error", "XLA aborted")
        return [_decode(spec) for spec in answer["results"]]


CHUNK = 64
"""Cases per merged module in ``CpuRunner.run_many``."""

T = TypeVar("T")


class Background(Generic[T]):
    """``work()`` running on a daemon thread (which mostly waits for a worker process); ``result()`` waits for it."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self._result = work()
        except BaseException as err:  # handed to the caller of result()
            self._error = err

    def result(self) -> T:
        """The value ``work()`` returned; re-raises what it raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


_RUNNER_INSTANCE: CpuRunner | None = None


def cpu_runner() -> CpuRunner:
    """The shared CPU runner of this test session."""
    global _RUNNER_INSTANCE
    if _RUNNER_INSTANCE is None:
        _RUNNER_INSTANCE = CpuRunner()
        atexit.register(_RUNNER_INSTANCE.close)
    return _RUNNER_INSTANCE
