r"""Single-process noisy gradient ADMM on the paper's instance, in two modes.

One chain is the noisy loop (docs/methods/chan2023.md, "Noise placement") with the kernel of
:mod:`mpi_privopt.methods.chan2023.gradient_admm` (A = I, B = -I, y -> lambda -> x): per iteration
one record index ``i`` drawn uniformly with replacement, then ``x~ = x + sigma N(0, I)``.

``mode = "replay"`` is the authors' notebook as it really runs (docs/methods/chan2023.md, "Run
protocol"), so that Table 1
comes out exactly:

* one ``numpy.random.default_rng(0)`` per study (the notebook's ``admm_L`` and ``admm_sigma``
  objects), drawing per iteration ``integers(1000)`` and then ``normal(size=64)``, the
  normal even when sigma = 0; the stream continues across runs and cases;
* the gap's reference is the notebook's "opt" (docs/methods/chan2023.md, "What is measured"):
the minimum score of one noiseless run
  made first with the same generator, with eta = 0.1 for Fig. 1(a) and the midpoint eta for
  Fig. 1(b);
* the fourth Table 1 case runs with sigma = 0 and sigma = 0.7 with eta = 5;
* the score is the elastic-net objective at the noisy iterate, ``F(x~_t)``, t = 0..100.

``mode = "corrected"`` fixes what docs/methods/chan2023.md flags: the reference is the true
optimum F* (the
package's certified reference solver), every Table 1 case uses sigma = 0.01 and every sigma the
midpoint eta, each case has its own recorded generator ``default_rng(SeedSequence(seed,
spawn_key=(study, case)))``; besides ``F(x~_t)`` it logs the paper's ``f(x~_t) + g(y_t)``
with ``y_t = G(lambda_t - beta x~_t)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..gradient_admm import iteration, y_step
from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.consensus.global_problem import GlobalProblem
from mpi_privopt.problems.consensus.local import LocalProblem
from mpi_privopt.problems.consensus.losses import make_loss
from mpi_privopt.problems.reference.solver import solve_reference
from .settings import (ITERATIONS, LFRAK_CASES, NOTEBOOK_ETA_OVERRIDE, NOTEBOOK_SEED,
                       PAPER_SIGMA, PENALTY, REFERENCE_ETA, SIGMA_CASE, SIGMAS, X0, Case)

MODES = ("replay", "corrected")
#: spawn keys' first entry in corrected mode: Fig. 1(a) / Table 1, Fig. 1(b) / Table 2
STUDIES = {"lfrak": 0, "sigma": 1}


class Instance:
    """The records of one Table 1 case and the objective the experiments score.

    ``f(x) = (1/N) sum_i (<a_i, x> - b_i)^2`` is the records' average (the package's squared
    loss and :class:`GlobalProblem` with one agent); ``g`` is :data:`PENALTY`.
    """

    def __init__(self, case: Case) -> None:
        self.case = case
        self.A, self.b = case.data()
        self.loss = make_loss("squared")
        self.problem = GlobalProblem([LocalProblem(self.A, self.b, self.loss, PENALTY.c1,
                                                   PENALTY.c2, n_agents=1)])

    @property
    def n_records(self) -> int:
        return self.A.shape[0]

    @property
    def n_features(self) -> int:
        return self.A.shape[1]

    def gradient(self, i: int, x: np.ndarray) -> np.ndarray:
        """grad f_i(x) = 2 (<a_i, x> - b_i) a_i."""
        a = self.A[i]
        return self.loss.derivative(np.dot(a, x), self.b[i]) * a

    def objective(self, x: np.ndarray) -> float:
        """F(x) = f(x) + g(x): the notebook's score at the noisy iterate."""
        return self.problem.data_value(x) + PENALTY.value(x)

    def split_objective(self, x: np.ndarray, y: np.ndarray) -> float:
        """f(x) + g(y): the paper's measure."""
        return self.problem.data_value(x) + PENALTY.value(y)

    def optimum(self) -> float:
        """F* = min F, by the package's certified reference solver."""
        ref = solve_reference(self.problem)
        if not ref.converged:
            raise RuntimeError(f"the reference solver did not certify F* for {self.case.label} "
                               f"(residual {ref.residual:.3g})")
        return ref.value


@dataclass
class Runs:
    """Independent chains of one setting: scores per run (rows) and iteration t = 0..T."""

    objective: np.ndarray   # F(x~_t)
    split: np.ndarray       # f(x~_t) + g(y_t)
    max_gradient_norm: float  # the largest ||grad f_i(x~_t)|| any chain queried


def chain(inst: Instance, rng: np.random.Generator, *, eta: float, beta: float, sigma: float,
          iterations: int = ITERATIONS) -> tuple[np.ndarray, np.ndarray, float]:
    """One chain from x~_0 = X0 * ones, lambda_0 = 0; returns its two score curves and the
    largest gradient norm it queried.

    Draws, per iteration, ``rng.integers(N)`` then ``rng.normal(size=n)`` (the notebook's
    order; the normal is drawn even when sigma = 0, so the stream does not depend on sigma).
    """
    x = np.full(inst.n_features, X0)
    lam = np.zeros(inst.n_features)
    objective = np.empty(iterations + 1)
    split = np.empty(iterations + 1)
    biggest = 0.0
    for t in range(iterations):
        i = rng.integers(inst.n_records)
        grad = inst.gradient(i, x)
        biggest = max(biggest, float(np.linalg.norm(grad)))
        y, lam_next, x_next = iteration(x, lam, grad, PENALTY, beta, eta)
        objective[t], split[t] = inst.objective(x), inst.split_objective(x, y)
        x, lam = x_next + sigma * rng.normal(size=inst.n_features), lam_next
    objective[iterations] = inst.objective(x)
    split[iterations] = inst.split_objective(x, y_step(x, lam, PENALTY, beta))
    return objective, split, biggest


