"""XLA as the oracle of shape inference: many modules per worker round trip, crash-safe.

Two questions, each asked for a whole batch of modules at once:

* ``parse``: XLA's parser reads the module (filling in omitted shapes with its ShapeInference) and prints it.
* ``verify``: XLA compiles the module for its CPU backend (HLO -> StableHLO -> XLA, where the StableHLO verifier and
  XLA's HloVerifier check every written shape); the answer is only ok / error. An UNIMPLEMENTED error from the
  CPU code emitter (after the verifiers) counts as ok.

XLA aborts the process on some inputs; the worker answers module by module, so a crash costs only the module
that caused it (its answer is ``{"ok": False, "crash": True}``) and the rest of the batch goes to a new worker.
"""

from __future__ import annotations

import atexit
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

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
        if kind == "verify" and str(err).startswith("UNIMPLEMENTED"):
            # XLA:CPU's code emitter refused an op (copy-start, PadToStatic for dynamic shapes): the verifiers,
            # which run before it, accepted every shape
            return {"ok": True, "unimplemented": str(err)[:300]}
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
    then: tuple[str, str] | None = None  # (opcode, written shape) of a ROOT instruction applied to r, e.g. a -done

    def module(self, written: str | None = None) -> str:
        shape = written if written is not None else self.written
        parts = [f"HloModule m{self.header}\n"]
        parts.extend(computation.text(name) for name, computation in self.computations)
        lines = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(self.operands)]
        operands = ", ".join(f"p{i}" for i in range(len(self.operands)))
        tail = f", {self.attributes}" if self.attributes else ""
        root = "ROOT " if self.then is None else ""
        lines.append(f"  {root}r = {shape + ' ' if shape else ''}{self.opcode}({operands}){tail}")
        if self.then is not None:
            lines.append(f"  ROOT d = {self.then[1]} {self.then[0]}(r)")
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
        from xlashapes import ShapeError, parse_shape
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
        from xlashapes import ShapeError, parse_shape
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


# ----------------------------------------------------------------------------------------------------
# Hypothesis strategies: one-instruction cases for every opcode family
# ----------------------------------------------------------------------------------------------------

ARRAY_TYPES = ("pred", "s8", "s32", "s64", "u8", "u32", "f16", "bf16", "f32", "f64", "c64", "c128", "f8e4m3fn")
FLOATS = ("f16", "bf16", "f32", "f64")
UNARY = ("abs", "negate", "sign", "not", "is-finite", "real", "imag", "copy", "floor", "ceil", "round-nearest-afz",
         "round-nearest-even", "erf", "cosine", "sine", "exponential", "exponential-minus-one", "log",
         "log-plus-one", "logistic", "rsqrt", "sqrt", "cbrt", "tanh", "tan", "acos", "asin", "atanh", "acosh",
         "asinh", "cosh", "sinh", "count-leading-zeros", "popcnt")
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "atan2", "and", "or",
          "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical", "complex", "mulhi", "compare")


UNBOUNDED = True  # generate "?" dimensions too


def _dim_text(size: int, dynamic: bool) -> str:
    return f"<={size}" if dynamic else str(size)


@st.composite
def dims(draw: st.DrawFn, rank: int | None = None, dynamic: bool = True, low: int = 0, high: int = 5) -> list[str]:
    """Dimension texts: sizes in [low, high], some ``<=N`` when ``dynamic``."""
    count = draw(st.integers(0, 3)) if rank is None else rank
    out = []
    for _ in range(count):
        size = draw(st.integers(low, high))
        kind = draw(st.integers(0, 11)) if dynamic else 2
        out.append("?" if UNBOUNDED and kind == 0 else _dim_text(size, kind == 1))
    return out


def shape(etype: str, sizes: list[str] | tuple[str, ...]) -> str:
    return f"{etype}[{','.join(sizes)}]"


def static(sizes: list[str]) -> list[int]:
    return [int(s.lstrip("<=")) if s != "?" else 3 for s in sizes]


@st.composite
def unary_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(UNARY))
    return Case(op, (shape(draw(st.sampled_from(ARRAY_TYPES)), draw(dims())),))


