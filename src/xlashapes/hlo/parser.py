"""Parsing HLO text: whole modules and single instructions, as XLA's parser reads them.

Two parsers read the same grammar. The fast path (:mod:`._fast`) matches whole canonical lines with regular
expressions; whatever line it does not recognise goes to the careful token-level parser here, which either reads
it or raises a ``ParseError`` pointing at the offending character. Both give the same module.

The careful parser also reads what XLA accepts beyond printed dumps: no ``HloModule`` line (the module is then
named ``module_<entry>``), ``HloModule m:``, parameter lists without colons, instructions without a shape (only
for ``inference.PARSER_INFERRED_OPCODES``, as XLA's parser; the shape comes from
:func:`xlashapes.inference.infer_shape`, laid out as XLA lays it out, see :mod:`._layouts`), instructions
written inline as operands (named ``<opcode>.anon``, ``<opcode>.anon.1`` ...), computations written inline in
``to_apply={...}``/``calls={...}`` (named ``_``, ``_.1`` ...), and the shapes XLA derives itself (send, recv,
send-done, recv-done, outfeed; a constant's layout without ``E(n)``).
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

from ..dtypes import ELEMENT_TYPES
from ..errors import ParseError, ShapeError
from ..inference import PARSER_INFERRED_OPCODES, Signature, infer_shape
from ..shape import Shape, make_shape, token_shape, tuple_shape
from ..text import parse_shape
from ._fast import DERIVED_SHAPE_OPCODES, PLAIN_FAST_OPCODES, fast_computation, fast_instruction
from ._layouts import with_xla_layout
from ._names import apply_xla_names, illegal_instruction_name, odd_name, sanitized_name
from ._patterns import BLANKS, INSTRUCTION, INSTRUCTION_HEAD, MAX_FAST_LINE, PLAIN_OPERAND, SIMPLE_ATTRIBUTE, TAIL
from ._source import Source
from ._tokens import TokenReader, is_uint64
from .attributes import SINGLE_COMPUTATION_KEYS, Attributes
from .checks import REQUIRED_ATTRIBUTES
from .frames import StackFrameIndex
from .model import HloComputation, HloInstruction, HloModule
from .opcodes import RESERVED

_PLAIN_OPERAND = PLAIN_OPERAND
_SIMPLE_ATTRIBUTE = SIMPLE_ATTRIBUTE

__all__ = ["parse_hlo_module", "parse_instruction", "with_xla_layout"]


class _Builder:
    """What parsing a module accumulates: computations, the names given so far, the shapes of the current scope."""

    __slots__ = ("cache", "computations", "counters", "index", "names", "odd_names", "repeated", "scopes", "zeros")

    def __init__(self) -> None:
        self.computations: list[HloComputation] = []
        self.names: set[str] = set(RESERVED)  # the reserved words, then every instruction name read
        self.odd_names = False  # a name the uniquer may change although it is not repeated (x.01, x.-0)
        self.zeros: list[str] = []  # names ending in .0 (x.0 and x are the same name to the uniquer)
        self.repeated = False  # an instruction name read twice
        self.index: dict[str, list[HloComputation]] = {}
        self.cache: dict[int, Signature] = {}
        self.counters: dict[str, int] = {}
        self.scopes: list[tuple[HloComputation, dict[str, Shape], list[int]]] = []

    def enter(self, computation: HloComputation) -> None:
        """Start reading ``computation``'s instructions (it is then known by name to ``signatures``)."""
        self.scopes.append((computation, {}, [0]))
        self.index.setdefault(computation.name, []).append(computation)

    def note(self, name: str) -> None:
        """Remember an instruction name the careful parser read (for XLA's renaming)."""
        if name in self.names and name not in RESERVED:
            self.repeated = True
        self.names.add(name)
        if name.endswith(".0"):
            self.zeros.append(name)
        elif odd_name(name):
            self.odd_names = True

    def leave(self) -> None:
        """Finish the innermost computation."""
        if self.scopes:
            self.scopes.pop()

    def unique(self, base: str) -> str:
        """``base`` the first time, then ``base.1``, ``base.2`` ... (XLA's name uniquer)."""
        count = self.counters.get(base, 0)
        self.counters[base] = count + 1
        return base if count == 0 else f"{base}.{count}"

    def add(self, instruction: HloInstruction) -> None:
        """Append ``instruction`` to the innermost computation."""
        if self.scopes:
            self.scopes[-1][0].instructions.append(instruction)

    def shape_of(self, name: str) -> Shape | None:
        """The shape of instruction ``name`` of the innermost computation (None when not defined yet)."""
        if not self.scopes:
            return None
        computation, known, seen = self.scopes[-1]
        instructions = computation.instructions
        for instruction in instructions[seen[0]:]:
            known.setdefault(instruction.name, instruction.shape)
        seen[0] = len(instructions)
        return known.get(name)

    def signatures(self, names: list[str]) -> dict[str, Signature]:
        """The signature of every computation in ``names`` defined so far (each finished one computed once)."""
        index, cache = self.index, self.cache
        active = {id(scope[0]) for scope in self.scopes}
        found: dict[str, Signature] = {}
        for name in names:
            for computation in index.get(name, ()):
                if not computation.instructions:
                    continue
                key = id(computation)
                signature = cache.get(key) if key not in active else None
                if signature is None:
                    parameters = sorted((i for i in computation.instructions if i.opcode == "parameter"),
                                        key=lambda i: i.parameter_number or 0)
                    signature = Signature(tuple(i.shape for i in parameters), computation.root.shape)
                    if key not in active:
                        cache[key] = signature
                found[name] = signature
                break
        return found


