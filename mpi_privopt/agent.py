"""What one agent holds while it runs: its data, its links and its random streams."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .topology import degrees, metropolis_row

if TYPE_CHECKING:
    # only a type here: importing the network starts MPI, and the command line validates
    # its input before MPI starts (entrypoint.validate_before_mpi)
    from .network import Network


def _call(step: Callable[[], Any]) -> Any:
    return step()


@dataclass
class Agent:
    """One agent (one MPI rank).

    Attributes
    ----------
    id : int
        The agent id, equal to its MPI rank.
    n_agents : int
        K, the number of agents.
    problem : LocalProblem
        The agent's private local objective f_k and its data.
    net : Network
        Neighbour-only messaging; the only way out of the agent.
    graph : LightGraph or networkx.Graph
        The communication graph. Topology is public: every agent holds the same one (in a
        run a :class:`~mpi_privopt.topology.LightGraph`; ``topology.as_networkx(graph)``
        for networkx's algorithms).
    rng : numpy.random.Generator
        The agent's own random stream, from ``SeedSequence(seed)`` spawned per agent, so a
        run does not depend on process placement.
    weights : str
        The Metropolis variant of ``topology.weights``.
    noise : NoiseSource
        The agent's noise for privacy mechanisms (``privacy.noise``: fast or secure).
    privacy : PrivacyConfig
        The ``[privacy]`` section (budget, delta), for algorithms that calibrate noise.
    iterations : int
        T, the run's iteration count (noise schedules are calibrated over T).
    seed : int
        The run's seed (public), for streams keyed by more than the agent (a token
        method's schedules and per-chain noise).
    once : callable
        ``once(step)``: the result of ``step()`` (a pure function of public values, such
        as a noise calibration) computed by one agent and handed to all (the engine's
        :func:`~mpi_privopt.mpiutil.computed_once`), so that the other ranks neither
        repeat it nor load its libraries. Collective: every agent calls it at the same
        point of its set-up, before anything that may fail on one agent only. Outside a
        run it simply calls ``step()``.
    """

    id: int
    n_agents: int
    problem: object
    net: Network
    graph: Any
    rng: np.random.Generator
    weights: str = "standard"
    noise: object = None
    privacy: object = None
    iterations: int = 0
    seed: int = 0
    once: Callable[[Callable[[], Any]], Any] = _call

    @property
    def degree(self) -> int:
        return len(self.net.out_neighbors)

    def mixing_row(self) -> tuple[float, np.ndarray]:
        """This agent's Metropolis weights: (self weight, weights of ``net.in_neighbors``).

        Computed from its own and its neighbours' degrees (the graph is public), by the
        ``topology.weights`` rule.
        """
        return metropolis_row(self.id, self.net.in_neighbors, degrees(self.graph),
                              self.weights)
