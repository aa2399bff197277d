"""The audit's counterfactuals of Gauthier et al.'s methods: the target's clean value in each
world (docs/privacy-audit.md; the canary and the harness are :mod:`mpi_privopt.audit.canary`).

Each is called by the audit harness at the moment the target's mechanism releases, before
the method has changed any state, and returns ``clean(g)``: the clean value this step would
release had the canary term ``g`` been added to its gradient, computed by the method's own
step functions. The harness checks that ``clean(0)`` is the value really released.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..baselines.admm import linearised_primal
from ..steps import step_size

if TYPE_CHECKING:  # the audit package loads its statistics: only when a run is audited
    from ...audit.canary import Clean

__all__ = ["exact_admm", "linearised_admm", "mechanism_audit", "subgradient"]


def mechanism_audit(clean_for: Callable[[object, int], Clean], affine: bool = False):
    """The ``audit`` hook of a method audited through its mechanism, with the
    counterfactual ``clean_for`` (below); ``affine``: its clean value is affine in the
    canary term, so the one-run audit applies too."""
    def audit(cls):
        from ...audit.method_audit import MechanismAudit
        return MechanismAudit(clean_for, affine=affine)
    return classmethod(audit)


def linearised_admm(algorithm, n: int) -> Clean:
    # zcdp-nfl, eps-delta-nfl: eq. (7) from the state before the exchange (8)-(9)
    state, params, problem = algorithm.state, algorithm.params, algorithm.agent.problem
    eta = step_size(params.schedule, params.eta, n)
    wt = np.array(state.wt, copy=True)
    gradient = problem.subgradient(wt)
    gamma, neighbours = state.gamma.copy(), state.neighbour_sum.copy()
    return lambda g: linearised_primal(wt, gradient + g, gamma, neighbours, state.rho,
                                       state.degree, eta)


def subgradient(algorithm, n: int) -> Clean:
    # zcdp-grad-nfl: w = sum_l a_kl wt_l - alpha_n g_k(wt_k)
    channel, params = algorithm.channel, algorithm.params
    alpha = step_size(params.schedule, params.step, n)
    average = channel.average(algorithm.self_weight, algorithm.neighbor_weights)
    gradient = algorithm.agent.problem.subgradient(channel.last_sent)
    return lambda g: average - alpha * (gradient + g)


def exact_admm(algorithm, n: int) -> Clean:
    # p-admm: the exact local minimiser; the canary is a linear term of f_k
    state, rho = algorithm.state, algorithm.params.rho
    start = np.array(state.wt, copy=True)
    linear = state.gamma - rho * (state.degree * state.wt + state.neighbour_sum)

    def clean(g: np.ndarray) -> np.ndarray:
        solves, capped = algorithm.solves, algorithm.capped_solves
        try:
            return algorithm.local_minimiser(start, linear + g)
        finally:  # the audit's extra solves are not the run's
            algorithm.solves, algorithm.capped_solves = solves, capped
    return clean
