"""The white-box sensitivity check of ``test_sensitivity.py``: at every release of every
agent, the realised change of the released clean value between the two worlds of a
replace-one canary, over the sensitivity the release was booked with
(:func:`mpi_privopt.audit.shift.shift_ratio`, the audit's own formula), worst over a few
canary directions, the audit's among them.

One probe per way a method releases, each built from the audit's pieces so that the check
and the audit cannot disagree about a canary or a ratio:

* :class:`MechanismProbe`: a method that releases one perturbed iterate through an
  ``IterateRelease`` (Gauthier et al.'s four): the method's own counterfactual
  (``audit().clean_for``) at the moment of each release, the canary gradient
  ``+-c1 u / M`` of :func:`~mpi_privopt.audit.canary.canary_gradient`;
* :class:`TokenProbe`: token-admm, every iteration's ``x'`` with the record's clipped
  gradient replaced by ``+-clip u``
  (:func:`~mpi_privopt.methods.chan2023.audit.canary_worlds`), against the Gaussian event
  the method books for that use;
* :class:`CoreProbe`: the methods on Chen & Wang's Algorithm 1 framework (``core``: the
  shared ``RobustTracking``), through ldp-aggregative's audit harness
  (:class:`~mpi_privopt.methods.chen2025.audit.AggregativeTrials`: shadow trajectories of
  the target's private state, driven by the messages it really received, Definition 3), one
  harness per canary direction; for fresh batches (tvs-aggregative) the canary sample is
  in the first batch only;
* :class:`TrackerProbe`: the tracking baselines ([36], [6]: a ``TrackerPair``), whose
  shadows run the method's own ``step`` on copies of its state, with the world's sample
  history, the messages it really received, and a noise stream of their own.

Each probe records ``worst`` (the largest ratio; the aggregative probes also ``by_block``),
``releases`` (how many releases it checked) and ``mismatch`` (how far its midpoint world is from what the method really
released: a counterfactual that drifts from its method fails the check).
"""
from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np

from mpi_privopt.audit.canary import canary_direction, canary_gradient
from mpi_privopt.audit.harness import audit_noise, mechanism_of, observe_releases, trial_copy
from mpi_privopt.audit.shift import shift_ratio
from mpi_privopt.methods.chan2023.audit import canary_worlds
from mpi_privopt.methods.chen2025.audit import AggregativeTrials, canary_change

#: the spawn stream of the probes' own noise (beside the audit's 0 to 4)
PROBE_NOISE = 7


def unit_directions(u: np.ndarray, dim: int, seed: int) -> list[np.ndarray]:
    """The audit's direction ``u``, every coordinate axis, and two seeded random unit
    vectors: a few directions, among them the one the audit uses."""
    rng = np.random.default_rng(seed)
    random = rng.standard_normal((2, dim))
    return [u, *np.eye(dim), *(r / np.linalg.norm(r) for r in random)]


class MechanismProbe:
    """The check through a method's mechanism and its counterfactual (module docstring)."""

    def __init__(self, agent, algorithm) -> None:
        self.agent, self.algorithm = agent, algorithm
        self.clean_for = type(algorithm).audit().clean_for
        problem = agent.problem
        self.directions = unit_directions(canary_direction(problem), problem.n_features,
                                          agent.seed)
        self.worst, self.releases, self.mismatch = 0.0, 0, 0.0
        observe_releases(mechanism_of(algorithm), self.on_release)

    def on_release(self, clean, sensitivity, scale, record, result) -> None:
        problem = self.agent.problem
        at = self.clean_for(self.algorithm, self.agent.net.round)
        self.mismatch = max(self.mismatch, float(np.max(np.abs(at(np.zeros_like(clean))
                                                               - clean), initial=0.0)))
        booked = float(result.event.sensitivity)
        for u in self.directions:
            self.worst = max(self.worst, shift_ratio(at(canary_gradient(problem, u, 1.0)),
                                                     at(canary_gradient(problem, u, -1.0)),
                                                     booked))
        self.releases += 1


