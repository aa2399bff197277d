"""Noise calibration of the (epsilon, delta)-DP-NFL baseline: the classical (or analytic)
Gaussian mechanism per round, with basic composition (docs/methods/gauthier2024.md,
"(epsilon, delta)DP-NFL").

The budget ``(eps_total, delta_total)`` is split over the T rounds, ``eps_n`` geometric
with ratio ``tau^(-1/2)`` (mirroring zCDP-NFL's schedule) and ``delta_n = delta_total / T``;
each round's noise meets ``(eps_n, delta_n)`` alone, and basic composition adds them up.
All multipliers returned here are ``sigma_n / Delta_n``. zCDP calibration is
:mod:`mpi_privopt.privacy.calibration`.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
import scipy  # its submodules load on first use (scipy's lazy attributes): not on import

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv
from mpi_privopt.privacy.calibration import (_check_epsilon, check_rounds, _check_tau,
                                             calibrate_gdp_mu)
from mpi_privopt.privacy.schedules import BasicCompositionSchedule

__all__ = [
    "analytic_gaussian_sigma",
    "basic_composition_gaussian_schedule",
    "basic_composition_schedule",
    "classical_gaussian_sigma",
]


def classical_gaussian_sigma(eps_n: ArrayLike, delta_n: ArrayLike, sensitivity: float = 1.0) -> float | np.ndarray:
    """Classical Gaussian mechanism noise ``sigma = D sqrt(2 ln(1.25/delta)) / eps`` (Dwork-Roth Thm A.1).

    Parameters
    ----------
    eps_n : array_like
        Per-release epsilon, each in (0, 1): the theorem does not hold for ``eps >= 1``.
    delta_n : array_like
        Per-release delta, each in (0, 1).
    sensitivity : float, optional
        l2 sensitivity D (default 1: the result is a noise multiplier).

    Returns
    -------
    float or numpy.ndarray
        sigma, a float for scalar inputs.
    """
    e = np.asarray(eps_n, dtype=float)
    d = np.asarray(delta_n, dtype=float)
    if np.any(np.isnan(e)) or np.any(e <= 0.0):
        raise ConfigError(f"eps_n = {e.ravel()[:5].tolist()} must be > 0", "give a positive per-release epsilon")
    if np.any(e >= 1.0):
        bad = float(e[e >= 1.0].ravel()[0])
        raise ConfigError(
            f"eps_n = {bad!r} >= 1: the classical Gaussian mechanism sqrt(2 ln(1.25/delta))/eps is only valid for eps < 1",
            "use analytic_gaussian_sigma (Balle & Wang 2018, valid for every eps > 0), or spread the budget so eps_n < 1",
        )
    if np.any(np.isnan(d)) or np.any(d <= 0.0) or np.any(d >= 1.0):
        raise ConfigError(f"delta_n = {d.ravel()[:5].tolist()} must be in (0, 1)", "give a per-release delta in (0, 1)")
    s = _finite_sensitivity(sensitivity)
    out = s * np.sqrt(2.0 * np.log(1.25 / d)) / e
    return float(out) if out.ndim == 0 else out


def _finite_sensitivity(sensitivity: float) -> float:
    try:
        s = float(sensitivity)
    except (TypeError, ValueError):
        raise ConfigError(f"sensitivity = {sensitivity!r} is not a number", "give the l2 sensitivity >= 0") from None
    if not (math.isfinite(s) and s >= 0.0):
        raise ConfigError(f"sensitivity = {sensitivity!r} must be a finite number >= 0", "give the l2 sensitivity >= 0")
    return s


def analytic_gaussian_sigma(eps: ArrayLike, delta: ArrayLike, sensitivity: float = 1.0) -> float | np.ndarray:
    """Analytic Gaussian mechanism (Balle & Wang 2018): smallest sigma meeting (eps, delta).

    ``sensitivity / mu`` with mu from :func:`calibrate_gdp_mu` (dp-accounting's
    ``get_sigma_gaussian``); valid for every ``eps > 0`` and never larger than
    :func:`classical_gaussian_sigma`.

    Parameters
    ----------
    eps : array_like
        epsilon per release, ``> 0``.
    delta : array_like
        delta per release, in (0, 1).
    sensitivity : float, optional
        l2 sensitivity D (default 1: the result is a noise multiplier).

    Returns
    -------
    float or numpy.ndarray
        sigma, a float for scalar inputs.
    """
    s = _finite_sensitivity(sensitivity)
    e, d = np.broadcast_arrays(np.asarray(eps, dtype=float), np.asarray(delta, dtype=float))
    out = np.array([s / calibrate_gdp_mu(ei, di) for ei, di in zip(e.ravel().tolist(), d.ravel().tolist())])
    out = out.reshape(e.shape)
    return float(out) if out.ndim == 0 else out


def basic_composition_schedule(
    eps_total: float, delta_total: float, T: int, tau: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Per-round (eps_n, delta_n) under basic composition, geometric to mirror zCDP-NFL.

    ``eps_n = eps_1 s^-(n-1)`` with ``s = sqrt(tau)`` and
    ``eps_1 = eps_total (s^(T-1) - s^T) / (1 - s^T)``, so ``sum eps_n = eps_total`` and
    ``sigma_n^2`` falls like ``tau^(n-1)`` as in zCDP-NFL; ``delta_n = delta_total / T``.

    Parameters
    ----------
    eps_total : float
        Total epsilon, ``> 0``.
    delta_total : float
        Total delta in (0, 1).
    T : int
        Number of rounds.
    tau : float, optional
        zCDP-NFL's ratio (1 = constant).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``eps_n`` and ``delta_n``, each of shape ``(T,)``.
    """
    eps_total = _check_epsilon(eps_total, "eps_total")
    delta_total = conv._check_delta(delta_total, "delta_total")
    T, tau = check_rounds(T), _check_tau(tau)
    log_w = -np.arange(T) * (0.5 * math.log(tau))
    eps_n = eps_total * np.exp(log_w - scipy.special.logsumexp(log_w))
    return eps_n, np.full(T, delta_total / T)


def _per_round_multipliers(eps_n: np.ndarray, delta_n: np.ndarray, mechanism: str) -> np.ndarray:
    """``sigma_n / Delta_n`` of a per-round Gaussian mechanism for each (eps_n, delta_n)."""
    if mechanism == "classical":
        return np.asarray(classical_gaussian_sigma(eps_n, delta_n))
    if mechanism == "analytic":
        return np.asarray(analytic_gaussian_sigma(eps_n, delta_n))
    raise ConfigError(f"mechanism = {mechanism!r} is not known", 'use "classical" or "analytic"')


def basic_composition_gaussian_schedule(
    eps_total: float,
    delta_total: float,
    T: int,
    tau: float = 1.0,
    mechanism: Literal["classical", "analytic"] = "classical",
) -> BasicCompositionSchedule:
    """The (epsilon, delta)-DP-NFL baseline's noise schedule for a budget.

    Parameters
    ----------
    eps_total, delta_total, T, tau
        See :func:`basic_composition_schedule`.
    mechanism : {"classical", "analytic"}
        Per-round Gaussian mechanism: Dwork-Roth (needs every ``eps_n < 1``) or Balle-Wang.

    Returns
    -------
    BasicCompositionSchedule
        ``sigma(n) = Delta * multiplier_n``, with the eps_n and delta_n it spends.
    """
    eps_n, delta_n = basic_composition_schedule(eps_total, delta_total, T, tau)
    return BasicCompositionSchedule(_per_round_multipliers(eps_n, delta_n, mechanism),
                                    eps_n, delta_n, mechanism)
