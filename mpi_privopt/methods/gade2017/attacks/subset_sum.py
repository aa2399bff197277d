"""The subset-sum attack on Function Sharing (Gade & Vaidya 2017, Theorem 2, property P2).

Threat model (the proof's, Sec. 3.2): a coalition A of passive agents knows every obfuscated
objective f-hat_i (the proof grants them: the DGD phase is a deterministic function of the
f-hat's, so they are what the transcript can reveal at most), its own objectives f_a, and
every function share on a link incident to A (it sent or received it). Nothing else.

FS builds (eqs. 8-9)::

    f-hat_i = f_i + sum_{j in N_i} s^{j,i} - sum_{j in N_i} s^{i,j}

so for a group I of agents outside A, the shares on links inside I cancel and::

    sum_{i in I} f_i = sum_{i in I} f-hat_i - sum_{i in I, j in N_i \\ I} (s^{j,i} - s^{i,j})

When every link leaving I ends in A (I is a union of the components of G - A, the groups
:func:`~mpi_privopt.methods.gade2017.certificate.exposure` names) the coalition saw every share in the
last sum and recovers the group's sum exactly: :func:`group_sum_estimate`. Otherwise a
link from I to a good agent outside I carries shares the coalition never saw, and no attack
can do better than guess: :func:`indistinguishable_instance` builds the proof's second
instance (eq. 59), identical in everything the coalition sees, whose sum over I differs
by any polynomial q. (For I = V - A the sum is always learnable, f - sum_a f_a: that is why
P2 speaks of *strict* subsets.)

Functions are coefficient vectors over one monomial basis shared by all agents (the
objectives' and the shares' monomials; the constant term last). Pure numpy and networkx.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations

import networkx as nx
import numpy as np

__all__ = ["AdversaryView", "GroupSumEstimate", "adversary_view", "obfuscated",
           "group_sum_estimate", "indistinguishable_instance", "boundary_links",
           "candidate_groups", "RECOVERY_TOLERANCE"]

#: relative coefficient error below which a group's sum counts as recovered exactly
RECOVERY_TOLERANCE = 1e-9

#: a directed link (sender, receiver); ``shares[(j, i)]`` is s^{j,i}, sent by j to i
Link = tuple[int, int]


@dataclass(frozen=True)
class AdversaryView:
    """Everything the coalition knows in the proof's threat model.

    Attributes
    ----------
    coalition : tuple of int
    obfuscated : numpy.ndarray
        (n, M) every agent's f-hat_i.
    own : dict
        f_a for each member a.
    shares : dict
        s^{j,i} for every directed link with j or i in the coalition.
    """

    coalition: tuple[int, ...]
    obfuscated: np.ndarray
    own: dict[int, np.ndarray]
    shares: dict[Link, np.ndarray]

    def same_as(self, other: "AdversaryView", tol: float = 1e-12) -> bool:
        """Whether two instances look the same to the coalition (to rounding)."""
        scale = max(1.0, float(np.abs(self.obfuscated).max(initial=0.0)))
        close = lambda a, b: bool(np.allclose(a, b, rtol=0.0, atol=tol * scale))
        return (self.coalition == other.coalition
                and close(self.obfuscated, other.obfuscated)
                and self.own.keys() == other.own.keys()
                and all(close(self.own[a], other.own[a]) for a in self.own)
                and self.shares.keys() == other.shares.keys()
                and all(close(self.shares[k], other.shares[k]) for k in self.shares))


@dataclass(frozen=True)
class GroupSumEstimate:
    """The coalition's estimate of sum_{i in group} f_i.

    Attributes
    ----------
    group : tuple of int
    estimate : numpy.ndarray
        (M,) coefficients; shares the coalition never saw are taken as zero.
    unseen_links : tuple of (int, int)
        Undirected links from the group to good agents outside it: their shares are
        missing from the estimate. Empty exactly when the estimate is the truth.
    """

    group: tuple[int, ...]
    estimate: np.ndarray
    unseen_links: tuple[tuple[int, int], ...]

    @property
    def complete(self) -> bool:
        return not self.unseen_links


def obfuscated(objectives: np.ndarray, shares: Mapping[Link, np.ndarray]) -> np.ndarray:
    """Every agent's f-hat_i = f_i + incoming shares - outgoing shares (eqs. 8-9)."""
    hat = np.array(objectives, dtype=float, copy=True)
    for (sender, receiver), share in shares.items():
        hat[receiver] += share
        hat[sender] -= share
    return hat


