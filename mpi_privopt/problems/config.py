"""The ``[problem]`` configuration section: its dataclass, checks and derived values."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.consensus.losses import LOSSES, Loss, make_loss
from mpi_privopt.problems.consensus.polynomial_presets import PRESETS
from mpi_privopt.problems.registry import (AGGREGATIVE_PROBLEMS, AUTO, POLYNOMIAL, PROBLEMS,
                                          ProblemSpec, is_aggregative)

__all__ = [
    "ProblemConfig",
    "validate_problem_config",
    "problem_spec",
    "problem_loss",
    "resolve_l1",
    "resolve_l2",
    "auto_l1",
    "AUTO_L1_FACTOR",
    "local_l1",
]

#: ``l1 = "auto"`` means ``AUTO_L1_FACTOR * ||X^T y||_inf`` (Boyd's lambda_max convention).
AUTO_L1_FACTOR = 1e-3


@dataclass(frozen=True)
class ProblemConfig:
    """What the ``[problem]`` section of a configuration file holds.

    Attributes
    ----------
    name : str
        A key of :data:`PROBLEMS`.
    samples : int
        Samples per agent M_k (synthetic data only).
    features : int
        Number of features P (synthetic data only).
    noise : float
        Standard deviation of the additive Gaussian observation noise (synthetic only).
    data : str
        Path to user data; "" means synthetic. May contain ``{agent}`` for one file
        per agent.
    l1, l2 : float, "auto" or None
        Regulariser coefficients; None takes the problem's default.
    clip : float
        Per-sample gradient clipping threshold c1; 0 (or None) is off.
    huber_delta : float
        Parameter of the huber loss.
    loss : str
        Override of the problem's loss (a key of :data:`LOSSES`); "" keeps the default.
        The task (regression / classification) follows the loss actually used.
    radius : float
        For ``name = "singular"`` only: the norm r of every record's features (the
        paper's r = 0.5, 0.3, 0.15, 0.1).
    preset : str
        For ``name = "polynomial"`` only: which polynomial objectives the agents hold
        (:data:`~mpi_privopt.problems.consensus.polynomial_presets.PRESETS`; "" is ``gade2017``).
    options : dict
        For aggregative problems only (a key of
        :data:`~mpi_privopt.problems.registry.AGGREGATIVE_PROBLEMS`): the problem's own
        options, the ``[problem.options]`` table, handed to its builder, which checks them
        (``--set problem.options.KEY=VALUE`` sets one).
    module : str
        Your own aggregative problem, ``"package.module:factory"`` (then ``name`` is its
        own name): :mod:`mpi_privopt.user_modules`; "" for a packaged problem.
    """

    name: str = "ridge"
    samples: int = 50
    features: int = 8
    noise: float = 0.1
    data: str = ""
    l1: float | str | None = None
    l2: float | None = None
    clip: float = 0.0
    huber_delta: float = 1.0
    loss: str = ""
    preset: str = ""
    radius: float = 0.5
    options: dict = field(default_factory=dict)
    module: str = ""


def _is_real(x: object) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool) and math.isfinite(float(x))


def _is_int(x: object) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def validate_problem_config(cfg: ProblemConfig) -> None:
    """Check every field of ``cfg``; raise :class:`ConfigError` naming the bad key.

    Raises
    ------
    ConfigError
        On an unknown problem or loss name, or a value out of range.
    """
    if is_aggregative(cfg.name):
        _validate_aggregative(cfg)
        return
    if cfg.options:
        raise ConfigError(
            f"[problem.options] is set, but problem {cfg.name!r} takes no options",
            "remove [problem.options]; it is for the aggregative problems "
            f"({', '.join(AGGREGATIVE_PROBLEMS)})")
    if cfg.name == POLYNOMIAL:
        _validate_polynomial(cfg)
        return
    if cfg.name not in PROBLEMS:
        raise ConfigError(
            f"unknown problem [problem] name = {cfg.name!r}",
            f"choose one of {', '.join(PROBLEMS)}, {POLYNOMIAL}, or an aggregative problem "
            f"({', '.join(AGGREGATIVE_PROBLEMS)}), or your own with problem.module",
        )
    if cfg.preset:
        raise ConfigError(
            f"[problem] preset = {cfg.preset!r} is set, but problem {cfg.name!r} has no presets",
            f"remove [problem] preset, or set [problem] name = \"{POLYNOMIAL}\"",
        )
    for key in ("samples", "features"):
        v = getattr(cfg, key)
        if not _is_int(v) or v < 1:
            raise ConfigError(
                f"[problem] {key} = {v!r} must be an integer >= 1",
                f"set [problem] {key} to a positive integer",
            )
    if not _is_real(cfg.noise) or cfg.noise < 0:
        raise ConfigError(
            f"[problem] noise = {cfg.noise!r} must be a finite number >= 0",
            "set [problem] noise to the standard deviation of the label noise, e.g. 0.1",
        )
    if not isinstance(cfg.data, str):
        raise ConfigError(
            f"[problem] data = {cfg.data!r} must be a string",
            'give a path to a .npz or .csv file, or "" for synthetic data',
        )
    if cfg.clip is not None and (not _is_real(cfg.clip) or cfg.clip < 0):
        raise ConfigError(
            f"[problem] clip = {cfg.clip!r} must be a finite number >= 0",
            "set [problem] clip to the per-sample gradient bound c1, or 0 to turn clipping off",
        )
    if cfg.l2 is not None and (not _is_real(cfg.l2) or cfg.l2 < 0):
        raise ConfigError(
            f"[problem] l2 = {cfg.l2!r} must be a finite number >= 0",
            "set [problem] l2 to a non-negative number or remove it to use the problem default",
        )
    if cfg.l1 is not None and cfg.l1 != AUTO and (not _is_real(cfg.l1) or cfg.l1 < 0):
        raise ConfigError(
            f"[problem] l1 = {cfg.l1!r} must be a finite number >= 0 or \"auto\"",
            'set [problem] l1 to a non-negative number, "auto", or remove it for the default',
        )
    if not _is_real(cfg.huber_delta) or cfg.huber_delta <= 0:
        raise ConfigError(
            f"[problem] huber_delta = {cfg.huber_delta!r} must be a finite number > 0",
            "set [problem] huber_delta to e.g. 1.0",
        )
    if not _is_real(cfg.radius) or cfg.radius <= 0:
        raise ConfigError(
            f"[problem] radius = {cfg.radius!r} must be a finite number > 0",
            "set [problem] radius to the feature norm r of the singular records, e.g. 0.5",
        )
    if not isinstance(cfg.loss, str) or (cfg.loss and cfg.loss not in LOSSES):
        raise ConfigError(
            f"unknown loss [problem] loss = {cfg.loss!r}",
            f"choose one of {', '.join(LOSSES)}, or leave it empty for the problem's loss",
        )


def _validate_polynomial(cfg: ProblemConfig) -> None:
    # a polynomial objective has no data, loss or regulariser: refuse keys that would be
    # silently ignored
    if cfg.preset and cfg.preset not in PRESETS:
        raise ConfigError(f"unknown [problem] preset = {cfg.preset!r}",
                          f"choose one of {', '.join(PRESETS)}")
    if not _is_int(cfg.features) or cfg.features < 1:
        raise ConfigError(f"[problem] features = {cfg.features!r} must be an integer >= 1",
                          "set [problem] features to the dimension of the random preset")
    for key in ("data", "loss", "l1", "l2"):
        if getattr(cfg, key) not in ("", None):
            raise ConfigError(
                f"[problem] {key} = {getattr(cfg, key)!r} does not apply to the polynomial problem",
                f"remove [problem] {key}: the objectives are the preset's polynomials")


def _validate_aggregative(cfg: ProblemConfig) -> None:
    # the builder checks its own options; the keys of data problems would be ignored
    if not isinstance(cfg.options, dict):
        raise ConfigError(f"[problem] options = {cfg.options!r} must be a table",
                          "write the problem's options under [problem.options]")
    defaults = ProblemConfig()
    for key in ("data", "loss", "l1", "l2", "clip", "preset"):
        if getattr(cfg, key) != getattr(defaults, key):
            raise ConfigError(
                f"[problem] {key} = {getattr(cfg, key)!r} does not apply to the aggregative "
                f"problem {cfg.name!r}",
                f"remove [problem] {key}; the problem's own settings go in [problem.options]")


def problem_spec(cfg: ProblemConfig) -> ProblemSpec:
    """The registry entry for ``cfg.name`` (ConfigError listing the names if unknown)."""
    if cfg.name not in PROBLEMS:
        raise ConfigError(
            f"unknown problem [problem] name = {cfg.name!r}",
            f"choose one of {', '.join(PROBLEMS)}",
        )
    return PROBLEMS[cfg.name]


def problem_loss(cfg: ProblemConfig) -> Loss:
    """The loss actually used: ``cfg.loss`` if set, else the problem's, with huber_delta."""
    name = cfg.loss or problem_spec(cfg).loss.name
    return make_loss(name, cfg.huber_delta)


