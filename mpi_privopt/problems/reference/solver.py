"""High-precision centralised reference solution ``w* = argmin F`` (scipy only).

The reference minimises the *unclipped* objective F: it is the true optimum of the
problem. With clipping on, the agents follow the gradients of a clipped surrogate whose
minimiser can differ from w*; that gap is part of the bias that clipping introduces, so
it is measured against w*, not hidden by moving the target.

Methods (``method="auto"`` picks the one that applies):

==============  =====================================  ===============================
method          applies to                             how / precision
==============  =====================================  ===============================
closed-form     squared loss, l1 = 0                   least squares (QR), ~ cond * eps
newton          smooth loss (squared, huber,           L-BFGS-B warm start + active-set
                logistic), any l1, l2                  Newton to rounding level
lp              absolute / hinge, l2 = 0               HiGHS vertex + exact KKT polish
smoothing       absolute / hinge, l2 > 0               smoothing continuation + Newton,
                                                       then exact KKT polish
==============  =====================================  ===============================

``converged`` is True when optimality is certified: a minimum-norm subgradient below
``tol`` relative to the gradient's scale (smooth losses), or the KKT multipliers of an
exact active-set solve (piecewise-linear losses; for "lp" HiGHS's own status is the
fallback when the polish cannot certify). A certified solution is exact up to rounding,
well inside the 1e-8 relative target. Unregularised logistic regression on separable
data has no minimiser: the result is then a point of tiny F with ``converged=False``.
"""
from __future__ import annotations

import math
import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.consensus.global_problem import GlobalProblem
from mpi_privopt.problems.reference.solution import ReferenceSolution

__all__ = ["solve_reference", "REFERENCE_METHODS"]

REFERENCE_METHODS = ("auto", "closed-form", "newton", "lp", "smoothing")


def _auto_method(problem: GlobalProblem) -> str:
    if problem.loss.smooth:
        return "closed-form" if problem.loss.name == "squared" and not problem.l1 else "newton"
    return "smoothing" if problem.l2 > 0 else "lp"


def solve_reference(
    problem: GlobalProblem, *, tol: float = 1e-12, method: str = "auto"
) -> ReferenceSolution:
    """Minimise the unclipped ``F(w) = sum_k f_k(w)`` to high precision.

    Parameters
    ----------
    problem : GlobalProblem
        All agents' data.
    tol : float
        Relative optimality tolerance (stationarity residual relative to the scale of
        the terms summed in the gradient).
    method : {"auto", "closed-form", "newton", "lp", "smoothing"}
        Force a method (useful to cross-check); "auto" picks by loss and l1/l2.

    Returns
    -------
    ReferenceSolution
    """
    if method not in REFERENCE_METHODS:
        raise ConfigError(f"unknown reference method {method!r}",
                          f"choose one of {', '.join(REFERENCE_METHODS)}")
    if method == "auto":
        method = _auto_method(problem)
    loss, l1, l2 = problem.loss, problem.l1, problem.l2
    applicable = {
        "closed-form": loss.name == "squared" and not l1,
        "newton": loss.smooth,
        "lp": not loss.smooth and not l2,
        "smoothing": not loss.smooth and l2 > 0,
    }
    if not applicable[method]:
        raise ConfigError(
            f"reference method {method!r} does not apply to the {loss.name} loss with "
            f"l1={l1:g}, l2={l2:g}",
            'use method="auto"',
        )
    if method in ("closed-form", "newton"):
        return _smooth(problem, method, tol)
    return _piecewise(problem, method, tol)


def _smooth(problem: GlobalProblem, method: str, tol: float) -> ReferenceSolution:
    # scipy (imported by the solvers) is loaded only where a reference is solved
    from mpi_privopt.problems.reference.smooth import (closed_form_ridge, gradient_scale,
                                                       min_norm_subgradient, smooth_minimize)
    if method == "closed-form":
        w = closed_form_ridge(problem)
        label = "closed-form least squares"
    else:
        w, _ = smooth_minimize(problem, tol)
        label = "L-BFGS-B + active-set Newton"
    residual = float(np.max(np.abs(min_norm_subgradient(problem, w)), initial=0.0))
    converged = residual <= tol * gradient_scale(problem, w)
    if problem.loss.name == "logistic" and not problem.l1 and not problem.l2:
        # every margin positive: the data are separable, F -> 0 along w and no
        # minimiser exists, however small the gradient has become
        if np.all(problem.y * (problem.X @ w) > 0):
            converged = False
    return ReferenceSolution(w, problem.value(w), label, bool(converged), residual)


def _piecewise(problem: GlobalProblem, method: str, tol: float) -> ReferenceSolution:
    from mpi_privopt.problems.reference.piecewise import lp_minimize, polish, smoothing_minimize
    if method == "smoothing":
        w, residual, certified = smoothing_minimize(problem, tol)
        label = "smoothing-continuation Newton"
        return ReferenceSolution(w, problem.value(w), label + (" + KKT polish" if certified else ""),
                                 certified, residual)
    w0, ok = lp_minimize(problem)
    polished = polish(problem, w0, tol)
    if polished is not None:
        w, residual = polished
        # a certified w cannot be worse than the LP point; if it is, distrust the certificate
        if problem.value(w) <= problem.value(w0) + 1e-12 * max(1.0, abs(problem.value(w0))):
            return ReferenceSolution(w, problem.value(w), "HiGHS LP + KKT polish", True, residual)
    # HiGHS's own optimality (to its 1e-10 feasibility tolerances) without a certificate
    return ReferenceSolution(w0, problem.value(w0), "HiGHS LP", bool(ok), math.nan)
