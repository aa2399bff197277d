"""What the aggregative methods share (Algorithm 1 and its baselines), as functions.

* :class:`AggregativeLayout`: where each agent's block sits in the stacked n-vector, and the
  packed message [y, z, **x**] of 2r + n floats;
* :func:`initial_stack`: **x**_i^0 with every block j at the public seeded x_j^0
  (docs/methods/chen2025.md, "Initialisation");
* :func:`mixing_matrix` and :func:`check_mixing`: A = I + W from the public graph (constant
  weights w_ij = c, or Metropolis) and Assumption 3;
* :func:`step_sizes`: lam_v^t = lam_v^0 (t+1)^-v_v;
* :func:`packed_release`: the noisy packed message of one time, one Laplace event per block
  booked as one (or the clear message of a run without noise);
* :func:`planned_packed_events`: the events those messages will book, before they are sent
  (``Algorithm.planned_events``: a resume that would overspend is refused before any
  release); :func:`planned_framework_events` for the methods run in Algorithm 1's framework;
* :class:`RobustTracking`: Algorithm 1's state (**x**_i, y_i, z_i) with its update (lines 3-9)
  and its message (line 10), shared by ``ldp-aggregative`` and the baselines run in its
  framework (PDOP, [51]), which change only the schedules.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from ...errors import ConfigError
from ...privacy.costs import resolve
from ...privacy.events import NonPrivateEvent, PackedLaplaceEvent, PrivacyEvent
from ...privacy.mechanisms import LaplaceMechanism
from ...privacy.release import Release
from ...problems.aggregative.objective import public_blocks, tracker_recorder
from ...topology import laplacian, metropolis_weights
from .derived import clip_l2


@dataclass(frozen=True)
class AggregativeLayout:
    """The stacked estimate's layout and the packed message's.

    Attributes
    ----------
    sizes : tuple of int
        n_j of every agent (public).
    r : int
        The aggregate's length.
    own : slice
        This agent's block in the stacked vector (R_i).
    """

    sizes: tuple[int, ...]
    r: int
    own: slice

    @classmethod
    def of(cls, problem, n_agents: int, agent: int) -> "AggregativeLayout":
        """From the problem: every block's size (``initial_blocks`` when it has them, else
        every agent's n_j = this agent's n_i)."""
        blocks = public_initial_blocks(problem, n_agents)
        sizes = (tuple(b.size for b in blocks) if blocks is not None
                 else (int(problem.block_size),) * n_agents)
        if sizes[agent] != problem.block_size:
            raise ConfigError(f"agent {agent}: block size {problem.block_size} differs from "
                              f"the public layout's {sizes[agent]}",
                              "the problem's initial_blocks must match its block_size")
        start = sum(sizes[:agent])
        return cls(sizes, int(problem.aggregate_size), slice(start, start + sizes[agent]))

    @property
    def n(self) -> int:
        return sum(self.sizes)

    def packed_views(self, buffer: np.ndarray) -> dict[str, np.ndarray]:
        """Views of a packed message [y, z, **x**]: keys ``y``, ``z``, ``x``."""
        r = self.r
        return {"y": buffer[:r], "z": buffer[r:2 * r], "x": buffer[2 * r:]}


def public_initial_blocks(problem, n_agents: int) -> list[np.ndarray] | None:
    """Every agent's x_j^0 if the problem can say (``initial_blocks``), else None."""
    return public_blocks(problem, n_agents)


def initial_stack(problem, layout: AggregativeLayout) -> np.ndarray:
    """**x**_i^0: every block j at x_j^0 (identical for all i) when the problem publishes
    them; otherwise the own block at ``initial_block()`` and the others at 0."""
    blocks = public_initial_blocks(problem, len(layout.sizes))
    X = np.zeros(layout.n)
    if blocks is not None:
        X[:] = np.concatenate(blocks)
    else:
        X[layout.own] = problem.initial_block()
    return X


def mixing_matrix(graph: nx.Graph, constant_weight: float, variant: str) -> np.ndarray:
    """A = I + W: w_ij = ``constant_weight`` on every link (the paper's 0.3 on the ring),
    or Metropolis weights (``constant_weight`` 0)."""
    if constant_weight > 0:
        return np.eye(graph.number_of_nodes()) - constant_weight * laplacian(graph)
    return metropolis_weights(graph, variant)


