r"""Pure epsilon local DP of Chen & Wang's Algorithm 1: eq. (21), its limit and the (155) bound.

Agent i releases, at every t = 0, 1, ..., T, one packed message of three blocks v in
{y, z, x}, each with Laplace noise of scale ``b_v^t = sig_v (t+1)^-vs_v / sqrt(2)`` per
coordinate (Assumption 4). Block v's l1 sensitivity to one changed sample is taken as

    Delta_v^0 = 0   (the t = 0 message depends on no sample),
    Delta_v^t = C_v (t+1)^-e_v   (t >= 1),   e_x = 1 + v_x - v_z,  e_y = 1 + v_y,  e_z = 1 + v_z

(eqs. 17, 19, 20), so the release of time t is ``sum_v Delta_v^t / b_v^t``-DP (Lemma 1) and
the agent's loss after releases 0..T is eq. (21)::

    eps_i(T) = sum_{t=1}^T sum_v sqrt(2) C_v / ( sig_v (t+1)^{p_v} ),    p_v = e_v - vs_v

finite as T -> inf exactly when every p_v > 1 (Assumption 4: vs_x < v_x - v_z,
vs_y < v_y, vs_z < v_z). Its limit is reported two ways: the exact series
``sqrt(2) C_v / sig_v * (zeta(p_v) - 1)`` (Hurwitz zeta) and the paper's bound (155),
``sqrt(2) C_v / (sig_v (p_v - 1))`` (with sig_y, sig_z in their own terms;
docs/methods/chen2025.md, "Sensitivity and budget").

The constants C_v need Lipschitz constants the paper does not report; with C = 1 the
accounting is the *nominal* one of
docs/methods/chen2025.md, "Nominal accounting" (``privacy.accounting = "nominal"``), stated
as such wherever it is reported. The default, derived accounting of ``ldp-aggregative``
(:mod:`~mpi_privopt.methods.chen2025.derived`) books the proof's recursion instead.

A packed message is one :class:`~mpi_privopt.privacy.events.PackedLaplaceEvent` (its three
Laplace events), booked once per sender whatever the number of neighbours (all see the same
message); the accountants count it as pure DP, the sum of the three epsilons.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy  # its submodules load on first use (scipy's lazy attributes): not on import

from ...errors import ConfigError

__all__ = ["BLOCKS", "BlockBudget", "sensitivity_exponents",
           "check_assumption4", "NOMINAL", "NOMINAL_EPSILON", "accounting_label",
           "accounting_fields", "report_epsilon_label", "GeometricBlock",
           "SampledBlock", "fresh_batch"]

#: the blocks of a packed message, in packing order
BLOCKS = ("y", "z", "x")

#: the label of the nominal accounting (every C_v = 1). The privacy audit measured one
#: changed sample moving a message of aggregative-quadratic by up to 9x these constants
#: (docs/privacy-audit.md), so the label says the figure is not a guarantee.
NOMINAL = ("nominal (docs/methods/chen2025.md: every sensitivity constant C = 1; not a guarantee unless "
           "one changed sample moves each block by at most C: the privacy audit measured "
           "up to 9x on aggregative-quadratic, docs/privacy-audit.md; ldp-aggregative's "
           "privacy.accounting = \"derived\" books proven bounds)")


#: shown beside every epsilon of the nominal accounting that a run prints or writes (the
#: printed summary, summary.json, privacy.json, ``report``): the figure is no guarantee
NOMINAL_EPSILON = "nominal (C = 1): not a privacy guarantee"


def accounting_fields(constants: Sequence[float]) -> dict[str, str]:
    """A report's accounting keys: ``accounting`` (:func:`accounting_label`) and, for the
    nominal accounting, ``epsilon_label`` = :data:`NOMINAL_EPSILON`, which the run shows
    beside every epsilon (mpi_privopt/summary.py)."""
    label = accounting_label(constants)
    return ({"accounting": label, "epsilon_label": NOMINAL_EPSILON} if label == NOMINAL
            else {"accounting": label})


def report_epsilon_label(algorithm) -> str | None:
    """The method's ``epsilon_label`` (mpi_privopt/methods/contract.py): its report's, so
    that the label the run shows while it runs (the progress line, budget messages,
    metrics.csv) is the one summary.json and privacy.json carry at its end. The report is
    computed from public schedules only, once per agent at set-up."""
    return algorithm.report().get("epsilon_label")


def accounting_label(constants: Sequence[float]) -> str:
    """``NOMINAL`` when every constant is 1, else the user-given constants' label."""
    if all(c == 1.0 for c in constants):
        return NOMINAL
    return "eq. (21) with the user-given sensitivity constants C_x, C_y, C_z"


