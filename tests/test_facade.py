"""The public facade (issue 11): ``__all__`` and ``dir()``, one name per job, old import paths still working."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import types
import typing
from typing import Any

import numpy as np
import pytest

import xlashapes as xs

PUBLIC_CLASSES = [xs.Shape, xs.Layout, xs.ElementType, xs.SplitConfig, xs.HloModule, xs.HloComputation,
                  xs.HloInstruction, xs.TpuAdvice]


def ruff_sorted(names: list[str]) -> list[str]:
    """``names`` in the order ruff keeps ``__all__`` (RUF022): CONSTANTS, then Classes, then functions."""
    return sorted(names, key=lambda name: (0 if name.isupper() else 1 if name[0].isupper() else 2, name))


def facade_names() -> list[str]:
    """The public names the package namespace holds (everything not private and not a submodule, plus ``ops``) and
    those it imports on first use (``_LAZY``)."""
    held = [name for name, value in vars(xs).items()
            if not name.startswith("_") and (not isinstance(value, types.ModuleType) or name == "ops")]
    return ruff_sorted(list({*held, *xs._LAZY, "ops"}))


def test_the_heavy_submodules_are_imported_on_first_use() -> None:
    # the HLO reader, the memory model, the physical-bytes engine and the element-wise ops wait for their first
    # name: a command that only reads shapes does not import them (0.2 s)
    code = ("import sys, xlashapes as xs\n"
            "xs.explain(xs.parse_shape('bf16[8,128]{1,0:T(8,128)(2,1)}'))\n"
            "heavy = ['xlashapes.physical', 'xlashapes.hlo', 'xlashapes.memory', 'xlashapes.ops', 'numba']\n"
            "print([m for m in heavy if m in sys.modules])\n"
            "print(xs.to_physical is sys.modules['xlashapes.physical'].to_physical, xs.hlo.HloModule is xs.HloModule)\n"
            "loaded = {m.split('.')[1] for m in sys.modules if m.startswith('xlashapes.')}\n"
            "print(sorted(set(xs._LAZY.values()) - loaded))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:3] == ["[]", "True True", "['interop', 'memory']"]  # (the HLO reader infers shapes)
    for name, module in xs._LAZY.items():
        assert getattr(xs, name) is getattr(importlib.import_module(f"xlashapes.{module}"), name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = xs.nothing


def test_all_is_the_sorted_list_of_public_names() -> None:
    assert xs.__all__ == ruff_sorted(xs.__all__)
    assert xs.__all__ == facade_names()
    assert len(set(xs.__all__)) == len(xs.__all__)
    assert 40 <= len(xs.__all__) <= 50  # about 45: one name per job


def test_every_name_is_importable() -> None:
    for name in xs.__all__:
        namespace: dict[str, Any] = {}
        exec(f"from xlashapes import {name}", namespace)
        assert namespace[name] is getattr(xs, name)
    star: dict[str, Any] = {}
    exec("from xlashapes import *", star)
    assert ruff_sorted([k for k in star if not k.startswith("__")]) == xs.__all__


def test_dir_shows_the_facade_and_the_submodules() -> None:
    listed = dir(xs)
    assert set(xs.__all__) <= set(listed)
    assert {"layout", "shape", "text", "broadcast", "ops", "interop", "hlo", "physical", "__version__"} <= set(listed)
    assert "annotations" not in listed and "ModuleType" not in listed
    assert listed == sorted(listed)


def test_element_wise_ops_live_under_ops() -> None:
    wrappers = ["add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "and_", "or_",
                "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical", "atan2", "compare"]
    for name in [*wrappers, "binary_op", "BINARY_OPS", "COMPARISON_DIRECTIONS"]:
        assert (name in xs.ops.__all__ and callable(getattr(xs.ops, name))) or name.isupper(), name
        assert name not in xs.__all__ and not hasattr(xs, name), name
    assert xs.ops.add(np.ones(2, np.float32), np.float32(1)).tolist() == [2.0, 2.0]


def test_added_reports_are_exported() -> None:
    report = xs.explain(xs.parse_shape("f32[3,5]{1,0:T(2,2)}"))
    assert report["bytes"]["physical"] == 96
    module = xs.parse_hlo_module("HloModule m\nENTRY e {\n  ROOT p = f32[8]{0} parameter(0)\n}\n")
    assert xs.memory_report(module) is not None


# ----- no duplicate public pairs -----

DUPLICATES = {
    "tiled_dimensions": "Shape.physical_dimensions",
    "validate_layout": "Shape.validate",
    "layout_text": "str(Layout)",
    "shape_to_proto_bytes": "to_proto_bytes",
    "shape_from_proto_bytes": "from_proto_bytes",
    "shape_from_jax_array": "from_jax_array",
    "memory_space_name": "Layout.memory_space_name",
}


def method_names() -> set[str]:
    return {name for cls in PUBLIC_CLASSES for name in dir(cls) if not name.startswith("_")}


def test_no_facade_name_is_a_method_name() -> None:
    assert not set(xs.__all__) & method_names()


def test_known_duplicate_pairs_keep_only_one_name() -> None:
    for name in DUPLICATES:
        assert name not in xs.__all__ and not hasattr(xs, name), (name, DUPLICATES[name])


SAMPLES = [xs.parse_shape("f32[3,5]{1,0:T(2,2)}"), xs.parse_shape("bf16[8,128]{0,1}"),
           xs.parse_shape("f32[3,5]{1,0:T(2,2)}").layout]


def zero_argument_results(value: Any) -> list[Any]:
    """What every public zero-argument method of ``value`` returns (``str()`` is no method: ``shape_text`` adds options
    to it, and ``layout_text``, which added none, is in DUPLICATES)."""
    results: list[Any] = []
    for name in dir(value):
        if name.startswith("_"):
            continue
        attribute = getattr(value, name)
        if not callable(attribute):
            continue
        try:
            results.append(attribute())
        except Exception:  # needs arguments, or does not apply to this value
            continue
    return results


@pytest.mark.parametrize("sample", SAMPLES, ids=str)
def test_no_facade_function_repeats_a_method(sample: Any) -> None:
    """A facade function applied to a Shape or Layout never gives what one of its own methods gives."""
    answers = zero_argument_results(sample)
    for name in xs.__all__:
        function = getattr(xs, name)
        if not inspect.isfunction(function):
            continue
        try:
            result = function(sample)
        except Exception:  # needs more arguments, or takes something else
            continue
        if result == sample:
            continue  # a round trip (from_xla_client_shape reads any str()), not a second name for a method
        for answer in answers:
            same = result == answer
            assert not (isinstance(same, bool) and same and answer is not None), (name, result)


# ----- old paths and typing -----

OLD_PATHS = ["xlashapes.layout.Layout", "xlashapes.layout.tiled_dimensions", "xlashapes.layout.validate_layout",
             "xlashapes.text.layout_text", "xlashapes.hlo.Attributes", "xlashapes.hlo.Problem",
             "xlashapes.hlo.Sharding", "xlashapes.hlo.StackFrameIndex", "xlashapes.indexing.next_index",
             "xlashapes.indexing.indices_in_memory_order_array", "xlashapes.broadcast.BINARY_OPS",
             "xlashapes.broadcast.broadcast_shape", "xlashapes.broadcast.binary_op_shape",
             "xlashapes.broadcast.lower_binary", "xlashapes.broadcast.canonical_op",
             "xlashapes.interop.shape_to_proto_bytes", "xlashapes.interop.shape_from_proto_bytes",
             "xlashapes.interop.shape_from_jax_array", "xlashapes.interop.varint_bytes", "xlashapes.ops.add",
             "xlashapes.ops.binary_op", "xlashapes.ops.DEFAULT_MAX_ELEMENTS"]


@pytest.mark.parametrize("path", OLD_PATHS)
def test_submodule_paths_keep_working(path: str) -> None:
    module, _, name = path.rpartition(".")
    assert getattr(importlib.import_module(module), name) is not None


MY_MODULES = ["xlashapes.broadcast", "xlashapes.ops", "xlashapes.interop", "xlashapes.interop.jax",
              "xlashapes.interop._proto", "xlashapes._opcodes"]


@pytest.mark.parametrize("module_name", MY_MODULES)
def test_public_functions_do_not_return_any(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
    checked = 0
    for name in names:
        function = getattr(module, name)
        if not inspect.isfunction(function) or not function.__module__.startswith("xlashapes"):
            continue
        checked += 1
        annotation = inspect.signature(function).return_annotation
        assert annotation not in ("Any", Any, inspect.Signature.empty), f"{module_name}.{name} -> {annotation}"
    assert checked


def test_broadcast_shape_return_type_follows_the_arguments() -> None:
    assert isinstance(xs.broadcast_shape((2, 1), (1, 3)), tuple)
    assert isinstance(xs.broadcast_shape("f32[2,1]", "f32[1,3]"), xs.Shape)
    if hasattr(typing, "get_overloads"):  # Python 3.11+
        returns = {str(inspect.signature(f).return_annotation) for f in typing.get_overloads(xs.broadcast_shape)}
        assert returns == {"Shape", "tuple[int, ...]"}

