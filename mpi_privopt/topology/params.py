"""The topology kinds' names, and numbers read from the ``[topology]`` section and the agent
count, checked with clear messages."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from mpi_privopt.errors import TopologyError

#: the topology kinds (``topology.kind``), named without importing their builders (and
#: networkx): :data:`.builders.TOPOLOGIES` has one builder for each, in this order
KINDS: tuple[str, ...] = ("ring", "path", "star", "complete", "grid", "erdos-renyi",
                          "geometric", "small-world", "regular", "file")


def number_param(params: Mapping[str, Any], key: str, default: float) -> float:
    """``params[key]`` (or ``default``) as a finite float; TopologyError otherwise."""
    value = params.get(key, default)
    # bool is an int subclass; "degree = true" in a config is a mistake, not 1
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TopologyError(
            f"[topology] {key} must be a number, got {value!r}",
            f"set {key} = {default!r} (or another number) in the [topology] section",
        )
    value = float(value)
    if not math.isfinite(value):
        raise TopologyError(f"[topology] {key} must be finite, got {value!r}",
                            f"set {key} to a finite number")
    return value


def int_param(params: Mapping[str, Any], key: str, default: int) -> int:
    """``params[key]`` (or ``default``) as a whole number; TopologyError otherwise."""
    value = number_param(params, key, default)
    if not value.is_integer():
        raise TopologyError(f"[topology] {key} must be a whole number, got {value!r}",
                            f"set {key} = {round(value)}")
    return int(value)


def check_agent_count(n: int) -> int:
    """``n`` as an int if it is a positive whole number of agents; TopologyError otherwise."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise TopologyError(f"the number of agents must be a positive integer, got {n!r}",
                            "run with at least one MPI rank (mpiexec -n N with N >= 1)")
    return int(n)
