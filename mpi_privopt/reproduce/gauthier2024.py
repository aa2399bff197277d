"""Reproduction of Gauthier et al. 2024 (zCDP-NFL), Figs. 1-3, and the conversion gain.

``python -m mpi_privopt reproduce gauthier2024 [--ranks 50] [--runs N] [--out DIR] [--quick]``

What it runs (every run is a real ``mpiexec -n K`` job of the package, one rank per agent):

1. **Matching the initial speed** (the paper's fairness protocol): noise-free zCDP-NFL and
   noise-free zCDP-grad-NFL for a grid of constant steps on elastic net and LAD; the step
   whose normalised-error curve over iterations 1..20 is closest (mean |log ratio|) to
   zCDP-NFL's is used by the private zCDP-grad-NFL runs. ``tuning.png`` / ``tuning.csv``.
2. **The sweep**: at every total budget epsilon of the grid, at delta = 1e-5 over T
   iterations, ``--runs`` Monte Carlo runs (run seeds 1000 + r: the data and the noise are
   redrawn per run, the graph is fixed by ``topology.seed``) of

   * elastic net: zcdp-nfl (standard, tight and exact conversion), eps-delta-nfl,
     zcdp-grad-nfl;
   * LAD: zcdp-nfl, eps-delta-nfl, zcdp-grad-nfl;
   * ridge: zcdp-nfl, p-admm, and at the learning-curve budgets zcdp-nfl with a constant
     step (the notes' ablation "option B" of P-ADMM);

   plus the non-private versions (noiseless switch) once per run seed. All methods of a
   panel share (epsilon, delta, T, tau) and c1 = ``problem.clip``.

Figures (PNG, with the CSV behind each one): learning curves (normalised error vs
iteration, mean over runs with the min-max band) at each learning-curve budget, for
elastic net (paper Fig. 1 left), LAD (Fig. 2) and ridge (Fig. 3 left); error after T
iterations vs epsilon for each problem (Fig. 1 right, Fig. 3 right, and LAD, which the paper
does not show); zCDP-NFL under the three conversions; and ``runs.csv``, one row per run.

Runs share mpiexec launches: a batch of run configurations goes to one MPI job in which
every rank loops over them (``--worker``), because starting 50 Python processes costs
several times a 200-iteration run on a small machine. A run whose directory already holds
``summary.json`` is not run again, so an interrupted reproduction resumes where it stopped.

An exact-conversion run is launched as ``algorithm.conversion = "exact"`` at its epsilon; its
``privacy.json`` exact column is checked to equal epsilon. (The committed figures were made
before the budget guard judged Gaussian runs by the exact conversion, through the
equivalent tight run at tight(Phi_exact(epsilon)): the same phi^(1) and the same noise.)
"""
from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from . import find_mpiexec, finish_figure, launch, log, pyplot, run_dir, worker, write_csv

DELTA = 1e-5
TAU = 0.99
CLIP = 3.0
RHO = 1.0
ETA = {"elastic-net": 1.0, "lad": 0.3, "ridge": 1.0}
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
LEARNING_EPSILONS = (10.0, 100.0)
#: the methods run without noise (epsilon = inf), drawn dashed
NON_PRIVATE = ("admm", "dgd", "exact-admm")
STEP_GRID = (0.03, 0.05, 0.07, 0.1, 0.14, 0.2, 0.3)
MATCH_ITERATIONS = 20
TOPOLOGY_SEED = 2024
SEED_BASE = 1000
BATCH_RUNS = 40
PROGRESS = ("  batch {batch}/{batches}: {runs} runs on {ranks} ranks in {seconds:.0f} s "
            "({done}/{total} done)")

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


@dataclass
class Spec:
    """One run: where it goes, its overrides, and what it stands for in the figures."""

    key: str
    problem: str
    method: str
    epsilon: float
    seed: int
    overrides: list[str] = field(default_factory=list)
    #: the constant step of zcdp-grad-nfl and dgd runs (None for the other methods)
    step: float | None = None
    #: what a finished run leaves in its directory (see :func:`mpi_privopt.reproduce.launch`)
    result_file: ClassVar[str] = "summary.json"

    @property
    def conversion(self) -> str:
        """The zCDP conversion the method is calibrated with."""
        return {"zcdp-nfl-tight": "tight", "zcdp-nfl-exact": "exact"}.get(self.method,
                                                                           "standard")


