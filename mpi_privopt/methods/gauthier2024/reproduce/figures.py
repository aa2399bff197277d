"""Figures (PNG) and the CSV behind each, read from the finished runs of :mod:`.jobs`.

Each figure is drawn from the rows of its CSV (``draw_*``), so that ``reproduce gauthier2024
--redraw`` draws the committed figures again from them (:func:`redraw`).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mpi_privopt.reproduce import finish_figure, log, pyplot, read_csv, save_figures, write_csv
from mpi_privopt.reproduce._style import Palette, Style, figure_legend, panel_legend, sweep_palette, tidy
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
#: one colour and marker per method in every figure; the non-private versions dashed
PALETTE = Palette({
    "zcdp-nfl": Style("tab:blue", "o"), "zcdp-nfl-tight": Style("tab:cyan", "s"),
    "zcdp-nfl-exact": Style("tab:purple", "D"), "eps-delta-nfl": Style("tab:orange", "^"),
    "zcdp-grad-nfl": Style("tab:green", "v"), "p-admm": Style("tab:brown", "P"),
    "zcdp-nfl-const": Style("tab:olive", "X"), "admm": Style("tab:red", "<", "--"),
    "dgd": Style("tab:pink", ">", "--"), "exact-admm": Style("tab:gray", "h", "--"),
})

PROBLEM_TITLES = {"elastic-net": "elastic net", "lad": "least absolute deviation",
                  "ridge": "ridge regression"}


def group(runs: list[dict], problem: str, method: str, epsilon: float) -> list[dict]:
    return [r for r in runs if r["spec"].problem == problem and r["spec"].method == method
            and r["spec"].epsilon == epsilon]


def worst_link(privacy: dict, column: str) -> float:
    values = [v for row in privacy["links"][column] for v in row if v is not None]
    return max(values) if values else math.nan


def learning_rows(runs, problem, methods, epsilons, T: int) -> list[dict]:
    """Normalised error per iteration: mean, min and max over the runs of each method at
    each budget (the non-private runs repeated under every budget)."""
    rows = []
    for eps in epsilons:
        for method in methods:
            members = group(runs, problem, method,
                            math.inf if method in NON_PRIVATE else eps)
            members = [m for m in members if len(m["metrics"]["iteration"]) == T + 1]
            if not members:
                continue
            curves = np.array([m["metrics"]["error"] for m in members])
            it = members[0]["metrics"]["iteration"]
            mean, lo, hi = curves.mean(0), curves.min(0), curves.max(0)
            for i, n in enumerate(it):
                rows.append({"epsilon": eps, "method": method, "iteration": int(n),
                             "mean": float(mean[i]), "min": float(lo[i]), "max": float(hi[i]),
                             "runs": len(members)})
    return rows


def _methods(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["method"] for r in rows))


def draw_learning(rows: list[dict], problem: str):
    """Normalised error against iterations, one panel per budget (mean, band min-max)."""
    plt = pyplot()
    epsilons = sorted({r["epsilon"] for r in rows})
    fig, axes = plt.subplots(1, len(epsilons), figsize=(5.2 * len(epsilons), 4.2), squeeze=False)
    for ax, eps in zip(axes[0], epsilons):
        for method in _methods(rows):
            mine = [r for r in rows if r["epsilon"] == eps and r["method"] == method]
            if not mine:
                continue
            it = [r["iteration"] for r in mine]
            if max(r["runs"] for r in mine) > 1:
                PALETTE.band(ax, it, [r["min"] for r in mine], [r["max"] for r in mine], method)
            PALETTE.plot(ax, it, [r["mean"] for r in mine], method, LABELS[method])
        ax.set_yscale("log")
        ax.set_title(f"{PROBLEM_TITLES[problem]}, epsilon = {eps:g}, delta = {DELTA:g}")
        ax.set_xlabel("iteration n")
        ax.set_ylabel("normalised error sum_k ||w_k - w_c||^2 / ||w_c||^2")
        ax.grid(True, which="both", alpha=0.3)
        tidy(ax)
    figure_legend(fig)
    return fig


def learning_title(rows: list[dict]) -> str:
    runs = max((r["runs"] for r in rows), default=1)
    return ("one run per curve" if runs == 1
            else f"mean over {runs} runs per curve, band: min-max")


def learning_figure(runs, problem, methods, epsilons, out: Path, name: str, T: int) -> list[dict]:
    rows = learning_rows(runs, problem, methods, epsilons, T)
    finish_figure(draw_learning(rows, problem), out / f"{name}.png", rows, learning_title(rows))
    return rows


def tradeoff_rows(runs, problem, methods, epsilons) -> list[dict]:
    """Error after T iterations per method and budget, with each run's ledger epsilons."""
    rows = []
    for method in methods:
        for eps in epsilons:
            members = group(runs, problem, method, eps)
            if not members:
                continue
            final = np.array([m["summary"]["final_error"] for m in members])
            tight = [worst_link(m["privacy"], "epsilon_tight") for m in members]
            exact = [worst_link(m["privacy"], "epsilon_exact") for m in members]
            standard = [worst_link(m["privacy"], "epsilon_standard") for m in members]
            rows.append({"problem": problem, "method": method,
                         "conversion": members[0]["spec"].conversion, "epsilon": eps,
                         "mean_final_error": float(final.mean()),
                         "min": float(final.min()), "max": float(final.max()),
                         "median": float(np.median(final)), "runs": len(members),
                         "ledger_epsilon_tight": float(max(tight)),
                         "ledger_epsilon_standard": float(max(standard)),
                         "ledger_epsilon_exact": float(max(exact)),
                         "launched_privacy_epsilon": members[0]["spec"].epsilon})
    return rows


