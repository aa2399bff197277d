r"""Privacy amplification by iteration for noisy gradient ADMM (Chan, Xie & Zhao 2023).

A record used in one noisy iteration of the token method, seen by an observer only after
``k`` further noisy iterations, costs that observer less than the local zCDP
``rho_local = eta^2 Delta^2 / (2 sigma^2)`` of the iteration itself. The release is
booked as an :class:`~mpi_privopt.privacy.events.AmplifiedGaussianEvent` (the record's own
Gaussian event and ``k``); the accountants count it as the zCDP it is worth,
``base zCDP x`` :func:`amplification_ratio`, i.e. ``min(rho_local, rho_amplified(k))`` (T = floor(k/2);
docs/methods/chan2023.md, "From iterations to operators").

The bounds (all zCDP, i.e. Dz; ``T = floor(k/2)`` two-iteration Markov operators)::

    convex (Cor. 6.2, needs eta <= 1/nu):
        rho_amp = C / T * rho_local,             C = max(2, 3/(beta eta)) (1 + beta eta ||A||^2)
    strongly convex (Cor. 7.3, Assumption 7.1, eta in (23)):
        R = 2/(eta (nu+mu)) - 2 eta nu mu/(nu+mu)     P = 2 - 2/(eta (nu+mu))
        S = eta/beta                                   Q = eta/beta + (eta/4)(2/(nu+mu) - eta)
        Lfrak = max(R/P, S/Q),   M = max(2/R, 3/(eta beta)),   C = M (R + eta beta ||A||^2)
        "paper":        rho_amp = C Lfrak^(2T-1) / T * rho_local     (as printed)
        "conservative": rho_amp = C Lfrak^T / T * rho_local          (L = Lfrak in Thm 5.2)
        "precise":      rho_amp = M Lfrak (R + eta beta ||A||^2) gamma_T(Lfrak) * rho_local
        "precise-paper": the same with gamma_T(Lfrak^2)
    gamma_T(L) = T L^(T-1) phi_T(L)^2,  phi_T(L) = (L^-1/2 - L^1/2) / (L^-T/2 - L^T/2)  (Thm 5.2)

and always ``min(rho_local, .)`` (post-processing); ``k < 2`` gives ``rho_local``.

When the requested bound's premises fail, the bound that does apply is booked (the other
regime's bound, else local) and :func:`bound_applies` says why, once, for the caller to
print; nothing here warns per event. Reuse of a record composes
(docs/methods/chan2023.md, "Reuse of records"): each use is its own
event and the ledger adds them.

The curves a reproduction draws and the Section 8 all-user bound (hidden random permutation;
it covers none of the public schedules, whose order every rank knows) are in
:mod:`mpi_privopt.privacy.amplification_curves`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mpi_privopt.errors import ConfigError

__all__ = [
    "BOUNDS",
    "EXPONENTS",
    "AmplificationConstants",
    "StronglyConvexTerms",
    "amplification_ratio",
    "amplified_rho",
    "bound_applies",
    "booked_bound",
    "contraction_factor",
    "convex_constant",
    "eta_interval",
    "gamma",
    "local_rho",
    "midpoint_eta",
    "strongly_convex_terms",
]

#: the bounds an :class:`AmplificationConstants` may request
BOUNDS = ("convex", "strongly-convex", "local")
#: the strongly convex exponents: printed, re-derived
#: (docs/methods/chan2023.md, "The strongly convex exponent"), and the phi_T forms of both
EXPONENTS = ("paper", "conservative", "precise", "precise-paper")


def _number(value, name: str, *, positive: bool, fix: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r} is not a number", fix) from None
    if not math.isfinite(v) or v < 0.0 or (positive and v == 0.0):
        raise ConfigError(f"{name} = {value!r} must be a finite number {'> 0' if positive else '>= 0'}", fix)
    return v


# ---------------------------------------------------------------------------------------------
# Constants of one run
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AmplificationConstants:
    """The public constants of one run that the amplified bounds need.

    Attributes
    ----------
    eta, beta : float
        Step size and augmented-Lagrangian penalty.
    nu : float
        Smoothness of every record's f.
    norm_A, norm_AtB : float
        ``||A||`` and ``||A^T B||`` (1 and 1 for A = I, B = -I).
    mu, mu_g : float
        Strong convexity of every f and of g (0: not strongly convex).
    bound : {"convex", "strongly-convex", "local"}
        Which amplified bound is requested.
    exponent : {"paper", "conservative", "precise", "precise-paper"}
        Strongly convex case only: Lfrak^(2T-1) as printed, Lfrak^T (re-derived), or the phi_T form
        of Theorem 5.2 with L = Lfrak ("precise", consistent with Lemma 7.8) or with the
        paper's L = Lfrak^2 ("precise-paper"). Only "conservative" and "precise" are
        guarantees; the paper's exponent is for reproducing its statements.
    """

    eta: float
    beta: float
    nu: float
    norm_A: float = 1.0
    norm_AtB: float = 1.0
    mu: float = 0.0
    mu_g: float = 0.0
    bound: str = "convex"
    exponent: str = "conservative"

    def __post_init__(self) -> None:
        for name, positive in (("eta", True), ("beta", True), ("nu", True), ("norm_A", False),
                               ("norm_AtB", False), ("mu", False), ("mu_g", False)):
            v = _number(getattr(self, name), name, positive=positive,
                        fix=f"give {name} as the public constant of the run")
            object.__setattr__(self, name, v)
        if self.mu > self.nu:
            raise ConfigError(f"mu = {self.mu:g} exceeds nu = {self.nu:g}",
                              "a nu-smooth, mu-strongly convex f has mu <= nu")
        if self.bound not in BOUNDS:
            raise ConfigError(f"amplification bound {self.bound!r} is not one of {BOUNDS}",
                              'use "convex" (eta <= 1/nu), "strongly-convex" (eta in (23)) or "local"')
        if self.exponent not in EXPONENTS:
            raise ConfigError(f"amplification exponent {self.exponent!r} is not one of {EXPONENTS}",
                              'use "conservative" for a guarantee, "paper" to reproduce the printed bound')


# ---------------------------------------------------------------------------------------------
# Interval (23), the contraction factor and the constants
# ---------------------------------------------------------------------------------------------
def eta_interval(nu: float, mu: float, mu_g: float, beta: float,
                 norm_AtB: float = 1.0) -> tuple[float, float]:
    """The open step-size interval (23) of Lemma 7.6 (strongly convex case).

    ``( max{4/(nu+mu+sqrt((nu+mu)^2 + 8 nu mu)), 2/(nu+mu) - 2 mu_g/(beta^2 ||A^T B||^2)},
    2/(nu+mu) )``; the second lower bound is void when ``A^T B = 0``.

    Raises
    ------
    ConfigError
        If ``mu`` or ``mu_g`` is not > 0 (the interval is then empty) or ``mu > nu``.
    """
    fix = "the strongly convex bound needs every f mu-strongly convex and g mu_g-strongly convex, mu, mu_g > 0"
    nu = _number(nu, "nu", positive=True, fix=fix)
    mu = _number(mu, "mu", positive=True, fix=fix)
    mu_g = _number(mu_g, "mu_g", positive=True, fix=fix)
    beta = _number(beta, "beta", positive=True, fix="give the augmented-Lagrangian penalty beta > 0")
    norm_AtB = _number(norm_AtB, "norm_AtB", positive=False, fix="give the spectral norm ||A^T B||")
    if mu > nu:
        raise ConfigError(f"mu = {mu:g} exceeds nu = {nu:g}", "a nu-smooth, mu-strongly convex f has mu <= nu")
    s = nu + mu
    first = 4.0 / (s + math.sqrt(s * s + 8.0 * nu * mu))
    second = -math.inf if norm_AtB == 0.0 else 2.0 / s - 2.0 * mu_g / (beta * norm_AtB) ** 2
    return max(first, second), 2.0 / s


def midpoint_eta(nu: float, mu: float, mu_g: float, beta: float, norm_AtB: float = 1.0) -> float:
    """The midpoint of interval (23): the step size of the paper's experiments."""
    lo, hi = eta_interval(nu, mu, mu_g, beta, norm_AtB)
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class StronglyConvexTerms:
    """The quantities of Section 7 for one step size."""

    R: float
    P: float
    S: float
    Q: float
    contraction: float  # Lfrak = max(R/P, S/Q): squared customised norm shrinks by it per iteration
    M: float            # max(2/R, 3/(eta beta)): C_K = Lfrak M / (2 sigma^2), Lemma 7.7
    C: float            # M (R + eta beta ||A||^2), Theorem 7.2


