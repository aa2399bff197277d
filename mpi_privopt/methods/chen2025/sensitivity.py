r"""Derived sensitivities of Chen & Wang's Algorithm 1: the recursions of the proof of
Theorem 2 (eqs. 8, 12, 13) iterated numerically, and the closed forms (16)-(20).

Adjacency is the paper's (Definition 1: two sample streams of agent i that differ at one
time index k, in phi and xi); the sensitivity of a block v in {x, y, z} at release t is the
largest l1 change of agent i's clean state v_i^t between two adjacent streams, with every
received message held fixed (Definition 3). Before the changed index the trajectories
coincide, so ``Delta_v^0 = 0``. With ``a = a_ii = 1 - |w_ii|``, ``lam_v = lam_v^t``,
``s_n = sqrt(n_i)``, ``s_r = sqrt(r)``, one step t -> t + 1 of the proof reads::

    (8)   Delta_y^{t+1} <= a Delta_y^t + s_r L_l lam_y Delta_x^t + 2 d_l lam_y / (t+1)

    (13)  Delta_z^{t+1} <= a Delta_z^t + s_r Lbar_h lam_z Delta_x^t
                           + (s_r Lbar_h lam_z / lam_y) (Delta_y^{t+1} + Delta_y^t)
                           + 2 s_r L_h lam_z / (t+1)

    (12)  Delta_x^{t+1} <= (a + s_n Lbar_h lam_x + s_n Lbar_l d_z lam_x / lam_z) Delta_x^t
                           + (s_n Lbar_h lam_x / lam_y) (Delta_y^{t+1} + Delta_y^t)
                           + (s_n L_l lam_x / lam_z) (Delta_z^{t+1} + Delta_z^t)
                           + 2 s_n L_h lam_x / (t+1) + 2 s_n d_z L_l lam_x / (lam_z (t+1))

(12) needs both t+1 values, so each step computes y, then z, then x. The 1/(t+1) terms are
the changed sample's weight in the history averages (eq. 3); the others carry the earlier
difference through the Lipschitz constants. The recursions hold for *any* step sizes: they
are the bound :func:`recursion_bounds` returns.

The closed forms (16)-(20) (:func:`closed_form_bounds`) follow from them through Lemma 11 of
the paper's [15] under the paper's "proper initial step sizes" (eq. 15); here they are a
cross-check (:func:`closed_form_conditions` lists the step conditions that fail).

What the proof assumes (docs/methods/chen2025.md, "Derived sensitivities"): Omega a box
(the projection is then 1-Lipschitz in l1) on which ``||l(x_i; xi)||_1 <= d_l`` for every
sample; ``||ztilde_i^t||_2 <= d_z`` where ztilde enters the x-update, with ``lam_z^t <= 1``
(the recursion's ``d_z / lam_z`` then covers ``d_z``); and the Lipschitz constants of
:class:`ProofConstants` (Assumption 5) for every sample.

A leaf module: numpy only.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["ProofConstants", "recursion_bounds", "recursion_for_steps", "closed_form_constants",
           "closed_form_bounds", "closed_form_conditions"]

#: the blocks, in the order the recursion computes them
ORDER = ("y", "z", "x")


@dataclass(frozen=True)
class ProofConstants:
    """The constants the proof of Theorem 2 needs, for one agent i (Assumption 5).

    Norms: ``||.||`` is l2 on vectors and the operator norm on ``nabla l`` (the n_i x r
    transposed Jacobian). Every bound holds for every sample phi, xi and every point of
    Omega (x) and of R^r (y).

    Attributes
    ----------
    L_h : float
        ``||nabla_x h(x, y; phi)|| <= L_h`` and ``||nabla_y h(x, y; phi)|| <= L_h``.
    Lbar_h : float
        ``||nabla_v h(x, y; phi) - nabla_v h(x', y'; phi)|| <= Lbar_h (||x - x'|| + ||y - y'||)``
        for v in {x, y}.
    L_l : float
        ``||l(x; xi) - l(x'; xi)|| <= L_l ||x - x'||`` and ``||nabla l(x; xi)|| <= L_l``.
    Lbar_l : float
        ``||nabla l(x; xi) - nabla l(x'; xi)|| <= Lbar_l ||x - x'||``.
    d_l : float
        ``||l(x; xi)||_1 <= d_l`` on Omega (the paper's d_{i,l}; needs Omega compact).
    d_z : float
        ``||ztilde_i^t||_2 <= d_z`` where ztilde enters the x-update (the paper's d_{i,z}).
    self_weight : float
        a_ii = 1 - |w_ii|, in [0, 1).
    n_i : int
        The agent's block size.
    r : int
        The aggregate's size.
    """

    L_h: float
    Lbar_h: float
    L_l: float
    Lbar_l: float
    d_l: float
    d_z: float
    self_weight: float
    n_i: int
    r: int

    def __post_init__(self) -> None:
        for name in ("L_h", "Lbar_h", "L_l", "Lbar_l", "d_l", "d_z"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} = {value} must be a finite number >= 0")
        if not 0 <= self.self_weight < 1:
            raise ValueError(f"self_weight = a_ii = {self.self_weight} must lie in [0, 1)")
        if self.n_i < 1 or self.r < 1:
            raise ValueError(f"n_i = {self.n_i} and r = {self.r} must be >= 1")

    @property
    def degree(self) -> float:
        """|w_ii| = 1 - a_ii."""
        return 1.0 - self.self_weight


def _steps(lam0: Mapping[str, float], v: Mapping[str, float], T: int) -> dict[str, np.ndarray]:
    """lam_v^t = lam_v^0 (t+1)^-v_v for t = 0..T-1, per block."""
    t1 = np.arange(1.0, T + 1.0)
    return {b: lam0[b] * t1 ** (-v[b]) for b in ("x", "y", "z")}


def recursion_bounds(constants: ProofConstants, lam0: Mapping[str, float],
                     v: Mapping[str, float], T: int) -> dict[str, np.ndarray]:
    r"""Delta_v^t for t = 0..T by iterating eqs. (8), (13), (12) from Delta^0 = 0.

    Parameters
    ----------
    constants : ProofConstants
        Agent i's constants.
    lam0, v : mapping of str to float
        The step schedules ``lam_v^t = lam0[v] (t+1)^-v[v]`` for v in x, y, z (the method's
        :class:`~mpi_privopt.methods.chen2025.ldp_aggregative.Schedules` ``lam0``, ``v``).
    T : int
        The last release.

    Returns
    -------
    dict of str to numpy.ndarray
        Block -> its T + 1 sensitivities (l1), index t = release t; index 0 is 0. The bound
        holds whatever the changed index k (the recursion from 0 at t = 0 dominates the one
        started at k, every coefficient being >= 0).

    Notes
    -----
    The coefficients are vectorised over t; the recursion itself is sequential.
    """
    return recursion_for_steps(constants, _steps(lam0, v, T), T)


def recursion_for_steps(constants: ProofConstants, lam: Mapping[str, np.ndarray], T: int,
                        self_weight: np.ndarray | None = None,
                        count: np.ndarray | None = None) -> dict[str, np.ndarray]:
    r"""The recursion of :func:`recursion_bounds` for any step sizes: ``lam[v][t]`` for
    t = 0..T-1 (the proof never uses their form).

    ``self_weight[t]`` replaces a_ii where the own state's weight varies ([51]'s decaying
    consensus, ``1 - beta^t |w_ii|``); ``count[t]`` replaces t + 1 as the number of samples
    the empirical functions average at t ([51]'s fresh batch gamma_t: a sample changed in
    one batch weighs ``1/gamma_t`` there and nothing elsewhere, which the forcing at every
    t dominates).
    """
    c = constants
    lx, ly, lz = lam["x"], lam["y"], lam["z"]
    t1 = np.arange(1.0, T + 1.0) if count is None else np.asarray(count, dtype=float)
    sn, sr = math.sqrt(c.n_i), math.sqrt(c.r)
    a = np.full(T, c.self_weight) if self_weight is None else np.asarray(self_weight, float)
    # (8): Dy' = a Dy + ky_x Dx + fy
    ky_x = sr * c.L_l * ly
    fy = 2.0 * c.d_l * ly / t1
    # (13): Dz' = a Dz + kz_x Dx + kz_y (Dy' + Dy) + fz
    kz_x = sr * c.Lbar_h * lz
    kz_y = sr * c.Lbar_h * lz / ly
    fz = 2.0 * sr * c.L_h * lz / t1
    # (12): Dx' = kx_x Dx + kx_y (Dy' + Dy) + kx_z (Dz' + Dz) + fx
    kx_x = a + sn * c.Lbar_h * lx + sn * c.Lbar_l * c.d_z * lx / lz
    kx_y = sn * c.Lbar_h * lx / ly
    kx_z = sn * c.L_l * lx / lz
    fx = 2.0 * sn * c.L_h * lx / t1 + 2.0 * sn * c.d_z * c.L_l * lx / (lz * t1)
    out = {b: np.zeros(T + 1) for b in ORDER}
    dy, dz, dx = out["y"], out["z"], out["x"]
    for t in range(T):
        dy[t + 1] = a[t] * dy[t] + ky_x[t] * dx[t] + fy[t]
        dz[t + 1] = a[t] * dz[t] + kz_x[t] * dx[t] + kz_y[t] * (dy[t + 1] + dy[t]) + fz[t]
        dx[t + 1] = (kx_x[t] * dx[t] + kx_y[t] * (dy[t + 1] + dy[t])
                     + kx_z[t] * (dz[t + 1] + dz[t]) + fx[t])
    return out


def closed_form_constants(constants: ProofConstants, lam0: Mapping[str, float],
                          v: Mapping[str, float]) -> dict[str, float]:
    r"""The constants of eqs. (15)-(20).

    With ``w = |w_ii|``, ``e_x = 1 + v_x - v_z``, ``e_y = 1 + v_y``, ``e_z = 1 + v_z``,
    ``mu0 = min(e_x, e_y)`` and ``lam_v = lam_v^0``::

        C_0 = 2 (d_l lam_y + s_n lam_x (L_h + d_z L_l / lam_z) + s_r L_h lam_z)         (15)
        C_1 = (4 C_0 / w) (4 mu0 / (e ln(4 / (4 - w))))^mu0                             (16)
        C_2 = (C_1 L_l s_r + 2 d_l) lam_y
        C_y = (8 C_2 / w) (e_y / (e ln(2 / (2 - w))))^e_y                               (17)
        C_3 = 2 C_y s_n Lbar_h lam_x / lam_y + 2 (C_1 + d_z) s_n L_l lam_x / lam_z
              + 2 s_n L_h lam_x                                                         (18)
        C_x = (16 C_3 / w) (e_x / (e ln(4 / (4 - w))))^e_x                              (19)
        C_4 = C_x s_r Lbar_h lam_z + 2 C_y s_r Lbar_h lam_z / lam_y + 2 s_r L_h lam_z
        C_z = (8 C_4 / w) (e_z / (e ln(2 / (2 - w))))^e_z                               (20)

    Returns
    -------
    dict of str to float
        ``C0`` .. ``C4``, ``x``, ``y``, ``z`` (C_x, C_y, C_z), ``mu0`` and the exponents
        ``e_x``, ``e_y``, ``e_z``.
    """
    c = constants
    w, sn, sr = c.degree, math.sqrt(c.n_i), math.sqrt(c.r)
    lx, ly, lz = lam0["x"], lam0["y"], lam0["z"]
    e_x, e_y, e_z = 1.0 + v["x"] - v["z"], 1.0 + v["y"], 1.0 + v["z"]
    mu0 = min(e_x, e_y)
    ln4 = math.log(4.0 / (4.0 - w))
    ln2 = math.log(2.0 / (2.0 - w))
    C0 = 2.0 * (c.d_l * ly + sn * lx * (c.L_h + c.d_z * c.L_l / lz) + sr * c.L_h * lz)
    C1 = 4.0 * C0 / w * (4.0 * mu0 / (math.e * ln4)) ** mu0
    C2 = (C1 * c.L_l * sr + 2.0 * c.d_l) * ly
    Cy = 8.0 * C2 / w * (e_y / (math.e * ln2)) ** e_y
    C3 = (2.0 * Cy * sn * c.Lbar_h * lx / ly + 2.0 * (C1 + c.d_z) * sn * c.L_l * lx / lz
          + 2.0 * sn * c.L_h * lx)
    Cx = 16.0 * C3 / w * (e_x / (math.e * ln4)) ** e_x
    C4 = Cx * sr * c.Lbar_h * lz + 2.0 * Cy * sr * c.Lbar_h * lz / ly + 2.0 * sr * c.L_h * lz
    Cz = 8.0 * C4 / w * (e_z / (math.e * ln2)) ** e_z
    return {"C0": C0, "C1": C1, "C2": C2, "C3": C3, "C4": C4, "x": Cx, "y": Cy, "z": Cz,
            "mu0": mu0, "e_x": e_x, "e_y": e_y, "e_z": e_z}


def closed_form_bounds(constants: ProofConstants, lam0: Mapping[str, float],
                       v: Mapping[str, float], T: int) -> dict[str, np.ndarray]:
    r"""Eqs. (17), (19), (20): ``Delta_v^t <= C_v (t+1)^-e_v`` for t = 1..T (0 at t = 0),
    and eq. (16)'s bound on the sum ``Delta_x + Delta_y + Delta_z`` under key ``sum``.

    Valid where :func:`closed_form_conditions` finds nothing wrong (the paper's "proper
    initial step sizes"); the recursion of :func:`recursion_bounds` needs no such condition.
    """
    k = closed_form_constants(constants, lam0, v)
    t1 = np.arange(1.0, T + 2.0)
    out = {b: k[b] * t1 ** (-k[f"e_{b}"]) for b in ORDER}
    out["sum"] = k["C1"] * t1 ** (-k["mu0"])
    for values in out.values():
        values[0] = 0.0
    return out


def closed_form_conditions(constants: ProofConstants, lam0: Mapping[str, float],
                           v: Mapping[str, float]) -> list[str]:
    """The step conditions under which the proof turns (8), (12), (13) into (15)-(20) that
    fail (empty: none fails).

    * ``1 > v_x > v_z > v_y > 0`` (Theorem 1's ordering, used to compare exponents);
    * ``lam_z^0 <= 1``: the recursion's ``d_z / lam_z`` then covers a ztilde bounded by d_z;
    * (18)'s contraction: the coefficient of Delta_x^t in (12) at t = 0,
      ``a + s_n lam_x^0 (Lbar_h + Lbar_l d_z / lam_z^0)``, at most ``1 - |w_ii|/2`` (it
      decreases in t because v_x > v_z);
    * (15): summing (8), (12), (13) gives (14), ``m_t S^{t+1} <= M_t S^t + F_t`` with
      ``S = Delta_x + Delta_y + Delta_z``, ``m_t`` the smallest coefficient on its left
      (``1``, ``1 - s_n Lbar_h lam_x/lam_y - s_r Lbar_h lam_z/lam_y``,
      ``1 - s_n L_l lam_x/lam_z``) and ``M_t`` the largest on its right (the Delta_x one is
      ``a + s_n Lbar_h lam_x + s_n Lbar_l d_z lam_x/lam_z + s_r (L_l lam_y + Lbar_h lam_z)``);
      (15)'s contraction needs ``M_0 <= (1 - |w_ii|/2) m_0`` (m_t grows and M_t shrinks
      with t). Its forcing is then ``F_t / m_t <= C_0 (t+1)^-mu0 / m_0``: the paper's C_0
      drops the ``1 / m_0`` (exact only when m_0 = 1). Where this condition fails, eq.
      (16)'s bound on the sum can be exceeded (the tests show one case), while (17), (19),
      (20), far looser, still held in every case tried (docs/methods/chen2025.md,
      "Derived sensitivities").
    """
    c = constants
    sn, sr = math.sqrt(c.n_i), math.sqrt(c.r)
    lx, ly, lz = lam0["x"], lam0["y"], lam0["z"]
    failures = []
    if not 1 > v["x"] > v["z"] > v["y"] > 0:
        failures.append(f"1 > v_x > v_z > v_y > 0 fails for v = ({v['x']:g}, {v['y']:g}, "
                        f"{v['z']:g}) (x, y, z)")
    if lz > 1:
        failures.append(f"lam_z^0 = {lz:g} > 1")
    contraction = c.self_weight + sn * lx * (c.Lbar_h + c.Lbar_l * c.d_z / lz)
    if contraction > 1 - c.degree / 2:
        failures.append(f"(18): a_ii + sqrt(n_i) lam_x^0 (Lbar_h + Lbar_l d_z / lam_z^0) = "
                        f"{contraction:g} > 1 - |w_ii|/2 = {1 - c.degree / 2:g}")
    left = min(1.0, 1.0 - sn * c.Lbar_h * lx / ly - sr * c.Lbar_h * lz / ly,
               1.0 - sn * c.L_l * lx / lz)
    right = max(contraction + sr * (c.L_l * ly + c.Lbar_h * lz),
                c.self_weight + sn * c.Lbar_h * lx / ly + sr * c.Lbar_h * lz / ly,
                c.self_weight + sn * c.L_l * lx / lz)
    if not right <= (1 - c.degree / 2) * left:
        failures.append(f"(15): the largest coefficient on the right of (14) at t = 0, "
                        f"{right:g}, exceeds (1 - |w_ii|/2) times the smallest on its left, "
                        f"{(1 - c.degree / 2) * left:g}")
    return failures
