"""Reference solvers for piecewise-linear losses (absolute, hinge).

Each sample's loss is ``max_{lo <= a <= hi} a t_i(w)`` with ``t_i(w) = s_i x_i^T w + c_i``
(see :meth:`Loss.pieces`), and F weights sample i by ``omega_i = 1 / M_k``.

* l2 = 0: a linear program (``t_i = p_i - n_i``, ``w = u - v`` if l1 > 0) solved by HiGHS.
* l2 > 0: smoothing continuation, each kink replaced by a quadratic of width mu that
  shrinks tenfold per stage, every stage solved by Newton in the P-dimensional primal.

Both are then *polished*: the kinks (``t_i = 0``) and zero coordinates of the candidate
define an equality-constrained quadratic (linear when l2 = 0) whose KKT system is solved
exactly; the result is accepted only if its multipliers certify optimality (each kink's
``a_i`` in ``[lo, hi]``, ``|stationarity_j| <= l1`` at zero coordinates, no sample or
coordinate changed side). A certified point is optimal up to rounding.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from scipy.linalg import qr
from scipy.optimize import linprog

from mpi_privopt.problems.consensus.global_problem import GlobalProblem

__all__ = ["lp_minimize", "smoothing_minimize", "polish"]

_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _pieces(problem: GlobalProblem):
    s, c, lo, hi = problem.loss.pieces(problem.y)
    return s[:, None] * problem.X, c, lo, hi


def lp_minimize(problem: GlobalProblem) -> tuple[np.ndarray, bool]:
    """Solve the l2 = 0 case as an LP with HiGHS (interior point + crossover: a vertex).

    Each sample's piece argument is split as ``t_i = p_i - n_i`` with ``p, n >= 0`` and
    cost ``omega_i (hi p_i - lo n_i)``; since ``hi > lo`` an optimum has
    ``min(p_i, n_i) = 0``, so the cost is the loss. N equality rows instead of 2N
    inequalities keeps HiGHS fast.
    """
    A, c, lo, hi = _pieces(problem)
    N, P = A.shape
    l1 = problem.l1
    # columns: w (free) or u, v >= 0 with w = u - v; then p; then n
    W = sparse.csr_matrix(np.hstack([A, -A]) if l1 else A)
    n_w = W.shape[1]
    eye = sparse.identity(N, format="csr")
    A_eq = sparse.hstack([W, -eye, eye], format="csr")
    om = problem.weights
    cost = np.concatenate([np.full(n_w, l1) if l1 else np.zeros(n_w), hi * om, -lo * om])
    bounds = [(0.0, None) if l1 else (None, None)] * n_w + [(0.0, None)] * (2 * N)
    res = linprog(cost, A_eq=A_eq, b_eq=-c, bounds=bounds, method="highs-ipm",
                  options=_LP_OPTIONS)
    if res.x is None:
        return np.zeros(P), False
    x = res.x[:n_w]
    w = x[:P] - x[P:] if l1 else x
    return w, res.status == 0


def _smoothed_newton(A, c, lo, hi, om, l1, l2, w, mu_t, mu_w, max_iter=100):
    """Newton with backtracking on the smoothed objective, from ``w``; returns the new w.

    Each kink ``max(lo t, hi t) = sup_a a t`` becomes ``sup_a (a t - mu a^2 / 2)``
    (Nesterov smoothing: C1, piecewise quadratic, error <= mu max(lo^2, hi^2) / 2), with
    derivative ``a = clip(t / mu, lo, hi)``: the smoothed multiplier. The l1 term is
    smoothed the same way with ``mu_w``. l2 > 0 makes every stage strongly convex.
    """
    P = A.shape[1]

    def parts(v):
        t = A @ v + c
        a = np.clip(t / mu_t, lo, hi)
        f = float(om @ (a * t - 0.5 * mu_t * a * a)) + l2 * float(v @ v)
        g = A.T @ (om * a) + 2.0 * l2 * v
        if l1:
            xi = np.clip(v / mu_w, -1.0, 1.0)
            f += l1 * float(np.sum(xi * v - 0.5 * mu_w * xi * xi))
            g += l1 * xi
        return f, g, t

    f, g, t = parts(w)
    for _ in range(max_iter):
        h = om * ((t > lo * mu_t) & (t < hi * mu_t)) / mu_t
        H = (A.T * h) @ A + 2.0 * l2 * np.eye(P)
        if l1:
            H[np.diag_indices(P)] += l1 * (np.abs(w) < mu_w) / mu_w
        d = np.linalg.solve(H, -g)
        slope = float(g @ d)
        if slope >= 0.0:
            break
        step = 1.0
        while step > 1e-12:
            f_new, g_new, t_new = parts(w + step * d)
            if f_new <= f + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            break  # no decrease at rounding level: this stage is solved
        w = w + step * d
        done = abs(f - f_new) <= 4 * np.finfo(float).eps * max(1.0, abs(f))
        f, g, t = f_new, g_new, t_new
        if done:
            break
    return w


def smoothing_minimize(problem: GlobalProblem, tol: float):
    """Solve the l2 > 0 case by smoothing continuation + Newton, then certify.

    The kinks are smoothed with width ``mu`` shrinking tenfold per stage, each stage
    solved by Newton from the previous stage's point (P x P systems, no per-sample
    loop). From the fourth stage on an exact active-set polish is attempted; the first
    certified point is returned as ``(w, residual, True)``. If none certifies,
    ``(w, nan, False)`` for the last stage (error about its smoothing width).
    """
    A, c, lo, hi = _pieces(problem)
    om, l1, l2 = problem.weights, problem.l1, problem.l2
    # widths relative to the data's scale: t ~ |c|, and w ~ t / ||a_i||
    t_typ = float(np.mean(np.abs(c))) or 1.0
    row = float(np.mean(np.linalg.norm(A, axis=1))) or 1.0
    w = np.zeros(problem.n_features)
    for k in range(14):
        mu_t = t_typ * 10.0 ** (-k)
        mu_w = max(float(np.max(np.abs(w))), t_typ / row) * 10.0 ** (-k)
        w = _smoothed_newton(A, c, lo, hi, om, l1, l2, w, mu_t, mu_w)
        if k >= 3:
            found = polish(problem, w, tol)
            if found is not None:
                return found[0], found[1], True
    return w, math.nan, False


def polish(problem: GlobalProblem, w0: np.ndarray, tol: float):
    """Exact active-set solve around ``w0``; returns ``(w, residual)`` or None.

    Tries increasingly loose thresholds for "at a kink" / "at zero" and keeps the first
    solution whose KKT multipliers certify optimality.
    """
    A, c, lo, hi = _pieces(problem)
    om, l1, l2 = problem.weights, problem.l1, problem.l2
    P = problem.n_features
    t0 = A @ w0 + c
    t_scale = np.abs(A) @ np.abs(w0) + np.abs(c) + 1.0
    w_scale = max(1.0, float(np.max(np.abs(w0))))
    tried = set()
    for rel in (1e-11, 1e-9, 1e-7, 1e-5, 1e-3):
        kink = np.abs(t0) <= rel * t_scale
        zero = (np.abs(w0) <= rel * w_scale) if l1 else np.zeros(P, dtype=bool)
        key = (kink.tobytes(), zero.tobytes())
        if key in tried:
            continue
        tried.add(key)
        found = _certify(A, c, lo, hi, om, l1, l2, np.sign(w0), t0, kink, zero, tol)
        if found is not None:
            return found
    return None


def _independent_rows(B: np.ndarray) -> np.ndarray:
    """Indices of a maximal set of linearly independent rows of ``B`` (pivoted QR)."""
    if B.shape[0] == 0 or B.shape[1] == 0:
        return np.zeros(0, dtype=int)
    R, piv = qr(B.T, mode="r", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > 1e-10 * diag[0])) if diag.size and diag[0] > 0 else 0
    return np.sort(piv[:rank])


def _certify(A, c, lo, hi, om, l1, l2, sgn, t0, kink, zero, tol):
    """Solve the equality-constrained problem for this active set and check its KKT.

    Kinks: ``t_i(w) = 0``; zero coordinates: ``w_j = 0``; every other sample keeps the
    multiplier of its side and every other coordinate its sign. Redundant kink rows
    (degenerate data, e.g. noise-free labels) are dropped for the solve, and the
    multipliers are then found by a small LP.
    """
    P = A.shape[1]
    idx = np.flatnonzero(~zero)
    n = idx.size
    side = np.where(t0 > 0, hi, lo)  # multiplier a_i of samples off their kink
    free = ~kink
    g_fixed = A[free].T @ (om[free] * side[free])
    A_k, om_k = A[kink], om[kink]
    rows = _independent_rows(A_k[:, idx])
    B = A_k[rows][:, idx]
    r = rows.size
    # KKT of  min l2 ||w_S||^2 + (g_fixed + l1 sgn)_S^T w_S  s.t.  B w_S + c_rows = 0
    K = np.zeros((n + r, n + r))
    K[:n, :n] = 2.0 * l2 * np.eye(n)
    K[:n, n:] = B.T
    K[n:, :n] = B
    rhs = np.concatenate([-(g_fixed[idx] + l1 * sgn[idx]), -c[kink][rows]])
    try:
        sol = np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        # l2 = 0 with fewer independent kinks than free coordinates: optimal face
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
    w = np.zeros(P)
    w[idx] = sol[:n]
    t = A @ w + c
    t_tol = 1e-12 * (np.abs(A) @ np.abs(w) + np.abs(c) + 1.0)
    w_tol = 1e-12 * max(1.0, float(np.max(np.abs(w), initial=0.0)))
    primal_ok = (
        np.all(np.abs(t[kink]) <= t_tol[kink])
        # samples off their kink must stay on the side whose multiplier was used
        and np.all(np.where(side[free] == hi, t[free] >= -t_tol[free], t[free] <= t_tol[free]))
        and np.all(sgn[idx] * w[idx] >= -w_tol)
    )
    if not primal_ok:
        return None
    scale = 1.0 + l1 + 2.0 * l2 * float(np.max(np.abs(w), initial=0.0)) + float(
        np.max(np.abs(A).T @ om, initial=0.0)) * max(abs(lo), abs(hi))
    base = g_fixed + 2.0 * l2 * w

    def residual(a_k):
        g = base + A_k.T @ (om_k * a_k)
        on_support = np.abs(g[idx] + l1 * sgn[idx])
        at_zero = np.maximum(np.abs(g[zero]) - l1, 0.0)
        return float(np.max(np.concatenate([on_support, at_zero]), initial=0.0))

    a_k = np.zeros(A_k.shape[0])
    a_k[rows] = sol[n:] / om_k[rows]
    res = residual(a_k)
    if np.all(a_k >= lo - 1e-9) and np.all(a_k <= hi + 1e-9) and res <= tol * scale:
        return w, res
    if r < A_k.shape[0]:
        a_k = _multiplier_lp(A_k, om_k, lo, hi, base, l1, sgn, idx, zero)
        if a_k is not None:
            res = residual(a_k)
            # HiGHS's feasibility tolerance limits this certificate to ~1e-9
            if res <= max(tol, 1e-9) * scale:
                return w, res
    return None


def _multiplier_lp(A_k, om_k, lo, hi, base, l1, sgn, idx, zero):
    """Kink multipliers in ``[lo, hi]`` minimising the stationarity residual (inf-norm)."""
    P, m = A_k.shape[1], A_k.shape[0]
    nz = int(zero.sum())
    M = A_k.T * om_k  # P x m
    E = np.zeros((P, nz))
    E[np.flatnonzero(zero), np.arange(nz)] = l1
    b = base.copy()
    b[idx] += l1 * sgn[idx]
    ones = np.ones((P, 1))
    # |M a + E xi + b| <= rho, minimise rho
    A_ub = np.vstack([np.hstack([M, E, -ones]), np.hstack([-M, -E, -ones])])
    b_ub = np.concatenate([-b, b])
    cost = np.zeros(m + nz + 1)
    cost[-1] = 1.0
    bounds = [(lo, hi)] * m + [(-1.0, 1.0)] * nz + [(0.0, None)]
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs",
                  options=_LP_OPTIONS)
    if res.x is None:
        return None
    return np.clip(res.x[:m], lo, hi)
