"""The verifier: cross-checks of a parsed module that do not stop parsing, each located in the text.

``problems()`` checks names (undefined, duplicate, used before definition), called computations, opcodes,
attribute values (typed reading, repeated keys, required keys, values XLA refuses), constant literals (count and
range), operand shapes written inline against their definitions, aliasing declarations, and every instruction's
written shape against what XLA's verifier accepts (:func:`xlashapes.inference.check_shape`, layouts
ignored: inferred shapes, and the rules of opcodes whose shape must be written such as broadcast, reshape,
iota), element-wise and broadcast shapes against XLA's broadcasting rules. Linear in the module's size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..broadcast import BINARY_OPS, broadcast_shape
from ..errors import ParseError, ShapeError
from ..inference import INFERRED_OPCODES, WRITTEN_SHAPE_OPCODES, Signature, check_shape
from ..shape import Shape
from ..text import shape_text
from ._views import ComputationView, InstructionView, ModuleView
from ._xla_attributes import allowed_attributes
from .attributes import CALLED_COMPUTATION_KEYS, Attributes, has_reader
from .opcodes import OPCODES

_CHECKED_OPCODES = (INFERRED_OPCODES | WRITTEN_SHAPE_OPCODES) - {"parameter", "constant", "custom-call", "bitcast"}
"""Opcodes :func:`xlashapes.inference.check_shape` checks (it takes the others' written shapes as they are)."""

__all__ = ["OPERAND_COUNTS", "REQUIRED_ATTRIBUTES", "Problem", "module_problems"]


@dataclass(frozen=True)
class Problem:
    """One cross-check failure, located in the parsed text.

    >>> str(Problem("operand x is not defined", 40, 3, 12))
    'line 3, column 12: operand x is not defined'
    """

    message: str
    position: int
    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


REQUIRED_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "get-tuple-element": ("index",),
    "compare": ("direction",),
    "broadcast": ("dimensions",),
    "transpose": ("dimensions",),
    "reverse": ("dimensions",),
    "concatenate": ("dimensions",),
    "reduce": ("dimensions", "to_apply"),
    "map": ("to_apply",),
    "all-reduce": ("to_apply",),
    "reduce-scatter": ("to_apply", "dimensions"),
    "reduce-window": ("to_apply",),
    "select-and-scatter": ("select", "scatter"),
    "slice": ("slice",),
    "dynamic-slice": ("dynamic_slice_sizes",),
    "pad": ("padding",),
    "iota": ("iota_dimension",),
    "fusion": ("kind", "calls"),
    "call": ("to_apply",),
    "while": ("condition", "body"),
    "custom-call": ("custom_call_target",),
    "gather": ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "slice_sizes"),
    "scatter": ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim",
                "to_apply"),
    "convolution": ("dim_labels",),
    "rng-bit-generator": ("algorithm",),
    "sort": ("dimensions", "to_apply"),
    "domain": ("domain",),
    "scan": ("dimensions", "num_carries", "to_apply"),
    **{opcode: ("epsilon", "feature_index")
       for opcode in ("batch-norm-training", "batch-norm-inference", "batch-norm-grad")},
    "get-dimension-size": ("dimensions",),
    "set-dimension-size": ("dimensions",),
    "all-gather-start": ("dimensions",),
    "all-reduce-start": ("to_apply",),
    "collective-permute": ("source_target_pairs",),
    "collective-permute-start": ("source_target_pairs",),
    "fft": ("fft_type", "fft_length"),
    "reduce-precision": ("exponent_bits", "mantissa_bits"),
    "rng": ("distribution",),
    "all-gather": ("dimensions",),
    "topk": ("k",),
}
"""Attributes XLA's parser requires for an opcode (it refuses the instruction without them; each checked)."""

