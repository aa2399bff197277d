"""Privacy amplification by iteration as curves and the all-user bound (Chan, Xie & Zhao
2023, Sections 6-8; docs/methods/chan2023.md): what a reproduction and ``privacy amplification``
draw and print, from the per-event bounds of :mod:`mpi_privopt.privacy.amplification`.

The Section 8 all-user bound (hidden random permutation) is :func:`all_user_rdp`; it covers
none of the public schedules (ring, walk, sample), whose order every rank knows.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpi_privopt.errors import ConfigError

from .amplification import (AmplificationConstants, _convex_applies, _in_interval, _ratio, booked_bound,
                            local_rho)
from .conversions import DEFAULT_RDP_ORDERS, rdp_to_eps_orders

__all__ = ["CURVE_VARIANTS", "all_user_epsilon", "all_user_rdp", "amplification_curve",
           "first_amplified_k"]


#: the variants :func:`amplification_curve` reports: (bound, exponent)
CURVE_VARIANTS = {"convex": ("convex", "conservative"),
                  "strongly-convex-paper": ("strongly-convex", "paper"),
                  "strongly-convex-conservative": ("strongly-convex", "conservative"),
                  "strongly-convex-precise": ("strongly-convex", "precise"),
                  "strongly-convex-precise-paper": ("strongly-convex", "precise-paper")}


def amplification_curve(constants: AmplificationConstants, delta: float, sigma: float,
                        ks: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
    """The privacy curve of a reproduction: amplified over local rho against k, every variant.

    Each variant is computed as itself (no fall-back to another bound, unlike booking): a
    variant whose premises the constants do not meet (convex with eta > 1/nu, strongly
    convex with eta outside (23) or mu, mu_g = 0) is all NaN, and its reason is in
    ``reasons``. On the paper's own instance f is not strongly convex
    (docs/methods/chan2023.md, "Strong convexity in the experiments"), so its
    strongly convex curves are nominal: label them so.

    Parameters
    ----------
    constants : AmplificationConstants
        The run's constants (``bound`` and ``exponent`` are ignored: every variant is given).
    delta, sigma : float
        Delta (replace-one radius, Def. 3.3) and the noise std, for ``local_rho``.
    ks : sequence of int
        Noisy iterations after the record's use.

    Returns
    -------
    dict
        ``"k"``, ``"T"`` (floor(k/2)), ``"local_rho"`` (constant in k), and per variant of
        :data:`CURVE_VARIANTS` the ratio ``min(local, amplified)/local`` under its name and
        the zCDP under ``name + "_rho"``; ``"reasons"``: variant -> why it does not apply.
    """
    k = np.asarray(ks)
    loc = local_rho(constants.eta, delta, sigma)
    out: dict = {"k": k.copy(), "T": np.floor_divide(k, 2), "local_rho": np.full(k.shape, loc)}
    checks = {"convex": _convex_applies(constants),
              "strongly-convex": _in_interval(constants.eta, constants.nu, constants.mu,
                                              constants.mu_g, constants.beta, constants.norm_AtB)}
    reasons = {}
    for name, (bound, exponent) in CURVE_VARIANTS.items():
        ok, why = checks[bound]
        ratio = _ratio(k, constants, bound, exponent) if ok else np.full(k.shape, np.nan)
        if not ok:
            reasons[name] = why
        out[name], out[name + "_rho"] = ratio, ratio * loc
    out["reasons"] = reasons
    return out


# ---------------------------------------------------------------------------------------------
# Section 8: every user, under a hidden random permutation
# ---------------------------------------------------------------------------------------------
def all_user_rdp(n_users: int, constants: AmplificationConstants, delta: float, sigma: float,
                 orders: Sequence[float] | np.ndarray) -> np.ndarray:
    """RDP of the final token for any one user when N users are processed in a uniformly random
    permutation that stays hidden (Section 8, Lemma 8.2; docs/methods/chan2023.md, "All users").

    **Covers none of the public schedules** (ring, walk, sample): there the order is public
    and each record's cost is its own position's, booked per observer. This is a
    pure-accounting figure for a process that keeps the order secret and releases only the
    final token.

    The user's position is uniform, so the number of noisy iterations after its own, k, is
    uniform on {0, ..., N-1}; given k the release is ``rho_k``-zCDP with
    ``rho_k = amplified_rho(k)`` (the booked bound, :func:`booked_bound`), hence
    ``alpha rho_k``-RDP at order alpha. Lemma 8.2 (weak convexity of D_alpha, [FMTT18,
    Lemma 25]) applies when every ``alpha rho_k <= 1/(alpha-1)``, i.e. ``alpha (alpha-1)
    rho_local <= 1``, and gives ``2 alpha E_k[rho_k]``; Renyi divergence is quasi-convex, so
    ``alpha rho_local`` (local privacy) holds at every order. The result is the smaller one
    where the lemma applies, else local. The paper's Corollary 8.3 is the O(.) form of this;
    here E_k is computed exactly, not bounded by H_N/N.

    Parameters
    ----------
    n_users : int
        N, the number of users (records), each used once.
    constants : AmplificationConstants
        The run's constants and requested bound.
    delta, sigma : float
        Delta (replace-one radius) and the noise std.
    orders : sequence of float
        Renyi orders, each > 1.

    Returns
    -------
    numpy.ndarray
        The RDP bound at each order.
    """
    if isinstance(n_users, bool) or not isinstance(n_users, (int, np.integer)) or n_users < 1:
        raise ConfigError(f"n_users = {n_users!r} must be an integer >= 1",
                          "give the number of users processed in the random permutation")
    alpha = np.asarray(orders, dtype=float)
    if alpha.ndim != 1 or alpha.size == 0 or not np.all(np.isfinite(alpha)) or np.any(alpha <= 1.0):
        raise ConfigError(f"orders = {orders!r} must be finite Renyi orders > 1",
                          "give orders such as 1.5, 2, 4, 8, 16, 32")
    rho = local_rho(constants.eta, delta, sigma) * _ratio(
        np.arange(n_users), constants, booked_bound(constants), constants.exponent)
    local, mean = float(rho.max()), float(rho.mean())
    lemma = alpha * (alpha - 1.0) * local <= 1.0
    return np.where(lemma, np.minimum(2.0 * alpha * mean, alpha * local), alpha * local)


def all_user_epsilon(n_users: int, constants: AmplificationConstants, delta: float,
                     sigma: float, dp_delta: float,
                     orders: Sequence[float] | np.ndarray | None = None) -> tuple[float, float]:
    """(epsilon, order) at ``dp_delta`` of :func:`all_user_rdp`, converted by CKS over
    ``orders`` (dp-accounting's grid without order 1 by default). Covers none of the public
    schedules (see :func:`all_user_rdp`)."""
    grid = np.asarray([a for a in DEFAULT_RDP_ORDERS if a > 1.0] if orders is None else orders, dtype=float)
    return rdp_to_eps_orders(grid, all_user_rdp(n_users, constants, delta, sigma, grid), dp_delta,
                             return_order=True)


def first_amplified_k(curve: dict[str, np.ndarray]) -> dict[str, int | None]:
    """Per variant of an :func:`amplification_curve`, the smallest listed k whose bound is below
    local privacy (None: none of the listed k, or the variant does not apply).

    On a ring with one iteration per hop, an observer d hops after the record's owner first
    sees the token k = d - 1 iterations after the record's use.
    """
    out: dict[str, int | None] = {}
    for name in CURVE_VARIANTS:
        below = np.flatnonzero(curve[name] < 1.0)   # NaN compares False: not applicable
        out[name] = int(curve["k"][below[0]]) if below.size else None
    return out
