"""Chan, Xie & Zhao's ``singular`` problem: the elastic net (c1 = 0.01, c2 = 0.1) on
their experiments' records, as the authors' notebook makes them (docs/methods/chan2023.md,
"Data").

``[problem] name = "singular"`` (this family's ``CONSENSUS_PROBLEMS`` table): N =
``samples`` records in all, ``features``, label ``noise`` and ``radius``; the data seed is
the authors' 18. Every agent generates the same N records and keeps its contiguous block
(``numpy.array_split``: the first ``N mod K`` agents hold one more), so no data travel.

``make_singular(n_samples=1000, n_features=64, seed=18, noise=0.01, radius=r)``::

    rng  = default_rng(seed)
    Araw = rng.normal(size=(p, N));  Araw[:p//5] = 50 rng.normal(size=(p//5, N))
    Araw = standardise each column (each sample over its p features; population std)
    A    = r Araw^T / sqrt(p)          rows a_i with ||a_i|| = r and <a_i, 1> = 0
    x'   = 3 on the first p//5 features, else 0
    b    = A x' + noise rng.normal(size=N)

The per-sample centring (the notebook's StandardScaler on the transposed matrix) is why no
record's f_i(x) = (<a_i, x> - b_i)^2 is strongly convex
(docs/methods/chan2023.md, "Strong convexity in the experiments").
"""
from __future__ import annotations

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.consensus.losses import LOSSES
from mpi_privopt.problems.consensus.records import block_offsets
from mpi_privopt.problems.registry import ProblemSpec

__all__ = ["SINGULAR", "SINGULAR_DATA_SEED", "make_singular", "singular_counts",
           "singular_block"]

#: the authors' data seed (``make_singular(..., rng=18)`` in their notebook)
SINGULAR_DATA_SEED = 18


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


def singular_counts(n_records: int, n_agents: int) -> np.ndarray:
    """Records per agent of the contiguous split (``numpy.array_split``: the first
    ``N mod K`` agents hold one more)."""
    if n_records < n_agents:
        raise ConfigError(
            f"[problem] samples = {n_records} records cannot be split among {n_agents} agents",
            f"for problem 'singular', samples is the total number of records N: give at "
            f"least one per agent (>= {n_agents})")
    base, extra = divmod(n_records, n_agents)
    return np.array([base + (k < extra) for k in range(n_agents)], dtype=np.int64)


def singular_block(cfg, agent: int, n_agents: int) -> tuple[np.ndarray, np.ndarray]:
    """Agent ``agent``'s contiguous block of the paper's records ``(A, b)`` (``cfg``: the
    ``[problem]`` section)."""
    A, b, _ = make_singular(n_samples=cfg.samples, n_features=cfg.features,
                            seed=SINGULAR_DATA_SEED, noise=cfg.noise, radius=cfg.radius)
    offsets = block_offsets(singular_counts(cfg.samples, n_agents))
    rows = slice(int(offsets[agent]), int(offsets[agent + 1]))
    return np.ascontiguousarray(A[rows]), np.ascontiguousarray(b[rows])


#: the elastic net of Sec. 5 (c1 = 0.01, c2 = 0.1) on the records above
SINGULAR = ProblemSpec("singular", LOSSES["squared"], 0.01, 0.1, LOSSES["squared"].task,
                       synthetic=singular_block)
