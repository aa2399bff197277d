"""Reference solvers for smooth losses (squared, huber, logistic), with optional l1.

Two steps: a first-order warm start (L-BFGS-B, on ``w = u - v`` with ``u, v >= 0`` when
l1 > 0), then an active-set Newton polish in the style of feature-sign search: Newton
steps on the current support with the signs fixed, stepping back to zero any coordinate
that would change sign, and adding the coordinate that violates ``|g_j| <= l1`` most.
The polish stops when the minimum-norm subgradient is at rounding level, which gives
errors far below the 1e-8 target on well-posed problems.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from mpi_privopt.problems.consensus.global_problem import GlobalProblem

__all__ = ["closed_form_ridge", "smooth_minimize", "min_norm_subgradient", "gradient_scale"]


def gradient_scale(problem: GlobalProblem, w: np.ndarray) -> float:
    """Magnitude of the terms summed in the gradient at ``w``.

    Rounding error in the gradient is about machine epsilon times this, so optimality
    tolerances are taken relative to it.
    """
    absX = np.abs(problem.X)
    d = np.abs(problem.loss.derivative(problem.X @ w, problem.y))
    curv = problem.loss.max_curvature or 0.0
    mag = d + curv * (absX @ np.abs(w) + np.abs(problem.y))
    data = float(np.max(absX.T @ (problem.weights * mag))) if problem.X.size else 0.0
    return 1.0 + problem.l1 + 2.0 * problem.l2 * float(np.max(np.abs(w), initial=0.0)) + data


def min_norm_subgradient(problem: GlobalProblem, w: np.ndarray) -> np.ndarray:
    """Minimum-norm element of ``dF(w)`` for a smooth loss plus l1 (coordinatewise)."""
    g = problem.smooth_gradient(w)
    if not problem.l1:
        return g
    at_zero = np.sign(g) * np.maximum(np.abs(g) - problem.l1, 0.0)
    return np.where(w != 0.0, g + problem.l1 * np.sign(w), at_zero)


def closed_form_ridge(problem: GlobalProblem) -> np.ndarray:
    """Minimiser of ``sum_i omega_i (x_i^T w - y_i)^2 + l2 ||w||^2`` (squared loss, l1 = 0).

    Solved as the least-squares problem ``[sqrt(omega) X; sqrt(l2) I] w ~ [sqrt(omega) y; 0]``
    (orthogonal factorisation: error ~ cond * eps rather than cond^2 * eps for the normal
    equations). With l2 = 0 and rank-deficient X this is the minimum-norm minimiser.
    """
    sw = np.sqrt(problem.weights)
    P = problem.n_features
    A = np.vstack([sw[:, None] * problem.X, np.sqrt(problem.l2) * np.eye(P)])
    b = np.concatenate([sw * problem.y, np.zeros(P)])
    return np.linalg.lstsq(A, b, rcond=None)[0]


def _warm_start(problem: GlobalProblem) -> np.ndarray:
    P, l1 = problem.n_features, problem.l1
    opts = {"maxiter": 20000, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-10}
    if not l1:
        res = minimize(problem.value, np.zeros(P), jac=problem.smooth_gradient,
                       method="L-BFGS-B", options=opts)
        return res.x

    def split(x):
        w = x[:P] - x[P:]
        g = problem.smooth_gradient(w)
        f = problem.data_value(w) + problem.l2 * float(w @ w) + l1 * float(x.sum())
        return f, np.concatenate([g + l1, -g + l1])

    res = minimize(split, np.zeros(2 * P), jac=True, method="L-BFGS-B",
                   bounds=[(0.0, None)] * (2 * P), options=opts)
    return res.x[:P] - res.x[P:]


def _restricted_objective(problem: GlobalProblem, sgn: np.ndarray):
    # equals F wherever sign(w) agrees with sgn on the support and w = 0 off it
    l1, l2 = problem.l1, problem.l2
    return lambda w: problem.data_value(w) + l2 * float(w @ w) + l1 * float(sgn @ w)


def _newton_direction(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(H, -g)
    except np.linalg.LinAlgError:
        # singular Hessian (e.g. l2 = 0, huber with every residual in the linear zone)
        return np.linalg.lstsq(H, -g, rcond=None)[0]


def _active_set_newton(problem: GlobalProblem, w: np.ndarray, tol: float, max_iter: int = 200):
    l1 = problem.l1
    w = w.copy()
    if l1:
        support = np.abs(w) > 1e-10 * max(1.0, float(np.max(np.abs(w))))
        w[~support] = 0.0
    else:
        support = np.ones(problem.n_features, dtype=bool)
    sgn = np.sign(w)
    for _ in range(max_iter):
        g = problem.smooth_gradient(w)
        g_s = np.where(support, g + l1 * sgn, 0.0)
        viol = np.where(support, 0.0, np.abs(g) - l1)
        thresh = tol * gradient_scale(problem, w)
        r_s = float(np.max(np.abs(g_s)))
        r_off = float(np.max(viol, initial=0.0))
        if max(r_s, r_off) <= thresh:
            return w, True
        moved = False
        if r_s > thresh:
            moved = _newton_step(problem, w, support, sgn, g_s)
        if not moved:
            if r_off <= thresh:
                return w, False  # stagnated on the support at rounding level
            j = int(np.argmax(viol))
            support[j] = True
            sgn[j] = -np.sign(g[j])
    return w, False


def _newton_step(problem, w, support, sgn, g_s) -> bool:
    """One damped Newton step on the support, in place; False if no decrease was possible."""
    idx = np.flatnonzero(support)
    H = problem.hessian(w)[np.ix_(idx, idx)]
    d = _newton_direction(H, g_s[idx])
    t_max = 1.0
    crossing = np.zeros(idx.size, dtype=bool)
    if problem.l1:
        # stop where the first support coordinate would reach zero: beyond it the
        # signed objective no longer equals F
        crossing = sgn[idx] * d < 0
        if crossing.any():
            t_cross = -w[idx][crossing] / d[crossing]
            t_max = min(1.0, float(t_cross.min()))
    phi = _restricted_objective(problem, sgn)
    f0 = phi(w)
    slope = float(g_s[idx] @ d)
    t = t_max
    while t > 1e-14:
        trial = w.copy()
        trial[idx] += t * d
        # allow rounding-level increase: near the optimum phi is flat to machine precision
        if phi(trial) <= f0 + 1e-4 * t * slope + 8 * np.finfo(float).eps * abs(f0):
            if t == t_max < 1.0:
                hit = idx[crossing][np.isclose(-w[idx][crossing] / d[crossing], t_max,
                                               rtol=1e-12, atol=0.0)]
                trial[hit] = 0.0
                support[hit] = False
                sgn[hit] = 0.0
            changed = not np.array_equal(trial, w)
            w[:] = trial
            return changed
        t *= 0.5
    return False


def smooth_minimize(problem: GlobalProblem, tol: float) -> tuple[np.ndarray, bool]:
    """Minimise F for a smooth loss (+ l1): warm start, then active-set Newton.

    Returns the minimiser and whether the minimum-norm subgradient reached
    ``tol * gradient_scale``.
    """
    return _active_set_newton(problem, _warm_start(problem), tol)
