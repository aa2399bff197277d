"""Conversions between privacy notions: zCDP, Renyi DP, Gaussian DP and (epsilon, delta)-DP.

Pure functions, no state and no MPI. Every function checks its arguments and raises
:class:`~mpi_privopt.errors.ConfigError` naming the bad value and how to fix it.

Three ways to turn a Gaussian-type guarantee into (epsilon, delta), from loosest to tightest:

``standard``
    Bun & Steinke (2016), Prop. 1.3: ``eps = rho + 2 sqrt(rho ln(1/delta))``. This is the
    conversion the zCDP-NFL paper uses.
``tight``
    Canonne, Kamath & Steinke (2020), Prop. 12 (also Asoodeh et al. 2021):
    ``eps = min_{a > 1} R(a) + ln(1 - 1/a) - (ln(delta) + ln(a)) / (a - 1)``, where ``R`` is the
    Renyi-DP curve (``R(a) = rho a`` for rho-zCDP), minimised over a continuous order ``a``.
``exact``
    For Gaussian mechanisms whose sensitivity-to-noise ratios are fixed in advance the privacy
    loss is exactly that of one Gaussian with ``mu = sqrt(sum_t D_t^2 / s_t^2)`` (Gaussian DP,
    Dong, Roth & Su 2019; Balle & Wang 2018), and
    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` is attained.

For Gaussian mechanisms (``rho = mu^2 / 2``): ``exact <= tight <= standard`` always.
"""
from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike
import scipy  # its submodules load on first use (scipy's lazy attributes): not on import

from mpi_privopt.errors import ConfigError

__all__ = [
    "DEFAULT_RDP_ORDERS",
    "gaussian_delta",
    "gaussian_exact_eps",
    "rdp_to_eps_orders",
    "zcdp_optimal_order",
    "zcdp_to_eps_standard",
    "zcdp_to_eps_tight",
]

# Relative tolerance for every root finder: a few ulps, so that calibrate-then-convert
# round trips hold far below the 1e-9 the tests ask for.
_RTOL = 4.0 * np.finfo(float).eps

#: dp-accounting's default grid of Renyi orders, so that RDP figures reproduce its numbers.
DEFAULT_RDP_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
)


# ---------------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------------
def _check_delta(delta: float, name: str = "delta") -> float:
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {delta!r} is not a number", "give delta as a float in (0, 1), e.g. 1e-5") from None
    if not (0.0 < d < 1.0):
        raise ConfigError(
            f"{name} = {delta!r} is outside (0, 1)",
            "give delta in (0, 1); a common choice is 1e-5 or below 1/(number of records)",
        )
    return d


def _check_nonneg(value: float, name: str, fix: str, allow_inf: bool = True) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r} is not a number", fix) from None
    if math.isnan(v) or v < 0.0 or (not allow_inf and math.isinf(v)):
        kind = "a finite number >= 0" if not allow_inf else "a number >= 0"
        raise ConfigError(f"{name} = {value!r} must be {kind}", fix)
    return v


def _check_eps(eps: float, name: str = "eps") -> float:
    return _check_nonneg(eps, name, "give epsilon as a number >= 0")


def _check_rho(rho: float) -> float:
    return _check_nonneg(rho, "rho", "give the zCDP parameter rho as a number >= 0 (e.g. D^2/(2 sigma^2))")


def _kl_floor_holds(kl_bound: float, delta: float) -> bool:
    """True when the Bretagnolle-Huber bound alone gives (0, delta)-DP.

    TV <= sqrt(1 - exp(-KL)) and every (eps >= 0)-hockey-stick divergence is at most TV, so an
    upper bound on KL (any Renyi order >= 1 bounds it) yields eps = 0 once that root is <= delta.
    The test form is the one dp-accounting uses, so grid results agree with it bit for bit.
    """
    return delta**2 + math.expm1(-kl_bound) > 0.0


def _cks_eps(r: float, a: float, log_delta: float) -> float:
    """CKS Prop. 12 bound at one order a > 1, for Renyi divergence r at that order."""
    return r + math.log1p(-1.0 / a) - (log_delta + math.log(a)) / (a - 1.0)