class TokenProbe:
    """The check of token-admm's iterations (module docstring)."""

    def __init__(self, agent, algorithm) -> None:
        self.agent, self.algorithm = agent, algorithm
        self.directions = unit_directions(canary_direction(agent.problem), algorithm.dim,
                                          agent.seed)
        self.worst, self.releases, self.mismatch = 0.0, 0, 0.0
        original = algorithm._iterate

        def _iterate(c, i, token):
            out = original(c, i, token)
            self.on_iteration(c, i, np.array(token, copy=True))
            return out

        algorithm._iterate = _iterate

    def on_iteration(self, c: int, i: int, token: np.ndarray) -> None:
        a = self.algorithm
        # what an observer of this iteration's x~' is booked for (k = 0: no amplification)
        event = a._event(a.plans[c], i, 0)
        booked = float(event.base.sensitivity)
        for u in self.directions:
            self.worst = max(self.worst, shift_ratio(*canary_worlds(a, token, u), booked))
        self.releases += 1


def sample_changes(problem, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Changes ``(u_xi, u_phi)`` of the canary sample between the two worlds, each component
    of l1 size 1 (the audit's :data:`~mpi_privopt.methods.chen2025.audit.CANARY_SIZE`): the
    audit's (e_1, e_1), every pair of coordinate axes, and two seeded random directions."""
    r, n = problem.aggregate_size, problem.block_size
    rng = np.random.default_rng(seed)
    random = [(v[:r] / np.abs(v[:r]).sum(), v[r:] / np.abs(v[r:]).sum())
              for v in rng.standard_normal((2, r + n))]
    axes = [(np.eye(r)[j], np.eye(n)[k]) for j in range(r) for k in range(n)]
    return [canary_change(problem), *axes, *random]


class CoreProbe:
    """The check of a method on Algorithm 1's framework, through the audit's shadow
    trajectories, one harness per canary change (module docstring)."""

    def __init__(self, agent, algorithm, fresh: bool = False) -> None:
        self.harnesses = []
        for change in sample_changes(agent.problem, agent.seed):
            trials = (FirstBatchTrials if fresh else AggregativeTrials)(
                agent, algorithm, np.array([True, False]),
                audit_noise(agent.noise, agent.seed, agent.id, PROBE_NOISE))
            trials.change = change
            trials.attach()
            self.harnesses.append(trials)

    @property
    def worst(self) -> float:
        return max(h.worst_shift_ratio for h in self.harnesses)

    @property
    def by_block(self) -> dict[str, float]:
        """The worst ratio of each block."""
        out: dict[str, float] = {}
        for h in self.harnesses:
            for _, block, ratio in h.shift_ratios:
                out[block] = max(out.get(block, 0.0), ratio)
        return out

    @property
    def releases(self) -> int:
        return self.harnesses[0].releases

    @property
    def mismatch(self) -> float:
        return max(h.worst_mismatch for h in self.harnesses)


class FirstBatchTrials(AggregativeTrials):
    """The audit's shadows for fresh batches: the canary sample is in the first batch (the
    first update's history), which the next fresh batch replaces."""

    def on_update(self, lam, beta: float) -> None:
        if self._t > 0:
            self.change = tuple(np.zeros_like(c) for c in self.change)
        super().on_update(lam, beta)


# -- the tracking baselines ------------------------------------------------------------------

def _world_problem(problem, sign: float, change) -> object:
    """A snapshot of ``problem``'s sample history, the canary's ``sign / 2`` of ``change``
    added once a sample is in it (the canary is the first sample)."""
    world = copy.copy(problem)
    half = 0.5 * sign if problem.count > 0 else 0.0
    world.sum_xi = problem.sum_xi + half * change[0]
    world.sum_phi = problem.sum_phi + half * change[1]
    return world


class _ReplayProblem:
    """The world's problem for a shadow step: the snapshots the real step went through,
    one more at each ``observe`` (the shadow draws nothing)."""

    def __init__(self, snapshots: list) -> None:
        self._snapshots, self._now = snapshots, 0

    def observe(self, count: int = 1, *, fresh: bool = False) -> None:
        self._now += 1

    def __getattr__(self, name: str):
        return getattr(self._snapshots[self._now], name)


class _HeardChannel:
    """The shadow's channel: the messages the agent really received this iteration; what
    the shadow would send is kept (clean, at the moment of its release), never sent."""

    def __init__(self, real, owner) -> None:
        self.real, self.owner = real, owner
        self.outgoing = np.zeros_like(real.outgoing)
        self.sent: list[tuple[np.ndarray, np.ndarray]] = []

    @property
    def received(self) -> np.ndarray:
        return self.real.received

    def exchange(self, release) -> np.ndarray:
        self.sent.append((self.owner.y.copy(), self.owner.z.copy()))
        return self.real.received


class TrackerProbe:
    """The check of a tracking baseline (``algorithm.trackers``, a ``TrackerPair``): per
    canary change, three shadows (worlds -1, 0, +1) run the method's own ``step`` after the
    real one, on the sample histories the real step went through with the canary added, and
    on the messages the agent really received (module docstring)."""

    WORLDS = (-1.0, 0.0, 1.0)

    def __init__(self, agent, algorithm) -> None:
        self.agent, self.algorithm = agent, algorithm
        self.changes = sample_changes(agent.problem, agent.seed)
        self.worst, self.releases, self.mismatch = 0.0, 0, 0.0
        self.by_block = {"y": 0.0, "z": 0.0}
        trackers = algorithm.trackers
        noise = audit_noise(agent.noise, agent.seed, agent.id, PROBE_NOISE)
        self.shadows = {}
        for c, _ in enumerate(self.changes):
            for s in self.WORLDS:
                shadow = copy.copy(algorithm)
                shadow.x = np.array(algorithm.x, copy=True)
                pair = shadow.trackers = copy.copy(trackers)
                pair.y, pair.z = trackers.y.copy(), trackers.z.copy()
                pair.mechanism = trial_copy(trackers.mechanism, noise)
                pair._record = None
                pair.channel = _HeardChannel(trackers.channel, pair)
                self.shadows[(c, s)] = shadow
        self._snapshots: list = []
        self._real: list[tuple[int, np.ndarray, np.ndarray]] = []
        problem, observe = agent.problem, agent.problem.observe

        def observed(count: int = 1, *, fresh: bool = False) -> None:
            observe(count, fresh=fresh)
            self._snapshots.append(copy.deepcopy(problem))

        problem.observe = observed
        advance = trackers.advance

        def advanced(x, x_next, t) -> None:
            self._real.append((t, trackers.y.copy(), trackers.z.copy()))
            advance(x, x_next, t)

        trackers.advance = advanced
        step = algorithm.step

        def stepped(n: int) -> None:
            self._snapshots, self._real = [copy.deepcopy(problem)], []
            step(n)
            self.on_step(n)

        algorithm.step = stepped

    def on_step(self, n: int) -> None:
        (t, real_y, real_z), = self._real
        budgets = self.algorithm.trackers.budgets
        booked = {b: budgets[b].sensitivity(t) for b in ("y", "z")}
        for c, change in enumerate(self.changes):
            sent = {}
            for s in self.WORLDS:
                shadow = self.shadows[(c, s)]
                problem = _ReplayProblem([_world_problem(p, s, change)
                                          for p in self._snapshots])
                shadow.agent = SimpleNamespace(problem=problem)
                shadow.trackers.problem = problem
                type(self.algorithm).step(shadow, n)
                (sent[s],) = shadow.trackers.channel.sent[-1:]
            self.mismatch = max(self.mismatch, float(np.max(np.abs(
                np.concatenate(sent[0.0]) - np.concatenate([real_y, real_z])))))
            for k, block in enumerate(("y", "z")):
                ratio = shift_ratio(sent[1.0][k], sent[-1.0][k], booked[block], order=1)
                self.by_block[block] = max(self.by_block[block], ratio)
                self.worst = max(self.worst, ratio)
        self.releases += 1


#: how each family's releases are probed (``contract_cases.SensitivityCase.probe``)
PROBES = {"mechanism": MechanismProbe, "token": TokenProbe, "core": CoreProbe,
          "core-fresh": lambda agent, algorithm: CoreProbe(agent, algorithm, fresh=True),
          "trackers": TrackerProbe}
