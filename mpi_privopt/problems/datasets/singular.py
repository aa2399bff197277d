"""The data of Chan, Xie & Zhao's experiments (notes 4.2), as the authors' notebook makes it.

``make_singular(n_samples=1000, n_features=64, seed=18, noise=0.01, radius=r)``::

    rng  = default_rng(seed)
    Araw = rng.normal(size=(p, N));  Araw[:p//5] = 50 rng.normal(size=(p//5, N))
    Araw = standardise each column (each sample over its p features; population std)
    A    = r Araw^T / sqrt(p)          rows a_i with ||a_i|| = r and <a_i, 1> = 0
    x'   = 3 on the first p//5 features, else 0
    b    = A x' + noise rng.normal(size=N)

The per-sample centring (the notebook's StandardScaler on the transposed matrix) is why no
record's f_i(x) = (<a_i, x> - b_i)^2 is strongly convex (notes 4.3, A4).
"""
from __future__ import annotations

import numpy as np

__all__ = ["make_singular"]


def make_singular(n_samples: int = 1000, n_features: int = 64, seed: int = 18,
                  noise: float = 0.01,
                  radius: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records ``(A, b)`` and the planted ``x_true``: A is n_samples x n_features."""
    rng = np.random.default_rng(seed)
    loud = n_features // 5
    raw = rng.normal(size=(n_features, n_samples))
    raw[:loud, :] = 50 * rng.normal(size=(loud, n_samples))
    # StandardScaler().fit_transform on (features x samples): per column, ddof = 0
    raw = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    A = radius * raw.T / np.sqrt(n_features)
    x_true = np.zeros(n_features)
    x_true[:loud] = 3.0
    b = A @ x_true + noise * rng.normal(size=n_samples)
    return A, b, x_true