_U32 = make_shape(ELEMENT_TYPES["u32"], [])
_TOKEN = token_shape()


def derived_shape(opcode: str, written: Shape | None, operands: list[Shape | None]) -> Shape | None:
    """The shape XLA gives send/recv/send-done/recv-done/outfeed (None when it cannot tell).

    >>> from xlashapes.text import parse_shape
    >>> str(derived_shape("send", None, [parse_shape("u32[8]"), parse_shape("token[]")]))
    '(u32[8]{0}, u32[], token[])'
    """
    if opcode == "send" and operands and operands[0] is not None:
        return tuple_shape([operands[0], _U32, _TOKEN])
    if opcode == "recv" and written is not None and written.is_tuple and written.tuple_shapes:
        return tuple_shape([written.tuple_shapes[0], _U32, _TOKEN])
    if opcode == "recv-done" and operands and operands[0] is not None and operands[0].is_tuple \
            and operands[0].tuple_shapes:
        return tuple_shape([operands[0].tuple_shapes[0], _TOKEN])
    if opcode in ("send-done", "outfeed"):
        return _TOKEN
    return None


def _without_element_size(shape: Shape) -> Shape:
    """``shape`` with ``E(n)`` dropped from its layouts (XLA's constants carry none)."""
    if shape.is_tuple:
        return tuple_shape([_without_element_size(s) for s in shape.tuple_shapes])
    if shape.layout is None or not shape.layout.element_size_in_bits:
        return shape
    try:
        layout = replace(shape.layout, element_size_in_bits=0)  # as leniently as the parser read it
    except ShapeError:
        return shape
    return Shape.trusted(shape.element_type, shape.dimensions, shape.dynamic_dimensions, layout)