@st.composite
def binary_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(BINARY))
    a = draw(st.sampled_from(ARRAY_TYPES))
    b = draw(st.sampled_from((a, a, a, *FLOATS)))
    lhs = draw(dims())
    how = draw(st.integers(0, 5))
    if how == 0:
        rhs = draw(dims())
    elif how == 1:
        rhs = []
    elif how == 2:
        rhs = [draw(st.sampled_from((d, "1", "<=1", d))) for d in lhs]
    else:
        rhs = [draw(st.sampled_from((d, d, d, d.lstrip("<="), "<=" + d.lstrip("<=") if d != "?" else "5")))
               for d in lhs]
    if draw(st.booleans()):
        lhs, rhs = rhs, lhs
    attrs = f"direction={draw(st.sampled_from(('EQ', 'NE', 'LT', 'GE')))}" if op == "compare" else ""
    return Case(op, (shape(a, lhs), shape(b, rhs)), attrs)


@st.composite
def ternary_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("select", "clamp")))
    t = draw(st.sampled_from(ARRAY_TYPES))
    sizes = draw(dims())

    def variant() -> str:
        choice = draw(st.integers(0, 6))
        if choice == 0:
            return shape(t, [])
        if choice == 1:
            return shape(draw(st.sampled_from(ARRAY_TYPES)), sizes)
        if choice == 2:
            return shape(t, draw(dims()))
        return shape(t, [draw(st.sampled_from((d, d.lstrip("<=")))) for d in sizes])

    middle = shape(t, sizes)
    if op == "select":
        pred = variant()
        if draw(st.integers(0, 5)) and pred.startswith(t + "["):
            pred = "pred" + pred[len(t):]
        return Case(op, (pred, middle, variant()))
    return Case(op, (variant(), middle, variant()))


@st.composite
def movement_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("transpose", "reverse", "concatenate", "pad", "get-dimension-size",
                               "set-dimension-size", "broadcast")))
    t = draw(st.sampled_from(ARRAY_TYPES))
    sizes = draw(dims(rank=draw(st.integers(0, 3))))
    rank = len(sizes)
    operand = shape(t, sizes)
    if op == "transpose":
        perm = draw(st.permutations(range(rank)))
        if draw(st.integers(0, 5)) == 0:
            perm = draw(st.lists(st.integers(-1, rank), max_size=rank + 1))
        return Case(op, (operand,), f"dimensions={{{','.join(map(str, perm))}}}")
    if op == "reverse":
        chosen = draw(st.lists(st.integers(-1, rank), max_size=rank + 1))
        return Case(op, (operand,), f"dimensions={{{','.join(map(str, chosen))}}}")
    if op == "broadcast":
        new = draw(st.lists(st.integers(0, 4), max_size=2))
        return Case(op, (operand,), f"dimensions={{{','.join(map(str, new))}}}")
    if op in ("get-dimension-size", "set-dimension-size"):
        dim = draw(st.integers(-1, rank))
        operands = (operand,) if op == "get-dimension-size" else (operand, draw(st.sampled_from(("s32[]", "s64[]"))))
        return Case(op, operands, f"dimensions={{{dim}}}")
    if op == "pad":
        # negative interior padding is left to the unit tests: xlashapes' HLO reader refuses "0_0_-1" as text
        config = "x".join(
            "_".join(str(v) for v in (draw(st.integers(-2, 3)), draw(st.integers(-2, 3)))
                     + ((draw(st.integers(0, 2)),) if draw(st.booleans()) else ()))
            for _ in range(rank + (1 if draw(st.integers(0, 8)) == 0 else 0)))
        value = shape(draw(st.sampled_from((t, t, t, "f32"))), [] if draw(st.integers(0, 6)) else ["1"])
        if not config:
            return Case(op, (shape(t, ["2"]), value), "padding=0_0")
        return Case(op, (operand, value), f"padding={config}")
    count = draw(st.integers(1, 3))
    dim = draw(st.integers(-1, rank)) if rank else 0
    operands = [operand]
    for _ in range(count - 1):
        other = list(sizes)
        if 0 <= dim < rank:
            other[dim] = draw(st.sampled_from(("0", "2", "<=3", "5")))
        if draw(st.integers(0, 6)) == 0 and other:
            other[0] = "7"
        operands.append(shape(draw(st.sampled_from((t, t, "f32"))), other))
    return Case(op, tuple(operands), f"dimensions={{{dim}}}")