def check_mixing(A: np.ndarray, tolerance: float = 1e-12) -> float:
    """Assumption 3: A = I + W doubly stochastic and ||A - 11^T/m||_2 < 1.

    Returns the norm; raises ConfigError naming the value found otherwise.
    """
    m = A.shape[0]
    fix = ("use Metropolis weights (algorithm.constant_weight = 0) or a constant weight "
           "below 1 / (largest degree)")
    worst = float(A.min())
    if worst < -tolerance:
        i, j = np.unravel_index(int(np.argmin(A)), A.shape)
        raise ConfigError(f"I + W is not doubly stochastic: entry ({i}, {j}) = {worst:.6g} < 0 "
                          "(Assumption 3)", fix)
    sums = np.concatenate([A.sum(axis=0), A.sum(axis=1)])
    off = float(np.max(np.abs(sums - 1.0)))
    if off > 1e-9:
        raise ConfigError(f"I + W is not doubly stochastic: a row or column sums to 1 "
                          f"{'+' if sums[np.argmax(np.abs(sums - 1))] > 1 else '-'} {off:.3g} "
                          "(Assumption 3)", fix)
    norm = float(np.linalg.norm(A - np.full((m, m), 1.0 / m), 2))
    if not norm < 1.0:
        raise ConfigError(f"||I + W - 11^T/m|| = {norm:.6g} >= 1 violates Assumption 3",
                          fix + "; the graph must be connected")
    return norm


def step_sizes(lam0: dict[str, float], v: dict[str, float], t: int) -> dict[str, float]:
    """lam_v^t = lam_v^0 / (t+1)^v_v for v in x, y, z."""
    return {b: lam0[b] * (t + 1.0) ** (-v[b]) for b in lam0}


def packed_release(mechanism, views: dict[str, np.ndarray], values: dict[str, np.ndarray],
                   budgets: dict, t: int, out: np.ndarray, clear: list[str],
                   method: str) -> Release:
    """The message of time ``t``: ``values[v]`` + Laplace noise written into ``views[v]``
    (views of ``out``, a channel's send buffer), for every block v of ``views``.

    ``budgets[v]`` gives the block's ``sensitivity(t)`` and Laplace ``scale(t)``; the
    blocks' Laplace events travel as one :class:`PackedLaplaceEvent`. With blocks in
    ``clear`` (sigma = 0) the values are sent without noise and the release is non-private.
    """
    if clear:
        for block, view in views.items():
            view[...] = values[block]
        return Release.nonprivate(out, _clear_note(method, clear))
    if not _bounded(budgets, views, t):
        # the noise is drawn as always, but no finite sensitivity bounds it: unbounded loss
        for block, view in views.items():
            mechanism.release(values[block], 0.0, budgets[block].scale(t), out=view)
        return Release.nonprivate(out, _unbounded_note(method))
    parts = tuple(mechanism.release(values[block], budgets[block].sensitivity(t),
                                    budgets[block].scale(t), out=view).event
                  for block, view in views.items())
    return Release(out, _packed(mechanism, parts))


def _clear_note(method: str, clear: list[str]) -> str:
    return f"{method} without noise on {', '.join(clear)} (sigma = 0: sent in the clear)"


def _bounded(budgets: dict, views: dict, t: int) -> bool:
    """Whether every block's sensitivity at t is finite (a derived bound can overflow)."""
    return all(np.isfinite(budgets[block].sensitivity(t)) for block in views)


def _unbounded_note(method: str) -> str:
    return (f"{method}: the derived sensitivity bound overflowed (infinite), so the noisy "
            "message has no finite privacy guarantee")


def _packed(mechanism, parts: tuple) -> PackedLaplaceEvent:
    return PackedLaplaceEvent(parts, owner=mechanism.owner, unit=mechanism.unit)


def planned_packed_events(mechanism, views: dict[str, np.ndarray], budgets: dict,
                          times, clear: list[str], method: str) -> list[PrivacyEvent]:
    """The events :func:`packed_release` will book for the messages of ``times``, in
    order, as the ledger books them (a packed event resolved to its pure-DP event; a
    clear message's non-private event), without drawing any noise.

    The arguments are :func:`packed_release`'s (``views``: the blocks' views of the send
    buffer, for their order and sizes).
    """
    if clear:
        return [NonPrivateEvent(_clear_note(method, clear)) for _ in times]
    return [resolve(_packed(mechanism, tuple(
        mechanism.booked_event(budgets[block].sensitivity(t), budgets[block].scale(t),
                               view.size)
        for block, view in views.items()))) if _bounded(budgets, views, t)
            else NonPrivateEvent(_unbounded_note(method)) for t in times]


def framework_times(first: int, last: int) -> list[int]:
    """The times of the messages iterations ``first`` .. ``last`` of Algorithm 1's
    framework send: iteration n sends t = n, iteration 1 first t = 0 (line 1)."""
    return [t for n in range(first, last + 1) for t in ((0, n) if n == 1 else (n,))]


def planned_framework_events(method, first: int, last: int) -> list[PrivacyEvent]:
    """:meth:`Algorithm.planned_events` of a method that runs Algorithm 1's framework
    (``method.core`` a :class:`RobustTracking`, sending with ``method.budgets`` and
    ``method.clear``)."""
    return method.core.planned(framework_times(first, last), method.budgets, method.clear)


def project_box(v: np.ndarray, box: float) -> np.ndarray:
    """Pi_Omega for Omega = [-box, box] per coordinate, in place (box = inf: none)."""
    if np.isfinite(box):
        np.clip(v, -box, box, out=v)
    return v


