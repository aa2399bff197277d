"""zCDP-NFL: private linearised decentralized ADMM (Gauthier et al. 2024, Algorithm 1)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import ConfigError
from ..privacy.calibration import calibrate_phi1
from ..privacy.mechanisms import GaussianMechanism
from ..privacy.release import Release
from .admm import LinearizedADMM
from .base import register


def zcdp_nfl_sensitivity(c1: float, n_samples: int, rho: float, degree: int, eta: float) -> float:
    """Lemma I: Delta_k(n) = 2 c1 / (M_k (2 rho |N_k| + 1/eta_k^(n)))."""
    return 2.0 * c1 / (n_samples * (2.0 * rho * degree + 1.0 / eta))


@register
class ZCDPNFL(LinearizedADMM):
    r"""zCDP-NFL (Gauthier, Gratton, Venkategowda, Werner 2024), Algorithm 1.

    The updates (7)-(9) of :class:`~mpi_privopt.algorithms.admm.LinearizedADMM`, with the
    released iterate perturbed by the Gaussian mechanism::

        (7)  w_k^(n)  = wt_k^(n-1) - ( g_k^(n-1) + gamma_k^(n-1)
                        + rho sum_{l in N_k} (wt_k^(n-1) - wt_l^(n-1)) ) / (1/eta^(n) + 2 rho d_k)
        (8)  wt_k^(n) = w_k^(n) + xi_k^(n),   xi_k^(n) ~ N(0, sigma_k^2(n) I_P)
             phase "w": broadcast wt_k^(n), receive wt_l^(n)
        (9)  gamma_k^(n) = gamma_k^(n-1) + rho sum_{l in N_k} (wt_k^(n) - wt_l^(n))

    g_k is the subgradient at the agent's own *released* iterate, with every per-sample
    loss gradient clipped to norm c1 = ``problem.clip`` (Assumption 1). Replacing one
    sample moves w_k^(n) by at most (Lemma I)::

        Delta_k(n) = 2 c1 / ( M_k (2 rho d_k + 1/eta^(n)) )

    and the noise follows the dynamic zCDP schedule (Theorem I, Corollary)::

        sigma_k^2(n) = Delta_k(n)^2 / (2 phi^(n)),   phi^(n) = phi^(1) tau^-(n-1),  n = 1..T

    so iteration n is phi^(n)-zCDP and the run is Phi = sum_n phi^(n) -zCDP per agent. phi^(1)
    is calibrated so that Phi meets ``privacy.epsilon`` at ``privacy.delta`` over
    T = ``run.iterations`` under ``conversion``: ``standard`` (Bun-Steinke, the paper's),
    ``tight`` (Canonne-Kamath-Steinke) or ``exact`` (Gaussian DP): same epsilon, less noise.
    ``horizon`` sets T apart from ``run.iterations``; iterations past it keep the schedule
    going and are stopped by the budget guard once they would exceed ``privacy.epsilon``.

    Everything the agent carries (wt_k, gamma_k) is a function of released values and the
    current data-dependent step, so the whole run is post-processing of the releases.
    ``noiseless = true`` sends w_k in the clear instead (a non-private check of the updates:
    its privacy loss is reported as unbounded).
    """

    name = "zcdp-nfl"
    summary = "zCDP-NFL: private linearised ADMM, dynamic zCDP Gaussian noise (Gauthier 2024)"
    private = True

    @dataclasses.dataclass
    class Params:
        rho: float = 1.0
        eta: float = 1.0
        schedule: str = "sqrt"
        tau: float = 0.99
        conversion: str = "standard"
        noiseless: bool = False
        horizon: int = 0  # T the noise is calibrated over; 0: run.iterations

    @classmethod
    def validate(cls, params) -> None:
        super().validate(params)
        if not 0 < params.tau <= 1:
            raise ConfigError(f"algorithm.tau = {params.tau} must be in (0, 1]",
                              "the paper's variance decrease rate; e.g. 0.99, or 1 for constant")
        if params.horizon < 0:
            raise ConfigError(f"algorithm.horizon = {params.horizon} must be >= 0",
                              "give the T to calibrate over, or 0 for run.iterations")
        if params.conversion not in ("standard", "tight", "exact"):
            raise ConfigError(f"algorithm.conversion = {params.conversion!r} is unknown",
                              "use standard (the paper's Bun-Steinke), tight or exact")

    @classmethod
    def validate_config(cls, cfg) -> None:
        if cfg.algorithm.params.noiseless:
            if math.isfinite(cfg.privacy.epsilon):
                raise ConfigError("algorithm.noiseless = true sends clear values but "
                                  f"privacy.epsilon = {cfg.privacy.epsilon} is set",
                                  "set privacy.epsilon = inf for a noiseless run")
            return
        if not math.isfinite(cfg.privacy.epsilon):
            raise ConfigError(f"{cls.name} calibrates its noise to a budget, but "
                              "privacy.epsilon is inf",
                              "set privacy.epsilon (e.g. 10), or algorithm.noiseless = true")
        if not cfg.problem.clip or cfg.problem.clip <= 0:
            raise ConfigError(f"{cls.name} needs a per-sample gradient bound c1, but "
                              "problem.clip is off",
                              "set problem.clip to c1 > 0 (per-sample gradients are clipped "
                              "to it; the sensitivity of Lemma I uses it)")

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.mechanism = GaussianMechanism(agent.noise)
        privacy = agent.privacy
        self.phi1 = (0.0 if params.noiseless else
                     calibrate_phi1(privacy.epsilon, privacy.delta,
                                    params.horizon or agent.iterations,
                                    params.tau, params.conversion))
        self.sigmas: list[float] = []

    def sensitivity(self, eta: float) -> float:
        problem = self.agent.problem
        return zcdp_nfl_sensitivity(problem.clip, problem.n_samples, self.params.rho,
                                    self.degree, eta)

    def perturb(self, w: np.ndarray, n: int, eta: float) -> Release:
        if self.params.noiseless:
            return Release.nonprivate(w)
        delta_n = self.sensitivity(eta)
        phi_n = self.phi1 * self.params.tau ** (-(n - 1))
        sigma = delta_n / math.sqrt(2.0 * phi_n)
        self.sigmas.append(sigma)
        return self.mechanism.release(w, delta_n, sigma)

    def report(self) -> dict:
        if self.params.noiseless:
            return {"zcdp-nfl": "noiseless (non-private check of the updates)"}
        return {"zcdp-nfl phi^(1)": f"{self.phi1:.6g} (tau {self.params.tau}, "
                                    f"{self.params.conversion} conversion)",
                "zcdp-nfl sigma agent 0": f"{self.sigmas[0]:.4g} at n=1, "
                                          f"{self.sigmas[-1]:.4g} at n={len(self.sigmas)}"}