def auto_l1(xty: np.ndarray) -> float:
    """``AUTO_L1_FACTOR * ||X^T y||_inf`` from the global correlation ``X^T y``.

    ``X^T y = sum_k X_k^T y_k``, so an engine can get it by summing the agents' local
    products (e.g. an allreduce) instead of gathering the data.
    """
    xty = np.asarray(xty, dtype=float)
    return AUTO_L1_FACTOR * float(np.max(np.abs(xty))) if xty.size else 0.0


def configured_l1(cfg: ProblemConfig) -> float | str:
    """``cfg.l1`` if given, else the problem default; may be "auto" (see :func:`resolve_l1`)."""
    return problem_spec(cfg).l1 if cfg.l1 is None else cfg.l1


def resolve_l1(cfg: ProblemConfig, X_all: np.ndarray, y_all: np.ndarray) -> float:
    """The numeric l1: ``cfg.l1`` if given, else the problem default; "auto" is computed
    as ``0.001 ||X^T y||_inf`` on the globally stacked data ``X_all``, ``y_all``."""
    l1 = configured_l1(cfg)
    if l1 == AUTO:
        X_all = np.asarray(X_all, dtype=float)
        y_all = np.asarray(y_all, dtype=float)
        return auto_l1(X_all.T @ y_all)
    return float(l1)


