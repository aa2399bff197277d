"""The statistics of a privacy audit: from test outcomes to lower bounds on privacy loss.

Pure functions, no MPI, importable by any audit or attack (the one-run variant, the
subset-sum exposure attack):

* :func:`clopper_pearson`: exact binomial confidence interval of an error rate;
* :func:`gdp_mu_lower_bound`: the Gaussian-DP mu a test with false-positive rate ``fpr``
  and false-negative rate ``fnr`` refutes (any mu-GDP mechanism has
  ``fnr >= Phi(Phi^-1(1 - fpr) - mu)``, Dong, Roth & Su 2019);
* :func:`eps_lower_bound`: the same for (epsilon, delta)-DP
  (``fpr + e^eps fnr >= 1 - delta`` and symmetrically, Kairouz et al. 2015);
* :func:`audit_bound`: both, from counts, with Clopper-Pearson upper bounds on the two
  rates (the bounds hold with the stated confidence, whatever the mechanism);
* :func:`midpoint_audit`: a log-likelihood-ratio test at threshold 0, every trial
  counted; :func:`select_threshold` and :func:`split_audit`: for other scores, the
  threshold chosen on trials kept apart from the ones that are counted (no selection
  bias);
* :func:`trials_needed`: how many trials an audit needs to reach a fraction of a mu;
* :func:`gaussian_lr_weights`, :func:`laplace_lr`: the likelihood-ratio statistics;
* :func:`lag_correlation_test`, :func:`variance_test`: checks that standardised noise
  residuals are independent across iterations and of the booked variance;
* :func:`membership_attack`: a membership-inference score's advantage TPR - FPR, its rule
  chosen and its advantage measured on separate halves of the trials;
* :func:`mi_advantage_bound`: the largest membership advantage ``2 Phi(mu/2) - 1`` mu-GDP
  allows, and :func:`eps_advantage_bound` the (epsilon, delta) one (at delta = 0 the pure
  one, ``(e^eps - 1)/(e^eps + 1)``).

What a mu bound means: ``gdp_mu_lower_bound`` inverts a single (fpr, fnr) point through
the Gaussian trade-off curve ``f_mu``. If the mechanism is mu-GDP (what the ledger's
exact Gaussian composition claims) then mu >= the bound, with no further assumption. Read
as "the mechanism's GDP parameter", the number assumes the mechanism's trade-off curve is
a Gaussian one (true of composed Gaussian mechanisms, not of Laplace ones).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special, stats

from ..privacy.conversions import gaussian_delta

__all__ = ["AuditBound", "audit_bound", "clopper_pearson", "eps_advantage_bound",
           "eps_lower_bound", "gaussian_lr_weights", "gdp_mu_lower_bound",
           "lag_correlation_test", "laplace_lr", "membership_attack", "mi_advantage_bound",
           "midpoint_audit", "pure_split_audit", "round_pure_scores", "select_threshold",
           "split_audit",
           "pure_trials_needed", "trials_needed", "variance_test"]


def clopper_pearson(errors: int | np.ndarray, trials: int | np.ndarray,
                    alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) two-sided ``1 - alpha`` interval of a binomial rate.

    Each side holds with probability ``1 - alpha/2``; a one-sided upper bound at level
    ``1 - a`` is the upper end with ``alpha = 2a``. Vectorised over ``errors``.
    """
    k = np.asarray(errors, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return lo, hi


def gdp_mu_lower_bound(fpr: float | np.ndarray, fnr: float | np.ndarray) -> np.ndarray:
    """The smallest mu for which a mu-GDP mechanism allows a test with these rates.

    ``mu >= Phi^-1(1 - fpr) - Phi^-1(fnr)``, floored at 0 (a test no better than chance
    refutes nothing).
    """
    fpr = np.clip(np.asarray(fpr, dtype=float), 0.0, 1.0)
    fnr = np.clip(np.asarray(fnr, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = special.ndtri(1.0 - fpr) - special.ndtri(fnr)
    return np.maximum(np.nan_to_num(mu, nan=0.0, posinf=np.inf), 0.0)


def eps_lower_bound(fpr: float | np.ndarray, fnr: float | np.ndarray,
                    delta: float) -> np.ndarray:
    """The smallest epsilon for which an (epsilon, delta)-DP mechanism allows these rates.

    ``max(ln((1 - delta - fpr) / fnr), ln((1 - delta - fnr) / fpr))``, floored at 0.
    """
    fpr = np.asarray(fpr, dtype=float)
    fnr = np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fpr, 0.0) / fnr)
        b = np.log(np.maximum(1.0 - delta - fnr, 0.0) / fpr)
    return np.maximum(np.nan_to_num(np.maximum(a, b), nan=0.0, neginf=0.0), 0.0)


class AuditBound(dict):
    """What :func:`audit_bound` returns (a dict, JSON-ready): counts, rates, their
    Clopper-Pearson upper bounds, ``mu_lower`` and ``eps_lower``."""


def audit_bound(false_positives: int, negatives: int, false_negatives: int,
                positives: int, confidence: float, delta: float) -> AuditBound:
    """Lower bounds on mu (GDP) and epsilon (at ``delta``) from a test's error counts.

    Each rate gets a one-sided Clopper-Pearson upper bound at level
    ``1 - (1 - confidence)/2``, so both hold together with probability ``confidence``
    (union bound); the bounds are then those of the worst rates in the region.
    """
    a = 1.0 - confidence  # split over the two one-sided bounds
    fpr_hi = float(clopper_pearson(false_positives, negatives, a)[1])
    fnr_hi = float(clopper_pearson(false_negatives, positives, a)[1])
    return AuditBound(
        negatives=int(negatives), positives=int(positives),
        false_positives=int(false_positives), false_negatives=int(false_negatives),
        fpr=false_positives / max(negatives, 1), fnr=false_negatives / max(positives, 1),
        fpr_upper=fpr_hi, fnr_upper=fnr_hi, confidence=confidence,
        mu_lower=float(gdp_mu_lower_bound(fpr_hi, fnr_hi)),
        eps_lower=float(eps_lower_bound(fpr_hi, fnr_hi, delta)), delta=delta)


def _errors_at(scores: np.ndarray, positive: np.ndarray,
               thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false positives, false negatives) of "positive iff score > t" for each t."""
    neg = np.sort(scores[~positive])
    pos = np.sort(scores[positive])
    fp = neg.size - np.searchsorted(neg, thresholds, side="right")
    fn = np.searchsorted(pos, thresholds, side="right")
    return fp, fn


def select_threshold(scores: np.ndarray, positive: np.ndarray, confidence: float,
                     pure: bool = False) -> float:
    """The threshold whose Clopper-Pearson mu bound is largest on these (selection) trials
    (``pure``: whose pure-epsilon bound, delta = 0, is largest).

    Count the errors of the chosen threshold on *other* trials: choosing and counting on
    the same ones would overstate the bound. With ``pure`` the candidates also sit just
    below every score, so that "score > t" can take a tied group of top scores (a Laplace
    likelihood ratio has atoms at its extremes, where pure DP is decided).
    """
    scores = np.asarray(scores, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    candidates = np.unique(scores)
    if pure:
        candidates = np.union1d(candidates, np.nextafter(candidates, -np.inf))
    fp, fn = _errors_at(scores, positive, candidates)
    a = 1.0 - confidence
    fpr_hi = clopper_pearson(fp, (~positive).sum(), a)[1]
    fnr_hi = clopper_pearson(fn, positive.sum(), a)[1]
    bound = eps_lower_bound(fpr_hi, fnr_hi, 0.0) if pure else gdp_mu_lower_bound(fpr_hi, fnr_hi)
    return float(candidates[int(np.argmax(bound))])


def split_audit(scores: np.ndarray, positive: np.ndarray, confidence: float,
                delta: float, pure: bool = False) -> AuditBound:
    """The audit of a score test: the threshold chosen on the first half of the trials,
    its errors counted on the second half (:func:`audit_bound`). ``pure``: chosen for the
    pure-epsilon bound (:func:`pure_split_audit`)."""
    half = len(scores) // 2
    threshold = select_threshold(scores[:half], positive[:half], confidence, pure)
    held_scores, held_positive = scores[half:], positive[half:]
    fp, fn = _errors_at(held_scores, held_positive, np.array([threshold]))
    out = audit_bound(int(fp[0]), int((~held_positive).sum()), int(fn[0]),
                      int(held_positive.sum()), confidence, delta)
    out["threshold"] = threshold
    return out


#: decimals kept of a pure audit's scores (:func:`pure_split_audit`)
PURE_SCORE_DIGITS = 9


def round_pure_scores(scores: np.ndarray) -> np.ndarray:
    """Laplace likelihood-ratio scores rounded to :data:`PURE_SCORE_DIGITS` decimals.

    A Laplace ratio sits on its atoms ``+-eps`` up to the last bits of floating point, and
    those bits differ between the worlds (the float sum ``value + noise`` is not the real
    one, Mironov 2012), which a threshold chosen between two roundings of one atom would
    exploit. Rounded, the scores are those of the real-valued mechanism the ledger books.
    """
    return np.round(np.asarray(scores, dtype=float), PURE_SCORE_DIGITS)


def pure_split_audit(scores: np.ndarray, positive: np.ndarray,
                     confidence: float) -> AuditBound:
    """The pure-epsilon audit of a score (a Laplace likelihood ratio): ``eps_lower`` at
    delta = 0 is ``max(ln((1 - FPR+)/FNR+), ln((1 - FNR+)/FPR+))`` for the threshold chosen
    on the first half of the trials and counted on the second (:func:`split_audit`).

    Pure DP is decided in the tails of the likelihood ratio, so the threshold sits where one
    error rate is small: the bound needs about ``e^eps`` trials to approach ``eps``.

    The scores are first rounded (:func:`round_pure_scores`): the audit is of the
    real-valued mechanism the ledger books, not of floating point's last bits.
    """
    return split_audit(round_pure_scores(scores), positive, confidence, 0.0, pure=True)


def midpoint_audit(scores: np.ndarray, positive: np.ndarray, confidence: float,
                   delta: float) -> AuditBound:
    """The audit of a log-likelihood-ratio statistic at its data-independent threshold 0
    (the Bayes test for equally likely worlds): every trial is counted, none is spent on
    choosing a threshold (:func:`audit_bound`)."""
    scores = np.asarray(scores, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    fp, fn = _errors_at(scores, positive, np.array([0.0]))
    out = audit_bound(int(fp[0]), int((~positive).sum()), int(fn[0]), int(positive.sum()),
                      confidence, delta)
    out["threshold"] = 0.0
    return out


def trials_needed(mu: float, confidence: float, fraction: float = 0.5,
                  limit: int = 1 << 26) -> int | None:
    """Trials (both worlds together) at which the audit of a mu-GDP mechanism by its
    Gaussian likelihood-ratio statistic at threshold 0 (:func:`midpoint_audit`) is
    expected to reach ``fraction * mu``; None if not within ``limit``.

    Expected counts: ``trials/2`` trials per world, each misclassified with probability
    ``Phi(-mu/2)``.
    """
    if not math.isfinite(mu) or mu <= 0:
        return None
    target = fraction * mu
    p = float(special.ndtr(-mu / 2.0))

    def reaches(trials: int) -> bool:
        n = trials // 2
        k = math.floor(n * p)
        hi = float(clopper_pearson(k, n, 1.0 - confidence)[1])
        return float(gdp_mu_lower_bound(hi, hi)) >= target

    return _fewest_trials(reaches, limit)


def pure_trials_needed(epsilon: float, confidence: float, fraction: float = 0.5,
                       limit: int = 1 << 26) -> int | None:
    """The fewest trials (both worlds together) at which the pure-epsilon audit
    (:func:`pure_split_audit`) *can* reach ``fraction * epsilon``: even a test that never
    errs on its held-out half (``trials/4`` per world) bounds epsilon only by
    ``ln((1 - FNR+)/FPR+)`` with both rates at zero errors, about ``ln(trials / 4)``. A
    necessary count, not a sufficient one (a real test errs); None beyond ``limit``, and
    for an unbounded epsilon.
    """
    if not math.isfinite(epsilon) or epsilon <= 0:
        return None
    target = fraction * epsilon

    def reaches(trials: int) -> bool:
        n = trials // 4
        return audit_bound(0, n, 0, n, confidence, 0.0)["eps_lower"] >= target

    return _fewest_trials(reaches, limit)


def _fewest_trials(reaches: Callable[[int], bool], limit: int) -> int | None:
    """The smallest multiple of 4 (``--trials``' rule) for which the monotone ``reaches``
    holds, to within 1%; None if not within ``limit``."""
    trials = 64
    while not reaches(trials):
        trials *= 2
        if trials > limit:
            return None
    lo, hi = trials // 2, trials
    while hi - lo > max(4, lo // 100):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
    return int(math.ceil(hi / 4) * 4)  # --trials is a multiple of 4


def gaussian_lr_weights(shift: np.ndarray, sigma: float) -> np.ndarray:
    """Weights of the Gaussian likelihood-ratio statistic of one release.

    For ``y ~ N(m + b shift/2, sigma^2 I)`` with ``b = +-1`` the log likelihood ratio of
    b = +1 against b = -1 is ``<y - m, shift> / sigma^2``: the statistic sums
    ``(y - m) @ weights`` over the releases.
    """
    return np.asarray(shift, dtype=float) / (sigma * sigma)


def laplace_lr(residual: np.ndarray, shift: np.ndarray, scale: float) -> np.ndarray:
    """Laplace log likelihood ratio of b = +1 against b = -1 for ``residual = y - m``
    (last axis: coordinates), ``y ~ m + b shift/2 + Laplace(scale)`` per coordinate."""
    half = np.asarray(shift, dtype=float) / 2.0
    return ((np.abs(residual + half) - np.abs(residual - half)) / scale).sum(axis=-1)


def lag_correlation_test(lag_products: float, count: int) -> dict:
    """Are standardised residuals independent of the previous iteration's?

    ``lag_products`` sums ``z_n z_(n-1)`` over ``count`` pairs of independent N(0, 1)
    values: mean 0, variance ``count``. Returns the correlation, the z-score and the
    two-sided p-value.
    """
    if count <= 0:
        return {"pairs": 0, "correlation": None, "z": None, "p_value": None}
    z = lag_products / math.sqrt(count)
    return {"pairs": int(count), "correlation": lag_products / count, "z": z,
            "p_value": float(2.0 * special.ndtr(-abs(z)))}


def variance_test(sum_squares: float, count: int) -> dict:
    """Is the variance of standardised residuals 1 (the booked noise)?

    ``sum_squares`` of ``count`` values, chi-square with ``count`` degrees of freedom under
    the booked noise. Returns the variance ratio and the two-sided p-value.
    """
    if count <= 0:
        return {"values": 0, "variance_ratio": None, "p_value": None}
    lower = float(stats.chi2.cdf(sum_squares, count))
    upper = float(stats.chi2.sf(sum_squares, count))
    return {"values": int(count), "variance_ratio": sum_squares / count,
            "p_value": min(1.0, 2.0 * min(lower, upper))}


def mi_advantage_bound(mu: float) -> float:
    """The largest membership-inference advantage (TPR - FPR) under mu-GDP,
    ``2 Phi(mu/2) - 1`` (the delta at epsilon 0 of the Gaussian mechanism)."""
    return gaussian_delta(mu, 0.0)


def eps_advantage_bound(eps: float, delta: float) -> float:
    """The largest advantage under (epsilon, delta)-DP, ``(e^eps - 1 + 2 delta)/(e^eps + 1)``;
    at ``delta = 0`` the pure-DP one, ``(e^eps - 1)/(e^eps + 1)`` (Laplace methods)."""
    # divided through by e^eps: no overflow at the epsilons of nearly noiseless releases
    # (ldp-aggregative's packaged runs book thousands)
    tail = math.exp(-eps)
    return min(1.0, (1.0 - tail + 2.0 * delta * tail) / (1.0 + tail))


def membership_attack(score: np.ndarray, member: np.ndarray, confidence: float) -> dict:
    """A membership-inference attack's advantage from its per-trial scores.

    The observer's best rule "member iff +-score > t" (a sign and a threshold) is chosen
    on the first half of the trials; its advantage TPR - FPR is measured on the second
    half, with a lower bound from the Clopper-Pearson bounds of the two rates (each at
    ``1 - (1 - confidence)/2``, so together at ``confidence``).
    """
    score = np.asarray(score, dtype=float)
    member = np.asarray(member, dtype=bool)
    half = score.size // 2
    best = (-math.inf, 1.0, 0.0)
    for sign in (1.0, -1.0):
        s, m = sign * score[:half], member[:half]
        t = np.unique(s)
        tpr = (m.sum() - np.searchsorted(np.sort(s[m]), t, side="right")) / m.sum()
        fpr = ((~m).sum() - np.searchsorted(np.sort(s[~m]), t, side="right")) / (~m).sum()
        i = int(np.argmax(tpr - fpr))
        if tpr[i] - fpr[i] > best[0]:
            best = (tpr[i] - fpr[i], sign, float(t[i]))
    _, sign, threshold = best
    s, m = sign * score[half:], member[half:]
    guess = s > threshold
    tp, fp = int((guess & m).sum()), int((guess & ~m).sum())
    pos, neg = int(m.sum()), int((~m).sum())
    a = 1.0 - confidence
    tpr_lo = float(clopper_pearson(tp, pos, a)[0])
    fpr_hi = float(clopper_pearson(fp, neg, a)[1])
    return {"advantage": tp / pos - fp / neg, "advantage_lower": tpr_lo - fpr_hi,
            "tpr": tp / pos, "fpr": fp / neg, "trials": int(score.size - half)}
