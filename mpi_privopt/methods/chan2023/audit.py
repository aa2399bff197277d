"""The audit of ``token-admm``: the canary is one record of the target, seen by the next holder.

The token method draws its noise inside :meth:`~mpi_privopt.methods.chan2023.token_admm.TokenADMM._iterate`
(``round_to_grid(x') + gaussian(sigma, n)``), not through a mechanism, so the trials go
through ``_iterate`` itself: at each iteration that uses the canary record (the target's
record 0, the first one its ring order uses, hence the most used), the harness calls the
method's real ``_iterate`` once per trial with the record's clipped gradient replaced by
``b clip u`` (``b = +-1``: the replace-one canary) and the chain's noise stream replaced by
the audit's. The holder after the target sees the released ``x~'`` directly (k = 0: no
amplification), so each such release is a Gaussian mechanism of sensitivity
``eta Delta / (1 + eta beta)`` (the method's ``sensitivity``) and noise ``sigma``, which the
ledger books for that link.

The clean values of the two worlds come from the method's own
:func:`~mpi_privopt.methods.chan2023.gradient_admm.iteration`; the statistic, the noise tests and
the bounds are those of :class:`~.harness.TrialHarness`. Only the ring schedule is audited:
with it the observer of the target's iterations is always the same neighbour. There is no
wire test for a token (its payloads do not pass through a mechanism the recorder can
wrap) and no membership attack.
"""
from __future__ import annotations

import math

import numpy as np

from .gradient_admm import iteration
from ...errors import ConfigError
from ...audit.canary import canary_direction
from ...audit.harness import MembershipTrials, TrialStatistics, audit_noise
from ...audit.method_audit import AuditRun, MethodAudit

__all__ = ["CANARY_RECORD", "TokenAudit", "TokenTrials", "canary_worlds", "check_token_audit",
           "token_link"]

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


def canary_worlds(algorithm, token: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The clean ``x'`` of one iteration on ``token`` in the two canary worlds: the record's
    clipped gradient replaced by ``+clip u`` and by ``-clip u`` (the method's own
    :func:`~mpi_privopt.methods.chan2023.gradient_admm.iteration`; the two records differ by
    ``2 clip = Delta``)."""
    n, p = algorithm.dim, algorithm.params
    x_tilde, lam = token[:n], token[n:]
    return tuple(iteration(x_tilde, lam, sign * p.clip * u, algorithm.penalty, p.beta,
                           p.eta)[2] for sign in (1.0, -1.0))


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
    """The white-box trials of a token-admm target (module docstring).

    Parameters
    ----------
    agent, algorithm
        The target and its method (from the engine's ``on_setup``).
    u : numpy.ndarray
        The canary direction.
    positive : numpy.ndarray of bool
        The world of each audit trial (True: ``b = +1``).
    noise
        The audit trials' noise source (:func:`~.harness.audit_noise`).
    membership : MembershipTrials, optional
        The membership attack's trials (worlds "in" and "out"), with their own noise.
    membership_noise
        The membership trials' noise source (required with ``membership``).
    """

    def __init__(self, agent, algorithm, u: np.ndarray, positive: np.ndarray, noise,
                 membership: MembershipTrials | None = None, membership_noise=None) -> None:
        self.agent, self.algorithm = agent, algorithm
        self.u = u
        self.positive = positive
        self.noise = noise
        self.trials = TrialStatistics(positive)
        self.membership = membership
        self.membership_noise = membership_noise

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

    def _released(self, original, c: int, i: int, token: np.ndarray,
                  gradients: np.ndarray, noise) -> np.ndarray:
        """The released ``x~'`` of the method's real ``_iterate`` once per row of
        ``gradients`` (the canary record's clipped gradient of each trial), drawing from
        ``noise`` in place of the chain's stream."""
        a = self.algorithm
        records, chain_noise = a.records, a.noise[c]
        payload = np.empty((gradients.shape[0], a.dim))
        try:
            a.noise[c] = noise
            for t, g in enumerate(gradients):
                records.gradient = lambda index, x, clip, g=g: g
                payload[t] = original(c, i, token)[:a.dim]
        finally:
            vars(records).pop("gradient", None)
            a.noise[c] = chain_noise
        return payload

    def on_canary(self, original, c: int, i: int, token: np.ndarray) -> None:
        a, p = self.algorithm, self.algorithm.params
        n = a.dim
        plus, minus = canary_worlds(a, token, self.u)
        canary = p.clip * self.u
        gradients = np.where(self.positive[:, None], canary, -canary)
        payload = self._released(original, c, i, token, gradients, self.noise)
        booked = a.sensitivity
        self.trials.add(payload, plus, minus, p.sigma, booked)
        if self.membership is not None:  # "in": the canary's gradient; "out": none
            gradients = self.membership.worlds(np.zeros(n), canary)
            payload = self._released(original, c, i, token, gradients, self.membership_noise)
            self.membership.add_projection(payload, booked, p.sigma)

    def to_dict(self) -> dict:
        out = {**self.trials.to_dict(), "worst_mismatch": None, "direction": self.u}
        if self.membership is not None:
            out["membership"] = self.membership.to_dict()
        return out


def _token_receiver(algorithm, target: int, receiver: int | None) -> int:
    """The neighbour that observes the target's canary iterations (``--link`` must name it)."""
    observer, _ = token_link(algorithm.plans[0], target)
    if receiver is not None and receiver != observer:
        raise ConfigError(f"agent {target}'s token goes to agent {observer} after its canary "
                          f"iterations, not to {receiver}",
                          f"audit the link {target},{observer} (or leave out --link)")
    return observer


class TokenAudit(MethodAudit):
    """token-admm's audit (module docstring): ``TokenADMM.audit()`` returns one. The
    audited link's receiver is the token's next holder, known once the plan is made."""

    def check(self, cfg) -> None:
        check_token_audit(cfg)

    def receiver(self, graph, target: int, receiver: int | None) -> int | None:
        return receiver  # the token's next holder, found at set-up

    def attach(self, run: AuditRun, agent, algorithm):
        run.receiver = run.agree(lambda: _token_receiver(algorithm, run.target, run.receiver))
        _, uses = token_link(algorithm.plans[0], run.target)
        if agent.id != run.target:
            run.agree(lambda: None)
            return None
        u = canary_direction(agent.problem)
        harness = TokenTrials(agent, algorithm, u, run.worlds(1),
                              audit_noise(algorithm.noise[0], run.seed, run.target),
                              *run.own_membership(algorithm.noise[0], u))
        booked = algorithm.sensitivity
        run.agree(lambda: run.check_trials(math.sqrt(uses) * booked / algorithm.params.sigma))
        harness.attach()
        return harness
