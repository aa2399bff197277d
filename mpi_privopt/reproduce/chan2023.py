"""Reproduction of Chan, Xie & Zhao 2023 (privacy amplification by iteration for ADMM), Sec. 10.

``python -m mpi_privopt reproduce chan2023 [--runs 100] [--out DIR] [--seed 0]``

Single process, numpy only, seconds: the paper's experiments are one sequential chain of noisy
gradient ADMM iterations on one data set, repeated ``--runs`` times (notes section 4). It is
run in two modes (:mod:`._chan2023.replay`):

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
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import ConfigError
from ..results import write_json
from . import log, write_csv
from ._chan2023 import figures
from ._chan2023.replay import MODES, Setting, lfrak_study, sigma_study
from ._chan2023.settings import (CLIP, ITERATIONS, NOTEBOOK_ETA_OVERRIDE, PAPER_SIGMA, PENALTY,
                                 RUNS, SIGMAS)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpi_privopt reproduce chan2023",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=RUNS,
                   help=f"independent runs per setting (paper: {RUNS})")
    p.add_argument("--out", default="reproductions/chan2023", help="output directory")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the corrected mode's generators (replay mode always uses the "
                        "notebook's default_rng(0))")
    return p


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


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.runs < 2:
        raise ConfigError(f"--runs {args.runs}: the tests compare samples of runs",
                          "give --runs 2 or more (the paper: 100)")
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
            f"{[r['convergence_iterations'] for r in table1]}, Fig. 1(b) plateaus "
            f"{[round(figures.plateau(s), 3) for s in sigma]}, largest Table 2 p-value "
            f"{summary['modes'][mode]['table2_max_offdiagonal_p']:.2e}")
    write_csv(out / "privacy.csv", privacy)
    curve = figures.privacy_curve(out, CLIP, PAPER_SIGMA)
    summary["privacy_curve_at_k"] = [r for r in curve if r["k"] in (0, 2, 20, 100, 200)]
    summary["privacy"] = privacy
    summary["seconds"] = time.perf_counter() - start
    write_json(out / "summary.json", summary)
    log(f"done in {summary['seconds']:.1f} s: tables, figures and CSVs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
