"""Building the problems of a run: each agent's f_k, and the monitor's F and optimum.

An agent loads only its own data. The monitor (rank 0, on the evaluation communicator)
collects every shard once to build the global objective F, resolve data-dependent
hyperparameters such as ``l1 = "auto"``, and solve for the centralised optimum w_c. Each
agent receives only the resolved hyperparameter values, never another agent's data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from ..collective import agree
from .config import ProblemConfig, resolve_l1
from .data import load_agent_data
from .global_problem import GlobalProblem
from .local import LocalProblem, make_local_problem
from .polynomial_presets import POLYNOMIAL
from .polynomial_problem import build_polynomial_problems
from .reference import ReferenceSolution, solve_reference


@dataclass
class ProblemSetup:
    """What :func:`build_problems` gives each rank.

    Attributes
    ----------
    local : LocalProblem
        This agent's objective f_k.
    global_problem : GlobalProblem or None
        F = sum_k f_k, on rank 0 only (for evaluation).
    reference : ReferenceSolution or None
        The centralised optimum w_c and F(w_c), on rank 0 only.
    """

    local: LocalProblem
    global_problem: GlobalProblem | None = None
    reference: ReferenceSolution | None = None


def build_problems(cfg: ProblemConfig, comm: MPI.Intracomm, seed: int) -> ProblemSetup:
    """Build the run's problems collectively on ``comm`` (the evaluation communicator).

    A bad data file on any rank stops every rank with that rank's message.
    ``problem.name = "polynomial"`` has no data: each agent builds its preset objective.
    """
    if cfg.name == POLYNOMIAL:
        return ProblemSetup(*agree(comm, lambda: build_polynomial_problems(cfg, comm, seed)))
    rank, n_agents = comm.Get_rank(), comm.Get_size()
    X, y = agree(comm, lambda: load_agent_data(cfg, rank, n_agents, seed))
    shards = comm.gather((X, y), root=0)
    global_problem = reference = l1 = None
    if rank == 0:
        X_all = np.vstack([s[0] for s in shards])
        y_all = np.concatenate([s[1] for s in shards])
        l1 = resolve_l1(cfg, X_all, y_all)
        global_problem = GlobalProblem(
            [make_local_problem(cfg, Xk, yk, n_agents, l1) for Xk, yk in shards])
        reference = solve_reference(global_problem)
    l1 = comm.bcast(l1, root=0)
    local = make_local_problem(cfg, X, y, n_agents, l1)
    return ProblemSetup(local=local, global_problem=global_problem, reference=reference)
