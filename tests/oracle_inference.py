"""XLA as the oracle of shape inference: many modules per worker round trip, crash-safe.

Two questions, each asked for a whole batch of modules at once:

* ``parse``: XLA's parser reads the module (filling in omitted shapes with its ShapeInference) and prints it.
* ``verify``: XLA compiles the module for its CPU backend (HLO -> StableHLO -> XLA, where the StableHLO verifier and
  XLA's HloVerifier check every written shape); the answer is only ok / error.

XLA aborts the process on some inputs; the worker answers module by module, so a crash costs only the module
that caused it (its answer is ``{"ok": False, "crash": True}``) and the rest of the batch goes to a new worker.
"""

from __future__ import annotations

import atexit
from dataclasses import dataclass
import json
from typing import Any

from xla_oracle import WorkerProcess

_WORKER = r"""
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from jaxlib import _hlo
_compiler = None
def compiler():
    global _compiler
    if _compiler is None:
        from jaxlib import _jax
        from jax.extend.backend import get_backend
        backend = get_backend("cpu")
        devices = _jax.DeviceList(tuple(backend.devices()[:1]))
        def run(module):
            stablehlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
            backend.compile_and_load(stablehlo, devices, _jax.CompileOptions())
        _compiler = run
    return _compiler
def answer(kind, text):
    try:
        module = _hlo.hlo_module_from_text(text)
        if kind == "parse":
            return {"ok": True, "text": module.to_string()}
        compiler()(module)
        return {"ok": True}
    except Exception as err:
        return {"ok": False, "error": str(err)[:2000]}
for line in sys.stdin:
    request = json.loads(line)
    for text in request["modules"]:
        sys.stdout.write(json.dumps(answer(request["kind"], text)) + "\n")
        sys.stdout.flush()
"""


class InferenceOracle(WorkerProcess):
    """XLA's parser and CPU compiler in a worker process, asked a batch of modules per call."""

    def __init__(self) -> None:
        super().__init__(_WORKER)
        self.round_trips = 0
        self.modules = 0

    def _batch(self, kind: str, modules: list[str]) -> list[dict[str, Any]]:
        answers: list[dict[str, Any]] = []
        while len(answers) < len(modules):
            rest = modules[len(answers):]
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            self.round_trips += 1
            try:
                process.stdin.write(json.dumps({"kind": kind, "modules": rest}) + "\n")
                process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
            for _ in rest:
                line = process.stdout.readline()
                if not line:
                    process.wait()
                    self._process = None
                    answers.append({"ok": False, "crash": True, "error": "XLA aborted the process"})
                    break
                answers.append(json.loads(line))
        self.modules += len(modules)
        return answers

    def parse(self, modules: list[str]) -> list[dict[str, Any]]:
        """XLA's parse + print of each module: {"ok": True, "text": printed} or {"ok": False, "error"/"crash"}."""
        return self._batch("parse", modules)

    def verify(self, modules: list[str]) -> list[dict[str, Any]]:
        """Whether XLA compiles each module for CPU (its verifiers accept every written shape)."""
        return self._batch("verify", modules)


_ORACLE: InferenceOracle | None = None


def inference_oracle() -> InferenceOracle:
    """The shared batched oracle of this test session."""
    global _ORACLE
    if _ORACLE is None:
        _ORACLE = InferenceOracle()
        atexit.register(_ORACLE.close)
    return _ORACLE


# ----------------------------------------------------------------------------------------------------
# Cases: one instruction (the ROOT of an entry computation) and the computations it calls
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Computation:
    """A called computation: parameter shapes, result shape and the body lines that compute ROOT from them."""

    parameters: tuple[str, ...]
    result: str
    body: tuple[str, ...]

    def text(self, name: str) -> str:
        lines = [f"  x{i} = {shape} parameter({i})" for i, shape in enumerate(self.parameters)]
        lines.extend(f"  {line}" for line in self.body)
        return f"{name} {{\n" + "\n".join(lines) + "\n}\n"