def _in_interval(eta: float, nu: float, mu: float, mu_g: float, beta: float,
                 norm_AtB: float) -> tuple[bool, str]:
    """Whether Assumption 7.1 and eta in (23) hold, and if not why (one sentence)."""
    if mu <= 0.0 or mu_g <= 0.0:
        return False, (f"the strongly convex bound needs mu > 0 and mu_g > 0 (Assumption 7.1), "
                       f"here mu = {mu:g}, mu_g = {mu_g:g}")
    lo, hi = eta_interval(nu, mu, mu_g, beta, norm_AtB)
    if not lo < eta < hi:
        return False, (f"the strongly convex bound needs eta in interval (23) = ({lo:.6g}, {hi:.6g}), "
                       f"here eta = {eta:g}")
    return True, ""


@lru_cache(maxsize=256)  # booked per record and sighting with the same constants
def strongly_convex_terms(eta: float, beta: float, nu: float, mu: float, mu_g: float,
                          norm_A: float = 1.0, norm_AtB: float = 1.0) -> StronglyConvexTerms:
    """R, P, S, Q, Lfrak, M and C of Section 7 (Lemmas 7.6, 7.7, Theorem 7.2).

    Raises
    ------
    ConfigError
        If Assumption 7.1 fails or ``eta`` is outside interval (23), where Lemma 7.6 does not
        hold (the factor would not be a contraction).
    """
    ok, why = _in_interval(eta, nu, mu, mu_g, beta, norm_AtB)
    if not ok:
        raise ConfigError(why, "choose eta inside interval (23), e.g. midpoint_eta(...), or use the convex bound")
    s = nu + mu
    gap = 2.0 / s - eta
    R = (1.0 - 2.0 * eta * nu * mu / s) + gap / eta
    P = 1.0 - gap / eta
    S = eta / beta
    Q = eta / beta + 0.25 * eta * gap
    M = max(2.0 / R, 3.0 / (eta * beta))
    return StronglyConvexTerms(R=R, P=P, S=S, Q=Q, contraction=max(R / P, S / Q), M=M,
                               C=M * (R + eta * beta * norm_A**2))