@st.composite
def dot_cases(draw: st.DrawFn) -> Case:
    batch = draw(dims(rank=draw(st.integers(0, 2)), low=1))
    contract = draw(dims(rank=draw(st.integers(0, 2)), low=1))
    lhs_free = draw(dims(rank=draw(st.integers(0, 2))))
    rhs_free = draw(dims(rank=draw(st.integers(0, 2))))
    lhs_parts = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))] + \
        [("f", i) for i in range(len(lhs_free))]
    rhs_parts = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))] + \
        [("f", i) for i in range(len(rhs_free))]
    lhs_order = draw(st.permutations(lhs_parts))
    rhs_order = draw(st.permutations(rhs_parts))

    def size(kind: str, i: int, free: list[str]) -> str:
        return {"b": batch, "c": contract, "f": free}[kind][i]

    lhs = [size(k, i, lhs_free) for k, i in lhs_order]
    rhs = [size(k, i, rhs_free) for k, i in rhs_order]
    if draw(st.integers(0, 5)) == 0 and rhs:
        rhs[draw(st.integers(0, len(rhs) - 1))] = "9"
    def where(order: list[tuple[str, int]], kind: str) -> list[int]:
        return [order.index((kind, i)) for i in range(len(batch) if kind == "b" else len(contract))]
    lb, rb, lc, rc = where(lhs_order, "b"), where(rhs_order, "b"), where(lhs_order, "c"), where(rhs_order, "c")
    if draw(st.integers(0, 6)) == 0:
        rc = rc[:-1]
    a = draw(st.sampled_from(("f32", "f32", "bf16", "s32", "s8", "c64", "pred")))
    b = draw(st.sampled_from((a, a, a, "f32", "f16")))
    attrs = []
    for key, values in (("lhs_batch_dims", lb), ("lhs_contracting_dims", lc), ("rhs_batch_dims", rb),
                        ("rhs_contracting_dims", rc)):
        if values or draw(st.booleans()):
            attrs.append(f"{key}={{{','.join(map(str, values))}}}")
    return Case("dot", (shape(a, lhs), shape(b, rhs)), ", ".join(attrs))


