"""Attributes of HLO instructions, computations and modules: raw ``key=value`` text, and values read by type.

``Attributes.typed(key)`` reads a value on demand, from its place in the module text (so errors point there).
What it returns per key (the inference package reads these):

- integers (``index``, ``channel_id``, ``feature_group_count`` ...) -> int; booleans -> bool
- integer lists (``dimensions``, ``lhs_contracting_dims``, ``slice_sizes`` ...) -> tuple of ints
- ``slice`` -> tuple of (start, limit, stride); ``padding`` -> tuple of (low, high, interior)
- ``window`` -> dict of per-dimension tuples (``size``, ``stride``, ``pad`` as (low, high) pairs, ``lhs_dilate`` ...)
- ``dim_labels``, ``direction``, ``kind``, ``api_version`` -> str
- ``replica_groups``, ``source_target_pairs`` -> tuple of tuples of ints (at most ``MAX_DEVICES`` device ids)
- ``to_apply``, ``condition``, ``body`` ... -> a computation name; ``calls`` -> a name or a tuple of names;
  ``branch_computations``, ``called_computations`` -> tuple of names (an inline ``{...}`` computation reads as the
  name the parser gave it: ``_``, ``_.1`` ...)
- ``sharding`` -> :class:`Sharding`; ``metadata`` -> dict; ``backend_config`` -> JSON value or text
- ``input_output_alias``, ``output_to_operand_aliasing`` -> tuple of (output index, operand, operand index[, kind])
- other keys -> a generic value (number, bool, string, word, nested tuples) or the raw text when that fails
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParseError
from ..shape import Shape
from ._patterns import ATTRIBUTE
from ._source import EMPTY_SOURCE, Source, scan_braces
from ._tokens import TokenReader

__all__ = ["CALLED_COMPUTATION_KEYS", "MAX_DEVICES", "Attributes", "Sharding", "has_reader", "typed_value"]

CALLED_COMPUTATION_KEYS = ("to_apply", "calls", "condition", "body", "select", "scatter", "branch_computations",
                           "called_computations", "true_computation", "false_computation")
"""The attribute keys whose values name one or several called computations."""

SINGLE_COMPUTATION_KEYS = frozenset(("to_apply", "calls", "condition", "body", "select", "scatter",
                                     "true_computation", "false_computation"))
"""The keys whose value may be one computation, written by name or inline as ``{ ... ROOT r = ... }``."""

MAX_DEVICES = 1 << 20
"""The most device ids a replica-group or sharding value may expand to (more is refused with a ParseError)."""


class Attributes(Mapping[str, str]):
    """``key=value`` attributes in order: raw text by key, values read by type with ``typed(key)``.

    >>> text = "x, dimensions={0}, to_apply=%add"
    >>> a = Attributes([("dimensions", "{0}"), ("to_apply", "%add")], [14, 28], Source(text))
    >>> a["dimensions"], a.typed("dimensions"), a.typed("to_apply")
    ('{0}', (0,), 'add')
    """

    __slots__ = ("_pairs", "_positions", "_raw", "_source", "_typed")

    def __init__(self, pairs: list[tuple[str, str]], positions: list[int], source: Source,
                 typed: dict[str, Any] | None = None) -> None:
        self._pairs = pairs
        self._positions = positions
        self._source = source
        self._raw: dict[str, str] = {}
        for key, value in pairs:
            self._raw.setdefault(key, value)
        self._typed: dict[str, Any] = typed if typed is not None else {}

    def __getitem__(self, key: str) -> str:
        return self._raw[key]

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"Attributes({self._raw!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attributes):
            return self._pairs == other._pairs
        if isinstance(other, Mapping):
            return dict(self._raw) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def source(self) -> Source:
        """The parsed text the positions point into."""
        return self._source

    def pairs(self) -> list[tuple[str, str]]:
        """Every ``(key, raw value)`` in the order written, repeated keys included."""
        return list(self._pairs)

    def positions(self) -> list[int]:
        """The offset of every value in the parsed text, in the order of ``pairs()``."""
        return list(self._positions)

    def position(self, key: str) -> int:
        """Offset of ``key``'s value in the parsed text."""
        for (name, _), position in zip(self._pairs, self._positions):
            if name == key:
                return position
        raise KeyError(key)

    def typed(self, key: str) -> Any:
        """The value of ``key`` read by its type (ints, tuples, names, dicts, Sharding ...); ParseError if malformed."""
        if key not in self._typed:
            raw = self._raw[key]
            self._typed[key] = typed_value(key, raw, self._source, self.position(key))
        return self._typed[key]

    def get_typed(self, key: str, default: Any = None) -> Any:
        """``typed(key)``, or ``default`` when the attribute is absent."""
        return self.typed(key) if key in self._raw else default


