"""A single-process computation of token-admm's equations, for the MPI tests to compare with.

Written from the method's documentation (docs/algorithms/token-admm.md), not from its
module: it imports only the kernel (one iteration's equations), the paper's data generator
and the public schedule functions. Each iteration's noise is drawn from the holder's
per-agent, per-chain stream ``SeedSequence(seed, spawn_key=(0x4E010003, agent, chain))``;
the ``sample`` schedule's records from the chain's public stream
``SeedSequence(seed, spawn_key=(0x57414C4B, chain))``.
"""
from __future__ import annotations

import numpy as np

from mpi_privopt.network import walks
from mpi_privopt.methods.chan2023.gradient_admm import ElasticNetPenalty, iteration
from mpi_privopt.methods.chan2023.problems import make_singular

CHAIN_NOISE_TAG = 0x4E010003
SCHEDULE_TAG = 0x57414C4B


def records_of(n_records: int, n_agents: int) -> np.ndarray:
    """Offsets of the contiguous blocks (the first N mod K agents hold one more)."""
    base, extra = divmod(n_records, n_agents)
    return np.concatenate([[0], np.cumsum([base + (k < extra) for k in range(n_agents)])])


def schedule(kind: str, graph, T: int, offsets: np.ndarray, seed: int, chain: int):
    """(iteration owners, the global record of each iteration, the holders of every step)."""
    K = len(offsets) - 1
    if kind == "sample":
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SCHEDULE_TAG, chain)))
        records = rng.integers(int(offsets[-1]), size=T)
        owners = np.array([int(np.flatnonzero(offsets <= r)[-1]) for r in records])
        holders = [int(owners[0])]
        for owner in owners[1:]:
            holders += walks.shortest_path(graph, holders[-1], int(owner))[1:]
        return owners, records, np.array(holders)
    holders = (walks.ring(graph, T) if kind == "ring"
               else walks.walk(graph, T, seed, chain=chain))
    used = np.zeros(K, dtype=int)
    records = []
    for h in holders:
        records.append(offsets[h] + used[h] % (offsets[h + 1] - offsets[h]))
        used[h] += 1
    return np.array(holders), np.array(records), np.array(holders)


def run_chain(kind: str, graph, T: int, seed: int, chain: int, *, n_records: int,
              n_features: int, noise: float = 0.0, radius: float = 0.5, eta: float,
              beta: float, sigma: float, clip: float, x0: float, c1: float = 0.01,
              c2: float = 0.1, data=None, logistic: bool = False) -> np.ndarray:
    """The final token (x~, lam) of one chain on the singular records, or on
    ``data = (A, b, offsets)`` (a user's records; ``logistic``: log(1 + exp(-b <a, x>)))."""
    if data is None:
        A, b, _ = make_singular(n_records, n_features, 18, noise, radius)
        offsets = records_of(n_records, graph.number_of_nodes())
    else:
        A, b, offsets = data
    K = graph.number_of_nodes()
    owners, records, _ = schedule(kind, graph, T, offsets, seed, chain)
    streams = [np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(seed, spawn_key=(CHAIN_NOISE_TAG, k, chain)))) for k in range(K)]
    penalty = ElasticNetPenalty(c1, c2)
    x, lam = np.full(n_features, x0), np.zeros(n_features)
    for owner, r in zip(owners, records):
        a = A[r]
        if logistic:
            gradient = -b[r] / (1.0 + np.exp(b[r] * (a @ x))) * a
        else:
            gradient = 2.0 * (a @ x - b[r]) * a
        norm = np.linalg.norm(gradient)
        if norm > clip:
            gradient = gradient * (clip / norm)
        _, lam, x = iteration(x, lam, gradient, penalty, beta, eta)
        if sigma > 0:
            x = x + streams[owner].normal(0.0, sigma, size=n_features)
    return np.concatenate([x, lam])
