"""Building a run's problems on every rank: each agent's f_k, and in simulation a reference.

An agent loads only its own data. What else travels depends on ``run.evaluate``:

``reference`` (simulation)
    Rank 0 of the evaluation communicator gathers every agent's data (or polynomial)
    once, resolves ``l1 = "auto"``, solves for the centralised optimum w_c and broadcasts
    the resolved l1 and the reference to every agent, whose evaluator measures against it.
``reference`` for an aggregative problem
    Every agent's ``reference_share()`` (e.g. the quadratic instance's A_i, p_i, b_i) is
    gathered on every rank, which computes the closed-form reference itself
    (``use_reference``); a problem without one (share None) gathers nothing.
``local`` / ``none`` (deployment)
    Nothing is gathered or broadcast; ``l1 = "auto"`` is refused by the configuration
    (:func:`~mpi_privopt.problems.config.local_l1`).

A token method (``records=True``, e.g. ``token-admm``) minimises the mean over every record
(:mod:`~mpi_privopt.problems.consensus.records`): each agent's record count travels once at set-up
(public metadata: record ids are global indices), and the reference of a simulation is the
optimum of that mean.

Only here and in the monitor do problems meet MPI: nothing under ``problems/`` imports it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from .mpiutil import agree, computed_once
from .problems.aggregative.objective import reference_share, use_reference
from .problems import GlobalProblem, ReferenceSolution, load_agent_data, make_local_problem
from .problems.config import ProblemConfig, local_l1, resolve_l1
from .problems.metrics import REFERENCE, Evaluator
from .problems.consensus.polynomial_problem import polynomial_objective, polynomial_reference
from .problems.consensus.records import Records, pooled_problem
from .problems.reference.solver import solve_reference
from .problems.registry import AGGREGATIVE_PROBLEMS, POLYNOMIAL, is_aggregative
from .problems.sampling import sampling_rng


@dataclass
class ProblemSetup:
    """What :func:`build_problems` gives each rank.

    Attributes
    ----------
    local : LocalProblem or PolynomialObjective
        This agent's objective f_k (with its sampling oracle).
    evaluator : Evaluator or None
        The problem's metrics in this evaluation mode (None in ``none`` mode).
    reference : ReferenceSolution or None
        The centralised optimum, on every rank, in ``reference`` mode only.
    l1 : float or None
        The l1 coefficient used (None for the polynomial problem).
    """

    local: object
    evaluator: Evaluator | None
    reference: ReferenceSolution | None = None
    l1: float | None = None


def build_problems(cfg: ProblemConfig, comm: MPI.Intracomm, seed: int,
                   evaluate: str = REFERENCE, records: bool = False) -> ProblemSetup:
    """Build the run's problems collectively on ``comm`` (the evaluation communicator).

    A bad data file on any rank stops every rank with that rank's message. ``records``:
    the agents' rows are records of one mean objective (a token method); ``local`` is then
    a :class:`~mpi_privopt.problems.consensus.records.Records`.
    """
    rank = comm.Get_rank()
    if is_aggregative(cfg.name):
        return _aggregative_setup(cfg, comm, seed, evaluate)
    if cfg.name == POLYNOMIAL:
        local = agree(comm, lambda: polynomial_objective(cfg, seed, rank))
        reference = None
        if evaluate == REFERENCE:
            shares = comm.gather((local.polynomial.coefficients, local.polynomial.constant),
                                 root=0)
            reference = computed_once(comm, lambda: polynomial_reference(local, shares)[1])
        return ProblemSetup(local, local.evaluator(evaluate, reference), reference)
    n_agents = comm.Get_size()
    X, y = agree(comm, lambda: load_agent_data(cfg, rank, n_agents, seed))
    l1 = local_l1(cfg, evaluate)  # the same on every rank: no agreement needed
    reference = None
    if evaluate == REFERENCE:
        l1, reference = _gathered_reference(cfg, comm, X, y, records)
    local = make_local_problem(cfg, X, y, n_agents, l1, rng=sampling_rng(seed, rank))
    if records:
        local = Records(local, comm.allgather(local.n_samples), rank)
    return ProblemSetup(local, local.evaluator(evaluate, reference), reference, l1)


def _aggregative_setup(cfg: ProblemConfig, comm: MPI.Intracomm, seed: int,
                       evaluate: str) -> ProblemSetup:
    """An aggregative problem: each agent builds its own objective (its own data and
    sampling stream); in simulation, every agent's reference share reaches every agent."""
    rank, n_agents = comm.Get_rank(), comm.Get_size()
    build = AGGREGATIVE_PROBLEMS[cfg.name]
    local = agree(comm, lambda: build(cfg.options, rank, n_agents, seed))
    if evaluate == REFERENCE:
        shares = comm.allgather(reference_share(local))
        if all(share is not None for share in shares):
            agree(comm, lambda: use_reference(local, shares))
    return ProblemSetup(local, agree(comm, lambda: local.evaluator(evaluate)),
                        getattr(local, "reference", None))


def _gathered_reference(cfg: ProblemConfig, comm: MPI.Intracomm, X: np.ndarray,
                        y: np.ndarray, records: bool = False) -> tuple[float, ReferenceSolution]:
    """Simulation only: every shard to rank 0, l1 resolved there, w_c solved, both broadcast.

    ``records``: the optimum of the mean over every record (:func:`pooled_problem`).
    """
    n_agents = comm.Get_size()
    shards = comm.gather((X, y), root=0)

    def solve() -> tuple[float, ReferenceSolution] | None:
        if shards is None:
            return None
        l1 = resolve_l1(cfg, np.vstack([s[0] for s in shards]),
                        np.concatenate([s[1] for s in shards]))
        if records:
            pooled = pooled_problem(make_local_problem(cfg, *shards[0], 1, l1), shards)
            return l1, solve_reference(GlobalProblem([pooled]))
        global_problem = GlobalProblem(
            [make_local_problem(cfg, Xk, yk, n_agents, l1) for Xk, yk in shards])
        return l1, solve_reference(global_problem)

    return computed_once(comm, solve)  # rank 0 solves; the others wait asleep