def draw_tradeoff(rows: list[dict], problem: str, title: str = ""):
    """Error after T iterations against the budget, one curve per method (band min-max)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    for method in _methods(rows):
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["epsilon"])
        xs = [r["epsilon"] for r in mine]
        if max(r["runs"] for r in mine) > 1:
            PALETTE.band(ax, xs, [r["min"] for r in mine], [r["max"] for r in mine], method)
        # every budget is marked (they are few)
        PALETTE.plot(ax, xs, [r["mean_final_error"] for r in mine], method, LABELS[method],
                     markevery=None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"total privacy budget epsilon per agent (delta = {DELTA:g}, T iterations)")
    ax.set_ylabel("normalised error after T iterations")
    ax.set_title(title or f"{PROBLEM_TITLES[problem]}: error vs budget")
    ax.grid(True, which="both", alpha=0.3)
    tidy(ax)
    figure_legend(fig, ncol=2)
    return fig


def tradeoff_figure(runs, problem, methods, epsilons, out: Path, name: str,
                    title: str = "") -> list[dict]:
    rows = tradeoff_rows(runs, problem, methods, epsilons)
    finish_figure(draw_tradeoff(rows, problem, title), out / f"{name}.png", rows)
    return rows


def tuning_curves(runs: list[dict]) -> list[dict]:
    """The noise-free curves of the step matching (``tuning_curves.csv``): normalised error
    per iteration of zcdp-nfl ("admm") and of each step of zcdp-grad-nfl ("dgd")."""
    return [{"problem": r["spec"].problem, "method": r["spec"].method,
             "step": "" if r["spec"].step is None else r["spec"].step,
             "iteration": int(n), "error": float(e)}
            for r in runs for n, e in zip(r["metrics"]["iteration"], r["metrics"]["error"])]


def draw_tuning(curves: list[dict], table: list[dict]):
    """The step matching's first iterations: noise-free zCDP-NFL (its colour, as the
    non-private linearised ADMM it is) against zCDP-grad-NFL at each constant step (shades
    of its colour; the chosen step in its own style, thick)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.4))
    shown = 3 * MATCH_ITERATIONS
    for ax, problem in zip(axes, ("elastic-net", "lad")):
        chosen = {r["step"] for r in table if r["problem"] == problem and r["chosen"] in
                  (True, "True")}
        steps = sorted({r["step"] for r in curves if r["problem"] == problem
                        and r["method"] == "dgd"})
        shades = sweep_palette([f"{s:g}" for s in steps], "Greens_r")
        for method, step in [("admm", None)] + [("dgd", s) for s in steps]:
            mine = [r for r in curves if r["problem"] == problem and r["method"] == method
                    and (step is None or r["step"] == step) and r["iteration"] <= shown]
            it, err = [r["iteration"] for r in mine], [r["error"] for r in mine]
            if method == "admm":
                PALETTE.plot(ax, it, err, "admm", "zCDP-NFL, noise-free (= linearised ADMM)",
                             linewidth=2.4)
            elif step in chosen:
                PALETTE.plot(ax, it, err, "zcdp-grad-nfl",
                             f"zCDP-grad-NFL step {step:g} (chosen)", linewidth=2.4,
                             linestyle="-")
            else:
                shades.plot(ax, it, err, f"{step:g}", f"zCDP-grad-NFL step {step:g}",
                            linestyle=":", linewidth=1.2)
        ax.axvline(MATCH_ITERATIONS, color="grey", lw=0.8, label="_matched over 1..20")
        ax.set_yscale("log")
        ax.set_title(f"{PROBLEM_TITLES[problem]}: initial speed, noise-free\n"
                     f"(matched over iterations 1..{MATCH_ITERATIONS}, left of the grey line)",
                     fontsize=10)
        ax.set_xlabel("iteration n")
        ax.set_ylabel("normalised error")
        ax.grid(True, which="both", alpha=0.3)
        tidy(ax)
        panel_legend(ax, ncol=2)  # one per panel: the chosen step differs
    return fig


