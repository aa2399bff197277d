"""A single-process, vectorised Algorithm 1 (Chen & Wang 2025) on the quadratic instance.

Written from the equations (docs/methods/chen2025.md, "Algorithm 1"), independently of
``mpi_privopt.methods``: the whole
network is a few (m x .) arrays, the neighbour sums are one matrix product with the
off-diagonal part of A = I + W, and the quadratic's empirical functions are written out
from its definition (docs/methods/chen2025.md, "Quadratic test instance"). It is fed the same
randomness as a run of the package:

* Laplace noise from each agent's fast noise stream
  ``SeedSequence(seed, spawn_key=(AGENT_NOISE_TAG, i))``, drawn per message in the order
  y (r), z (r), x (n), messages t = 0, 1, ...;
* samples from each agent's sampling stream ``SeedSequence(seed, spawn_key=(i,)).spawn(1)[0]``,
  per iteration xi (B x r) then phi (B x n_i);
* the instance's parameters and x_j^0 from the package's data generator (data, not
  equations).

Only the tests import this module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mpi_privopt.privacy.noise import AGENT_NOISE_TAG
from mpi_privopt.methods.chen2025.problems.quadratic import (QuadraticOptions, quadratic_initial_block,
                                                        quadratic_parameters)


@dataclass
class ReferenceRun:
    """Trajectories of the reference: X[t] (m x n) for t = 0..T, ytilde/ztilde[t] (m x r)
    for t = 0..T-1, and the expected aggregate g(x^t) and (1/m) sum_j grad_y f_j at t."""

    X: np.ndarray
    ytilde: np.ndarray
    ztilde: np.ndarray
    g: np.ndarray
    grad_y_mean: np.ndarray
    x_star: np.ndarray


def optimum(Aq: np.ndarray, P: np.ndarray, B: np.ndarray, kappa: float) -> np.ndarray:
    """x* of the quadratic from its first-order condition, stacked."""
    m = len(Aq)
    A = np.hstack(list(Aq))
    H = np.eye(A.shape[1]) + kappa / m * A.T @ A
    return np.linalg.solve(H, P.ravel() + kappa * A.T @ B.mean(axis=0))


def run_reference(mixing: np.ndarray, T: int, seed: int, opts: QuadraticOptions,
                  lam0: dict, v: dict, sigma: np.ndarray, vs: np.ndarray,
                  box: float = 1e6, samples: int = 1, record: bool = True) -> ReferenceRun:
    """T iterations of Algorithm 1 on ``m = len(mixing)`` agents.

    ``sigma`` and ``vs`` are (m, 3) in block order y, z, x (sigma 0: no noise drawn).
    """
    m = len(mixing)
    ni, r = opts.block, opts.aggregate
    n = m * ni
    params = [quadratic_parameters(opts, seed, i) for i in range(m)]
    Aq = np.array([p[0] for p in params])          # (m, r, ni)
    P = np.array([p[1] for p in params])           # (m, ni)
    Bv = np.array([p[2] for p in params])          # (m, r)
    noise = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(AGENT_NOISE_TAG, i)))
             for i in range(m)]
    sampler = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)).spawn(1)[0])
               for i in range(m)]
    diag = np.diag(mixing).copy()
    off = mixing - np.diag(diag)
    X = np.tile(np.concatenate([quadratic_initial_block(opts, seed, j) for j in range(m)]), (m, 1))
    Y = np.zeros((m, r))
    Z = np.zeros((m, r))
    sum_xi = np.zeros((m, r))
    sum_phi = np.zeros((m, ni))
    own = np.arange(n).reshape(m, ni)              # own[i] = indices of block i
    rows = np.arange(m)[:, None]
    Xs, yt, zt, gs, gys = [X.copy()], [], [], [], []

    def messages(t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        out = []
        for state in (Y, Z, X):
            out.append(state.copy())
        for i in range(m):
            for b, state in enumerate(out):
                if sigma[i, b] > 0:
                    scale = sigma[i, b] * (t + 1.0) ** (-vs[i, b]) / math.sqrt(2.0)
                    state[i] = state[i] + noise[i].laplace(0.0, scale, state.shape[1])
        return tuple(out)

    for t in range(T):
        Ym, Zm, Xm = messages(t)
        for i in range(m):
            sum_xi[i] += (opts.noise_g * sampler[i].standard_normal((samples, r))).sum(axis=0)
            sum_phi[i] += (opts.noise_f * sampler[i].standard_normal((samples, ni))).sum(axis=0)
        count = samples * (t + 1)
        lx, ly, lz = (lam0[k] * (t + 1.0) ** (-v[k]) for k in ("x", "y", "z"))
        x_own = X[rows, own]                                           # (m, ni)
        g_emp = np.einsum("irn,in->ir", Aq, x_own) + sum_xi / count
        Y_next = diag[:, None] * Y + off @ Ym + ly * g_emp
        ytil = (Y_next - Y) / ly
        Z_next = diag[:, None] * Z + off @ Zm + lz * opts.kappa * (ytil - Bv)
        ztil = (Z_next - Z) / lz
        X_next = diag[:, None] * X + off @ Xm
        U = x_own - P - sum_phi / count + np.einsum("irn,ir->in", Aq, ztil)
        X_next[rows, own] -= lx * U
        np.clip(X_next, -box, box, out=X_next)
        if record:
            g_true = np.einsum("irn,in->r", Aq, x_own) / m
            yt.append(ytil)
            zt.append(ztil)
            gs.append(g_true)
            gys.append(opts.kappa * (g_true - Bv.mean(axis=0)))
        X, Y, Z = X_next, Y_next, Z_next
        if record:
            Xs.append(X.copy())
    if not record:
        Xs = [X]
    return ReferenceRun(np.array(Xs), np.array(yt), np.array(zt), np.array(gs), np.array(gys),
                        optimum(Aq, P, Bv, opts.kappa))
