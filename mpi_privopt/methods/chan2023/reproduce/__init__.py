"""Reproduction of Chan, Xie & Zhao 2023 (privacy amplification by iteration for ADMM), Sec. 10.

``python -m mpi_privopt reproduce chan2023 [--quick] [--runs 100] [--out DIR] [--seed 0] [--distributed]``

Single process, numpy only, seconds: the paper's experiments are one sequential chain of noisy
gradient ADMM iterations on one data set, repeated ``--runs`` times 
(docs/methods/chan2023.md, "Run protocol"). It is
run in two modes (:mod:`.replay`):

* ``replay``: the authors' notebook as it really runs (shared default_rng(0), the code's
  reference value, sigma = 0 in Table 1's fourth case, eta = 5 for sigma = 0.7), which gives
  Table 1 exactly;
* ``corrected``: the true optimum F*, sigma = 0.01 in every Table 1 case, the midpoint eta for
  every sigma, one recorded generator per case (``--seed``), and f(x~_t) + g(y_t) beside
  F(x~_t).

Written to ``--out``: ``table1.csv`` (replay mode: ``case,eta,contraction,
convergence_iterations``) and ``table1_corrected.csv``; ``fig1a_{mode}.png`` and
``fig1b_{mode}.png`` with their CSVs; ``table2_{mode}.csv`` (Levene, then the pooled or Welch
t-test, two-sided p); ``privacy.csv`` (the local zCDP of one record's iteration at every
setting with the declared clip); ``privacy_curve.png`` (beyond the paper: amplified over
local zCDP against the iterations since a record's use, convex and nominal strongly convex
variants); ``summary.json`` (settings, seeds, references, plateaus,
comparison with the printed tables). The deviations from the paper are documented in
docs/reproductions/chan2023.md.

``--distributed`` adds what needs the distributed token method (about 1-2 minutes on two
cores; :mod:`.distributed`): ``observers_ring.png`` and ``observers_sample.png``,
the observer matrices of a 24-rank ring run and of the paper's ``sample`` schedule (CSV: one
row per entry; the ring's with the closed-form ratio beside it), ``observers_ring_distance.csv``
and ``utility_epsilon.png`` (final gap against the local epsilon of one iteration, with the
observer-matrix entries of the same runs).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from mpi_privopt import display
from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.conversions import zcdp_to_eps_tight
from mpi_privopt.results import write_json
from mpi_privopt.reproduce import find_mpiexec, launch, log, run_dir, worker, write_csv
from mpi_privopt.reproduce import redraw as redraw_reproduction  # .redraw (a submodule) would shadow it
from . import distributed, figures, observer_figures
from .redraw import redraw as redraw_figures
from .replay import MODES, Instance, Setting, lfrak_study, sigma_study
from .settings import (CLIP, ITERATIONS, NOTEBOOK_ETA_OVERRIDE, PAPER_SIGMA, PENALTY,
                                 RUNS, SIGMA_CASE, SIGMAS, X0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpi_privopt reproduce chan2023",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help=f"a smoke version: {QUICK['runs']} runs per setting and, with "
                        f"--distributed, {QUICK['matrix_ranks']} ranks and "
                        f"{QUICK['utility_runs']} utility run per epsilon (options given "
                        "with it still apply)")
    p.add_argument("--runs", type=int, default=None,
                   help=f"independent runs per setting (default and paper: {RUNS})")
    p.add_argument("--out", default="reproductions/chan2023", help="output directory")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the corrected mode's generators (replay mode always uses the "
                        "notebook's default_rng(0))")
    p.add_argument("--distributed", action="store_true",
                   help="also run the token method under mpiexec: observer matrices of a "
                        "ring and of the sample schedule, utility against epsilon")
    p.add_argument("--matrix-ranks", type=int, default=None,
                   help="ranks of the observer-matrix runs (ring graph; default "
                        f"{distributed.MATRIX_RANKS})")
    p.add_argument("--utility-runs", type=int, default=None,
                   help="seeds per epsilon of the utility runs (default "
                        f"{distributed.UTILITY_RUNS})")
    p.add_argument("--redraw", action="store_true",
                   help="draw the figures again from the CSVs in --out (no runs)")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (default: from PATH)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return p


#: ``--quick``: the smallest settings that still draw every figure and run every test
QUICK = {"runs": 5, "matrix_ranks": 6, "utility_runs": 1}
#: the full reproduction's settings
FULL = {"runs": RUNS, "matrix_ranks": distributed.MATRIX_RANKS,
        "utility_runs": distributed.UTILITY_RUNS}


def _settings(args: argparse.Namespace) -> None:
    """Fill the options not given from ``--quick``'s settings or the full ones."""
    given = vars(args)
    for key, value in (QUICK if args.quick else FULL).items():
        if given[key] is None:
            given[key] = value


