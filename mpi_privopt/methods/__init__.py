"""The methods, one package per family: ``ALGORITHMS[name]`` is the class for ``algorithm.name``.

Each family package (:data:`FAMILIES`) registers its methods once, in its ``METHODS``
table (``algorithm.name -> "module:Class"``); a method's module is imported when its name
is first looked up (:class:`~.contract.Registry`), so a rank running one method loads only
that method's modules and libraries (scipy, networkx where it needs them). The shared core
(:mod:`.contract`, :mod:`.steps`, :mod:`.perturbed`) knows no method by name; a family
imports the core and no other family (``baselines`` excepted: the papers' methods build on
DGD and linearized ADMM). Adding a family is one package and one entry in
:data:`~mpi_privopt.families.FAMILIES` (:mod:`mpi_privopt.families` reads the tables).
"""
from ..families import FAMILIES, family_namespaces, family_table
from ..lazy_table import import_named
from .contract import ALGORITHMS, Algorithm, Registry, register

#: ``algorithm.name -> "package.module:Class"`` of every method shipped in the package (a
#: user's own method, ``algorithm.module``, may not take one of these names)
PACKAGED = family_table("METHODS")
ALGORITHMS.add_lazy(PACKAGED)


def attack_on(name: str):
    """The attack a family runs on the non-private method ``name`` (its ``ATTACK``, a
    callable ``run_attack(cfg, receivers, target, out, comm, progress)``), or None.

    The family's attack is application code (it runs the engine); it is found here by
    name, so the core's ``audit`` command imports no family.
    """
    for package, table in family_namespaces():
        if name in table.get("ATTACKED", ()):
            return import_named(f"{package}.{table['ATTACK']}")
    return None


def attacked_methods() -> tuple[str, ...]:
    """Every method some family can attack (:func:`attack_on`)."""
    return tuple(name for _, table in family_namespaces() for name in table.get("ATTACKED", ()))


__all__ = ["ALGORITHMS", "FAMILIES", "PACKAGED", "Algorithm", "Registry", "attack_on",
           "attacked_methods", "register"]
