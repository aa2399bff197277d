"""The settings of Chan, Xie & Zhao's Section 10, as printed and as the authors' notebook ran
them 
(docs/methods/chan2023.md, "Experiments (Section 10 and the notebook)").

Elastic net ``F(x) = (1/N) sum_i (<a_i, x> - b_i)^2 + c1 ||x||_1 + c2 ||x||^2`` on the data
of :func:`~mpi_privopt.methods.chan2023.problems.make_singular` (N = 1000 records, n = 64, seed 18,
label noise 0.01, ``||a_i|| = r``), split as ``f_i(x) = (<a_i, x> - b_i)^2`` (one record per
iteration) and the public ``g(y) = c1 ||y||_1 + c2 ||y||^2``; x_0 = 3 * ones, lambda_0 = 0,
100 iterations, 100 runs.

The step size is the midpoint of interval (23) and Lfrak the contraction factor of Lemma 7.6,
both from :mod:`mpi_privopt.privacy.amplification` with the code's nominal constants
``nu = mu = 2 r^2`` (no record's f is really strongly convex:
docs/methods/chan2023.md, "Strong convexity in the experiments") and
``mu_g = 2 c2``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..gradient_admm import ElasticNetPenalty
from mpi_privopt.privacy.amplification import contraction_factor, midpoint_eta
from mpi_privopt.methods.chan2023.problems import make_singular

#: g(y) = c1 ||y||_1 + c2 ||y||^2 with the paper's c1 = 0.01, c2 = 0.1
PENALTY = ElasticNetPenalty(c1=0.01, c2=0.1)
N_RECORDS, N_FEATURES, DATA_SEED, LABEL_NOISE = 1000, 64, 18, 0.01
ITERATIONS = 100
RUNS = 100
#: x_0 = X0 * ones(n), lambda_0 = 0
X0 = 3.0

#: the noise std "under the same noise level" of Table 1 / Fig. 1(a)
PAPER_SIGMA = 0.01
#: the notebook's Fig. 1(a) reference run: noiseless, eta = 0.1; its min score is "opt"
REFERENCE_ETA = 0.1
#: one numpy default_rng(NOTEBOOK_SEED) per MyADMM object
NOTEBOOK_SEED = 0
#: Fig. 1(b)'s noise levels, all at the first Table 1 case
SIGMAS = (0.05, 0.10, 0.20, 0.50, 0.70)
#: the notebook sets eta = 5 for sigma = 0.7 (undocumented, outside (23))
NOTEBOOK_ETA_OVERRIDE = {0.70: 5.0}

#: convergence test of Table 1: scores at j against j + LAG, Levene p above
#: CONVERGENCE_LEVENE -> pooled t-test else Welch; first j whose one-sided p exceeds ALPHA
CONVERGENCE_LAG, CONVERGENCE_LEVENE, CONVERGENCE_ALPHA = 5, 0.2, 0.05
#: Table 2: Levene p above TABLE2_LEVENE -> pooled t-test else Welch, two-sided
TABLE2_LEVENE = 0.05
#: Fig. 1(a) shows t = 0 .. FIG1A_POINTS - 1
FIG1A_POINTS = 30

#: the per-record gradient clip declared for the privacy statement, Delta = 2 clip
#: (docs/reproductions/chan2023.md: declared, not applied in the experiments)
CLIP = 4.0


@dataclass(frozen=True)
class Case:
    """One row of Table 1: the data radius r (mu = r^2 in the table) and the penalty beta.

    ``notebook_sigma`` is the noise the notebook really used (0 in the fourth row).
    """

    r: float
    beta: float
    notebook_sigma: float

    @property
    def label(self) -> str:
        """The row as the paper labels it (Table 1's mu and beta)."""
        return f"mu={self.r ** 2:g} beta={self.beta:g}"

    @property
    def nu(self) -> float:
        """Smoothness of every f_i, 2 ||a_i||^2 = 2 r^2; the code also takes mu = nu (nominal)."""
        return 2.0 * self.r ** 2

    @property
    def eta(self) -> float:
        """The midpoint of interval (23) (Table 1's eta; the printed 1.95 is a typo)."""
        return midpoint_eta(self.nu, self.nu, PENALTY.strong_convexity, self.beta)

    @property
    def contraction(self) -> float:
        """Lfrak of Lemma 7.6 at :attr:`eta` (a nominal label)."""
        return contraction_factor(self.eta, self.beta, self.nu, self.nu,
                                  PENALTY.strong_convexity)

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """The records ``(A, b)`` of this radius (the notebook's make_singular call)."""
        A, b, _ = make_singular(N_RECORDS, N_FEATURES, DATA_SEED, LABEL_NOISE, self.r)
        return A, b


#: Table 1's rows; the notebook ran the fourth one with sigma = 0
LFRAK_CASES = (Case(0.5, 0.9, PAPER_SIGMA), Case(0.3, 0.5, PAPER_SIGMA),
               Case(0.15, 0.3, PAPER_SIGMA), Case(0.1, 0.15, 0.0))
#: Fig. 1(b) and Table 2 use the first row (Lfrak = 0.95)
SIGMA_CASE = LFRAK_CASES[0]

#: Table 1 as printed (eta and Lfrak rounded, with the typos 1.95 and 0.85)
PAPER_TABLE1 = ((1.95, 0.95, 26), (4.81, 0.91, 13), (20.00, 0.85, 7), (43.30, 0.80, 6))
#: Table 2 as printed: two-sided p-values between the sigmas' final scores
PAPER_TABLE2 = np.array([
    [1.00, 4.20e-27, 1.87e-71, 4.57e-78, 2.30e-79],
    [4.20e-27, 1.00, 3.29e-62, 4.12e-77, 1.11e-78],
    [1.87e-71, 3.29e-62, 1.00, 6.70e-74, 2.22e-76],
    [4.57e-78, 4.12e-77, 6.70e-74, 1.00, 1.83e-36],
    [2.30e-79, 1.11e-78, 2.22e-76, 1.83e-36, 1.00]])