def adversary_view(objectives: np.ndarray, shares: Mapping[Link, np.ndarray],
                   coalition: Iterable[int]) -> AdversaryView:
    """What ``coalition`` knows of an FS instance (objectives, shares) in the proof's model."""
    members = tuple(sorted(set(int(a) for a in coalition)))
    inside = set(members)
    return AdversaryView(
        coalition=members,
        obfuscated=obfuscated(objectives, shares),
        own={a: np.array(objectives[a], copy=True) for a in members},
        shares={link: np.array(s, copy=True) for link, s in shares.items()
                if link[0] in inside or link[1] in inside})


def boundary_links(graph: nx.Graph, group: Iterable[int]) -> list[tuple[int, int]]:
    """Undirected links (i, j) with i in ``group`` and j outside it."""
    members = set(group)
    return sorted((i, j) for i in members for j in graph.neighbors(i) if j not in members)


def group_sum_estimate(view: AdversaryView, graph: nx.Graph,
                       group: Iterable[int]) -> GroupSumEstimate:
    """The coalition's estimate of the sum of ``group``'s objectives (see the module text).

    Parameters
    ----------
    view : AdversaryView
    graph : networkx.Graph
        The (public) undirected communication graph.
    group : iterable of int
        Agents outside the coalition.
    """
    members = tuple(sorted(set(int(i) for i in group)))
    if set(members) & set(view.coalition):
        raise ValueError(f"group {members} overlaps the coalition {view.coalition}")
    estimate = view.obfuscated[list(members)].sum(axis=0)
    unseen = []
    for i, j in boundary_links(graph, members):
        if (j, i) in view.shares and (i, j) in view.shares:
            estimate = estimate - (view.shares[(j, i)] - view.shares[(i, j)])
        else:
            unseen.append((i, j))
    return GroupSumEstimate(members, estimate, tuple(unseen))


def indistinguishable_instance(objectives: np.ndarray, shares: Mapping[Link, np.ndarray],
                               graph: nx.Graph, coalition: Iterable[int],
                               group: Iterable[int], q: np.ndarray
                               ) -> tuple[np.ndarray, dict[Link, np.ndarray]] | None:
    """The proof's second instance: the same view for the coalition, sum over ``group`` + q.

    Moves q from an agent i in the group to a good agent g outside it, joined to i by a path
    avoiding the coalition (g_i = f_i + q, g_g = f_g - q), and absorbs the difference in the
    shares along that path (s^{u,v} + q on each of its links), so that every f-hat and every
    share on a coalition link is unchanged (eq. 59, with the alternative link functions
    differing on good-good links only).

    Returns
    -------
    (objectives, shares) or None
        None when no such path exists: every link leaving the group ends in the coalition
        (the group is separated), and the group's sum is determined by the view.
    """
    inside = set(int(a) for a in coalition)
    members = set(int(i) for i in group)
    good = graph.subgraph(v for v in graph.nodes if v not in inside)
    for source in sorted(members):
        reachable = nx.single_source_shortest_path(good, source)
        outside = sorted(v for v in reachable if v not in members)
        if not outside:
            continue
        path = reachable[outside[0]]
        new_objectives = np.array(objectives, dtype=float, copy=True)
        new_objectives[path[0]] += q
        new_objectives[path[-1]] -= q
        new_shares = {link: np.array(s, copy=True) for link, s in shares.items()}
        for u, v in zip(path, path[1:]):
            new_shares[(u, v)] = new_shares[(u, v)] + q
        return new_objectives, new_shares
    return None


def candidate_groups(graph: nx.Graph, coalition: Iterable[int],
                     limit: int = 12) -> list[tuple[int, ...]]:
    """Every strict non-empty subset of the agents outside the coalition (when there are at
    most ``limit`` of them), else the components of G - A and each single agent."""
    inside = set(int(a) for a in coalition)
    rest = sorted(v for v in graph.nodes if v not in inside)
    if len(rest) <= limit:
        return [c for r in range(1, len(rest)) for c in combinations(rest, r)]
    components = [tuple(sorted(c)) for c in
                  nx.connected_components(graph.subgraph(rest))]
    return sorted(set(components) | {(v,) for v in rest})
