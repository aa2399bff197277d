"""Figures (PNG) and the CSV behind each, read from the finished runs of :mod:`.jobs`."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import finish_figure, log, pyplot
from .jobs import CLIP, DELTA, ETA, MATCH_ITERATIONS, NON_PRIVATE, RHO, TAU, TOPOLOGY_SEED

LABELS = {
    "zcdp-nfl": "zCDP-NFL",
    "zcdp-nfl-tight": "zCDP-NFL (tight conversion)",
    "zcdp-nfl-exact": "zCDP-NFL (exact conversion)",
    "eps-delta-nfl": "(eps,delta)DP-NFL",
    "zcdp-grad-nfl": "zCDP-grad-NFL",
    "p-admm": "P-ADMM",
    "zcdp-nfl-const": "zCDP-NFL, constant eta (ablation)",
    "admm": "non-private linearised ADMM",
    "dgd": "non-private subgradient (grad step)",
    "exact-admm": "non-private exact ADMM",
}

PROBLEM_TITLES = {"elastic-net": "elastic net", "lad": "least absolute deviation",
                  "ridge": "ridge regression"}


def group(runs: list[dict], problem: str, method: str, epsilon: float) -> list[dict]:
    return [r for r in runs if r["spec"].problem == problem and r["spec"].method == method
            and r["spec"].epsilon == epsilon]


def worst_link(privacy: dict, column: str) -> float:
    values = [v for row in privacy["links"][column] for v in row if v is not None]
    return max(values) if values else math.nan


def learning_figure(runs, problem, methods, epsilons, out: Path, name: str, T: int) -> list[dict]:
    plt = pyplot()
    rows = []
    fig, axes = plt.subplots(1, len(epsilons), figsize=(5.2 * len(epsilons), 4.2), squeeze=False)
    for ax, eps in zip(axes[0], epsilons):
        for method in methods:
            members = group(runs, problem, method,
                            math.inf if method in NON_PRIVATE else eps)
            members = [m for m in members if len(m["metrics"]["iteration"]) == T + 1]
            if not members:
                continue
            curves = np.array([m["metrics"]["error"] for m in members])
            it = members[0]["metrics"]["iteration"]
            mean, lo, hi = curves.mean(0), curves.min(0), curves.max(0)
            style = "--" if method in NON_PRIVATE else "-"
            ax.semilogy(it, mean, style, label=LABELS[method], lw=1.4)
            ax.fill_between(it, lo, hi, alpha=0.18)
            for i, n in enumerate(it):
                rows.append({"epsilon": eps, "method": method, "iteration": int(n),
                             "mean": float(mean[i]), "min": float(lo[i]), "max": float(hi[i]),
                             "runs": len(members)})
        ax.set_title(f"{PROBLEM_TITLES[problem]}, epsilon = {eps:g}, delta = {DELTA:g}")
        ax.set_xlabel("iteration n")
        ax.set_ylabel("normalised error sum_k ||w_k - w_c||^2 / ||w_c||^2")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    finish_figure(fig, out / f"{name}.png", rows)
    return rows


def tradeoff_figure(runs, problem, methods, epsilons, out: Path, name: str,
                    title: str = "") -> list[dict]:
    plt = pyplot()
    rows = []
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    for method in methods:
        xs, mean, lo, hi = [], [], [], []
        for eps in epsilons:
            members = group(runs, problem, method, eps)
            if not members:
                continue
            final = np.array([m["summary"]["final_error"] for m in members])
            tight = [worst_link(m["privacy"], "epsilon_tight") for m in members]
            exact = [worst_link(m["privacy"], "epsilon_exact") for m in members]
            standard = [worst_link(m["privacy"], "epsilon_standard") for m in members]
            xs.append(eps)
            mean.append(final.mean()), lo.append(final.min()), hi.append(final.max())
            rows.append({"problem": problem, "method": method,
                         "conversion": members[0]["spec"].conversion, "epsilon": eps,
                         "mean_final_error": float(final.mean()),
                         "min": float(final.min()), "max": float(final.max()),
                         "median": float(np.median(final)), "runs": len(members),
                         "ledger_epsilon_tight": float(max(tight)),
                         "ledger_epsilon_standard": float(max(standard)),
                         "ledger_epsilon_exact": float(max(exact)),
                         "launched_privacy_epsilon": members[0]["spec"].epsilon})
        if xs:
            ax.loglog(xs, mean, "o-", label=LABELS[method], lw=1.4, ms=4)
            ax.fill_between(xs, lo, hi, alpha=0.18)
    ax.set_xlabel(f"total privacy budget epsilon per agent (delta = {DELTA:g}, T iterations)")
    ax.set_ylabel("normalised error after T iterations")
    ax.set_title(title or f"{PROBLEM_TITLES[problem]}: error vs budget")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    finish_figure(fig, out / f"{name}.png", rows)
    return rows


def tuning_figure(out: Path, runs: list[dict], steps: dict, rows: list[dict]) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.2))
    for ax, problem in zip(axes, ("elastic-net", "lad")):
        for r in runs:
            spec = r["spec"]
            if spec.problem != problem:
                continue
            m = r["metrics"]
            it, err = m["iteration"][:3 * MATCH_ITERATIONS], m["error"][:3 * MATCH_ITERATIONS]
            if spec.method == "admm":
                ax.semilogy(it, err, "k-", lw=2.2, label="zCDP-NFL, noise-free")
            else:
                chosen = spec.step == steps[problem]
                ax.semilogy(it, err, "-" if chosen else ":", lw=1.8 if chosen else 1.0,
                            label=f"zCDP-grad-NFL step {spec.step:g}"
                            + (" (chosen)" if chosen else ""))
        ax.axvline(MATCH_ITERATIONS, color="grey", lw=0.8)
        ax.set_title(f"{PROBLEM_TITLES[problem]}: initial speed, noise-free")
        ax.set_xlabel("iteration n")
        ax.set_ylabel("normalised error")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    finish_figure(fig, out / "tuning.png", rows)


def conversion_rows(epsilons, T: int) -> list[dict]:
    """Noise of zCDP-NFL under each conversion at each budget (sigma/Delta at n = 1 and T)."""
    from ...privacy.calibration import (calibrate_phi1, calibrate_zcdp_total,
                                       geometric_zcdp_schedule, noise_multipliers)

    rows = []
    for eps in epsilons:
        for conversion in ("standard", "tight", "exact"):
            phi1 = calibrate_phi1(eps, DELTA, T, TAU, conversion)
            multipliers = noise_multipliers(geometric_zcdp_schedule(phi1, TAU, T))
            rows.append({"epsilon": eps, "conversion": conversion,
                         "Phi": calibrate_zcdp_total(eps, DELTA, conversion), "phi1": phi1,
                         "sigma_over_delta_n1": float(multipliers[0]),
                         "sigma_over_delta_nT": float(multipliers[-1])})
    return rows


def check_exact_runs(runs: list[dict]) -> None:
    worst = 0.0
    for r in runs:
        if r["spec"].method == "zcdp-nfl-exact":
            got = worst_link(r["privacy"], "epsilon_exact")
            worst = max(worst, abs(got - r["spec"].epsilon) / r["spec"].epsilon)
    if worst > 1e-6:
        raise RuntimeError(f"an exact-conversion run's ledger epsilon is off its budget by "
                           f"{worst:.3g} (relative)")
    log(f"  exact-conversion runs: ledger exact epsilon equals the budget (rel. error {worst:.1e})")


def performance_rows(runs: list[dict]) -> list[dict]:
    rows = []
    for r in runs:
        s, spec = r["summary"], r["spec"]
        rows.append({"key": spec.key, "problem": spec.problem, "method": spec.method,
                     "conversion": spec.conversion, "epsilon": spec.epsilon, "seed": spec.seed,
                     "final_error": s["final_error"], "final_objective_gap":
                     s["final_objective_gap"], "worst_link_epsilon": s["worst_link_epsilon"],
                     "ranks": s["ranks"], "edges": s["edges"], "iterations": s["iterations"],
                     "wall_seconds": s["wall_seconds"], "bytes_total": s["bytes_total"],
                     "run_dir": str(r["path"])})
    return rows


def summarise(out: Path, tables: dict[str, list[dict]], steps: dict, args, seconds: float) -> dict:
    from ...results import write_json

    summary = {"ranks": args.ranks, "runs": args.runs, "iterations": args.iterations,
               "epsilons": args.epsilons, "delta": DELTA, "tau": TAU, "clip": CLIP,
               "rho": RHO, "eta": ETA, "grad_steps": steps, "topology_seed": TOPOLOGY_SEED,
               "seconds_this_invocation": seconds, "final_error": {}}
    for name, rows in tables.items():
        for row in rows:
            key = f"{name}|{row['method']}|{row['epsilon']:g}"
            summary["final_error"][key] = row["mean_final_error"]
    write_json(out / "summary.json", summary)
    return summary