def contraction_factor(eta: float, beta: float, nu: float, mu: float, mu_g: float,
                       norm_A: float = 1.0, norm_AtB: float = 1.0) -> float:
    """Lfrak = max(R/P, S/Q) of Lemma 7.6; refuses eta outside (23).

    ``norm_A`` does not enter Lfrak (only C); it is accepted so calls mirror
    :class:`AmplificationConstants`.
    """
    return strongly_convex_terms(eta, beta, nu, mu, mu_g, norm_A, norm_AtB).contraction


def convex_constant(eta: float, beta: float, norm_A: float = 1.0) -> float:
    """C = max(2, 3/(beta eta)) (1 + beta eta ||A||^2) of Theorem 6.1 / Corollary 6.2."""
    s = beta * eta
    return max(2.0, 3.0 / s) * (1.0 + s * norm_A**2)


def gamma(T: int | np.ndarray, L: float) -> np.ndarray | float:
    """gamma_T(L) = T L^(T-1) phi_T(L)^2 of Theorem 5.2 (precise form), for 0 < L <= 1.

    Computed as ``T L^(2T-2) ((1-L)/(1-L^T))^2`` (phi_T multiplied through by L^(T/2)), which
    neither overflows nor cancels for large T; ``gamma_T(1) = 1/T``.
    """
    T = np.asarray(T, dtype=float)
    if L == 1.0:
        out = 1.0 / T
    else:
        log_l = math.log(L)
        ratio = -math.expm1(log_l) / -np.expm1(T * log_l)
        out = T * np.exp((2.0 * T - 2.0) * log_l) * ratio**2
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------------------------------
# Which bound applies
# ---------------------------------------------------------------------------------------------
def _convex_applies(c: AmplificationConstants) -> tuple[bool, str]:
    if c.eta > 1.0 / c.nu:
        return False, (f"the convex bound needs f 1/eta-smooth, eta <= 1/nu = {1.0 / c.nu:.6g} "
                       f"(Theorem 6.1), here eta = {c.eta:g}")
    return True, ""


@lru_cache(maxsize=256)
def _resolve_bound(c: AmplificationConstants) -> tuple[str, bool, str]:
    """(bound booked, whether it is the one requested, why not)."""
    if c.bound == "local":
        return "local", True, ""
    checks = {"convex": lambda: _convex_applies(c),
              "strongly-convex": lambda: _in_interval(c.eta, c.nu, c.mu, c.mu_g, c.beta, c.norm_AtB)}
    ok, why = checks[c.bound]()
    if ok:
        return c.bound, True, ""
    other = "strongly-convex" if c.bound == "convex" else "convex"
    if checks[other]()[0]:
        booked = other if other == "convex" else f"strongly-convex ({c.exponent} exponent)"
        return other, False, f"{why}; booking the {booked} bound instead"
    return "local", False, f"{why}; booking local privacy (no amplification)"


