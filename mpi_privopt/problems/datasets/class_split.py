"""The heterogeneous split of Chen & Wang 2025 (Section VI-A; notes 5.2 and 7 item 6).

The paper: "60% of the data from the i-th and the (2i)-th classes was assigned to agent i,
while the remaining 40% was evenly distributed among the other agents". Read literally (i =
1..5, classes 1..10) the pairs overlap and two classes are claimed by nobody, so two
readings are offered. Both say which agents *claim* each class c; then, per class:

* the claimants share ``round(0.6 n_c)`` of its samples evenly, the other agents share the
  rest evenly (10% each with m = 5 and one claimant);
* a class nobody claims is shared evenly by all agents, and a class every agent claims
  (m = 1) goes wholly to them.

``heterogeneous`` (default; notes 7 item 6)
    Agent a (0-indexed) claims the classes c with ``floor(c m / C) = a``: with m = 5 and C =
    10 the pairs {0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, so each agent claims two classes
    and every class has one claimant. With m = C each agent claims one class; with m > C
    some agents claim none and hold only shares of the 40%.
``literal``
    Agent a claims the 1-indexed classes i = a + 1 and 2i (label L is digit L - 1, so
    label 10 is digit 9) that exist: with m = 5, {0, 1}, {1, 3}, {2, 5}, {3, 7}, {4, 9};
    digits 6 and 8 are claimed by nobody, digits 1 and 3 by two agents each.

"Evenly" is :func:`numpy.array_split`; the pieces' order is rotated by the class so the
larger pieces do not always fall to the same agent. Which samples go where is drawn with
the generator handed in (the task seeds it from the run seed alone, so every agent computes
the same split without communication).
"""
from __future__ import annotations

import numpy as np

__all__ = ["SPLITS", "OWN_SHARE", "claimants", "split_by_class"]

SPLITS = ("heterogeneous", "literal")
#: share of a class's samples that goes to the agents claiming it
OWN_SHARE = 0.6


def claimants(split: str, n_agents: int, classes: int) -> list[list[int]]:
    """``result[c]``: the agents (0-indexed, ascending) claiming class c under ``split``."""
    claims: list[list[int]] = [[] for _ in range(classes)]
    if split == "heterogeneous":
        for c in range(classes):
            claims[c].append(c * n_agents // classes)
    elif split == "literal":
        for a in range(n_agents):
            for label in sorted({a + 1, 2 * (a + 1)}):   # 1-indexed labels i and 2i
                if label <= classes:
                    claims[label - 1].append(a)
    else:
        raise ValueError(f"unknown split {split!r}; use one of {list(SPLITS)}")
    return claims


def _even(rows: np.ndarray, agents: list[int], rotate: int, parts: list[list[np.ndarray]]):
    for k, piece in enumerate(np.array_split(rows, len(agents))):
        parts[agents[(k + rotate) % len(agents)]].append(piece)


def split_by_class(labels: np.ndarray, n_agents: int, split: str,
                   rng: np.random.Generator, classes: int) -> list[np.ndarray]:
    """Each agent's rows (sorted indices into ``labels``) under ``split``.

    Every row goes to exactly one agent. An agent may end up with no rows (more agents than
    samples can fill); the caller decides whether that is acceptable.
    """
    claims = claimants(split, n_agents, classes)
    parts: list[list[np.ndarray]] = [[] for _ in range(n_agents)]
    everyone = list(range(n_agents))
    for c in range(classes):
        rows = rng.permutation(np.flatnonzero(labels == c))
        own = claims[c]
        others = [a for a in everyone if a not in own]
        if not own or not others:
            _even(rows, everyone, c, parts)
            continue
        cut = int(round(OWN_SHARE * rows.size))
        _even(rows[:cut], own, c, parts)
        _even(rows[cut:], others, c, parts)
    return [np.sort(np.concatenate(p)) if p else np.empty(0, dtype=np.int64) for p in parts]