# ---------------------------------------------------------------------------------------------
# zCDP -> (eps, delta)
# ---------------------------------------------------------------------------------------------
def zcdp_to_eps_standard(rho: float, delta: float) -> float:
    """Standard zCDP to (epsilon, delta) conversion (Bun & Steinke 2016, Prop. 1.3).

    Parameters
    ----------
    rho : float
        zCDP parameter, ``>= 0`` (``inf`` allowed: no guarantee).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        ``rho + 2 sqrt(rho ln(1/delta))``.
    """
    rho = _check_rho(rho)
    delta = _check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * -math.log(delta))


def zcdp_optimal_order(rho: float, delta: float) -> float:
    """Renyi order at which the CKS bound for rho-zCDP is smallest.

    Setting the derivative of ``rho a + ln(1-1/a) - (ln delta + ln a)/(a-1)`` to zero gives
    ``rho (a-1)^2 + ln a = ln(1/delta)``: the left side increases from 0 and the right is
    constant, so the root is unique and the bound is unimodal in ``a``.

    Parameters
    ----------
    rho : float
        zCDP parameter, ``> 0`` and finite.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        The optimal order ``a* > 1``.
    """
    rho = _check_rho(rho)
    delta = _check_delta(delta)
    if rho == 0.0 or math.isinf(rho):
        raise ConfigError(f"rho = {rho!r} has no finite optimal order", "give 0 < rho < inf")
    big_l = -math.log(delta)
    # Solve in y = a - 1 so that a - 1 keeps full relative precision when a is close to 1.
    g = lambda y: rho * y * y + math.log1p(y) - big_l  # noqa: E731
    hi = math.sqrt(big_l / rho)  # g(hi) = ln(1 + hi) > 0 and g(0) = -ln(1/delta) < 0
    while g(hi) <= 0.0:  # for rho above ~1e30, ln(1 + hi) is below rho hi^2's rounding
        hi *= 2.0
    y = scipy.optimize.brentq(g, 0.0, hi, xtol=1e-300, rtol=_RTOL, maxiter=1000)
    return 1.0 + y


def zcdp_to_eps_tight(rho: float, delta: float) -> float:
    """Tight zCDP to (epsilon, delta) conversion (Canonne, Kamath & Steinke 2020, Prop. 12).

    ``eps = min over continuous a > 1 of rho a + ln(1 - 1/a) - (ln delta + ln a)/(a - 1)``,
    floored at 0, and 0 whenever ``sqrt(1 - exp(-rho)) <= delta`` (KL <= rho, then
    Bretagnolle-Huber). The optimal order comes from a bracketed root of the derivative, so tiny
    rho (optimal order ~ sqrt(ln(1/delta)/rho), huge) is handled without a search window.

    Parameters
    ----------
    rho : float
        zCDP parameter, ``>= 0`` (``inf`` gives ``inf``).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        epsilon, ``>= 0``. Never larger than :func:`zcdp_to_eps_standard`.
    """
    rho = _check_rho(rho)
    delta = _check_delta(delta)
    if rho == 0.0:
        return 0.0
    if math.isinf(rho):
        return math.inf
    if _kl_floor_holds(rho, delta):
        return 0.0
    a = zcdp_optimal_order(rho, delta)
    if a - 1.0 < 1e-8:
        # rho above ~1e16: the order is 1 to within rounding and ln(1 - 1/a) is lost; the
        # standard bound (valid, never below this one) agrees to ~1e-8 relative there
        return zcdp_to_eps_standard(rho, delta)
    return max(0.0, _cks_eps(rho * a, a, math.log(delta)))