class RobustTracking:
    """Algorithm 1's state on one agent and its two moves (Chen & Wang 2025,
    docs/methods/chen2025.md, "Algorithm 1").

    ``update(t, lam, beta)`` is lines 3-9 with the neighbours' messages of time t (beta
    multiplies every consensus increment: 1 in Algorithm 1, beta^t in [51]'s framework);
    ``send(t, budgets, clear)`` is line 10, the packed noisy message of time t on phase
    "yzx".

    Parameters
    ----------
    agent : Agent
    constant_weight : float
        w_ij on every link (0: Metropolis weights); Assumption 3 is checked.
    box : float
        Omega's half-width (inf: no projection).
    method : str
        The method's name (named in the note of a clear message).
    """

    def __init__(self, agent, constant_weight: float, box: float, method: str) -> None:
        K, me = agent.n_agents, agent.id
        self.problem = agent.problem
        A = mixing_matrix(agent.graph, constant_weight, agent.weights)
        check_mixing(A)
        self.self_weight = float(A[me, me])
        self.neighbour_weights = A[me, agent.net.in_neighbors]
        self.layout = AggregativeLayout.of(self.problem, K, me)
        r, n = self.layout.r, self.layout.n
        self.channel = agent.net.broadcast_channel("yzx", 2 * r + n, buffers=2)
        self.mechanism = LaplaceMechanism(agent.noise, owner=me, unit="record")
        self.method = method
        self._box = box
        self.X = initial_stack(self.problem, self.layout)
        self.y = np.zeros(r)
        self.z = np.zeros(r)
        self.ytilde = np.zeros(r)
        self.ztilde = np.zeros(r)
        #: the derived accounting's enforced bounds (docs/methods/chen2025.md, "Derived
        #: accounting"): ztilde clipped to this l2 radius where it enters the x-update, and
        #: ytilde to the aggregate's range (lo, hi) where it enters the updates; inf and None
        #: (the paper's algorithm): no clip
        self.clip_z = np.inf
        self.y_range: tuple[float, float] | None = None
        #: who is told (x_i, ytilde, ztilde) after every update: the problem's optional
        #: diagnostics hook (AggregativeObjective.record_trackers) and any added with
        #: :meth:`add_tracker_listener` (a reproduction's diagnostics)
        hook = tracker_recorder(self.problem)
        self._tracker_listeners = [hook] if hook is not None else []

    def add_tracker_listener(self, listener) -> None:
        """Call ``listener(x_i, ytilde, ztilde)`` after every update from now on (before
        the stacked estimate is replaced, so ``self.X`` is still **x**_i^t)."""
        self._tracker_listeners.append(listener)

    def send(self, t: int, budgets: dict, clear: list[str]) -> None:
        """Line 10: the noisy message of time t, one packed buffer to every neighbour."""
        out = self.channel.outgoing
        values = {"y": self.y, "z": self.z, "x": self.X}
        self.channel.exchange(packed_release(self.mechanism, self.layout.packed_views(out),
                                             values, budgets, t, out, clear, self.method))

    def planned(self, times, budgets: dict, clear: list[str]) -> list[PrivacyEvent]:
        """The events :meth:`send` will book for the messages of ``times``."""
        return planned_packed_events(self.mechanism,
                                     self.layout.packed_views(self.channel.outgoing),
                                     budgets, times, clear, self.method)

    def _consensus(self, state: np.ndarray, heard: np.ndarray, beta: float) -> np.ndarray:
        # s + beta sum_j w_ij (m_j - s) = s + beta (heard - |w_ii| s), |w_ii| = 1 - a_ii
        if beta == 1.0:
            return self.self_weight * state + heard
        return state + beta * (heard - (1.0 - self.self_weight) * state)

    def update(self, lam: dict[str, float], beta: float = 1.0) -> None:
        """Lines 4-9 with the neighbours' messages of time t (the samples already drawn)."""
        # sum_j w_ij m_j^t over the neighbours' noisy messages of time t
        heard = self.layout.packed_views(self.neighbour_weights @ self.channel.received)
        layout, problem = self.layout, self.problem
        x_i = self.X[layout.own].copy()
        y_next = self._consensus(self.y, heard["y"], beta) + lam["y"] * problem.aggregate(x_i)
        self.ytilde = (y_next - self.y) / lam["y"]
        # clips are 1-Lipschitz, so the proof's recursion still holds with them
        ytilde = self.ytilde if self.y_range is None else np.clip(self.ytilde, *self.y_range)
        z_next = (self._consensus(self.z, heard["z"], beta)
                  + lam["z"] * problem.grad_y(x_i, ytilde))
        self.ztilde = (z_next - self.z) / lam["z"]
        X_next = self._consensus(self.X, heard["x"], beta)
        X_next[layout.own] -= lam["x"] * (problem.grad_x(x_i, ytilde)
                                          + problem.aggregate_vjp(
                                              x_i, clip_l2(self.ztilde, self.clip_z)))
        project_box(X_next, self._box)
        for listener in self._tracker_listeners:
            listener(x_i, self.ytilde, self.ztilde)
        self.X, self.y, self.z = X_next, y_next, z_next