def sensitivity_exponents(v_x: float, v_y: float, v_z: float) -> dict[str, float]:
    """The decay exponents e_v of the sensitivities (eqs. 17, 19, 20)."""
    return {"y": 1.0 + v_y, "z": 1.0 + v_z, "x": 1.0 + v_x - v_z}


def check_assumption4(agent: int, v: dict[str, float], vs: dict[str, float],
                      sigma: dict[str, float]) -> None:
    """Refuse an agent's noise schedule whose budget would be infinite (Assumption 4).

    Blocks without noise (sigma 0) are not checked: they are sent in the clear.
    """
    bounds = {"x": ("v_x - v_z", v["x"] - v["z"]), "y": ("v_y", v["y"]), "z": ("v_z", v["z"])}
    for block in ("x", "y", "z"):
        name, bound = bounds[block]
        if sigma[block] > 0 and not vs[block] < bound:
            raise ConfigError(
                f"agent {agent}: vs_{block} = {vs[block]:g} >= {name} = {bound:g} violates "
                f"Assumption 4 (vs_{block} < {name}): its noise decays as fast as its "
                "sensitivity or faster, so its privacy budget would be infinite",
                f"set algorithm.vs_{block} below {bound:g} for agent {agent} (a list gives "
                "one value per agent)")


@dataclass(frozen=True)
class BlockBudget:
    """One block of one agent: its sensitivity, its noise and their eq. (21) series.

    Attributes
    ----------
    constant : float
        C_v (1: nominal).
    exponent : float
        e_v, the sensitivity's decay.
    sigma : float
        sig_v, the noise's standard deviation at t = 0 (> 0).
    decay : float
        vs_v, the noise's decay exponent.
    first : int
        The first release whose sensitivity is not 0 (Algorithm 1: 1, its t = 0 message
        depends on no sample; the tracking baselines: 0, y_i^0 = g_i^0(x_i^0)).
    """

    constant: float
    exponent: float
    sigma: float
    decay: float
    first: int = 1

    def sensitivity(self, t: int) -> float:
        """Delta_v^t (0 before ``first``)."""
        return 0.0 if t < self.first else self.constant * (t + 1.0) ** (-self.exponent)

    def scale(self, t: int) -> float:
        """The Laplace scale b_v^t = sig_v (t+1)^-vs_v / sqrt(2)."""
        return self.sigma * (t + 1.0) ** (-self.decay) / math.sqrt(2.0)

    @property
    def power(self) -> float:
        """p_v = e_v - vs_v, the series' exponent (> 1 under Assumption 4)."""
        return self.exponent - self.decay

    @property
    def factor(self) -> float:
        """sqrt(2) C_v / sig_v."""
        return math.sqrt(2.0) * self.constant / self.sigma

    def partial_sum(self, T: int) -> float:
        """sum_{t=first}^T sqrt(2) C_v / (sig_v (t+1)^{p_v}), the block's eq. (21) term."""
        if T < self.first:
            return 0.0
        t = np.arange(self.first + 1.0, T + 2.0)
        return self.factor * math.fsum((t ** (-self.power)).tolist())

    def limit(self) -> float:
        """The exact series as T -> inf: sqrt(2) C_v / sig_v zeta(p_v, first + 1) (Hurwitz);
        inf if p_v <= 1."""
        if self.power <= 1.0:
            return math.inf
        return self.factor * float(scipy.special.zeta(self.power, self.first + 1.0))

    def bound_155(self) -> float:
        """The paper's closed-form bound (155): sqrt(2) C_v / (sig_v (p_v - 1)), from
        sum_{t>=1} (t+1)^-p <= 1/(p-1) (plus the t = 0 term 1 when ``first`` is 0)."""
        if self.power <= 1.0:
            return math.inf
        return self.factor * (1.0 / (self.power - 1.0) + (1.0 if self.first == 0 else 0.0))


