"""Shape and layout text: XLA's examples, differential tests against XLA's parser/printer, and fuzzing."""

from __future__ import annotations

import gc
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from xlashapes.dtypes import TEXT_TYPE_NAMES
from xlashapes.text import Lexer, shape_text

ROUND_TRIPS = [
    "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "s4[128]{0:E(4)}",
    "f32[3,5]{1,0:T(2,2)L(4)#(s32)*(u32)E(32)S(1)M(8)}",
    "f32[3,5]{1,0:SC(0:2,4)}",
    "f32[<=3,?]{0,1:T(2,2)}",
    "(f32[2]{0}, s32[])",
    "()",
    "((), (pred[]))",
    "token[]",
    "opaque[]",
    "f32[]{:S(1)}",
    "f32[3,5]{1,0:T(2,2)L(4)#(s32)*(u32)E(32)S(1)SC(0:2,4)(1:1)M(8)}",
    "f8e4m3fn[16,16]{0,1:T(8,128)(4,1)}",
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_reference_examples_round_trip(text: str) -> None:
    shape = xs.parse_shape(text)
    assert str(shape) == text
    assert xs.parse_shape(str(shape)) == shape


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("f32[3,5]", "f32[3,5]{1,0}"),
        ("pred[3]", "pred[3]{0}"),
        ("f32[]", "f32[]"),
        ("{ 1 , 0 : T( 2 , 2 ) }", None),
        ("f32 [ 3 , 5 ] { 1 , 0 : T( 2 , 2 ) }", "f32[3,5]{1,0:T(2,2)}"),
        ("f32[3,5]/*a comment*/{1,0}", "f32[3,5]{1,0}"),
        ("f32[2]{0:E(0)M(0)}", "f32[2]{0}"),
        ("f32[2]{0:L(1)S(0)}", "f32[2]{0}"),
        ("f32[2]{0:#(f32)}", "f32[2]{0:#(invalid)}"),
        ("f32[2]{0:D(C)}", "f32[2]{0}"),
        ("f32[00012]", "f32[12]{0}"),
        ("f32[<= 3]", "f32[<=3]{0}"),
        ("f32[2]{0:T()(2)}", "f32[2]{0:T()(2)}"),
        ("f32[9223372036854775807]", "f32[9223372036854775807]{0}"),
    ],
)
def test_printing_matches_xla(text: str, printed: str | None) -> None:
    if printed is None:
        assert str(xs.parse_layout(text)) == "{1,0:T(2,2)}"
    else:
        assert str(xs.parse_shape(text)) == printed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("F32[3]", "type names are lowercase"),
        ("f32[3]{}", "a layout starts with"),
        ("f32[2,3]{}", "a layout starts with"),
        ("f32[3,5]{1,0:S(1)T(2,2)}", "out of order"),
        ("f32[3,5]{1,0:E(4)T(2,2)}", "out of order"),
        ("f32[2]{0:T(2,-1)}", "negative"),
        ("f32[2]{0:L(0)}", "at least 1"),
        ("f32[2]{0:L(-2)}", "at least 1"),
        ("f32[9223372036854775808]", "does not fit in int64"),
        ("f32[-1]", "negative"),
        ("f32[3,5]{0}", "minor_to_major"),
        ("token[3]", "takes no dimensions"),
        ("token[]{:S(1)}", "has no layout"),
        ("f32[2,]", "dimension size"),
        ("(f32[2],)", "element type"),
        ("f32[2]{0:SC(0)}", "':'"),
        ("f32[2]{0:P(f32[2])}", "sparse"),
        ("f32[2]{0:D(C~+)}", "in the dim level types"),
        ("f32[2", "','"),
        ("f32[2] f32[2]", "after the shape"),
        ("f32[2]/* unterminated", "unterminated comment"),
        ("f32[1x2]", "dimension size"),
        ("f32[2.5]", "dimension size"),
        ("", "element type"),
        ("tuple[]", "parentheses"),
        ("f32[2]\x00", "NUL"),
    ],
)
def test_rejected_with_position(text: str, message: str) -> None:
    with pytest.raises(xs.ParseError, match=message) as info:
        xs.parse_shape(text)
    error = info.value
    assert 0 <= error.position <= len(text)
    assert "^" in str(error) or not text


def test_error_caret_points_at_the_offending_character() -> None:
    with pytest.raises(xs.ParseError) as info:
        xs.parse_shape("f32[3,5]{1,0:S(1)T(2,2)}")
    assert info.value.position == 17
    lines = str(info.value).splitlines()
    assert lines[2].index("^") - 4 == 17


def test_parse_layout_alone() -> None:
    layout = xs.parse_layout("{3,2,0,1:T(8,128)(2,1)S(1)}")
    assert layout.minor_to_major == (3, 2, 0, 1)
    assert layout.tiles == ((8, 128), (2, 1)) and layout.memory_space == 1
    with pytest.raises(xs.ParseError):
        xs.parse_layout("{1,0")
    with pytest.raises(xs.ParseError):
        xs.parse_layout(42)  # type: ignore[arg-type]


