"""The runs of the reproduction: settings, one :class:`Spec` per run, the sweep and the
step-matching runs, and reading a finished run back.

Every run is a real ``mpiexec -n K`` job of the package (``mpi_privopt run`` semantics) with
``--set`` overrides; runs share launches in batches of :data:`BATCH_RUNS`
(:func:`mpi_privopt.reproduce.launch`), and a run whose directory holds ``summary.json`` is
not run again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from mpi_privopt.reproduce import log, run_dir

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
    from ..eps_delta_nfl import largest_release_epsilon

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


def load_run(out: Path, spec: Spec) -> dict:
    """:func:`mpi_privopt.report.load_run` of the spec's run, with ``spec`` and ``path``."""
    from mpi_privopt.report import load_run as read_run

    path = run_dir(out, spec)
    return {**read_run(path), "spec": spec, "path": path}


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
