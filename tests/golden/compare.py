"""What is compared between a golden run directory and a new one.

The records in ``tests/golden/data`` were written on one machine and are read on others, so
the comparison is the one a BLAS kernel cannot break but a real change of result does:

* floating-point arrays (models, privacy figures) normwise:
  ``max|a - b| <= RTOL * max|a|`` over the whole array; an elementwise relative test would
  fail on entries that are zero up to rounding. The worst difference is printed on failure;
* metrics to ``rtol = RTOL`` elementwise (timing columns excluded);
* everything discrete exactly: shapes, integer arrays and counts (traffic bytes and
  messages, release counts), names (the conversion used on each link), which entries are
  non-finite.

Measured: another OpenBLAS kernel on the same code moves a model by at most a few 1e-16
relative; perturbing one algorithm's step by 1e-9 relative moves it by far more than
``RTOL`` (docs/architecture.md, "The golden set").
"""
import csv
import json
from pathlib import Path

import numpy as np

#: the relative tolerance of every floating-point comparison
RTOL = 1e-12
#: privacy.json link matrices
PRIVACY_MATRICES = ("epsilon", "conversion", "epsilon_tight", "epsilon_standard",
                    "epsilon_exact", "epsilon_pure", "rho", "releases")
#: per-agent privacy figures
PRIVACY_AGENT_KEYS = ("worst_observer", "worst_observer_epsilon", "all_observers_epsilon",
                      "all_observers_rho", "releases", "public_releases")
TIMING = ("elapsed_seconds",)


def normwise_difference(golden, new) -> str | None:
    """Why ``new`` is not ``golden`` under the rule above, or None when they agree.

    Integer, boolean and string data must be equal; float data normwise to ``RTOL``, with
    the same pattern of non-finite entries, which must be equal themselves.
    """
    a, b = np.asarray(golden), np.asarray(new)
    if a.shape != b.shape:
        return f"shape {a.shape} -> {b.shape}"
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating)):
        if a.dtype.kind in "OU" or b.dtype.kind in "OU":
            return None if a.tolist() == b.tolist() else "values differ"
        if np.issubdtype(b.dtype, np.floating):
            return f"dtype {a.dtype} -> {b.dtype}"
        return None if np.array_equal(a, b) else \
            f"{int(np.count_nonzero(a != b))} of {a.size} entries differ (exact)"
    if a.size == 0:
        return None
    finite_a, finite_b = np.isfinite(a), np.isfinite(b)
    if not np.array_equal(finite_a, finite_b) or not np.array_equal(a[~finite_a], b[~finite_b],
                                                                     equal_nan=True):
        return "non-finite entries differ"
    if not finite_a.any():
        return None
    scale = float(np.max(np.abs(a[finite_a])))
    worst = float(np.max(np.abs(a[finite_a] - b[finite_a])))
    if worst <= RTOL * scale:
        return None
    return (f"max abs difference {worst:.3g} against max |golden| {scale:.3g} "
            f"(relative {worst / scale if scale else float('inf'):.3g} > {RTOL:g})")


def _as_array(value):
    """A JSON value as an array: numbers and nested lists of them; None becomes NaN."""
    if isinstance(value, list) and any(isinstance(v, str) for v in np.ravel(
            np.array(value, dtype=object))):
        return np.array(value, dtype=object)
    if isinstance(value, (list, int, float)) or value is None:
        array = np.array(value, dtype=object)
        if any(v is None for v in array.ravel()):
            return np.array(np.where(array == None, np.nan, array), dtype=float)  # noqa: E711
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
               for v in array.ravel()):
            return array.astype(np.int64)
        return array.astype(float)
    return np.array(value, dtype=object)


def json_difference(golden, new) -> str | None:
    """``normwise_difference`` for JSON values: floats normwise, counts and names exact."""
    if golden is None or new is None or isinstance(golden, (str, bool, dict)):
        return None if golden == new else f"{golden!r} -> {new!r}"
    try:
        return normwise_difference(_as_array(golden), _as_array(new))
    except (ValueError, TypeError):
        return None if golden == new else "values differ"


def _metrics(path: Path) -> tuple[list[str], np.ndarray]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    columns = [c for c in rows[0] if c not in TIMING]
    return columns, np.array([[float(r[c]) for c in columns] for r in rows])


def differences(golden: Path, new: Path) -> list[str]:
    """Every way ``new`` differs from ``golden`` (empty: equal under the rule above)."""
    problems = []
    g_models, n_models = np.load(golden / "models.npz"), np.load(new / "models.npz")
    for key in g_models.files:
        if key not in n_models.files:
            problems.append(f"models.npz lacks {key}")
            continue
        why = normwise_difference(g_models[key], n_models[key])
        if why:
            problems.append(f"models.npz[{key}] differs: {why}")
    columns, g_rows = _metrics(golden / "metrics.csv")
    with open(new / "metrics.csv") as f:
        n_all = list(csv.DictReader(f))
    missing = [c for c in columns if c not in n_all[0]]
    if missing:
        problems.append(f"metrics.csv lacks columns {missing}")
    else:
        n_rows = np.array([[float(r[c]) for c in columns] for r in n_all])
        if n_rows.shape != g_rows.shape:
            problems.append(f"metrics.csv shape {g_rows.shape} -> {n_rows.shape}")
        elif not np.allclose(n_rows, g_rows, rtol=RTOL, atol=0, equal_nan=True):
            rel = np.abs(n_rows - g_rows) / np.maximum(np.abs(g_rows), np.finfo(float).tiny)
            problems.append(f"metrics.csv differs beyond rtol {RTOL:g} "
                            f"(worst relative {np.nanmax(rel):.3g})")
    g_traffic = json.loads((golden / "traffic.json").read_text())["total"]
    n_traffic = json.loads((new / "traffic.json").read_text())["total"]
    for key in ("bytes", "messages"):
        if g_traffic[key] != n_traffic[key]:
            problems.append(f"traffic {key} matrix differs")
    g_priv = json.loads((golden / "privacy.json").read_text())
    n_priv = json.loads((new / "privacy.json").read_text())
    for key in PRIVACY_MATRICES:
        if key not in g_priv["links"]:
            continue
        why = json_difference(g_priv["links"][key], n_priv["links"].get(key))
        if why:
            problems.append(f"privacy links[{key}] differs: {why}")
    if len(g_priv["agents"]) != len(n_priv["agents"]):
        problems.append("privacy agents differ in number")
    for g_agent, n_agent in zip(g_priv["agents"], n_priv["agents"]):
        for key in PRIVACY_AGENT_KEYS:
            why = json_difference(g_agent.get(key), n_agent.get(key))
            if why:
                problems.append(f"privacy agent {g_agent['agent']} {key} differs: {why}")
    for key in ("worst_link", "worst_link_epsilon"):
        why = json_difference(g_priv.get(key), n_priv.get(key))
        if why:
            problems.append(f"privacy {key} differs: {why}")
    return problems
