"""One agent's data set: synthetic, a shared user file, or the agent's own user file.

Each rank calls :func:`load_agent_data` for its own agent and reads files itself; no
agent needs another agent's data. With a single shared file every rank reads the whole
file and runs the same checks, so a bad file fails identically on every rank.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from mpi_privopt.errors import ConfigError, DataError
from mpi_privopt.problems.config import ProblemConfig, problem_loss
from mpi_privopt.problems.consensus.polynomial_presets import preset_dimension
from mpi_privopt.problems.registry import POLYNOMIAL, PROBLEMS
from mpi_privopt.problems.datasets.files import (
    Table,
    check_finite,
    peek_feature_count,
    read_table,
    short_list,
)
from mpi_privopt.problems.datasets.synthetic import synthetic_agent_data

__all__ = ["load_agent_data", "AGENT_PLACEHOLDER", "agent_path", "classification_labels"]

#: Placeholder in ``[problem] data`` that selects one file per agent.
AGENT_PLACEHOLDER = "{agent}"


def agent_path(pattern: str, agent: int) -> str:
    """The file of ``agent`` for a per-agent ``pattern`` (``{agent}`` -> the agent id)."""
    # str.replace rather than str.format: other braces in a path must stay literal
    return pattern.replace(AGENT_PLACEHOLDER, str(agent))


def load_agent_data(
    cfg: ProblemConfig, agent: int, n_agents: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return agent ``agent``'s ``(X_k, y_k)`` as float64 arrays (M_k x P, M_k).

    Parameters
    ----------
    cfg : ProblemConfig
        ``cfg.data == ""`` selects synthetic data (``samples``, ``features``, ``noise``;
        or the problem's own generator, e.g. for ``name = "singular"`` agent k's block of
        the paper's N = ``samples`` records);
        otherwise a path to a single ``.npz``/``.csv`` with an ``agent`` column, or a
        pattern containing ``{agent}`` naming one file per agent.
    agent : int
        This agent's id k in ``0 .. n_agents - 1``.
    n_agents : int
        Number of agents K (MPI ranks).
    seed : int
        Non-negative seed; synthetic data depend only on ``(seed, agent)``.

    Returns
    -------
    X : ndarray, shape (M_k, P)
    y : ndarray, shape (M_k,)
        For classification losses (hinge, logistic) labels are in {-1, +1}; files
        labelled {0, 1} are accepted and 0 is mapped to -1. The polynomial problem has no
        samples: X is (0, D) and y is empty.

    Raises
    ------
    DataError
        Missing or unreadable file, NaN/inf, agent column not exactly ``0 .. K-1``, an
        agent without rows, inconsistent feature counts, bad classification labels.
    """
    _check_ids(agent, n_agents, seed)
    if cfg.name == POLYNOMIAL:
        return np.empty((0, preset_dimension(cfg.preset, cfg.features))), np.empty(0)
    task = problem_loss(cfg).task
    own_generator = PROBLEMS[cfg.name].synthetic if cfg.name in PROBLEMS else None
    if own_generator is not None and not cfg.data:
        return own_generator(cfg, agent, n_agents)
    if not cfg.data:
        return synthetic_agent_data(seed, agent, cfg.samples, cfg.features, cfg.noise, task)
    if AGENT_PLACEHOLDER in cfg.data:
        X, y, path = _own_file(cfg.data, agent)
    else:
        X, y, path = _shared_file(cfg.data, agent, n_agents, task)
    if task == "classification":
        y = classification_labels(y, path)
    return np.ascontiguousarray(X), np.ascontiguousarray(y)


def _check_ids(agent: int, n_agents: int, seed: int) -> None:
    if not isinstance(n_agents, Integral) or n_agents < 1:
        raise ConfigError(f"n_agents = {n_agents!r} must be an integer >= 1",
                          "run with at least one MPI rank")
    if not isinstance(agent, Integral) or not 0 <= agent < n_agents:
        raise ConfigError(f"agent = {agent!r} must be an integer in 0..{n_agents - 1}",
                          "pass the MPI rank of this agent")
    if not isinstance(seed, Integral) or seed < 0:
        raise ConfigError(f"seed = {seed!r} must be a non-negative integer",
                          "set the run seed to an integer >= 0")


