"""A look at a run's calibrated noise before it starts (``check``, and ``run`` before MPI).

Two messages, each printed once, by the one process that checks (``check``) or by the
launcher's task 0 (``run``):

* a **warning** when the calibrated noise is absurd (below);
* a **noise outlook** when the horizon the budget is calibrated over (``run.iterations``,
  or ``algorithm.horizon``) differs from the configuration's own, before ``--set``
  (:func:`horizon_outlook`): the noise-to-sensitivity ratio the budget forces over the
  requested horizon beside the one over the configuration's own, and the
  ``privacy.epsilon`` that would keep the latter over the requested horizon (found with
  the method's own calibration, rounded up to 4 significant digits to be pasted).

A budget spread over too many iterations calibrates noise that drowns every release: the
default experiment with ``run.iterations = 50000`` calibrates sigma = 2.1e108 at n = 1. The
divergence guard (:mod:`mpi_privopt.services.divergence`) stops such a run once its iterate blows
up; this warns before launch. A method states its calibrated schedule through
``Algorithm.noise_schedule(cfg)`` (None: nothing to look at), and the schedule is
evaluated at every release n = 1..T (at most :data:`MAX_POINTS` of them, the first
thousand and a geometric grid beyond).

The yardstick is the divergence guard's factor (1e6):

* a *relative* schedule (sigma = multiplier(n) x the release's sensitivity) is absurd when
  the multiplier exceeds 1e6 somewhere: each release then carries a million times more
  noise than one record can change it by, so it says nothing; the released iterate is of
  the data's scale, so its noise is then of the order of 1e6 x (sensitivity / data
  scale) x the data scale;
* an *absolute* schedule (sigma in the data's own units) is absurd when sigma exceeds 1e6
  x the data scale (the largest absolute value of any agent's features and labels).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..services.divergence import DIVERGENCE_FACTOR
from ..errors import UserError

__all__ = ["NOISE_WARNING_FACTOR", "HORIZON_KEYS", "noise_warning", "horizon_outlook",
           "prelaunch_notes", "release_points", "worst_multiplier", "round_up", "epsilon_for",
           "NOTABLE_GROWTH"]

#: how far beyond the yardstick (see the module docstring) the noise may go unwarned
NOISE_WARNING_FACTOR = DIVERGENCE_FACTOR
#: the most releases whose scale is evaluated
MAX_POINTS = 20_000
#: the ``--set`` keys that choose the horizon a budget is calibrated over
HORIZON_KEYS = ("run.iterations", "algorithm.horizon")
#: significant digits of the outlook's numbers
DIGITS = 4
#: how much the largest sigma / sensitivity must grow with the horizon to be shown
NOTABLE_GROWTH = 2.0


def release_points(T: int) -> np.ndarray:
    """The releases n whose noise is looked at: all of 1..T, or the first thousand and a
    geometric grid up to T when T is large (the schedules are monotone beyond)."""
    if T <= MAX_POINTS:
        return np.arange(1, T + 1)
    grid = np.geomspace(1000, T, MAX_POINTS - 1000).astype(np.int64)
    return np.unique(np.concatenate([np.arange(1, 1001), grid, [T]]))


def worst_multiplier(schedule, T: int) -> tuple[int, float]:
    """``(n, scale)``: the release among 1..T (:func:`release_points`) whose noise scale
    for a unit sensitivity is largest (for a relative schedule, sigma / sensitivity)."""
    points = release_points(T)
    with np.errstate(over="ignore"):
        scales = np.array([schedule.scale(int(n), 1.0) for n in points], dtype=float)
    worst = int(np.argmax(np.where(np.isnan(scales), np.inf, scales)))
    return int(points[worst]), float(scales[worst])


def noise_warning(cfg, data_scale: float | None) -> str | None:
    """The warning for ``cfg``'s calibrated noise, or None when it is sane (or absent).

    Parameters
    ----------
    cfg : Config
        The validated configuration.
    data_scale : float or None
        The largest absolute value in any agent's data (features and labels); None when
        the data were not read (``run`` before MPI): an absolute schedule is not judged.
    """
    from ..methods import ALGORITHMS
    schedule = ALGORITHMS[cfg.algorithm.name].noise_schedule(cfg)
    if schedule is None or (data_scale is None and not schedule.relative):
        return None
    T = cfg.run.iterations
    n, scale = worst_multiplier(schedule, T)
    if schedule.relative:
        if scale <= NOISE_WARNING_FACTOR:
            return None
        size = (f"its standard deviation is {scale:.3g} times the release's sensitivity at "
                f"n = {n}, more than {NOISE_WARNING_FACTOR:.0e}")
    else:
        if scale <= NOISE_WARNING_FACTOR * data_scale:
            return None
        size = (f"its scale is {scale:.3g} at n = {n}, more than {NOISE_WARNING_FACTOR:.0e} "
                f"times the data's scale {data_scale:.3g}")
    return (f"the noise {cfg.algorithm.name} calibrates for privacy.epsilon = "
            f"{cfg.privacy.epsilon:g} over {T} iterations drowns its releases: {size}; they "
            "carry no usable signal and the run is likely to diverge (the divergence guard "
            "then stops it). Raise privacy.epsilon or lower run.iterations (or "
            "algorithm.horizon)")


def calibration_horizon(cfg) -> int:
    """The T a method with a noise schedule calibrates its budget over."""
    from ..methods.perturbed import noise_horizon, run_budget
    return noise_horizon(run_budget(cfg), cfg.algorithm.params)


def round_up(value: float, digits: int = DIGITS) -> float:
    """``value`` rounded up to ``digits`` significant digits (a budget to paste that keeps
    the noise at or below the level it was found for)."""
    text = f"{value:.{digits - 1}e}"
    rounded = float(text)
    if rounded < value:  # rounded down: one unit up in the last digit
        mantissa, exponent = text.split("e")
        rounded = float(f"{float(mantissa) + 10.0 ** (1 - digits):.{digits - 1}f}e{exponent}")
    return rounded


def _with_epsilon(cfg, epsilon: float):
    return dataclasses.replace(cfg, privacy=dataclasses.replace(cfg.privacy, epsilon=epsilon))


def _multiplier(cfg, epsilon: float, n: int) -> float | None:
    """sigma / sensitivity of release ``n`` under ``cfg`` with budget ``epsilon`` (the
    method's own calibration); None where it cannot be calibrated."""
    from ..methods import ALGORITHMS
    try:
        with np.errstate(over="ignore"):
            schedule = ALGORITHMS[cfg.algorithm.name].noise_schedule(_with_epsilon(cfg, epsilon))
            value = None if schedule is None else float(schedule.scale(n, 1.0))
    except (UserError, ArithmeticError, ValueError):
        return None
    return value if value is not None and math.isfinite(value) else None


def _bisect(cfg, target: float, n: int) -> float | None:
    """The smallest budget (to 1e-9 relative) whose release ``n`` has sigma / sensitivity
    at most ``target``: the noise falls as the budget grows, so a bracket by factors of 10
    from ``cfg.privacy.epsilon``, then bisection in log scale. None if none up to 1e300."""
    def enough(epsilon: float) -> bool:
        value = _multiplier(cfg, epsilon, n)
        return value is not None and value <= target

    lo = hi = cfg.privacy.epsilon
    if enough(hi):
        while enough(lo):
            hi, lo = lo, lo / 10.0
            if lo < 1e-300:
                return hi
    else:
        while not enough(hi):
            lo, hi = hi, hi * 10.0
            if hi > 1e300:
                return None
    while hi / lo > 1.0 + 1e-9:
        middle = math.sqrt(lo * hi)
        lo, hi = (lo, middle) if enough(middle) else (middle, hi)
    return hi


def epsilon_for(cfg, target: float, n: int | None = None) -> float | None:
    """The smallest budget (to 1e-9 relative, rounded up to :data:`DIGITS` digits) whose
    noise under ``cfg`` stays at or below ``target`` x the sensitivity on every release
    1..T (:func:`release_points`); None if no budget up to 1e300 does.

    The budget is bisected for one release (``n``, else the worst under ``cfg``); if
    another release is then the worst and above ``target``, again for that one (a few
    rounds at most: each only raises the budget).
    """
    from ..methods import ALGORITHMS
    method = ALGORITHMS[cfg.algorithm.name]
    T = calibration_horizon(cfg)
    if n is None:
        n, _ = worst_multiplier(method.noise_schedule(cfg), T)
    budget = cfg
    for _ in range(8):
        found = _bisect(budget, target, n)
        if found is None:
            return None
        found = round_up(found)
        budget = _with_epsilon(cfg, found)
        try:
            with np.errstate(over="ignore"):
                n, worst = worst_multiplier(method.noise_schedule(budget), T)
        except (UserError, ArithmeticError, ValueError):
            return None
        if worst <= target * (1.0 + 1e-9):
            return found
    return None


def _g(value: float) -> str:
    return f"{value:.{DIGITS}g}"


def horizon_outlook(cfg, own) -> list[str]:
    """The noise outlook of ``cfg`` against ``own`` (the same configuration before its
    horizon was changed): two lines, or none when the horizons agree, when there is no
    relative schedule calibrated to a budget, or when the noise grows by less than
    :data:`NOTABLE_GROWTH` (largest sigma / sensitivity over the releases).
    """
    from ..methods import ALGORITHMS
    method = ALGORITHMS[cfg.algorithm.name]
    if not math.isfinite(cfg.privacy.epsilon):
        return []
    # the schedules first: a method without one (the aggregative methods) has no
    # calibration horizon either (no algorithm.horizon key)
    schedule, base = method.noise_schedule(cfg), method.noise_schedule(own)
    if schedule is None or base is None or not (schedule.relative and base.relative):
        return []
    T, T0 = calibration_horizon(cfg), calibration_horizon(own)
    if T == T0:
        return []
    n, ratio = worst_multiplier(schedule, T)
    _, ratio0 = worst_multiplier(base, T0)
    if math.isfinite(ratio) and ratio <= NOTABLE_GROWTH * ratio0:
        return []
    lines = [f"noise outlook: privacy.epsilon = {cfg.privacy.epsilon:g} over T = {T} "
             f"releases forces sigma / sensitivity = {_g(ratio)} (largest, at n = {n}) "
             f"against {_g(ratio0)} over the configuration's own T = {T0}"]
    found = epsilon_for(cfg, ratio0)
    if found is None:
        lines.append(f"noise outlook: no privacy.epsilon up to 1e300 keeps {_g(ratio0)} "
                     f"over T = {T} with {cfg.algorithm.name}")
        return lines
    text = (f"noise outlook: privacy.epsilon = {_g(found)} keeps {_g(ratio0)} over "
            f"T = {T} ({cfg.algorithm.name}'s calibration): --set privacy.epsilon={_g(found)}")
    try:  # the method may refuse that budget for other reasons (the mechanism's range)
        method.validate_config(_with_epsilon(cfg, found))
    except UserError as err:
        text += f", but {cfg.algorithm.name} refuses it: {err.what}"
    lines.append(text)
    return lines


def prelaunch_notes(config: str | None, overrides: list[str], cfg,
                    data_scale: float | None = None) -> list[str]:
    """The lines to print before a run of ``cfg`` (``config`` with ``overrides``): the
    noise warning and the noise outlook, each when it applies (one process prints them)."""
    from ..config import load_config
    notes = []
    warning = noise_warning(cfg, data_scale)
    if warning:  # a warning, not a refusal: the run is possible, only pointless
        notes.append(f"mpi_privopt: warning: {warning}")
    try:
        own = load_config(config, [o for o in overrides
                                   if o.partition("=")[0].strip() not in HORIZON_KEYS])
        outlook = horizon_outlook(cfg, own)
    except UserError:  # the file's own horizon does not load: nothing to compare with
        outlook = []
    notes += [f"mpi_privopt: note: {line}" for line in outlook]
    return notes
