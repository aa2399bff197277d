"""The ``[problem.options]`` table shared by every problem that takes options."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from mpi_privopt.errors import ConfigError

__all__ = ["refuse_unknown_options"]


def refuse_unknown_options(options: Mapping[str, object], known: Iterable[str],
                           problem: str) -> None:
    """ConfigError naming every key of ``options`` that ``problem`` does not take.

    A misspelt option would otherwise be silently ignored and the run would use the
    default in its place.
    """
    known = list(known)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(f"unknown [problem.options] key(s) {', '.join(unknown)} for {problem}",
                          f"valid keys: {', '.join(known)}")
