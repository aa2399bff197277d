"""Noise calibration: from a total (epsilon, delta) budget to per-round Gaussian noise.

zCDP-NFL (Corollary and App. C; docs/methods/gauthier2024.md, "Privacy"): round n is
``phi^(n)``-zCDP with the geometric
schedule ``phi^(n) = phi^(1) tau^-(n-1)``, ``n = 1..T``; zCDP adds up to
``Phi = phi^(1) (1 - tau^T) / (tau^(T-1) (1 - tau))``; a Gaussian with l2 sensitivity Delta_n
and noise ``sigma_n = Delta_n sqrt(1 / (2 phi^(n)))`` spends exactly ``phi^(n)``.

The total Phi meeting (epsilon, delta) depends on the conversion:

``standard``  Bun-Steinke, closed form ``(sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2``
              (the paper's choice);
``tight``     Canonne-Kamath-Steinke, by root finding;
``exact``     Gaussian DP, by root finding: ``mu`` with ``delta(mu, eps) = delta`` and
              ``Phi = mu^2 / 2``. Valid because every release is Gaussian with a
              sensitivity-to-noise ratio fixed before the run, so ``sum_n Delta_n^2/sigma_n^2
              = 2 Phi = mu^2``.

At equal (epsilon, delta): ``Phi_standard < Phi_tight < Phi_exact``, i.e. less noise.

The (epsilon, delta)-DP-NFL baseline (docs/methods/gauthier2024.md, "(epsilon, delta)DP-NFL")
uses the classical Gaussian
mechanism per round with basic composition instead: :mod:`mpi_privopt.privacy.classical_calibration`.

All multipliers returned here are ``sigma_n / Delta_n``. The algorithms take their noise as
a schedule value (:mod:`mpi_privopt.privacy.schedules`) made here from the budget:
:func:`zcdp_nfl_schedule` (and, for the baseline,
:func:`~mpi_privopt.privacy.classical_calibration.basic_composition_gaussian_schedule`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
import scipy  # its submodules load on first use (scipy's lazy attributes): not on import

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv
from mpi_privopt.privacy.events import _positive
from mpi_privopt.privacy.schedules import GeometricZCDPSchedule

__all__ = [
    "CALIBRATION_MARGIN",
    "calibrate_gaussian_noise",
    "calibrate_gdp_mu",
    "calibrate_phi1",
    "calibrate_zcdp_schedule",
    "calibrate_zcdp_total",
    "geometric_zcdp_schedule",
    "noise_multipliers",
    "zcdp_nfl_schedule",
]

Conversion = Literal["standard", "tight", "exact"]
#: the zCDP-to-(eps, delta) conversions a budget can be calibrated with
ZCDP_CONVERSIONS = ("standard", "tight", "exact")
_RTOL = 4.0 * np.finfo(float).eps
#: Relative margin below a calibrated per-release budget. The ledger adds the T
#: per-release costs one by one; a margin far above their rounding (T * 1e-16) keeps a run
#: calibrated to exactly the budget within it.
CALIBRATION_MARGIN = 1e-12


# ---------------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------------
def _check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    return _positive(epsilon, name, "give the privacy budget epsilon > 0, e.g. 1")


def _check_tau(tau: float) -> float:
    return _positive(tau, "tau", "use tau in (0, 1] (tau = 1: constant schedule), e.g. 0.99")


def check_rounds(T: int, name: str = "T") -> int:
    """``T`` as an int, or one :class:`ConfigError` when it is not an integer >= 1."""
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ConfigError(f"{name} = {T!r} must be an integer >= 1", "give the number of noisy releases (iterations)")
    return int(T)


def _check_conversion(conversion: str) -> str:
    if conversion not in ZCDP_CONVERSIONS:
        raise ConfigError(f"conversion = {conversion!r} is not known", 'use "standard", "tight" or "exact"')
    return conversion


def _check_phi1(phi1: float) -> float:
    return _positive(phi1, "phi1", "give the first-round zCDP budget phi1 > 0")


# ---------------------------------------------------------------------------------------------
# zCDP-NFL schedule
# ---------------------------------------------------------------------------------------------
def geometric_zcdp_schedule(phi1: float, tau: float, T: int) -> np.ndarray:
    """Per-round zCDP budgets ``phi^(n) = phi1 tau^-(n-1)``, ``n = 1..T``.

    Parameters
    ----------
    phi1 : float
        First-round budget, ``> 0``.
    tau : float
        Ratio, ``> 0``; the paper uses ``tau in (0, 1)`` (budget grows, noise falls) and
        ``tau = 1`` is the constant schedule.
    T : int
        Number of rounds, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        Shape ``(T,)``.
    """
    phi1, tau, T = _check_phi1(phi1), _check_tau(tau), check_rounds(T)
    # log space: tau^-(T-1) overflows for small tau long before the product does
    log_phi = math.log(phi1) - np.arange(T) * math.log(tau)
    with np.errstate(over="ignore"):
        out = np.exp(log_phi)
    if not np.all(np.isfinite(out)) or np.any(out == 0.0):
        raise ConfigError(
            f"phi1 = {phi1!r} * tau^-(n-1) with tau = {tau!r}, T = {T} over- or underflows",
            "use tau closer to 1 or fewer rounds",
        )
    return out


def _geometric_sum(tau: float, T: int) -> float:
    """``sum_{n=1}^T tau^-(n-1) = (1 - tau^T) / (tau^(T-1) (1 - tau))`` without cancellation."""
    if tau == 1.0:
        return float(T)
    lt = math.log(tau)
    try:
        s = math.expm1(-T * lt) / math.expm1(-lt)
    except OverflowError:
        s = math.inf
    if not math.isfinite(s):
        raise ConfigError(f"tau^-(T-1) with tau = {tau!r}, T = {T} overflows", "use tau closer to 1 or fewer rounds")
    return s


# ---------------------------------------------------------------------------------------------
# Total budget for a target (epsilon, delta)
# ---------------------------------------------------------------------------------------------
def calibrate_gdp_mu(epsilon: float, delta: float) -> float:
    """Largest Gaussian-DP ``mu`` with ``gaussian_delta(mu, epsilon) <= delta``.

    The analytic Gaussian mechanism (Balle & Wang 2018), by dp-accounting's
    ``get_sigma_gaussian`` at unit sensitivity: ``mu = 1 / sigma``. Its search is asked for
    full precision (``tol`` far below one ulp, so its root finder stops at its own few-ulp
    relative tolerance), which calibrating to exactly the budget needs.

    Parameters
    ----------
    epsilon : float
        Target epsilon, ``> 0``.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        mu; a single Gaussian release with sensitivity D then needs ``sigma = D / mu``.
    """
    from dp_accounting.gaussian_mechanism import get_sigma_gaussian  # noqa: PLC0415 (slow import)

    epsilon = _check_epsilon(epsilon)
    delta = conv._check_delta(delta)
    return 1.0 / float(get_sigma_gaussian(epsilon, delta, tol=_FULL_PRECISION))


#: dp-accounting's absolute search tolerance, set below any sigma's ulp
_FULL_PRECISION = 1e-300


def _standard_total(epsilon: float, delta: float) -> float:
    big_l = -math.log(delta)
    # (sqrt(L + eps) - sqrt(L))^2 written without the cancellation of the difference
    return epsilon**2 / (math.sqrt(big_l + epsilon) + math.sqrt(big_l)) ** 2


def _cks_unfloored(rho: float, delta: float) -> float:
    a = conv.zcdp_optimal_order(rho, delta)
    return conv._cks_eps(rho * a, a, math.log(delta))


def calibrate_zcdp_total(epsilon: float, delta: float, conversion: Conversion = "standard") -> float:
    """Largest total zCDP ``rho`` whose (epsilon, delta) conversion meets the target.

    Parameters
    ----------
    epsilon : float
        Target epsilon, ``> 0``.
    delta : float
        Target delta in (0, 1).
    conversion : {"standard", "tight", "exact"}
        ``standard``: Bun-Steinke closed form. ``tight``: inverse of
        :func:`~mpi_privopt.privacy.conversions.zcdp_to_eps_tight`. ``exact``: ``mu^2 / 2`` with
        ``mu`` from :func:`calibrate_gdp_mu` (only for Gaussian releases with noise ratios
        fixed in advance).

    Returns
    -------
    float
        rho; ``standard < tight < exact``.
    """
    epsilon = _check_epsilon(epsilon)
    delta = conv._check_delta(delta)
    conversion = _check_conversion(conversion)
    rho_std = _standard_total(epsilon, delta)
    if conversion == "standard":
        return rho_std
    if conversion == "exact":
        return 0.5 * calibrate_gdp_mu(epsilon, delta) ** 2
    # The CKS bound is a minimum of functions increasing in rho, so it increases strictly;
    # tight <= standard makes rho_std a lower bracket.
    h = lambda rho: _cks_unfloored(rho, delta) - epsilon  # noqa: E731
    lo = rho_std
    while h(lo) > 0.0:
        lo /= 2.0
    hi = 2.0 * lo
    while h(hi) <= 0.0:
        lo, hi = hi, 2.0 * hi
    rho = float(scipy.optimize.brentq(h, lo, hi, xtol=1e-300, rtol=_RTOL, maxiter=1000))
    # Below -ln(1 - delta^2) the KL floor already gives eps = 0 (only matters for delta ~ 1).
    rho_kl = -math.log1p(-(delta**2)) * (1.0 - _RTOL)
    return max(rho, rho_kl)


def calibrate_phi1(
    epsilon: float, delta: float, T: int, tau: float = 1.0, conversion: Conversion = "standard"
) -> float:
    """First-round budget ``phi^(1)`` of the geometric schedule meeting (epsilon, delta).

    ``phi^(1) = Phi (tau^(T-1) - tau^T) / (1 - tau^T)`` with Phi from
    :func:`calibrate_zcdp_total`.

    Parameters
    ----------
    epsilon, delta : float
        Total budget over the T rounds.
    T : int
        Number of rounds.
    tau : float, optional
        Schedule ratio (1 = constant).
    conversion : {"standard", "tight", "exact"}
        See :func:`calibrate_zcdp_total`.

    Returns
    -------
    float
        phi^(1).
    """
    total = calibrate_zcdp_total(epsilon, delta, conversion)
    return total / _geometric_sum(_check_tau(tau), check_rounds(T))


def zcdp_nfl_schedule(epsilon: float, delta: float, T: int, tau: float,
                      conversion: Conversion = "standard") -> GeometricZCDPSchedule:
    """zCDP-NFL's noise schedule for a budget: phi^(1) from :func:`calibrate_phi1`, less
    :data:`CALIBRATION_MARGIN`.

    Parameters
    ----------
    epsilon, delta : float
        The run's budget (per agent, over T releases).
    T : int
        The horizon the schedule is calibrated over.
    tau : float
        The schedule's ratio (1 = constant).
    conversion : {"standard", "tight", "exact"}
        See :func:`calibrate_zcdp_total`.

    Returns
    -------
    GeometricZCDPSchedule
        ``sigma(n) = Delta / sqrt(2 phi1 tau^-(n-1))``.
    """
    phi1 = (1.0 - CALIBRATION_MARGIN) * calibrate_phi1(epsilon, delta, T, tau, conversion)
    return GeometricZCDPSchedule(phi1, tau, conversion, T)


def noise_multipliers(phi_schedule: ArrayLike) -> np.ndarray:
    """Noise multipliers ``sigma_n / Delta_n = sqrt(1 / (2 phi^(n)))`` (Theorem I).

    Parameters
    ----------
    phi_schedule : array_like
        Per-round zCDP budgets, each ``> 0``.

    Returns
    -------
    numpy.ndarray
        Same shape as ``phi_schedule``.
    """
    phi = np.asarray(phi_schedule, dtype=float)
    if phi.size == 0 or np.any(~np.isfinite(phi)) or np.any(phi <= 0.0):
        raise ConfigError(f"phi schedule {phi.ravel()[:5].tolist()}... must be finite numbers > 0", "give a positive budget per round")
    return np.sqrt(0.5 / phi)


def calibrate_zcdp_schedule(
    epsilon: float,
    delta: float,
    rounds: int | None = None,
    schedule: str | Sequence[float] = "constant",
    tau: float | None = None,
    conversion: Conversion = "standard",
) -> np.ndarray:
    """Per-round zCDP budgets ``phi^(n)`` that spend (epsilon, delta) exactly.

    Parameters
    ----------
    epsilon, delta : float
        Total budget.
    rounds : int, optional
        Number of releases; may be omitted when ``schedule`` is a list of weights.
    schedule : {"constant", "geometric"} or sequence of float
        ``constant``: equal budgets. ``geometric``: ``phi^(n) proportional to tau^-(n-1)`` as in
        zCDP-NFL. A sequence: relative zCDP weights per round (positive; a larger weight means
        a larger budget, i.e. less noise, in that round).
    tau : float, optional
        Ratio for ``geometric``.
    conversion : {"standard", "tight", "exact"}
        See :func:`calibrate_zcdp_total`.

    Returns
    -------
    numpy.ndarray
        ``phi^(n)``, summing to the calibrated total.
    """
    total = calibrate_zcdp_total(epsilon, delta, conversion)
    log_w = _log_weights(rounds, schedule, tau)
    return total * np.exp(log_w - scipy.special.logsumexp(log_w))


def _log_weights(rounds: int | None, schedule: str | Sequence[float], tau: float | None) -> np.ndarray:
    if isinstance(schedule, str):
        if rounds is None:
            raise ConfigError(f"schedule = {schedule!r} needs the number of rounds", "pass rounds=T")
        T = check_rounds(rounds, "rounds")
        if schedule == "constant":
            if tau not in (None, 1, 1.0):
                raise ConfigError(f'tau = {tau!r} given with schedule = "constant"', 'drop tau or use schedule="geometric"')
            return np.zeros(T)
        if schedule == "geometric":
            if tau is None:
                raise ConfigError('schedule = "geometric" needs tau', "pass tau in (0, 1], e.g. tau=0.99")
            return -np.arange(T) * math.log(_check_tau(tau))
        raise ConfigError(f"schedule = {schedule!r} is not known", 'use "constant", "geometric" or a list of per-round weights')
    w = np.asarray(schedule, dtype=float).ravel()
    if w.size == 0 or np.any(~np.isfinite(w)) or np.any(w <= 0.0):
        raise ConfigError(f"per-round weights {w[:5].tolist()}... must be finite numbers > 0", "give one positive weight per round")
    if rounds is not None and check_rounds(rounds, "rounds") != w.size:
        raise ConfigError(f"{w.size} per-round weights for rounds = {rounds}", "give exactly one weight per round, or omit rounds")
    if tau is not None:
        raise ConfigError(f"tau = {tau!r} given with explicit weights", "drop tau: the weights already fix the schedule")
    return np.log(w)


def calibrate_gaussian_noise(
    epsilon: float,
    delta: float,
    rounds: int | None = None,
    schedule: str | Sequence[float] = "constant",
    tau: float | None = None,
    conversion: Conversion = "standard",
) -> np.ndarray:
    """Per-round Gaussian noise multipliers ``sigma_n / Delta_n`` meeting (epsilon, delta) exactly.

    Parameters are those of :func:`calibrate_zcdp_schedule`.

    Returns
    -------
    numpy.ndarray
        ``sqrt(1 / (2 phi^(n)))`` for ``n = 1..rounds``; multiply by each round's l2
        sensitivity to get sigma_n.
    """
    return noise_multipliers(calibrate_zcdp_schedule(epsilon, delta, rounds, schedule, tau, conversion))
