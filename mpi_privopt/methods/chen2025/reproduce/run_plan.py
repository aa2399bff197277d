"""Every run of the Chen & Wang reproduction, from the settings of each panel
(:mod:`.settings`) and the matched-budget panel's calibration (:mod:`.matched`)."""
from __future__ import annotations

from .matched import MATCHED, matched_section
from .settings import (DELTAS, LAMBDA_PENS, METHODS, Run, algorithm_section, config,
                       delta_section)

__all__ = ["plan"]


def plan(dataset: str, runs: int, iterations: int, eval_every: int) -> list[Run]:
    """Every run of the reproduction: panel (a)'s six methods, the matched-budget panel's
    four baselines (panel "m", :mod:`.matched`; its Algorithm 1 is panel (a)'s), (c)'s
    deltas, (d)'s lambda_pens (seeds 0..runs-1 each; the panel (d) run at the paper's
    lambda_pen is its own run)."""
    common = {"iterations": iterations, "eval_every": eval_every}
    tag = f"{dataset}/T{iterations}-e{eval_every}"
    out = []
    for seed in range(runs):
        for method in METHODS:
            out.append(Run(f"{tag}/a/{method}/seed{seed}", "a", method, seed,
                           config(dataset, algorithm_section(method, dataset), seed=seed,
                                  name=method, **common),
                           diagnostics=method == "alg1"))
        for method in MATCHED:
            out.append(Run(f"{tag}/m/{method}/seed{seed}", "m", method, seed,
                           config(dataset, matched_section(method, dataset, iterations),
                                  seed=seed, name=f"{method}-matched", **common)))
        for delta in DELTAS:
            out.append(Run(f"{tag}/c/delta{delta:g}/seed{seed}", "c", f"{delta:g}", seed,
                           config(dataset, delta_section(delta, dataset), seed=seed,
                                  name=f"delta{delta:g}", **common)))
        for pen in LAMBDA_PENS[dataset]:
            out.append(Run(f"{tag}/d/lambda{pen:g}/seed{seed}", "d", f"{pen:g}", seed,
                           config(dataset, algorithm_section("alg1", dataset),
                                  lambda_pen=pen, seed=seed, name=f"lambda{pen:g}", **common)))
    return out