# ---------------------------------------------------------------------------------------
# run configurations
# ---------------------------------------------------------------------------------------

def algorithm_overrides(method: str, problem: str, step: float | None = None) -> list[str]:
    """``--set`` options of one method (every [algorithm] key given: switching name resets)."""
    eta = ETA[problem]
    admm = [f"algorithm.rho={RHO}", f"algorithm.eta={eta}", "algorithm.schedule=sqrt",
            f"algorithm.tau={TAU}"]
    table = {
        "zcdp-nfl": ["algorithm.name=zcdp-nfl", *admm],
        "zcdp-nfl-tight": ["algorithm.name=zcdp-nfl", *admm, "algorithm.conversion=tight"],
        "zcdp-nfl-exact": ["algorithm.name=zcdp-nfl", *admm, "algorithm.conversion=exact"],
        "zcdp-nfl-const": ["algorithm.name=zcdp-nfl", f"algorithm.rho={RHO}",
                           f"algorithm.eta={eta}", "algorithm.schedule=constant",
                           f"algorithm.tau={TAU}"],
        "eps-delta-nfl": ["algorithm.name=eps-delta-nfl", *admm],
        "zcdp-grad-nfl": ["algorithm.name=zcdp-grad-nfl", f"algorithm.step={step}",
                          "algorithm.schedule=constant", f"algorithm.tau={TAU}"],
        "p-admm": ["algorithm.name=p-admm", f"algorithm.rho={RHO}", f"algorithm.tau={TAU}"],
        "admm": ["algorithm.name=zcdp-nfl", *admm, "algorithm.noiseless=true"],
        "dgd": ["algorithm.name=zcdp-grad-nfl", f"algorithm.step={step}",
                "algorithm.schedule=constant", "algorithm.noiseless=true"],
        "exact-admm": ["algorithm.name=p-admm", f"algorithm.rho={RHO}",
                       "algorithm.noiseless=true"],
    }
    return table[method]


def classical_invalid(epsilon: float, T: int) -> bool:
    """Whether the classical Gaussian mechanism fails (some eps_n >= 1) at this budget."""
    from ..algorithms.eps_delta_nfl import largest_release_epsilon

    return largest_release_epsilon(epsilon, DELTA, T, TAU) >= 1.0


def make_spec(problem: str, method: str, epsilon: float, seed: int, T: int,
              eval_every: int, step: float | None = None) -> Spec:
    overrides = [f"problem.name={problem}", "problem.samples=50", "problem.features=8",
                 "problem.noise=0.1", f"problem.clip={CLIP}", "topology.kind=erdos-renyi",
                 "topology.degree=3.0", f"topology.seed={TOPOLOGY_SEED}",
                 f"run.iterations={T}", f"run.eval_every={eval_every}", f"run.seed={seed}",
                 f"privacy.delta={DELTA}",
                 *algorithm_overrides(method, problem, step)]
    if method == "eps-delta-nfl" and classical_invalid(epsilon, T):
        overrides.append("algorithm.mechanism=analytic")
    overrides.append(f"privacy.epsilon={epsilon!r}")
    eps_tag = f"{epsilon:g}"
    grad = method in ("zcdp-grad-nfl", "dgd")
    step_tag = f"-a{step:g}" if grad else ""
    key = f"{problem}/{method}{step_tag}/eps{eps_tag}/seed{seed}"
    return Spec(key, problem, method, epsilon, seed, overrides, step if grad else None)


