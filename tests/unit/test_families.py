"""The families' tables and the lazy table the registries read them through."""
from __future__ import annotations

import sys

import pytest

from mpi_privopt.families import FAMILIES, family_namespaces, family_table
from mpi_privopt.lazy_table import LazyTable
from mpi_privopt.methods import ALGORITHMS, Algorithm
from mpi_privopt.problems.consensus.polynomial import Polynomial
from mpi_privopt.problems.consensus.polynomial_presets import PRESETS, preset_polynomial
from mpi_privopt.problems.registry import AGGREGATIVE_PROBLEMS, PROBLEMS, ProblemSpec

#: every table a family may declare (docs/architecture.md, "Method families")
TABLES = ("METHODS", "AGGREGATIVE_PROBLEMS", "CONSENSUS_PROBLEMS", "POLYNOMIAL_PRESETS")


def test_every_family_declares_only_known_tables_and_methods():
    for package, namespace in family_namespaces():
        declared = {k for k, v in namespace.items() if k.isupper() and isinstance(v, dict)}
        assert declared <= set(TABLES), f"{package}: unknown table {declared - set(TABLES)}"
        assert namespace["METHODS"], f"{package} registers no method"
    assert len(list(family_namespaces())) == len(FAMILIES)


def test_every_table_entry_imports_as_what_its_table_says():
    for name in family_table("METHODS"):
        cls = ALGORITHMS[name]
        assert issubclass(cls, Algorithm) and cls.name == name
    for name in family_table("CONSENSUS_PROBLEMS"):
        assert isinstance(PROBLEMS[name], ProblemSpec) and PROBLEMS[name].name == name
    for name in family_table("AGGREGATIVE_PROBLEMS"):
        assert callable(AGGREGATIVE_PROBLEMS[name])
    for name in family_table("POLYNOMIAL_PRESETS"):
        assert isinstance(preset_polynomial(name, 0, 0, 3), Polynomial)


def test_the_registries_list_the_families_entries_after_the_cores():
    assert list(PROBLEMS)[-1] == "singular" and list(PROBLEMS)[0] == "ridge"
    assert set(family_table("AGGREGATIVE_PROBLEMS")) <= set(AGGREGATIVE_PROBLEMS)
    assert list(PRESETS) == ["random", "gade2017"]


def test_a_lazy_entry_is_imported_at_first_lookup_only(monkeypatch):
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    table = LazyTable({"hsv": "colorsys:rgb_to_hsv"})
    assert "hsv" in table and list(table) == ["hsv"] and len(table) == 1
    assert "colorsys" not in sys.modules
    assert table["hsv"](1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert "colorsys" in sys.modules


def test_a_lazy_table_fills_once_at_first_use_and_keeps_its_order():
    calls = []

    def fill():
        calls.append(1)
        return {"b": "colorsys:rgb_to_hls"}

    table = LazyTable({"c": "colorsys:rgb_to_yiq"}, objects={"a": 1}, fill=fill)
    assert not calls
    table["d"] = 4
    assert list(table) == ["a", "c", "b", "d"] and calls == [1]
    table["b"], table["c"]
    assert list(table) == ["a", "c", "b", "d"] and calls == [1]
    del table["c"]
    assert list(table) == ["a", "b", "d"] and len(table) == 3
    with pytest.raises(KeyError):
        del table["c"]


def test_a_wrong_entry_is_a_key_error_naming_where():
    def verify(name, obj, where):
        if not isinstance(obj, int):
            raise KeyError(f"{where} is not an int")

    table = LazyTable({"pi": "math:pi", "nothing": "math:no_such_name", "sqrt": "math:sqrt"},
                      verify=verify)
    with pytest.raises(KeyError, match="math:no_such_name names nothing"):
        table["nothing"]
    with pytest.raises(KeyError, match="math:sqrt is not an int"):
        table["sqrt"]
    with pytest.raises(KeyError):
        table["absent"]