@st.composite
def convolution_cases(draw: st.DrawFn) -> Case:
    spatial = draw(st.integers(0, 2))
    digits = [str(i) for i in range(spatial)]
    in_labels = "".join(draw(st.permutations(["b", "f", *digits])))
    k_labels = "".join(draw(st.permutations(["i", "o", *digits])))
    out_labels = "".join(draw(st.permutations(["b", "f", *digits])))
    fgc = draw(st.sampled_from((1, 1, 1, 2, 3)))
    bgc = draw(st.sampled_from((1, 1, 1, 2))) if fgc == 1 else 1
    batch = draw(st.integers(1, 4)) * bgc
    k_in = draw(st.integers(1, 3))
    features = k_in * fgc
    k_out = draw(st.integers(1, 3)) * fgc * bgc
    if draw(st.integers(0, 8)) == 0:
        k_out += 1
    sizes = [draw(st.integers(1, 6)) for _ in range(spatial)]
    window = [draw(st.integers(1, 3)) for _ in range(spatial)]
    lhs = {"b": str(batch), "f": str(features)}
    rhs = {"i": str(k_in), "o": str(k_out)}
    for i in range(spatial):
        lhs[str(i)] = _dim_text(sizes[i], draw(st.integers(0, 6)) == 0)
        rhs[str(i)] = str(window[i])
    parts = []
    if spatial:
        parts.append("size=" + "x".join(map(str, window)))
        if draw(st.booleans()):
            parts.append("stride=" + "x".join(str(draw(st.integers(1, 3))) for _ in range(spatial)))
        if draw(st.booleans()):
            parts.append("pad=" + "x".join(f"{draw(st.integers(-1, 2))}_{draw(st.integers(-1, 2))}"
                                           for _ in range(spatial)))
        if draw(st.booleans()):
            parts.append("lhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(spatial)))
        if draw(st.booleans()):
            parts.append("rhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(spatial)))
    attrs = [f"window={{{' '.join(parts)}}}"] if parts else []
    attrs.append(f"dim_labels={in_labels}_{k_labels}->{out_labels}")
    if fgc > 1:
        attrs.append(f"feature_group_count={fgc}")
    if bgc > 1:
        attrs.append(f"batch_group_count={bgc}")
    t = draw(st.sampled_from(("f32", "f32", "bf16", "s32")))
    u = draw(st.sampled_from((t, t, t, "f32")))
    return Case("convolution", (shape(t, [lhs[c] for c in in_labels]), shape(u, [rhs[c] for c in k_labels])),
                ", ".join(attrs))


def _window_text(draw: st.DrawFn, rank: int) -> str:
    if rank == 0:
        return "{}"
    parts = ["size=" + "x".join(str(draw(st.integers(1, 3))) for _ in range(rank))]
    if draw(st.booleans()):
        parts.append("stride=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(rank)))
    if draw(st.booleans()):
        parts.append("pad=" + "x".join(f"{draw(st.integers(0, 1))}_{draw(st.integers(0, 1))}" for _ in range(rank)))
    if draw(st.integers(0, 3)) == 0:
        parts.append("lhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(rank)))
    if draw(st.integers(0, 3)) == 0:
        parts.append("rhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(rank)))
    return "{" + " ".join(parts) + "}"


@st.composite
def reduction_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("reduce", "reduce-window", "sort", "map", "topk", "select-and-scatter")))
    n = draw(st.integers(1, 2)) if op not in ("topk", "select-and-scatter") else 1
    types = tuple(draw(st.sampled_from(("f32", "s32", "bf16", "pred"))) for _ in range(n))
    sizes = draw(dims(rank=draw(st.integers(0 if op != "topk" else 1, 3)), low=1))
    rank = len(sizes)
    inputs = [shape(t, sizes) for t in types]
    if draw(st.integers(0, 8)) == 0 and n > 1 and rank:
        inputs[1] = shape(types[1], ["9", *sizes[1:]])
    if op == "reduce":
        chosen = draw(st.lists(st.integers(-1 if draw(st.integers(0, 8)) == 0 else 0, max(rank - 1, 0)),
                               max_size=rank, unique=True)) if rank else []
        init_types = tuple(draw(st.sampled_from((t, t, t, "f32"))) for t in types)
        reducer = scalar_reducer(init_types)
        return Case(op, (*inputs, *(f"{t}[]" for t in init_types)),
                    f"dimensions={{{','.join(map(str, sorted(chosen)))}}}, to_apply=red", (("red", reducer),))
    if op == "reduce-window":
        return Case(op, (*inputs, *(f"{t}[]" for t in types)), f"window={_window_text(draw, rank)}, to_apply=red",
                    (("red", scalar_reducer(types)),))
    if op == "sort":
        dim = draw(st.integers(0, max(rank - 1, 0))) if draw(st.integers(0, 8)) else rank
        return Case(op, tuple(inputs), f"dimensions={{{dim}}}, to_apply=cmp", (("cmp", comparator(types)),))
    if op == "map":
        result = draw(st.sampled_from(("f32", "s32", *types)))
        comp = producing(tuple(f"{t}[]" for t in types), f"{result}[]")
        return Case(op, tuple(inputs), f"dimensions={{{','.join(map(str, range(rank)))}}}, to_apply=f", (("f", comp),))
    if op == "topk":
        k = draw(st.integers(0, static(sizes)[-1] + 1))
        return Case(op, tuple(inputs), f"k={k}" + (", largest=false" if draw(st.booleans()) else ""))
    # select-and-scatter: the source is the windowed operand
    t = types[0] if types[0] != "pred" else "f32"
    operand = shape(t, [str(s) for s in static(sizes)])
    window = _window_text(draw, rank).replace("lhs_dilate", "stride").replace("rhs_dilate", "stride")
    if window.count("stride=") > 1:
        window = "{" + " ".join(p for p in window[1:-1].split(" ") if not p.startswith("stride=")) + "}"
    from xlashapes import parse_instruction, parse_shape
    from xlashapes.inference._common import window_dims, windowed_dimensions

    typed = parse_instruction(f"r = f32[] x(), window={window}").attributes.typed("window")
    try:
        out, _ = windowed_dimensions(parse_shape(operand), window_dims(typed, rank, "w"), "w")
    except ValueError:
        out = tuple(static(sizes))
    source = shape(t, [str(s) for s in out])
    if draw(st.integers(0, 6)) == 0:
        source = shape(t, [str(s + 1) for s in out])
    select = producing((f"{t}[]", f"{t}[]"), "pred[]")
    return Case(op, (operand, source, f"{t}[]"), f"window={window}, select=sel, scatter=sc",
                (("sel", select), ("sc", scalar_reducer((t,)))))


@st.composite
def linalg_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("cholesky", "triangular-solve", "fft", "batch-norm-training",
                               "batch-norm-inference", "batch-norm-grad")))
    t = draw(st.sampled_from(("f32", "f64", "c64", "s32", "bf16")))
    batch = draw(dims(rank=draw(st.integers(0, 2)), low=1))
    if op == "cholesky":
        n = draw(st.integers(1, 4))
        m = n if draw(st.integers(0, 5)) else n + 1
        return Case(op, (shape(t, [*batch, str(n), str(m)]),), "lower=true" if draw(st.booleans()) else "")
    if op == "triangular-solve":
        m, k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        left = draw(st.booleans())
        b = [*batch, str(m), str(k)] if left else [*batch, str(k), str(m)]
        if draw(st.integers(0, 6)) == 0:
            b[-1] = "7"
        attrs = f"left_side={'true' if left else 'false'}, lower=true, transpose_a=NO_TRANSPOSE"
        return Case(op, (shape(t, [*batch, str(m), str(m)]), shape(t, b)), attrs)
    if op == "fft":
        kind = draw(st.sampled_from(("FFT", "IFFT", "RFFT", "IRFFT")))
        k = draw(st.integers(1, 3))
        lengths = [draw(st.integers(1, 6)) for _ in range(k)]
        minor = [str(n) for n in lengths]
        if kind == "IRFFT" and draw(st.integers(0, 5)):
            minor[-1] = str(lengths[-1] // 2 + 1)
        if draw(st.integers(0, 8)) == 0:
            minor[0] = "9"
        return Case(op, (shape(t, [*batch, *minor]),),
                    f"fft_type={kind}, fft_length={{{','.join(map(str, lengths))}}}")
    sizes = [*batch, *draw(dims(rank=draw(st.integers(0, 2)), low=1))]
    feature = draw(st.integers(0, max(len(sizes) - 1, 0))) if draw(st.integers(0, 8)) else len(sizes)
    feat = sizes[feature] if feature < len(sizes) else "3"
    vector = shape(t, [feat.lstrip("<=")]) if draw(st.integers(0, 8)) else shape(t, ["9"])
    operand = shape(t, sizes)
    operands = {"batch-norm-training": (operand, vector, vector),
                "batch-norm-inference": (operand, vector, vector, vector, vector),
                "batch-norm-grad": (operand, vector, vector, vector, operand)}[op]
    return Case(op, operands, f"epsilon=0.001, feature_index={feature}")


@st.composite
def gather_cases(draw: st.DrawFn) -> Case:
    """Valid-by-construction gathers (with the occasional mutation)."""
    rank = draw(st.integers(1, 3))
    operand = [draw(st.integers(1, 5)) for _ in range(rank)]
    batching = sorted(draw(st.lists(st.integers(0, rank - 1), max_size=1, unique=True)))
    rest = [d for d in range(rank) if d not in batching]
    start_map = draw(st.lists(st.sampled_from(rest), min_size=1, max_size=len(rest), unique=True)) if rest else []
    collapsed = sorted(draw(st.lists(st.sampled_from(start_map), max_size=len(start_map), unique=True))) \
        if start_map else []
    slice_sizes = [1 if d in collapsed or d in batching else draw(st.integers(0, operand[d])) for d in range(rank)]
    index_batch = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(0, 2)))]
    indices_batching: list[int] = []
    if batching:
        index_batch.insert(0, operand[batching[0]])
    ivd = draw(st.integers(0, len(index_batch)))
    indices = list(index_batch)
    indices.insert(ivd, len(start_map))
    if batching:
        indices_batching = [0 if ivd != 0 else 1]
    offset_count = rank - len(collapsed) - len(batching)
    out_rank = offset_count + len(index_batch)
    offset_dims = sorted(draw(st.lists(st.integers(0, out_rank - 1), min_size=offset_count, max_size=offset_count,
                                       unique=True))) if offset_count else []
    if draw(st.integers(0, 7)) == 0:
        slice_sizes[0] += 1
    if draw(st.integers(0, 9)) == 0:
        ivd = len(indices) if draw(st.booleans()) else ivd
    attrs = [f"offset_dims={{{','.join(map(str, offset_dims))}}}",
             f"collapsed_slice_dims={{{','.join(map(str, collapsed))}}}",
             f"start_index_map={{{','.join(map(str, start_map))}}}"]
    if batching:
        attrs += [f"operand_batching_dims={{{','.join(map(str, batching))}}}",
                  f"start_indices_batching_dims={{{','.join(map(str, indices_batching))}}}"]
    attrs += [f"index_vector_dim={ivd}", f"slice_sizes={{{','.join(map(str, slice_sizes))}}}"]
    t = draw(st.sampled_from(("f32", "s8", "pred")))

    def sized(values: list[int]) -> list[str]:  # some dims bounded-dynamic
        return [_dim_text(v, draw(st.integers(0, 4)) == 0) for v in values]

    return Case("gather", (shape(t, sized(operand)), shape("s32", sized(indices))), ", ".join(attrs))


