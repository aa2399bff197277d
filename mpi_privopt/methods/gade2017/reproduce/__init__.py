"""Reproduction of Gade & Vaidya (2017), "Private Learning on Networks: Part II".

``python -m mpi_privopt reproduce gade2017 [--out DIR] [--quick] [--seeds N] [--iterations T]``

Every run is a real ``mpiexec -n 5`` job of the package, one rank per agent (batches of
runs share a launch, see :mod:`.jobs`). It writes into ``--out``:

``fig1.png`` / ``fig1.csv``
    Figure 1: the five polynomial objectives on the 5-cycle, X = [-30, 30], x_1 =
    (-30, -15, 0, 15, 30), alpha_k = 1/k, the paper's self-inclusive Metropolis weights;
    DGD against RSS-NB and RSS-LB at Delta = 10 and 1000 (median and min-max over seeds):
    sum_j f_j(x_k^j) - f*, sum_j |x_k^j - x*|^2 and the consensus gap.
``fig1-fs.png`` / ``fig1-fs.csv``
    The same for FS (sigma = 0.1 and 1), which the paper does not run.
``fig2.png`` / ``fig2.csv``, ``fig2-training.png`` / ``fig2-training.csv``
    Figure 2 stand-in: l2-regularised logistic regression on scikit-learn's bundled
    breast-cancer data (MNIST and Reuters need downloads), 5 agents on C5 and K5, full
    local gradients, alpha_k = 0.3/sqrt(k); test accuracy after checkpoint runs (the same
    seed gives the same trajectory, so the run with T iterations is the state at T), and
    the distance to the centralised optimum over iterations.
``attacks.csv`` / ``attacks.md``
    The curious-coalition attack (:mod:`mpi_privopt.methods.gade2017.attacks`) on the Figure 1 problem
    (and, in the full run, on the logistic problem) for each method, with and without
    the topology certificate.
``summary.json``
    The headline numbers; ``runs/`` holds every run directory.

``--redraw`` draws the figures again from the CSVs (and ``summary.json``) in ``--out``,
without running anything.
"""
from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import numpy as np

from mpi_privopt import display
from mpi_privopt.results import write_json
from mpi_privopt.reproduce import (find_mpiexec, launch, log, redraw, require_at_least, worker,
                                  write_csv)
from . import figures
from .data import write_breast_cancer
from .jobs import (AGENTS, BATCH_JOBS, FIG1_LEVELS, PROGRESS, attack_jobs,
                             figure1_jobs, figure2_jobs, run_job)

FULL = {"iterations": 20000, "seeds": 3, "checkpoints": (1, 3, 10, 30, 100, 300, 1000),
        "attack_iterations": 3000, "ml_attacks": True}
QUICK = {"iterations": 1000, "seeds": 1, "checkpoints": (10, 100),
         "attack_iterations": 200, "ml_attacks": False}
DATA_SEED = 2017


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mpi_privopt reproduce gade2017",
                                description="Gade & Vaidya (2017): Figure 1, a Figure 2 "
                                            "stand-in, and the curious-coalition attacks.")
    p.add_argument("--out", default="reproductions/gade2017", help="output folder")
    p.add_argument("--quick", action="store_true",
                   help="a small smoke version (1 seed, short runs, fewer attacks)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per noisy Figure 1 series")
    p.add_argument("--iterations", type=int, default=None, help="Figure 1 iterations")
    p.add_argument("--redraw", action="store_true",
                   help="draw the figures again from the CSVs in --out (no runs)")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (default: from PATH)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return p


def _fig1_numbers(bands: dict, at: list[int]) -> dict:
    """Median objective gap, error and consensus gap of each series at iterations ``at``."""
    numbers = {}
    for series, band in bands.items():
        it = band["iteration"]
        numbers[series] = {
            int(k): {metric: float(band[metric][0][int(np.searchsorted(it, k))])
                     for metric, _ in figures.METRICS}
            for k in at if k <= it[-1]}
    return numbers


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        return worker(args.worker, run_job)
    if args.redraw:
        return redraw(Path(args.out), figures.redraw, "gade2017")
    require_at_least(args, {"seeds": 1, "iterations": 1})  # 0 was taken for the default
    plan = dict(QUICK if args.quick else FULL)
    plan["iterations"] = args.iterations or plan["iterations"]
    plan["seeds"] = args.seeds or plan["seeds"]
    mpiexec = find_mpiexec(args.mpiexec, "gade2017")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # every job without a result yet, in batches sharing one mpiexec job each
    run_jobs = functools.partial(launch, out=out, mpiexec=mpiexec, ranks=AGENTS,
                                 module="mpi_privopt.methods.gade2017.reproduce", batch_size=BATCH_JOBS,
                                 progress=PROGRESS)
    log(f"reproduce gade2017 into {out} ({'quick' if args.quick else 'full'}: "
        f"{display.mapping(plan)})")

    log("Figure 1: polynomial objectives on C5")
    fig1 = figure1_jobs(plan["iterations"], plan["seeds"])
    run_jobs(fig1)
    bands = figures.seed_bands(out, fig1)
    for name, series, title in figures.CONVERGENCE:
        figures.convergence_figure(bands, list(series), out / f"{name}.png", title)

    log("Figure 2 stand-in: logistic regression on breast cancer, C5 and K5")
    train, test = write_breast_cancer(out / "data", 5, DATA_SEED)
    fig2 = figure2_jobs(train.resolve(), plan["checkpoints"])
    run_jobs(fig2)
    accuracy = figures.accuracy_rows(out, fig2, test)
    figures.accuracy_figure(accuracy, out / "fig2.png")
    figures.training_figure(out, fig2, out / "fig2-training.png")

    log("Attacks: a curious coalition inverts the target's gradient steps")
    methods = [("dgd", None), *FIG1_LEVELS]
    if args.quick:
        methods = [("dgd", None), ("rss-nb", 1000.0), ("rss-lb", 1000.0), ("fs", 0.1)]
    attacks = attack_jobs(plan["attack_iterations"], methods,
                          train.resolve() if plan["ml_attacks"] else None)
    run_jobs(attacks)
    rows = figures.attack_rows(out, attacks)
    write_csv(out / "attacks.csv", rows)
    (out / "attacks.md").write_text(figures.attack_table(rows))

    checkpoints = [1000, 10000, plan["iterations"]]
    last = max(plan["checkpoints"])
    summary = {
        "plan": plan,
        "figure1": _fig1_numbers(bands, sorted(set(checkpoints))),
        "figure2_final_accuracy": [r for r in accuracy if r["iteration"] == last],
        "attacks": rows,
        # runs found done in --out (a resumed reproduction) are not re-timed
        "seconds_this_invocation": time.perf_counter() - start,
    }
    write_json(out / "summary.json", summary)
    log(f"done in {display.duration(summary['seconds_this_invocation'])}: figures, CSVs and "
        f"summary.json "
        f"in {out}")
    return 0

