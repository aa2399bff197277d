"""The contract every algorithm meets, and its registry."""
from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .. import display
from ..agent import Agent
from ..errors import ConfigError
from ..lazy_table import LazyTable
from .steps import SCHEDULES

def _is_method_class(name: str, cls: object, where: str) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Algorithm) and cls.name == name):
        raise KeyError(f"{where} is not the class of algorithm {name!r}")


class Registry(LazyTable):
    """``name -> class``; a packaged method's module is imported on first lookup.

    The names and classes of the packaged methods are known in advance (``lazy``: each
    family's ``METHODS`` table), so listing, ``in`` and ``len`` import nothing, and looking
    up one method imports only its module (and what that needs): a run of ``zcdp-nfl`` does
    not load the other methods' libraries on every rank. A class registered at run time
    (a test's, a user module's) through :func:`register` is simply stored.
    """

    def __init__(self, lazy: dict[str, str] | None = None) -> None:
        super().__init__(lazy, verify=_is_method_class)


ALGORITHMS: Registry = Registry()


def register(cls: type["Algorithm"]) -> type["Algorithm"]:
    """Class decorator adding an algorithm to :data:`ALGORITHMS` under ``cls.name``."""
    ALGORITHMS[cls.name] = cls
    return cls


class Algorithm(ABC):
    """One agent's side of a decentralized method, and the contract every method meets.

    Subclasses read like the paper: the class docstring carries the update equations and
    says which message goes on which link in which phase. They talk to other agents only
    through ``agent.net`` and never call mpi4py.

    Every hook the rest of the package asks of a method is declared here with its default
    (docs/architecture.md, "The Method contract"); nothing outside the registry probes a
    method with ``getattr`` or compares its name. A subclass overrides only what differs
    (tests/unit/test_method_contract.py checks that it defines no other public name).

    Class attributes
    ----------------
    name : str
        Registry name (``algorithm.name`` in the config).
    summary : str
        One line for ``mpi_privopt list``.
    private : bool
        Whether every data-dependent message goes through a privacy mechanism.
    requires_undirected : bool
        Whether the method needs symmetric links.
    problem_kind : str
        The kind of problem it solves, one of
        :data:`~mpi_privopt.problems.registry.PROBLEM_KINDS`: ``"consensus"`` (one mean
        objective, each agent a local f_k) or ``"aggregative"`` (Chen & Wang 2025's
        ``sum_i f_i(x_i, g(x))``). ``load_config`` refuses a problem of another kind.
    uses_records : bool
        Whether ``agent.problem`` is the agent's records of one mean objective
        (:class:`~mpi_privopt.problems.consensus.records.Records`, a token method) instead of its
        local objective f_k (consensus problems only).
    pure_headline : bool
        Whether the method is a pure local-DP method whose ``summary.json`` headline is
        the pure epsilon at delta = 0, never an (epsilon, delta) conversion (read by
        ``run_commit`` when it writes the summary).
    min_agents : int
        The fewest agents it can run with (:meth:`check_agent_count`).
    Params : dataclass
        The algorithm's keys in the ``[algorithm]`` section, with defaults.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    private: ClassVar[bool] = False
    requires_undirected: ClassVar[bool] = True
    problem_kind: ClassVar[str] = "consensus"
    uses_records: ClassVar[bool] = False
    pure_headline: ClassVar[bool] = False
    #: the fewest agents the method can run with (a method that must send its neighbours
    #: something at set-up cannot run alone)
    min_agents: ClassVar[int] = 1
    #: why the method cannot be checkpointed ("" = it can: its whole state between two
    #: iterations is in its agent's objects; mpi_privopt/services/checkpoint.py)
    no_checkpoint: ClassVar[str] = ""
    #: what the method's state is, for its checkpoints: the attributes of the method object
    #: that change from one iteration to the next (its ``agent``, which holds the network,
    #: random streams and noise source, is always saved). A checkpoint saves only these,
    #: as JSON and arrays (mpi_privopt/services/state_codec.py), and a resume takes every
    #: other attribute from its fresh set-up (what the method computes from the config and
    #: the data: a large precomputed matrix, or an object that cannot be saved, such as a
    #: module or a lock). None (the default): every attribute is saved.
    checkpoint_fields: ClassVar[tuple[str, ...] | None] = None
    #: the blocks of each packed per-block message (Chen & Wang 2025's x, y, z), in order;
    #: () for a method that does not send packed blocks (:meth:`block_budgets`)
    blocks: ClassVar[tuple[str, ...]] = ()

    @dataclasses.dataclass
    class Params:
        pass

    #: Params fields that must be strictly positive.
    positive: ClassVar[tuple[str, ...]] = ()
    #: Params fields that must be >= 0, with what the field means (said when it is not).
    non_negative: ClassVar[dict[str, str]] = {}
    #: Params fields that name one of a few options, with the options; a field is checked
    #: only where the method's Params has it.
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"schedule": SCHEDULES}
    #: further checks of the Params, shared between methods as functions
    #: (``check(name, params)`` raises ConfigError), run after the ones above
    param_checks: ClassVar[tuple[Callable, ...]] = ()
    #: checks of the whole config (``check(name, cfg)``), run by :meth:`validate_config`
    config_checks: ClassVar[tuple[Callable, ...]] = ()

    #: what the method releases on its links when it is one perturbed iterate per
    #: iteration: its :class:`~mpi_privopt.methods.perturbed.IterateRelease` (set in
    #: ``__init__``), whose ``mechanism`` the audit wraps
    #: (:func:`~mpi_privopt.audit.harness.mechanism_of`). None (the default): the method
    #: releases some other way (a token, packed blocks, shares), so no mechanism to wrap.
    release: object | None = None  # an IterateRelease (perturbed.py imports this module)
    #: what the method decided at set-up and the user should know, one line ("" = nothing);
    #: set in ``__init__``; the engine prints it once (rank 0) before the first iteration
    setup_note: str = ""
    #: what every epsilon the run books is when it is not a proven bound, shown beside each
    #: one it prints or writes (the progress line, budget messages, metrics.csv, the
    #: summary, privacy.json, ``report``); None (the default): they are proven bounds. A
    #: method with a nominal accounting overrides it (the aggregative methods:
    #: :func:`~mpi_privopt.methods.chen2025.ldp_budget.report_epsilon_label`)
    epsilon_label: str | None = None

    @classmethod
    def check_agent_count(cls, n_agents: int) -> None:
        """Raise ConfigError if the method cannot run with ``n_agents`` agents."""
        if n_agents < cls.min_agents:
            started = (" (a single process: was it started without mpiexec?)"
                       if n_agents == 1 else "")
            raise ConfigError(
                f"{cls.name!r} needs at least {display.counted(cls.min_agents, 'agent')}; "
                f"this run has {n_agents}{started}",
                f"start {cls.min_agents} or more ranks, e.g. mpiexec -n {max(cls.min_agents, 4)} "
                "python -m mpi4py -m mpi_privopt run ...")

    @classmethod
    def validate(cls, params: "Algorithm.Params") -> None:
        """Raise ConfigError for parameter values the method cannot run with."""
        for key in cls.positive:
            value = getattr(params, key)
            if not value > 0:
                raise ConfigError(f"algorithm.{key} = {value} must be positive for {cls.name!r}",
                                  f"set algorithm.{key} to a value > 0")
        for key, meaning in cls.non_negative.items():
            value = getattr(params, key)
            if not value >= 0:
                raise ConfigError(f"algorithm.{key} = {value} must be >= 0 for {cls.name!r}",
                                  f"{meaning}; set algorithm.{key} to a value >= 0")
        for key, options in cls.choices.items():
            value = getattr(params, key, None)
            if value is not None and value not in options:
                raise ConfigError(f"algorithm.{key} = {value!r} is unknown for {cls.name!r}",
                                  f"valid: {', '.join(options)}")
        for check in cls.param_checks:
            check(cls.name, params)

    @classmethod
    def noise_schedule(cls, cfg):
        """The noise schedule a run of ``cfg`` calibrates, known before any agent exists
        (``check`` warns when its scale anywhere on the horizon is absurd); None when the
        method has no calibrated schedule to look at (the default)."""
        return None

    @classmethod
    def validate_config(cls, cfg) -> None:
        """Raise ConfigError when other sections do not suit the method (e.g. no budget)."""
        for check in cls.config_checks:
            check(cls.name, cfg)

    @classmethod
    def check_graph(cls, cfg, graph) -> None:
        """Raise ConfigError when the method cannot run on ``graph`` (a networkx graph of
        the run's agents), e.g. a token ring on a graph without a Hamiltonian cycle.

        Called before MPI starts, by ``prelaunch.check_run_input`` (``run``, ``check``,
        ``launch``), once the config is loaded and the graph built. Default: any graph.
        """

    @classmethod
    def check_setup(cls, cfg, graph, counts: list[int]) -> None:
        """Raise ConfigError for what the method's set-up would refuse once it sees the
        graph and every agent's record count ``counts`` (e.g. a token schedule).

        Called by ``mpi_privopt check`` (cli.py) after loading every agent's data, so
        the check refuses before launch what the run would refuse at set-up. Default:
        nothing to refuse.
        """

    @classmethod
    def audit(cls):
        """The white-box audit of this method: a
        :class:`~mpi_privopt.audit.method_audit.MethodAudit` (how the audit attaches its
        trials to the method's releases and summarises them), or None (the default): no audit.

        Called by the audit runner (``mpi_privopt audit``) and by
        :func:`~mpi_privopt.audit.canary.counterfactual`; the family owns its audit, so a
        method imports its audit module here, inside the hook (the audit loads the
        method's modules, not the other way round).
        """
        return None

    @classmethod
    def share_basis(cls, params: "Algorithm.Params", dim: int) -> np.ndarray | None:
        """The public exponents of the masking polynomials the method shares at set-up
        (function sharing, Gade & Vaidya 2017), which the curious-neighbour attack
        (methods/gade2017/attacks/runner.py) subtracts from what it inverts; None (the default): the method
        shares no mask.
        """
        return None

    @classmethod
    def block_budgets(cls, params: "Algorithm.Params", agent: int,
                      n_agents: int) -> dict | None:
        """The noise budgets of agent ``agent``'s packed per-block messages, noisy blocks
        only (block -> an object with ``sensitivity(t)`` and ``scale(t)``, the method's own
        construction), for a method that sends packed Laplace blocks (:attr:`blocks`);
        None (the default): it does not.

        Called by the Chen & Wang reproduction (methods/chen2025/reproduce/panels.py) to
        draw a budget curve without running the method.
        """
        return None

    @classmethod
    def released_after(cls, n: int) -> int:
        """How many messages (t = 0, 1, ...) the method has sent after ``n`` iterations.

        Default ``n``: one per iteration. Read with :meth:`block_budgets`.
        """
        return n

    def __init__(self, agent: Agent, params: "Algorithm.Params") -> None:
        self.agent = agent
        self.params = params

    @abstractmethod
    def step(self, n: int) -> None:
        """Run iteration ``n`` (n = 1, 2, ...): local computation and messages."""

    @property
    @abstractmethod
    def estimate(self) -> np.ndarray:
        """The agent's current model w_k, the one the metrics evaluate."""

    def planned_events(self, first: int, last: int) -> list | None:
        """The privacy events of iterations ``first`` .. ``last`` as one observer sees them,
        when the method knows them before it runs (its noise schedule is public).

        Called on every rank by a resume (mpi_privopt/services/resume.py) and by the audit
        runner (a pure-epsilon audit's planned epsilon). A resume is refused before any
        release when they would take the agent past ``privacy.epsilon``. None (the
        default): not known ahead; the ledger's guard then refuses the first release over
        the budget.
        """
        return None

    def gradient_step(self, n: int) -> tuple[str, float, float | None] | None:
        """The gradient step this agent takes at iteration ``n``, for the divergence guard
        to set against the curvature it descends (mpi_privopt/services/divergence.py):
        ``(key, step, curvature)``, the config key that sets the step, the step's value
        (the factor in front of the gradient) and the Lipschitz constant of the gradient
        (None when the problem does not know it). None (the default): no gradient step
        to measure.
        """
        return None

    def extend(self, fresh: "Algorithm", iterations: int) -> None:
        """Go on past the iterations this (restored) method was set up for, to
        ``iterations``, taking what depends on the run's length from ``fresh`` (the method
        the resume's set-up made for ``iterations``).

        Called on every rank by a resume that extends a run
        (mpi_privopt/services/resume.py), before it checks the planned releases against the
        budget. Default: nothing to do
        (the method's state does not depend on the number of iterations; a token method's
        public schedule does).
        """

    def report(self) -> dict:
        """Extra facts for ``summary.json`` (rank 0's instance is asked), e.g. a certificate.

        Called by rank 0 at the end of a run (run_commit.py). Keys become
        ``summary["algorithm_report"]``; the summary table prints each one.
        """
        return {}
