"""Your own problem or method, from your own module: ``problem.module`` and ``algorithm.module``.

A configuration may name a module of yours instead of a packaged problem or method::

    [problem]
    name = "swarm"                                 # your problem's own name
    module = "my_aggregative_problem:build"        # module:factory

    [algorithm]
    module = "my_private_method:NoisyDGD"          # module:class (its name is the class's)

The module is looked up on ``PYTHONPATH`` (the current directory first under
``python -m``), then in the current directory, then in the config file's folder unless
that folder is a run directory (``run --resume DIR`` reads ``DIR/config.toml``: a module
put into a run directory, which may come from someone else, is not imported). It is
imported wherever the configuration is loaded, so on every rank (a method's class must
exist on each rank), and before MPI starts (:func:`mpi_privopt.prelaunch.validate_before_mpi`)
it is checked against the contract, so that a mistake ends the job with one message,
status 2 and no traceback:

* a problem's factory is ``factory(options, rank, n_agents, seed)`` returning agent
  ``rank``'s aggregative objective (the contract of
  :class:`~mpi_privopt.problems.aggregative.objective.AggregativeObjective`), like the
  packaged aggregative problems' builders; ``options`` is the ``[problem.options]`` table.
  Before MPI starts every task builds agent 0's objective once to check its members;
* a method is a subclass of :class:`~mpi_privopt.methods.contract.Algorithm` with a
  ``name``, a ``summary``, ``step`` and ``estimate`` (and, if it has parameters, a
  ``Params`` dataclass).

Neither may take the name of a packaged one. Loading registers them where the packaged
ones are (``AGGREGATIVE_PROBLEMS``, ``ALGORITHMS``), so nothing else in the package knows
they are yours (docs/architecture.md, "Your own problem or method").
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from operator import attrgetter
from pathlib import Path
from typing import Any

from .errors import ConfigError, UserError

__all__ = ["load_problem", "load_method", "check_problem_product", "OBJECTIVE_MEMBERS",
           "OBJECTIVE_SIZES", "METHOD_MEMBERS"]

#: what a user problem's objective must have besides OBJECTIVE_SIZES (callables)
OBJECTIVE_MEMBERS = ("observe", "aggregate", "aggregate_vjp", "grad_x", "grad_y",
                     "initial_block", "evaluator")
#: the objective's integer sizes (public): n_i and r
OBJECTIVE_SIZES = ("block_size", "aggregate_size")
#: what a user method's class must define (class attributes declared, without a value, by
#: Algorithm; step and estimate are its abstract members, Params has a default: none)
METHOD_MEMBERS = ("name", "summary")
#: the [algorithm] keys that are not the method's parameters
_ALGORITHM_KEYS = ("name", "module")


def _split(key: str, value: Any, what: str) -> tuple[str, str]:
    """``(module, attribute)`` of ``"package.module:attribute"``."""
    form = f"package.module:{what}"
    module, _, attribute = value.partition(":") if isinstance(value, str) else ("", "", "")
    names = [*module.split("."), attribute]
    if not all(part.isidentifier() for part in names) or value.count(":") != 1:
        raise ConfigError(f"{key} = {value!r} is not of the form {form!r}",
                          f"write {key} = \"{form}\", e.g. \"my_module:{what}\" for "
                          f"{what} in my_module.py")
    return module, attribute


#: what a run writes into its directory (docs/run-directory.md): a folder holding one of
#: these is a run directory
RUN_DIRECTORY_MARKS = ("checkpoint", "summary.json", "heartbeats", ".mpi_privopt-claim")


def _config_folder(source: str) -> tuple[Path | None, bool]:
    """The config file's folder (None when the source is not a file), and whether it is a
    run directory (``run --resume DIR`` and ``run DIR/config.toml`` read the run's own
    ``config.toml``)."""
    if not source or not Path(source).is_file():
        return None, False
    folder = Path(source).resolve().parent
    return folder, any((folder / mark).exists() for mark in RUN_DIRECTORY_MARKS)


def _search_folders(source: str) -> list[str]:
    """The current directory and the config file's folder (if the source is a file),
    unless that folder is a run directory: a run directory may come from someone else,
    and a module planted in it would run on every rank of a resume."""
    folder, in_run = _config_folder(source)
    return [os.getcwd(), *([str(folder)] if folder is not None and not in_run else [])]


def _import(key: str, value: str, module: str, source: str):
    """Import ``module`` (searching :func:`_search_folders` after ``sys.path``)."""
    for folder in _search_folders(source):
        if folder not in sys.path:
            sys.path.append(folder)  # appended: it shadows nothing installed
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name and not (module == err.name or module.startswith(err.name + ".")):
            raise ConfigError(f"{key} = {value!r}: importing {module} failed: {err}",
                              f"install {err.name}, which {module} imports") from None
        where = ", ".join(_search_folders(source))
        run_dir, in_run = _config_folder(source)
        planted = in_run and (
            (run_dir / f"{module.replace('.', '/')}.py").exists()
            or (run_dir / module.split(".")[0]).is_dir())
        if planted:
            raise ConfigError(
                f"{key} = {value!r}: {module} is in the run directory {run_dir}, which is "
                f"not searched for modules (searched PYTHONPATH and {where})",
                "a run directory may come from someone else: if you trust this module, put "
                "it in the current directory or add its folder to PYTHONPATH") from None
        raise ConfigError(f"{key} = {value!r}: no module {module} is importable (searched "
                          f"PYTHONPATH and {where})",
                          f"put {module.replace('.', '/')}.py in the current directory or "
                          "next to the config file, or add its folder to PYTHONPATH") from None
    except UserError:
        raise
    except Exception as err:  # the user's module raised: say where, without a traceback
        place = ""
        if isinstance(err, SyntaxError) and err.filename:
            place = f" ({err.filename}, line {err.lineno})"
        raise ConfigError(f"{key} = {value!r}: importing {module} raised "
                          f"{type(err).__name__}: {err}{place}",
                          f"fix {module} (python -c 'import {module}' shows the "
                          "traceback)") from None


def _attribute(key: str, value: str, what: str, source: str) -> Any:
    """The object ``value`` names; ``what`` says what it should be (``factory``...)."""
    module_name, attribute = _split(key, value, what)
    module = _import(key, value, module_name, source)
    if not hasattr(module, attribute):
        defined = sorted(n for n, v in vars(module).items() if not n.startswith("_")
                         and (inspect.isclass(v) or inspect.isfunction(v))
                         and v.__module__ == module.__name__)
        raise ConfigError(f"{key} = {value!r}: module {module_name} "
                          f"({vars(module).get('__file__', '?')}) has no {attribute!r}",
                          f"after the colon, name the {what} (the module defines: "
                          f"{', '.join(defined[:12]) or 'no class or function'})")
    return _member(module, attribute)


# -- problems ------------------------------------------------------------------------------

def load_problem(problem, raw: Mapping[str, Any], source: str = "") -> None:
    """Import and register ``problem.module`` (a :class:`ProblemConfig`), if it is set.

    ``raw`` is the ``[problem]`` table as written (to tell a ``name`` left at its default
    from one given). The factory is registered under ``problem.name`` in
    :data:`~mpi_privopt.problems.registry.AGGREGATIVE_PROBLEMS`.

    Raises
    ------
    ConfigError
        Not of the form module:factory, not importable, no such attribute, not callable
        as ``factory(options, rank, n_agents, seed)``, no ``name`` or a packaged one.
    """
    from .problems.registry import AGGREGATIVE_PROBLEMS, POLYNOMIAL, PROBLEMS
    value = problem.module
    if not value:
        return
    key = "problem.module"
    factory = _attribute(key, value, "factory", source)
    if not callable(factory):
        raise ConfigError(f"{key} = {value!r} is a {type(factory).__name__}, not a problem "
                          "factory", "name a function (or class) called as "
                          "factory(options, rank, n_agents, seed)")
    try:
        inspect.signature(factory).bind({}, 0, 1, 0)
    except TypeError:
        raise ConfigError(f"{key} = {value!r} cannot be called as factory(options, rank, "
                          f"n_agents, seed): its signature is {inspect.signature(factory)}",
                          "give it exactly those four parameters") from None
    except ValueError:
        pass  # no signature to read (a builtin): the probe build will tell
    if "name" not in raw:
        raise ConfigError(f"{key} = {value!r} is set, but problem.name is not",
                          "give your problem its own name: [problem] name = \"my-problem\"")
    name = problem.name
    packaged = name in PROBLEMS or name == POLYNOMIAL
    if packaged or AGGREGATIVE_PROBLEMS.get(name, factory) is not factory:
        owner = "a packaged" if packaged or name in _PACKAGED_PROBLEMS else "another"
        raise ConfigError(f"problem.name = {name!r} is taken by {owner} problem, and "
                          f"{key} = {value!r} would replace it",
                          "give your problem a name of its own (python -m mpi_privopt list "
                          "shows the packaged ones)")
    AGGREGATIVE_PROBLEMS[name] = factory


def _packaged_problems() -> frozenset[str]:
    from .problems.registry import AGGREGATIVE_PROBLEMS
    return frozenset(AGGREGATIVE_PROBLEMS)


#: the aggregative problems the package ships (before any user module registered one)
_PACKAGED_PROBLEMS = _packaged_problems()


def check_problem_product(problem, n_agents: int, seed: int) -> None:
    """Build agent 0's objective of ``problem.module`` once and check its members.

    Called before MPI starts (:mod:`mpi_privopt.prelaunch`); a factory's own
    :class:`~mpi_privopt.errors.UserError` (a bad ``[problem.options]`` entry) passes
    through as it is.
    """
    if not problem.module:
        return
    from .problems.registry import AGGREGATIVE_PROBLEMS
    key, value = "problem.module", problem.module
    try:
        objective = AGGREGATIVE_PROBLEMS[problem.name](dict(problem.options), 0, n_agents, seed)
    except UserError:
        raise
    except Exception as err:
        raise ConfigError(f"{key} = {value!r}: building agent 0's objective raised "
                          f"{type(err).__name__}: {err}",
                          "fix the factory (it is called as factory(options, rank, "
                          "n_agents, seed) on every rank)") from None
    missing = [m for m in OBJECTIVE_MEMBERS if not callable(_member(objective, m))]
    missing += [m for m in OBJECTIVE_SIZES
                if not _positive_int(_member(objective, m))]
    if missing:
        raise ConfigError(f"{key} = {value!r} builds an objective "
                          f"({type(objective).__name__}) without "
                          f"{', '.join(missing)}",
                          "an aggregative objective has the methods "
                          f"{', '.join(OBJECTIVE_MEMBERS)} and the positive integers "
                          f"{', '.join(OBJECTIVE_SIZES)} (mpi_privopt/problems/aggregative/"
                          "objective.py; docs/architecture.md, \"Your own aggregative "
                          "problem\")")


def _member(obj: object, name: str) -> Any:
    """``obj.name``, or None when it has none (a user's object: any member may be absent)."""
    try:
        return attrgetter(name)(obj)
    except AttributeError:
        return None


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


# -- methods -------------------------------------------------------------------------------

def load_method(value: Any, name: str | None, source: str = "") -> str:
    """Import, check and register the class of ``algorithm.module``; return its name.

    ``name`` is ``algorithm.name`` if the file gives one (it must then be the class's).

    Raises
    ------
    ConfigError
        Not of the form module:ClassName, not importable, no such attribute, not an
        Algorithm subclass, a member missing, a name given that is not the class's, or
        the name of a packaged method.
    """
    from .methods import ALGORITHMS, PACKAGED, Algorithm
    from .problems.registry import PROBLEM_KINDS
    key = "algorithm.module"
    cls = _attribute(key, value, "ClassName", source)
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        named = inspect.isclass(cls) or inspect.isfunction(cls)
        raise ConfigError(f"{key} = {value!r} is not a method: "
                          f"{cls.__name__ if named else type(cls).__name__} is not a "
                          "subclass of mpi_privopt's Algorithm",
                          "name a class defined as class MyMethod(Algorithm) "
                          "(from mpi_privopt.methods import Algorithm)")
    faults = [f"no {m}" for m in METHOD_MEMBERS if not hasattr(cls, m)]  # declared only
    faults += [f"no {m}" for m in sorted(cls.__abstractmethods__)]  # Algorithm is an ABC
    if hasattr(cls, "name") and not (isinstance(cls.name, str) and cls.name):
        faults.append(f"name = {cls.name!r} is not a non-empty string")
    if cls.problem_kind not in PROBLEM_KINDS:
        faults.append(f"problem_kind = {cls.problem_kind!r} is not one of "
                      f"{', '.join(map(repr, PROBLEM_KINDS))}")
    if not dataclasses.is_dataclass(cls.Params):
        faults.append("Params is not a @dataclasses.dataclass")
    else:
        faults += [f"Params has a field {f.name!r}, a key of [algorithm] itself"
                   for f in dataclasses.fields(cls.Params) if f.name in _ALGORITHM_KEYS]
    if faults:
        raise ConfigError(f"{key} = {value!r}: class {cls.__name__} does not meet the "
                          f"method contract: {'; '.join(faults)}",
                          "a method defines name, summary, step(n), the property estimate "
                          "and, if it has parameters, a Params dataclass "
                          "(docs/architecture.md, \"Your own private method\")")
    if name is not None and name != cls.name:
        raise ConfigError(f"algorithm.name = {name!r}, but {key} = {value!r} names the "
                          f"method {cls.name!r}",
                          "remove algorithm.name (the class's name is used) or make them "
                          "the same")
    in_use = cls.name in PACKAGED or (cls.name in ALGORITHMS and ALGORITHMS[cls.name] is not cls)
    if in_use:
        owner = "a packaged" if cls.name in PACKAGED else "another"
        raise ConfigError(f"{key} = {value!r}: its name {cls.name!r} is taken by {owner} "
                          "method",
                          f"give {cls.__name__} a name of its own (python -m mpi_privopt "
                          "list shows the packaged ones)")
    ALGORITHMS[cls.name] = cls
    return cls.name

