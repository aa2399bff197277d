"""How numbers and names are shown to a person on the terminal.

Every command's printed output goes through here; files on disk (JSON, CSV) keep full
precision. The rules:

* a number has 4 significant digits (:func:`number`), Python's ``g`` style: ``0.1852``,
  ``1430``, ``2.615e-20``; integers are shown whole;
* a privacy loss (epsilon, zCDP rho, a per-release budget) is rounded **up** when shown
  with fewer digits (:func:`loss`): a loss must never look smaller than it is; a lower
  bound (an audit's "epsilon >=") is rounded down (:func:`lower_bound`), so that the
  printed claim stays true; an infinite loss (no DP guarantee) is shown as ``unbounded``,
  never ``inf`` (nor 0);
* a value given by the user (a config key) is shown as given (:func:`exact`);
* durations (:func:`duration`), byte sizes (:func:`byte_size`), lists (:func:`sequence`)
  and ``key = value`` mappings (:func:`mapping`) have one form each;
* a warning is one line, ``mpi_privopt: warning: ...``, without the file and line that
  raised it (:func:`install_warning_format`).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from numbers import Integral, Real
from typing import Any

#: significant digits of a number shown to a person
DIGITS = 4
#: words of a report key that name a privacy loss (shown rounded up); "delta" is not one
#: of them: the token method's "Delta" is a sensitivity radius
LOSS_WORDS = frozenset({"epsilon", "eps", "rho", "phi"})
#: how an infinite privacy loss is shown (:func:`loss`)
UNBOUNDED = "unbounded"
#: a list longer than this is shown as its range
LIST_ITEMS = 8


def _rounded(value: float, digits: int, rounding: str) -> float:
    """``value`` rounded to ``digits`` significant digits in the direction ``rounding``.

    The float's shortest decimal form (``repr``) is rounded, so 0.1 stays 0.1 rather than
    becoming 0.1001 from its binary tail 0.1000000000000000055...
    """
    if value == 0 or not math.isfinite(value):
        return value
    exact = Decimal(repr(float(value)))
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return float(exact.quantize(quantum, rounding=rounding))


def _shown(value: Real, digits: int, rounding: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Integral):
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    # g rounds to nearest; the value is already a decimal of at most `digits` digits
    # (one more when rounding carried, 9.9995 -> 10.00), which g then shows unchanged
    return f"{_rounded(value, digits, rounding):.{digits}g}"


def number(value: Real, digits: int = DIGITS) -> str:
    """A measured number to ``digits`` significant digits (nearest): ``0.1852``."""
    return _shown(value, digits, ROUND_HALF_EVEN)


def loss(value: Real, digits: int = DIGITS) -> str:
    """A privacy loss rounded up to ``digits`` significant digits: 8.5552 is ``8.556``.

    An infinite loss (messages without a DP guarantee) is ``unbounded``.
    """
    if isinstance(value, Real) and not isinstance(value, bool) and math.isinf(value) \
            and value > 0:
        return UNBOUNDED
    return _shown(value, digits, ROUND_CEILING)


def lower_bound(value: Real, digits: int = DIGITS) -> str:
    """A lower bound rounded down, so that "at least x" stays true: 0.34567 is ``0.3456``."""
    return _shown(value, digits, ROUND_FLOOR)


def exact(value: Any) -> str:
    """A value as given (a config key): floats in their shortest form, ``1.0`` as ``1``,
    booleans and lists as TOML writes them, strings bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Integral):
        return str(int(value))
    if isinstance(value, Real):
        text = repr(float(value))
        return text[:-2] if text.endswith(".0") else text
    if isinstance(value, Mapping):
        return "{" + mapping(value, exact) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(exact(v) for v in value) + "]"
    return str(value)


def is_loss(key: str) -> bool:
    """Whether a report key names a privacy loss (``epsilon_T``, ``local_rho``, ``phi^(1)``)."""
    words = key.replace("^", " ").replace("(", " ").replace("_", " ").replace("-", " ").split()
    return any(word.lower() in LOSS_WORDS for word in words)