_ONE_OPERAND = """abs acos acosh asin asinh atanh ceil cbrt cholesky copy cosh cosine count-leading-zeros erf
exponential exponential-minus-one floor imag is-finite log log-plus-one logistic negate not popcnt real
round-nearest-afz round-nearest-even rsqrt sign sine sinh sqrt tan tanh bitcast bitcast-convert broadcast convert
copy-start copy-done get-tuple-element reshape reverse slice transpose fft reduce-precision topk while send-done
recv-done all-gather-done all-reduce-done collective-permute-done get-dimension-size infeed recv""".split()
OPERAND_COUNTS: dict[str, int] = {
    **{opcode: 1 for opcode in _ONE_OPERAND},
    **{opcode: 2 for opcode in BINARY_OPS},
    **{opcode: 2 for opcode in ("atan2", "complex", "compare", "add-dependency", "triangular-solve",
                                "set-dimension-size", "send", "outfeed", "convolution", "pad", "stochastic-convert")},
    **{opcode: 3 for opcode in ("select", "clamp", "select-and-scatter", "batch-norm-training")},
    **{opcode: 5 for opcode in ("batch-norm-inference", "batch-norm-grad")},
    **{opcode: 0 for opcode in ("iota", "partition-id", "replica-id", "rng-get-and-update-state")},
}
"""The operand count XLA's parser requires of an opcode with a fixed arity (each checked against XLA)."""

_MODULE_ATTRIBUTES = frozenset((
    "is_scheduled", "replica_count", "num_partitions", "input_output_alias", "buffer_donor",
    "alias_passthrough_params", "entry_computation_layout", "frontend_attributes",
    "allow_spmd_sharding_propagation_to_parameters", "allow_spmd_sharding_propagation_to_output",
    "origin_recovery_table"))

_API_VERSIONS = frozenset(("API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
                           "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"))
_UNREAD_ATTRIBUTES = frozenset(("metadata", "frontend_attributes"))
"""Attributes that shape inference never reads (they differ on nearly every instruction of a real dump)."""
_ALIAS_KINDS = frozenset(("may-alias", "must-alias"))
_ENUMS = {
    "compare": {"direction": frozenset(("EQ", "NE", "GE", "GT", "LE", "LT"))},
    "fusion": {"kind": frozenset(("kLoop", "kInput", "kOutput", "kCustom"))},
}


