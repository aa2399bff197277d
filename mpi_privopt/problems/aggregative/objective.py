"""Aggregative problems: what one agent of ``min_x sum_i f_i(x_i, g(x))`` knows.

Chen & Wang (2025), eq. (1)::

    min_{x in Omega} F(x) = sum_{i=1}^m f_i(x_i, g(x)),     g(x) = (1/m) sum_i g_i(x_i)

Agent i owns its block x_i (length n_i, public) and knows f_i and g_i only through samples:
the empirical functions f_i^t and g_i^t average over the whole history of samples drawn so
far, each distinct sample weighted by how often it was drawn (docs/methods/chen2025.md,
"Full-history averages"), so an
iteration's cost does not grow with t beyond the number of distinct samples.

:class:`AggregativeObjective` is the contract an aggregative method (``ldp-aggregative``
and its baselines) computes against; :data:`~mpi_privopt.problems.registry.AGGREGATIVE_PROBLEMS`
names the builders,
``builder(options, rank, n_agents, seed) -> AggregativeObjective``, where ``options`` is
the ``[problem.options]`` table of the configuration and the builder makes the agent's
sampling stream from ``(seed, rank)`` (:func:`~mpi_privopt.problems.sampling.sampling_rng`).

Members with a default (not required of an implementation; callers use
:func:`reference_share`, :func:`use_reference`, :func:`tracker_recorder` and
:func:`public_blocks`, which fall back to them, and never probe the objective themselves):

``reference_share()``
    What this agent contributes to a centralised reference in simulation
    (``run.evaluate = "reference"``); None: the problem has no closed-form reference.
``use_reference(shares)``
    Every agent's share, in agent order; the problem computes its reference (e.g. the
    closed-form x*) for its evaluator, and may keep it as ``reference`` (a
    :class:`~mpi_privopt.problems.reference.solution.ReferenceSolution`, stored in models.npz).
``record_trackers(x_i, ytilde, ztilde)``
    Called by the method after each update with the point x_i^t its estimates were made
    at and its estimates of g(x^t) and (1/m) sum_j grad_y f_j (for the evaluator's
    tracking diagnostics, docs/methods/chen2025.md, "Diagnostics"); absent: no diagnostics.
``initial_blocks(n_agents)``
    Every agent's x_j^0, when they are public (data-independent, seeded by ``(seed, j)``):
    the methods then start every agent's stacked estimate at the same point
    (docs/methods/chen2025.md, "Initialisation"); without it, the own block starts at
    ``initial_block()`` and the others at 0
    (:func:`~mpi_privopt.methods.chen2025.aggregative_parts.initial_stack`).

``record_bounds(box)``
    The constants of Assumption 5 that hold for every record of the problem's declared
    (enforced) record domain and every x in ``[-box, box]^{n_i}``, as a
    :class:`RecordBounds`, computed from the problem
    (never a user's guess); None: the problem cannot bound them, and the derived accounting
    is refused (docs/methods/chen2025.md, "Derived accounting").

No MPI here: the set-up gathers the shares (:mod:`mpi_privopt.problem_setup`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mpi_privopt.problems.metrics import Evaluator

__all__ = ["AggregativeObjective", "AggregativeBuilder", "public_blocks", "reference_share",
           "tracker_recorder", "use_reference", "record_bounds", "RecordBounds"]


@dataclass(frozen=True)
class RecordBounds:
    """What a problem guarantees for every record of its declared domain and every x in the
    box Omega, every y in ``y_range`` (R^r when None); l2 norms, the operator norm on
    ``nabla l`` (docs/methods/chen2025.md, "Derived accounting").

    Attributes
    ----------
    L_h : float
        Half the largest change of ``nabla_x h(x, y; phi)`` or ``nabla_y h(x, y; phi)``
        when the record phi is replaced (the proof uses L_h only for this).
    Lbar_h : float
        ``nabla_v h`` is Lbar_h-Lipschitz in (x, y) (the sum of the distances), v in {x, y}.
    L_l : float
        ``l`` is L_l-Lipschitz in x and ``||nabla l|| <= L_l``.
    Lbar_l : float
        ``nabla l`` is Lbar_l-Lipschitz in x.
    d_l : float
        Half the largest l1 change of ``l(x; xi)`` when the record xi is replaced.
    y_range : tuple of float, optional
        The aggregate's range (every coordinate), which ytilde is clipped to where it enters
        the updates; None: no clip (the bounds hold for every y).
    domain : str
        The record domain the problem enforces, for reports.
    """

    L_h: float
    Lbar_h: float
    L_l: float
    Lbar_l: float
    d_l: float
    y_range: tuple[float, float] | None = None
    domain: str = ""


class AggregativeObjective(Protocol):
    """Agent i's f_i(x_i, y) and g_i(x_i), known only through samples; the empirical
    functions average over the whole history of samples drawn (count weights,
    docs/methods/chen2025.md, "Full-history averages")."""

    block_size: int        # n_i, length of x_i (public)
    aggregate_size: int    # r

    def observe(self, count: int = 1, *, fresh: bool = False) -> None:
        """Draw `count` samples i.i.d. with replacement from the agent's own sampling stream
        and add them to the history; fresh=True: the functions cover only these ([51])."""
        ...

    def aggregate(self, x_i: np.ndarray) -> np.ndarray:               # g_i^t(x_i), shape (r,)
        ...

    def aggregate_vjp(self, x_i: np.ndarray, z: np.ndarray) -> np.ndarray:  # nabla g_i^t(x_i) z, (n_i,)
        ...

    def grad_x(self, x_i: np.ndarray, y: np.ndarray) -> np.ndarray:   # nabla_x f_i^t(x_i, y), (n_i,)
        ...

    def grad_y(self, x_i: np.ndarray, y: np.ndarray) -> np.ndarray:   # nabla_y f_i^t(x_i, y), (r,)
        ...

    def initial_block(self) -> np.ndarray:                             # x_i^0, seeded
        ...

    def evaluator(self, mode: str) -> Evaluator | None:                # problems/metrics.py contract
        ...


#: ``builder(options, rank, n_agents, seed)``: agent ``rank``'s objective
AggregativeBuilder = Callable[[Mapping[str, object], int, int, int], AggregativeObjective]


def reference_share(objective: AggregativeObjective) -> object | None:
    """The objective's ``reference_share()`` if it has one, else None (no reference)."""
    share = getattr(objective, "reference_share", None)
    return None if share is None else share()


def use_reference(objective: AggregativeObjective, shares: Sequence[object]) -> None:
    """Hand every agent's share to the objective's ``use_reference`` if it has one."""
    use = getattr(objective, "use_reference", None)
    if use is not None:
        use(list(shares))


def tracker_recorder(objective: AggregativeObjective) -> Callable | None:
    """The objective's ``record_trackers(x_i, ytilde, ztilde)`` if it has one, else None
    (no tracking diagnostics)."""
    return getattr(objective, "record_trackers", None)


def public_blocks(objective: AggregativeObjective, n_agents: int) -> list[np.ndarray] | None:
    """Every agent's x_j^0 from the objective's ``initial_blocks`` if it has one, else None
    (the blocks are not public)."""
    blocks = getattr(objective, "initial_blocks", None)
    return None if blocks is None else [np.asarray(b, dtype=float) for b in blocks(n_agents)]


def record_bounds(objective: AggregativeObjective, box: float) -> object | None:
    """The objective's ``record_bounds(box)`` if it has one, else None (no bounds: the
    derived accounting is refused)."""
    bounds = getattr(objective, "record_bounds", None)
    return None if bounds is None else bounds(box)
