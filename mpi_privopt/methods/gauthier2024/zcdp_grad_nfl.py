"""zCDP-grad-NFL: distributed subgradient method with zCDP noise (baseline of Gauthier 2024)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..contract import Algorithm
from ..perturbed import (planned_iterate_events, ZCDP_CHOICES, IterateRelease, ZCDPParams,
                        validate_budget, validate_noise_params, zcdp_schedule,
                        config_zcdp_schedule)
from ..steps import curvature, step_size
from .audit import mechanism_audit, subgradient


class ZCDPGradNFL(Algorithm):
    r"""zCDP-grad-NFL: Nedic-Ozdaglar distributed subgradient with zCDP-NFL's noise rule.

    The baseline "conventional subgradient-based networked FL [Nedic & Ozdaglar 2009],
    modified to use zCDP" of Gauthier et al. 2024 (Sec. 5), in the concrete form of
    docs/methods/gauthier2024.md, "zCDP-grad-NFL". Agent k starts from wt_k^(0) = 0 and, for n
    = 1..T::

        w_k^(n)  = sum_{l in N_k U {k}} a_kl wt_l^(n-1)  -  alpha_n g_k(wt_k^(n-1))
        wt_k^(n) = w_k^(n) + xi_k^(n),   xi_k^(n) ~ N(0, sigma_k^2(n) I_P)
        phase "w": broadcast wt_k^(n) to every l in N_k, receive wt_l^(n)

    a_kl are the Metropolis-Hastings weights of ``topology.weights`` (``standard``:
    a_kl = 1/(1 + max(d_k, d_l)), a_kk = 1 - sum_l a_kl); g_k is the same clipped
    subgradient as zCDP-NFL's, at the agent's own released iterate; alpha_n is ``step``,
    ``step/sqrt(n)`` or ``step/n`` by ``schedule`` (``constant`` by default: the paper
    tunes a constant rate to match the ADMM methods' initial speed).

    The only message is wt_k^(n), one P-vector per link and iteration. Replacing one
    sample changes g_k by at most 2 c1 / M_k, so::

        Delta_k(n) = 2 c1 alpha_n / M_k

    and the noise follows zCDP-NFL's dynamic schedule with the same phi^(1), tau and
    conversion: sigma_k^2(n) = Delta_k(n)^2 / (2 phi^(n)), phi^(n) = phi^(1) tau^-(n-1).

    Privacy claim: as zCDP-NFL, Phi = sum_n phi^(n) -zCDP per agent, calibrated to
    ``privacy.epsilon`` at ``privacy.delta`` over T; everything an agent uses is released
    values plus its current data-dependent step (post-processing). ``noiseless = true``:
    plain distributed subgradient descent on clean iterates (non-private).
    """

    name = "zcdp-grad-nfl"
    summary = "zCDP-grad-NFL: distributed subgradient, dynamic zCDP Gaussian noise (baseline)"
    private = True

    @dataclasses.dataclass
    class Params(ZCDPParams):
        step: float = 0.1
        schedule: str = "constant"

    positive = ("step",)
    choices = ZCDP_CHOICES
    param_checks = (validate_noise_params,)

    config_checks = (validate_budget,)
    noise_schedule = classmethod(config_zcdp_schedule)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.self_weight, self.neighbor_weights = agent.mixing_row()
        p = agent.problem.n_features
        self.w = np.zeros(p)
        # wt^(n-1) stays readable (channel.last_sent) while wt^(n) is released into
        # channel.outgoing
        self.channel = agent.net.broadcast_channel("w", p, buffers=2)
        #: the noise schedule (None: noiseless)
        self.schedule = zcdp_schedule(agent, params)
        self.release = IterateRelease(agent.noise, self.schedule)

    def sensitivity(self, alpha: float) -> float:
        problem = self.agent.problem
        return 2.0 * problem.clip * alpha / problem.n_samples

    def release_sensitivity(self, n: int) -> float:
        """The sensitivity of release n, at the step alpha^(n)."""
        return self.sensitivity(step_size(self.params.schedule, self.params.step, n))

    def step(self, n: int) -> None:
        channel = self.channel
        alpha = step_size(self.params.schedule, self.params.step, n)
        g = self.agent.problem.subgradient(channel.last_sent)
        self.w = channel.average(self.self_weight, self.neighbor_weights) - alpha * g
        channel.exchange(self.release(self.w, n, self.sensitivity(alpha), channel.outgoing))

    def gradient_step(self, n: int) -> tuple[str, float, float | None]:
        return ("algorithm.step", step_size(self.params.schedule, self.params.step, n),
                curvature(self.agent.problem))

    @property
    def wt(self) -> np.ndarray:
        """wt_k, the last value sent."""
        return self.channel.last_sent

    #: one perturbed iterate per iteration, on a public schedule (a resume checks it)
    planned_events = planned_iterate_events

    @property
    def estimate(self) -> np.ndarray:
        return self.w

    #: the trial audit through its mechanism (methods/gauthier2024/audit.py)
    audit = mechanism_audit(subgradient, affine=True)

    def report(self) -> dict:
        return self.release.report(self.name, self.agent.id, "phi^(1)")