def sweep_specs(args, steps: dict[str, float]) -> list[Spec]:
    specs = []
    T = args.iterations
    learning = set(args.learning_epsilons)
    for r in range(args.runs):
        seed = SEED_BASE + r
        for problem, methods in (("elastic-net", ("zcdp-nfl", "eps-delta-nfl", "zcdp-grad-nfl",
                                                  "zcdp-nfl-tight", "zcdp-nfl-exact")),
                                 ("lad", ("zcdp-nfl", "eps-delta-nfl", "zcdp-grad-nfl")),
                                 ("ridge", ("zcdp-nfl", "p-admm"))):
            for eps in args.epsilons:
                every = 1 if eps in learning else args.coarse_every
                for method in methods:
                    specs.append(make_spec(problem, method, eps, seed, T, every,
                                           steps.get(problem)))
                if problem == "ridge" and eps in learning:
                    specs.append(make_spec(problem, "zcdp-nfl-const", eps, seed, T, 1))
        for problem, methods in (("elastic-net", ("admm", "dgd")), ("lad", ("admm", "dgd")),
                                 ("ridge", ("admm", "exact-admm"))):
            for method in methods:
                specs.append(make_spec(problem, method, math.inf, seed, T, 1,
                                       steps.get(problem)))
    return specs


def tuning_specs(args) -> list[Spec]:
    specs = []
    T = args.iterations
    for problem in ("elastic-net", "lad"):
        specs.append(make_spec(problem, "admm", math.inf, SEED_BASE, T, 1))
        for step in args.step_grid:
            specs.append(make_spec(problem, "dgd", math.inf, SEED_BASE, T, 1, step))
    return specs


# ---------------------------------------------------------------------------------------
# reading runs
# ---------------------------------------------------------------------------------------

def load_run(out: Path, spec: Spec) -> dict:
    """:func:`mpi_privopt.report.load_run` of the spec's run, with ``spec`` and ``path``."""
    from ..report import load_run as read_run

    path = run_dir(out, spec)
    return {**read_run(path), "spec": spec, "path": path}


def worst_link(privacy: dict, column: str) -> float:
    values = [v for row in privacy["links"][column] for v in row if v is not None]
    return max(values) if values else math.nan


def match_steps(runs: list[dict], args) -> tuple[dict[str, float], list[dict]]:
    """The constant step of zcdp-grad-nfl matching noise-free zcdp-nfl over 1..20."""
    steps, rows = {}, []
    n = MATCH_ITERATIONS
    for problem in ("elastic-net", "lad"):
        ref = next(r for r in runs
                   if r["spec"].problem == problem and r["spec"].method == "admm")
        ref_err = ref["metrics"]["error"][1:n + 1]
        best = None
        for step in args.step_grid:
            run = next(r for r in runs if r["spec"].problem == problem
                       and r["spec"].method == "dgd" and r["spec"].step == step)
            err = run["metrics"]["error"][1:n + 1]
            score = float(np.mean(np.abs(np.log(err) - np.log(ref_err))))
            rows.append({"problem": problem, "step": step, "score": score,
                         "error_at_10": float(run["metrics"]["error"][10]),
                         "error_at_20": float(run["metrics"]["error"][20]),
                         "error_at_T": float(run["metrics"]["error"][-1]),
                         "admm_error_at_10": float(ref["metrics"]["error"][10]),
                         "admm_error_at_20": float(ref["metrics"]["error"][20]),
                         "admm_error_at_T": float(ref["metrics"]["error"][-1])})
            if best is None or score < best[0]:
                best = (score, step)
        steps[problem] = best[1]
        log(f"  {problem}: zcdp-grad-nfl step {best[1]:g} matches zcdp-nfl's first {n} "
            f"iterations (mean |log ratio| {best[0]:.3f})")
    steps["ridge"] = steps["elastic-net"]
    return steps, [{**r, "chosen": r["step"] == steps[r["problem"]]} for r in rows]


# ---------------------------------------------------------------------------------------
# figures and CSVs
# ---------------------------------------------------------------------------------------

