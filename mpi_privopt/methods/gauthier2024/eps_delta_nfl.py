"""(epsilon, delta)DP-NFL: zCDP-NFL's updates, classical (epsilon, delta) accounting (baseline)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import ConfigError
from ...privacy.classical_calibration import (basic_composition_gaussian_schedule,
                                              basic_composition_schedule)
from ..baselines.admm import ConsensusState, linearised_gradient_step
from ..contract import Algorithm
from ..perturbed import (planned_iterate_events, IterateRelease, NoiseParams, noise_horizon,
                        run_budget,
                        validate_budget, validate_noise_params)
from .audit import linearised_admm, mechanism_audit
from .zcdp_nfl import linearised_release_sensitivity, private_linearised_step

MECHANISMS = ("classical", "analytic")


def largest_release_epsilon(epsilon: float, delta: float, T: int, tau: float) -> float:
    """The largest per-release eps_n of the basic-composition schedule (the classical
    Gaussian mechanism holds only below 1)."""
    eps_n, _ = basic_composition_schedule(epsilon, delta, T, tau)
    return float(eps_n.max())


def basic_composition(agent, params):
    """The agent's basic-composition schedule for its budget, or None when ``noiseless``."""
    if params.noiseless:
        return None
    return basic_composition_gaussian_schedule(agent.privacy.epsilon, agent.privacy.delta,
                                               noise_horizon(agent, params), params.tau,
                                               params.mechanism)


def check_basic_composition(name: str, cfg) -> None:
    """Raise ConfigError when basic composition over T cannot cover the run (releases past
    T), or gives a per-release eps_n where the classical mechanism does not hold."""
    params = cfg.algorithm.params
    if params.noiseless:
        return
    T = params.horizon or cfg.run.iterations
    if T < cfg.run.iterations:
        raise ConfigError(
            f"{name} composes its budget over algorithm.horizon = {T} releases, "
            f"but run.iterations = {cfg.run.iterations}",
            "set algorithm.horizon = 0 (or >= run.iterations): basic composition has "
            "no budget left for releases past T")
    largest = largest_release_epsilon(cfg.privacy.epsilon, cfg.privacy.delta, T, params.tau)
    if params.mechanism == "classical" and largest >= 1.0:
        raise ConfigError(
            f"privacy.epsilon = {cfg.privacy.epsilon} over T = {T} gives a per-release "
            f"eps_n up to {largest:.4g} >= 1, where the classical Gaussian "
            "mechanism does not hold",
            "set algorithm.mechanism = analytic, or lower privacy.epsilon")


class EpsDeltaNFL(Algorithm):
    r"""(epsilon, delta)DP-NFL, the baseline of Gauthier et al. 2024 (Sec. 5).

    "Identical to zCDP-NFL except that it uses conventional (epsilon, delta)-DP rules to
    control the local noise": the updates (7)-(9) and the message are those of
    :class:`~mpi_privopt.methods.gauthier2024.zcdp_nfl.ZCDPNFL` (the same function,
    :func:`~mpi_privopt.methods.gauthier2024.zcdp_nfl.private_linearised_step`)::

        (7)  w_k^(n)  = wt_k^(n-1) - ( g_k^(n-1) + gamma_k^(n-1)
                        + rho sum_{l in N_k} (wt_k^(n-1) - wt_l^(n-1)) ) / (1/eta^(n) + 2 rho d_k)
        (8)  wt_k^(n) = w_k^(n) + xi_k^(n),   xi_k^(n) ~ N(0, sigma_k^2(n) I_P)
             phase "w": broadcast wt_k^(n) to every l in N_k, receive wt_l^(n)
        (9)  gamma_k^(n) = gamma_k^(n-1) + rho sum_{l in N_k} (wt_k^(n) - wt_l^(n))

    with the same sensitivity Delta_k(n) = 2 c1 / (M_k (2 rho d_k + 1/eta^(n))) (Lemma I).
    Only sigma differs (docs/methods/gauthier2024.md, "(epsilon, delta)DP-NFL"): each release
    is a classical Gaussian
    mechanism for its own (eps_n, delta_n), and the T releases compose by **basic
    composition**, sum_n eps_n = ``privacy.epsilon`` and sum_n delta_n = ``privacy.delta``::

        delta_n = delta / T,   eps_n = eps_1 s^-(n-1),  s = sqrt(tau),
        eps_1 = eps (s^(T-1) - s^T) / (1 - s^T)
        sigma_k(n) = Delta_k(n) sqrt(2 ln(1.25 / delta_n)) / eps_n        (Dwork-Roth Thm A.1)

    so sigma^2 falls like tau^(n-1) as in zCDP-NFL. The classical mechanism needs every
    eps_n < 1 (``mechanism = "classical"``, the default and the paper's "conventional"
    rule); ``mechanism = "analytic"`` uses the analytic Gaussian mechanism (Balle-Wang
    2018), valid for any eps_n and never noisier.

    Privacy claim: (``privacy.epsilon``, ``privacy.delta``)-DP for agent k's data over the
    T = ``horizon`` or ``run.iterations`` releases, by basic composition; running past T
    is refused. The ledger books each release as the Gaussian mechanism it is, so
    ``privacy.json`` gives a tighter (smaller) epsilon for the same releases: the gap is
    what the conventional accounting wastes.
    """

    name = "eps-delta-nfl"
    summary = "(eps,delta)DP-NFL: zCDP-NFL updates, classical Gaussian + basic composition"
    private = True

    @dataclasses.dataclass
    class Params(NoiseParams):
        rho: float = 1.0
        eta: float = 1.0
        schedule: str = "sqrt"
        mechanism: str = "classical"

    positive = ("rho", "eta")
    choices = {**Algorithm.choices, "mechanism": MECHANISMS}

    param_checks = (validate_noise_params,)
    config_checks = (validate_budget, check_basic_composition)

    @classmethod
    def noise_schedule(cls, cfg):
        return basic_composition(run_budget(cfg), cfg.algorithm.params)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        dim = agent.problem.n_features
        self.state = ConsensusState(agent.net, dim, params.rho)
        #: the noise schedule (None: noiseless)
        self.schedule = basic_composition(agent, params)
        self.release = IterateRelease(agent.noise, self.schedule)
        self.w = np.zeros(dim)

    def step(self, n: int) -> None:
        self.w = private_linearised_step(self.state, self.agent.problem, self.release,
                                         self.params, n)

    #: one perturbed iterate per iteration, on a public schedule (a resume checks it)
    planned_events = planned_iterate_events
    gradient_step = linearised_gradient_step
    release_sensitivity = linearised_release_sensitivity

    @property
    def estimate(self) -> np.ndarray:
        return self.w

    #: the trial audit through its mechanism (methods/gauthier2024/audit.py)
    audit = mechanism_audit(linearised_admm, affine=True)

    def report(self) -> dict:
        return self.release.report(self.name, self.agent.id, "schedule")
