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
     step (the ablation "option B" of P-ADMM,
     docs/methods/gauthier2024.md, "P-ADMM");

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
``summary.json`` is not run again, so an interrupted reproduction resumes where it stopped;
``--redraw`` draws the figures again from the CSVs in ``--out`` without running anything.
The runs and their settings are in :mod:`.jobs`, the figures and tables in
:mod:`.figures`; this module is the command.

An exact-conversion run is launched as ``algorithm.conversion = "exact"`` at its epsilon; its
``privacy.json`` exact column is checked to equal epsilon. (The committed figures were made
before the budget guard judged Gaussian runs by the exact conversion, through the
equivalent tight run at tight(Phi_exact(epsilon)): the same phi^(1) and the same noise.)
"""
from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

from mpi_privopt import display
from mpi_privopt.reproduce import (find_mpiexec, launch, log, numbers, redraw,
                                  require_at_least, worker, write_csv)
from .figures import (LEARNING, TRADEOFF, check_exact_runs, conversion_rows,
                                    learning_figure, performance_rows, redraw as redraw_figures,
                                    summarise, tradeoff_figure, tuning_figure)
from .jobs import (BATCH_RUNS, CLIP, DELTA, EPSILONS, LEARNING_EPSILONS, PROGRESS,
                                 STEP_GRID, TAU, TOPOLOGY_SEED, Spec, classical_invalid,
                                 load_run, make_spec, match_steps, sweep_specs, tuning_specs)

#: the settings and run specs, re-exported for tests and scripts (defined in .jobs)
__all__ = ["CLIP", "DELTA", "TAU", "TOPOLOGY_SEED", "Spec", "build_parser", "classical_invalid",
           "main", "make_spec", "sweep_specs"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpi_privopt reproduce gauthier2024",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=50, help="K, agents = MPI ranks (paper: 50)")
    p.add_argument("--runs", type=int, default=3, help="Monte Carlo runs per point")
    p.add_argument("--iterations", type=int, default=200, help="T (paper: 200)")
    p.add_argument("--epsilons", type=numbers, default=EPSILONS,
                   help="comma-separated total budgets for the sweep")
    p.add_argument("--learning-epsilons", type=numbers, default=LEARNING_EPSILONS,
                   help="budgets (in the sweep) whose learning curves are drawn")
    p.add_argument("--step-grid", type=numbers, default=STEP_GRID,
                   help="constant steps tried for zcdp-grad-nfl's initial-speed matching")
    p.add_argument("--coarse-every", type=int, default=10,
                   help="eval_every of sweep runs not drawn as learning curves")
    p.add_argument("--out", default="reproductions/gauthier2024", help="output directory")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 8 ranks, 1 run, epsilon 1 and 100, 3 steps, T = 100")
    p.add_argument("--redraw", action="store_true",
                   help="draw the figures again from the CSVs in --out (no runs)")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (default: from PATH)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.redraw:
        return redraw(Path(args.out), redraw_figures, "gauthier2024")
    # a decentralized run needs neighbours; 0 runs or iterations would run nothing
    require_at_least(args, {"ranks": 2, "runs": 1, "iterations": 1, "coarse_every": 1})
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
                                  module="mpi_privopt.methods.gauthier2024.reproduce",
                                  batch_size=BATCH_RUNS, progress=PROGRESS)
    log(f"gauthier2024: K = {args.ranks} ranks, T = {args.iterations}, {args.runs} run(s) per "
        f"point, epsilon in {display.sequence(args.epsilons, display.exact)}, output {out}")
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
    if learn:
        for name, (problem, methods) in LEARNING.items():
            learning_figure(runs, problem, methods, learn, out, name, T)
    tables = {}
    for name, (problem, methods, title) in TRADEOFF.items():
        key = "conversions" if name.startswith("conversions") else problem
        tables[key] = tradeoff_figure(runs, problem, methods, eps, out, name, title)
    write_csv(out / "conversions_noise.csv", conversion_rows(eps, T))
    write_csv(out / "runs.csv", performance_rows(runs))
    seconds = time.perf_counter() - start
    summarise(out, tables, steps, args, seconds)
    log(f"done in {display.duration(seconds)}: figures and CSVs in {out}")
    return 0

