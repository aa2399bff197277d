"""The topology privacy certificate of Gade & Vaidya (2017), Theorem 2.

Structured randomization (RSS-NB, RSS-LB) and Function Sharing are **not** differentially
private: the ledger books their messages as non-private (epsilon = inf). What such a run
may claim instead is a possibilistic guarantee against at most ``f`` colluding passive
(honest-but-curious) agents who pool everything they see, which depends only on the
graph:

* (P1) minimum degree >= f + 1: no coalition of f agents can determine the objective f_i
  of any single agent outside it (every agent keeps a neighbour outside the coalition);
* (P2) vertex connectivity >= f + 1: no coalition of f agents can determine the sum of
  the objectives over any strict subset of the other agents (removing the coalition never
  disconnects the rest).

The paper proves both for FS when the objectives are polynomials of bounded degree. For
RSS-NB and RSS-LB it proves no guarantee; the conditions are still necessary for them
(when they fail, a coalition recovers the exposed agent's gradients exactly; see
:mod:`mpi_privopt.methods.gade2017.attacks`). This module knows nothing of MPI.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from ...topology.light import as_networkx

__all__ = ["TopologyCertificate", "CoalitionExposure", "topology_certificate", "exposure",
           "certificate_report", "ADVERSARIES_MEANING"]

#: what ``algorithm.adversaries`` (f) means, said when it is out of range
ADVERSARIES_MEANING = "the number f of colluding agents the topology certificate is checked for"


@dataclass(frozen=True)
class TopologyCertificate:
    """Whether a graph meets Theorem 2's conditions for ``adversaries`` colluders.

    Attributes
    ----------
    adversaries : int
        f, the largest coalition of passive adversaries considered.
    min_degree : int
    connectivity : int
        Vertex connectivity kappa(G).
    protects_each_agent : bool
        (P1) ``min_degree >= f + 1``.
    protects_subset_sums : bool
        (P2) ``connectivity >= f + 1``.
    """

    adversaries: int
    min_degree: int
    connectivity: int
    protects_each_agent: bool
    protects_subset_sums: bool

    def statement(self) -> str:
        """One line: the two conditions with their numbers and verdicts."""
        f = self.adversaries
        p1 = "holds" if self.protects_each_agent else "FAILS"
        p2 = "holds" if self.protects_subset_sums else "FAILS"
        return (f"f = {f}: min degree {self.min_degree} >= {f + 1} {p1} (P1, each agent's "
                f"function); vertex connectivity {self.connectivity} >= {f + 1} {p2} "
                f"(P2, sums over strict subsets)")


@dataclass(frozen=True)
class CoalitionExposure:
    """What one particular coalition can learn exactly by the necessity argument.

    Attributes
    ----------
    coalition : tuple of int
    exposed_agents : tuple of int
        Agents outside the coalition all of whose neighbours are in it (P1 breached).
    separated_groups : tuple of tuple of int
        The components of G minus the coalition when there is more than one: the sum of
        each group's objectives is learnable (P2 breached). Empty when the rest stays
        connected.
    """

    coalition: tuple[int, ...]
    exposed_agents: tuple[int, ...]
    separated_groups: tuple[tuple[int, ...], ...]


def topology_certificate(graph: nx.Graph, adversaries: int) -> TopologyCertificate:
    """Check Theorem 2's conditions on ``graph`` for coalitions of up to ``adversaries``.

    Parameters
    ----------
    graph : networkx.Graph
        Undirected communication graph.
    adversaries : int
        f >= 0.
    """
    graph = as_networkx(graph)  # a run's LightGraph
    if adversaries < 0:
        raise ValueError(f"the number of adversaries must be >= 0, got {adversaries}")
    if graph.is_directed():
        raise ValueError("the certificate is defined for undirected graphs")
    n = graph.number_of_nodes()
    min_degree = min((d for _, d in graph.degree()), default=0)
    # networkx gives K_n connectivity n - 1, as the theorem's convention needs
    connectivity = int(nx.node_connectivity(graph)) if n > 1 else 0
    need = adversaries + 1
    return TopologyCertificate(adversaries, int(min_degree), connectivity,
                               min_degree >= need, connectivity >= need)


def exposure(graph: nx.Graph, coalition: Iterable[int]) -> CoalitionExposure:
    """Which agents and groups a given coalition can determine exactly (Sec. 3.2, necessity)."""
    graph = as_networkx(graph)  # a run's LightGraph
    members = tuple(sorted(set(int(a) for a in coalition)))
    inside = set(members)
    exposed = tuple(sorted(v for v in graph.nodes if v not in inside
                           and all(u in inside for u in graph.neighbors(v))))
    rest = graph.subgraph(v for v in graph.nodes if v not in inside)
    groups = sorted(tuple(sorted(c)) for c in nx.connected_components(rest))
    return CoalitionExposure(members, exposed, tuple(groups) if len(groups) > 1 else ())


def certificate_report(graph: nx.Graph, adversaries: int, scope: str) -> dict:
    """The run-summary entries of the Gade & Vaidya methods (RSS-NB, RSS-LB, FS)."""
    cert = topology_certificate(graph, adversaries)
    return {
        "privacy kind": "structured randomization, not differential privacy "
                        "(the ledger books every message as non-private: epsilon unbounded)",
        "topology certificate": cert.statement(),
        "certificate scope": scope,
        "certificate_f": cert.adversaries,
        "min_degree": cert.min_degree,
        "vertex_connectivity": cert.connectivity,
        "protects_each_agent": cert.protects_each_agent,
        "protects_subset_sums": cert.protects_subset_sums,
    }