NO_ATTRIBUTES = Attributes([], [], EMPTY_SOURCE)


@dataclass(frozen=True)
class Sharding:
    """A ``sharding={...}`` value: kind, tile assignment and devices, or the shardings of a tuple's elements."""

    kind: str
    tile_assignment_dimensions: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    last_tile_dim_replicate: bool = False
    last_tile_dims: tuple[str, ...] = ()
    device: int | None = None
    tuple_shardings: tuple[Sharding, ...] = ()
    other: tuple[str, ...] = ()


class _Values(TokenReader):
    """Reads one attribute value by its type; errors point into the module text."""

    __slots__ = ()

    def number(self) -> int:
        """An integer."""
        return self.integer("an integer")

    def real(self) -> float:
        """A floating-point number (or integer, inf, -inf, nan)."""
        token = self.token
        if token.kind in ("decimal", "int", "neg_inf"):
            self.advance()
            return float(token.value)  # type: ignore[arg-type]
        if token.kind == "keyword" and token.value == "inf":
            self.advance()
            return math.inf
        raise self.fail("expected a number")

    def text_value(self) -> str:
        """A quoted string, unescaped."""
        return self.string()

    def word(self) -> str:
        """An identifier (enum values like kLoop, LT, API_VERSION_TYPED_FFI)."""
        token = self.token
        if token.kind in ("ident", "keyword", "type"):
            self.advance()
            return self.text[token.start:token.end]
        raise self.fail("expected a word")

    def braced(self, item: Any, open_: str = "{", close: str = "}") -> tuple[Any, ...]:
        """``{item, item, ...}`` (or another pair of brackets) as a tuple."""
        self.expect(open_, f"expected {open_!r}")
        items = []
        if self.token.kind == close:
            self.advance()
            return ()
        while True:
            items.append(item())
            if self.token.kind == close:
                self.advance()
                return tuple(items)
            self.expect(",", f"expected ',' or {close!r}")

    def generic(self) -> Any:
        """Any simple value: number, bool, string, name, word, or a braced list of them."""
        token = self.token
        kind = token.kind
        if kind == "{":
            return self.braced(self.generic)
        if kind == "int":
            return self.number()
        if kind in ("decimal", "neg_inf") or (kind == "keyword" and token.value == "inf"):
            return self.real()
        if kind == "keyword" and token.value in ("true", "false"):
            return self.boolean()
        if kind == "string":
            return self.string()
        if kind == "name" and self.text[token.start] == "%":
            self.advance()
            return str(token.value)
        if kind in ("ident", "dim_labels", "dxd", "pad", "type", "keyword"):
            self.advance()
            return self.text[token.start:token.end]
        raise self.fail("expected a value")

    def sub_attributes(self) -> dict[str, Any]:
        """``{key=value key=value ...}`` (commas optional) as a dict."""
        self.expect("{", "expected '{'")
        fields: dict[str, Any] = {}
        while self.token.kind != "}":
            if self.token.kind == ",":
                self.advance()
            key = self.expect("attribute_name", "expected key=value or '}'")
            fields[str(key.value)] = self.generic()
        self.advance()
        return fields

    def computation_name(self) -> str:
        """A computation name (``%name`` or a plain word)."""
        return self.name("a computation name")

    def names(self) -> Any:
        """One name, or ``{name, name, ...}``."""
        if self.token.kind == "{":
            return self.braced(self.computation_name)
        return self.computation_name()

    def raw_braces(self) -> str:
        """A ``{...}`` group's text as written (XLA's JSON-dictionary scan)."""
        if self.token.kind != "{":
            raise self.fail("expected '{'")
        start = self.token.start
        self.jump(scan_braces(self.source, start))
        return self.text[start:self.prev_end]

    def shape_index(self) -> tuple[int, ...]:
        """``{}`` or ``{0,1}``."""
        return self.braced(self.number)


