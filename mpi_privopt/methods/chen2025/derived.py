r"""Derived accounting of Chen & Wang's Algorithm 1: the ledger books, per agent and release,
the sensitivity the proof of Theorem 2 gives for the bounds the run enforces.

``privacy.accounting = "derived"`` (the default) makes every number booked a proven bound
(docs/methods/chen2025.md, "Derived accounting"):

* the problem declares its record domain and returns the constants of Assumption 5 that
  hold on it (a :class:`~mpi_privopt.problems.aggregative.objective.RecordBounds`, the
  problem's ``record_bounds(box)`` hook);
* Omega is the finite box ``[-box, box]^n`` (the projection is 1-Lipschitz in l1);
* ztilde is clipped to ``||ztilde||_2 <= clip_z`` (the paper's d_{i,z}) where it enters the
  x-update, and ytilde to the aggregate's range where the problem declares one;
* ``Delta_v^t`` is the recursion (8), (13), (12) iterated with those constants
  (:func:`~mpi_privopt.methods.chen2025.sensitivity.recursion_bounds`), extended on demand,
  so a resume past the planned horizon books the same numbers.

A bound that overflows (the recursion's growth factor far above 1 for long enough) is
infinite: the release is then booked as non-private ("unbounded"), never as a number.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from ...problems.aggregative.objective import RecordBounds
from .sensitivity import ProofConstants, recursion_bounds

__all__ = ["RecordBounds", "DerivedSensitivities", "DerivedBlock", "DERIVED",
           "derived_constants", "refuse_derived", "clip_l2", "accounting_of"]

#: the label of the derived accounting (a proven bound, no "not a guarantee" label)
DERIVED = ("derived (docs/methods/chen2025.md, \"Derived accounting\"): each Delta_v^t from "
           "the recursion of the proof of Theorem 2 with the problem's record bounds, the "
           "finite box and the ztilde clip the run enforces; a proven bound")


def derived_constants(bounds: RecordBounds, clip_z: float, self_weight: float, n_i: int,
                      r: int) -> ProofConstants:
    """The proof's constants of one agent from its problem's bounds and the run's clip."""
    return ProofConstants(bounds.L_h, bounds.Lbar_h, bounds.L_l, bounds.Lbar_l, bounds.d_l,
                          clip_z, self_weight, n_i, r)


class DerivedSensitivities:
    """``Delta_v^t`` of one agent for v in {x, y, z}, the recursion iterated as far as asked
    (doubling its horizon), with overflow read as an infinite bound."""

    def __init__(self, constants: ProofConstants, lam0: Mapping[str, float],
                 v: Mapping[str, float], horizon: int = 64) -> None:
        self.constants, self.lam0, self.v = constants, dict(lam0), dict(v)
        self._values: dict[str, np.ndarray] = {}
        self._extend(max(int(horizon), 1))

    def _extend(self, T: int) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            values = recursion_bounds(self.constants, self.lam0, self.v, T)
        # nan only arises from inf - inf or 0 * inf after an overflow: an unbounded value
        self._values = {b: np.where(np.isnan(a), math.inf, a) for b, a in values.items()}

    def at(self, block: str, t: int) -> float:
        """Delta_block^t (0 at t = 0)."""
        if t >= self._values[block].size:
            self._extend(max(2 * self._values[block].size, t + 1))
        return float(self._values[block][t])


@dataclass(frozen=True)
class DerivedBlock:
    """One block of one agent under the derived accounting: the recursion's sensitivity and
    Assumption 4's Laplace scale ``sig (t+1)^-vs / sqrt(2)`` (the interface of
    :class:`~mpi_privopt.methods.chen2025.ldp_budget.BlockBudget`)."""

    source: DerivedSensitivities
    block: str
    sigma: float
    decay: float

    def sensitivity(self, t: int) -> float:
        return 0.0 if t == 0 else self.source.at(self.block, t)

    def scale(self, t: int) -> float:
        return self.sigma * (t + 1.0) ** (-self.decay) / math.sqrt(2.0)

    def partial_sum(self, T: int) -> float:
        """sum_{t=1}^T Delta^t / b^t, the block's eq. (21) term with the derived Delta."""
        return math.fsum(self.sensitivity(t) / self.scale(t) for t in range(1, T + 1))


def accounting_of(agent) -> str:
    """The run's ``privacy.accounting`` ("derived" when the agent carries no privacy
    section: the default)."""
    privacy = agent.privacy
    return "derived" if privacy is None else privacy.accounting


def clip_l2(v: np.ndarray, radius: float) -> np.ndarray:
    """``v`` scaled into the l2 ball of ``radius`` (``v`` itself when inside or radius inf)."""
    if not math.isfinite(radius):
        return v
    norm = float(np.linalg.norm(v))
    return v if norm <= radius else v * (radius / norm)


def refuse_derived(reason: str):
    """A ``config_checks`` entry refusing ``privacy.accounting = "derived"`` for a method whose
    sensitivity has no proof, with ``reason`` (docs/methods/chen2025.md, "Derived
    accounting")."""
    def check(name: str, cfg) -> None:
        if cfg.privacy.accounting == "derived":
            raise ConfigError(
                f'privacy.accounting = "derived" is not available for {name!r}: {reason}',
                'set privacy.accounting = "nominal" (its epsilon is then labelled nominal: '
                "not a privacy guarantee)")
    return check
