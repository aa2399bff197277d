"""zCDP-NFL: private linearised decentralized ADMM (Gauthier et al. 2024, Algorithm 1).

Also home of what the paper's private baselines share with it
(:class:`PerturbedRelease`: the noiseless switch, the budget checks, the dynamic zCDP
noise schedule), so that each baseline only says how its update and its sensitivity differ.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import ConfigError
from ..privacy.calibration import ZCDP_CONVERSIONS, calibrate_phi1
from ..privacy.mechanisms import GaussianMechanism
from ..privacy.release import Release
from .admm import LinearizedADMM
from .base import Algorithm, register


#: Relative margin below the calibrated phi^(1) (see :meth:`PerturbedRelease.calibrate`).
CALIBRATION_MARGIN = 1e-12


def zcdp_nfl_sensitivity(c1: float, n_samples: int, rho: float, degree: int, eta: float) -> float:
    """Lemma I: Delta_k(n) = 2 c1 / (M_k (2 rho |N_k| + 1/eta_k^(n)))."""
    return 2.0 * c1 / (n_samples * (2.0 * rho * degree + 1.0 / eta))


@dataclasses.dataclass
class NoiseParams:
    """``[algorithm]`` keys every private method of the paper has."""

    tau: float = 0.99
    noiseless: bool = False
    horizon: int = 0  # T the noise is calibrated over; 0: run.iterations


@dataclasses.dataclass
class ZCDPParams(NoiseParams):
    """``NoiseParams`` plus the zCDP -> (epsilon, delta) conversion used to calibrate."""

    conversion: str = "standard"


class PerturbedRelease:
    """Mixin: send an iterate through the Gaussian mechanism, with noise from a schedule.

    The class using it sets ``self.params`` (with the fields of :class:`NoiseParams`) and
    ``self.agent``, and calls :meth:`init_noise` in its constructor. :meth:`noise_sigma`
    is the dynamic zCDP rule of zCDP-NFL (Theorem I and the Corollary)::

        sigma_k(n) = Delta_k(n) / sqrt(2 phi^(n)),   phi^(n) = phi^(1) tau^-(n-1),  n = 1..T

    with phi^(1) calibrated so that ``Phi = sum_n phi^(n)`` meets ``privacy.epsilon`` at
    ``privacy.delta`` over T = ``horizon`` or ``run.iterations`` under ``conversion``.
    Subclasses with another accounting (eps-delta-nfl) override :meth:`noise_sigma`.
    With ``noiseless = true`` the iterate goes out in the clear (non-private: unbounded loss).
    """

    choices = {**Algorithm.choices, "conversion": ZCDP_CONVERSIONS}

    @classmethod
    def validate(cls, params) -> None:
        super().validate(params)
        cls.validate_noise(params)

    @classmethod
    def validate_noise(cls, params) -> None:
        if not 0 < params.tau <= 1:
            raise ConfigError(f"algorithm.tau = {params.tau} must be in (0, 1]",
                              "the paper's variance decrease rate; e.g. 0.99, or 1 for constant")
        if params.horizon < 0:
            raise ConfigError(f"algorithm.horizon = {params.horizon} must be >= 0",
                              "give the T to calibrate over, or 0 for run.iterations")

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
                              "to it; the sensitivity uses it)")

    def init_noise(self) -> None:
        self.mechanism = GaussianMechanism(self.agent.noise)
        self.horizon = self.params.horizon or self.agent.iterations
        self.sigmas: list[float] = []
        self.sensitivities: list[float] = []
        if not self.params.noiseless:
            self.calibrate()

    def calibrate(self) -> None:
        """Fix the noise schedule from the budget (here: phi^(1) of the zCDP schedule)."""
        privacy = self.agent.privacy
        # The ledger adds the T per-release costs one by one; a relative margin far above
        # their rounding (T * 1e-16) keeps a run calibrated to exactly the budget within it.
        self.phi1 = (1.0 - CALIBRATION_MARGIN) * calibrate_phi1(
            privacy.epsilon, privacy.delta, self.horizon, self.params.tau, self.params.conversion)

    def noise_sigma(self, n: int, sensitivity: float) -> float:
        """Noise standard deviation of release ``n`` with l2 sensitivity ``sensitivity``."""
        phi_n = self.phi1 * self.params.tau ** (-(n - 1))
        return sensitivity / math.sqrt(2.0 * phi_n)

    def release_iterate(self, w: np.ndarray, n: int, sensitivity: float,
                        out: np.ndarray) -> Release:
        """``w + N(0, sigma_k(n)^2 I)`` written into ``out``, as a private release (or ``w``
        itself, copied, if noiseless)."""
        if self.params.noiseless:
            np.copyto(out, w)
            return Release.nonprivate(out)
        sigma = self.noise_sigma(n, sensitivity)
        self.sigmas.append(sigma)
        self.sensitivities.append(sensitivity)
        return self.mechanism.release(w, sensitivity, sigma, out=out)

    def noise_report(self) -> dict:
        if self.params.noiseless:
            return {self.name: "noiseless (non-private check of the updates)"}
        return {f"{self.name} noise agent {self.agent.id}":
                f"sigma {self.sigmas[0]:.4g} at n=1, {self.sigmas[-1]:.4g} at "
                f"n={len(self.sigmas)} (sensitivity {self.sensitivities[0]:.4g} -> "
                f"{self.sensitivities[-1]:.4g})"}

    def report(self) -> dict:
        out = self.noise_report()
        if not self.params.noiseless:
            out[f"{self.name} phi^(1)"] = (f"{self.phi1:.6g} (tau {self.params.tau}, "
                                           f"{self.params.conversion} conversion, "
                                           f"T = {self.horizon})")
        return out


@register
class ZCDPNFL(PerturbedRelease, LinearizedADMM):
    r"""zCDP-NFL (Gauthier, Gratton, Venkategowda, Werner 2024), Algorithm 1.

    The updates (7)-(9) of :class:`~mpi_privopt.algorithms.admm.LinearizedADMM`, with the
    released iterate perturbed by the Gaussian mechanism. Agent k starts from
    wt_k^(0) = gamma_k^(0) = 0 and, for n = 1..T, with d_k = |N_k|::

        (7)  w_k^(n)  = wt_k^(n-1) - ( g_k^(n-1) + gamma_k^(n-1)
                        + rho sum_{l in N_k} (wt_k^(n-1) - wt_l^(n-1)) ) / (1/eta^(n) + 2 rho d_k)
        (8)  wt_k^(n) = w_k^(n) + xi_k^(n),   xi_k^(n) ~ N(0, sigma_k^2(n) I_P)
             phase "w": broadcast wt_k^(n) to every l in N_k, receive wt_l^(n)
        (9)  gamma_k^(n) = gamma_k^(n-1) + rho sum_{l in N_k} (wt_k^(n) - wt_l^(n))

    The only message is wt_k^(n), one P-vector per link and iteration; gamma_k, the clean
    w_k and the data never leave the agent. eta^(n) is ``eta``, ``eta/sqrt(n)`` or
    ``eta/n`` by ``schedule`` (the paper needs eta -> 0; ``sqrt`` is the recommended one).

    g_k is the subgradient at the agent's own *released* iterate, with every per-sample
    loss gradient clipped to norm c1 = ``problem.clip`` (Assumption 1). Replacing one
    sample moves w_k^(n) by at most (Lemma I)::

        Delta_k(n) = 2 c1 / ( M_k (2 rho d_k + 1/eta^(n)) )

    and the noise follows the dynamic zCDP schedule (Theorem I, Corollary)::

        sigma_k^2(n) = Delta_k(n)^2 / (2 phi^(n)),   phi^(n) = phi^(1) tau^-(n-1),  n = 1..T

    Privacy claim: iteration n is phi^(n)-zCDP for agent k's data, and the run is
    Phi = sum_n phi^(n) = phi^(1) (1 - tau^T) / (tau^(T-1) (1 - tau)) -zCDP against any
    coalition of observers (a broadcast is one release). phi^(1) is calibrated so that Phi
    meets ``privacy.epsilon`` at ``privacy.delta`` over T = ``run.iterations`` under
    ``conversion``: ``standard`` (Bun-Steinke, the paper's), ``tight``
    (Canonne-Kamath-Steinke) or ``exact`` (Gaussian DP): same epsilon, less noise.
    ``horizon`` sets T apart from ``run.iterations``; iterations past it keep the schedule
    going and are stopped by the budget guard once they would exceed ``privacy.epsilon``.

    Everything the agent carries (wt_k, gamma_k) is a function of released values and the
    current data-dependent step, so the whole run is post-processing of the releases.
    ``noiseless = true`` sends w_k in the clear instead: the non-private linearised ADMM
    (its privacy loss is reported as unbounded).
    """

    name = "zcdp-nfl"
    summary = "zCDP-NFL: private linearised ADMM, dynamic zCDP Gaussian noise (Gauthier 2024)"
    private = True

    @dataclasses.dataclass
    class Params(ZCDPParams):
        rho: float = 1.0
        eta: float = 1.0
        schedule: str = "sqrt"

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.init_noise()

    def sensitivity(self, eta: float) -> float:
        problem = self.agent.problem
        return zcdp_nfl_sensitivity(problem.clip, problem.n_samples, self.params.rho,
                                    self.degree, eta)

    def perturb(self, w: np.ndarray, n: int, eta: float, out: np.ndarray) -> Release:
        return self.release_iterate(w, n, self.sensitivity(eta), out)
