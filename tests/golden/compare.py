"""What is compared between a golden run directory and a new one."""
import csv
import json
from pathlib import Path

import numpy as np

#: privacy.json link matrices that must be bitwise identical
PRIVACY_MATRICES = ("epsilon", "conversion", "epsilon_tight", "epsilon_standard",
                    "epsilon_exact", "epsilon_pure", "rho", "releases")
#: per-agent privacy figures that must be bitwise identical
PRIVACY_AGENT_KEYS = ("worst_observer", "worst_observer_epsilon", "all_observers_epsilon",
                      "all_observers_rho", "releases", "public_releases")
TIMING = ("elapsed_seconds",)


def _metrics(path: Path) -> tuple[list[str], np.ndarray]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    columns = [c for c in rows[0] if c not in TIMING]
    return columns, np.array([[float(r[c]) for c in columns] for r in rows])


def differences(golden: Path, new: Path) -> list[str]:
    """Every way ``new`` differs from ``golden`` (empty: equal)."""
    problems = []
    g_models, n_models = np.load(golden / "models.npz"), np.load(new / "models.npz")
    for key in g_models.files:
        if key not in n_models.files:
            problems.append(f"models.npz lacks {key}")
        elif not np.array_equal(g_models[key], n_models[key]):
            problems.append(f"models.npz[{key}] differs: max abs "
                            f"{np.max(np.abs(g_models[key] - n_models[key])):.3g}")
    columns, g_rows = _metrics(golden / "metrics.csv")
    with open(new / "metrics.csv") as f:
        n_all = list(csv.DictReader(f))
    missing = [c for c in columns if c not in n_all[0]]
    if missing:
        problems.append(f"metrics.csv lacks columns {missing}")
    else:
        n_rows = np.array([[float(r[c]) for c in columns] for r in n_all])
        if n_rows.shape != g_rows.shape or not np.allclose(n_rows, g_rows, rtol=1e-12, atol=0):
            problems.append("metrics.csv differs beyond rtol 1e-12")
    g_traffic = json.loads((golden / "traffic.json").read_text())["total"]
    n_traffic = json.loads((new / "traffic.json").read_text())["total"]
    for key in ("bytes", "messages"):
        if g_traffic[key] != n_traffic[key]:
            problems.append(f"traffic {key} matrix differs")
    g_priv = json.loads((golden / "privacy.json").read_text())
    n_priv = json.loads((new / "privacy.json").read_text())
    for key in PRIVACY_MATRICES:
        if g_priv["links"][key] != n_priv["links"].get(key):
            problems.append(f"privacy links[{key}] differs")
    for g_agent, n_agent in zip(g_priv["agents"], n_priv["agents"]):
        for key in PRIVACY_AGENT_KEYS:
            if g_agent[key] != n_agent.get(key):
                problems.append(f"privacy agent {g_agent['agent']} {key} differs: "
                                f"{g_agent[key]!r} -> {n_agent.get(key)!r}")
    for key in ("worst_link", "worst_link_epsilon"):
        if g_priv[key] != n_priv.get(key):
            problems.append(f"privacy {key} differs")
    return problems