def booked_bound(constants: AmplificationConstants) -> str:
    """The bound that is booked: the requested one when it applies, else the other regime's
    when that applies, else ``"local"``."""
    return _resolve_bound(constants)[0]


def bound_applies(constants: AmplificationConstants) -> tuple[bool, str]:
    """Whether the requested bound applies, and if not the one message saying why and what
    is booked instead (for the caller to print once, at set-up).

    Examples
    --------
    >>> bound_applies(AmplificationConstants(eta=2.0, beta=0.9, nu=1.0))[0]
    False
    """
    _, ok, why = _resolve_bound(constants)
    return ok, why


# ---------------------------------------------------------------------------------------------
# The bounds
# ---------------------------------------------------------------------------------------------
def local_rho(eta: float, delta: float, sigma: float) -> float:
    """zCDP of the record's own iteration, ``eta^2 Delta^2 / (2 sigma^2)`` (Corollary 6.2).

    ``delta`` is Delta, the replace-one radius of Definition 3.3 (not a DP delta).
    """
    eta = _number(eta, "eta", positive=True, fix="give the step size eta > 0")
    delta = _number(delta, "Delta", positive=False,
                    fix="give the replace-one radius Delta >= 0 (2 x clip for clipped gradients)")
    sigma = _number(sigma, "sigma", positive=True, fix="give the noise std sigma > 0")
    return (eta * delta) ** 2 / (2.0 * sigma**2)


def _factor(T: np.ndarray, c: AmplificationConstants, bound: str, exponent: str) -> np.ndarray:
    """rho_amplified / rho_local for T >= 1 operators, before the min with 1."""
    if bound == "convex":
        return convex_constant(c.eta, c.beta, c.norm_A) / T
    sc = strongly_convex_terms(c.eta, c.beta, c.nu, c.mu, c.mu_g, c.norm_A, c.norm_AtB)
    L = sc.contraction
    if exponent == "paper":
        return sc.C * L ** (2.0 * T - 1.0) / T
    if exponent == "conservative":
        return sc.C * L**T / T
    Lop = L if exponent == "precise" else L * L
    return sc.M * L * (sc.R + c.eta * c.beta * c.norm_A**2) * gamma(T, Lop)


def _ratio(ks, c: AmplificationConstants, bound: str, exponent: str) -> np.ndarray:
    k = np.asarray(ks)
    if k.dtype.kind not in "iu":
        if not np.all(np.isfinite(k)) or np.any(k != np.floor(k)):
            raise ConfigError(f"iterations after the record's use {ks!r} must be integers >= 0",
                              "count noisy iterations, e.g. k = 0, 1, 2, ...")
    if np.any(k < 0):
        raise ConfigError(f"iterations after the record's use {ks!r} must be >= 0",
                          "count noisy iterations, e.g. k = 0, 1, 2, ...")
    # the theorems' T counts pairs of iterations, each pair one Markov operator
    # (docs/methods/chan2023.md, "From iterations to operators")
    T = np.floor_divide(k.astype(np.int64), 2)
    out = np.ones(T.shape)
    if bound != "local":
        some = T >= 1
        if np.any(some):
            out[some] = np.minimum(1.0, _factor(T[some].astype(float), c, bound, exponent))
    return out


def amplification_ratio(k: int, constants: AmplificationConstants) -> float:
    """``min(1, rho_amplified(k) / rho_local)`` for the bound that applies (:func:`booked_bound`).

    Independent of Delta and sigma (the normalised curve).
    """
    return float(_ratio(k, constants, booked_bound(constants), constants.exponent))


def amplified_rho(k: int, constants: AmplificationConstants, delta: float, sigma: float) -> float:
    """zCDP of a record's iteration seen ``k`` noisy iterations later: ``min(local, amplified)``.

    Parameters
    ----------
    k : int
        Noisy iterations after the record's own one, up to the observation (T = floor(k/2)).
    constants : AmplificationConstants
        The run's public constants and the requested bound; if its premises fail the bound
        that applies is used (:func:`bound_applies` says which and why).
    delta : float
        Delta, the replace-one radius of Definition 3.3 (e.g. 2 x clip).
    sigma : float
        Noise std added to x in every iteration.
    """
    return local_rho(constants.eta, delta, sigma) * amplification_ratio(k, constants)