class _Careful(TokenReader):
    """Token-level HLO parser; the fast path hands it every line it does not recognise."""

    __slots__ = ("builder",)

    def __init__(self, source: Source, position: int, builder: _Builder | None = None) -> None:
        super().__init__(source, position)
        self.builder = builder if builder is not None else _Builder()

    def attribute_list(self, inside_operands: bool = False) -> Attributes:
        """``(',' key=value)*`` into Attributes; computations written inline become computations."""
        pairs: list[tuple[str, str]] = []
        positions: list[int] = []
        typed: dict[str, Any] = {}
        while self.token.kind == "," and (not inside_operands or self.peek_kind() == "attribute_name"):
            if self.simple_attributes(pairs, positions):
                continue
            self.advance()
            key = self.expect("attribute_name", "expected an attribute name followed by '=' (key=value)")
            name = str(key.value)
            if name in SINGLE_COMPUTATION_KEYS and self.token.kind == "{" and self.inline_computation_follows():
                position = self.token.start
                typed[name] = self.inline_computation()
                raw = f"%{typed[name]}"
            else:
                raw, position = self.value()
            pairs.append((name, raw))
            positions.append(position)
        return Attributes(pairs, positions, self.source, typed)

    def simple_attributes(self, pairs: list[tuple[str, str]], positions: list[int]) -> bool:
        """Read a run of ``, key=word`` attributes by regex (long lists quickly); True when any was read."""
        text = self.text
        match = _SIMPLE_ATTRIBUTE.match(text, self.token.start)
        moved = -1
        while match is not None:
            pairs.append((match.group(1), match.group(2)))
            positions.append(match.start(2))
            moved = match.end()
            match = _SIMPLE_ATTRIBUTE.match(text, moved)
        if moved < 0:
            return False
        self.jump(moved)
        return True

    def inline_computation_follows(self) -> bool:
        """True when the ``{`` at hand opens instructions (``{ a = ...`` / ``{ ROOT ...``), not a list of names."""
        saved = (self.lexer.pos, self.token, self.prev_end)
        self.advance()
        token = self.token
        if token.kind == "keyword" and token.value == "ROOT":
            found = True
        elif token.kind == "attribute_name":
            found = True
        else:
            found = self.is_name() and self.peek_kind() == "="
        self.lexer.pos, self.token, self.prev_end = saved
        return found

    def inline_computation(self) -> str:
        """``{ instructions }`` as a new computation named ``_``, ``_.1`` ...; returns its name."""
        start = self.token.start
        self.advance()
        builder = self.builder
        computation = HloComputation(builder.unique("_"), position=start)
        builder.enter(computation)
        try:
            while self.token.kind != "}":
                if self.token.kind == "eof":
                    raise self.fail("expected '}' to end the computation written inline")
                builder.add(self.instruction())
        finally:
            builder.leave()
        self.advance()
        index = len(builder.computations) - 1 if builder.computations else 0
        builder.computations.insert(max(index, 0), computation)
        return computation.name

    # ----- instructions -----
    def instruction(self) -> HloInstruction:
        """``[ROOT] name = [shape] opcode(operands) (, key=value)*``"""
        start = self.token.start
        is_root = self.keyword("ROOT")
        name_token = self.token
        name = self.name("an instruction name")
        if illegal_instruction_name(name):
            raise self.error(f"illegal instruction name {name}: XLA's parser refuses names its sanitizer would change "
                             f"(to {sanitized_name(name)})", name_token)
        self.expect("=", "expected '=' after the instruction name")
        if self.token.kind == "ident":
            following = self.peek_kind()
            if following == "(":
                return self.rest(start, name, None, is_root, inline=False)
            if following != "[":  # F32[2] gets the shape parser's message about type names
                raise self.fail("expected a shape (f32[2], (s32[], f32[]) ...) or an opcode and '('")
        return self.rest(start, name, self.any_shape(), is_root, inline=False)

    def rest(self, start: int, name: str | None, shape: Shape | None, is_root: bool, inline: bool) -> HloInstruction:
        """``opcode(operands) (, key=value)*`` after the shape (``name`` None: an inline operand, named here)."""
        opcode_token = self.token
        if opcode_token.kind != "ident":
            if shape is None:
                raise self.fail("expected a shape or an opcode (add, fusion, get-tuple-element ...)")
            raise self.fail("expected an opcode (add, fusion, get-tuple-element ...)")
        self.advance()
        opcode = str(opcode_token.value)
        if shape is None and opcode not in PARSER_INFERRED_OPCODES:
            raise self.error(f"{opcode} is written without a shape, and XLA's parser cannot infer the shape of "
                             f"{opcode}: write it before the opcode", opcode_token)
        self.expect("(", f"expected '(' after the opcode {opcode}")
        parameter_number = None
        literal_text = None
        literal_position = -1
        operands: list[str] = []
        shapes: list[Shape | None] | None = None
        if opcode == "parameter":
            parameter_number = self.parameter_number()
        elif opcode == "constant":
            literal_position = self.token.start
            literal_text = self.literal()
        else:
            operands, shapes = self.operands()
        attributes = self.attribute_list(inside_operands=inline)
        written = shape is not None
        if name is None:
            name = self.builder.unique(f"{opcode}.anon")
        self.builder.note(name)
        operand_shapes = [self.builder.shape_of(o) for o in operands]
        if opcode in DERIVED_SHAPE_OPCODES:
            shape = derived_shape(opcode, shape, operand_shapes) or shape
        elif opcode == "constant" and shape is not None:
            shape = _without_element_size(shape)
        if shape is None:
            shape = self.inferred(opcode_token, opcode, operand_shapes, operands, attributes)
        return HloInstruction(name, opcode, shape, operands, shapes, is_root, self.source, start,
                              parsed_attributes=attributes, parameter_number=parameter_number,
                              literal_text=literal_text, literal_position=literal_position, shape_written=written)

    def inferred(self, at: Any, opcode: str, shapes: list[Shape | None], operands: list[str],
                 attributes: Attributes) -> Shape:
        """The shape of an instruction written without one (ParseError when it cannot be inferred)."""
        missing = [o for o, s in zip(operands, shapes) if s is None]
        if missing:
            raise self.error(f"{opcode} is written without a shape and operand {missing[0]} is not defined before "
                             "it, so its shape cannot be inferred", at)
        for key in REQUIRED_ATTRIBUTES.get(opcode, ()):
            if key not in attributes:  # XLA's parser checks attributes before it infers
                raise self.error(f"{opcode} is written without a shape and needs attribute {key}", at)
        try:
            values = {key: attributes.typed(key) for key in attributes}
            called = [n for key in ("to_apply", "calls", "condition", "body", "select", "scatter",
                                    "branch_computations", "called_computations", "true_computation",
                                    "false_computation") if key in values
                      for n in (values[key] if isinstance(values[key], tuple) else (values[key],))]
            known = [s for s in shapes if s is not None]
            signatures = self.builder.signatures(called)
            return with_xla_layout(opcode, known, infer_shape(opcode, known, values, signatures), values, signatures)
        except ShapeError as error:
            raise self.error(f"{opcode} is written without a shape, and it cannot be inferred: {error}", at) from None

    def parameter_number(self) -> int:
        """The ``N)`` of ``parameter(N)``."""
        token = self.token
        number = self.integer("a parameter number")
        if number < 0:
            raise self.error(f"parameter number {number} is negative", token)
        self.expect(")", "expected ')' after the parameter number")
        return number

    def literal(self) -> str:
        """The raw literal of ``constant(...)`` up to the closing parenthesis (balanced brackets, any tokens)."""
        start = self.token.start
        stack: list[Any] = []
        while True:
            token = self.token
            if token.kind in ("(", "{"):
                stack.append(token)
            elif token.kind in (")", "}"):
                if not stack and token.kind == ")":
                    break
                closer = ")" if stack and stack[-1].kind == "(" else "}"
                if not stack or token.kind != closer:
                    raise self.fail(f"expected {closer!r} to close {stack[-1].kind!r}" if stack
                                    else "unbalanced '}' in the literal")
                stack.pop()
            elif token.kind == "eof" or (token.kind == "error" and not is_uint64(self.text, token)):
                raise self.fail("expected ')' to end the constant's literal" if token.kind == "eof"
                                else "bad token in the literal")
            self.advance()
        if self.prev_end <= start:
            raise self.fail("expected a literal")
        text = self.text[start:self.prev_end]
        self.advance()
        return text

    def operands(self) -> tuple[list[str], list[Shape | None] | None]:
        """``[shape] name (, [shape] name)* )``; an operand may be an instruction written inline."""
        names: list[str] = []
        shapes: list[Shape | None] = []
        if self.token.kind == ")":
            self.advance()
            return names, None
        while True:
            if self.plain_operands(names, shapes):
                return names, (shapes if any(s is not None for s in shapes) else None)
            start = self.token.start
            shape = self.any_shape() if self.token.kind in ("type", "(") else None
            if self.token.kind == "ident" and self.peek_kind() == "(":
                inline = self.rest(start, None, shape, False, inline=True)
                self.builder.add(inline)
                names.append(inline.name)
                shapes.append(None)
            else:
                shapes.append(shape)
                names.append(self.name("an operand name"))
            if self.token.kind == ")":
                self.advance()
                return names, (shapes if any(s is not None for s in shapes) else None)
            self.expect(",", "expected ',' or ')' after an operand")

    def plain_operands(self, names: list[str], shapes: list[Shape | None]) -> bool:
        """Read a run of operands written ``[array shape] name,`` by regex (long lists in linear time, quickly);
        True when the run ended the list with ``)``."""
        text = self.text
        match = _PLAIN_OPERAND.match(text, self.token.start)
        moved = -1
        closed = False
        while match is not None:
            shape_text_, percent, name, end = match.groups()
            if not percent and name in RESERVED:
                break
            shape = None
            if shape_text_:
                try:
                    shape = parse_shape(shape_text_)
                except ParseError:
                    break
            names.append(name)
            shapes.append(shape)
            moved = match.end()
            if end == ")":
                closed = True
                break
            match = _PLAIN_OPERAND.match(text, moved)
        if moved >= 0:
            self.jump(moved)
        return closed

    # ----- computations and modules -----
    def computation_header(self) -> HloComputation:
        """``[ENTRY] name [(p: shape, ...) -> shape] {``"""
        start = self.token.start
        is_entry = self.keyword("ENTRY")
        name = self.name("a computation name (or 'ENTRY')")
        if odd_name(name):
            self.builder.odd_names = True  # XLA renames it (__c is a_c, f32 is f32_, x.01 is x.1)
        parameters = None
        result = None
        if self.token.kind == "(":
            self.advance()
            parameters = self.parameter_list()
            self.expect("->", "expected '->' and the result shape after the parameter list")
            result = self.any_shape()
        self.expect("{", "expected '{' to start the computation's instructions")
        return HloComputation(name, is_entry=is_entry, parameters=parameters, result_shape=result, position=start)

    def parameter_list(self) -> list[tuple[str, Shape]]:
        """``p: shape (, p: shape)* )`` (the colon may be left out: ``p shape``)."""
        parameters: list[tuple[str, Shape]] = []
        if self.token.kind == ")":
            self.advance()
            return parameters
        while True:
            token = self.token
            if not (token.kind == "name" and self.text[token.start] != "%") and token.kind != "ident":
                raise self.fail("expected a parameter name followed by ':'")
            self.advance()
            parameters.append((str(token.value), self.any_shape()))
            if self.token.kind == ")":
                self.advance()
                return parameters
            self.expect(",", "expected ',' or ')' in the parameter list")

    def computation_end(self, computation: HloComputation) -> None:
        """``} (, key=value)*``"""
        self.expect("}", "expected '}' to end the computation")
        computation.attributes = self.attribute_list()

    def header(self) -> tuple[str | None, Attributes]:
        """``HloModule name[:] (, key=value)*``; (None, no attributes) when the text starts with a computation."""
        if not self.keyword("HloModule"):
            if self.token.kind in ("ident", "name") or (self.token.kind == "keyword" and self.token.value == "ENTRY"):
                return None, Attributes([], [], self.source)
            raise self.fail("expected 'HloModule' or a computation at the start of the module")
        token = self.token
        if token.kind == "name" and self.text[token.start] != "%":  # HloModule m:
            self.advance()
            return str(token.value), self.attribute_list()
        name = self.name("a module name")
        return name, self.attribute_list()

    def stack_frame_index(self) -> StackFrameIndex | None:
        """The optional FileNames / FunctionNames / FileLocations / StackFrames tables."""
        if not self.keyword("FileNames"):
            return None
        file_names = self.numbered(self.string)
        self.expect_keyword("FunctionNames")
        function_names = self.numbered(self.string)
        self.expect_keyword("FileLocations")
        file_locations = self.numbered(self.integer_fields)
        self.expect_keyword("StackFrames")
        stack_frames = self.numbered(self.integer_fields)
        return StackFrameIndex(file_names, function_names, file_locations, stack_frames)

    def expect_keyword(self, word: str) -> None:
        """Consume keyword ``word`` or fail."""
        if not self.keyword(word):
            raise self.fail(f"expected {word!r}")

    def numbered(self, entry: Any) -> list[Any]:
        """Entries ``N entry`` while the next token is an integer."""
        entries = []
        while self.token.kind == "int":
            self.advance()
            entries.append(entry())
        return entries