class _Checker:
    """Collects the problems of one module."""

    __slots__ = ("found", "module", "signatures", "source", "verdicts")

    def __init__(self, module: ModuleView, found: Sequence[tuple[int, str]]) -> None:
        self.module = module
        self.source = module.source
        self.found: list[tuple[int, str]] = list(found)
        self.signatures: dict[str, Signature | None] = {}
        self.verdicts: dict[tuple[Any, ...], str | None] = {}  # shape rules by what they read: the problem or None

    def add(self, position: int, message: str) -> None:
        """Record a problem at ``position``."""
        self.found.append((position, message))

    def line(self, position: int) -> int:
        """1-based line of ``position``."""
        return self.source.line_column(position)[0]

    def problems(self) -> list[Problem]:
        """Every problem, in text order."""
        self.computations()
        self.attributes(self.module.attributes, "the module")
        for (key, _), position in zip(self.module.attributes.pairs(), self.module.attributes.positions()):
            if key not in _MODULE_ATTRIBUTES:
                self.add(position, f"the module has no attribute {key}")
        self.aliasing()
        return [Problem(message, position, *self.source.line_column(position))
                for position, message in sorted(self.found, key=lambda item: item[0])]

    def computations(self) -> None:
        """Computation-level checks, then each computation's instructions."""
        seen: dict[str, ComputationView] = {}
        for computation in self.module.computations:
            position = self.source.first_token(computation.position)
            if computation.name in seen:
                first = self.line(self.source.first_token(seen[computation.name].position))
                self.add(position, f"computation {computation.name} is already defined on line {first}")
            seen.setdefault(computation.name, computation)
            self.attributes(computation.attributes, f"computation {computation.name}")
        entries = [c for c in self.module.computations if c.is_entry]
        if len(entries) > 1:
            self.add(self.source.first_token(entries[1].position), "more than one ENTRY computation")
        for computation in self.module.computations:
            self.instructions(computation, seen)

    def signature(self, name: str, computations: Mapping[str, ComputationView]) -> Signature | None:
        """The parameter and root shapes of computation ``name`` (None when it has no instructions)."""
        if name not in self.signatures:
            computation = computations.get(name)
            signature = None
            if computation is not None and computation.instructions:
                parameters = sorted((i for i in computation.instructions if i.opcode == "parameter"),
                                    key=lambda i: i.parameter_number or 0)
                roots = [i for i in computation.instructions if i.is_root] or [computation.instructions[-1]]
                signature = Signature(tuple(i.shape for i in parameters), roots[0].shape)
            self.signatures[name] = signature
        return self.signatures[name]

    def instructions(self, computation: ComputationView, computations: Mapping[str, ComputationView]) -> None:
        """Names, operands, opcodes, attributes and literals of one computation's instructions."""
        defined: dict[str, InstructionView] = {}
        everything = {i.name for i in computation.instructions}
        roots = [i for i in computation.instructions if i.is_root]
        if len(roots) > 1:
            self.add(roots[1].position, f"computation {computation.name} has more than one ROOT")
        instructions = computation.instructions
        text = self.source.text
        self.parameter_numbers(computation)
        for number, instruction in enumerate(instructions):
            positions: dict[str, int] | None = None
            where = instruction.position
            if instruction.name in defined:
                first = self.line(defined[instruction.name].position)
                self.add(where, f"instruction {instruction.name} is already defined on line {first}")
            for operand, written in zip(instruction.operands, instruction.operand_shapes):
                if operand in defined and (written is None or written.compatible(defined[operand].shape)):
                    continue
                if positions is None:
                    end = instructions[number + 1].position if number + 1 < len(instructions) else len(text)
                    positions = _operand_positions(text, instruction, end)
                at = positions.get(operand, where)
                if operand not in defined:
                    how = "is used before its definition" if operand in everything else "is not defined"
                    self.add(at, f"operand {operand} of {instruction.name} {how} in computation {computation.name}")
                elif written is not None:
                    self.add(at,
                             f"operand {operand} of {instruction.name} is written "
                             f"{shape_text(written, print_layout=False)} but is defined "
                             f"{shape_text(defined[operand].shape, print_layout=False)}")
            defined.setdefault(instruction.name, instruction)
            if self.instruction(instruction, everything, computations):
                self.shape_rules(instruction, defined, computations)

    def parameter_numbers(self, computation: ComputationView) -> None:
        """Parameter numbers 0 .. n-1, each once (XLA refuses duplicates and aborts on gaps)."""
        parameters = [i for i in computation.instructions if i.opcode == "parameter"]
        seen: set[int | None] = set()
        for instruction in parameters:
            number = instruction.parameter_number
            if number in seen:
                self.add(instruction.position, f"{instruction.name}: parameter number {number} appears twice in "
                         f"computation {computation.name}")
            elif number is not None and number >= len(parameters):
                self.add(instruction.position, f"{instruction.name}: parameter number {number} is out of range: "
                         f"computation {computation.name} has {len(parameters)} parameter"
                         f"{'' if len(parameters) == 1 else 's'}")
            seen.add(number)

    def shape_rules(self, instruction: InstructionView, defined: Mapping[str, InstructionView],
                    computations: Mapping[str, ComputationView]) -> None:
        """The written shape against XLA's broadcasting rules and against the inferred shape.

        The verdict depends only on the opcode, operand and written shapes, attributes (op metadata aside) and the
        called computations' signatures, so each distinct combination is checked once per module.
        """
        operands = tuple(defined[name].shape for name in instruction.operands if name in defined)
        if len(operands) != len(instruction.operands):
            return  # an undefined operand is reported already
        called = {name: self.signature(name, computations) for name in instruction.called_computations}
        attributes = tuple(pair for pair in instruction.attributes.pairs() if pair[0] not in _UNREAD_ATTRIBUTES)
        key = (instruction.opcode, operands, instruction.shape, attributes, tuple(called.items()))
        if key not in self.verdicts:
            self.verdicts[key] = _shape_problem(instruction, operands, called)
        problem = self.verdicts[key]
        if problem is not None:
            self.add(instruction.position, f"{instruction.name}: {problem}")

    def instruction(self, instruction: InstructionView, names: set[str],
                    computations: Mapping[str, ComputationView]) -> bool:
        """Opcode, attributes, literal, called computations, control predecessors; True when shapes can be checked."""
        if instruction.opcode not in OPCODES:
            self.add(instruction.position, f"unknown opcode {instruction.opcode}")
        attributes = instruction.attributes
        if not self.attributes(attributes, instruction.name):
            return False
        ok = True
        count = OPERAND_COUNTS.get(instruction.opcode)
        if count is not None and count != len(instruction.operands):
            self.add(instruction.position, f"{instruction.name}: {instruction.opcode} takes {count} operand"
                     f"{'' if count == 1 else 's'}, not {len(instruction.operands)}")
            ok = False
        allowed = allowed_attributes(instruction.opcode)
        if allowed is not None:
            for (name, _), position in zip(attributes.pairs(), attributes.positions()):
                if name not in allowed:
                    self.add(position, f"{instruction.name}: {instruction.opcode} has no attribute {name}")
        for key in REQUIRED_ATTRIBUTES.get(instruction.opcode, ()):
            if key not in attributes:
                self.add(instruction.position, f"{instruction.name}: {instruction.opcode} needs attribute {key}")
                ok = False
        if instruction.literal_text is not None:
            try:
                _ = instruction.literal
            except ParseError as error:
                self.add(error.position if error.text else instruction.position, error.reason)
                ok = False
        for key in CALLED_COMPUTATION_KEYS:
            if key in attributes:
                value = attributes.typed(key)
                for name in value if isinstance(value, tuple) else (value,):
                    if name not in computations:
                        self.add(attributes.position(key), f"computation {name} (in {key}) is not defined")
                        ok = False
        for name in instruction.control_predecessors:
            if name not in names:
                self.add(attributes.position("control-predecessors"), f"control predecessor {name} is not defined")
        return self.values(instruction, attributes) and ok

    def values(self, instruction: InstructionView, attributes: Attributes) -> bool:
        """Attribute values that read but that XLA refuses; False when an enum value is not one XLA knows."""
        known = True
        for key, allowed in _ENUMS.get(instruction.opcode, {}).items():
            if key in attributes and attributes.typed(key) not in allowed:
                known = False
                self.add(attributes.position(key), f"{instruction.name}: {key}={attributes.typed(key)} is not one "
                         f"of {', '.join(sorted(allowed))}")
        if attributes.get_typed("api_version") == "API_VERSION_UNSPECIFIED":
            self.add(attributes.position("api_version"), f"{instruction.name}: api_version must not be "
                     "API_VERSION_UNSPECIFIED")
        elif "api_version" in attributes and attributes.typed("api_version") not in _API_VERSIONS:
            self.add(attributes.position("api_version"),
                     f"{instruction.name}: unknown api_version {attributes.typed('api_version')}")
        if attributes.get_typed("use_global_device_ids") is True and "channel_id" not in attributes:
            self.add(attributes.position("use_global_device_ids"),
                     f"{instruction.name}: use_global_device_ids=true needs a channel_id")
        return known

    def attributes(self, attributes: Attributes, owner: str) -> bool:
        """Repeated keys and well-known values that do not read; True when every value read."""
        seen: set[str] = set()
        ok = True
        for (key, _), position in zip(attributes.pairs(), attributes.positions()):
            if key in seen:
                self.add(position, f"attribute {key} of {owner} is repeated")
            seen.add(key)
        for key in attributes:
            if not has_reader(key):
                continue
            try:
                attributes.typed(key)
            except ParseError as error:
                self.add(error.position, f"attribute {key} of {owner}: {error.reason}")
                ok = False
        return ok

    def aliasing(self) -> None:
        """``input_output_alias`` and ``buffer_donor`` of the module against the entry's parameters and result."""
        attributes = self.module.attributes
        if not self.module.computations:
            return
        entry = next((c for c in self.module.computations if c.is_entry), self.module.computations[-1])
        if not entry.instructions:
            return
        parameters = {i.parameter_number: i.shape for i in entry.instructions if i.opcode == "parameter"}
        roots = [i for i in entry.instructions if i.is_root] or [entry.instructions[-1]]
        result = roots[0].shape
        seen_outputs: set[tuple[int, ...]] = set()
        for entry_value in _readable(attributes, "input_output_alias"):
            output, parameter, index = entry_value[0], entry_value[1], entry_value[2]
            where = attributes.position("input_output_alias")
            if len(entry_value) > 3 and entry_value[3] not in _ALIAS_KINDS:
                self.add(where, f"input_output_alias: unknown kind {entry_value[3]} (may-alias or must-alias)")
            if output in seen_outputs:
                self.add(where, f"input_output_alias: output {{{','.join(map(str, output))}}} is aliased twice")
            seen_outputs.add(output)
            if not _has_index(result, output):
                self.add(where, f"input_output_alias: output index {{{','.join(map(str, output))}}} is not in the "
                         f"result {shape_text(result, print_layout=False)}")
            self.parameter_index(where, "input_output_alias", parameters, parameter, index)
        for parameter, index in _readable(attributes, "buffer_donor"):  # repeats are merged, as XLA does
            self.parameter_index(attributes.position("buffer_donor"), "buffer_donor", parameters, parameter, index)

    def parameter_index(self, where: int, key: str, parameters: Mapping[int | None, Shape], parameter: int,
                        index: tuple[int, ...]) -> None:
        """A problem when ``parameter`` or its ``index`` is not in the entry's parameters."""
        if parameter not in parameters:
            self.add(where, f"{key}: the entry has no parameter {parameter}")
        elif not _has_index(parameters[parameter], index):
            self.add(where, f"{key}: index {{{','.join(map(str, index))}}} is not in parameter {parameter} "
                     f"{shape_text(parameters[parameter], print_layout=False)}")