@st.composite
def scatter_cases(draw: st.DrawFn) -> Case:
    """Valid-by-construction scatters (variadic sometimes), with the occasional mutation."""
    rank = draw(st.integers(1, 3))
    operand = [draw(st.integers(1, 5)) for _ in range(rank)]
    to_operand = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    inserted = sorted(draw(st.lists(st.sampled_from(to_operand), max_size=len(to_operand), unique=True)))
    window_sizes = [draw(st.integers(0, operand[d])) for d in range(rank) if d not in inserted]
    index_batch = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
    ivd = draw(st.integers(0, len(index_batch)))
    indices = list(index_batch)
    indices.insert(ivd, len(to_operand))
    update_rank = len(window_sizes) + len(index_batch)
    window_dims = sorted(draw(st.lists(st.integers(0, update_rank - 1), min_size=len(window_sizes),
                                       max_size=len(window_sizes), unique=True))) if window_sizes else []
    updates, w, b = [], iter(window_sizes), iter(index_batch)
    for i in range(update_rank):
        updates.append(next(w) if i in window_dims else next(b))
    if draw(st.integers(0, 7)) == 0 and updates:
        updates[0] += 1
    n = draw(st.integers(1, 2))
    types = tuple(draw(st.sampled_from(("f32", "s32"))) for _ in range(n))
    attrs = (f"update_window_dims={{{','.join(map(str, window_dims))}}}, "
             f"inserted_window_dims={{{','.join(map(str, inserted))}}}, "
             f"scatter_dims_to_operand_dims={{{','.join(map(str, to_operand))}}}, index_vector_dim={ivd}, "
             f"to_apply=red")
    def sized(values: list[int]) -> list[str]:  # some dims bounded-dynamic
        return [_dim_text(v, draw(st.integers(0, 4)) == 0) for v in values]

    operands = (*(shape(t, sized(operand)) for t in types), shape("s32", sized(indices)),
                *(shape(t, sized(updates)) for t in types))
    return Case("scatter", operands, attrs, (("red", scalar_reducer(types)),))


