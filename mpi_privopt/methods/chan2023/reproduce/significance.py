"""The paper's statistical tests (Tables 1 and 2), with scipy.stats as the notebook uses it.

Both compare two samples of per-run scores: Levene's test for equal variances first; if its
p-value exceeds a threshold, the pooled two-sample t-test, else Welch's; the t-test's p-value
is two-sided.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .settings import (CONVERGENCE_ALPHA, CONVERGENCE_LAG, CONVERGENCE_LEVENE, TABLE2_LEVENE)


@dataclass(frozen=True)
class Comparison:
    """One two-sample test: Levene's p, which t-test it chose, and its two-sided p."""

    levene_p: float
    pooled: bool
    p_value: float

    @property
    def test(self) -> str:
        return "pooled t-test" if self.pooled else "Welch t-test"


def compare(a: np.ndarray, b: np.ndarray, levene_threshold: float) -> Comparison:
    """Levene, then the pooled t-test if its p-value exceeds ``levene_threshold``, else Welch.

    A comparison of constant samples (every run starts at the same x_0) gives nan p-values,
    as in the notebook; scipy's warning about it is silenced here because nan is the answer
    both tests then read (nan > threshold is False).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        levene_p = float(stats.levene(a, b).pvalue)
        pooled = bool(levene_p > levene_threshold)
        p_value = float(stats.ttest_ind(a, b, equal_var=pooled).pvalue)
    return Comparison(levene_p, pooled, p_value)


def convergence_iteration(scores: np.ndarray, lag: int = CONVERGENCE_LAG,
                          levene_threshold: float = CONVERGENCE_LEVENE,
                          alpha: float = CONVERGENCE_ALPHA) -> int | None:
    """Table 1's "convergence iterations": the first j whose scores (one per run, column j
    of ``scores``) and those at j + lag do not differ, i.e. whose one-sided p-value
    (two-sided / 2) exceeds ``alpha``; None if no j < T + 1 - lag does."""
    for j in range(scores.shape[1] - lag):
        if compare(scores[:, j], scores[:, j + lag], levene_threshold).p_value / 2 > alpha:
            return j
    return None


def pairwise(finals: list[np.ndarray],
             levene_threshold: float = TABLE2_LEVENE) -> list[list[Comparison]]:
    """Table 2: every pair (i, j) of samples compared, the diagonal included (p = 1)."""
    return [[compare(a, b, levene_threshold) for b in finals] for a in finals]
