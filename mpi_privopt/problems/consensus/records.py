r"""Records for a token method: one private function per record, the objective their mean.

Chan, Xie & Zhao's noisy gradient ADMM (the ``token-admm`` method) uses one record per
iteration, through one gradient query of that record's function. The program is

    min_x  F(x) = (1/N) sum_i f_i(x) + g(x),     f_i(x) = loss(<a_i, x>, b_i),
                                                 g(y)   = c1 ||y||_1 + c2 ||y||_2^2,

with the split x - y = 0 (A = I, B = -I, c = 0; docs/methods/chan2023.md, "Constraint form": A
= [I_m | D] with m = n and an
empty D, the form the theory needs, so no elimination is done). The loss is the problem's
(squared ``(<a,x> - b)^2`` as in the paper, or logistic), c1 and c2 are the problem's l1
and l2, counted **once** (not shared 1/K between agents as for the consensus problems).

The N records are split among the K agents in contiguous index blocks: agent k holds the
global records ``offset_k .. offset_k + M_k - 1``. The counts ``M_k`` are public (every
agent knows them; for the paper's instance they follow from N and K).

Instances
---------
* ``singular``: the paper's data (:mod:`mpi_privopt.methods.chan2023.problems`),
  c1 = 0.01, c2 = 0.1 by default.
* any squared-loss or logistic problem on the data files users already give
  (``[problem] data``): each agent's rows are its records, in file order.

Nothing here communicates: :mod:`mpi_privopt.problem_setup` exchanges the counts and, in
simulation, solves for the reference optimum of F.
"""
from __future__ import annotations

import math

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.consensus.local import LocalProblem
from mpi_privopt.problems.metrics import (LOCAL, REFERENCE, AgentMetrics, ConsensusToReference,
                                          Evaluator, Metric)
from mpi_privopt.problems.consensus.regularizers import penalty_value

__all__ = ["RECORD_LOSSES", "block_offsets", "Records", "pooled_problem"]

#: losses whose per-record gradient the token method uses (smooth, convex)
RECORD_LOSSES = ("squared", "logistic")


def block_offsets(counts) -> np.ndarray:
    """``offsets[k]``: the global index of agent k's first record (length K + 1)."""
    return np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))])


class Records:
    """Agent k's records and the per-record gradient the token method queries.

    Parameters
    ----------
    local : LocalProblem
        The agent's rows (its records, in index order), loss and the problem's l1, l2
        (c1, c2 of g, counted once).
    counts : sequence of int
        ``M_j`` of every agent j (public), so that record ids are global indices.
    agent : int
        This agent's id k.
    """

    def __init__(self, local: LocalProblem, counts, agent: int) -> None:
        if local.loss.name not in RECORD_LOSSES:
            raise ConfigError(
                f"the token method needs a smooth per-record loss; the problem's loss is "
                f"{local.loss.name!r}",
                f"use a problem with the {' or '.join(RECORD_LOSSES)} loss ([problem] name = "
                f"\"ridge\", \"elastic-net\", \"singular\", \"logistic\", or [problem] loss)")
        self.local = local
        self.X, self.y, self.loss = local.X, local.y, local.loss
        self.agent = int(agent)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.offsets = block_offsets(self.counts)
        self.n_records = int(self.offsets[-1])
        self.offset = int(self.offsets[self.agent])
        self.n_samples = local.n_samples
        self.n_features = local.n_features
        #: c1, c2 of g (the problem's l1, l2)
        self.c1, self.c2 = local.l1, local.l2

    # -- the oracle -------------------------------------------------------------------------

    def record_id(self, local_index: int) -> int:
        """The global index of this agent's record ``local_index``."""
        return self.offset + int(local_index)

    def owner(self, record: int) -> int:
        """The agent holding global record ``record`` (public: the counts are)."""
        return int(np.searchsorted(self.offsets, record, side="right") - 1)

    def gradient(self, local_index: int, x: np.ndarray, clip: float = math.inf) -> np.ndarray:
        """grad f_i(x) of this agent's record ``local_index``, scaled to norm <= ``clip``.

        ``loss'(<a_i, x>, b_i) a_i`` (squared: ``2 (<a_i, x> - b_i) a_i``); ``clip = inf``:
        unclipped.
        """
        a = self.X[local_index]
        d = float(self.loss.derivative(np.array([a @ x]), self.y[local_index:local_index + 1])[0])
        gradient = d * a
        if math.isfinite(clip):
            norm = abs(d) * float(self.local.row_norms[local_index])
            if norm > clip:
                gradient *= clip / norm
        return gradient

    # -- the objective ----------------------------------------------------------------------

    def value(self, x: np.ndarray) -> float:
        """This agent's share of F: ``(M_k / N) mean_j f_j(x) + g(x) / K``.

        Summed over the agents at one x it is F(x).
        """
        K = self.counts.size
        return (self.n_samples / self.n_records) * self.local.data_value(x) \
            + penalty_value(x, self.c1, self.c2) / K

    def evaluator(self, mode: str, reference=None) -> Evaluator | None:
        """The metrics of the released token: F(x~) and, in simulation, its gap to F*.

        Each agent evaluates the token it last saw (after the final release every agent
        holds the same one). ``reference``: error ``sum_k ||x_k - x*||^2 / ||x*||^2``,
        ``objective_gap`` ``sum_k share_k(x_k) - F(x*)`` (F(x~) - F* once every agent holds
        x~) and the consensus gap. ``local``: ``objective`` F. ``none``: nothing.
        """
        if mode == REFERENCE:
            return ConsensusToReference(self.value, reference.w, reference.value)
        if mode != LOCAL:
            return None
        return AgentMetrics([Metric("objective", "sum")], lambda w, _: (self.value(w),))


def pooled_problem(local: LocalProblem, shards) -> LocalProblem:
    """F as one problem over every record (for the reference optimum in simulation only).

    ``(1/N) sum_i loss_i(x) + l1 ||x||_1 + l2 ||x||^2`` is a LocalProblem of all rows with
    K = 1 (R counted once).
    """
    return LocalProblem(np.vstack([s[0] for s in shards]),
                        np.concatenate([s[1] for s in shards]), local.loss,
                        l1=local.l1, l2=local.l2, n_agents=1)
