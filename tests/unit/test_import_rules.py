"""The layers' import rules, checked on every import of every module of the package.

Rules (docs/architecture.md):

1. Nothing under ``mpi_privopt/privacy/``, ``mpi_privopt/network.py``, ``mpi_privopt/problems/``
   or ``mpi_privopt/algorithms/`` (the library layers) imports the command line
   (``mpi_privopt.__main__``, ``.cli``, ``.entrypoint``, the command layer ``.commands``), a
   reproduction (``mpi_privopt.reproduce``) or the attacks (``mpi_privopt.attacks``).
2. Nothing under ``mpi_privopt/problems/`` or ``mpi_privopt/algorithms/`` imports mpi4py, nor
   ``mpi_privopt.mpiutil`` (the MPI protocols: agree, computed_once, abort).

Every ``import`` and ``from ... import`` counts wherever it is written (module level, inside a
function, under ``if TYPE_CHECKING``), relative imports are resolved to absolute module names,
``from package import name`` counts as importing ``package.name`` too, and
``importlib.import_module("literal")`` counts as an import.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import mpi_privopt

PACKAGE_DIR = Path(mpi_privopt.__file__).resolve().parent
PACKAGE = "mpi_privopt"

#: the subpackages of problems/, one per kind of problem (docs/architecture.md); named here
#: so that a rule cannot silently stop covering one that is renamed or moved out
PROBLEM_KINDS = ("mpi_privopt.problems.consensus", "mpi_privopt.problems.aggregative",
                 "mpi_privopt.problems.datasets", "mpi_privopt.problems.models",
                 "mpi_privopt.problems.reference")
#: the library layers of rule 1
LIBRARY = ("mpi_privopt.privacy", "mpi_privopt.network", "mpi_privopt.problems",
           *PROBLEM_KINDS, "mpi_privopt.algorithms")
#: what rule 1 forbids them: the command line, the reproductions, the attacks
APPLICATION = ("mpi_privopt.__main__", "mpi_privopt.cli", "mpi_privopt.entrypoint",
               "mpi_privopt.commands", "mpi_privopt.reproduce", "mpi_privopt.attacks")
#: the layers of rule 2
NO_MPI = ("mpi_privopt.problems", *PROBLEM_KINDS, "mpi_privopt.algorithms")
#: what rule 2 forbids them
MPI_MODULES = ("mpi4py", "mpi_privopt.mpiutil")

#: today's violations in modules other helpers are moving out of problems/;
#: the marks go when those moves are merged (strict: a mark left on a clean module fails)
KNOWN_VIOLATIONS: dict[str, str] = {}


@dataclass(frozen=True)
class Import:
    """One imported module name, absolute, and the line it is imported on."""

    target: str
    line: int


@dataclass(frozen=True)
class Violation:
    module: str
    target: str
    line: int
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target} ({self.rule})"


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a ``from`` import of ``level`` dots names, seen from ``module``."""
    if level == 0:
        return name or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(parts) - 1:
        raise ValueError(f"relative import beyond the top-level package in {module}")
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(source: str, module: str, is_package: bool = False) -> list[Import]:
    """Every module ``source`` (the text of ``module``) imports, as absolute names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            found.append(Import(base, node.lineno))
            # "from pkg import name": name may be a submodule, so it counts as pkg.name too
            found += [Import(f"{base}.{alias.name}", node.lineno)
                      for alias in node.names if alias.name != "*"]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in ("importlib.import_module", "import_module",
                                             "__import__")):
            found.append(Import(node.args[0].value, node.lineno))
    return found


def violations(module: str, source: str, is_package: bool = False) -> list[Violation]:
    """The rules ``module`` breaks, one entry per offending import."""
    found = []
    for imp in imports_of(source, module, is_package):
        if _within(module, LIBRARY) and _within(imp.target, APPLICATION):
            found.append(Violation(module, imp.target, imp.line,
                                   "a library layer imports application code"))
        if _within(module, NO_MPI) and _within(imp.target, MPI_MODULES):
            found.append(Violation(module, imp.target, imp.line,
                                   "problems/ and algorithms/ do not use MPI"))
    return found


def package_modules() -> dict[str, Path]:
    """Every module of the installed package: dotted name -> file."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((PACKAGE, *parts))] = path
    return modules


