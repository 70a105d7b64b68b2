"""Values, aliasing and live ranges of a scheduled HLO module, as XLA's dataflow and alias analyses see them.

A *value* is one array leaf (or tuple index table) defined by one instruction. Instructions that only forward
values (get-tuple-element, bitcast, tuple elements, while, call results, parameters of called computations ...)
define none. Values that must share storage (a while's init/body/result, conditional branch roots, in-place
updates, donated parameters and their outputs, async start/done pairs) are merged into one *buffer*.
The schedule is flattened as XLA's HloLiveRange does: called computations (while condition then body,
conditional branches, calls, async computations) run right before the instruction that calls them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import ShapeError
from ..hlo import HloComputation, HloInstruction, HloModule
from ..shape import Shape

POINTER_SIZE = 8
"""Bytes of one entry of a tuple's index table (XLA's pointer size on CPU, GPU and TPU hosts)."""

_MAX_NESTING = 200

# Attributes that name a conditional's branches (the walker also reads "condition", "body", "to_apply" and
# "calls"). Switch to the public constant of xlashapes.hlo once it exists.
_BRANCH_KEYS = ("branch_computations", "true_computation", "false_computation")

ELEMENTWISE = frozenset("""
abs add and atan2 cbrt ceil clamp compare complex convert cosine divide erf exponential exponential-minus-one floor
imag is-finite log log-plus-one logistic maximum minimum multiply negate not or popcnt power real reduce-precision
remainder round-nearest-afz round-nearest-even rsqrt select shift-left shift-right-arithmetic shift-right-logical
sign sine sqrt subtract tan tanh xor stochastic-convert count-leading-zeros
""".split())
"""Opcodes that compute each output element from the same element of their operands."""

_ALIAS_PAIR = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}")

Tree = dict[tuple[int, ...], int]
"""Shape index -> value id, for every subshape of an instruction's result (tuple tables included)."""


@dataclass(eq=False)
class Value:
    """One value: a leaf or tuple table defined by an instruction, with its schedule live range."""

    id: int
    instruction: HloInstruction
    computation: str
    index: tuple[int, ...]
    shape: Shape
    size: int
    start: int
    end: int
    memory_space: int


