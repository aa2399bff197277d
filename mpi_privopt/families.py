"""The method families shipped in this package, and the tables each declares.

A family is a package ``mpi_privopt.methods.NAME`` whose ``__init__`` holds tables of
strings, its one registration (docs/architecture.md, "Method families"):

``METHODS``
    ``algorithm.name -> "module:Class"``.
``AGGREGATIVE_PROBLEMS``
    ``problem.name -> "module:builder"``, the aggregative problems that are the family's
    own (a builder ``builder(options, rank, n_agents, seed) -> AggregativeObjective``).
``POLYNOMIAL_PRESETS``
    ``problem.preset -> "module:function"``, the family's polynomial objectives (a function
    ``preset(seed, agent, features) -> Polynomial``).
``ATTACKED``, ``ATTACK``
    the non-private methods its attack runs on, and ``"module:run_attack"``.

Module paths are relative to the family's package. The tables are read by name, at
first use, so the core (the method and problem registries) imports no family: adding a
family is one package and one entry in :data:`FAMILIES`.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator

__all__ = ["FAMILIES", "family_namespaces", "family_table"]

#: the method families shipped in this package, in the order ``list`` shows them
FAMILIES = ("baselines", "gauthier2024", "gade2017", "chen2025", "chan2023")

#: the package that holds the families
METHODS_PACKAGE = "mpi_privopt.methods"


def family_namespaces() -> Iterator[tuple[str, dict]]:
    """``(package name, its namespace)`` of every family, in :data:`FAMILIES` order."""
    for family in FAMILIES:
        package = f"{METHODS_PACKAGE}.{family}"
        yield package, vars(importlib.import_module(package))


def family_table(key: str) -> dict[str, str]:
    """One table (``key``) over every family: ``name -> "package.module:attribute"``."""
    return {name: f"{package}.{where}" for package, namespace in family_namespaces()
            for name, where in namespace.get(key, {}).items()}
