"""The package's layout: no import cycle among its modules, and no long module.

1. No cycle: the import graph of ``mpi_privopt`` (every ``import`` and ``from ... import``,
   wherever written: module level, inside a function, under ``if TYPE_CHECKING``; relative
   imports resolved; ``importlib.import_module("literal")`` too) has no cycle. An import
   inside a function still couples the two modules, so it counts: a deferred import hides
   a circle from the interpreter, not from the reader.
2. Small modules: every module has at most :data:`MAX_LINES` lines (docs/architecture.md).
   Today's longer modules are listed in :data:`LONG_MODULES`, each marked strict xfail: a
   module split below the limit must leave the list (its mark would pass and fail the
   run), and a new long module fails.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mpi_privopt

PACKAGE_DIR = Path(mpi_privopt.__file__).resolve().parent
PACKAGE = "mpi_privopt"
MAX_LINES = 500

#: modules over MAX_LINES today, to be split (strict xfail: remove an entry once it is split)
LONG_MODULES: dict[str, str] = {
}


# ------------------------------------------------------------------- the import graph

def package_modules(package_dir: Path, package: str) -> dict[str, Path]:
    """Every module under ``package_dir``: dotted name -> file (a package is its __init__)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((package, *parts))] = path
    return modules


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a ``from`` import of ``level`` dots names, seen from ``module``."""
    if level == 0:
        return name or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imported_modules(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``source`` (the text of ``module``) imports.

    ``from pkg import name`` imports the module ``pkg.name`` if there is one, else ``pkg``
    (whose ``__init__`` must then run to give ``name``).
    """
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in ("importlib.import_module", "import_module",
                                             "__import__")):
            found.add(node.args[0].value)
    return (found & known) - {module}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    known = set(modules)
    return {name: imported_modules(path.read_text(encoding="utf-8"), name,
                                   path.name == "__init__.py", known)
            for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None if it has none (iterative DFS)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if root in state:
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(child) == 1:
                return path[path.index(child):] + [child]
            elif child not in state:
                state[child] = 1
                path.append(child)
                stack.append(iter(sorted(graph.get(child, ()))))
    return None


MODULES = package_modules(PACKAGE_DIR, PACKAGE)


def test_no_import_cycle():
    cycle = find_cycle(import_graph(MODULES))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_sees_the_package():
    # a graph with no edges (a broken resolver) would pass the cycle test without checking
    graph = import_graph(MODULES)
    assert len(MODULES) > 50
    assert "mpi_privopt.problems.config" in graph["mpi_privopt.problems.consensus.local"]
    assert "mpi_privopt.problems.reference.solution" in graph["mpi_privopt.problems"]


# ---------------------------------------------------------------------- module length

def _length_params():
    for name in MODULES:
        marks = []
        if name in LONG_MODULES:
            marks.append(pytest.mark.xfail(reason=LONG_MODULES[name], strict=True))
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("module", list(_length_params()))
def test_module_is_short(module):
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines (at most {MAX_LINES}): split it"


def test_long_modules_exist():
    # an entry for a renamed or removed module would mark nothing
    assert set(LONG_MODULES) <= set(MODULES), set(LONG_MODULES) - set(MODULES)


# ------------------------------------------------------------------- the checker itself

def test_find_cycle_reports_the_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return package_modules(root / "pkg", "pkg")


def test_graph_counts_deferred_relative_and_package_imports(tmp_path):
    modules = _write(tmp_path, {
        "pkg/__init__.py": "from pkg.sub.a import A\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/a.py": "def f():\n    from ..b import B\n    return B\n",
        "pkg/b.py": "from pkg import sub\nfrom pkg.sub import a\nimport numpy\n",
        "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n"
                    "import importlib\nimportlib.import_module('pkg.sub.a')\n",
    })
    graph = import_graph(modules)
    assert graph == {"pkg": {"pkg.sub.a"}, "pkg.sub": set(), "pkg.sub.a": {"pkg.b"},
                     "pkg.b": {"pkg.sub", "pkg.sub.a"}, "pkg.c": {"pkg.b", "pkg.sub.a"}}
    assert find_cycle(graph) == ["pkg.sub.a", "pkg.b", "pkg.sub.a"]