def _check_contents(table: Table) -> None:
    # one check over X and y together: a single message with the total count
    check_finite(np.column_stack([table.X, table.y]), "the features X or labels y", table.path)


def _shared_file(path: str, agent: int, n_agents: int, task: str):
    table = read_table(path, "data of all agents")
    if table.agent is None:
        raise DataError(
            f"{path}: no 'agent' column/array, so rows cannot be assigned to agents",
            "add an integer 'agent' column (0..K-1), or give one file per agent with "
            "'{agent}' in [problem] data, e.g. data/agent_{agent}.csv",
        )
    _check_contents(table)
    check_finite(table.agent, "the agent column", path)
    ids = table.agent
    if np.any(ids != np.round(ids)):
        bad = np.flatnonzero(ids != np.round(ids))
        raise DataError(
            f"{path}: the agent column holds non-integer values, first at data row {bad[0] + 1}",
            f"use integer agent ids 0..{n_agents - 1}",
        )
    present = set(np.unique(ids).astype(np.int64).tolist())
    expected = set(range(n_agents))
    if present != expected:
        missing = sorted(expected - present)
        extra = sorted(present - expected)
        parts = []
        if missing:
            parts.append(f"agents {short_list(missing)} have no rows")
        if extra:
            parts.append(f"values {short_list(extra)} are out of range 0..{n_agents - 1}")
        raise DataError(
            f"{path}: the agent column must hold exactly the agents 0..{n_agents - 1} "
            f"(the job has {n_agents} ranks, one per agent): " + "; ".join(parts),
            "relabel the agent column to 0..K-1 with rows for every agent, or launch as "
            "many ranks as the file has agents (mpiexec -n K)",
        )
    if task == "classification":
        # check the whole file so every rank agrees on the label encoding
        classification_labels(table.y, path)
    rows = ids == agent
    return table.X[rows], table.y[rows], path


def _own_file(pattern: str, agent: int):
    path = agent_path(pattern, agent)
    table = read_table(path, f"data of agent {agent}, from pattern {pattern!r}")
    _check_contents(table)
    if table.X.shape[0] == 0:
        raise DataError(
            f"{path}: agent {agent} has zero rows",
            "give every agent at least one sample, or run with fewer ranks",
        )
    if table.agent is not None and np.any(table.agent != agent):
        raise DataError(
            f"{path}: the file of agent {agent} has an agent column with other values "
            f"{short_list(np.unique(table.agent[table.agent != agent]))}",
            "drop the agent column from per-agent files or make it equal to the agent id",
        )
    if agent != 0:
        # compare with agent 0's header only: one file per agent must agree on P
        ref_path = agent_path(pattern, 0)
        p0 = peek_feature_count(ref_path)
        if p0 is not None and p0 != table.X.shape[1]:
            raise DataError(
                f"{path}: agent {agent} has {table.X.shape[1]} features but {ref_path} "
                f"(agent 0) has {p0}",
                "give every agent's file the same feature columns in the same order",
            )
    return table.X, table.y, path


def classification_labels(y: np.ndarray, path: str) -> np.ndarray:
    """Labels in {-1, +1}; {0, 1} labels are mapped 0 -> -1. DataError otherwise."""
    values = np.unique(y)
    if np.all(np.isin(values, (-1.0, 1.0))):
        return np.asarray(y, dtype=np.float64)
    if np.all(np.isin(values, (0.0, 1.0))):
        return np.where(y == 0.0, -1.0, 1.0)
    bad = values[~np.isin(values, (-1.0, 0.0, 1.0))]
    detail = f"values {short_list(bad.tolist())}" if bad.size else "a mix of -1, 0 and 1"
    raise DataError(
        f"{path}: classification labels must be in {{-1, +1}} (or {{0, 1}}), found {detail}",
        "encode the two classes as -1/+1 (or 0/1), or use a regression problem",
    )
