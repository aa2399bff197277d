"""What an audit attaches to the agents of a run: the trial harness and the wire recorders.

:class:`TrialHarness` (on the target) wraps the target's mechanism. Each time the method
releases, it lets the real release go on the wire (the midpoint world, no canary), asks
the method's :mod:`.canary` entry for the clean values of the two canary worlds at this
step, and releases those for every trial at once through a copy of the same mechanism
object (the real ``release`` code: rounding, sensitivity, event, noise draw) with the
audit's own noise stream: one vectorised release of shape (trials, P) per step. Each trial
is a world ``b = +-1`` drawn once per trial; the harness keeps, per trial, the Gaussian
likelihood-ratio statistic of the residuals along the shift, and the standardised noise
for the variance and independence tests.

Why the trials may share the wire's history: the LR statistic's law depends only on the
shifts ``clean(+1) - clean(-1)``, not on the midpoint, and DP composition holds for any
sequence of neighbouring pairs an adversary chooses, including one fixed by another run's
outputs. So the trials audit the release path (noise, sensitivity, booking) exactly; what
they do not exercise, the network's delivery on each link, :class:`WireRecorder` checks
on the run itself (every link's residuals ``received - clean``).

:class:`MembershipTrials` (also on the target; on the token and aggregative harnesses too)
is the membership-inference attack of an observer of the link: worlds "canary in"
(``s = +1``) and "out" (``s = 0``), a score from the released messages alone (their
projection on the canary direction weighted by the public noise schedule, or for Laplace
releases the Laplace likelihood ratio).
"""
from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError
from ..privacy.noise import FastNoise
from .canary import canary_gradient
from .shift import shift_ratio
from .stats import gaussian_lr_weights

__all__ = ["AUDIT_NOISE_TAG", "MEMBERSHIP_NOISE", "MembershipTrials", "NoiseChecks",
           "TrialHarness", "TrialStatistics", "WireRecorder", "audit_noise", "link_residuals", "mechanism_of",
           "observe_releases", "trial_copy", "trial_worlds"]

#: spawn-key tag of the audit's trial noise and worlds (beside privacy/noise.py's tags);
#: the third key is the stream: 0 the trials' noise, 1 the audit's worlds, 2 the membership
#: worlds, 3 the one-run audit's signs, :data:`MEMBERSHIP_NOISE` the membership trials' own
#: noise
AUDIT_NOISE_TAG = 0x4E010A01
#: the stream of the membership trials' noise where they do not share the audit's (token-admm,
#: ldp-aggregative: sharing would move every later audit draw, and their published results)
MEMBERSHIP_NOISE = 4


def audit_noise(agent_noise, seed: int, target: int, stream: int = 0):
    """The trials' noise: a fast stream of its own, or fresh secure noise in secure mode."""
    if agent_noise.mode != "fast":
        return agent_noise
    return FastNoise(np.random.SeedSequence(seed, spawn_key=(AUDIT_NOISE_TAG, target, stream)))


