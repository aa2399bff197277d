"""Panel (a) at the same cumulative budget, the paper's condition for Fig. 1(a): each
baseline's noise scaled so that its nominal epsilon at T equals Algorithm 1's.

Every method's pure epsilon after T iterations is a sum of ``Delta^t / b^t`` over its releases
(:func:`~.panels.budget_curve`, from the budget objects the methods book with,
:mod:`mpi_privopt.methods.chen2025.ldp_budget`), and every ``b^t`` is proportional to its
block's sigma. Scaling every sigma of an agent by ``k`` therefore divides its epsilon by
``k``, so ``k_i = eps_i(T) / eps_i^alg1(T)`` (both at their panel (a) sigma) makes the two
equal. [36] and [6] take one sigma per agent (each agent matched exactly); PDOP and [51]
take one sigma for all agents, matched on agent 1 (panel (b)'s agent; Algorithm 1's
epsilon varies by 1.5 % over the agents, so theirs is up to that much above it on the
others, :func:`matched_epsilons` says by how much).

Only the nominal accounting (every sensitivity constant C = 1, "nominal (C = 1): not a
privacy guarantee") has a finite target on the digits: Algorithm 1's derived bound
overflows (docs/reproductions/chen2025.md, "Matched budgets under the derived
accounting").

A matched run counts as **diverged** when the engine's guard stopped it, or when it ends
above its penalised objective at t = 0 (it ended worse than where it started).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from . import panels, settings

#: the baselines matched, in panel (a)'s order; Algorithm 1 (panel (a)'s runs) is the target
MATCHED = ("gt36", "pat6", "pdop26", "tvs51")
REFERENCE = "alg1"
#: the baselines whose sigma keys take one value per agent (the trackers' keys are
#: ldp-aggregative's); the others take one value for all agents
PER_AGENT = frozenset({"gt36", "pat6"})
SIGMA_KEYS = ("sigma_x", "sigma_y", "sigma_z")
#: why the derived accounting has no matched panel here (the summary's ``derived``)
NO_DERIVED = ("no matched panel under the derived accounting: Algorithm 1's derived bound "
              "on the digits overflows (unbounded), so there is no finite budget to match, "
              "and aggregative-gt and aggregative-pat refuse the derived accounting (no "
              "proof); docs/reproductions/chen2025.md")


def nominal_epsilons(section: Mapping, dataset: str, iterations: int,
                     n_agents: int = settings.RANKS) -> list[float]:
    """Every agent's nominal pure epsilon after ``iterations`` iterations of the method of
    ``section`` (an ``[algorithm]`` table) on ``dataset``: the ledger's formulas
    (:func:`~.panels.budget_curve`). inf for a method with a block in the clear."""
    from mpi_privopt.config import config_from_dict

    cfg = settings.config(dataset, dict(section), iterations=iterations,
                          eval_every=iterations, seed=0, name="calibration")
    params = config_from_dict(cfg).algorithm.params
    out = []
    for agent in range(n_agents):
        curve = panels.budget_curve(section["name"], params, iterations, agent, n_agents)
        out.append(math.inf if curve is None else float(curve[-1]))
    return out


def _scaled(value, factors: Sequence[float]):
    if isinstance(value, list):
        return [v * k for v, k in zip(value, factors)]
    return [value * k for k in factors] if len(factors) > 1 else value * factors[0]


@functools.lru_cache(maxsize=None)
def _factors(method: str, dataset: str, iterations: int) -> tuple[float, ...]:
    target = nominal_epsilons(settings.algorithm_section(REFERENCE, dataset), dataset,
                              iterations)
    own = nominal_epsilons(settings.algorithm_section(method, dataset), dataset, iterations)
    factors = tuple(o / t for o, t in zip(own, target))
    return factors if method in PER_AGENT else factors[:1]


def matched_section(method: str, dataset: str, iterations: int) -> dict:
    """The ``[algorithm]`` table of baseline ``method`` with every sigma multiplied by its
    matching factor ``k_i`` (a list per agent for :data:`PER_AGENT`, else agent 1's)."""
    if method not in MATCHED:
        raise KeyError(method)
    section = settings.algorithm_section(method, dataset)
    factors = _factors(method, dataset, iterations)
    for key in SIGMA_KEYS:
        if key in section:
            section[key] = _scaled(section[key], factors)
    return section


def factors(method: str, dataset: str, iterations: int) -> list[float]:
    """The matching factors k_i of ``method`` (one per agent, or agent 1's alone)."""
    return list(_factors(method, dataset, iterations))


def matched_epsilons(dataset: str, iterations: int) -> dict[str, list[float]]:
    """Every agent's nominal epsilon at T: Algorithm 1's (``alg1``) and each matched
    baseline's at its calibrated sigma (equal to Algorithm 1's for every agent of [36] and
    [6], for agent 1 of PDOP and [51])."""
    out = {REFERENCE: nominal_epsilons(settings.algorithm_section(REFERENCE, dataset),
                                       dataset, iterations)}
    for method in MATCHED:
        out[method] = nominal_epsilons(matched_section(method, dataset, iterations), dataset,
                                       iterations)
    return out


def diverged(metrics: Mapping[str, np.ndarray], stopped: bool) -> bool:
    """A run diverged: the engine's guard stopped it, or its last penalised objective is
    above its first (it ended worse than where it started), or is not finite."""
    objective = np.asarray(metrics["objective"], dtype=float)
    return bool(stopped or not np.isfinite(objective[-1]) or objective[-1] > objective[0])


def outcome(runs: Sequence[tuple[int, Mapping[str, np.ndarray], bool]]) -> dict:
    """One curve's matched-panel outcome from its runs ``(seed, metrics, stopped)``: how many
    diverged (and which seeds), which rose above their start at some evaluation (diverged or
    not), the first, peak and last objective and last test accuracy of every seed, and the
    mean and population std of the last values over the runs that did not diverge (None if
    all did)."""
    kept, lost = [], []
    per_seed = {}
    for seed, metrics, stopped in runs:
        if not metrics:   # stopped before rank 0 wrote any metrics: diverged, no values
            per_seed[str(seed)] = {"objective": math.nan, "test_accuracy": math.nan,
                                   "iteration": None, "diverged": True,
                                   "objective_start": math.nan, "peak_objective": math.nan}
            lost.append({})
            continue
        last = {col: float(np.asarray(metrics[col], dtype=float)[-1])
                for col in ("objective", "test_accuracy")}
        per_seed[str(seed)] = {**last, "iteration": int(metrics["iteration"][-1]),
                               "diverged": diverged(metrics, stopped),
                               "objective_start": float(metrics["objective"][0])}
        (lost if per_seed[str(seed)]["diverged"] else kept).append(last)
        objective = np.asarray(metrics["objective"], dtype=float)
        per_seed[str(seed)]["peak_objective"] = float(np.nanmax(objective))
    summary = {"runs": len(runs), "diverged": len(lost),
               "diverged_seeds": [int(s) for s, r in per_seed.items() if r["diverged"]],
               # a run may rise far above its start and come back: counted here, not above
               "rose_above_start_seeds": [int(s) for s, r in per_seed.items()
                                          if r["peak_objective"] > r["objective_start"]],
               "per_seed": per_seed}
    for col in ("objective", "test_accuracy"):
        values = np.array([r[col] for r in kept], dtype=float)
        summary[f"{col}_mean"] = float(values.mean()) if values.size else None
        summary[f"{col}_std"] = float(values.std()) if values.size else None
    return summary