def test_lexer_follows_xla_token_rules() -> None:
    kinds = []
    lexer = Lexer("%add.1 = f32[2] add(x, y), dimensions={0} -> 1.5e3 1x2 1_2 -inf ... <= ? 01_io->01 b01_oi->b01 'a'")
    while True:
        token = lexer.next()
        kinds.append(token.kind)
        if token.kind == "eof":
            break
    assert kinds == ["name", "=", "type", "[", "int", "]", "ident", "(", "ident", ",", "ident", ")", ",",
                     "attribute_name", "{", "int", "}", "->", "decimal", "dxd", "pad", "neg_inf", "...", "<=",
                     "?", "dim_labels", "dim_labels", "string", "eof"]


# ----------------------------------------------------------------------------------------------------
# Generated shape texts, compared with XLA itself
# ----------------------------------------------------------------------------------------------------

SIZES = st.sampled_from([0, 1, 2, 3, 5, 8, 128, 1000])
TILE_SIZES = st.sampled_from(["1", "2", "3", "8", "128", "*", "0"])
TYPES = sorted(TEXT_TYPE_NAMES)


@st.composite
def layouts(draw: st.DrawFn, rank: int) -> str:
    order = list(range(rank))
    if draw(st.booleans()):
        order = draw(st.permutations(order))
    if draw(st.integers(0, 20)) == 0:
        order = draw(st.lists(st.integers(-1, rank + 1), max_size=rank + 1))
    parts = []
    if draw(st.integers(0, 6)) == 0:
        levels = [draw(st.sampled_from(["D", "C", "S", "C+", "S~", "C+~"])) for _ in range(rank)]
        parts.append("D(" + ",".join(levels) + ")")
    if draw(st.booleans()):
        tiles = draw(st.lists(st.lists(TILE_SIZES, min_size=1, max_size=4), min_size=1, max_size=3))
        parts.append("T" + "".join("(" + ",".join(t) + ")" for t in tiles))
    if draw(st.integers(0, 4)) == 0:
        parts.append(f"L({draw(st.sampled_from([1, 2, 4, 128]))})")
    if draw(st.integers(0, 5)) == 0:
        parts.append(f"#({draw(st.sampled_from(['s32', 'u16', 'f32', 'pred']))})")
    if draw(st.integers(0, 5)) == 0:
        parts.append(f"*({draw(st.sampled_from(['u32', 's64', 'bf16']))})")
    if draw(st.integers(0, 3)) == 0:
        parts.append(f"E({draw(st.sampled_from([0, 1, 2, 4, 8, 16, 32, -3]))})")
    if draw(st.integers(0, 2)) == 0:
        parts.append(f"S({draw(st.sampled_from([0, 1, 2, 5, -1]))})")
    if draw(st.integers(0, 5)) == 0 and rank:
        parts.append("SC" + "".join(f"({d}:{','.join(map(str, idx))})" for d, idx in draw(
            st.lists(st.tuples(st.integers(0, rank - 1), st.lists(st.integers(0, 9), max_size=3)), min_size=1,
                     max_size=2))))
    if draw(st.integers(0, 4)) == 0:
        parts.append(f"M({draw(st.sampled_from([0, 8, -1]))})")
    if draw(st.integers(0, 15)) == 0 and len(parts) > 1:
        parts = draw(st.permutations(parts))
    colon = ":" + "".join(parts) if parts or draw(st.integers(0, 8)) == 0 else ""
    return "{" + ",".join(map(str, order)) + colon + "}"


@st.composite
def array_texts(draw: st.DrawFn) -> str:
    etype = draw(st.sampled_from(TYPES))
    if etype in ("token", "opaque"):
        return f"{etype}[]"
    rank = draw(st.integers(0, 4))
    dims = []
    for _ in range(rank):
        size = draw(SIZES)
        kind = draw(st.integers(0, 8))
        dims.append("?" if kind == 0 else f"<={size}" if kind == 1 else str(size))
    text = f"{etype}[{','.join(dims)}]"
    if draw(st.booleans()):
        text += draw(layouts(rank))
    return text


@st.composite
def shape_texts(draw: st.DrawFn, depth: int = 0) -> str:
    if depth < 2 and draw(st.integers(0, 5)) == 0:
        elements = draw(st.lists(shape_texts(depth + 1), max_size=7))
        return "(" + ", ".join(elements) + ")"
    return draw(array_texts())


def spaced(text: str, seed: int) -> str:
    """The same text with whitespace and comments between some tokens."""
    out = []
    for i, char in enumerate(text):
        if (seed >> (i % 20)) & 1 and char in "[]{}(),:":
            out.append(" /*c*/ " if seed % 7 == 0 else " ")
        out.append(char)
    return "".join(out)


def ours(text: str) -> tuple[str, str]:
    try:
        shape = xs.parse_shape(text)
    except xs.ParseError as error:
        return "error", str(error)
    return "ok", shape_text(shape, index_comments=True)


