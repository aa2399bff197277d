"""The layers' import rules, checked on every import of every module of the package.

Rules (docs/architecture.md):

1. Nothing under ``mpi_privopt/privacy/``, ``mpi_privopt/network/``, ``mpi_privopt/problems/``
   or ``mpi_privopt/methods/`` (the library layers) imports the command line
   (``mpi_privopt.__main__``, ``.cli``, ``.entrypoint``, the command layer ``.commands``), a
   reproduction (``mpi_privopt.reproduce``, a family's ``reproduce``) or the attacks (a
   family's ``attacks``). A family's ``reproduce`` and ``attacks`` are application code.
2. Nothing under ``mpi_privopt/problems/`` or ``mpi_privopt/methods/`` (application code
   excepted) imports mpi4py, nor ``mpi_privopt.mpiutil`` (the MPI protocols: agree,
   computed_once, abort).
3. The core imports no method family: no module outside ``mpi_privopt/methods/<family>/``
   imports it (``methods/baselines/``, DGD and linearized ADMM on which the papers' methods
   build, is shared like the core).
4. A family imports the core and no other family (``baselines`` excepted).

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
from mpi_privopt.methods import FAMILIES as FAMILY_NAMES

PACKAGE_DIR = Path(mpi_privopt.__file__).resolve().parent
PACKAGE = "mpi_privopt"

#: the subpackages of problems/, one per kind of problem (docs/architecture.md); named here
#: so that a rule cannot silently stop covering one that is renamed or moved out
PROBLEM_KINDS = ("mpi_privopt.problems.consensus", "mpi_privopt.problems.aggregative",
                 "mpi_privopt.problems.datasets", "mpi_privopt.problems.models",
                 "mpi_privopt.problems.reference")
#: the library layers of rule 1
LIBRARY = ("mpi_privopt.privacy", "mpi_privopt.network", "mpi_privopt.problems",
           *PROBLEM_KINDS, "mpi_privopt.methods")
#: the method families of rules 3 and 4 (``mpi_privopt.methods.FAMILIES`` without the
#: shared baselines)
FAMILIES = tuple(f"mpi_privopt.methods.{f}" for f in FAMILY_NAMES if f != "baselines")
#: a family's application code: its reproduction and its attacks
FAMILY_APPLICATION = ("reproduce", "attacks")
#: what rule 1 forbids them: the command line, the reproductions, the attacks
APPLICATION = ("mpi_privopt.__main__", "mpi_privopt.cli", "mpi_privopt.entrypoint",
               "mpi_privopt.commands", "mpi_privopt.reproduce",
               *(f"{f}.{part}" for f in FAMILIES for part in FAMILY_APPLICATION))
#: the layers of rule 2
NO_MPI = ("mpi_privopt.problems", *PROBLEM_KINDS, "mpi_privopt.methods")
#: what rule 2 forbids them
MPI_MODULES = ("mpi4py", "mpi_privopt.mpiutil")

#: today's violations, each with what removes it (strict: a mark left on a clean module fails)
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


def family_of(name: str) -> str | None:
    """The family (package name) module ``name`` belongs to, None for the core."""
    return next((f for f in FAMILIES if _within(name, (f,))), None)


def violations(module: str, source: str, is_package: bool = False) -> list[Violation]:
    """The rules ``module`` breaks, one entry per offending import."""
    found = []
    application = _within(module, APPLICATION)
    family = family_of(module)
    for imp in imports_of(source, module, is_package):
        if _within(module, LIBRARY) and not application and _within(imp.target, APPLICATION):
            found.append(Violation(module, imp.target, imp.line,
                                   "a library layer imports application code"))
        if _within(module, NO_MPI) and not application and _within(imp.target, MPI_MODULES):
            found.append(Violation(module, imp.target, imp.line,
                                   "problems/ and methods/ do not use MPI"))
        target_family = family_of(imp.target)
        if target_family is not None and family is None:
            found.append(Violation(module, imp.target, imp.line,
                                   "the core imports no method family"))
        elif target_family not in (None, family):
            found.append(Violation(module, imp.target, imp.line,
                                   "a family imports no other family"))
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
    src = "from .. import cli\nfrom ..methods.gade2017.reproduce import main\nfrom . import ledger\n"
    assert _targets(src, "mpi_privopt.privacy.report") == {
        "mpi_privopt", "mpi_privopt.cli", "mpi_privopt.methods.gade2017.reproduce",
        "mpi_privopt.methods.gade2017.reproduce.main", "mpi_privopt.privacy",
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
    "from mpi_privopt.methods.gade2017 import attacks\n",
    "from .. import entrypoint\n",
    "import importlib\nimportlib.import_module('mpi_privopt.methods.gauthier2024.reproduce')\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..cli import x\n",
])
def test_checker_catches_a_library_importing_application_code(source):
    broken = violations("mpi_privopt.privacy.report", source)
    assert broken and {v.rule for v in broken} <= {"a library layer imports application code",
                                                   "the core imports no method family"}
    assert "a library layer imports application code" in {v.rule for v in broken}
    assert broken[0].line >= 1


@pytest.mark.parametrize("source", [
    "from mpi4py import MPI\n",
    "import mpi4py.MPI as MPI\n",
    "def gather(x):\n    import mpi4py\n    return mpi4py\n",
    "from mpi_privopt.mpiutil import agree\n",
])
def test_checker_catches_mpi_in_problems_and_algorithms(source):
    for module in ("mpi_privopt.problems.config", "mpi_privopt.methods.baselines.dgd"):
        assert {v.rule for v in violations(module, source)} == {
            "problems/ and methods/ do not use MPI"}
    # the network layer is where MPI belongs (a top-level module: one dot is the package)
    assert violations("mpi_privopt.network", source.replace("..", ".")) == []


def test_checker_passes_clean_sources_and_application_code():
    clean = ("import numpy as np\nfrom ..errors import ConfigError\nfrom .ledger import Ledger\n"
             "from mpi_privopt.privacy import accountants\nfrom ..clipping import clip\n")
    assert violations("mpi_privopt.privacy.report", clean) == []
    assert violations("mpi_privopt.methods.baselines.dgd", clean) == []
    # application code may import anything
    app = "from ..cli import main\nfrom mpi4py import MPI\nfrom ..reproduce import run\n"
    assert violations("mpi_privopt.methods.gade2017.attacks.runner", app) == []
    # a name that merely starts like a forbidden one is not it
    assert violations("mpi_privopt.privacy.report", "import mpi_privopt.client_data\n") == []


@pytest.mark.parametrize("module,source", [
    ("mpi_privopt.engine", "from .methods.chen2025.ldp_aggregative import LDPAggregative\n"),
    ("mpi_privopt.audit.runner", "from ..methods.chan2023 import audit\n"),
    ("mpi_privopt.privacy.costs",
     "import importlib\nimportlib.import_module('mpi_privopt.methods.gauthier2024.zcdp_nfl')\n"),
])
def test_checker_catches_the_core_importing_a_family(module, source):
    assert {v.rule for v in violations(module, source)} == {"the core imports no method family"}


def test_checker_catches_a_family_importing_another():
    source = "from ..chen2025.ldp_budget import x\n"
    assert {v.rule for v in violations("mpi_privopt.methods.chan2023.token_admm", source)} == {
        "a family imports no other family"}
    # the shared baselines and the core are fine; a family's own modules too
    fine = "from ..baselines.dgd import DGD\nfrom ...privacy import events\nfrom . import rss\n"
    assert violations("mpi_privopt.methods.gade2017.function_sharing", fine) == []