def tuning_figure(out: Path, runs: list[dict], steps: dict, rows: list[dict]) -> None:
    curves = tuning_curves(runs)
    write_csv(out / "tuning_curves.csv", curves)
    finish_figure(draw_tuning(curves, rows), out / "tuning.png", rows)


#: the figures: file name -> problem and methods (learning curves, error against budget)
NFL = ("zcdp-nfl", "eps-delta-nfl", "zcdp-grad-nfl", "admm", "dgd")
LEARNING = {"fig1_elastic_net_learning": ("elastic-net", NFL),
            "fig2_lad_learning": ("lad", NFL),
            "fig3_ridge_learning": ("ridge", ("zcdp-nfl", "p-admm", "zcdp-nfl-const", "admm",
                                              "exact-admm"))}
TRADEOFF = {"fig1_elastic_net_tradeoff": ("elastic-net", NFL[:3], ""),
            "fig2_lad_tradeoff": ("lad", NFL[:3], ""),
            "fig3_ridge_tradeoff": ("ridge", ("zcdp-nfl", "p-admm"), ""),
            "conversions_elastic_net": ("elastic-net", ("zcdp-nfl", "zcdp-nfl-tight",
                                                        "zcdp-nfl-exact"),
                                        "zCDP-NFL on elastic net: conversion of the budget")}


def figures_from_csv(folder: Path):
    """(file name, title, Figure) of every figure, drawn from the CSVs in ``folder`` (the
    tuning figure needs ``tuning_curves.csv``, written since the figures read their CSVs;
    it is left out when a folder has none)."""
    for name, (problem, _) in LEARNING.items():
        if (folder / f"{name}.csv").is_file():
            rows = read_csv(folder / f"{name}.csv")
            yield f"{name}.png", learning_title(rows), draw_learning(rows, problem)
    for name, (problem, _, title) in TRADEOFF.items():
        yield f"{name}.png", None, draw_tradeoff(read_csv(folder / f"{name}.csv"), problem, title)
    if (folder / "tuning_curves.csv").is_file():
        yield ("tuning.png", None, draw_tuning(read_csv(folder / "tuning_curves.csv"),
                                               read_csv(folder / "tuning.csv")))


def redraw(folder: Path) -> list[Path]:
    """Draw every figure again from the CSVs in ``folder``; returns the PNGs written."""
    return save_figures(figures_from_csv(folder), folder)


def conversion_rows(epsilons, T: int) -> list[dict]:
    """Noise of zCDP-NFL under each conversion at each budget (sigma/Delta at n = 1 and T)."""
    from mpi_privopt.privacy.calibration import (calibrate_phi1, calibrate_zcdp_total,
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
    from mpi_privopt.results import write_json

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