def check_against_xla(xla, text: str) -> None:  # type: ignore[no-untyped-def]
    verdict = xla.print_shape(text)
    kind, printed = ours(text)
    if verdict["ok"]:
        assert kind == "ok", f"XLA accepts {text!r} (prints {verdict['text']!r}) but we reject: {printed}"
        assert printed == verdict["text"], text
    else:
        assert kind == "error", f"XLA rejects {text!r} ({verdict.get('error', 'abort')[:300]}) but we accept"


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape_texts(), st.integers(0, 2**20))
def test_generated_shapes_match_xla(xla, text: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    check_against_xla(xla, spaced(text, seed) if seed % 3 == 0 else text)


MUTATION_CHARS = st.sampled_from([*"[]{}(),:*#<=?-+~0123456789TLESMDCPx fs/", "SC", "/*", "*/", "//", "\n"])


@st.composite
def mutated_texts(draw: st.DrawFn) -> str:
    text = draw(shape_texts())
    for _ in range(draw(st.integers(1, 3))):
        if not text:
            break
        i = draw(st.integers(0, len(text)))
        action = draw(st.integers(0, 2))
        if action == 0:
            text = text[:i] + draw(MUTATION_CHARS) + text[i:]
        elif action == 1:
            text = text[:i] + text[i + 1:]
        else:
            text = text[:i] + draw(MUTATION_CHARS) + text[i + 1:]
    return text


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_texts())
def test_mutated_shapes_match_xla(xla, text: str) -> None:  # type: ignore[no-untyped-def]
    if "parameter" in text:
        return
    check_against_xla(xla, text)


# ----------------------------------------------------------------------------------------------------
# Fuzz: nothing but ParseError, never slow
# ----------------------------------------------------------------------------------------------------


def _parse_quickly(text: str) -> None:
    # CPU time of this process, garbage collection paused: neither other work on a busy machine nor a
    # collection of what earlier tests left behind counts against the parser.
    gc.disable()
    try:
        start = time.process_time()
        try:
            shape = xs.parse_shape(text)
        except xs.ParseError:
            pass
        else:
            assert xs.parse_shape(str(shape)).equal(shape, ignore_layout=True)
        elapsed = time.process_time() - start
    finally:
        gc.enable()
    assert elapsed < 0.1, (text, elapsed)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from([*"f32[]{}(),:*#<=?-+~0123456789TLESMDCPx/ \n", "bf16", "SC", "s4"]),
                max_size=40).map("".join))
def test_fuzz_shape_alphabet(text: str) -> None:
    _parse_quickly(text)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=80))
def test_fuzz_any_unicode(text: str) -> None:
    _parse_quickly(text)


def test_huge_inputs_are_fast() -> None:
    for text in ("f32[" + "1," * 20000 + "1]", "(" * 5000 + ")" * 5000, "f32[2]{0:T" + "(2)" * 20000 + "}",
                 "/*" * 50000, "f32[" + "9" * 100000 + "]"):
        start = time.process_time()
        try:
            xs.parse_shape(text)
        except xs.ParseError:
            pass
        assert time.process_time() - start < 1.0


# ----------------------------------------------------------------------------------------------------
# The tokenizer-free fast path gives exactly the careful parser's answers
# ----------------------------------------------------------------------------------------------------


def _same_as_careful(text: str) -> None:
    from xlashapes.text import careful_parse_shape, fast_array_shape, fast_tuple_shape

    fast = fast_tuple_shape(text) if text.startswith("(") else fast_array_shape(text)
    if fast is None:
        return
    careful = careful_parse_shape(text)
    assert fast == careful and str(fast) == str(careful), text


@settings(max_examples=1500, deadline=None)
@given(shape_texts())
def test_fast_path_equals_careful_parser(text: str) -> None:
    _same_as_careful(text)


@settings(max_examples=1500, deadline=None)
@given(mutated_texts())
def test_fast_path_equals_careful_parser_on_mutations(text: str) -> None:
    _same_as_careful(text)


def test_fast_path_is_taken_for_xla_printed_shapes() -> None:
    from xlashapes.text import fast_array_shape, fast_tuple_shape

    assert fast_array_shape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}") is not None
    printed = "(f32[1]{0}, f32[2]{0}, f32[3]{0}, f32[4]{0}, f32[5]{0}, /*index=5*/f32[6,7]{0,1:T(2,2)S(1)})"
    fast = fast_tuple_shape(printed)
    assert fast is not None and shape_text(fast, index_comments=True) == printed
    assert fast_array_shape("f32[2]{}") is None and fast_array_shape("f32[2]{0:L(0)}") is None
    assert fast_tuple_shape("(f32[2]{5})") is None  # invalid inside a tuple: the careful parser reports it


@pytest.mark.parametrize("text", ["f32[1\u0663]", "f32[\u0663]", "f32[2]{0:T(1\u0663)}", "(f32[1\u0663])"])
def test_only_ascii_digits(text: str) -> None:
    with pytest.raises(xs.ParseError):
        xs.parse_shape(text)
