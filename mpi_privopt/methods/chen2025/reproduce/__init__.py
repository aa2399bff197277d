"""Chen & Wang (2025), Section VI: LDP distributed stochastic aggregative optimisation on
personalised learning.

``python -m mpi_privopt reproduce chen2025 [--quick] [--runs 5] [--dataset
digits|colour-digits] [--iterations 1000] [--eval-every 20] [--out DIR]``

Every run is a real ``mpiexec -n 5`` job (batches of runs per job, :func:`launch`) of the
personalised task with softmax regression in numpy on the offline stand-in data set
(``digits`` for MNIST, ``colour-digits`` for CIFAR-10); settings in
:mod:`.settings`. Writes into ``DIR/<dataset>/``:

* ``panel_a.png``: training loss (penalised objective and plain cross-entropy) of
  Algorithm 1, its noise-off ablation and the baselines [36], [6], PDOP [26] and [51],
  mean +- std over the runs;
* ``panel_matched.png``: panel (a) at the same cumulative budget (:mod:`.matched`): each
  baseline's sigma scaled so that its nominal epsilon at T equals Algorithm 1's, every run
  drawn and the diverged ones counted;
* ``panel_b.png``: cumulative pure epsilon of agent 1 per method, nominal accounting
  (every sensitivity constant 1, docs/methods/chen2025.md, "Nominal accounting"; labelled
  "nominal (C = 1): not a privacy guarantee"), checked against each run's ledger;
* ``panel_c.png``: Algorithm 1 over Corollary 1's delta sweep;
* ``panel_d.png``: Algorithm 1 over the lambda_pen sweep (objective, local and pooled CE);
* ``diagnostics.png``: consensus error, aggregate-tracking error and |ztilde| of Algorithm 1;
* the CSV behind each, and ``summary.json`` (final values per curve, the budget totals).

Runs already finished in ``DIR/runs`` are reused; ``--redraw`` draws the figures of every
data set folder of ``DIR`` again from their CSVs, without running anything. A run whose
iterate diverges (the engine's guard, exit status 3) stops its job; it is rerun alone and
kept as "diverged at iteration n" with its metrics up to then (one line says so; the
largest lambda_pen of panel (d) is expected to diverge at this step size), and the other
runs go on in batches.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from mpi_privopt.methods.chen2025.ldp_budget import NOMINAL_EPSILON
from mpi_privopt.reproduce import (BatchFailed, find_mpiexec, launch, log, redraw, require_at_least,
                                  run_batch, run_dir)
from . import figures, matched, panels, settings
from .diagnostics import DIAGNOSTICS, TrackerLog, tracker_diagnostics
from .run_plan import plan


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpi_privopt reproduce chen2025",
                                description="Chen & Wang (2025) Section VI on offline stand-ins")
    p.add_argument("--quick", action="store_true",
                   help="a short smoke version: {runs} run of every curve, T = {iterations}, "
                        "evaluated every {eval_every} (a few tens of seconds)"
                        .format(**settings.QUICK))
    p.add_argument("--runs", type=int, default=None,
                   help=f"seeds per curve (default {settings.RUNS})")
    p.add_argument("--dataset", choices=sorted(settings.LAMBDA_PEN), default="digits",
                   help="digits (MNIST stand-in) or colour-digits (CIFAR-10 stand-in)")
    p.add_argument("--iterations", type=int, default=None,
                   help=f"T (default {settings.ITERATIONS})")
    p.add_argument("--eval-every", type=int, default=None,
                   help=f"evaluate the losses every this many iterations "
                        f"(default {settings.EVAL_EVERY})")
    p.add_argument("--out", default="reproductions/chen2025", help="output directory")
    p.add_argument("--redraw", action="store_true",
                   help="draw the figures again from the CSVs in --out/<dataset> (no runs)")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (default: from PATH)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return p


def run_item(item: dict, comm) -> None:
    """One run of a batch, inside the MPI job (every rank)."""
    from mpi_privopt.config import config_from_dict
    from mpi_privopt.engine import run

    cfg = config_from_dict(item["settings"], f"reproduce chen2025 {item['key']}")
    tracker = TrackerLog(cfg.run.eval_every) if item["diagnostics"] else None
    run(cfg, out=item["out"], comm=comm, stream=None,
        on_setup=None if tracker is None else tracker.attach)
    if tracker is not None:
        tracker.save(item["out"], comm.Get_rank())
    comm.Barrier()
    if comm.Get_rank() == 0:
        (Path(item["out"]) / settings.Run.result_file).write_text('{"status": "completed"}')


def worker(batch_file: str) -> int:
    from mpi4py import MPI

    for item in json.loads(Path(batch_file).read_text()):
        run_item(item, MPI.COMM_WORLD)
    return 0


def _check(args) -> None:
    require_at_least(args, {"runs": 1, "iterations": 1, "eval_every": 1})


def label(r: settings.Run, dataset: str) -> tuple[str, bool]:
    """How a run is named in a line (its curve, as its panel names it) and whether its
    divergence is expected: the largest lambda_pen of panel (d) diverges at this step size
    (docs/reproductions/chen2025.md)."""
    seed = f" (seed {r.seed})" if r.seed else ""
    if r.panel == "d":
        expected = float(r.curve) == max(settings.LAMBDA_PENS[dataset])
        return f"lambda_pen = {r.curve}{seed}", expected
    if r.panel == "c":
        return f"delta = {r.curve}{seed}", False
    if r.panel == "m":
        return f"{settings.METHODS[r.curve]} at the matched budget{seed}", False
    return f"{settings.METHODS.get(r.curve, r.curve)}{seed}", False


def _launch(runs: list[settings.Run], out: Path, mpiexec: str, dataset: str) -> None:
    """Batches of runs per job. A job stops at its first failing run (the runs before it
    are done): that run is retried alone (a diverged run is recorded as such, in one line,
    any other failure is raised) and the batches go on after it."""
    progress = ("batch {batch}/{batches}: {runs} runs on {ranks} ranks in {seconds:.1f} s "
                "({done}/{total} done)")
    while True:
        try:
            launch(runs, out, mpiexec, ranks=settings.RANKS, module=__name__,
                   batch_size=settings.BATCH_RUNS, progress=progress)
            return
        except BatchFailed:
            pass  # its first unfinished run, alone, tells a divergence from a failure
        failed = next(r for r in runs if not (run_dir(out, r) / r.result_file).is_file())
        where = run_dir(out, failed)
        shutil.rmtree(where, ignore_errors=True)
        try:
            run_batch(mpiexec, settings.RANKS, __name__, [{**asdict(failed), "out": str(where)}],
                      out / "runs" / f"single-{os.getpid()}.json")
        except BatchFailed:
            stopped = sorted(where.glob("diverged-agent-*.json"))
            if not stopped:
                raise
            n = json.loads(stopped[0].read_text())["stopped_at_iteration"]
            (where / failed.result_file).write_text(json.dumps({"status": "diverged",
                                                                "iteration": n}))
            name, expected = label(failed, dataset)
            log(f"{name}: diverged at iteration {n}"
                + (", as expected at this step size" if expected else ""))


def _status(out: Path, r: settings.Run) -> dict:
    return json.loads((run_dir(out, r) / r.result_file).read_text())


def _metrics(out: Path, r: settings.Run) -> dict:
    from mpi_privopt.results import read_metrics

    return read_metrics(run_dir(out, r))


def _grouped(runs, out, panel: str) -> dict[str, list[dict]]:
    """Each curve's runs' metrics; a diverged run that left no metrics (its divergence
    stopped the job before rank 0 wrote any) adds no points, and ``summary.json``'s
    ``diverged`` still lists it."""
    groups: dict[str, list[dict]] = {}
    for r in runs:
        if r.panel == panel:
            metrics = _metrics(out, r)
            if metrics or _status(out, r)["status"] != "diverged":
                groups.setdefault(r.curve, []).append(metrics)
    return groups


def budget_rows(runs: list[settings.Run], out: Path, iterations: int) -> tuple[list[dict], dict]:
    """Panel (b)'s rows (every method with noise, agent 1, about 200 points) and the totals
    at T with the seed-0 run's ledger beside them (they must agree)."""
    from mpi_privopt.config import config_from_dict

    rows, totals = [], {}
    stride = max(1, iterations // 200)
    for r in runs:
        if r.panel != "a" or r.seed != 0:
            continue
        params = config_from_dict(r.settings).algorithm.params
        curve = panels.budget_curve(r.settings["algorithm"]["name"], params, iterations)
        if curve is None:
            totals[r.curve] = {"epsilon_T": "unbounded (noise off)"}
            continue
        rows += [{"method": r.curve, "iteration": n, "epsilon": float(curve[n])}
                 for n in range(0, iterations + 1) if n % stride == 0 or n == iterations]
        ledger = None
        if _status(out, r)["status"] == "completed":
            privacy = json.loads((run_dir(out, r) / "privacy.json").read_text())
            ledger = privacy["agents"][0]["all_observers"]["pure"]
        totals[r.curve] = {"epsilon_T": float(curve[-1]), "ledger_epsilon_T": ledger}
    return rows, totals


def _ledger(out: Path, r: settings.Run) -> list[float] | None:
    """Every agent's pure epsilon in a finished run's privacy.json (None if it diverged)."""
    if _status(out, r)["status"] != "completed":
        return None
    privacy = json.loads((run_dir(out, r) / "privacy.json").read_text())
    return [agent["all_observers"]["pure"] for agent in privacy["agents"]]


def matched_panel(runs: list[settings.Run], out: Path, dataset: str,
                  iterations: int) -> tuple[list[dict], dict]:
    """The matched-budget panel (:mod:`.matched`): its rows (every seed of Algorithm 1 and
    of each calibrated baseline, one row per evaluation, flagged when the run diverged) and
    its summary: the target epsilons, each baseline's factors and sigmas, the epsilons at
    its calibrated sigma beside the seed-0 run's own ledger (they must agree), and the
    outcome over the seeds (:func:`.matched.outcome`)."""
    curves = (matched.REFERENCE, *matched.MATCHED)
    epsilons = matched.matched_epsilons(dataset, iterations)
    rows, summary = [], {"accounting": "nominal", "label": NOMINAL_EPSILON,
                         "target_epsilon_T": epsilons[matched.REFERENCE],
                         "derived": matched.NO_DERIVED, "methods": {}}
    for curve in curves:
        mine = [r for r in runs if r.curve == curve
                and r.panel == ("a" if curve == matched.REFERENCE else "m")]
        seeds = [(r.seed, _metrics(out, r), _status(out, r)["status"] == "diverged")
                 for r in mine]
        result = matched.outcome(seeds)
        for seed, metrics, _ in seeds:
            flag = result["per_seed"][str(seed)]["diverged"]
            for k, n in enumerate(metrics.get("iteration", ())):
                rows.append({"curve": curve, "seed": seed, "iteration": int(n),
                             "diverged": int(flag),
                             **{col: float(metrics[col][k]) for col in
                                ("objective", "cross_entropy", "test_accuracy")}})
        section = (settings.algorithm_section(curve, dataset) if curve == matched.REFERENCE
                   else matched.matched_section(curve, dataset, iterations))
        first = next((r for r in mine if r.seed == 0), None)
        summary["methods"][curve] = {
            "factors": None if curve == matched.REFERENCE else
            matched.factors(curve, dataset, iterations),
            "sigma": {k: section[k] for k in matched.SIGMA_KEYS if k in section},
            "epsilon_T": epsilons[curve],
            "ledger_epsilon_T": None if first is None else _ledger(out, first), **result}
    return rows, summary


def _final(rows: list[dict], key: str = "curve") -> dict:
    last: dict[str, dict] = {}
    for row in rows:
        last[row[key]] = row
    return last


def reproduce(args, out: Path, mpiexec: str) -> dict:
    runs = plan(args.dataset, args.runs, args.iterations, args.eval_every)
    log(f"reproduce chen2025 ({args.dataset}): {len(runs)} runs of {args.iterations} "
        f"iterations on {settings.RANKS} ranks")
    _launch(runs, out, mpiexec, args.dataset)
    where = out / args.dataset
    where.mkdir(parents=True, exist_ok=True)
    subtitle = figures.subtitle(args.dataset, args.runs, args.iterations)
    diverged = {r.key: _status(out, r)["iteration"] for r in runs
                if _status(out, r)["status"] == "diverged"}
    stopped = {r.curve: [] for r in runs if r.panel == "d" and r.key in diverged}
    for r in runs:
        if r.curve in stopped and r.panel == "d" and r.key in diverged:
            stopped[r.curve].append(diverged[r.key])

    a = panels.curve_rows(_grouped(runs, out, "a"))
    figures.panel_a(a, where / "panel_a.png", subtitle)
    b, totals = budget_rows(runs, out, args.iterations)
    figures.panel_b(b, where / "panel_b.png", subtitle)
    c = panels.curve_rows(_grouped(runs, out, "c"))
    figures.panel_c(c, settings.DELTAS, where / "panel_c.png", subtitle)
    d = panels.curve_rows(_grouped(runs, out, "d"))
    figures.panel_d(d, settings.LAMBDA_PENS[args.dataset], where / "panel_d.png", subtitle,
                    stopped)
    m_rows, m_summary = matched_panel(runs, out, args.dataset, args.iterations)
    figures.panel_matched(m_rows, m_summary, where / "panel_matched.png", subtitle)
    diag_runs = [r for r in runs if r.diagnostics and _status(out, r)["status"] == "completed"]
    diag = panels.curve_rows(
        {"alg1": [panels.columns_of(tracker_diagnostics(run_dir(out, r), settings.RANKS))
                  for r in diag_runs]}, DIAGNOSTICS)
    figures.diagnostics(diag, where / "diagnostics.png", subtitle)

    summary = {"dataset": args.dataset, "runs": args.runs, "iterations": args.iterations,
               "eval_every": args.eval_every, "model": "softmax regression (numpy)",
               "final": {panel: _final(rows) for panel, rows in
                         (("a", a), ("c", c), ("d", d), ("diagnostics", diag))},
               "budget_agent1_nominal": totals, "matched": m_summary, "diverged": diverged}
    (where / "summary.json").write_text(json.dumps(summary, indent=1))
    log(f"figures and CSVs in {where}")
    return summary


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.redraw:
        return redraw(Path(args.out), figures.redraw, "chen2025")
    defaults = (settings.QUICK if args.quick else
                {"runs": settings.RUNS, "iterations": settings.ITERATIONS,
                 "eval_every": settings.EVAL_EVERY})
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    _check(args)
    mpiexec = find_mpiexec(args.mpiexec, "chen2025")
    reproduce(args, Path(args.out), mpiexec)
    return 0

