"""Beyond the paper, under mpiexec: the observer matrices of the token method and utility
against epsilon at noise levels that give real privacy.

Every run is a real ``mpiexec`` job of the packaged experiment ``token-admm-elastic-net``
(the paper's instance: r = 0.5, beta = 0.9, eta = 1.753086, clip 4 so Delta = 8, the convex
bound) with ``--set`` overrides, launched by :func:`mpi_privopt.reproduce.launch` in batches
of :data:`BATCH_RUNS` runs per mpiexec job (one rank count per job):

* ``ring``: 24 ranks on a ring graph, ``schedule = "ring"``, :data:`RING_PASSES` x 24
  iterations (each agent uses 3 of its about 41 records, one per pass);
* ``sample``: the same 24 ranks and graph with the paper's schedule (records drawn with
  replacement, the token relayed to the owner along shortest paths), 100 iterations;
* ``utility``: the packaged experiment itself (4 ranks, its Erdos-Renyi graph, 100
  iterations) at the sigma of each target local epsilon, :data:`UTILITY_RUNS` seeds each.

All with ``run.evaluate = "none"`` (nothing but the token travels); the gap ``F(x~) - F*``
is scored here, single-process, on the released token every agent holds after the run.
The noise is calibrated so that the paper's local bound of one iteration (Corollary 6.2,
``(eta Delta)^2 / (2 sigma^2)``, :func:`paper_local`) converts to the target epsilon at
delta = 1e-5 (:func:`sigma_for_epsilon`). The method books less,
``(eta Delta / (1 + eta beta))^2 / (2 sigma^2)`` (:func:`local`; docs/methods/chan2023.md,
"Sensitivity of one iteration"): the observer matrices are read against that, so a
target is an upper bound on the local epsilon the runs book (0.36 at target 1).
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from mpi_privopt.privacy.amplification import AmplificationConstants, amplification_ratio, local_rho
from mpi_privopt.privacy.calibration import calibrate_zcdp_total
from ..token_admm import booked_local_rho
from .settings import ITERATIONS, PENALTY, SIGMA_CASE

#: the packaged experiment every run starts from (the paper's instance, r = 0.5)
EXPERIMENT = "token-admm-elastic-net"
#: DP delta of every epsilon here (the runs' privacy.delta default)
DP_DELTA = 1e-5
#: zCDP -> (epsilon, delta) conversion used to calibrate sigma (the runs' headline one)
CONVERSION = "tight"
#: ranks of the observer-matrix runs
MATRIX_RANKS = 24
#: ring passes: records are used once each, so an entry is the max over the owner's uses;
#: passes before the last give k = d - 1 (d the ring distance), the last one is seen by the
#: agents before the owner only in the final release. Two passes show both, three put a
#: whole pass between them.
RING_PASSES = 3
#: local epsilon (one iteration, delta 1e-5) of the observer-matrix runs
MATRIX_EPSILON = 1.0
#: target local epsilons of the utility study: 1-16 give real privacy per iteration; 64-1024
#: show where utility comes back (sigma 1.3 to 0.08; the paper's 0.05-0.7 is epsilon 300-4e4)
TARGET_EPSILONS = (1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0, 1024.0)
#: ranks and seeds of the utility runs (the packaged experiment's graph)
UTILITY_RANKS = 4
UTILITY_RUNS = 10
#: the batch size of the launches (one mpiexec job per batch)
BATCH_RUNS = 60


@functools.cache
def experiment():
    """The packaged experiment's [algorithm] parameters (its eta is the midpoint of (23)
    rounded to 6 decimals: the runs' privacy is computed with that eta, so is everything here)."""
    from mpi_privopt.config import load_config

    return load_config(EXPERIMENT).algorithm.params


def radius() -> float:
    """Delta, the replace-one radius of Definition 3.3: twice the experiment's clip (4, the
    paper's :data:`~.settings.CLIP`)."""
    return 2.0 * experiment().clip


def constants() -> AmplificationConstants:
    """The public constants the runs book with (convex bound, eta <= 1/nu holds)."""
    p = experiment()
    return AmplificationConstants(eta=p.eta, beta=p.beta, nu=SIGMA_CASE.nu,
                                  mu_g=PENALTY.strong_convexity, bound=p.bound)


def local(sigma: float) -> float:
    """The local zCDP the runs book for one iteration at noise ``sigma`` (what an observer
    that sees it directly is charged: the denominator of every observer ratio)."""
    p = experiment()
    return booked_local_rho(p.eta, p.beta, radius(), sigma)