@st.composite
def control_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("tuple", "get-tuple-element", "while", "conditional", "call", "after-all",
                               "add-dependency", "partition-id", "replica-id")))
    a = shape(draw(st.sampled_from(ARRAY_TYPES)), draw(dims()))
    b = shape(draw(st.sampled_from(ARRAY_TYPES)), draw(dims()))
    if op == "tuple":
        return Case(op, tuple(draw(st.lists(st.sampled_from((a, b, "token[]", f"({a}, {b})")), max_size=4))))
    if op == "get-tuple-element":
        elements = draw(st.lists(st.sampled_from((a, b, f"({a})")), min_size=1, max_size=3))
        index = draw(st.integers(0, len(elements)))
        return Case(op, ("(" + ", ".join(elements) + ")",), f"index={index}")
    if op == "while":
        state = f"({a}, {b})" if draw(st.booleans()) else a
        body_result = state if draw(st.integers(0, 5)) else a.replace("[", "[1,", 1).replace(",]", "]")
        cond_result = "pred[]" if draw(st.integers(0, 5)) else "s32[]"
        return Case(op, (state,), "condition=cond, body=body",
                    (("cond", producing((state,), cond_result)), ("body", producing((state,), body_result))))
    if op == "conditional":
        n = draw(st.integers(1, 3))
        result = a if draw(st.integers(0, 5)) else None
        comps = []
        operands = []
        for i in range(n):
            param = draw(st.sampled_from((a, b)))
            operands.append(param)
            comps.append((f"br{i}", producing((param,), result or draw(st.sampled_from((a, b))))))
        if n == 2 and draw(st.booleans()):
            return Case(op, ("pred[]", *operands), "true_computation=br0, false_computation=br1", tuple(comps))
        index = "s32[]" if draw(st.integers(0, 5)) else "pred[]"
        names = ",".join(f"br{i}" for i in range(n))
        return Case(op, (index, *operands), f"branch_computations={{{names}}}", tuple(comps))
    if op == "call":
        params = tuple(draw(st.lists(st.sampled_from((a, b)), max_size=3)))
        operands = params if draw(st.integers(0, 5)) else (*params, a)
        return Case(op, operands, "to_apply=f", (("f", producing(params, b)),))
    if op == "after-all":
        return Case(op, tuple(draw(st.lists(st.sampled_from(("token[]", "token[]", a)), min_size=1, max_size=3))))
    if op == "add-dependency":
        return Case(op, (a, draw(st.sampled_from(("token[]", "token[]", b)))))
    return Case(op, ())