@dataclass(frozen=True)
class Case:
    """``ROOT r = [written] opcode(p0, p1, ...), attributes`` over parameters of the given shapes."""

    opcode: str
    operands: tuple[str, ...]
    attributes: str = ""
    computations: tuple[tuple[str, Computation], ...] = ()
    written: str | None = None
    header: str = ""

    def module(self, written: str | None = None) -> str:
        shape = written if written is not None else self.written
        parts = [f"HloModule m{self.header}\n"]
        parts.extend(computation.text(name) for name, computation in self.computations)
        lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(self.operands)]
        operands = ", ".join(f"p{i}" for i in range(len(self.operands)))
        tail = f", {self.attributes}" if self.attributes else ""
        lines.append(f"  ROOT r = {shape + ' ' if shape else ''}{self.opcode}({operands}){tail}")
        parts.append("ENTRY e {\n" + "\n".join(lines) + "\n}\n")
        return "\n".join(parts)

    def typed_attributes(self) -> dict[str, Any]:
        """The attributes as ``HloInstruction.attributes.typed`` reads them (ParseError when it cannot)."""
        from xlashapes import parse_instruction

        if not self.attributes:
            return {}
        parsed = parse_instruction(f"r = f32[] {self.opcode}(), {self.attributes}").attributes
        return {key: parsed.typed(key) for key in parsed}

    def ours(self) -> Any:
        """infer_shape's answer (a Shape) or the ShapeError it raises."""
        from xlashapes import ShapeError, parse_instruction, parse_shape
        from xlashapes.inference import Signature, infer_shape

        operands = [parse_shape(s) for s in self.operands]
        attributes = self.typed_attributes()
        signatures = {name: Signature(tuple(parse_shape(p) for p in c.parameters), parse_shape(c.result))
                      for name, c in self.computations}
        try:
            return infer_shape(self.opcode, operands, attributes, signatures)
        except ShapeError as error:
            return error

    def check(self, shape_text: str) -> Any:
        """check_shape's verdict on a written shape: None or the ShapeError."""
        from xlashapes import ShapeError, parse_instruction, parse_shape
        from xlashapes.inference import Signature, check_shape

        operands = [parse_shape(s) for s in self.operands]
        attributes = self.typed_attributes()
        signatures = {name: Signature(tuple(parse_shape(p) for p in c.parameters), parse_shape(c.result))
                      for name, c in self.computations}
        try:
            check_shape(self.opcode, operands, parse_shape(shape_text), attributes, signatures)
        except ShapeError as error:
            return error
        return None


def scalar_reducer(types: tuple[str, ...], op: str = "add") -> Computation:
    """``(T1.., T1..) -> T1 or (T1..)``: element-wise ``op`` of the pairs (or for pred)."""
    n = len(types)
    params = tuple(f"{t}[]" for t in types) * 2
    body = []
    for i, t in enumerate(types):
        how = "or" if t == "pred" and op == "add" else op
        body.append(f"y{i} = {t}[] {how}(x{i}, x{n + i})")
    if n == 1:
        body[-1] = "ROOT " + body[-1]
        return Computation(params, f"{types[0]}[]", tuple(body))
    result = "(" + ", ".join(f"{t}[]" for t in types) + ")"
    body.append(f"ROOT t = {result} tuple({', '.join(f'y{i}' for i in range(n))})")
    return Computation(params, result, tuple(body))


def comparator(types: tuple[str, ...]) -> Computation:
    """``(T1, T1, T2, T2, ...) -> pred[]`` comparing the first pair."""
    params = tuple(f"{t}[]" for t in types for _ in (0, 1))
    return Computation(params, "pred[]", ("ROOT c = pred[] compare(x0, x1), direction=LT",))


def _zero(etype: str) -> str:
    return "(0, 0)" if etype.startswith("c") else "false" if etype == "pred" else "0"


def producing(parameters: tuple[str, ...], result: str) -> Computation:
    """A computation taking ``parameters`` that returns some value of array shape ``result``."""
    from xlashapes import parse_shape

    shape = parse_shape(result)
    if shape.is_tuple:
        parts = [str(s).split("{")[0] if s.is_array else str(s) for s in shape.tuple_shapes]
        body = []
        for i, part in enumerate(parts):
            etype = part.split("[")[0]
            body.append(f"c{i} = {etype}[] constant({_zero(etype)})")
            body.append(f"b{i} = {part} broadcast(c{i}), dimensions={{}}")
        body.append(f"ROOT t = {result} tuple({', '.join(f'b{i}' for i in range(len(parts)))})")
        return Computation(parameters, result, tuple(body))
    etype = result.split("[")[0]
    if etype == "pred":
        body = ("c = pred[] constant(true)", f"ROOT b = {result} broadcast(c), dimensions={{}}")
    else:
        body = (f"c = {etype}[] constant({_zero(etype)})", f"ROOT b = {result} broadcast(c), dimensions={{}}")
    return Computation(parameters, result, body)


def xla_root_shape(printed: str) -> Any:
    """The ROOT instruction's shape in a module XLA printed."""
    from xlashapes import parse_hlo_module

    return parse_hlo_module(printed).entry.root.shape
