"""The methods, one package per family: ``ALGORITHMS[name]`` is the class for ``algorithm.name``.

Each family package (:data:`FAMILIES`) registers its methods once, in its ``METHODS``
table (``algorithm.name -> "module:Class"``); a method's module is imported when its name
is first looked up (:class:`~.contract.Registry`), so a rank running one method loads only
that method's modules and libraries (scipy, networkx where it needs them). The shared core
(:mod:`.contract`, :mod:`.steps`, :mod:`.perturbed`) knows no method by name; a family
imports the core and no other family (``baselines`` excepted: the papers' methods build on
DGD and linearized ADMM). Adding a family is one package and one entry in
:data:`FAMILIES`.
"""
import importlib

from .contract import ALGORITHMS, Algorithm, Registry, register

#: the method families shipped in this package, in the order ``list`` shows them
FAMILIES = ("baselines", "gauthier2024", "gade2017", "chen2025", "chan2023")


def _families():
    """``(package name, its namespace)`` of every family, in :data:`FAMILIES` order."""
    for family in FAMILIES:
        package = f"{__name__}.{family}"
        yield package, vars(importlib.import_module(package))


def _family_methods() -> dict[str, str]:
    """``algorithm.name -> "package.module:Class"`` over every family."""
    return {name: f"{package}.{where}" for package, table in _families()
            for name, where in table["METHODS"].items()}


#: ``algorithm.name -> "package.module:Class"`` of every method shipped in the package (a
#: user's own method, ``algorithm.module``, may not take one of these names)
PACKAGED = _family_methods()
ALGORITHMS.add_lazy(PACKAGED)



def attack_on(name: str):
    """The attack a family runs on the non-private method ``name`` (its ``ATTACK``, a
    callable ``run_attack(cfg, receivers, target, out, comm, progress)``), or None.

    The family's attack is application code (it runs the engine); it is found here by
    name, so the core's ``audit`` command imports no family.
    """
    for package, table in _families():
        if name in table.get("ATTACKED", ()):
            module, _, attr = table["ATTACK"].partition(":")
            return vars(importlib.import_module(f"{package}.{module}"))[attr]
    return None


def attacked_methods() -> tuple[str, ...]:
    """Every method some family can attack (:func:`attack_on`)."""
    return tuple(name for _, table in _families() for name in table.get("ATTACKED", ()))


__all__ = ["ALGORITHMS", "FAMILIES", "PACKAGED", "Algorithm", "Registry", "attack_on",
           "attacked_methods", "register"]
