"""The canary of an audit and, per method, the target's clean value in each world.

Neighbouring datasets differ by replacing one record of the target agent: a canary whose
clipped per-sample gradient is ``+c1 u`` in one world and ``-c1 u`` in the other (an
add/remove canary would shift by only about half the sensitivity and hide a halved
sensitivity). Every method here averages per-sample gradients over the agent's M records,
so the canary adds ``s c1 u / M`` (``s = +1, -1``; ``s = 0``: the midpoint, a record with
zero gradient) to the gradient the method uses.

A method's counterfactual (e.g. Gauthier et al.'s, in
:mod:`mpi_privopt.methods.gauthier2024.audit`, handed out by the method's ``audit()`` hook in
a :class:`~.method_audit.MechanismAudit`) is called by the audit harness at the moment the target's
mechanism releases, before the method has changed any state, and returns ``clean(g)``: the
clean value this step would release had the canary term ``g`` been added to its gradient,
computed by the method's own step functions (:func:`~mpi_privopt.methods.baselines.admm.linearised_primal`,
:meth:`~mpi_privopt.methods.gauthier2024.p_admm.PADMM.local_minimiser`, ...). The run on the wire is
the midpoint world; the harness checks that ``clean(0)`` is the value the method really
released, so a counterfactual that drifts from its method fails loudly.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import ConfigError

__all__ = ["Clean", "auditable", "canary_direction", "canary_gradient", "counterfactual"]

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


def auditable() -> list[str]:
    """The methods with a white-box audit (their ``audit()`` hook is not None)."""
    from ..methods import ALGORITHMS
    return [name for name, method in ALGORITHMS.items() if method.audit() is not None]


def counterfactual(name: str) -> Callable[[object, int], Clean]:
    """Method ``name``'s counterfactual (its audit goes through its mechanism), or a
    ConfigError naming the auditable methods."""
    from ..methods import ALGORITHMS
    audit = ALGORITHMS[name].audit() if name in ALGORITHMS else None
    if audit is None or audit.clean_for is None:
        raise ConfigError(f"no white-box audit for algorithm {name!r} yet",
                          f"audit one of: {', '.join(auditable())}")
    return audit.clean_for