@dataclass(eq=False)
class Dataflow:
    """The flattened schedule, every value and the union-find that merges values into buffers."""

    module: HloModule
    relayout: Callable[[Shape], Shape] | None = None
    sequence: list[tuple[HloComputation, HloInstruction]] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    trees: dict[int, Tree] = field(default_factory=dict)  # id(instruction) -> tree (instructions of runs)
    entry_root: Tree = field(default_factory=dict)
    donated: set[int] = field(default_factory=set)  # value ids of donated entry parameters
    operand_tops: dict[int, list[int | None]] = field(default_factory=dict)  # id(instruction) -> operand values
    unsized: list[str] = field(default_factory=list)
    sizes: dict[Shape, int] = field(default_factory=dict)  # leaf shape -> bytes (-1: no size)
    _fusion_users: dict[str, dict[str, list[HloInstruction]]] = field(default_factory=dict)

    def find(self, value: int) -> int:
        """The representative value id of ``value``'s buffer."""
        parent = self.parent
        root = value
        while parent[root] != root:
            root = parent[root]
        while parent[value] != root:
            parent[value], value = root, parent[value]
        return root

    def union(self, a: int, b: int) -> None:
        """Merge the buffers of values ``a`` and ``b``."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    @property
    def end_time(self) -> int:
        """The time after the last instruction: live-out values and entry parameters live until here."""
        return len(self.sequence)


def leaf_size(shape: Shape) -> int:
    """Bytes XLA allocates for one leaf: the array's physical bytes, a tuple's index table, 0 for a token."""
    if shape.is_tuple:
        return POINTER_SIZE * len(shape.tuple_shapes)
    return shape.byte_size(POINTER_SIZE)


def _subshapes(shape: Shape, prefix: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Shape]]:
    yield prefix, shape
    if shape.is_tuple:
        for i, sub in enumerate(shape.tuple_shapes):
            yield from _subshapes(sub, (*prefix, i))


def subtree(tree: Tree, index: int) -> Tree:
    """The part of ``tree`` under tuple element ``index``."""
    return {key[1:]: value for key, value in tree.items() if key[:1] == (index,)}


def analyze(module: HloModule, relayout: Callable[[Shape], Shape] | None = None) -> Dataflow:
    """Flatten the schedule, define every value, merge aliased values and compute live ranges.

    ``relayout`` maps an array shape to the one whose bytes count (e.g. with the TPU's tiling).
    """
    flow = Dataflow(module, relayout)
    _Walker(flow).run()
    return flow


class _Walker:
    """Walks the entry computation and the computations it runs, in schedule order."""

    def __init__(self, flow: Dataflow) -> None:
        self.flow = flow
        self.depth = 0

    def new_value(self, instruction: HloInstruction, computation: HloComputation, index: tuple[int, ...],
                  shape: Shape) -> int:
        flow = self.flow
        size = flow.sizes.get(shape)
        if size is None:
            try:
                size = leaf_size(flow.relayout(shape) if flow.relayout is not None and shape.is_array else shape)
            except ShapeError:
                size = -1
            flow.sizes[shape] = size
        if size < 0:
            size = 0
            flow.unsized.append(instruction.name)
        space = 0
        if shape.is_array and shape.layout is not None:
            space = shape.layout.memory_space
        vid = len(flow.values)
        time = len(flow.sequence)
        flow.values.append(Value(vid, instruction, computation.name, index, shape, size, time, time, space))
        flow.parent.append(vid)
        return vid

    def fresh(self, instruction: HloInstruction, computation: HloComputation, shape: Shape | None = None,
              keep: Tree | None = None) -> Tree:
        """New values for every subshape of ``shape`` except the indices ``keep`` already provides."""
        tree: Tree = {}
        for index, sub in _subshapes(instruction.shape if shape is None else shape):
            if keep is not None and index in keep:
                tree[index] = keep[index]
            else:
                tree[index] = self.new_value(instruction, computation, index, sub)
        return tree

    def run(self) -> None:
        module = self.flow.module
        entry = module.entry
        root = self.computation(entry, None)
        self.flow.entry_root = root
        end = self.flow.end_time
        for vid in root.values():
            self.flow.values[vid].end = end
        self.donations(entry, root)
        for instruction in entry.instructions:
            if instruction.opcode == "parameter":
                for vid in self.flow.trees[id(instruction)].values():
                    value = self.flow.values[vid]
                    value.start = 0
                    if vid not in self.flow.donated:  # a donated parameter dies at its last use
                        value.end = end

    def donations(self, entry: HloComputation, root: Tree) -> None:
        """Merge donated parameters with the outputs they alias (``input_output_alias``)."""
        text = self.flow.module.attributes.get("input_output_alias")
        if not text:
            return
        params = {i.parameter_number: i for i in entry.instructions if i.opcode == "parameter"}
        for output, number, param_index in _ALIAS_PAIR.findall(text):
            out_key = tuple(int(p) for p in output.replace(" ", "").split(",") if p)
            in_key = tuple(int(p) for p in param_index.replace(" ", "").split(",") if p)
            param = params.get(int(number))
            if param is None or out_key not in root:
                continue
            tree = self.flow.trees[id(param)]
            if in_key in tree:
                self.flow.donated.add(tree[in_key])
                self.flow.union(tree[in_key], root[out_key])

    def computation(self, computation: HloComputation, parameters: list[Tree] | None) -> Tree:
        """Walk one computation run as such; ``parameters`` are the caller's operand trees (None: entry)."""
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise ShapeError(f"computations nest deeper than {_MAX_NESTING} levels at {computation.name}")
        env: dict[str, Tree] = {}
        last: Tree = {}
        for instruction in computation.instructions:
            last = env[instruction.name] = self.instruction(instruction, computation, env, parameters)
        self.depth -= 1
        if not computation.instructions:
            return {}
        root = env.get(computation.root.name, last)
        if parameters is not None:  # values returned by a called computation live one tick past its end
            end = len(self.flow.sequence)
            for vid in root.values():
                value = self.flow.values[vid]
                value.end = max(value.end, end)
        return root

    def operand_tree(self, env: dict[str, Tree], name: str, user: HloInstruction) -> Tree:
        try:
            return env[name]
        except KeyError:
            raise ShapeError(f"instruction {user.name} uses {name}, which is not defined before it") from None

    def instruction(self, instruction: HloInstruction, computation: HloComputation, env: dict[str, Tree],
                    parameters: list[Tree] | None) -> Tree:
        flow = self.flow
        op = instruction.opcode
        operands = [self.operand_tree(env, name, instruction) for name in instruction.operands]
        called_from = len(flow.sequence)  # where called computations start: the caller's operands are used there
        forwarded = True
        tree: Tree
        if op == "parameter":
            number = instruction.parameter_number or 0
            if parameters is None or number >= len(parameters):
                tree = self.fresh(instruction, computation)
                forwarded = parameters is None
            else:
                tree = parameters[number]
        elif op == "get-tuple-element":
            tree = subtree(operands[0], instruction.attributes.get_typed("index", 0))  # ParseError when malformed
        elif op in ("bitcast", "optimization-barrier", "opt-barrier", "domain", "add-dependency") and operands:
            tree = operands[0]
        elif op == "tuple":
            tree = {(): self.new_value(instruction, computation, (), instruction.shape)}
            for i, operand in enumerate(operands):
                tree.update({(i, *key): value for key, value in operand.items()})
        elif op == "while" and operands:
            carried = self.fresh(instruction, computation)  # the loop's phi values, one buffer with the init
            self.merge(carried, operands[0])
            self.run_called(instruction, "condition", [carried])
            self.merge(carried, self.run_called(instruction, "body", [carried]))
            for vid in carried.values():
                flow.values[vid].end = max(flow.values[vid].end, len(flow.sequence))
            tree = self.fresh(instruction, computation)
            self.merge(tree, carried)
        elif op == "conditional" and len(operands) >= 1:
            roots = [self.run_named(instruction, name, operands[k + 1:k + 2])
                     for k, name in enumerate(self.branches(instruction))]
            tree = self.fresh(instruction, computation)  # phi values: one buffer with every branch root
            for root in roots:
                self.merge(tree, root)
        elif op == "call":
            tree = self.run_called(instruction, "to_apply", operands) or self.fresh(instruction, computation)
        elif op == "async-start":
            called = self.run_called(instruction, "calls", [subtree({(0, *k): v for k, v in o.items()}, 0)
                                                            for o in operands])
            keep: Tree = {}
            for i, operand in enumerate(operands):
                keep.update({(0, i, *key): value for key, value in operand.items()})
            keep.update({(1, *key): value for key, value in called.items()})
            tree = self.fresh(instruction, computation, keep=keep)
        elif op in ("async-update",) and operands:
            tree = operands[0]
        elif op.endswith("-done") and operands:
            tree = self.done_tree(instruction, computation, operands[0])
        else:
            forwarded = False
            tree = self.fresh(instruction, computation)
            self.in_place(instruction, tree, operands)
        flow.trees[id(instruction)] = tree
        flow.operand_tops[id(instruction)] = [operand.get(()) for operand in operands]
        time = len(flow.sequence)
        flow.sequence.append((computation, instruction))
        values = flow.values
        for vid in tree.values():
            if values[vid].end < time:
                values[vid].end = time
        if op in ("while", "conditional", "call", "async-start"):
            used = called_from if op == "while" and called_from < time else time  # a loop reads its init first
            for operand in operands:
                for vid in operand.values():
                    if values[vid].end < used:
                        values[vid].end = used
        elif op == "get-tuple-element" and operands and () in operands[0]:
            table = values[operands[0][()]]  # reading an element reads the tuple's index table
            if table.end < time:
                table.end = time
        elif not forwarded:
            for operand in operands:
                for vid in operand.values():
                    if values[vid].end < time:
                        values[vid].end = time
        return tree

    def done_tree(self, instruction: HloInstruction, computation: HloComputation, operand: Tree) -> Tree:
        """The result of an asynchronous ``*-done``: a part of its ``*-start``'s result."""
        shape = instruction.shape
        if len(operand) == sum(1 for _ in _subshapes(shape)):
            return operand
        pick = 0 if instruction.opcode == "copy-done" else 1
        part = subtree(operand, pick)
        if len(part) == sum(1 for _ in _subshapes(shape)):
            return part
        return self.fresh(instruction, computation)

    def merge(self, tree: Tree, other: Tree) -> None:
        for key, vid in other.items():
            if key in tree:
                self.flow.union(tree[key], vid)

    def branches(self, instruction: HloInstruction) -> list[str]:
        attributes = instruction.attributes
        if _BRANCH_KEYS[0] in attributes:
            names = attributes.typed(_BRANCH_KEYS[0])
            return list(names) if isinstance(names, tuple) else [names]
        return [attributes.typed(key) for key in _BRANCH_KEYS[1:] if key in attributes]

    def run_called(self, instruction: HloInstruction, key: str, parameters: list[Tree]) -> Tree:
        if key not in instruction.attributes:
            return {}
        name = instruction.attributes.typed(key)
        if isinstance(name, tuple):
            name = name[0] if name else ""
        return self.run_named(instruction, name, parameters)

    def run_named(self, instruction: HloInstruction, name: str, parameters: list[Tree]) -> Tree:
        try:
            callee = self.flow.module.computation(name)
        except KeyError:
            raise ShapeError(f"instruction {instruction.name} calls {name}, which is not defined") from None
        return self.computation(callee, parameters)

    def in_place(self, instruction: HloInstruction, tree: Tree, operands: list[Tree]) -> None:
        """Merge results that XLA updates in place with the operand they update."""
        op = instruction.opcode
        if op in ("dynamic-update-slice", "scatter") and operands:
            self.merge(tree, operands[0])
        elif op == "fusion":
            for out_key, operand_number in fusion_in_place_pairs(self.flow, instruction):
                if operand_number < len(operands) and () in operands[operand_number] and out_key in tree:
                    self.flow.union(tree[out_key], operands[operand_number][()])


def fused_computation(flow: Dataflow, fusion: HloInstruction) -> HloComputation | None:
    """The computation a fusion instruction calls, None when it is missing."""
    name = fusion.attributes.get("calls")
    if name is None:
        return None
    try:
        return flow.module.computation(name.lstrip("%"))
    except KeyError:
        return None


def fusion_in_place_pairs(flow: Dataflow, fusion: HloInstruction) -> list[tuple[tuple[int, ...], int]]:
    """(output index, operand number) of a fusion whose root updates a parameter in place."""
    body = fused_computation(flow, fusion)
    if body is None or not body.instructions:
        return []
    root = body.root
    roots: list[tuple[tuple[int, ...], HloInstruction]] = [((), root)]
    if root.opcode == "tuple":
        roots = [((i,), body[name]) for i, name in enumerate(root.operands) if name in body]
    pairs: list[tuple[tuple[int, ...], int]] = []
    for key, instruction in roots:
        if instruction.opcode in ("dynamic-update-slice", "scatter") and instruction.operands:
            source = body[instruction.operands[0]] if instruction.operands[0] in body else None
            while source is not None and source.opcode == "bitcast" and source.operands:
                source = body[source.operands[0]] if source.operands[0] in body else None
            if source is not None and source.opcode == "parameter":
                pairs.append((key, source.parameter_number or 0))
    return pairs


def _users(flow: Dataflow, body: HloComputation) -> dict[str, list[HloInstruction]]:
    users = flow._fusion_users.get(body.name)
    if users is None:
        users = {}
        for instruction in body.instructions:
            for name in instruction.operands:
                users.setdefault(name, []).append(instruction)
        flow._fusion_users[body.name] = users
    return users


def _elementwise_or_tuple_uses(flow: Dataflow, body: HloComputation, start: HloInstruction) -> bool:
    users = _users(flow, body)
    pending, seen = [start.name], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for user in users.get(name, ()):
            if user.opcode == "tuple":
                continue
            if user.opcode not in ELEMENTWISE:
                return False
            pending.append(user.name)
    return True


def can_share(flow: Dataflow, operand: Value, user: HloInstruction, user_index: tuple[int, ...],
              user_shape: Shape, backend: str) -> bool:
    """True when ``user`` may write its result at ``user_index`` over ``operand``, which dies there."""
    op = user.opcode
    if op == "copy" or operand.shape != user_shape:
        return False
    if op == "fusion":
        kind = user.attributes.get("kind")
        if kind not in ("kLoop", "kInput"):
            return False
        body = fused_computation(flow, user)
        if body is None:
            return False
        position = operand_position(flow, operand, user)
        if position < 0:
            return False
        params = [i for i in body.instructions if i.opcode == "parameter" and i.parameter_number == position]
        return bool(params) and _elementwise_or_tuple_uses(flow, body, params[0])
    if op == "sort":
        return len(user.operands) == 1 or user_index[:1] == (operand_position(flow, operand, user),)
    return op in ELEMENTWISE


def operand_position(flow: Dataflow, operand: Value, user: HloInstruction) -> int:
    """The first operand number of ``user`` that holds ``operand`` at its top level, -1 when none does."""
    tops = flow.operand_tops.get(id(user), [])
    return next((i for i, vid in enumerate(tops) if vid == operand.id), -1)