def paper_local(sigma: float) -> float:
    """The paper's local bound of one iteration at noise ``sigma`` (Corollary 6.2:
    ``(eta Delta)^2 / (2 sigma^2)``, ``(1 + eta beta)^2`` above :func:`local`): what the
    noise is calibrated to."""
    return local_rho(experiment().eta, radius(), sigma)


def sigma_for_epsilon(epsilon: float, *, delta: float = DP_DELTA,
                      conversion: str = CONVERSION) -> float:
    """The noise std whose one-iteration local zCDP by the paper's bound converts to
    ``epsilon`` at ``delta`` (the runs then book less: :func:`local`).

    rho from :func:`~mpi_privopt.privacy.calibration.calibrate_zcdp_total`; local_rho is
    proportional to 1/sigma^2, so ``sigma = sqrt(local_rho(eta, Delta, 1) / rho)``.
    """
    rho = calibrate_zcdp_total(epsilon, delta, conversion)
    return math.sqrt(paper_local(1.0) / rho)


def ring_ratio_matrix(K: int, iterations: int, amp: AmplificationConstants,
                      start: int = 0) -> np.ndarray:
    """Closed form of a ring run's observer matrix over local zCDP (rows observer q, columns
    owner j, NaN on the diagonal).

    Iteration t is done by agent ``(start + t) mod K`` with a record of its own, used once.
    Observer q first sees that use when the token reaches it ``d = (q - j) mod K`` hops
    later, after ``k = d - 1`` further iterations, or, if the run ends first, in the final
    release: ``k = iterations - 1 - t``. The entry is the worst of the owner's records.
    """
    ratio = np.full((K, K), np.nan)
    for q in range(K):
        for j in range(K):
            if q == j:
                continue
            d = (q - j) % K
            ks = [d - 1 if t + d < iterations else iterations - 1 - t
                  for t in range(iterations) if (start + t) % K == j]
            ratio[q, j] = max(amplification_ratio(k, amp) for k in ks) if ks else np.nan
    return ratio


@dataclass
class Run:
    """One mpiexec run of the packaged experiment (a :func:`~mpi_privopt.reproduce.launch`
    item): its directory key, the experiment and its overrides."""

    key: str
    overrides: list[str]
    ranks: int
    schedule: str = "sample"
    config: str = EXPERIMENT
    epsilon: float = MATRIX_EPSILON
    seed: int = 0
    result_file: ClassVar[str] = "summary.json"


def _common(sigma: float, seed: int, name: str) -> list[str]:
    return [f"algorithm.sigma={sigma!r}", f"run.seed={seed}", "run.evaluate=none",
            f"run.name={name}", f"privacy.delta={DP_DELTA}"]


def matrix_runs(ranks: int = MATRIX_RANKS, passes: int = RING_PASSES) -> list[Run]:
    """The ring and sample observer-matrix runs (ranks on a ring graph)."""
    sigma = sigma_for_epsilon(MATRIX_EPSILON)
    graph = ["topology.kind=ring"]
    tag = f"K{ranks}-sigma{sigma:.9g}"
    return [Run(f"observers/ring-{tag}", [*graph, "algorithm.schedule=ring",
                                             f"run.iterations={passes * ranks}",
                                             *_common(sigma, 0, "ring")], ranks, "ring"),
            Run(f"observers/sample-{tag}", [*graph, "algorithm.schedule=sample",
                                               f"run.iterations={ITERATIONS}",
                                               *_common(sigma, 0, "sample")], ranks)]


def utility_runs(epsilons=TARGET_EPSILONS, runs: int = UTILITY_RUNS,
                 ranks: int = UTILITY_RANKS) -> list[Run]:
    """The packaged experiment at the sigma of each target local epsilon, seeds 0..runs-1."""
    out = []
    for eps in epsilons:
        sigma = sigma_for_epsilon(eps)
        out += [Run(f"utility/K{ranks}/eps{eps:g}-sigma{sigma:.9g}/seed{s}",
                    _common(sigma, s, "utility"), ranks, epsilon=eps, seed=s)
                for s in range(runs)]
    return out


def _array(rows) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def observers(path: Path) -> dict[str, np.ndarray]:
    """The ``observers`` section of a run's privacy.json as arrays (NaN: nothing observed)."""
    section = json.loads((Path(path) / "privacy.json").read_text())["observers"]
    return {name: _array(section[name]) for name in ("epsilon", "rho", "releases")}


def released_token(path: Path) -> np.ndarray:
    """The final token agent 0 holds after the run (every agent holds the same one)."""
    with np.load(Path(path) / "models-agent-0.npz") as data:
        return data["w"]