# ---------------------------------------------------------------------------------------------
# RDP -> (eps, delta)
# ---------------------------------------------------------------------------------------------
def _check_orders_values(orders: ArrayLike, rdp_values: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    o = np.asarray(orders, dtype=float).ravel()
    r = np.asarray(rdp_values, dtype=float).ravel()
    if o.size == 0:
        raise ConfigError("the list of Renyi orders is empty", "give at least one order > 1, e.g. 2, 4, 8, 16, 32")
    if o.shape != r.shape:
        raise ConfigError(
            f"{o.size} Renyi orders but {r.size} RDP values",
            "give exactly one RDP value per order",
        )
    if np.any(~np.isfinite(o)) or np.any(o < 1.0):
        bad = o[~np.isfinite(o) | (o < 1.0)][0]
        raise ConfigError(f"Renyi order {bad!r} is not a finite number >= 1", "use orders a >= 1 (a > 1 to get a bound)")
    if np.any(np.isnan(r)) or np.any(r < 0.0):
        bad = r[np.isnan(r) | (r < 0.0)][0]
        raise ConfigError(f"RDP value {bad!r} is not a number >= 0", "Renyi divergences are >= 0; check the RDP curve")
    return o, r


@overload
def rdp_to_eps_orders(
    orders: ArrayLike, rdp_values: ArrayLike, delta: float, return_order: Literal[False] = ...
) -> float: ...
@overload
def rdp_to_eps_orders(
    orders: ArrayLike, rdp_values: ArrayLike, delta: float, return_order: Literal[True]
) -> tuple[float, float]: ...
def rdp_to_eps_orders(
    orders: ArrayLike, rdp_values: ArrayLike, delta: float, return_order: bool = False
) -> float | tuple[float, float]:
    """CKS Prop. 12 conversion minimised over a finite grid of Renyi orders.

    dp-accounting's ``compute_epsilon`` (the conversion of its ``RdpAccountant``), after
    the argument checks: per order, 0 if the KL (Bretagnolle-Huber) floor applies, else
    ``r + ln(1 - 1/a) - (ln delta + ln a)/(a - 1)``; order 1 alone gives no bound.

    Parameters
    ----------
    orders : array_like
        Renyi orders, each ``>= 1``.
    rdp_values : array_like
        RDP value at each order, ``>= 0`` (``inf`` allowed).
    delta : float
        Target delta in (0, 1).
    return_order : bool, optional
        Also return the optimal order.

    Returns
    -------
    float or (float, float)
        epsilon ``>= 0`` (``inf`` if no order gives a bound), and the optimal order if asked.
    """
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon  # noqa: PLC0415

    o, r = _check_orders_values(orders, rdp_values)
    delta = _check_delta(delta)
    eps, order = compute_epsilon(o, r, delta)
    best = max(0.0, float(eps))
    return (best, float(order)) if return_order else best


# ---------------------------------------------------------------------------------------------
# Gaussian DP (exact composition of Gaussian mechanisms)
# ---------------------------------------------------------------------------------------------
def _log_gaussian_delta(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """ln delta(eps) for mu-GDP, elementwise, stable for large eps (both terms underflow).

    Balle & Wang (2018), eq. (6), in the log form of dp-accounting's ``_get_log_delta``.
    """
    la = scipy.special.log_ndtr(-eps / mu + mu / 2.0)
    lb = scipy.special.log_ndtr(-eps / mu - mu / 2.0)
    # delta = Phi(a) (1 - exp(eps + ln Phi(b) - ln Phi(a))), and the exponent is < 0 for mu > 0;
    # z >= 0 is only reachable through rounding, when delta is ~1e-300 of Phi(a).
    z = eps + lb - la
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(z < 0.0, la + np.log(-np.expm1(np.minimum(z, 0.0))), -np.inf)


def gaussian_delta(mu: float, eps: float) -> float:
    """delta(eps) of a mu-GDP mechanism (Balle & Wang 2018, Thm 8; Dong, Roth & Su 2019).

    Parameters
    ----------
    mu : float
        GDP parameter, ``>= 0`` (``inf`` gives 1).
    eps : float
        epsilon, ``>= 0``.

    Returns
    -------
    float
        ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.
    """
    mu = _check_nonneg(mu, "mu", "give the Gaussian-DP parameter mu = sqrt(sum D^2/sigma^2) >= 0")
    eps = _check_eps(eps)
    if mu == 0.0 or math.isinf(eps):
        return 0.0
    if math.isinf(mu):
        return 1.0
    if eps == 0.0:
        return float(scipy.special.erf(mu / (2.0 * math.sqrt(2.0))))  # 2 Phi(mu/2) - 1, no cancellation
    return float(np.exp(_log_gaussian_delta(np.float64(mu), np.float64(eps))))


#: Newton steps of :func:`gaussian_exact_eps` before it gives up (bisection guarantees
#: about one bit per step, Newton converges in a handful)
_MAX_STEPS = 200
#: relative step at which an entry of :func:`gaussian_exact_eps` is done: Newton converges
#: quadratically, so after a step this small the error is far smaller; steps below it are
#: the rounding noise of ln delta, which can keep a few-ulp criterion from ever holding
_STEP_TOL = 1e-14


def gaussian_exact_eps(mu: ArrayLike, delta: float) -> float | np.ndarray:
    """Exact epsilon of composed Gaussian mechanisms at a given delta, for many mu at once.

    Valid when every release is a Gaussian mechanism whose ratio ``D_t / s_t`` is fixed before
    the run (its input may depend on earlier outputs): the composition is
    ``mu = sqrt(sum_t D_t^2 / s_t^2)``-GDP, whose epsilon at ``delta`` is the root of
    Balle & Wang (2018), eq. (6).

    This is dp-accounting's ``get_epsilon_gaussian(1 / mu, delta)`` (the tests check the two
    agree to 1e-12 relative), kept here as a documented departure because it is vectorised:
    the end of a run converts every one of the K^2 links, and dp-accounting's scalar search
    (about 0.6 ms a call) made a 50-rank run a third slower. The root is found by Newton's
    method on ``ln delta(eps)``, safeguarded by bisection inside a bracket, for all entries
    at once, to a few ulps.

    Parameters
    ----------
    mu : float or array_like
        GDP parameters, each ``>= 0`` (``inf`` gives ``inf``).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float or numpy.ndarray
        The smallest epsilon ``>= 0`` with ``gaussian_delta(mu, eps) <= delta``, per entry;
        a float for a scalar ``mu``.
    """
    m = np.asarray(mu, dtype=float)
    if np.any(np.isnan(m)) or np.any(m < 0.0):
        raise ConfigError(f"mu = {mu!r} must be >= 0",
                          "give the Gaussian-DP parameter mu = sqrt(sum D^2/sigma^2) >= 0")
    delta = _check_delta(delta)
    log_target = math.log(delta)
    out = np.where(np.isinf(m), math.inf, 0.0)
    # (0, delta)-DP already when delta(0) = erf(mu / (2 sqrt 2)) <= delta
    live = np.flatnonzero((m > 0.0) & np.isfinite(m)
                          & (scipy.special.erf(m / (2.0 * math.sqrt(2.0))) > delta))
    if live.size:
        out.ravel()[live] = _gaussian_eps_root(m.ravel()[live], log_target)
    return float(out) if out.ndim == 0 else out


def _gaussian_eps_root(mu: np.ndarray, log_target: float) -> np.ndarray:
    """The root in eps of ``ln delta(mu, eps) = log_target``, per entry of ``mu`` (each with
    ``delta(mu, 0) > e^log_target``, so the root is > 0)."""
    half = 0.5 * mu
    # exact <= standard (Bun & Steinke Prop. 1.3): the standard epsilon brackets from above
    rho = half * mu
    x = rho + 2.0 * np.sqrt(rho * -log_target)
    lo, hi = np.zeros_like(x), x.copy()
    active = np.ones(x.shape, dtype=bool)
    with np.errstate(all="ignore"):  # z >= 0 (delta ~ 0 by rounding) gives -inf, handled below
        for _ in range(_MAX_STEPS):
            a = -x / mu
            la = scipy.special.log_ndtr(a + half)
            z = x + scipy.special.log_ndtr(a - half) - la
            one_minus = -np.expm1(z)          # delta = Phi(a + mu/2) (1 - e^z)
            fx = np.where(z < 0.0, la + np.log(one_minus), -np.inf) - log_target
            lo = np.where(fx > 0.0, x, lo)
            hi = np.where(fx <= 0.0, x, hi)
            # Newton on ln delta, whose slope in eps is -e^z / (1 - e^z)
            step = x + fx * one_minus * np.exp(-z)
            inside = np.isfinite(step) & (step >= lo) & (step <= hi)
            new = np.where(active, np.where(inside, step, 0.5 * (lo + hi)), x)
            # an entry is done once a step moves it by less than _STEP_TOL (or its bracket
            # is that narrow); it then stays where it is while the others go on
            active &= (np.abs(new - x) > _STEP_TOL * x) & (hi - lo > _STEP_TOL * hi)
            x = new
            if not active.any():
                break
    return x
    return float(out) if out.ndim == 0 else out