class _Reader:
    """Reads a module: canonical lines by regex, everything else with the careful parser."""

    __slots__ = ("builder", "computations", "current", "fast", "index", "source")

    def __init__(self, source: Source, fast: bool) -> None:
        self.source = source
        self.fast = fast
        self.builder = _Builder()
        self.computations: list[HloComputation] = self.builder.computations
        self.current: HloComputation | None = None
        self.index: StackFrameIndex | None = None

    def module(self) -> HloModule:
        """The whole module."""
        careful = _Careful(self.source, 0, self.builder)
        name, attributes = careful.header()
        if name is not None:
            self.index = careful.stack_frame_index()
        self.computations_from(careful.token.start)
        builder = self.builder
        if builder.repeated or builder.odd_names or any(zero[:-2] in builder.names for zero in builder.zeros):
            apply_xla_names(self.computations)
        else:
            zeros = [c.name for c in self.computations if c.name.endswith(".0")]  # region_1.0 beside region_1?
            if zeros and not {c.name for c in self.computations}.isdisjoint(zero[:-2] for zero in zeros):
                apply_xla_names(self.computations)
        if name is None:
            entry = next((c for c in self.computations if c.is_entry), self.computations[-1])
            name = f"module_{entry.name}"
        return HloModule(name, attributes, self.computations, self.index, self.source)

    def computations_from(self, position: int) -> None:
        """Every computation from ``position`` to the end: fast lines where possible, careful steps between."""
        end = len(self.source.text)
        while True:
            position = self.source.first_token(position)
            start, at_line_start = self.locate(position)
            if self.fast and at_line_start:
                position = self.source.first_token(self.fast_lines(start))
            if position >= end and (self.computations and self.current is None):
                return
            position = self.careful_step(position)

    def locate(self, position: int) -> tuple[int, bool]:
        """The start of ``position``'s line, and whether only blanks precede it on its line."""
        text = self.source.text
        start = text.rfind("\n", 0, position) + 1
        return start, not text[start:position].strip()

    def careful_step(self, position: int) -> int:
        """Read one computation header, instruction or closing brace with the careful parser."""
        careful = _Careful(self.source, position, self.builder)
        current = self.current
        if current is None and careful.token.kind == "keyword" and careful.token.value == "FileNames":
            if self.index is not None:
                raise careful.fail("the stack frame tables appear twice")
            self.index = careful.stack_frame_index()  # after the computations: accepted too
        elif current is None:
            self.current = careful.computation_header()
            self.computations.append(self.current)
            self.builder.enter(self.current)
        elif careful.token.kind == "}" and current.instructions:
            careful.computation_end(current)
            self.builder.leave()
            self.current = None
        elif careful.token.kind in ("}", "eof"):
            raise careful.fail(f"expected an instruction{' or }' if current.instructions else ''} in computation "
                               f"{current.name}")
        else:
            current.instructions.append(careful.instruction())
        return careful.token.start

    def fast_lines(self, start: int) -> int:
        """Match lines from offset ``start`` (a line start) on; return the offset where careful parsing resumes."""
        # When a line needs care, the item accepted just before it is handed back too: the careful parser may read
        # it differently once it sees what follows (a leading ',' continues the attributes, a number after
        # '-> f32[] {' makes the brace a layout). Matching split lines is faster than matching in place.
        text = self.source.text
        length = len(text)
        match = INSTRUCTION.fullmatch
        head = INSTRUCTION_HEAD.fullmatch
        tails: dict[str, Any] = {}  # raw tail -> the tail group, or False when INSTRUCTION must decide
        tails_get = tails.get
        shapes: dict[str, Shape] = {}  # this module's shape texts (a plain dict: no recency bookkeeping)
        shapes_get = shapes.get
        kinds: dict[str, tuple[Shape, str, str | None]] = {}
        kinds_get = kinds.get
        builder = self.builder
        seen = builder.names
        seen_add = seen.add
        zeros = builder.zeros
        plain = {opcode: opcode for opcode in PLAIN_FAST_OPCODES}.get
        source = self.source
        current = self.current
        append: Any = current.instructions.append if current is not None else None
        last = -1  # offset of the last item accepted (-1: none yet)
        stopped = False
        chunk = 1 << 12  # lines are split a chunk at a time (doubling): freed line strings make room for the next
        while not stopped and start <= length:
            cut = text.find("\n", start + chunk)
            if cut < 0:
                cut = length
            chunk = min(chunk * 2, 1 << 18)
            for raw in text[start:cut].split("\n"):
                size = len(raw)
                if size > MAX_FAST_LINE:
                    stopped = True
                    break
                found = head(raw) if append is not None else None
                if found is not None:
                    root, percent, name, zero, typed, names, number, other, rest = found.groups()
                    repeated = name in seen  # the reserved words are in it from the start
                    if repeated and name in RESERVED:
                        stopped = True  # %f32 is refused, %true is a name: the careful parser decides
                        break
                    if rest:
                        tail: Any = tails_get(rest)  # attribute tails repeat: each distinct one is matched once
                        if tail is None:
                            valid = TAIL.fullmatch(rest)
                            tail = tails[rest] = valid.group(1) if valid is not None else False
                        if tail is False:  # INSTRUCTION decides (it may split the line elsewhere)
                            found = match(raw)
                            if found is None:
                                stopped = True
                                break
                            root, percent, name, zero, typed, names, number, other, tail = found.groups()
                    else:
                        tail = rest
                    kind = kinds_get(typed)  # "f32[2]{0} add": the shape read once, the opcode's own string
                    if kind is None:
                        written, _, opcode = typed.rpartition(" ")
                        try:
                            kind = kinds[typed] = (shapes_get(written) or parse_shape(written), opcode, plain(opcode))
                        except ParseError:
                            stopped = True
                            break
                    shape, opcode, canonical = kind
                    if names and canonical is not None and "/" not in names:  # the common line, inlined
                        if (names.count("%") != names.count(", ") + 1
                                and not RESERVED.isdisjoint(names.replace("%", "").split(", "))):
                            stopped = True  # a bare operand name spelled like a keyword: the careful parser decides
                            break
                        append(HloInstruction(name, canonical, shape, names, None, root is not None, source, start,
                                              tail))  # the operand text is split when first read
                    elif number is not None and opcode == "parameter":
                        append(HloInstruction(name, "parameter", shape, "", None, root is not None, source, start, tail,
                                              -1, None, int(number)))
                    else:
                        groups = (root, percent, name, None, opcode, names, number, other, tail)
                        instruction = fast_instruction(groups, shape, source, start)
                        if instruction is None:
                            stopped = True
                            break
                        append(instruction)
                    if repeated:  # noted once the line is taken: a line handed to the careful parser is read again
                        builder.repeated = True
                    seen_add(name)
                    if zero is not None:
                        zeros.append(name)
                    last = start
                else:
                    line = raw.strip(BLANKS)
                    if append is not None:
                        if line == "}" and current is not None and current.instructions:
                            current = append = None
                            builder.leave()
                            last = start
                        elif line:
                            stopped = True
                            break
                    elif line:
                        current = fast_computation(raw, start, shapes)
                        if current is None:
                            stopped = True
                            break
                        self.computations.append(current)
                        builder.enter(current)
                        append = current.instructions.append
                        last = start
                start += size + 1
        self.current = current
        if not stopped:
            return min(start, length)
        return self.undo_last(last) if last >= 0 else start

    def undo_last(self, position: int) -> int:
        """Forget the item the fast path accepted at ``position`` and return that position."""
        current = self.current
        if current is None:
            self.current = self.computations[-1]
            self.builder.enter(self.current)
        elif current.instructions and current.instructions[-1].start == position:
            self.builder.names.discard(current.instructions.pop().name)  # the careful parser reads it again
        else:
            self.computations.pop()
            self.builder.leave()
            self.current = None
        return position