def local_l1(cfg: ProblemConfig, evaluate: str) -> float | None:
    """The numeric l1 an agent can know without anyone's data but its own.

    ``l1 = "auto"`` needs ``X^T y`` of every agent's data together, which only
    ``run.evaluate = "reference"`` (a simulation) may gather; otherwise it is refused.
    Returns None for the polynomial problem (no l1) and for "auto" in reference mode
    (resolved from the gathered data, :func:`resolve_l1`).

    Raises
    ------
    ConfigError
        ``l1 = "auto"`` with ``evaluate`` other than "reference".
    """
    if cfg.name == POLYNOMIAL or is_aggregative(cfg.name):
        return None
    l1 = configured_l1(cfg)
    if l1 != AUTO:
        return float(l1)
    if evaluate == "reference":
        return None
    default = f" (the default of {cfg.name})" if cfg.l1 is None else ""
    raise ConfigError(
        f'[problem] l1 = "auto"{default} needs every agent\'s data together, which '
        f'run.evaluate = "{evaluate}" never gathers',
        "set [problem] l1 to a number (a run with run.evaluate = \"reference\" on the same "
        "data writes the value it resolved to summary.json as \"l1\"), or set "
        "run.evaluate = \"reference\" for a simulation")


def resolve_l2(cfg: ProblemConfig) -> float:
    """The numeric l2: ``cfg.l2`` if given, else the problem default."""
    return float(problem_spec(cfg).l2 if cfg.l2 is None else cfg.l2)