@dataclass(frozen=True)
class GeometricBlock:
    """One block of PDOP in Algorithm 1's framework (Huang, Mitra & Vaidya 2015, [26];
    docs/methods/chen2025.md, "Nominal accounting"): sensitivity ``C lam0 q_lam^t`` (0 at t =
    0), Laplace scale
    ``sigma0 q_sig^t / sqrt(2)``, so release t costs ``sqrt(2) C lam0 / sigma0 (q_lam/q_sig)^t``."""

    constant: float
    lam0: float
    lam_rate: float
    sigma: float
    sigma_rate: float

    def sensitivity(self, t: int) -> float:
        return 0.0 if t == 0 else self.constant * self.lam0 * self.lam_rate ** t

    def scale(self, t: int) -> float:
        return self.sigma * self.sigma_rate ** t / math.sqrt(2.0)

    @property
    def ratio(self) -> float:
        return self.lam_rate / self.sigma_rate

    def partial_sum(self, T: int) -> float:
        """sum_{t=1}^T sqrt(2) C lam0 / sigma0 (q_lam/q_sig)^t."""
        factor = math.sqrt(2.0) * self.constant * self.lam0 / self.sigma
        return factor * math.fsum((self.ratio ** np.arange(1.0, T + 1.0)).tolist())

    def limit(self) -> float:
        """The geometric series' sum as T -> inf (inf unless q_lam < q_sig)."""
        q = self.ratio
        if q >= 1.0:
            return math.inf
        return math.sqrt(2.0) * self.constant * self.lam0 / self.sigma * q / (1.0 - q)


def fresh_batch(t: int, exponent: float) -> int:
    """gamma_t = ceil((t+1)^exponent), [51]'s number of fresh samples at iteration t."""
    return math.ceil((t + 1.0) ** exponent)


@dataclass(frozen=True)
class SampledBlock:
    """One block of [51] (Wang & Zhang 2024) in Algorithm 1's framework
    (docs/methods/chen2025.md, "Nominal accounting"):
    sensitivity ``C lam0 (t+1)^-v / gamma_t`` with ``gamma_t = ceil((t+1)^kappa)`` fresh
    samples (0 at t = 0), Laplace scale ``sigma (t+1)^growth / sqrt(2)`` (a growing noise)."""

    constant: float
    lam0: float
    decay: float
    sigma: float
    growth: float
    batch_exponent: float

    def sensitivity(self, t: int) -> float:
        if t == 0:
            return 0.0
        return (self.constant * self.lam0 * (t + 1.0) ** (-self.decay)
                / fresh_batch(t, self.batch_exponent))

    def scale(self, t: int) -> float:
        return self.sigma * (t + 1.0) ** self.growth / math.sqrt(2.0)

    def partial_sum(self, T: int) -> float:
        """sum_{t=1}^T Delta^t / b^t."""
        return math.fsum(self.sensitivity(t) / self.scale(t) for t in range(1, T + 1))

    def limit_bound(self) -> float:
        """An upper bound of the limit: gamma_t >= (t+1)^kappa, so the series is at most
        sqrt(2) C lam0 / sigma zeta(v + kappa + growth, 2) (inf if that exponent <= 1)."""
        p = self.decay + self.batch_exponent + self.growth
        if p <= 1.0:
            return math.inf
        return math.sqrt(2.0) * self.constant * self.lam0 / self.sigma * float(scipy.special.zeta(p, 2.0))