def _bool_or_list(p: _Values) -> Any:
    """``true``, ``false`` or ``{true,false,...}``."""
    return p.braced(p.boolean) if p.token.kind == "{" else p.boolean()


def _frontend_attributes(p: _Values) -> dict[str, str]:
    """``{key="value", key={json}}`` as a dict of strings."""
    p.expect("{", "expected '{'")
    values: dict[str, str] = {}
    while p.token.kind != "}":
        key = p.expect("attribute_name", "expected key=value or '}'")
        values[str(key.value)] = p.raw_braces() if p.token.kind == "{" else p.string()
        if p.token.kind != "}":
            p.expect(",", "expected ',' or '}'")
    p.advance()
    return values


def _backend_config(p: _Values) -> Any:
    """A string or ``{...}``: decoded when it is JSON, else its text."""
    text = p.raw_braces() if p.token.kind == "{" else p.string()
    try:
        return json.loads(text)
    except ValueError:
        return text


def _slice_ranges(p: _Values) -> tuple[tuple[int, int, int], ...]:
    """``{[start:limit:stride], ...}`` as (start, limit, stride) triples."""
    def one() -> tuple[int, int, int]:
        token = p.token
        values = _colon_list(p)
        if len(values) not in (2, 3):
            raise p.error("expected [start:limit] or [start:limit:stride]", token)
        return (values[0], values[1], values[2] if len(values) == 3 else 1)

    return p.braced(one)


def _colon_list(p: _Values) -> list[int]:
    """``[a:b:c]`` as a list of integers."""
    p.expect("[", "expected '['")
    values = [p.number()]
    while p.token.kind == ":":
        p.advance()
        values.append(p.number())
    p.expect("]", "expected ':' or ']'")
    return values