def _checked(text: object) -> Source:
    """The text as a Source, after the checks every entry point shares."""
    if not isinstance(text, str):
        raise ParseError(f"HLO text must be a str, got {type(text).__name__}")
    if "\x00" in text:
        raise ParseError("NUL character in the text", text, text.index("\x00"))
    return Source(text)


def parse_hlo_module(text: str, *, strict: bool = False, fast: bool = True) -> HloModule:
    """Parse an HLO module; problems() raise only if ``strict``; ``fast=False`` uses the careful parser alone.

    >>> m = parse_hlo_module("ENTRY e {\\n  p = f32[2] parameter(0)\\n  ROOT n = negate(p)\\n}")
    >>> m.name, str(m.entry.root.shape)
    ('module_e', 'f32[2]{0}')
    """
    source = _checked(text)
    collecting = gc.isenabled()
    gc.disable()  # parsing allocates many objects and no cycles; collections would only cost time
    try:
        module = _Reader(source, fast).module()
    except RecursionError:
        raise ParseError("HLO text nested too deeply", source.text, 0) from None
    finally:
        if collecting:
            gc.enable()
    return module.validate() if strict else module


def parse_instruction(text: str) -> HloInstruction:
    """Parse one instruction, e.g. ``add.1 = f32[2]{0} add(x, y)`` (leading ``%``/``ROOT`` allowed).

    >>> parse_instruction("ROOT %t = (f32[], s32[]) tuple(a, b)").operands
    ['a', 'b']
    """
    source = _checked(text)
    careful = _Careful(source, 0)
    try:
        instruction = careful.instruction()
    except RecursionError:  # inline operands nested thousands deep
        raise ParseError("HLO text nested too deeply", source.text, 0) from None
    if careful.token.kind != "eof":
        raise careful.fail("unexpected text after the instruction")
    return instruction
