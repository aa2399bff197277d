r"""Noisy gradient ADMM as a token walking the graph (Chan, Xie & Zhao 2023;
docs/methods/chan2023.md, "Token-passing realisation").

The state ``(xt, lam)`` is a token. One iteration is done by the holder, with one of its
records i (:mod:`~mpi_privopt.methods.chan2023.gradient_admm`, the paper's Algorithm 1 with
A = I, B = -I, c = 0)::

    y     = G(lam - beta xt)         = -soft(lam - beta xt, c1) / (2 c2 + beta)     (5)
    lam'  = lam - beta (xt - y)                                                     (6)
    x'    = (xt - eta [clip(grad f_i(xt)) - beta y - lam']) / (1 + eta beta)       (7)
    xt'   = x' + N(0, sigma^2 I)          drawn from the holder's own stream of this chain

then the token ``(xt', lam')`` goes to the next holder over a graph link (phase
``"token"``); the clean x' never leaves the holder. From ``xt_0 = x0 * 1``, ``lam_0 = 0``.
Schedules (public and seeded, :mod:`~mpi_privopt.methods.chan2023.token_plan`): ``ring`` (a
Hamiltonian cycle; each holder uses its next unused record in index order), ``walk`` (a
uniform random neighbour; the same record order), ``sample`` (the paper's experiment: the
record drawn with replacement, the token relayed along shortest paths to its owner; relays
do not iterate). After the last iteration the last holder releases the token to every agent
along the public spanning tree (phase ``"token.final"``). ``chains = N`` runs N independent
tokens at once, each with its own schedule stream and noise streams.

Privacy, per observer: every agent that sees the token (a holder, a relay, a receiver of
the final release) is an observer. When the token reaches observer q, q sees every
iteration done since its previous sighting for the first time, each ``k`` noisy iterations
after it; the message to q carries, for each such iteration's record j (of another agent),
the event ``AmplifiedGaussianEvent(GaussianEvent(eta Delta / (1 + eta beta), sigma,
owner, record), k)``, which :mod:`~mpi_privopt.privacy.amplification` resolves to
``min(local, amplified)`` zCDP. ``eta Delta / (1 + eta beta)`` is what replacing the record
can move x' (:func:`~mpi_privopt.methods.chan2023.gradient_admm.x_sensitivity`: eq. (7)
divides the gradient step by ``1 + eta beta``; docs/methods/chan2023.md, "Sensitivity of
one iteration"). Delta is the replace-one radius: ``2 clip`` with clipping, else the
declared bounded domain's ``2 max ||grad f||`` (a declaration, not enforced;
docs/methods/chan2023.md, "Sensitivity"). With sigma = 0 or an
unbounded Delta every such event is non-private (unbounded, never zero).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...errors import ConfigError
from ...privacy.amplification import (BOUNDS, EXPONENTS, AmplificationConstants, booked_bound,
                                     bound_applies)
from ...privacy.events import AmplifiedGaussianEvent, GaussianEvent, NonPrivateEvent, PrivacyEvent
from ...privacy.noise import chain_noise
from ...privacy.release import Release
from ...problems.registry import PROBLEMS
from ...network import walks
from ..contract import Algorithm
from .gradient_admm import ElasticNetPenalty, iteration, x_sensitivity
from .token_plan import TOKEN_SCHEDULES, TokenPlan, plan_chain

__all__ = ["TokenADMM", "BOUNDS", "EXPONENTS", "booked_local_rho", "replace_one_radius"]

#: the note of a non-private token event
UNBOUNDED_NOTE = "token-admm: sigma = 0 or no bound on Delta (set algorithm.clip or algorithm.domain)"


@dataclasses.dataclass
class TokenADMMParams:
    """The ``[algorithm]`` keys of ``token-admm`` (docs/algorithms/token-admm.md)."""

    schedule: str = "ring"
    eta: float = 0.1
    beta: float = 0.9
    sigma: float = 0.01
    x0: float = 3.0
    chains: int = 1
    reuse: bool = False
    start: int = 0
    clip: float = math.inf
    domain: float = math.inf
    feature_bound: float = math.inf
    label_bound: float = math.inf
    nu: float = 0.0
    mu: float = 0.0
    bound: str = "convex"
    exponent: str = "conservative"


def _check_params(name: str, params: TokenADMMParams) -> None:
    if not params.clip > 0:
        raise ConfigError(f"algorithm.clip = {params.clip} must be > 0 for {name!r}",
                          "give the per-record gradient norm bound, or inf for no clipping")
    if not (isinstance(params.chains, int) and params.chains >= 1):
        raise ConfigError(f"algorithm.chains = {params.chains!r} must be an integer >= 1",
                          "set the number of independent tokens, e.g. 1")
    if params.bound != "local" and not params.nu and math.isinf(params.feature_bound):
        raise ConfigError(
            f"algorithm.bound = {params.bound!r} needs the smoothness nu of every record's f",
            "set algorithm.nu, or algorithm.feature_bound (nu = the loss's curvature x "
            "feature_bound^2), or algorithm.bound = \"local\" (no amplification)")
    if not (isinstance(params.start, int) and params.start >= 0):
        raise ConfigError(f"algorithm.start = {params.start!r} must be an agent id >= 0",
                          "set the first holder, e.g. 0")


def _check_problem(name: str, cfg) -> None:
    # the token samples one record per visit: a problem given as whole functions (the
    # polynomial objectives) or as an aggregative game has no records to sample
    if cfg.problem.name not in PROBLEMS:
        raise ConfigError(
            f"algorithm {name!r} samples records, and problem {cfg.problem.name!r} has none",
            f"choose a record-based problem ({', '.join(PROBLEMS)})")
    if cfg.problem.clip:
        raise ConfigError(
            f"[problem] clip = {cfg.problem.clip} is set, but {name!r} clips each record's "
            "gradient itself", "remove [problem] clip and set algorithm.clip")


def booked_local_rho(eta: float, beta: float, radius: float, sigma: float) -> float:
    """The zCDP token-admm books for one use of a record seen directly (k = 0):
    ``(eta Delta / (1 + eta beta))^2 / (2 sigma^2)``
    (:func:`~mpi_privopt.methods.chan2023.gradient_admm.x_sensitivity`; the paper's
    Corollary 6.2 states ``(eta Delta)^2 / (2 sigma^2)``)."""
    return x_sensitivity(eta, beta, radius) ** 2 / (2.0 * sigma ** 2)


def replace_one_radius(params: TokenADMMParams, loss) -> float:
    """Delta of Def. 3.3 for replacing one record: ``sup_x ||grad f(x) - grad f'(x)||``.

    ``2 clip`` with clipping; else, on the declared domain ``||x|| <= domain`` with
    ``||a|| <= feature_bound`` and ``|b| <= label_bound``, twice the largest gradient norm
    (squared: ``2 * 2 (r X + B) r``, docs/methods/chan2023.md, "Sensitivity"); ``inf`` when
    neither is declared.
    """
    radius = 2.0 * params.clip
    bounds = (params.domain, params.feature_bound, params.label_bound)
    if all(math.isfinite(v) for v in bounds):
        r = params.feature_bound
        g = float(loss.derivative_bound(np.array([r]), np.array([params.label_bound]),
                                        params.domain)[0]) * r
        radius = min(radius, 2.0 * g)
    return radius


class TokenADMM(Algorithm):
    __doc__ = __doc__

    #: at an iteration's end a token may be on its way between two agents (sent, not yet
    #: received): no agent's state holds it, so a per-agent checkpoint cannot either. At
    #: the run's end every agent holds the released token: the final state is saved, and
    #: the run can be extended from it (:meth:`extend`)
    no_checkpoint = ("its token may be in flight between two agents at an iteration's "
                     "end, in no agent's state")
    name = "token-admm"
    summary = "noisy gradient ADMM as a token on the graph, amplification per observer (Chan et al. 2023)"
    private = True
    uses_records = True
    Params = TokenADMMParams
    positive = ("eta", "beta")
    non_negative = {"sigma": "sigma is the noise of each iteration (0: no privacy, reported "
                             "as unbounded)",
                    "nu": "nu is the smoothness of every record's f (0: from the loss and "
                          "algorithm.feature_bound)",
                    "mu": "mu is the strong convexity of every record's f (0: none)"}
    choices = {"schedule": TOKEN_SCHEDULES, "bound": BOUNDS, "exponent": EXPONENTS}
    param_checks = (_check_params,)
    config_checks = (_check_problem,)

    @staticmethod
    def plans_for(params: TokenADMMParams, graph, iterations: int, counts,
                  seed: int) -> list[TokenPlan]:
        """Every chain's public plan; ConfigError when the schedule cannot run."""
        K = graph.number_of_nodes()
        if params.start >= K:
            raise ConfigError(f"algorithm.start = {params.start} is not an agent (0..{K - 1})",
                              "start the token at an agent of the graph")
        return [plan_chain(params.schedule, graph, iterations, counts, seed, c,
                           start=params.start, reuse=params.reuse,
                           name=f"the topology with {K} agents")
                for c in range(params.chains)]

    @classmethod
    def check_graph(cls, cfg, graph) -> None:
        """Refuse before MPI starts a schedule the graph cannot carry: a ring without a
        Hamiltonian cycle, a walk or relays on a disconnected graph, a start off the graph."""
        params, K = cfg.algorithm.params, graph.number_of_nodes()
        if params.start >= K:
            raise ConfigError(f"algorithm.start = {params.start} is not an agent (0..{K - 1})",
                              "start the token at an agent of the graph")
        name = f"the topology with {K} agents"
        if params.schedule == "ring":
            walks.hamiltonian_cycle(graph, name=name)
        else:
            walks.spanning_tree(graph, params.start, name=name)

    @classmethod
    def check_setup(cls, cfg, graph, counts) -> None:
        """Refuse before launch (``mpi_privopt check``) what the set-up would refuse."""
        cls.plans_for(cfg.algorithm.params, graph, cfg.run.iterations, counts, cfg.run.seed)

    def __init__(self, agent, params: TokenADMMParams) -> None:
        super().__init__(agent, params)
        records = self.records = agent.problem
        n = self.dim = records.n_features
        self.penalty = ElasticNetPenalty(records.c1, records.c2)
        #: the iterations the plans cover (a resume that extends the run raises it)
        self.iterations = agent.iterations
        self.plans = self.plans_for(params, agent.graph, agent.iterations, records.counts,
                                    agent.seed)
        self.channels = self._channels()
        #: per chain, the last step after which the token was released to every agent
        #: (an earlier part's final release, when the run was extended; -1: none)
        self.released_after = [-1] * params.chains
        mode = agent.privacy.noise if agent.privacy is not None else "fast"
        self.noise = [chain_noise(mode, agent.seed, agent.id, c) for c in range(params.chains)]
        self.delta_radius = replace_one_radius(params, records.loss)
        #: what one iteration's record moves the released x~' by, as booked (the grid's
        #: rounding in secure mode added): eta Delta / (1 + eta beta)
        self.sensitivity = self.noise[0].effective_sensitivity(
            x_sensitivity(params.eta, params.beta, self.delta_radius), n)
        nu = params.nu or (records.loss.max_curvature * params.feature_bound ** 2)
        if not math.isfinite(nu):  # bound = "local" (checked): nu is never used
            nu = 1.0
        self.constants = AmplificationConstants(
            eta=params.eta, beta=params.beta, nu=nu, mu=params.mu,
            mu_g=self.penalty.strong_convexity, bound=params.bound, exponent=params.exponent)
        applies, why = bound_applies(self.constants)
        #: the one set-up message when the requested bound does not apply ('' when it
        #: does); the engine prints it once (rank 0) and the summary keeps it
        self.setup_note = "" if applies else f"algorithm.bound = {params.bound!r}: {why}"
        self.private_events = params.sigma > 0 and math.isfinite(self.delta_radius)
        # the token as this agent last saw it, per chain (x~ then lambda)
        initial = np.concatenate([np.full(n, float(params.x0)), np.zeros(n)])
        self.initial = initial
        self.tokens = [initial.copy() for _ in range(params.chains)]

    def _channels(self) -> list:
        """One token channel per chain along its plan (collective: every rank, in order)."""
        # imported here: the token channel brings MPI, which the checks made before MPI
        # starts (prelaunch: config and graph) must not load
        from ...network.token_channel import TokenChannel
        agent = self.agent
        return [TokenChannel(agent.net, plan.holders, 2 * self.dim, phase="token", chain=c,
                             tree=walks.spanning_tree(agent.graph, int(plan.holders[-1])))
                for c, plan in enumerate(self.plans)]

    def extend(self, fresh: "TokenADMM", iterations: int) -> None:
        """Go on past the end this restored state reached, to ``iterations``.

        ``fresh`` is the method the resume's set-up made for ``iterations``: its public
        plans must begin with the ones run so far (they do: every schedule is drawn step
        by step from the chain's stream). At the end every agent was released the token,
        so the next holder starts from its own copy (no message), and each observer has
        seen every iteration done before it (:meth:`TokenPlan.seen`'s ``released``).
        Collective: the channels are made again on every rank.
        """
        for c, (old, new) in enumerate(zip(self.plans, fresh.plans)):
            done = old.steps.size
            if not (np.array_equal(old.holders, new.holders[:old.n_steps])
                    and np.array_equal(old.steps, new.steps[:done])
                    and np.array_equal(old.records, new.records[:done])):
                raise ConfigError(
                    f"token-admm cannot extend chain {c} to run.iterations = {iterations}: "
                    f"its schedule for {iterations} iterations does not begin with the one "
                    f"of the {self.iterations} run so far",
                    "start a new run with the larger run.iterations")
        self.plans, self.iterations = fresh.plans, iterations
        self.channels = self._channels()

    # -- privacy events ---------------------------------------------------------------------

    def _event(self, plan: TokenPlan, i: int, k: int) -> PrivacyEvent:
        """What an observer learns of iteration i's record, seen k noisy iterations later."""
        owner, record = int(plan.owners[i]), int(plan.records[i])
        if not self.private_events:
            return NonPrivateEvent(UNBOUNDED_NOTE, owner=owner, record=record)
        base = GaussianEvent(self.sensitivity, self.params.sigma, owner=owner, unit="record",
                             record=record)
        return AmplifiedGaussianEvent(base, k, self.constants, owner=owner, unit="record",
                                      record=record)

    def _release(self, c: int, token: np.ndarray, observer: int, at: int) -> Release:
        """The token of chain c as ``observer`` sees it after step ``at``, with what it
        learns."""
        plan = self.plans[c]
        events = [self._event(plan, i, k)
                  for i, k in plan.seen(observer, at, self.released_after[c])]
        if not events:  # nothing new since its previous sighting: post-processing
            return Release.public(token)
        return Release(token, events[0], tuple(events[1:]))

    # -- one iteration ------------------------------------------------------------------------

    def _iterate(self, c: int, i: int, token: np.ndarray) -> np.ndarray:
        """Iteration i of chain c on this agent's record: the new token (x~', lam')."""
        n, params, plan = self.dim, self.params, self.plans[c]
        x_tilde, lam = token[:n], token[n:]
        gradient = self.records.gradient(plan.local_index(i), x_tilde, params.clip)
        _, lam_new, x_new = iteration(x_tilde, lam, gradient, self.penalty, params.beta,
                                      params.eta)
        if params.sigma > 0:
            noise = self.noise[c]
            x_new = noise.round_to_grid(x_new) + noise.gaussian(params.sigma, n)
        return np.concatenate([x_new, lam_new])

    def gradient_step(self, n: int) -> tuple[str, float, float | None]:
        """(7)'s step on the record's gradient, eta / (1 + eta beta); the curvature of one
        record's loss is not stated by the problem."""
        eta = self.params.eta
        return ("algorithm.eta", eta / (1.0 + eta * self.params.beta), None)

    def step(self, n: int) -> None:
        i = n - 1
        me = self.agent.id
        for c, (plan, channel) in enumerate(zip(self.plans, self.channels)):
            for s in plan.window(i):
                if not channel.holds(s):
                    continue
                if s == 0:
                    token = self.initial
                elif s - 1 == self.released_after[c]:
                    # the earlier part's end released the token to every agent: this
                    # holder has it already (the bits the last holder would have sent)
                    token = np.array(self.tokens[c], copy=True)
                else:
                    token = channel.receive(s)
                if s == plan.steps[i]:
                    token = self._iterate(c, i, token)
                self.tokens[c] = np.array(token, copy=True)
                if s + 1 < plan.n_steps:
                    following = int(plan.holders[s + 1])
                    if following != me:
                        channel.pass_on(self._release(c, token, following, s), s)
                    else:
                        channel.pass_on(Release.public(token), s)
        if n == self.iterations:
            self._finish()

    def _finish(self) -> None:
        """The final release of every chain along its public spanning tree."""
        for c, (plan, channel) in enumerate(zip(self.plans, self.channels)):
            last = plan.n_steps - 1
            mine = self.tokens[c] if channel.holds(last) else None
            for_child = (lambda token, v, c=c, last=last:
                         self._release(c, np.array(token, copy=True), v, last))
            final = channel.finish(None if mine is None else Release.public(mine),
                                   for_child=for_child)
            self.tokens[c] = np.array(final, copy=True)
            self.released_after[c] = last

    @property
    def estimate(self) -> np.ndarray:
        """x~ of chain 0 as this agent last saw it (after the run: the released token)."""
        return self.tokens[0][:self.dim]

    @classmethod
    def audit(cls):
        """The token's trial audit, through :meth:`_iterate` (the family's audit.py)."""
        from .audit import TokenAudit
        return TokenAudit()

    def report(self) -> dict:
        p = self.params
        local_rho = (math.inf if not self.private_events
                     else booked_local_rho(p.eta, p.beta, self.delta_radius, p.sigma))
        out = {"schedule": p.schedule, "chains": p.chains, "Delta": self.delta_radius,
               "local_rho": local_rho, "bound": booked_bound(self.constants),
               "exponent": p.exponent, "nu": self.constants.nu,
               "records": int(self.records.n_records)}
        if self.setup_note:
            out["bound_note"] = self.setup_note
        return out