def _output_dir(out: str) -> Path:
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"--out {out} cannot be made: {err.strerror}",
                          "choose a directory you can write to (--out DIR)") from None
    return path


def _summary_of(settings: list[Setting]) -> list[dict]:
    return [{"case": s.case.label, "r": s.case.r, "beta": s.case.beta, "eta": s.eta,
             "sigma": s.sigma, "reference": s.reference, "reference_kind": s.reference_kind,
             "plateau_gap_last_20": figures.plateau(s),
             "final_mean_gap": float(s.gap[:, -1].mean()),
             "final_mean_split_gap": float(s.split_gap[:, -1].mean()),
             "max_gradient_norm": s.runs.max_gradient_norm, "seeds": s.seeds}
            for s in settings]


def _launch(runs: list[distributed.Run], out: Path, mpiexec: str) -> None:
    """Every run not yet done, one mpiexec job per rank count (batches share a job)."""
    for ranks in sorted({r.ranks for r in runs}):
        launch([r for r in runs if r.ranks == ranks], out, mpiexec, ranks=ranks,
               module=__name__, batch_size=distributed.BATCH_RUNS,
               progress="  batch {batch}/{batches}: {runs} runs on {ranks} ranks in "
                        "{seconds:.0f} s ({done}/{total} done)")


def _observer_matrices(runs: list[distributed.Run], out: Path) -> dict:
    """The ring's and the sample schedule's observer matrices: heatmaps, CSVs, summary."""
    local = distributed.local(distributed.sigma_for_epsilon(distributed.MATRIX_EPSILON))
    local_eps = zcdp_to_eps_tight(local, distributed.DP_DELTA)
    # the noise is calibrated to the paper's local bound, the runs book less (distributed.py)
    result = {"target_local_epsilon": distributed.MATRIX_EPSILON, "local_rho": local,
              "local_epsilon": local_eps}
    for run in runs:
        schedule = run.schedule
        obs = distributed.observers(run_dir(out, run))
        K = obs["rho"].shape[0]
        closed = None
        if schedule == "ring":
            closed = distributed.ring_ratio_matrix(K, distributed.RING_PASSES * K,
                                                   distributed.constants())
            rows = observer_figures.ring_rows_by_distance(closed)
            write_csv(out / "observers_ring_distance.csv", rows)
            result["ring_by_distance"] = rows
            result["ring_closed_form_max_abs_difference"] = float(
                np.nanmax(np.abs(obs["rho"] / local - closed)))
        observer_figures.heatmap(
            obs, out / f"observers_{schedule}.png",
            observer_figures.matrix_rows(obs, local, closed),
            observer_figures.matrix_title(schedule, K), local_eps)
        result[schedule] = observer_figures.matrix_summary(obs, local)
        log(f"  observers, {schedule}: {result[schedule]['amplified_entries']} of "
            f"{result[schedule]['entries']} entries amplified, smallest "
            f"{display.number(result[schedule]['smallest_ratio'])} x local, worst epsilon "
            f"{display.loss(result[schedule]['worst_epsilon'])}")
    return result


def _utility(runs: list[distributed.Run], out: Path) -> list[dict]:
    """Final gap of every utility run against its local epsilon, figure and CSV."""
    inst = Instance(SIGMA_CASE)
    optimum = inst.optimum()
    results = []
    for run in runs:
        sigma = distributed.sigma_for_epsilon(run.epsilon)
        path = run_dir(out, run)
        results.append({"epsilon": run.epsilon, "seed": run.seed, "sigma": sigma,
                        "local_rho": distributed.local(sigma),
                        "gap": inst.objective(distributed.released_token(path)) - optimum,
                        "observers": distributed.observers(path)})
    rows = observer_figures.utility_rows(results)
    start = inst.objective(np.full(inst.n_features, X0)) - optimum
    rows = [{**r, "initial_gap": start} for r in rows]
    observer_figures.utility_figure(rows, out / "utility_epsilon.png",
                                    observer_figures.utility_title(runs[0].ranks))
    for r in rows:
        log(f"  local epsilon {display.loss(r['local_epsilon'])} (sigma "
            f"{display.number(r['sigma'])}): mean gap {display.number(r['mean_gap'])}, worst "
            f"observer entry up to {display.loss(r['worst_entry_epsilon_max'])}")
    return rows


