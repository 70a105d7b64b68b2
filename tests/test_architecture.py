"""The package's shape (issue 11): no import cycles, lazy imports included; no source file over 900 lines; py.typed."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src" / "xlashapes"
OPTIONAL = ("numba", "llvmlite", "jax", "jaxlib", "PIL")
MAX_LINES = 900


def module_name(path: Path) -> str:
    """``src/xlashapes/hlo/parser.py`` -> ``xlashapes.hlo.parser``; a package's __init__ is the package."""
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """Every xlashapes module that ``path`` imports anywhere (inside functions too), except under TYPE_CHECKING."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in modules else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(SOURCE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) for p in paths}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (a list of modules, first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for other in sorted(graph[node]):
            if state.get(other) == 1:
                return [*stack[stack.index(other):], other]
            if other not in state and (found := walk(other)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_no_import_cycles_lazy_imports_included() -> None:
    graph = import_graph()
    assert "xlashapes.shape" in graph and "xlashapes.layout" in graph["xlashapes.shape"]
    assert cycle(graph) is None, " -> ".join(cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_no_source_file_over_900_lines() -> None:
    lengths = {str(p.relative_to(SOURCE)): len(p.read_text().splitlines()) for p in SOURCE.rglob("*.py")}
    assert len(lengths) > 40
    assert {path: n for path, n in lengths.items() if n > MAX_LINES} == {}


def test_types_are_shipped() -> None:
    assert (SOURCE / "py.typed").is_file()
