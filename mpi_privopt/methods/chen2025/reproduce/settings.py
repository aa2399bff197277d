"""The runs of ``reproduce chen2025``: Section VI of Chen & Wang (2025) on offline stand-ins.

Every run is the personalised-learning task (eq. 22) with softmax regression in numpy, one
sample per agent per iteration, on the paper's 5-ring with constant weights w_ij = 0.3,
evaluated (``run.evaluate = "reference"``) every ``eval_every`` iterations. Per data set
(docs/methods/chen2025.md, "Experimental setup"):

* ``digits`` (stand-in for MNIST): lambda_pen = 0.5, every sigma constant 0.01;
* ``colour-digits`` (stand-in for CIFAR-10): lambda_pen = 0.1, Algorithm 1's sigma 0.001
  and every baseline's sigma divided by 10.

Step scale (docs/methods/chen2025.md, "Step-size scale"; docs/datasets.md): the paper's
lam_x^0 = 1 diverges with this
model, so Algorithm 1 uses lam_x^0 = :data:`STEP` of the data set (0.2 on digits, which
decreases steadily; 0.1 on colour digits, where 0.2 overshoots centrally). The
tracking baselines [36] and [6] take the same factor on their x-steps (alpha0, alpha) so
that the comparison is one of structure, not of step size; PDOP and [51] keep their
schedules (lam^0 = 0.1 and 0.05 already).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

#: the data sets and their paper settings
LAMBDA_PEN = {"digits": 0.5, "colour-digits": 0.1}
#: Algorithm 1's sigma constants (std at t = 0, every block and agent)
SIGMA = {"digits": 0.01, "colour-digits": 0.001}
#: the baselines' noise factor (the std divided by 10 on colour digits)
BASELINE_NOISE = {"digits": 1.0, "colour-digits": 0.1}
#: lam_x^0 of Algorithm 1 (and the x-step factor of [36] and [6]); see the module docstring
STEP = {"digits": 0.2, "colour-digits": 0.1}
#: Corollary 1 sweep (0.08 > 1/14 is "slightly outside"; docs/methods/chen2025.md)
DELTAS = (0.005, 0.01, 0.03, 0.05, 0.08)
#: lambda_pen sweep per data set (docs/methods/chen2025.md, "Sweep values")
LAMBDA_PENS = {"digits": (0.0, 0.1, 0.5, 2.0, 10.0), "colour-digits": (0.0, 0.02, 0.1, 0.5, 2.0)}
#: the defaults of the command 
RUNS, ITERATIONS, EVAL_EVERY = 5, 1000, 20
#: ``--quick``: one seed of every curve over a short horizon (a few tens of seconds); long
#: enough for the largest lambda_pen to diverge (at t = 9-11 on digits)
QUICK = {"runs": 1, "iterations": 30, "eval_every": 5}
RANKS = 5
#: runs per mpiexec job (a failed job is retried one run per job, see chen2025.py)
BATCH_RUNS = 20

#: panel (a)'s methods: label and where the paper's Fig. 1(a) has it
METHODS = {
    "alg1": "Algorithm 1",
    "alg1-noise-off": "Algorithm 1, noise off (ablation)",
    "gt36": "[36] gradient tracking",
    "pat6": "[6] projected aggregative tracking",
    "pdop26": "PDOP [26] in the framework",
    "tvs51": "[51] in the framework",
}


def _ring() -> dict:
    return {"constant_weight": 0.3}


def algorithm_section(method: str, dataset: str) -> dict:
    """The ``[algorithm]`` table of one panel-(a) method on ``dataset``."""
    s, f, step = SIGMA[dataset], BASELINE_NOISE[dataset], STEP[dataset]
    if method in ("alg1", "alg1-noise-off"):
        sigma = 0.0 if method == "alg1-noise-off" else s
        return {"name": "ldp-aggregative", "preset": "chen2025", "lam_x0": step,
                "sigma_x": sigma, "sigma_y": sigma, "sigma_z": sigma,
                "theory_case": "nonconvex", **_ring()}
    if method == "gt36":   # lam_x = (t+1)^-0.5 in the paper, scaled like Algorithm 1's
        return {"name": "aggregative-gt", "preset": "chen2025", "alpha0": step,
                "v_alpha": 0.5, "sigma_y": 0.01 * f, "sigma_z": 0.01 * f, **_ring()}
    if method == "pat6":   # alpha = 1, delta = 0.5 in the paper; alpha scaled likewise
        return {"name": "aggregative-pat", "preset": "chen2025", "alpha": step,
                "delta_step": 0.5, "sigma_y": 0.01 * f, "sigma_z": 0.01 * f, **_ring()}
    if method == "pdop26":  # PDOP's sigma (0.07, 0.008, 0.008)
        return {"name": "pdop-aggregative", "sigma_x": 0.07 * f, "sigma_y": 0.008 * f,
                "sigma_z": 0.008 * f, **_ring()}
    if method == "tvs51":   # [51]'s sigma (0.1, 0.01, 0.01)
        return {"name": "tvs-aggregative", "sigma_x": 0.1 * f, "sigma_y": 0.01 * f,
                "sigma_z": 0.01 * f, **_ring()}
    raise KeyError(method)


def delta_section(delta: float, dataset: str) -> dict:
    """Algorithm 1 at Corollary 1(ii)/(iii)'s parameters for ``delta`` (panel (c))."""
    s = SIGMA[dataset]
    return {"name": "ldp-aggregative", "preset": "corollary1-ii", "delta": delta,
            "lam_x0": STEP[dataset], "sigma_x": s, "sigma_y": s, "sigma_z": s,
            "theory_case": "nonconvex", **_ring()}


def config(dataset: str, algorithm: dict, *, lambda_pen: float | None = None,
           iterations: int, eval_every: int, seed: int, name: str) -> dict:
    """A whole configuration (raw TOML tables) of one run."""
    pen = LAMBDA_PEN[dataset] if lambda_pen is None else lambda_pen
    return {"problem": {"name": "personalised",
                        "options": {"dataset": dataset, "lambda_pen": pen, "batch": 1,
                                    "split": "heterogeneous", "model": "softmax"}},
            "topology": {"kind": "ring"},
            "algorithm": dict(algorithm),
            # the paper's figures use its (nominal) sensitivities; the baselines have no
            # derived accounting (docs/methods/chen2025.md, "Derived accounting")
            "privacy": {"accounting": "nominal"},
            "run": {"iterations": iterations, "eval_every": eval_every,
                    "evaluate": "reference", "seed": seed, "name": name,
                    "progress_every": 0}}


@dataclass
class Run:
    """One mpiexec run (a :func:`~mpi_privopt.reproduce.launch` item): its directory key,
    its panel and curve, and its whole configuration; ``diagnostics``: record the trackers
    (Algorithm 1 only)."""

    key: str
    panel: str
    curve: str
    seed: int
    settings: dict = field(default_factory=dict)
    diagnostics: bool = False
    overrides: list = field(default_factory=list)
    result_file: ClassVar[str] = "done.json"