def chains(inst: Instance, rng: np.random.Generator, runs: int, *, eta: float, beta: float,
           sigma: float, iterations: int = ITERATIONS) -> Runs:
    """``runs`` chains one after the other on the same generator (the notebook's
    ``multiple_time_fit``)."""
    done = [chain(inst, rng, eta=eta, beta=beta, sigma=sigma, iterations=iterations)
            for _ in range(runs)]
    return Runs(objective=np.array([d[0] for d in done]), split=np.array([d[1] for d in done]),
                max_gradient_norm=max(d[2] for d in done))


@dataclass
class Setting:
    """One curve of a figure: a case run ``runs`` times at (eta, sigma), and its reference."""

    mode: str
    study: str
    case: Case
    sigma: float
    eta: float
    reference: float        # subtracted from the scores to make the gap
    reference_kind: str
    runs: Runs
    seeds: dict = field(default_factory=dict)

    @property
    def gap(self) -> np.ndarray:
        """Per run and t: F(x~_t) - reference."""
        return self.runs.objective - self.reference

    @property
    def split_gap(self) -> np.ndarray:
        """Per run and t: f(x~_t) + g(y_t) - reference."""
        return self.runs.split - self.reference


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}", f"choose one of {', '.join(MODES)}")


def _corrected_rng(seed: int, study: str, index: int) -> tuple[np.random.Generator, dict]:
    key = (STUDIES[study], index)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))
    return rng, {"generator": "numpy default_rng(SeedSequence(seed, spawn_key))",
                 "seed": seed, "spawn_key": list(key)}


def _notebook_seeds(study: str) -> dict:
    first = (f"a noiseless reference run with eta = {REFERENCE_ETA:g} before each case's runs"
             if study == "lfrak" else "one noiseless reference run with the midpoint eta")
    return {"generator": f"numpy default_rng({NOTEBOOK_SEED}), one for the whole study",
            "seed": NOTEBOOK_SEED,
            "order": f"per iteration integers(N) then normal(size=n); {first}; the stream "
                     "continues across runs and cases"}


def lfrak_study(mode: str, runs: int, seed: int = 0,
                iterations: int = ITERATIONS) -> list[Setting]:
    """Table 1 and Fig. 1(a): every case of :data:`LFRAK_CASES` at its midpoint eta."""
    _check_mode(mode)
    out = []
    notebook_rng = np.random.default_rng(NOTEBOOK_SEED)
    for index, case in enumerate(LFRAK_CASES):
        inst = Instance(case)
        if mode == "replay":
            rng, seeds = notebook_rng, _notebook_seeds("lfrak")
            reference_run, _, _ = chain(inst, rng, eta=REFERENCE_ETA, beta=case.beta,
                                        sigma=0.0, iterations=iterations)
            reference = float(reference_run.min())
            kind = f"notebook opt: min score of a noiseless run with eta = {REFERENCE_ETA:g}"
            sigma = case.notebook_sigma
        else:
            rng, seeds = _corrected_rng(seed, "lfrak", index)
            reference, kind, sigma = inst.optimum(), "F* (certified reference solver)", \
                PAPER_SIGMA
        result = chains(inst, rng, runs, eta=case.eta, beta=case.beta, sigma=sigma,
                        iterations=iterations)
        out.append(Setting(mode, "lfrak", case, sigma, case.eta, reference, kind, result,
                           seeds))
    return out


def sigma_study(mode: str, runs: int, seed: int = 0,
                iterations: int = ITERATIONS) -> list[Setting]:
    """Fig. 1(b) and Table 2: :data:`SIGMA_CASE` at every noise level of :data:`SIGMAS`."""
    _check_mode(mode)
    case = SIGMA_CASE
    inst = Instance(case)
    if mode == "replay":
        notebook_rng = np.random.default_rng(NOTEBOOK_SEED)
        reference_run, _, _ = chain(inst, notebook_rng, eta=case.eta, beta=case.beta,
                                    sigma=0.0, iterations=iterations)
        reference = float(reference_run.min())
        kind = "notebook opt: min score of a noiseless run with the midpoint eta"
    else:
        reference, kind = inst.optimum(), "F* (certified reference solver)"
    out = []
    for index, sigma in enumerate(SIGMAS):
        if mode == "replay":
            rng, seeds = notebook_rng, _notebook_seeds("sigma")
            eta = NOTEBOOK_ETA_OVERRIDE.get(sigma, case.eta)
        else:
            (rng, seeds), eta = _corrected_rng(seed, "sigma", index), case.eta
        result = chains(inst, rng, runs, eta=eta, beta=case.beta, sigma=sigma,
                        iterations=iterations)
        out.append(Setting(mode, "sigma", case, sigma, eta, reference, kind, result, seeds))
    return out
