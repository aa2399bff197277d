"""What the curious agents record during a run, and the target's ground truth.

A :class:`LinkRecorder` is attached to every member of the coalition: as a receive
listener it sees every block the member receives, as a release listener every message the
member sends. Together the coalition's recorders hold exactly what Gade & Vaidya's
passive adversary observes: all traffic on links incident to the coalition, nothing else.

A :class:`TargetProbe` is instrumentation, not part of the attack: it records the points
where the target took its gradients and the true gradients there, so the attack's error
can be measured.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["LinkRecorder", "TargetProbe", "MessageKey"]

#: (phase, round, sender, receiver)
MessageKey = tuple[str, int, int, int]


class LinkRecorder:
    """Every message a curious agent sends or receives, keyed by link and round.

    Parameters
    ----------
    agent : int
        The curious agent's id.
    """

    def __init__(self, agent: int) -> None:
        self.agent = agent
        self.messages: dict[MessageKey, np.ndarray] = {}

    def on_receive(self, data: np.ndarray, sources: Sequence[int], phase: str, round: int) -> None:
        for row, source in zip(data, sources):
            # the network reuses its receive buffers: keep a copy
            self.messages[(phase, round, int(source), self.agent)] = np.array(row, copy=True)

    def on_release(self, release, receivers: Sequence[int], phase: str, round: int) -> None:
        payload = np.array(release.payload, copy=True)
        for receiver in receivers:
            self.messages[(phase, round, self.agent, int(receiver))] = payload


class TargetProbe:
    """Ground truth at the target: gradient points, true gradients, iterates after each step.

    Wraps ``algorithm.step`` of the target agent; the algorithm must expose
    ``gradient_point`` and ``x`` (DGD and the methods built on it do).
    """

    def __init__(self, agent, algorithm) -> None:
        self.points: list[np.ndarray] = []
        self.gradients: list[np.ndarray] = []
        self.states: list[np.ndarray] = [np.array(algorithm.x, copy=True)]
        original = algorithm.step

        def step(n: int) -> None:
            original(n)
            point = np.array(algorithm.gradient_point, copy=True)
            self.points.append(point)
            # the private objective f_t itself (for FS, not the obfuscated f-hat_t)
            self.gradients.append(np.asarray(agent.problem.subgradient(point), dtype=float))
            self.states.append(np.array(algorithm.x, copy=True))

        algorithm.step = step

    def arrays(self) -> dict[str, np.ndarray]:
        """``points[k-1]``, ``gradients[k-1]`` of round k; ``states[k-1]`` = x_k (x_1 first)."""
        return {"points": np.array(self.points), "gradients": np.array(self.gradients),
                "states": np.array(self.states)}
