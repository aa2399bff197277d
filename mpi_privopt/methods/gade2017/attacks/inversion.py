"""Gradient inversion by a coalition of curious agents (pure numpy, no MPI).

Every method here ends an iteration with the paper's projected gradient step
``x_{k+1}^t = P_X[v_k^t - alpha_k grad f_t(v_k^t)]``. Away from the box boundary this
gives ``grad f_t(v_k^t) = (v_k^t - x_{k+1}^t) / alpha_k``, so a coalition that can
reconstruct the fused point v_k^t and the next state x_{k+1}^t of a target t learns the
target's gradients, and from enough of them its objective.

The coalition knows the protocol (algorithm, weights B, step sizes, share class: all
public) and pools every message on its links. Per method it reconstructs:

``dgd``, ``fs``
    x_k^t is broadcast in the clear; v_k^t = sum_i B[t,i] x_k^i, where a neighbour i of t
    whose state the coalition never sees is replaced by x_k^t. For ``fs`` the result is a
    gradient of f-hat_t; the coalition subtracts the shares it knows (those on its links
    to t); the shares on t's other links stay unknown.
``rss-nb``
    x_k^t = w_k^t - alpha_k (known part of d_k^t): the shares on t's links to the
    coalition are known, the others are not. v_k^t = sum_i B[t,i] w_k^i (the fusion uses
    perturbed states, all broadcast), unseen w_k^i replaced by w_k^t.
``rss-lb``
    x_k^t = the B[., t]-weighted mean of the copies w_k^{t,a} the coalition received
    (exact when it holds all of t's neighbours, by eq. 4); v_k^t = B[t,t] x_k^t +
    sum_i B[t,i] w_k^{i,t}, with w_k^{i,t} known when i is in the coalition and otherwise
    estimated by i's weighted mean state (or x_k^t when i is never seen).

For RSS-NB, RSS-LB and FS, when the topology certificate's P1 holds the target keeps a
neighbour outside the coalition, and what travels on that link (shares, per-link states) is
missing from the estimate; when every neighbour of t is in the coalition nothing is
missing and the estimate is exact up to rounding. DGD needs less: seeing every state that
enters the target's fusion suffices (one curious agent on a complete graph).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import networkx as nx
import numpy as np

from ...steps import step_size
from mpi_privopt.problems.consensus.polynomial import Polynomial
from .. import ATTACKED

__all__ = ["PublicProtocol", "CoalitionView", "invert_gradients", "fit_polynomial",
           "SUPPORTED"]

SUPPORTED = ATTACKED  # the family's table is the one list


@dataclass(frozen=True)
class PublicProtocol:
    """What every agent, curious or not, knows about the run.

    Attributes
    ----------
    algorithm : str
    mixing : numpy.ndarray
        B, the (n, n) Metropolis matrix of the run's weights variant.
    schedule, step : str, float
        The step sizes alpha_k.
    fused : bool
        Whether the gradient is taken at the fused point (else at x_k^t).
    share_basis : numpy.ndarray or None
        FS only: the exponents of the share polynomials.
    """

    algorithm: str
    mixing: np.ndarray
    schedule: str
    step: float
    fused: bool = True
    share_basis: np.ndarray | None = None

    def alpha(self, k: int) -> float:
        return step_size(self.schedule, self.step, k)


class CoalitionView:
    """The coalition's pooled transcript, indexed for lookups.

    Parameters
    ----------
    messages : dict
        ``(phase, round, sender, receiver) -> payload`` from every member's recorder.
    coalition : iterable of int
    graph : networkx.Graph
    """

    def __init__(self, messages: dict, coalition, graph: nx.Graph) -> None:
        self.coalition = frozenset(int(a) for a in coalition)
        self.graph = graph
        self._by_sender: dict[tuple[str, int, int], dict[int, np.ndarray]] = defaultdict(dict)
        for (phase, k, sender, receiver), payload in messages.items():
            self._by_sender[(phase, k, sender)][receiver] = payload

    def copies(self, phase: str, k: int, sender: int) -> dict[int, np.ndarray]:
        """Messages ``sender`` sent in round ``k`` that the coalition saw, by receiver."""
        return self._by_sender.get((phase, k, sender), {})

    def get(self, phase: str, k: int, sender: int, receiver: int) -> np.ndarray | None:
        return self.copies(phase, k, sender).get(receiver)

    def broadcast_value(self, phase: str, k: int, sender: int) -> np.ndarray | None:
        copies = self.copies(phase, k, sender)
        return next(iter(copies.values())) if copies else None


def _fused(B_row: np.ndarray, target: int, neighbours, own: np.ndarray, value_of) -> np.ndarray:
    v = B_row[target] * own
    for i in neighbours:
        seen = value_of(i)
        v = v + B_row[i] * (own if seen is None else seen)
    return v


def _weighted_state(view: CoalitionView, B: np.ndarray, k: int, sender: int) -> np.ndarray | None:
    # RSS-LB: sum_r B[r,i] w^{i,r} / sum_r B[r,i] over the copies seen
    copies = view.copies("w-link", k, sender)
    if not copies:
        return None
    weights = np.array([B[r, sender] for r in copies])
    return weights @ np.array(list(copies.values())) / weights.sum()


def _known_shares(view: CoalitionView, phase: str, k: int, target: int, neighbours):
    # sum over coalition neighbours a of (share a -> t) - (share t -> a)
    total = None
    for a in neighbours:
        if a in view.coalition:
            s_in, s_out = view.get(phase, k, a, target), view.get(phase, k, target, a)
            if s_in is None or s_out is None:
                continue
            total = (s_in - s_out) if total is None else total + (s_in - s_out)
    return total


def _states_and_points(view, protocol, target, rounds):
    """x_k^t estimates (k = 1..rounds) and the fused-point estimates v_k^t."""
    B = protocol.mixing
    neighbours = sorted(view.graph.neighbors(target))
    states, fused = [], []
    for k in range(1, rounds + 1):
        alg = protocol.algorithm
        if alg in ("dgd", "fs"):
            x_t = view.broadcast_value("x", k, target)
            v = None if x_t is None else _fused(
                B[target], target, neighbours, x_t, lambda i: view.broadcast_value("x", k, i))
        elif alg == "rss-nb":
            w_t = view.broadcast_value("w", k, target)
            known = _known_shares(view, "s", k - 1, target, neighbours) if k > 1 else None
            x_t = None if w_t is None else (
                w_t if known is None else w_t - protocol.alpha(k) * known)
            v = None if w_t is None else _fused(
                B[target], target, neighbours, w_t, lambda i: view.broadcast_value("w", k, i))
        elif alg == "rss-lb":
            x_t = _weighted_state(view, B, k, target)

            def incoming(i, k=k):
                direct = view.get("w-link", k, i, target)
                return direct if direct is not None else _weighted_state(view, B, k, i)
            v = None if x_t is None else _fused(B[target], target, neighbours, x_t, incoming)
        else:
            raise ValueError(f"no inversion for algorithm {alg!r}; supported: {SUPPORTED}")
        states.append(x_t)
        fused.append(v)
    return states, fused


def invert_gradients(view: CoalitionView, protocol: PublicProtocol, target: int,
                     rounds: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The coalition's estimates of the target's gradient points and gradients.

    Returns
    -------
    points, gradients : numpy.ndarray
        Shape (rounds - 1, D): row k-1 is round k's estimate (NaN where the coalition saw
        nothing of the target). The last round has no next state, so it is not estimated.
    """
    states, fused = _states_and_points(view, protocol, target, rounds)
    noise = None
    if protocol.algorithm == "fs":
        neighbours = sorted(view.graph.neighbors(target))
        known = _known_shares(view, "fs-setup", 1, target, neighbours)
        if known is not None:
            noise = Polynomial(protocol.share_basis, known)
    points = np.full((rounds - 1, dim), np.nan)
    gradients = np.full((rounds - 1, dim), np.nan)
    for k in range(1, rounds):
        v, x_now, x_next = fused[k - 1], states[k - 1], states[k]
        if v is None or x_next is None:
            continue
        point = v if protocol.fused else x_now
        g = (v - x_next) / protocol.alpha(k)
        if noise is not None:
            g = g - noise.gradient(point)
        points[k - 1], gradients[k - 1] = point, g
    return points, gradients


def fit_polynomial(points: np.ndarray, gradients: np.ndarray,
                   exponents: np.ndarray) -> tuple[np.ndarray, bool]:
    """Least-squares coefficients c with grad(sum_m c_m x^(E_m)) = gradients at points.

    The coalition's guess of the target's objective within a public class of polynomials
    (up to its constant, which no gradient reveals).

    Returns
    -------
    coefficients : numpy.ndarray
    identifiable : bool
        Whether the points determine the coefficients (the design has full column rank);
        if not, even exact gradients leave the polynomial ambiguous.
    """
    probe = Polynomial(exponents, np.zeros(len(exponents)))
    rows = [probe.basis_gradients(p).T for p in points]  # each (D, M)
    design = np.vstack(rows)
    target = np.concatenate(list(gradients))
    coefficients, _, rank, _ = np.linalg.lstsq(design, target, rcond=None)
    return coefficients, bool(rank == len(exponents))