def run_distributed(args, out: Path, mpiexec: str) -> dict:
    """The --distributed part: launch the runs, then the figures from their outputs."""
    matrix = distributed.matrix_runs(args.matrix_ranks)
    utility = distributed.utility_runs(runs=args.utility_runs)
    tick = time.perf_counter()
    log(f"distributed: {len(matrix)} observer-matrix runs on {args.matrix_ranks} ranks, "
        f"{len(utility)} utility runs on {distributed.UTILITY_RANKS} ranks")
    _launch(matrix + utility, out, mpiexec)
    return {"observers": _observer_matrices(matrix, out), "utility": _utility(utility, out),
            "matrix_ranks": args.matrix_ranks, "ring_passes": distributed.RING_PASSES,
            "utility_ranks": distributed.UTILITY_RANKS, "utility_runs": args.utility_runs,
            "dp_delta": distributed.DP_DELTA, "conversion": distributed.CONVERSION,
            "seconds": time.perf_counter() - tick}


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.redraw:
        return redraw_reproduction(Path(args.out), redraw_figures, "chan2023")
    _settings(args)
    if args.runs < 2:
        raise ConfigError(f"--runs {args.runs}: the tests compare samples of runs",
                          "give --runs 2 or more (the paper: 100)")
    if args.matrix_ranks < 3:
        raise ConfigError(f"--matrix-ranks {args.matrix_ranks}: a ring needs 3 or more ranks",
                          f"give --matrix-ranks 3 or more (default {distributed.MATRIX_RANKS})")
    if args.utility_runs < 1:
        raise ConfigError(f"--utility-runs {args.utility_runs} must be 1 or more",
                          f"give --utility-runs N (default {distributed.UTILITY_RUNS})")
    # refused before the single-process part runs, not after it
    mpiexec = find_mpiexec(args.mpiexec, "chan2023") if args.distributed else None
    out = _output_dir(args.out)
    start = time.perf_counter()
    log(f"chan2023: {args.runs} runs x {ITERATIONS} iterations per setting, modes "
        f"{', '.join(MODES)}, output {out}")
    summary: dict = {"runs": args.runs, "iterations": ITERATIONS, "c1": PENALTY.c1,
                     "c2": PENALTY.c2, "paper_sigma": PAPER_SIGMA, "sigmas": list(SIGMAS),
                     "notebook_eta_override": {str(k): v for k, v in NOTEBOOK_ETA_OVERRIDE.items()},
                     "corrected_seed": args.seed, "clip": CLIP, "modes": {}}
    privacy = []
    for mode in MODES:
        lfrak = lfrak_study(mode, args.runs, args.seed)
        table1 = figures.table1_rows(lfrak)
        write_csv(out / ("table1.csv" if mode == "replay" else f"table1_{mode}.csv"), table1)
        figures.fig1a(lfrak, out)
        sigma = sigma_study(mode, args.runs, args.seed)
        figures.fig1b(sigma, out)
        table2, _ = figures.table2_rows(sigma)
        write_csv(out / f"table2_{mode}.csv", table2)
        privacy += figures.privacy_rows(lfrak + sigma, CLIP)
        summary["modes"][mode] = {
            "table1": figures.table1_comparison(table1),
            "fig1a": _summary_of(lfrak), "fig1b": _summary_of(sigma),
            "table2_max_offdiagonal_p": max(r["p_value"] for r in table2
                                            if r["sigma_a"] != r["sigma_b"])}
        log(f"  {mode}: convergence iterations "
            f"{display.sequence(r['convergence_iterations'] for r in table1)}, Fig. 1(b) "
            f"plateaus {display.sequence(figures.plateau(s) for s in sigma)}, largest Table 2 "
            f"p-value {display.number(summary['modes'][mode]['table2_max_offdiagonal_p'])}")
    write_csv(out / "privacy.csv", privacy)
    curve = figures.privacy_curve(out, CLIP, PAPER_SIGMA)
    summary["privacy_curve_at_k"] = [r for r in curve if r["k"] in (0, 2, 20, 100, 200)]
    summary["privacy"] = privacy
    if args.distributed:
        summary["distributed"] = run_distributed(args, out, mpiexec)
    summary["seconds"] = time.perf_counter() - start
    write_json(out / "summary.json", summary)
    log(f"done in {display.duration(summary['seconds'])}: tables, figures and CSVs in {out}")
    return 0