def _readable(attributes: Attributes, key: str) -> tuple[Any, ...]:
    """The typed value of ``key`` when present and readable, else ()."""
    try:
        value: tuple[Any, ...] = attributes.get_typed(key, ())
    except ParseError:
        return ()
    return value


def _has_index(shape: Shape, index: tuple[int, ...]) -> bool:
    """True when ``index`` names a subshape of ``shape``."""
    for i in index:
        if not shape.is_tuple or not 0 <= i < len(shape.tuple_shapes):
            return False
        shape = shape.tuple_shapes[i]
    return True


def _shape_problem(instruction: InstructionView, operands: tuple[Shape, ...],
                   called: Mapping[str, Signature | None]) -> str | None:
    """What XLA's broadcasting rules and shape inference say against ``instruction``'s written shape, or None."""
    opcode = instruction.opcode
    try:
        if opcode in BINARY_OPS and len(operands) == 2:
            _check_binary_shape(instruction, operands[0], operands[1])
        elif opcode == "broadcast" and len(operands) == 1 and "dimensions" in instruction.attributes:
            _check_broadcast_shape(instruction, operands[0])
        if opcode in _CHECKED_OPCODES:
            attributes = instruction.attributes
            typed = {key: attributes.typed(key) for key in attributes}
            signatures = {name: signature for name, signature in called.items() if signature is not None}
            check_shape(opcode, operands, instruction.shape, typed, signatures)
    except (ShapeError, ParseError) as error:
        return str(error)
    return None


