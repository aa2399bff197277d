r"""Derived accounting of Chen & Wang's Algorithm 1 and of the baselines run in its framework
(PDOP, [51]): the ledger books, per agent and release, the sensitivity the proof of Theorem 2
gives for the bounds the run enforces.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from ...problems.aggregative.objective import RecordBounds, record_bounds
from .sensitivity import ProofConstants, recursion_bounds, recursion_for_steps

__all__ = ["RecordBounds", "DerivedSensitivities", "DerivedBlock", "DerivedScheduleBlock",
           "DERIVED", "enforce_bounds", "check_derived",
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
    (doubling its horizon), with overflow read as an infinite bound.

    Algorithm 1's polynomial steps come as ``lam0``, ``v``; any other schedule (PDOP's,
    [51]'s) as ``steps(T)``, the keyword arguments of
    :func:`~mpi_privopt.methods.chen2025.sensitivity.recursion_for_steps` for t = 0..T-1.
    """

    def __init__(self, constants: ProofConstants, lam0: Mapping[str, float] | None = None,
                 v: Mapping[str, float] | None = None, horizon: int = 64, *,
                 steps: Callable[[int], dict] | None = None) -> None:
        self.constants = constants
        self.lam0, self.v = (dict(lam0), dict(v)) if steps is None else (None, None)
        self._steps = steps
        self._values: dict[str, np.ndarray] = {}
        self._extend(max(int(horizon), 1))

    def _extend(self, T: int) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            values = (recursion_bounds(self.constants, self.lam0, self.v, T)
                      if self._steps is None
                      else recursion_for_steps(self.constants, T=T, **self._steps(T)))
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


@dataclass(frozen=True)
class DerivedScheduleBlock:
    """A block whose noise follows another schedule (PDOP's geometric, [51]'s growing):
    the recursion's sensitivity and ``noise``'s Laplace scale (its nominal block's)."""

    source: DerivedSensitivities
    block: str
    noise: object  # a GeometricBlock or SampledBlock: its scale(t)

    def sensitivity(self, t: int) -> float:
        return 0.0 if t == 0 else self.source.at(self.block, t)

    def scale(self, t: int) -> float:
        return self.noise.scale(t)

    def partial_sum(self, T: int) -> float:
        return math.fsum(self.sensitivity(t) / self.scale(t) for t in range(1, T + 1))


def enforce_bounds(core, problem, params, agent_id: int, name: str):
    """The derived accounting's set-up on a :class:`RobustTracking` core: the problem's
    record bounds on the box (ConfigError without them), the ztilde and ytilde clips on the
    core, and the agent's proof constants. Returns (constants, record domain)."""
    bounds = record_bounds(problem, params.box)
    if bounds is None:
        raise ConfigError(
            f"problem {type(problem).__name__} declares no record bounds, so no "
            f"sensitivity can be derived for {name}",
            "give the problem a record_bounds(box) hook "
            '(docs/methods/chen2025.md, "Derived accounting"), use one that has it '
            '(aggregative-quadratic, or personalised with model = "softmax"), or set '
            'privacy.accounting = "nominal" (its epsilon is then labelled nominal: not a '
            "privacy guarantee)")
    core.clip_z, core.y_range = params.clip_z, bounds.y_range
    constants = derived_constants(bounds, params.clip_z, core.self_weight,
                                  core.layout.sizes[agent_id], core.layout.r)
    return constants, bounds.domain


def check_derived(name: str, cfg) -> None:
    """What the derived accounting needs of the configuration of a method that runs
    Algorithm 1's update, before MPI starts (docs/methods/chen2025.md, "Derived
    accounting"): a finite box and ztilde clip, no stated constants, lam_z^t <= 1."""
    if cfg.privacy.accounting != "derived":
        return
    params = cfg.algorithm.params
    fix = ('or set privacy.accounting = "nominal" (its epsilon is then labelled nominal: not '
           "a privacy guarantee)")
    if not math.isfinite(params.box):
        raise ConfigError(f"algorithm.box = {params.box} leaves Omega unbounded: the derived "
                          "accounting needs a finite box", f"set algorithm.box finite, {fix}")
    if not math.isfinite(params.clip_z):
        raise ConfigError(f"algorithm.clip_z = {params.clip_z}: the derived accounting needs "
                          "ztilde clipped to a finite radius (the paper's d_z)",
                          f"set algorithm.clip_z finite, {fix}")
    stated = [f"sensitivity_{b}" for b in ("y", "z", "x")
              if np.any(np.asarray(getattr(params, f"sensitivity_{b}"), dtype=float) != 1.0)]
    if stated:
        raise ConfigError(f"algorithm.{', algorithm.'.join(stated)} set: the stated constants "
                          "belong to the nominal accounting, and the derived one computes its "
                          "own", f"remove them, {fix}")
    if params.lam_z0 > 1:
        raise ConfigError(f"algorithm.lam_z0 = {params.lam_z0} > 1: the proof's recursion "
                          "covers the ztilde clip through d_z / lam_z only when lam_z^t <= 1",
                          f"set algorithm.lam_z0 <= 1, {fix}")


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