FAMILIES = {
    "unary": unary_cases(),
    "binary": binary_cases(),
    "ternary": ternary_cases(),
    "data movement": movement_cases(),
    "dot": dot_cases(),
    "convolution": convolution_cases(),
    "reduction": reduction_cases(),
    "linalg": linalg_cases(),
    "gather": gather_cases(),
    "scatter": scatter_cases(),
    "control": control_cases(),
}


# ----------------------------------------------------------------------------------------------------
# Written-shape cases for XLA's compiler (the ops XLA's parser does not infer): (case, written shape)
# ----------------------------------------------------------------------------------------------------


def _mutated(draw: st.DrawFn, text: str, dims_only: bool = False) -> str:
    """``text`` (an array shape) with one dimension or the element type changed."""
    etype, rest = text.split("[", 1)
    sizes = [s for s in rest.rstrip("]").split(",") if s]
    if dims_only and not sizes:
        return shape(etype, ["2"])
    if sizes and (dims_only or draw(st.booleans())):
        i = draw(st.integers(0, len(sizes) - 1))
        sizes[i] = str(int(sizes[i]) + draw(st.sampled_from((1, 2))))
        return shape(etype, sizes)
    return shape(draw(st.sampled_from(("f32", "s32", "f16"))), sizes)


@st.composite
def written_cases(draw: st.DrawFn) -> tuple[Case, str]:
    op = draw(st.sampled_from(("slice", "dynamic-slice", "dynamic-update-slice", "reduce-precision", "all-reduce",
                               "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "convert",
                               "bitcast-convert", "broadcast", "reshape", "iota", "rng", "rng-bit-generator")))
    t = draw(st.sampled_from(("f32", "s32", "f16", "u8", "s64")))
    # broadcast operand dims of size 1 are avoided: StableHLO (the compiler's way in) broadcasts 1 to any size
    sizes = static(draw(dims(rank=draw(st.integers(0 if op in ("convert", "reshape") else 1, 3)), dynamic=False,
                             low=2 if op == "broadcast" else 1)))
    operand = shape(t, [str(s) for s in sizes])
    rank = len(sizes)
    case: Case
    if op == "slice":
        ranges = []
        for size in sizes:
            start = draw(st.integers(0, size))
            limit = draw(st.integers(start, size + (1 if draw(st.integers(0, 9)) == 0 else 0)))
            ranges.append(f"[{start}:{limit}:{draw(st.integers(1, 3))}]")
        case = Case(op, (operand,), f"slice={{{','.join(ranges)}}}")
    elif op == "dynamic-slice":
        slice_sizes = [draw(st.integers(0, s + (1 if draw(st.integers(0, 9)) == 0 else 0))) for s in sizes]
        index = draw(st.sampled_from(("s32[]", "s32[]", "s64[]", "u32[]")))
        case = Case(op, (operand, *([index] * rank)), f"dynamic_slice_sizes={{{','.join(map(str, slice_sizes))}}}")
    elif op == "dynamic-update-slice":
        update = [draw(st.integers(0, s + (1 if draw(st.integers(0, 9)) == 0 else 0))) for s in sizes]
        case = Case(op, (operand, shape(t, [str(u) for u in update]), *(["s32[]"] * rank)))
    elif op == "reduce-precision":
        case = Case(op, (shape(draw(st.sampled_from(("f32", "f16", "bf16"))), [str(s) for s in sizes]),),
                    f"exponent_bits={draw(st.integers(1, 8))}, mantissa_bits={draw(st.integers(0, 10))}")
    elif op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"):
        group = draw(st.sampled_from((1, 2)))
        groups = "{{" + ",".join(str(i) for i in range(group)) + "}}"
        header = f", replica_count={group}"
        dim = draw(st.integers(0, rank - 1))
        if op == "all-reduce":
            case = Case(op, (operand,), f"replica_groups={groups}, to_apply=red",
                        (("red", scalar_reducer((t,))),), header=header)
        elif op == "reduce-scatter":
            case = Case(op, (operand,), f"dimensions={{{dim}}}, replica_groups={groups}, to_apply=red",
                        (("red", scalar_reducer((t,))),), header=header)
        elif op == "collective-permute":
            case = Case(op, (operand,), "source_target_pairs={{0,0}}", header=header)
        else:
            case = Case(op, (operand,), f"dimensions={{{dim}}}, replica_groups={groups}", header=header)
    elif op in ("convert", "bitcast-convert"):
        # no pred: StableHLO counts it as 1 bit where XLA counts 8
        new = draw(st.sampled_from(("f32", "s32", "f16", "u8", "s64", "pred" if op == "convert" else "s8")))
        from xlashapes import ShapeError, element_type, parse_shape
        from xlashapes.inference.elementwise import bitcast_convert_shape

        target = shape(new, [str(s) for s in sizes])
        if op == "bitcast-convert" and draw(st.integers(0, 3)):
            try:
                target = str(bitcast_convert_shape(parse_shape(operand), element_type(new))).split("{")[0]
            except ShapeError:
                pass
        if draw(st.integers(0, 5)):
            return Case(op, (operand,)), target
        # XLA:CPU's way in (StableHLO) lets bitcast-convert change the element count: mutate dims only there
        return Case(op, (operand,)), _mutated(draw, target, dims_only=op == "bitcast-convert")
    elif op == "broadcast":
        extra = draw(st.lists(st.integers(1, 3), max_size=2))
        out = list(sizes)
        positions = sorted(draw(st.permutations(range(rank + len(extra))))[:rank])
        result = []
        it = iter(sizes)
        ex = iter(extra)
        for i in range(rank + len(extra)):
            result.append(next(it) if i in positions else next(ex))
        del out
        written = shape(t, [str(s) for s in result])
        case = Case(op, (operand,), f"dimensions={{{','.join(map(str, positions))}}}")
        return case, written if draw(st.integers(0, 4)) else _mutated(draw, written)
    elif op == "reshape":
        count = 1
        for s in sizes:
            count *= s
        written = shape(t, [str(count)]) if draw(st.booleans()) else shape(t, [str(count), "1"])
        return Case(op, (operand,)), written if draw(st.integers(0, 4)) else _mutated(draw, written)
    elif op == "rng":
        t = draw(st.sampled_from(("f32", "s32", "f16")))  # XLA:CPU aborts lowering rng of u8
        operand = shape(t, [str(s) for s in sizes])
        param = draw(st.sampled_from((t, t, t, "f32")))
        distribution = draw(st.sampled_from(("rng_uniform", "rng_normal")))
        return Case(op, (f"{param}[]", f"{t}[]"), f"distribution={distribution}"), operand
    elif op == "rng-bit-generator":
        state = draw(st.sampled_from(("u64[2]", "u64[3]")))  # XLA:CPU's expander cannot lower u32 states
        new_state = state if draw(st.integers(0, 5)) else "u64[5]"
        values = shape(draw(st.sampled_from(("u32", "u64", "u8", "f32"))), [str(s) for s in sizes])
        algorithm = draw(st.sampled_from(("rng_default", "rng_three_fry", "rng_philox")))
        return Case(op, (state,), f"algorithm={algorithm}"), f"({new_state}, {values})"
    else:  # iota
        dim = draw(st.integers(0, rank))
        return Case(op, (), f"iota_dimension={dim}"), operand
    inferred = case.ours()
    if isinstance(inferred, ValueError):
        return case, operand
    written = str(inferred).split("{")[0] if not str(inferred).startswith("(") else str(inferred)
    # XLA:CPU's compiler does not re-check collective result shapes: only ours is asked there
    if draw(st.integers(0, 5)) == 0 and not written.startswith("(") and op not in ("all-reduce", "all-gather",
                                                                                 "reduce-scatter", "all-to-all",
                                                                                 "collective-permute"):
        written = _mutated(draw, written)
    return case, written