def _check_binary_shape(instruction: InstructionView, lhs: Shape, rhs: Shape) -> None:
    """ShapeError when the declared shape is not what broadcasting ``lhs`` with ``rhs`` gives."""
    if not (lhs.is_array and rhs.is_array and instruction.shape.is_array):
        raise ShapeError(f"{instruction.opcode} takes arrays, not {lhs} and {rhs}")
    expected = broadcast_shape(lhs, rhs)
    declared = instruction.shape
    if not declared.equal(expected, ignore_layout=True, ignore_dynamic=True, ignore_element_type=True):
        raise ShapeError(f"declared shape {shape_text(declared, print_layout=False)} is not the broadcast of its "
                         f"operands {shape_text(lhs, print_layout=False)} and {shape_text(rhs, print_layout=False)}, "
                         f"which is {shape_text(expected, print_layout=False)}")
    wanted = "pred" if instruction.opcode == "compare" else lhs.element_type.name
    if declared.element_type.name != wanted:
        raise ShapeError(f"{instruction.opcode} of {lhs.element_type} operands gives {wanted}, "
                         f"not {declared.element_type}")


def _check_broadcast_shape(instruction: InstructionView, operand: Shape) -> None:
    """ShapeError when ``broadcast(operand), dimensions={...}`` does not map each operand dim onto an equal one."""
    dims = instruction.attributes.typed("dimensions")
    declared = instruction.shape
    if not (operand.is_array and declared.is_array):
        raise ShapeError("broadcast takes and gives arrays")
    if len(dims) != operand.rank:
        raise ShapeError(f"dimensions={{{','.join(map(str, dims))}}} has {len(dims)} entries but the operand "
                         f"{shape_text(operand, print_layout=False)} has rank {operand.rank}")
    for i, dim in enumerate(dims):
        if not 0 <= dim < declared.rank or declared.dimensions[dim] != operand.dimensions[i]:
            raise ShapeError(f"operand dimension {i} (size {operand.dimensions[i]}) does not match dimension {dim} "
                             f"of the declared shape {shape_text(declared, print_layout=False)}")
    if declared.element_type != operand.element_type:
        raise ShapeError(f"broadcast of {operand.element_type} gives {operand.element_type}, "
                         f"not {declared.element_type}")


