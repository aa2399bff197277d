"""The canary of an audit and, per method, the target's clean value in each world.

Neighbouring datasets differ by replacing one record of the target agent: a canary whose
clipped per-sample gradient is ``+c1 u`` in one world and ``-c1 u`` in the other (an
add/remove canary would shift by only about half the sensitivity and hide a halved
sensitivity). Every method here averages per-sample gradients over the agent's M records,
so the canary adds ``s c1 u / M`` (``s = +1, -1``; ``s = 0``: the midpoint, a record with
zero gradient) to the gradient the method uses.

A :data:`COUNTERFACTUALS` entry is called by the audit harness at the moment the target's
mechanism releases, before the method has changed any state, and returns ``clean(g)``: the
clean value this step would release had the canary term ``g`` been added to its gradient,
computed by the method's own step functions (:func:`~mpi_privopt.methods.baselines.admm.linearised_primal`,
:meth:`~mpi_privopt.methods.gauthier2024.p_admm.PADMM.local_minimiser`, ...). The run on the wire is
the midpoint world; the harness checks that ``clean(0)`` is the value the method really
released, so an entry that drifts from its method fails loudly.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..methods.baselines.admm import linearised_primal
from ..methods.steps import step_size
from ..errors import ConfigError

__all__ = ["COUNTERFACTUALS", "canary_direction", "canary_gradient", "counterfactual"]

#: clean(g): the step's clean value with the canary gradient term g added
Clean = Callable[[np.ndarray], np.ndarray]


def canary_direction(problem) -> np.ndarray:
    """u: the unit eigenvector of the target's ``X^T X`` with the smallest eigenvalue.

    Where the shift reaches the release through the data's curvature (P-ADMM's exact
    minimiser, ``(H + c I)^-1 2 c1 u / M``) this direction moves it most: the white-box
    worst case. For the linearised methods any unit vector moves it by exactly the
    sensitivity. ``e_1`` when the problem has no design matrix.
    """
    X = getattr(problem, "X", None)
    if X is None:
        u = np.zeros(problem.n_features)
        u[0] = 1.0
        return u
    _, vectors = np.linalg.eigh(np.asarray(X, dtype=float).T @ np.asarray(X, dtype=float))
    u = vectors[:, 0]
    return u * np.sign(u[np.argmax(np.abs(u))])  # a fixed sign: the same u on any platform


def canary_gradient(problem, u: np.ndarray, sign: float) -> np.ndarray:
    """The canary's term in the averaged gradient: ``sign c1 u / M``."""
    return sign * problem.clip * u / problem.n_samples


def _linearised_admm(algorithm, n: int) -> Clean:
    # zcdp-nfl, eps-delta-nfl: eq. (7) from the state before the exchange (8)-(9)
    state, params, problem = algorithm.state, algorithm.params, algorithm.agent.problem
    eta = step_size(params.schedule, params.eta, n)
    wt = np.array(state.wt, copy=True)
    gradient = problem.subgradient(wt)
    gamma, neighbours = state.gamma.copy(), state.neighbour_sum.copy()
    return lambda g: linearised_primal(wt, gradient + g, gamma, neighbours, state.rho,
                                       state.degree, eta)


def _subgradient(algorithm, n: int) -> Clean:
    # zcdp-grad-nfl: w = sum_l a_kl wt_l - alpha_n g_k(wt_k)
    channel, params = algorithm.channel, algorithm.params
    alpha = step_size(params.schedule, params.step, n)
    average = channel.average(algorithm.self_weight, algorithm.neighbor_weights)
    gradient = algorithm.agent.problem.subgradient(channel.last_sent)
    return lambda g: average - alpha * (gradient + g)


def _exact_admm(algorithm, n: int) -> Clean:
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


#: method name -> (algorithm, iteration) -> clean(g)
COUNTERFACTUALS: dict[str, Callable[[object, int], Clean]] = {
    "zcdp-nfl": _linearised_admm,
    "eps-delta-nfl": _linearised_admm,
    "zcdp-grad-nfl": _subgradient,
    "p-admm": _exact_admm,
}


#: audited methods with a harness of their own (methods/chan2023/audit.py, methods/chen2025/audit.py)
OWN_HARNESS = ("token-admm", "ldp-aggregative")


def counterfactual(name: str) -> Callable[[object, int], Clean]:
    """The entry of method ``name``, or a ConfigError naming the auditable methods."""
    try:
        return COUNTERFACTUALS[name]
    except KeyError:
        raise ConfigError(f"no white-box audit for algorithm {name!r} yet",
                          f"audit one of: {', '.join([*COUNTERFACTUALS, *OWN_HARNESS])}"
                          ) from None
