"""Auditing in one run (Steinke, Nasr & Jagielski 2023): many canaries, one run, guesses.

m canaries each take a sign S_j in {-1, +1} uniformly at random (world +: the target's
record j has clipped gradient +c1 u_j, world -: -c1 u_j; changing one S_j replaces one
record). After the run the auditor scores every canary from what crossed the link and,
for a number r of guesses fixed in advance, guesses the sign of the r canaries with the
largest |score| (abstaining on the rest). If the link's releases are (epsilon, delta)-DP
with respect to one record, the number W of correct guesses satisfies (their Theorem 3.1
and Proposition 5.2), with q = e^epsilon / (1 + e^epsilon) and
f(v) = P[Binomial(r, q) >= v]::

    P[W >= v] <= f(v) + 2 m delta max_{i = 1..v} (f(v - i) - f(v)) / i

so a run with v correct guesses refutes every epsilon whose p-value is below 1 - confidence:
:func:`epsilon_lower_bound` is the largest such epsilon.

Even r correct guesses out of r cannot refute more than about log(r / (1 - confidence)):
:func:`best_possible_bound`. With canaries in orthogonal directions, m <= P, so on the
papers' 8-dimensional models the bound cannot exceed about 0.8 whatever the truth.
Pure numpy and scipy.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["p_value", "epsilon_lower_bound", "best_possible_bound", "sign_guesses"]


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P[at least v of r guesses correct] under (epsilon, delta)-DP, m canaries (a bound).

    Parameters
    ----------
    m : int
        Canaries, each sign drawn uniformly and independently.
    r : int
        Guesses made (abstentions excluded), fixed before the run.
    v : int
        Correct guesses.
    epsilon, delta : float
        The null hypothesis: the link is (epsilon, delta)-DP for one record.
    """
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    if epsilon < 0 or not 0 <= delta <= 1:
        raise ValueError(f"need epsilon >= 0 and 0 <= delta <= 1, got {epsilon}, {delta}")
    q = 1.0 / (1.0 + math.exp(-epsilon))
    tail = stats.binom.sf(v - 1, r, q)  # f(v) = P[Binomial(r, q) >= v]
    if delta == 0 or v == 0:
        return float(min(tail, 1.0))
    below = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[B = v-1], ..., P[B = 0]
    spread = np.max(np.cumsum(below) / np.arange(1, v + 1))  # max_i (f(v-i) - f(v)) / i
    return float(min(tail + 2.0 * m * delta * spread, 1.0))


def epsilon_lower_bound(m: int, r: int, v: int, delta: float,
                        confidence: float = 0.95) -> float:
    """The largest epsilon refuted at ``confidence`` by v correct guesses out of r.

    0 when no epsilon is refuted (v not above what chance gives).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    level = 1.0 - confidence
    if p_value(m, r, v, 0.0, delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(m, r, v, high, delta) < level:
        low, high = high, 2.0 * high
        if high > 1e3:  # v = r with a huge r: refutes everything we can represent
            return math.inf
    for _ in range(60):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if p_value(m, r, v, mid, delta) < level else (low, mid)
    return low


def best_possible_bound(m: int, r: int, delta: float, confidence: float = 0.95) -> float:
    """What the audit could show at best: every one of the r guesses correct."""
    return epsilon_lower_bound(m, r, r, delta, confidence)


def sign_guesses(scores: np.ndarray, r: int) -> np.ndarray:
    """Guess sign(score) for the r canaries of largest |score|; 0 (abstain) for the rest."""
    scores = np.asarray(scores, dtype=float)
    if not 0 <= r <= scores.size:
        raise ValueError(f"r = {r} guesses from {scores.size} canaries")
    guesses = np.zeros(scores.size, dtype=int)
    if r:
        chosen = np.argsort(-np.abs(scores), kind="stable")[:r]
        guesses[chosen] = np.sign(scores[chosen]).astype(int)
    return guesses