_OPERAND_TOKEN = re.compile(r"[()]|%?([A-Za-z_][A-Za-z0-9_.\-]*)")


def _operand_positions(text: str, instruction: InstructionView, end: int) -> dict[str, int]:
    """Where each operand name is first written between the opcode's ``(`` and its ``)`` (searching before ``end``).

    Linear in the length of the operand list: one pass, stopping at the closing parenthesis.
    """
    position = instruction.position
    start = text.find(f"{instruction.opcode}(", position, max(end, position))
    if start < 0:
        return {}
    wanted = set(instruction.operands)
    found: dict[str, int] = {}
    depth = 0
    for match in _OPERAND_TOKEN.finditer(text, start + len(instruction.opcode), max(end, position)):
        token = match.group()
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                break
        elif match.group(1) in wanted and match.group(1) not in found:
            found[match.group(1)] = match.start()
            if len(found) == len(wanted):
                break
    return found


def module_problems(module: ModuleView, found: Sequence[tuple[int, str]] = ()) -> list[Problem]:
    """All problems of ``module`` in text order, with ``found`` (position, message) pairs the parser recorded.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> m = parse_hlo_module("HloModule m\\nENTRY e {\\n  ROOT n = f32[2] negate(x)\\n}")
    >>> [str(p) for p in module_problems(m)]
    ['line 3, column 26: operand x of n is not defined in computation e']
    """
    return _Checker(module, found).problems()
