"""Problems: losses, regularisers, per-agent data, local objectives and the reference.

Agent k of K owns ``(X_k, y_k)`` and the local objective

    f_k(w) = (1/M_k) sum_j loss(x_kj, y_kj; w) + (1/K) R(w),
    R(w)   = l1 ||w||_1 + l2 ||w||_2^2,

so the centralised problem is ``min_w F(w) = sum_k f_k(w)`` (Gauthier et al., zCDP-NFL,
eq. 1 & 4; losses carry no factor 1/2).

Subpackages, by kind of problem
-------------------------------
consensus    the finite-sum problems: losses, regularisers, :class:`LocalProblem` f_k,
             :class:`GlobalProblem` F, token records, the polynomial objectives
aggregative  Chen & Wang (2025)'s aggregative problems and their objective contract
datasets     data loaders: synthetic data, user files, the singular records, image sets
models       the personalised task's classifiers (numpy softmax, torch CNN)
reference    :func:`solve_reference`: the high-precision centralised optimum

Shared by every kind
--------------------
registry     every named problem, in one place (:data:`PROBLEMS`, aggregative builders)
config       the ``[problem]`` section: :class:`ProblemConfig`, checks, l1/l2 resolution
metrics      what a problem measures in each ``run.evaluate`` mode (:class:`Evaluator`)
sampling     the sampling oracle's minibatch rows, from each agent's own generator

A subpackage's ``__init__`` imports nothing: import its modules by their full names. No
import, even one inside a function, closes a cycle (tests/unit/test_layout.py).

Nothing here communicates (no mpi4py): the collective setup of a run (loading each
agent's data, the reference in simulation) is :mod:`mpi_privopt.problem_setup`.
"""
from mpi_privopt.problems.config import (
    AUTO_L1_FACTOR,
    ProblemConfig,
    auto_l1,
    problem_loss,
    problem_spec,
    resolve_l1,
    resolve_l2,
    validate_problem_config,
)
from mpi_privopt.problems.datasets.agent_data import load_agent_data
from mpi_privopt.problems.consensus.global_problem import GlobalProblem
from mpi_privopt.problems.consensus.local import LocalProblem, make_local_problem
from mpi_privopt.problems.consensus.losses import LOSSES, Loss, make_loss
from mpi_privopt.problems.reference.solver import solve_reference
from mpi_privopt.problems.reference.solution import ReferenceSolution
from mpi_privopt.problems.registry import AUTO, PROBLEMS, ProblemSpec
from mpi_privopt.problems.metrics import EVALUATE_MODES, Evaluator
from mpi_privopt.problems.sampling import MinibatchSampler, sampling_rng
from mpi_privopt.problems.datasets.synthetic import true_parameter

__all__ = [
    "AUTO",
    "AUTO_L1_FACTOR",
    "EVALUATE_MODES",
    "Evaluator",
    "MinibatchSampler",
    "GlobalProblem",
    "LOSSES",
    "LocalProblem",
    "Loss",
    "PROBLEMS",
    "ProblemConfig",
    "ProblemSpec",
    "ReferenceSolution",
    "auto_l1",
    "load_agent_data",
    "make_local_problem",
    "make_loss",
    "problem_loss",
    "problem_spec",
    "resolve_l1",
    "resolve_l2",
    "sampling_rng",
    "solve_reference",
    "true_parameter",
    "validate_problem_config",
]
