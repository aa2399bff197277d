"""zCDP-NFL: private linearised decentralized ADMM (Gauthier et al. 2024, Algorithm 1).

The steps are the linearised ADMM's (:mod:`.admm`); the noise is a schedule value
(:func:`~mpi_privopt.privacy.calibration.zcdp_nfl_schedule`) handed to an
:class:`~.perturbed.IterateRelease`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..baselines.admm import ConsensusState, linearised_gradient_step
from ..contract import Algorithm
from ..perturbed import (planned_iterate_events, ZCDP_CHOICES, IterateRelease, ZCDPParams,
                        validate_budget, validate_noise_params, zcdp_schedule,
                        config_zcdp_schedule)
from ..steps import step_size
from .audit import linearised_admm, mechanism_audit


def zcdp_nfl_sensitivity(c1: float, n_samples: int, rho: float, degree: int, eta: float) -> float:
    """Lemma I: Delta_k(n) = 2 c1 / (M_k (2 rho |N_k| + 1/eta_k^(n)))."""
    return 2.0 * c1 / (n_samples * (2.0 * rho * degree + 1.0 / eta))


def linearised_release_sensitivity(method, n: int) -> float:
    """Delta_k(n) of release n (Lemma I at eta^(n)) of zCDP-NFL or (eps, delta)DP-NFL
    (``method.release_sensitivity``): public, known before the release."""
    params = method.params
    problem = method.agent.problem
    return zcdp_nfl_sensitivity(problem.clip, problem.n_samples, params.rho,
                                method.state.degree, step_size(params.schedule, params.eta, n))


def private_linearised_step(state: ConsensusState, problem, release: IterateRelease,
                            params, n: int) -> np.ndarray:
    """Eqs. (7)-(9) with the release (8) perturbed at Lemma I's sensitivity; returns
    w_k^(n). (zCDP-NFL and (eps, delta)DP-NFL differ only in the release's schedule.)"""
    eta = step_size(params.schedule, params.eta, n)
    w = state.linearised_primal(problem, eta)                                    # (7)
    sensitivity = zcdp_nfl_sensitivity(problem.clip, problem.n_samples, params.rho,
                                       state.degree, eta)
    state.exchange(release(w, n, sensitivity, state.outgoing))                   # (8), (9)
    return w


class ZCDPNFL(Algorithm):
    r"""zCDP-NFL (Gauthier, Gratton, Venkategowda, Werner 2024), Algorithm 1.

    The updates (7)-(9) of the linearised ADMM (:mod:`~mpi_privopt.methods.baselines.admm`), with
    the released iterate perturbed by the Gaussian mechanism. Agent k starts from
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

    positive = ("rho", "eta")
    choices = ZCDP_CHOICES
    param_checks = (validate_noise_params,)

    config_checks = (validate_budget,)
    noise_schedule = classmethod(config_zcdp_schedule)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        dim = agent.problem.n_features
        self.state = ConsensusState(agent.net, dim, params.rho)
        #: the noise schedule (None: noiseless)
        self.schedule = zcdp_schedule(agent, params)
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
        return self.release.report(self.name, self.agent.id, "phi^(1)")