def trial_worlds(seed: int, target: int, trials: int, stream: int) -> np.ndarray:
    """``trials`` booleans, exactly half True, in a seeded random order."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(AUDIT_NOISE_TAG,
                                                                        target, stream)))
    worlds = np.arange(trials) < trials // 2
    rng.shuffle(worlds)
    return worlds


def observe_releases(mechanism, observer) -> None:
    """Wrap ``mechanism.release`` (as an instance attribute): after each real release,
    ``observer(clean, sensitivity, scale, record, result)`` with a copy of the clean value."""
    original = mechanism.release

    def release(value, sensitivity, scale, out=None, record=None):
        clean = np.array(value, dtype=float, copy=True)
        result = original(value, sensitivity, scale, out=out, record=record)
        observer(clean, sensitivity, scale, record, result)
        return result

    mechanism.release = release


def trial_copy(mechanism, noise):
    """A copy of ``mechanism`` (its class's release, not a wrapper) drawing from ``noise``:
    the real release code, with the audit's own stream."""
    trial = copy.copy(mechanism)
    vars(trial).pop("release", None)
    trial.noise = noise
    return trial


def mechanism_of(algorithm):
    """The additive-noise mechanism a method releases through."""
    if algorithm.release is None:
        raise ConfigError(f"algorithm {algorithm.name!r} has no "
                          "release mechanism the audit can wrap",
                          "audit a method that releases through an IterateRelease")
    return algorithm.release.mechanism


class NoiseChecks:
    """Running sums of standardised noise: squares and lag-1 products across steps (for
    :func:`~.stats.variance_test` and :func:`~.stats.lag_correlation_test`)."""

    def __init__(self) -> None:
        self.sum_squares = 0.0
        self.count = 0
        self.lag_products = 0.0
        self.pairs = 0
        self._previous: np.ndarray | None = None

    def add(self, z: np.ndarray) -> None:
        z = z.ravel()
        self.sum_squares += float(np.dot(z, z))
        self.count += z.size
        if self._previous is not None and self._previous.shape == z.shape:
            self.lag_products += float(np.dot(z, self._previous))
            self.pairs += z.size
        self._previous = z

    def to_dict(self) -> dict:
        return {"sum_squares": self.sum_squares, "count": self.count,
                "lag_products": self.lag_products, "pairs": self.pairs}


class TrialStatistics:
    """What the trials of one target accumulate, release by release.

    Per trial the Gaussian log-likelihood ratio ``sum_n <y_n - m_n, c+_n - c-_n> /
    sigma_n^2`` (``m_n`` the midpoint of the two worlds' clean values); the standardised
    noise ``(y_n - c_b,n) / sigma_n`` for the noise tests; the booked mu (sensitivity over
    sigma) and the realised one (the canary's real shift over sigma).
    """

    def __init__(self, positive: np.ndarray) -> None:
        self.positive = positive
        self.statistic = np.zeros(positive.size)
        self.noise = NoiseChecks()
        self.booked_mu2 = 0.0
        self.shift_mu2 = 0.0
        #: the largest ||c+ - c-|| / booked sensitivity seen (:func:`~.shift.shift_ratio`)
        self.worst_shift_ratio = 0.0
        self.releases = 0

    def add(self, payload: np.ndarray, plus: np.ndarray, minus: np.ndarray, sigma: float,
            booked: float) -> None:
        """One release of every trial: ``payload[t]`` released from ``plus`` (trial t in
        world +1) or ``minus``, with noise ``sigma`` and booked sensitivity ``booked``."""
        shift = plus - minus
        values = np.where(self.positive[:, None], plus, minus)
        self.statistic += (payload - 0.5 * (plus + minus)) @ gaussian_lr_weights(shift, sigma)
        self.noise.add((payload - values) / sigma)
        self.booked_mu2 += (booked / sigma) ** 2
        self.shift_mu2 += (float(np.linalg.norm(shift)) / sigma) ** 2
        self.worst_shift_ratio = max(self.worst_shift_ratio, shift_ratio(plus, minus, booked))
        self.releases += 1

    def to_dict(self) -> dict:
        return {"statistic": self.statistic, "positive": self.positive,
                "noise": self.noise.to_dict(), "booked_mu": float(np.sqrt(self.booked_mu2)),
                "shift_mu": float(np.sqrt(self.shift_mu2)),
                "worst_shift_ratio": self.worst_shift_ratio, "releases": self.releases}


class TrialHarness:
    """The white-box audit trials of one target (see the module docstring).

    Parameters
    ----------
    agent, algorithm
        The target and its method (from the engine's ``on_setup``).
    clean_for : callable
        The method's counterfactual (its ``audit()`` hook's ``MechanismAudit.clean_for``).
    u : numpy.ndarray
        The canary direction.
    positive : numpy.ndarray of bool
        The world of each trial (True: ``b = +1``).
    noise
        The trials' noise source (:func:`audit_noise`).
    """

    def __init__(self, agent, algorithm, clean_for, u: np.ndarray, positive: np.ndarray,
                 noise) -> None:
        self.agent, self.algorithm, self.clean_for = agent, algorithm, clean_for
        self.u = u
        self.positive = positive
        self.trials = TrialStatistics(positive)
        #: the largest |clean(0) - released clean value| (the entry tracks its method)
        self.worst_mismatch = 0.0
        self.membership: MembershipTrials | None = None
        self._trial_mechanism = None

    def attach(self, mechanism, noise) -> None:
        """Wrap ``mechanism.release`` (an instance attribute) on the target."""
        self._trial_mechanism = trial_copy(mechanism, noise)
        observe_releases(mechanism, lambda clean, sensitivity, scale, record, result:
                         self.on_release(clean, sensitivity, scale, record))

    def on_release(self, clean: np.ndarray, sensitivity: float, scale: float,
                   record) -> None:
        problem = self.agent.problem
        at = self.clean_for(self.algorithm, self.agent.net.round)
        midpoint = at(np.zeros_like(clean))
        self.worst_mismatch = max(self.worst_mismatch,
                                  float(np.max(np.abs(midpoint - clean), initial=0.0)))
        plus = at(canary_gradient(problem, self.u, 1.0))
        minus = at(canary_gradient(problem, self.u, -1.0))
        values = np.where(self.positive[:, None], plus, minus)
        trial = self._trial_mechanism.release(values, sensitivity, scale, record=record)
        sigma, booked = float(trial.event.sigma), float(trial.event.sensitivity)
        self.trials.add(trial.payload, plus, minus, sigma, booked)
        if self.membership is not None:
            self.membership.on_release(self._trial_mechanism, clean, plus, sensitivity,
                                       scale, record, booked, sigma)

    def to_dict(self) -> dict:
        out = {**self.trials.to_dict(), "worst_mismatch": self.worst_mismatch,
               "direction": self.u}
        if self.membership is not None:
            out["membership"] = self.membership.to_dict()
        return out


class MembershipTrials:
    """An observer's membership-inference attack on the link's messages (the add/remove
    game).

    World "in" (``member``): the canary is a record of the target (``s = +1``); "out": it is
    not (``s = 0``, the wire's own clean value). Each trial releases its world's clean value
    through the method's real release path (the harness of the method does that: it knows
    how); :meth:`add` accumulates the observer's score, a function of the released messages
    alone. Two scores:

    * Gaussian methods (:meth:`add_projection`): ``sum_n <y_n, u> D_n / sigma_n^2``, the
      messages' projection on the canary direction weighted by the public noise schedule
      (up to a constant the trials share, the likelihood ratio along ``u``);
    * Laplace methods (:meth:`add`, with :func:`~.stats.laplace_lr`): the Laplace
      log-likelihood ratio of the two worlds' clean values, which the adversary of the DP
      game knows (it knows every record but the canary's membership).
    """

    def __init__(self, member: np.ndarray, u: np.ndarray | None = None) -> None:
        self.member = member
        self.u = u
        self.score = np.zeros(member.size)

    def worlds(self, out: np.ndarray, inside: np.ndarray) -> np.ndarray:
        """Per trial (rows) the value of its world: ``inside`` if a member, else ``out``."""
        return np.where(self.member[:, None], inside, out)

    def add(self, score: np.ndarray) -> None:
        """One release's score of every trial."""
        self.score += score

    def add_projection(self, payload: np.ndarray, booked: float, sigma: float) -> None:
        """The Gaussian observer's score of one release (``payload``: one row per trial)."""
        self.add((payload @ self.u) * (booked / (sigma * sigma)))

    def on_release(self, mechanism, clean: np.ndarray, plus: np.ndarray, sensitivity: float,
                   scale: float, record, booked: float, sigma: float) -> None:
        trial = mechanism.release(self.worlds(clean, plus), sensitivity, scale, record=record)
        self.add_projection(trial.payload, booked, sigma)

    def to_dict(self) -> dict:
        return {"score": self.score, "member": self.member}


class WireRecorder:
    """One agent's view of the wire: the clean value and booked noise of each of its
    releases, and every block it receives (keyed by round and source).

    Attached to every agent: the residual of link ``s -> r`` at round n is what ``r``
    received from ``s`` minus the clean value ``s`` released, which must be noise of the
    booked scale, independent across rounds.
    """

    def __init__(self, agent_id: int) -> None:
        self.agent = agent_id
        self.sent: dict[int, tuple[np.ndarray, float]] = {}
        self.received: dict[tuple[int, int], np.ndarray] = {}

    def attach(self, agent, mechanism) -> None:
        net = agent.net

        def sent(clean, sensitivity, scale, record, result) -> None:
            self.sent[net.round] = (clean, float(getattr(result.event, "sigma", np.nan)))

        observe_releases(mechanism, sent)
        net.receive_listeners.append(self)

    def on_receive(self, data: np.ndarray, sources: Sequence[int], phase: str,
                   round: int) -> None:
        for row, source in zip(data, sources):
            self.received[(int(round), int(source))] = np.array(row, copy=True)


def link_residuals(sent: dict[int, tuple[np.ndarray, float]],
                   received: dict[tuple[int, int], np.ndarray], source: int) -> NoiseChecks:
    """The standardised residuals of link ``source -> receiver``, round by round."""
    checks = NoiseChecks()
    for round_ in sorted(sent):
        clean, sigma = sent[round_]
        got = received.get((round_, source))
        if got is None or not np.isfinite(sigma) or sigma <= 0:
            continue
        checks.add((got - clean) / sigma)
    return checks