def _pad_numbers(p: _Values, sizes: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """``0_1x2_3`` as per-dimension tuples of ``sizes`` numbers."""
    token = p.token
    if token.kind not in ("pad", "int"):
        raise p.fail("expected padding like 0_0x1_1")
    p.advance()
    dims = tuple(tuple(int(v) for v in part.split("_")) for part in p.text[token.start:token.end].split("x"))
    if any(len(d) not in sizes for d in dims):
        raise p.error(f"expected {' or '.join(map(str, sizes))} numbers per dimension", token)
    return dims


def _padding(p: _Values) -> tuple[tuple[int, int, int], ...]:
    """Padding ``low_high[_interior]`` per dimension as (low, high, interior)."""
    return tuple((d[0], d[1], d[2] if len(d) == 3 else 0) for d in _pad_numbers(p, (2, 3)))


def _window(p: _Values) -> dict[str, tuple[Any, ...]]:
    """``{size=3x3 stride=.. pad=.. lhs_dilate=.. rhs_dilate=..}`` as a dict of per-dimension tuples."""
    p.expect("{", "expected '{'")
    window: dict[str, tuple[Any, ...]] = {}
    while p.token.kind != "}":
        key = p.expect("attribute_name", "expected size=, stride=, pad=, lhs_dilate=, rhs_dilate= or '}'")
        if key.value == "pad":
            window["pad"] = _pad_numbers(p, (2,))
        else:
            token = p.token
            if token.kind not in ("int", "dxd"):
                raise p.fail("expected a size like 3 or 3x3")
            p.advance()
            window[str(key.value)] = tuple(int(v) for v in p.text[token.start:token.end].split("x"))
    p.advance()
    return window


def _dim_labels(p: _Values) -> str:
    """Convolution dimension labels such as ``b01f_01io->b01f``."""
    token = p.expect("dim_labels", "expected dimension labels like b01f_01io->b01f")
    return p.text[token.start:token.end]


def _shapes(p: _Values) -> tuple[Shape, ...]:
    """``{shape, shape, ...}``."""
    return p.braced(p.any_shape)


def _computation_layout(p: _Values) -> tuple[tuple[Shape, ...], Shape]:
    """``{(shape, ...)->shape}`` as (parameter shapes, result shape)."""
    p.expect("{", "expected '{'")
    parameters = p.braced(p.any_shape, "(", ")")
    p.expect("->", "expected '->'")
    result = p.any_shape()
    p.expect("}", "expected '}'")
    return parameters, result


def _aliasing(p: _Values) -> tuple[tuple[Any, ...], ...]:
    """``{{out}: (operand, {index}[, kind]), ...}`` as (output index, operand, operand index[, kind])."""
    def one() -> tuple[Any, ...]:
        output = p.shape_index()
        p.expect(":", "expected ':'")
        p.expect("(", "expected '('")
        entry: list[Any] = [output, p.number()]
        p.expect(",", "expected ','")
        entry.append(p.shape_index())
        if p.token.kind == ",":
            p.advance()
            entry.append(p.word())
        p.expect(")", "expected ')'")
        return tuple(entry)

    return p.braced(one)


def _device_count(p: _Values, sizes: tuple[int, ...], token: Any) -> int:
    """The product of ``sizes``: ParseError when negative or above MAX_DEVICES (checked as it grows)."""
    count = 1
    for size in sizes:
        if size < 0:
            raise p.error(f"device dimension {size} is negative", token)
        count *= size
        if count > MAX_DEVICES:
            raise p.error(f"{'x'.join(map(str, sizes))} devices are more than {MAX_DEVICES}", token)
    return count


def _iota(p: _Values, start: Any, dims: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """``<=[reshape]T(perm)`` after ``[dims]``: the device ids, flat in the order of ``dims``."""
    p.expect("<=", "expected '<='")
    token = p.token
    reshape = p.braced(p.number, "[", "]")
    order = tuple(range(len(reshape)))
    if p.token.kind == "ident" and p.token.value == "T":
        token = p.advance()
        order = p.braced(p.number, "(", ")")
    if sorted(order) != list(range(len(reshape))):
        raise p.error("T(...) must permute the reshape dimensions", token)
    count = _device_count(p, reshape, token)
    if _device_count(p, dims, start) != count:
        raise p.error(f"[{','.join(map(str, dims))}] does not hold {count} devices", start)
    devices: np.ndarray[Any, Any] = np.arange(count, dtype=np.int64).reshape(reshape).transpose(order).reshape(-1)
    return devices


def _iota_devices(p: _Values) -> np.ndarray[Any, Any]:
    """``[dims]<=[reshape]T(perm)``: device ids in an array of ``dims``."""
    start = p.token
    dims = p.braced(p.number, "[", "]")
    grid: np.ndarray[Any, Any] = _iota(p, start, dims).reshape(dims)
    return grid


def _replica_groups(p: _Values) -> tuple[tuple[int, ...], ...]:
    """Replica groups written as lists, as an iota ``[g,s]<=[n]`` or as ``mesh[...] {axes}``."""
    if p.token.kind == "{":
        return p.braced(lambda: p.braced(p.number))
    if p.token.kind == "[":
        token = p.token
        groups = _iota_devices(p)
        if groups.ndim != 2:
            raise p.error("iota replica groups need two dimensions [groups,size]", token)
        return tuple(tuple(int(d) for d in row) for row in groups)
    if p.token.kind == "ident" and p.token.value == "mesh":
        return _mesh_groups(p)
    raise p.fail("expected replica groups")


def _mesh_groups(p: _Values) -> tuple[tuple[int, ...], ...]:
    """``mesh['x'=4,'y'=2] {'y'}``: one group per position on the other axes."""
    p.advance()

    def axis() -> tuple[str, int]:
        name = p.string()
        p.expect("=", "expected '='")
        return name, p.number()

    axes = dict(p.braced(axis, "[", "]"))
    token = p.token
    chosen = p.braced(p.string)
    if not set(chosen) <= set(axes):
        raise p.error("the group's axes must be axes of the mesh", token)
    order = [i for i, name in enumerate(axes) if name not in chosen] + [list(axes).index(n) for n in chosen]
    count = _device_count(p, tuple(axes.values()), token)
    devices = np.arange(count, dtype=np.int64).reshape(tuple(axes.values())).transpose(order)
    size = math.prod(axes[name] for name in chosen)
    if size == 0:
        return ()
    return tuple(tuple(int(d) for d in row) for row in devices.reshape(-1, size))


def _sharding(p: _Values) -> Sharding:
    """``{replicated}``, ``{devices=[..]..}``, ``{maximal device=N}`` or a tuple of them."""
    p.expect("{", "expected '{' to start a sharding")
    if p.token.kind in ("{", "}"):
        elements = []
        while p.token.kind == "{":
            elements.append(_sharding(p))
            if p.token.kind == ",":
                p.advance()
        p.expect("}", "expected '}' to end the tuple sharding")
        return Sharding("tuple", tuple_shardings=tuple(elements))
    fields: dict[str, Any] = {"kind": "tiled"}
    other: list[str] = []
    while p.token.kind != "}":
        _sharding_item(p, fields, other)
    p.advance()
    return Sharding(other=tuple(other), **fields)


def _sharding_item(p: _Values, fields: dict[str, Any], other: list[str]) -> None:
    """One item of a single sharding into ``fields`` (unknown ones into ``other``)."""
    token = p.token
    if token.kind == "keyword" and token.value in ("replicated", "manual", "unknown", "maximal"):
        p.advance()
        fields["kind"] = token.value
    elif token.kind == "keyword" and token.value == "last_tile_dim_replicate":
        p.advance()
        fields["last_tile_dim_replicate"] = True
    elif token.kind == "attribute_name" and token.value == "device":
        p.advance()
        fields["device"] = p.number()
    elif token.kind == "attribute_name" and token.value == "devices":
        p.advance()
        _tile_assignment(p, fields)
    elif token.kind == "attribute_name" and token.value == "last_tile_dims":
        p.advance()
        fields["last_tile_dims"] = p.braced(p.word)
    elif token.kind == "attribute_name":
        p.advance()
        start = p.token.start
        p.item()
        other.append(f"{token.value}={p.text[start:p.prev_end]}")
    elif token.kind == "keyword" and token.value in ("shard_as", "shard_like"):
        p.advance()
        other.append(f"{token.value} {p.number()}")
    else:
        raise p.fail("unexpected text in the sharding")


def _tile_assignment(p: _Values, fields: dict[str, Any]) -> None:
    """``[dims]`` then ``<=[reshape]T(perm)`` or explicit device ids."""
    start = p.token
    dims = p.braced(p.number, "[", "]")
    if p.token.kind == "<=":
        try:
            devices = tuple(int(d) for d in _iota(p, start, dims))
        except ParseError as error:
            if "devices are more than" in error.reason:
                raise
            raise p.error("the iota tile assignment does not fit its dimensions", start) from None
    else:
        expected = _device_count(p, dims, start)
        found = [p.number()]
        while p.token.kind == "," and len(found) <= expected:
            p.advance()
            found.append(p.number())
        devices = tuple(found)
        if len(devices) != expected:
            raise p.error(f"{len(devices)} devices do not fill [{','.join(map(str, dims))}]", start)
    fields.update(tile_assignment_dimensions=dims, devices=devices)


def _donors(p: _Values) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """``{(parameter, {index}), ...}`` as (parameter, index) pairs."""
    def one() -> tuple[int, tuple[int, ...]]:
        p.expect("(", "expected '('")
        parameter = p.number()
        p.expect(",", "expected ','")
        index = p.shape_index()
        p.expect(")", "expected ')'")
        return parameter, index

    return p.braced(one)


_INT_KEYS = frozenset("""index iota_dimension channel_id feature_group_count batch_group_count index_vector_dim k
exponent_bits mantissa_bits replica_count num_partitions""".split())
_BOOL_KEYS = frozenset("""is_scheduled indices_are_sorted unique_indices use_global_device_ids constrain_layout
is_stable largest custom_call_has_side_effect is_host_transfer alias_passthrough_params""".split())
_INT_LIST_KEYS = frozenset("""dimensions lhs_contracting_dims rhs_contracting_dims lhs_batch_dims rhs_batch_dims
slice_sizes dynamic_slice_sizes offset_dims collapsed_slice_dims start_index_map update_window_dims
inserted_window_dims scatter_dims_to_operand_dims operand_batching_dims start_indices_batching_dims
input_batching_dims scatter_indices_batching_dims fft_length""".split())
_STRING_KEYS = frozenset("custom_call_target async_execution_thread execution_thread infeed_config".split())

_VALUE_READERS: dict[str, Any] = {
    **{key: _Values.number for key in _INT_KEYS},
    **{key: _Values.boolean for key in _BOOL_KEYS},
    **{key: (lambda p: p.braced(p.number)) for key in _INT_LIST_KEYS},
    **{key: _Values.text_value for key in _STRING_KEYS},
    **{key: _Values.computation_name for key in ("to_apply", "condition", "body", "select", "scatter",
                                                 "true_computation", "false_computation")},
    **{key: (lambda p: p.braced(p.computation_name)) for key in ("branch_computations", "called_computations",
                                                                 "control-predecessors")},
    "calls": _Values.names,
    "kind": _Values.word,
    "direction": _Values.word,
    "fft_type": _Values.word,
    "distribution": _Values.word,
    "buffer_donor": _donors,
    "api_version": _Values.word,
    "metadata": _Values.sub_attributes,
    "frontend_attributes": _frontend_attributes,
    "backend_config": _backend_config,
    "sharding": _sharding,
    "replica_groups": _replica_groups,
    "source_target_pairs": lambda p: p.braced(lambda: p.braced(p.number)),
    "slice": _slice_ranges,
    "padding": _padding,
    "window": _window,
    "dim_labels": _dim_labels,
    "entry_computation_layout": _computation_layout,
    "operand_layout_constraints": _shapes,
    "output_to_operand_aliasing": _aliasing,
    "input_output_alias": _aliasing,
    "allow_spmd_sharding_propagation_to_parameters": _bool_or_list,
    "allow_spmd_sharding_propagation_to_output": _bool_or_list,
    "operand_precision": lambda p: p.braced(p.word),
}
"""How ``Attributes.typed`` reads each well-known key; other keys are read generically when they can be."""


def split_tail(tail: str, position: int, source: Source) -> Attributes:
    """Attributes from a fast-path tail ``, k=v, k=v`` that starts at ``position`` (values end where the next
    ``, key=`` starts, as the fast path matched them).

    >>> split_tail(", index=1, kind=kLoop", 0, Source(", index=1, kind=kLoop")).pairs()
    [('index', '1'), ('kind', 'kLoop')]
    """
    pairs = []
    positions = []
    for match in ATTRIBUTE.finditer(tail):
        pairs.append((match.group(1), match.group(2)))
        positions.append(position + match.start(2))
    return Attributes(pairs, positions, source)


def has_reader(key: str) -> bool:
    """True when ``key`` has a reader of its own (a value that does not read is then an error)."""
    return key in _VALUE_READERS


def typed_value(key: str, raw: str, source: Source, position: int) -> Any:
    """``raw`` (at ``position`` of ``source``) read as the type of attribute ``key``."""
    reader = _VALUE_READERS.get(key)
    parser = _Values(source, position)
    if reader is None:
        try:
            value = parser.generic()
        except (ParseError, RecursionError):
            return raw
        return value if parser.prev_end == position + len(raw) else raw
    try:
        value = reader(parser)
    except RecursionError:
        raise source.error("value nested too deeply", position) from None
    if parser.prev_end != position + len(raw):
        raise parser.fail(f"unexpected text in attribute {key}")
    return value
