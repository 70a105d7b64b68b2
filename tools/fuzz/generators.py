"""Input generators of the bad-input campaign: one per public entry point, each ``(make, run)``.

``make(rng)`` builds one input (generated or mutated) from a ``random.Random``; ``run(value)`` feeds it to the entry
point. The only exceptions ``run`` may raise are ``xlashapes.ParseError`` / ``ShapeError``; anything else, a hang,
super-linear time or a memory blow-up is a finding. The same generators drive the long campaign
(``tools/fuzz/campaign.py``) and the fast properties in ``tests/test_robustness.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import xlashapes as xs

ROOT = Path(__file__).resolve().parents[2]

TYPES = ("pred", "s1", "s2", "s4", "s8", "s16", "s32", "s64", "u1", "u2", "u4", "u8", "u16", "u32", "u64", "f16",
         "bf16", "f32", "f64", "c64", "c128", "f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz",
         "f8e4m3", "f8e3m4", "f4e2m1fn", "f8e8m0fnu")
SPELLINGS = (*TYPES, "token", "opaque", "tuple", "F32", "float32", "bfloat16", "int4", "bool", "", "f33", "s0",
             np.float32, np.dtype("int8"), "complex64", 3, None, 1.5)

SHAPE_SEEDS = (
    "f32[3,5]{1,0:T(2,2)}", "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "s4[128]{0:E(4)}", "f32[3,5]{1,0:T(2,2)L(4)#(s32)*(u32)E(32)S(1)M(8)}", "f32[3,5]{1,0:SC(0:2,4)}",
    "f32[<=3,?]{0,1:T(2,2)}", "(f32[2]{0}, s32[])", "()", "token[]", "opaque[]", "f32[]", "pred[3]",
    "s4[1024]{0:T(1024)(128)(8,1)E(4)}", "f32[3,5]{1,0:S(1)SC(0:2,4)M(8)}", "((f32[1]{0}, (u8[2,2])), token[])",
    "f32[ 3 , 5 ]{ 1 , 0 : T( 2 , 2 ) }", "f32[3]/*c*/{0}", "c128[2,2]{0,1}", "u1[64]{0:E(1)}", "f8e8m0fnu[5]{0:T(4)}",
    "f32[0,3]", "s32[8388608,8,4]{2,1,0:T(8,128)}", "f32[2]{0:D(C)}", "f32[4,8]{1,0:T(2,4)(2,1)}",
)
TOKENS = ("[", "]", "{", "}", "(", ")", ",", ":", "T", "L", "E", "S", "SC", "M", "D", "#", "*", "<=", "?", "0", "1",
          "2", "8", "128", "-1", "-", "9223372036854775807", "9223372036854775808", "18446744073709551616", "1e9",
          "/*", "*/", " ", "\n", "\t", "f32", "s4", "bf16", "token", "(", "%", "=", "\"", "'", "\\", "\x00", "é", "∞",
          "0x10", "+3", "00000000000000000000001", "C", "H", "U", "invalid", "(s32)", "<=9999999999999999999")
HLO_TOKENS = (*TOKENS, "ROOT ", "%", "add(", "parameter(0)", ", ", "metadata={op_name=\"x\"}", "sharding={replicated}",
              "replica_groups={{0,1}}", "replica_groups=[2,2]<=[4]", "dimensions={0}", "calls=%", "ENTRY ",
              "HloModule m\n", "}\n", "{\n", "to_apply=", "slice={[0:2]}", "backend_config=\"", "\"\"",
              "frontend_attributes={a=\"b\"}", "sharding={devices=[2,1]0,1}", "window={size=2}", "->")


def number(rng: random.Random) -> int:
    """An integer from the edges: small, negative, tile sizes, int64 limits and beyond."""
    return rng.choice((0, 1, 2, 3, 4, 7, 8, 128, 1024, -1, -2, 2**31, 2**62, 2**63 - 1, 2**63, 2**64, -(2**63),
                       rng.randint(-5, 300), rng.randint(0, 2**40)))


def small_dims(rng: random.Random, rank: int | None = None, top: int = 9) -> list[int]:
    return [rng.randint(0, top) for _ in range(rng.randint(0, 4) if rank is None else rank)]


def shape_text(rng: random.Random, depth: int = 0) -> str:
    """A random shape text, mostly valid, with random layouts (permutations, tiles, attributes)."""
    roll = rng.random()
    if roll < 0.06 and depth < 3:
        return "(" + ", ".join(shape_text(rng, depth + 1) for _ in range(rng.randint(0, 3))) + ")"
    if roll < 0.08:
        return rng.choice(("token[]", "opaque[]"))
    etype = rng.choice(TYPES)
    dims = small_dims(rng, top=rng.choice((3, 9, 300)))
    words = []
    for size in dims:
        kind = rng.random()
        words.append(f"<={size}" if kind < 0.05 else "?" if kind < 0.08 else str(size))
    text = f"{etype}[{','.join(words)}]"
    if rng.random() < 0.25:
        return text
    order = list(range(len(dims)))
    rng.shuffle(order)
    if rng.random() < 0.05:
        order = [rng.randint(-1, len(dims) + 1) for _ in order]
    attrs = ""
    if rng.random() < 0.5 and dims:
        for _ in range(rng.randint(1, 3)):
            tile = [str(rng.choice((1, 2, 4, 8, 128, 3))) for _ in range(rng.randint(1, len(dims) + 1))]
            if rng.random() < 0.1:
                tile[rng.randrange(len(tile))] = "*"
            attrs += "T(" + ",".join(tile) + ")"
    for name, chance, values in (("L", 0.1, (1, 2, 4, 32)), ("#", 0.05, ("s32", "u64", "f32")),
                                 ("*", 0.05, ("u32", "s64")), ("E", 0.15, (1, 2, 4, 8, 32)), ("S", 0.2, (0, 1, 2, 5)),
                                 ("SC", 0.05, ("0:2,4", "1:3")), ("M", 0.05, (0, 8, 16))):
        if rng.random() < chance:
            attrs += f"{name}({rng.choice(values)})"
    return text + "{" + ",".join(map(str, order)) + (":" + attrs if attrs else "") + "}"


def mutate(rng: random.Random, text: str, tokens: tuple[str, ...] = TOKENS, big: bool = True) -> str:
    """``text`` with a few random edits: token inserts, deletes, replacements, splices and long repeats."""
    for _ in range(rng.randint(1, 4)):
        where = rng.randint(0, len(text))
        roll = rng.random()
        if roll < 0.35:
            text = text[:where] + rng.choice(tokens) + text[where:]
        elif roll < 0.55 and text:
            end = min(len(text), where + rng.randint(1, 8))
            text = text[:where] + text[end:]
        elif roll < 0.7 and text:
            text = text[:where] + chr(rng.randint(0, 0x2FF)) + text[where + 1:]
        elif roll < 0.8:
            other = rng.choice(SHAPE_SEEDS)
            cut = rng.randint(0, len(other))
            text = text[:where] + other[cut:] if rng.random() < 0.5 else other[:cut] + text[where:]
        elif roll < 0.88 and big:
            unit = rng.choice(tokens) if rng.random() < 0.5 else text[where:where + rng.randint(1, 12)] or "?"
            text = text[:where] + unit * rng.choice((10, 100, 1000, 5000)) + text[where:]
        elif roll < 0.94 and text:
            end = min(len(text), where + rng.randint(1, 20))
            text = text[:where] + text[where:end] * rng.randint(2, 5) + text[end:]
        else:
            text = text[:where] + str(number(rng)) + text[where:]
    return text


def any_shape_text(rng: random.Random) -> str:
    base = rng.choice(SHAPE_SEEDS) if rng.random() < 0.4 else shape_text(rng)
    return mutate(rng, base) if rng.random() < 0.7 else base


def valid_shape(rng: random.Random, max_elements: int = 4096) -> xs.Shape | None:
    """A parsed shape that passes validation (None when the random text was not one)."""
    try:
        shape = xs.parse_shape(shape_text(rng) if rng.random() < 0.85 else rng.choice(SHAPE_SEEDS))
        if shape.is_array:
            shape.validate()
            if -1 in shape.dimensions or shape.physical_element_count() > max_elements:
                return None
        return shape
    except xs.XlaShapesError:
        return None


# ------------------------------------------------------------------------------------------------------------------
# Targets
# ------------------------------------------------------------------------------------------------------------------


def make_parse_shape(rng: random.Random) -> Any:
    return any_shape_text(rng) if rng.random() < 0.97 else rng.choice((b"f32[2]", ["f32[2]"], None, 3, "f32[2]" * 9))


def run_parse_shape(value: Any) -> None:
    shape = xs.parse_shape(value)
    if isinstance(value, str):
        again = xs.parse_shape(str(shape))
        if again != shape or str(again) != str(shape):
            raise AssertionError(f"round trip changed {value!r}: {shape} -> {again}")


def make_parse_layout(rng: random.Random) -> Any:
    text = shape_text(rng)
    body = text[text.index("{"):] if "{" in text else "{" + ",".join(map(str, range(rng.randint(0, 3)))) + "}"
    return mutate(rng, body) if rng.random() < 0.7 else body


def run_parse_layout(value: Any) -> None:
    xs.parse_layout(value)


def random_value(rng: random.Random) -> Any:
    return rng.choice((number(rng), [number(rng) for _ in range(rng.randint(0, 3))], "x", None, 1.5, True, (),
                       [(2, 2)], [(number(rng),)], [[1, -1]], np.int64(3), np.array([1, 0]), object()))


LAYOUT_FIELDS = ("tiles", "tail_padding_alignment_in_elements", "index_primitive_type", "pointer_primitive_type",
                 "element_size_in_bits", "memory_space", "split_configs", "dynamic_shape_metadata_prefix_bytes",
                 "padded_dimensions", "padding_value", "dim_level_types")


def make_make_shape(rng: random.Random) -> Any:
    rank = rng.randint(0, 4)
    dims: Any = [number(rng) if rng.random() < 0.2 else rng.randint(0, 9) for _ in range(rank)]
    order: Any = None
    if rng.random() < 0.7:
        order = list(range(rank))
        rng.shuffle(order)
        if rng.random() < 0.1:
            order = random_value(rng)
    fields: dict[str, Any] = {}
    for name in rng.sample(LAYOUT_FIELDS, rng.randint(0, 3)):
        fields[name] = random_value(rng)
    if rng.random() < 0.5 and rank:
        fields["tiles"] = [tuple(rng.choice((1, 2, 4, 8, 128, -1, 0)) for _ in range(rng.randint(1, rank + 1)))]
    if rng.random() < 0.1:
        dims = random_value(rng)
    return (rng.choice(SPELLINGS), dims, order, fields)


def run_make_shape(value: Any) -> None:
    etype, dims, order, fields = value
    shape = xs.make_shape(etype, dims, order, **fields)
    shape.byte_size()
    if str(xs.parse_shape(str(shape))) != str(shape):
        raise AssertionError(f"{shape} does not round-trip through text")


def make_constructors(rng: random.Random) -> Any:
    fields = {name: random_value(rng) for name in rng.sample(LAYOUT_FIELDS, rng.randint(0, 4))}
    layout_args = (random_value(rng) if rng.random() < 0.2 else list(range(rng.randint(0, 3))), fields)
    shape_args = (rng.choice(SPELLINGS), random_value(rng) if rng.random() < 0.3 else small_dims(rng),
                  random_value(rng) if rng.random() < 0.2 else (), rng.random() < 0.7)
    return layout_args, shape_args


def run_constructors(value: Any) -> None:
    (order, fields), (etype, dims, dynamic, with_layout) = value
    layout = xs.Layout(order, **fields)
    shape = xs.Shape(etype, dims, dynamic, layout if with_layout else None)
    shape.validate()
    shape.byte_size()
    str(shape)


def make_index(rng: random.Random) -> Any:
    shape = valid_shape(rng)
    text = str(shape) if shape is not None else any_shape_text(rng)
    rank = shape.rank if shape is not None and shape.is_array else rng.randint(0, 3)
    roll = rng.random()
    if roll < 0.5:
        dims = shape.dimensions if shape is not None and shape.is_array else (4,) * rank
        index: Any = tuple(rng.randint(-1, max(0, d)) if rng.random() < 0.9 else number(rng) for d in dims)
    elif roll < 0.7:
        index = [[rng.randint(-2, 9) for _ in range(rank)] for _ in range(rng.randint(0, 5))]
    elif roll < 0.9:
        index = number(rng) if rng.random() < 0.5 else rng.randint(-2, 600)
    else:
        index = random_value(rng)
    return text, index


def run_index(value: Any) -> None:
    text, index = value
    if isinstance(index, int):
        found = xs.multi_index(text, index)
        if found is not None and xs.linear_index(text, found) != index:
            raise AssertionError(f"multi_index({text}, {index}) = {found} does not map back")
        return
    if isinstance(index, list) and index and isinstance(index[0], list):
        xs.linear_index(text, np.array(index, dtype=np.int64))
        return
    offset = xs.linear_index(text, index)
    if isinstance(index, tuple) and xs.multi_index(text, offset) != index:
        raise AssertionError(f"linear_index({text}, {index}) = {offset} does not map back")


def make_broadcast(rng: random.Random) -> Any:
    def one() -> str:
        if rng.random() < 0.6:
            etype = rng.choice(("f32", "s32", "pred", "bf16", "s4", "c64"))
            return f"{etype}[{','.join(map(str, small_dims(rng, top=3)))}]"
        return any_shape_text(rng)

    dims = None if rng.random() < 0.4 else random_value(rng) if rng.random() < 0.2 else \
        sorted(rng.sample(range(5), rng.randint(0, 4)))
    op = rng.choice(("add", "multiply", "compare", "and", "atan2", "shift-left", "power", "nope", "ADD", ""))
    direction = rng.choice((None, "EQ", "LT", "GT", "XX"))
    return rng.choice(("broadcast_shape", "binary_op_shape", "lower_binary")), op, one(), one(), dims, direction


def run_broadcast(value: Any) -> None:
    kind, op, lhs, rhs, dims, direction = value
    if kind == "broadcast_shape":
        xs.broadcast_shape(lhs, rhs, dims)
    elif kind == "binary_op_shape":
        xs.binary_op_shape(op, lhs, rhs, dims, direction=direction)
    else:
        hlo = xs.lower_binary(op, lhs, rhs, dims, direction=direction)
        problems = xs.parse_hlo_module(hlo).problems()
        if problems:
            raise AssertionError(f"lower_binary wrote HLO with problems: {problems[0]}")


def make_tpu(rng: random.Random) -> Any:
    shape = valid_shape(rng, max_elements=2**62)
    text = str(shape) if shape is not None and rng.random() < 0.8 else any_shape_text(rng)
    return text, rng.random() < 0.2, rng.choice((None, 4, 5, 6, 0, -1, 99))


def run_tpu(value: Any) -> None:
    text, bool_tiling, generation = value
    shape = xs.parse_shape(text)
    kwargs: dict[str, Any] = {"bool_tiling": bool_tiling}
    if generation is not None:
        kwargs["generation"] = generation
    xs.tpu_layout(shape, **kwargs)
    xs.tpu_advice(shape, **kwargs)


def make_proto(rng: random.Random) -> Any:
    shape = valid_shape(rng, max_elements=2**62)
    data = bytearray(xs.to_proto_bytes(shape) if shape is not None else b"\x08\x0b")
    for _ in range(rng.randint(0, 6)):
        where = rng.randint(0, len(data))
        roll = rng.random()
        if roll < 0.3 and data:
            data[min(where, len(data) - 1)] = rng.randrange(256)
        elif roll < 0.5:
            data[where:where] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
        elif roll < 0.65 and data:
            del data[where:where + rng.randint(1, 4)]
        elif roll < 0.8:
            data[where:where] = rng.choice((b"\xff" * 10 + b"\x01", b"\x80" * 11, b"\x3a\x7f", b"\x22\x02\x08\x01",
                                            b"\x0a\x00" * rng.choice((1, 100, 3000))))
        else:
            chunk = bytes(data[where:where + rng.randint(1, 16)])
            data[where:where] = chunk * rng.randint(2, 200)
    return bytes(data)


def run_proto(value: Any) -> None:
    shape = xs.from_proto_bytes(value)
    again = xs.from_proto_bytes(xs.to_proto_bytes(shape))
    if again != shape:
        raise AssertionError(f"proto round trip changed {shape} into {again}")
    if shape.is_array or shape.is_tuple:
        xs.tpu_layout(shape) if shape.is_array else None


def make_jax_layout(rng: random.Random) -> Any:
    rank = rng.randint(0, 4)
    m2m: Any = list(range(rank))
    rng.shuffle(m2m)
    if rng.random() < 0.15:
        m2m = random_value(rng)
    tiling: Any = None if rng.random() < 0.4 else [tuple(rng.choice((1, 2, 8, 128, 0, -1)) for _ in
                                                        range(rng.randint(1, 2))) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.1:
        tiling = random_value(rng)
    bits = rng.choice((0, 0, 4, 2, -1, 1000, None, "x"))
    dims: Any = small_dims(rng, rank) if rng.random() < 0.85 else random_value(rng)
    return m2m, tiling, bits, rng.choice(SPELLINGS), dims


def run_jax_layout(value: Any) -> None:
    m2m, tiling, bits, dtype, dims = value
    layout = types.SimpleNamespace(major_to_minor=m2m, tiling=tiling, sub_byte_element_size_in_bits=bits)
    xs.from_jax_layout(layout, dtype, dims)


def _corpus() -> list[str]:
    files = sorted((ROOT / "tests" / "corpus").glob("*.hlo")) + sorted((ROOT / "src" / "xlashapes" / "examples").glob(
        "*.hlo"))
    return [f.read_text() for f in files]


CORPUS = _corpus()
LINES = [line.strip() for text in CORPUS for line in text.splitlines() if " = " in line and "(" in line]


def make_instruction(rng: random.Random) -> Any:
    line = rng.choice(LINES) if LINES else "add.1 = f32[2]{0} add(x, y)"
    return mutate(rng, line, HLO_TOKENS) if rng.random() < 0.8 else line


def run_instruction(value: Any) -> None:
    xs.parse_instruction(value)


def module_text(rng: random.Random) -> str:
    """A module from the corpus, cut to a few computations to keep it cheap, then mutated."""
    text = rng.choice(CORPUS) if CORPUS else "HloModule m\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0)\n}\n"
    if len(text) > 6000 and rng.random() < 0.8:
        head = text.split("\n", 1)[0] + "\n"
        blocks = text.split("\n\n")
        text = head + "\n\n".join(rng.sample(blocks[1:], min(2, len(blocks) - 1))) if len(blocks) > 1 else text
    return mutate(rng, text, HLO_TOKENS) if rng.random() < 0.85 else text


def make_module(rng: random.Random) -> Any:
    return module_text(rng), rng.random() < 0.3, rng.random() < 0.2


def run_module(value: Any) -> None:
    text, strict, careful = value
    module = xs.parse_hlo_module(text, strict=strict, fast=not careful)
    module.problems()


def make_memory(rng: random.Random) -> Any:
    return module_text(rng), rng.random() < 0.5


def run_memory(value: Any) -> None:
    from xlashapes.memory import memory_report, upper_bound_report

    text, tpu = value
    module = xs.parse_hlo_module(text)
    peak = memory_report(module, backend="tpu" if tpu else "cpu")
    assert peak.peak_bytes >= 0
    report = upper_bound_report(module, tpu=tpu)
    report.by_memory_space()
    report.by_computation()
    report.largest(5)


def make_physical(rng: random.Random) -> Any:
    shape = valid_shape(rng, max_elements=4096)
    text = str(shape) if shape is not None else any_shape_text(rng)
    dims = list(shape.dimensions) if shape is not None and shape.is_array else small_dims(rng)
    if rng.random() < 0.1 and dims:
        dims[rng.randrange(len(dims))] += 1
    dtype = rng.choice(("float32", "int8", "uint8", "float64", "int32", "bool", "complex64", "bfloat16", "int4"))
    size = None
    if rng.random() < 0.5 and shape is not None and shape.is_array:
        size = shape.byte_size() + rng.choice((0, 0, 0, -1, 1, 7))
    return text, dims, dtype, size, rng.randrange(2**32)


def run_physical(value: Any) -> None:
    text, dims, dtype, size, seed = value
    generator = np.random.default_rng(seed)
    if size is not None:
        buffer = generator.integers(0, 256, max(size, 0), dtype=np.uint8)
        xs.from_physical(buffer, text)
        return
    import ml_dtypes

    numpy_dtype = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    array = (generator.integers(-8, 8, dims)).astype(numpy_dtype)
    buffer = xs.to_physical(array, text)
    back = xs.from_physical(buffer, text)
    if back.shape != array.shape:
        raise AssertionError(f"from_physical(to_physical(x)) changed dims for {text}")


def make_explain(rng: random.Random) -> Any:
    shape = valid_shape(rng, max_elements=2**62)
    return str(shape) if shape is not None and rng.random() < 0.7 else any_shape_text(rng)


def run_explain(value: Any) -> None:
    from xlashapes.explain import explain, explain_lines, tpu_report

    shape = xs.parse_shape(value)
    explain_lines(explain(shape))
    if shape.is_array:
        tpu_report(shape)


def make_cli(rng: random.Random) -> Any:
    command = rng.choice(("explain", "index", "offset", "draw", "broadcast", "memory", "pack", "unpack", "bogus", ""))
    args: list[str] = [command] if command else []
    roll = rng.random()
    if command in ("explain", "draw", "index", "offset"):
        args.append(any_shape_text(rng) if rng.random() < 0.9 else "-")
    if command == "explain" and rng.random() < 0.3 and LINES:
        line = rng.choice(LINES)
        args[-1] = mutate(rng, line, HLO_TOKENS, big=False) if rng.random() < 0.5 else line
    if command == "index":
        args.append(",".join(str(rng.randint(-3, 9)) for _ in range(rng.randint(0, 4))) if roll < 0.8 else "x,1")
    if command == "offset":
        args.append(str(rng.randint(-3, 200)) if roll < 0.8 else rng.choice(("abc", "", "1,2", "9" * 30)))
    if command == "broadcast":
        args += [any_shape_text(rng), any_shape_text(rng)]
        if rng.random() < 0.5:
            args += ["--dims", rng.choice(("0", "1", "0,1", "x", "-1", "", "1,0"))]
    if command == "draw":
        args += ["-o", rng.choice(("out.svg", "out.png", "out.pdf", "missing/x.svg"))]
        if rng.random() < 0.3:
            args += [rng.choice(("--max-rows", "--max-cols")), str(rng.choice((0, -1, 1, 7, 10**9)))]
    if command == "memory":
        args.append(rng.choice(("-", "/dev/null", "nope.hlo", "."))) if rng.random() < 0.5 else None
        if rng.random() < 0.3:
            args += ["--top", str(rng.choice((-1, 0, 3)))]
    if command in ("pack", "unpack"):
        args += [rng.choice(("nope.npy", "x.npz", ".")), any_shape_text(rng), "out.bin"]
    if rng.random() < 0.3:
        args.append(rng.choice(("--json", "--tpu", "--hlo", "--bogus", "-")))
    stdin = module_text(rng) if command == "memory" else any_shape_text(rng)
    return args, stdin


def run_cli(value: Any) -> None:
    from xlashapes.cli import main

    args, stdin = value
    out, err = io.StringIO(), io.StringIO()
    old_stdin, old_cwd = sys.stdin, os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        sys.stdin = io.StringIO(stdin)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(args)
                except SystemExit as stop:
                    code = stop.code if isinstance(stop.code, int) else 2
        finally:
            sys.stdin = old_stdin
            os.chdir(old_cwd)
    if code not in (0, 2):
        raise AssertionError(f"exit code {code}")
    if "Traceback" in err.getvalue():
        raise AssertionError("traceback on stderr")
    if code == 2 and not err.getvalue().strip():
        raise AssertionError("exit 2 without a message")


TARGETS: dict[str, tuple[Callable[[random.Random], Any], Callable[[Any], None], int]] = {
    # name: (make, run, weight: how many inputs of this target per round of the campaign)
    "parse_shape": (make_parse_shape, run_parse_shape, 40),
    "parse_layout": (make_parse_layout, run_parse_layout, 15),
    "make_shape": (make_make_shape, run_make_shape, 10),
    "constructors": (make_constructors, run_constructors, 10),
    "index": (make_index, run_index, 12),
    "broadcast": (make_broadcast, run_broadcast, 10),
    "tpu": (make_tpu, run_tpu, 8),
    "proto": (make_proto, run_proto, 10),
    "jax_layout": (make_jax_layout, run_jax_layout, 6),
    "instruction": (make_instruction, run_instruction, 15),
    "module": (make_module, run_module, 2),
    "memory": (make_memory, run_memory, 1),
    "physical": (make_physical, run_physical, 5),
    "explain": (make_explain, run_explain, 8),
    "cli": (make_cli, run_cli, 2),
}


FLOOR = {"cli": 2.0, "memory": 0.5}
"""Seconds any input of these targets may take whatever its size: a whole command (a picture, the bundled module)."""


def input_for(target: str, seed: int, number_: int) -> Any:
    """The ``number_``-th input of ``target`` in the run with ``seed`` (deterministic: the reproducer key)."""
    return TARGETS[target][0](random.Random(f"{seed}:{target}:{number_}"))


PATHOLOGICAL = {
    # name: (entry point, unit repeated, prefix, suffix)
    "long operand list": ("instruction", "%x, ", "a = f32[2]{0} add(", "%y#)"),
    "long quoted string": ("instruction", "ab\\\"c", "a = f32[2]{0} custom-call(), custom_call_target=\"", ""),
    "long ? run": ("shape", "?", "f32[", "]"),
    "high rank": ("shape", "1,", "f32[", "1]"),
    "many tile levels": ("shape", "(1)", "f32[2]{0:T(2)", "}"),
    "long layout": ("shape", "0,", "f32[2]{", "0}"),
    "deep tuple": ("shape", "(", "", "f32[]"),
    "long digits": ("shape", "0", "f32[", "1]"),
    "long comment": ("shape", "/*", "f32[2]", "*/"),
    "replica groups": ("module", "{0,1},", "HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT a = f32[2]{0} "
                       "all-reduce(p), replica_groups={", "{0,1}}, to_apply=e\n}\n"),
    "many instructions": ("module", "  a = f32[2]{0} add(p, p)\n", "HloModule m\nENTRY e {\n  p = f32[2]{0} "
                          "parameter(0)\n", "  ROOT r = f32[2]{0} add(p, p)\n}\n"),
    "long proto": ("proto", "\x0a\x00", "\x08\x0b", ""),
    "module operand list": ("module", "%x, ", "HloModule m\nENTRY e {\n  ROOT a = f32[2]{0} add(", "%y#)\n}\n"),
    "module string": ("module", "ab\\\"c", "HloModule m\nENTRY e {\n  ROOT a = f32[2]{0} custom-call(), "
                      "custom_call_target=\"", "\n}\n"),
    "module ? run": ("module", "?", "HloModule m\nENTRY e {\n  ROOT a = f32[", "] parameter(0)\n}\n"),
    "index high rank": ("index", "1,", "f32[", "1]"),
    "attribute ? run": ("instruction", "?", "a = f32[2]{0} add(x, y), foo=", ""),
    "module long operand name": ("module", "m_1a", "HloModule m\nENTRY e {\n  ROOT a = f32[2]{0} add(", ":)\n}\n"),
    "unbounded dims": ("shape", "?,", "f32[", "?]"),
    "index many tiles": ("index", "(1)", "f32[2]{0:T(2)", "}"),
}


def make_pathological(rng: random.Random) -> Any:
    name = rng.choice(sorted(PATHOLOGICAL))
    kind, unit, prefix, suffix = PATHOLOGICAL[name]
    size = rng.choice((1_000, 3_000, 10_000, 30_000, 100_000)) if rng.random() < 0.97 else 1_000_000
    text = prefix + unit * (size // len(unit)) + suffix
    if rng.random() < 0.5:
        where = rng.randint(0, len(text))
        text = text[:where] + rng.choice(("!", "]", "}", ")", "\"", "")) + text[where:]
    return kind, text


def run_pathological(value: Any) -> None:
    kind, text = value
    if kind == "shape":
        xs.parse_shape(text)
    elif kind == "instruction":
        xs.parse_instruction(text)
    elif kind == "index":
        shape = xs.parse_shape(text)
        xs.linear_index(shape, (0,) * shape.rank)
        xs.multi_index(shape, 0)
        shape.byte_size()
    elif kind == "module":
        xs.parse_hlo_module(text).problems()
    else:
        xs.from_proto_bytes(text.encode("latin-1"))


TARGETS["pathological"] = (make_pathological, run_pathological, 1)