def sequence(values: Iterable[Any], show: Callable[[Any], str] = number) -> str:
    """A list for a person: ``1430, 1431, 1429``; a long one as its range and length."""
    values = list(values)
    if len(values) <= LIST_ITEMS:
        return ", ".join(show(v) for v in values)
    reals = [v for v in values if isinstance(v, Real)]
    if len(reals) == len(values):
        return f"{show(min(reals))} to {show(max(reals))} ({len(values)} values)"
    return ", ".join(show(v) for v in values[:LIST_ITEMS]) + f", ... ({len(values)} values)"


def value(item: Any, key: str = "") -> str:
    """Any value of a report (a run's ``algorithm_report`` entry) for a person.

    Numbers get 4 significant digits, rounded up when ``key`` names a privacy loss
    (:func:`is_loss`); lists are :func:`sequence`, mappings :func:`mapping`; ``None`` is
    ``none``; strings are shown as they are.
    """
    show = loss if is_loss(key) else number
    if item is None:
        return "none"
    if isinstance(item, Real):
        return show(item)
    if isinstance(item, Mapping):
        return mapping(item, lambda v, k="": value(v, k))
    if isinstance(item, (list, tuple)):
        return sequence(item, lambda v: value(v, key))
    return str(item)


def mapping(items: Mapping[str, Any], show: Callable[..., str] = exact, *,
            separator: str = ", ") -> str:
    """``key = value`` pairs on one line; ``show(value)`` formats each value (with the key
    as a second argument when it takes one, as :func:`value` does)."""
    def shown(k: str, v: Any) -> str:
        try:
            return show(v, k)
        except TypeError:
            return show(v)
    return separator.join(f"{k} = {shown(k, v)}" for k, v in items.items())


def label(key: str) -> str:
    """A report key as a label: underscores become spaces (``local_rho``: ``local rho``)."""
    return key.replace("_", " ")


def duration(seconds: float) -> str:
    """A duration: ``383 ms``, ``30.31 s``, ``2 min 5 s``, ``1 h 3 min``."""
    if not math.isfinite(seconds):
        return f"{seconds} s"
    # the unit is chosen after rounding: 0.99996 s is 1 s, not 1000 ms
    if _rounded(seconds * 1e3, DIGITS, ROUND_HALF_EVEN) < 1000:
        return f"{number(seconds * 1e3)} ms"
    if _rounded(seconds, DIGITS, ROUND_HALF_EVEN) < 60:
        return f"{number(seconds)} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min"


def counted(count: int, noun: str) -> str:
    """``count`` with ``noun``, plural unless it is one: ``1 agent``, ``8 agents``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def byte_size(count: float) -> str:
    """A byte count in binary units: ``512 B``, ``12.5 KiB``, ``16.03 MiB``."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024:
            return f"{int(round(size))} B" if unit == "B" else f"{number(size)} {unit}"
        size /= 1024
    return f"{number(size)} TiB"


def mpi_library(vendor: str, version: Iterable[int], standard: Iterable[int]) -> str:
    """An MPI library by name: ``MPICH 5.0.2 (MPI 5.0)``."""
    return (f"{vendor} {'.'.join(map(str, version))} "
            f"(MPI {'.'.join(map(str, standard))})")


def format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as one line for a person, without the file and line that raised it.

    The package's own warnings read ``mpi_privopt: warning: ...``; a library's name their
    category, which says where they come from.
    """
    if filename and "mpi_privopt" in filename.replace("\\", "/").split("/"):
        return f"mpi_privopt: warning: {message}\n"
    return f"mpi_privopt: warning ({category.__name__} from a library): {message}\n"


def install_warning_format() -> None:
    """Show every warning of this process as :func:`format_warning` does."""
    warnings.formatwarning = format_warning