def group(runs: list[dict], problem: str, method: str, epsilon: float) -> list[dict]:
    return [r for r in runs if r["spec"].problem == problem and r["spec"].method == method
            and r["spec"].epsilon == epsilon]


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
    from ..privacy.calibration import (calibrate_phi1, calibrate_zcdp_total,
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
    from ..results import write_json

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


# ---------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------

def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(",") if x.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpi_privopt reproduce gauthier2024",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=50, help="K, agents = MPI ranks (paper: 50)")
    p.add_argument("--runs", type=int, default=3, help="Monte Carlo runs per point")
    p.add_argument("--iterations", type=int, default=200, help="T (paper: 200)")
    p.add_argument("--epsilons", type=_floats, default=EPSILONS,
                   help="comma-separated total budgets for the sweep")
    p.add_argument("--learning-epsilons", type=_floats, default=LEARNING_EPSILONS,
                   help="budgets (in the sweep) whose learning curves are drawn")
    p.add_argument("--step-grid", type=_floats, default=STEP_GRID,
                   help="constant steps tried for zcdp-grad-nfl's initial-speed matching")
    p.add_argument("--coarse-every", type=int, default=10,
                   help="eval_every of sweep runs not drawn as learning curves")
    p.add_argument("--out", default="reproductions/gauthier2024", help="output directory")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 8 ranks, 1 run, epsilon 1 and 100, 3 steps, T = 100")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (default: from PATH)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.quick:
        args.ranks, args.runs, args.iterations = min(args.ranks, 8), 1, 100
        args.epsilons, args.learning_epsilons = (1.0, 100.0), (100.0,)
        args.step_grid = (0.05, 0.1, 0.2)
    args.learning_epsilons = tuple(e for e in args.learning_epsilons if e in args.epsilons)
    mpiexec = find_mpiexec(args.mpiexec, "gauthier2024")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # every spec not yet done, in batches sharing one mpiexec job each
    run_specs = functools.partial(launch, out=out, mpiexec=mpiexec, ranks=args.ranks,
                                  module="mpi_privopt.reproduce.gauthier2024",
                                  batch_size=BATCH_RUNS, progress=PROGRESS)
    log(f"gauthier2024: K = {args.ranks} ranks, T = {args.iterations}, {args.runs} run(s) per "
        f"point, epsilon in {list(args.epsilons)}, output {out}")
    log("step 1: matching zcdp-grad-nfl's initial speed to zcdp-nfl (noise-free)")
    tuning = tuning_specs(args)
    run_specs(tuning)
    tuning_runs = [load_run(out, s) for s in tuning]
    steps, tuning_table = match_steps(tuning_runs, args)
    tuning_figure(out, tuning_runs, steps, tuning_table)

    specs = sweep_specs(args, steps)
    log(f"step 2: the sweep, {len(specs)} runs")
    run_specs(specs)
    runs = [load_run(out, s) for s in specs]
    check_exact_runs(runs)

    log("step 3: figures")
    T = args.iterations
    eps, learn = args.epsilons, args.learning_epsilons
    nfl = ("zcdp-nfl", "eps-delta-nfl", "zcdp-grad-nfl", "admm", "dgd")
    if learn:
        learning_figure(runs, "elastic-net", nfl, learn, out, "fig1_elastic_net_learning", T)
        learning_figure(runs, "lad", nfl, learn, out, "fig2_lad_learning", T)
        learning_figure(runs, "ridge", ("zcdp-nfl", "p-admm", "zcdp-nfl-const", "admm",
                                        "exact-admm"), learn, out, "fig3_ridge_learning", T)
    tables = {
        "elastic-net": tradeoff_figure(runs, "elastic-net", nfl[:3], eps, out,
                                       "fig1_elastic_net_tradeoff"),
        "lad": tradeoff_figure(runs, "lad", nfl[:3], eps, out, "fig2_lad_tradeoff"),
        "ridge": tradeoff_figure(runs, "ridge", ("zcdp-nfl", "p-admm"), eps, out,
                                 "fig3_ridge_tradeoff"),
        "conversions": tradeoff_figure(runs, "elastic-net", ("zcdp-nfl", "zcdp-nfl-tight",
                                                             "zcdp-nfl-exact"), eps, out,
                                       "conversions_elastic_net",
                                       "zCDP-NFL on elastic net: conversion of the budget"),
    }
    write_csv(out / "conversions_noise.csv", conversion_rows(eps, T))
    write_csv(out / "runs.csv", performance_rows(runs))
    seconds = time.perf_counter() - start
    summarise(out, tables, steps, args, seconds)
    log(f"done in {seconds:.0f} s: figures and CSVs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