MODULES = package_modules()


def _params():
    for name in MODULES:
        marks = []
        if name in KNOWN_VIOLATIONS:  # a violation being removed: name the file and why
            marks.append(pytest.mark.xfail(reason=KNOWN_VIOLATIONS[name], strict=True))
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("module", list(_params()))
def test_module_obeys_the_import_rules(module):
    path = MODULES[module]
    broken = violations(module, path.read_text(encoding="utf-8"), path.name == "__init__.py")
    assert not broken, "\n".join(map(str, broken))


def test_the_rules_see_every_layer():
    # a rule over a layer with no modules (renamed, moved) would pass without checking anything
    for layer in LIBRARY + NO_MPI:
        assert any(_within(m, (layer,)) for m in MODULES), layer
    for kind in PROBLEM_KINDS:  # a kind is a package with modules, not a leftover name
        assert any(m.startswith(kind + ".") for m in MODULES), kind
    assert len(MODULES) > 50


# ------------------------------------------------------------------- the checker itself

def _targets(source: str, module: str, is_package: bool = False) -> set[str]:
    return {imp.target for imp in imports_of(source, module, is_package)}


def test_relative_imports_resolve_to_absolute_names():
    src = "from .. import cli\nfrom ..reproduce.gade2017 import main\nfrom . import ledger\n"
    assert _targets(src, "mpi_privopt.privacy.report") == {
        "mpi_privopt", "mpi_privopt.cli", "mpi_privopt.reproduce.gade2017",
        "mpi_privopt.reproduce.gade2017.main", "mpi_privopt.privacy",
        "mpi_privopt.privacy.ledger"}
    # in a package's __init__, one dot is the package itself
    assert _targets("from .ledger import Ledger\n", "mpi_privopt.privacy", True) == {
        "mpi_privopt.privacy.ledger", "mpi_privopt.privacy.ledger.Ledger"}
    with pytest.raises(ValueError):
        imports_of("from .... import x\n", "mpi_privopt.privacy.report")


@pytest.mark.parametrize("source", [
    "from ..cli import fail_user\n",
    "def f():\n    from ..commands.privacy import main\n    return main\n",
    "class A:\n    def m(self):\n        import mpi_privopt.reproduce\n",
    "from mpi_privopt import attacks\n",
    "from .. import entrypoint\n",
    "import importlib\nimportlib.import_module('mpi_privopt.reproduce.gauthier2024')\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..attacks.runner import x\n",
])
def test_checker_catches_a_library_importing_application_code(source):
    broken = violations("mpi_privopt.privacy.report", source)
    assert broken and all(v.rule == "a library layer imports application code" for v in broken)
    assert broken[0].line >= 1


@pytest.mark.parametrize("source", [
    "from mpi4py import MPI\n",
    "import mpi4py.MPI as MPI\n",
    "def gather(x):\n    import mpi4py\n    return mpi4py\n",
    "from ..mpiutil import agree\n",
])
def test_checker_catches_mpi_in_problems_and_algorithms(source):
    for module in ("mpi_privopt.problems.config", "mpi_privopt.algorithms.dgd"):
        assert {v.rule for v in violations(module, source)} == {
            "problems/ and algorithms/ do not use MPI"}
    # the network layer is where MPI belongs (a top-level module: one dot is the package)
    assert violations("mpi_privopt.network", source.replace("..", ".")) == []


def test_checker_passes_clean_sources_and_application_code():
    clean = ("import numpy as np\nfrom ..errors import ConfigError\nfrom .ledger import Ledger\n"
             "from mpi_privopt.privacy import accountants\nfrom ..clipping import clip\n")
    assert violations("mpi_privopt.privacy.report", clean) == []
    assert violations("mpi_privopt.algorithms.dgd", clean) == []
    # application code may import anything
    app = "from ..cli import main\nfrom mpi4py import MPI\nfrom ..reproduce import run\n"
    assert violations("mpi_privopt.attacks.runner", app) == []
    # a name that merely starts like a forbidden one is not it
    assert violations("mpi_privopt.privacy.report", "import mpi_privopt.client_data\n") == []
