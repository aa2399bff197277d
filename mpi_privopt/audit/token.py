"""The audit of ``token-admm``: the canary is one record of the target, seen by the next holder.

The token method draws its noise inside :meth:`~mpi_privopt.algorithms.token_admm.TokenADMM._iterate`
(``round_to_grid(x') + gaussian(sigma, n)``), not through a mechanism, so the trials go
through ``_iterate`` itself: at each iteration that uses the canary record (the target's
record 0, the first one its ring order uses, hence the most used), the harness calls the
method's real ``_iterate`` once per trial with the record's clipped gradient replaced by
``b clip u`` (``b = +-1``: the replace-one canary) and the chain's noise stream replaced by
the audit's. The holder after the target sees the released ``x~'`` directly (k = 0: no
amplification), so each such release is a Gaussian mechanism of sensitivity
``eta Delta`` and noise ``sigma``, which the ledger books for that link.

The clean values of the two worlds come from the method's own
:func:`~mpi_privopt.algorithms.gradient_admm.iteration`; the statistic, the noise tests and
the bounds are those of :class:`~.harness.TrialHarness`. Only the ring schedule is audited:
with it the observer of the target's iterations is always the same neighbour. There is no
wire test for a token (its payloads do not pass through a mechanism the recorder can
wrap) and no membership attack.
"""
from __future__ import annotations

import math

import numpy as np

from ..algorithms.gradient_admm import iteration
from ..errors import ConfigError
from .harness import TrialStatistics

__all__ = ["CANARY_RECORD", "TokenTrials", "check_token_audit", "token_link"]

#: the target's record the canary replaces (the ring order uses it first, so most often)
CANARY_RECORD = 0


def check_token_audit(cfg) -> None:
    """Refuse a token-admm run the audit cannot read (one message)."""
    params = cfg.algorithm.params
    if params.schedule != "ring" or params.chains != 1:
        raise ConfigError(
            f"the audit of token-admm needs algorithm.schedule = \"ring\" and chains = 1 "
            f"(got {params.schedule!r}, {params.chains})",
            "set algorithm.schedule = \"ring\" and algorithm.chains = 1: the ring always "
            "hands the target's token to the same neighbour")
    if not (params.sigma > 0 and math.isfinite(params.clip)):
        raise ConfigError("token-admm without noise or without clipping has an unbounded "
                          "loss: nothing to audit",
                          "set algorithm.sigma > 0 and a finite algorithm.clip")


def token_link(plan, target: int) -> tuple[int, int]:
    """(the neighbour that receives the token after each of the target's canary iterations,
    how many such iterations)."""
    uses = [i for i in range(plan.owners.size)
            if int(plan.owners[i]) == target and plan.local_index(i) == CANARY_RECORD]
    after = {int(plan.holders[int(plan.steps[i]) + 1]) for i in uses
             if int(plan.steps[i]) + 1 < plan.n_steps}
    if len(after) != 1:
        raise ConfigError(f"agent {target}'s canary record is used {len(uses)} times and seen "
                          f"first by agents {sorted(after)}: the audit needs one observer",
                          "use the ring schedule with algorithm.reuse = true and enough "
                          "iterations for the target to hold the token")
    return after.pop(), len(uses)


class TokenTrials:
    """The white-box trials of a token-admm target (module docstring)."""

    def __init__(self, agent, algorithm, u: np.ndarray, positive: np.ndarray, noise) -> None:
        self.agent, self.algorithm = agent, algorithm
        self.u = u
        self.positive = positive
        self.noise = noise
        self.trials = TrialStatistics(positive)

    def attach(self) -> None:
        algorithm = self.algorithm
        original = algorithm._iterate

        def _iterate(c, i, token):
            out = original(c, i, token)
            plan = algorithm.plans[c]
            if int(plan.owners[i]) == self.agent.id and plan.local_index(i) == CANARY_RECORD:
                self.on_canary(original, c, i, np.array(token, copy=True))
            return out

        algorithm._iterate = _iterate

    def _world(self, x_tilde, lam, sign: float) -> np.ndarray:
        a, p = self.algorithm, self.algorithm.params
        return iteration(x_tilde, lam, sign * p.clip * self.u, a.penalty, p.beta, p.eta)[2]

    def on_canary(self, original, c: int, i: int, token: np.ndarray) -> None:
        a, p = self.algorithm, self.algorithm.params
        n = a.dim
        plus, minus = self._world(token[:n], token[n:], 1.0), self._world(token[:n], token[n:], -1.0)
        records, chain_noise = a.records, a.noise[c]
        payload = np.empty((self.positive.size, n))
        try:
            a.noise[c] = self.noise
            for t, positive in enumerate(self.positive):
                g = p.clip * self.u * (1.0 if positive else -1.0)
                records.gradient = lambda index, x, clip, g=g: g
                payload[t] = original(c, i, token)[:n]
        finally:
            vars(records).pop("gradient", None)
            a.noise[c] = chain_noise
        booked = a.noise[0].effective_sensitivity(p.eta * a.delta_radius, n)
        self.trials.add(payload, plus, minus, p.sigma, booked)

    def to_dict(self) -> dict:
        return {**self.trials.to_dict(), "worst_mismatch": None, "direction": self.u}
