"""The contract every algorithm meets, and its registry."""
from __future__ import annotations

import dataclasses
import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, MutableMapping
from typing import ClassVar

import numpy as np

from ..agent import Agent
from ..errors import ConfigError
from .steps import SCHEDULES

class Registry(MutableMapping):
    """``name -> class``; a packaged method's module is imported on first lookup.

    The names and classes of the packaged methods are known in advance (``lazy``: each
    family's ``METHODS`` table), so listing, ``in`` and ``len`` import nothing, and looking
    up one method imports only its module (and what that needs): a run of ``zcdp-nfl`` does
    not load the other methods' libraries on every rank. A class registered at run time
    (a test's, a user module's) through :func:`register` is simply stored.
    """

    def __init__(self, lazy: dict[str, str] | None = None) -> None:
        self._classes: dict[str, type[Algorithm]] = {}
        self._lazy: dict[str, str] = dict(lazy or {})

    def add_lazy(self, classes: dict[str, str]) -> None:
        """Name where each of these methods' class is: ``"package.module:Class"``."""
        self._lazy.update(classes)

    def __getitem__(self, name: str) -> type["Algorithm"]:
        cls = self._classes.get(name)
        if cls is None and name in self._lazy:
            module, _, attr = self._lazy[name].partition(":")
            cls = getattr(importlib.import_module(module), attr, None)
            if cls is None or getattr(cls, "name", None) != name:
                raise KeyError(f"{self._lazy[name]} is not the class of algorithm {name!r}")
            self._classes[name] = cls
        if cls is None:
            raise KeyError(name)
        return cls

    def __setitem__(self, name: str, cls: type["Algorithm"]) -> None:
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._classes.pop(name, None)
        self._lazy.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._classes or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._lazy, *self._classes]))

    def __len__(self) -> int:
        return len(set(self._lazy) | set(self._classes))

    def __repr__(self) -> str:
        return f"Registry({sorted(self)})"


ALGORITHMS: Registry = Registry()


def register(cls: type["Algorithm"]) -> type["Algorithm"]:
    """Class decorator adding an algorithm to :data:`ALGORITHMS` under ``cls.name``."""
    ALGORITHMS[cls.name] = cls
    return cls


class Algorithm(ABC):
    """One agent's side of a decentralized method.

    Subclasses read like the paper: the class docstring carries the update equations and
    says which message goes on which link in which phase. They talk to other agents only
    through ``agent.net`` and never call mpi4py.

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
    uses_records : bool
        Whether ``agent.problem`` is the agent's records of one mean objective
        (:class:`~mpi_privopt.problems.consensus.records.Records`, a token method) instead of its
        local objective f_k.
    min_agents : int
        The fewest agents it can run with (:meth:`check_agent_count`).
    Params : dataclass
        The algorithm's keys in the ``[algorithm]`` section, with defaults.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    private: ClassVar[bool] = False
    requires_undirected: ClassVar[bool] = True
    uses_records: ClassVar[bool] = False
    #: the fewest agents the method can run with (a method that must send its neighbours
    #: something at set-up cannot run alone)
    min_agents: ClassVar[int] = 1
    #: why the method cannot be checkpointed ("" = it can: its whole state between two
    #: iterations is in its agent's objects; mpi_privopt/services/checkpoint.py)
    no_checkpoint: ClassVar[str] = ""

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

    @classmethod
    def check_agent_count(cls, n_agents: int) -> None:
        """Raise ConfigError if the method cannot run with ``n_agents`` agents."""
        if n_agents < cls.min_agents:
            started = (" (a single process: was it started without mpiexec?)"
                       if n_agents == 1 else "")
            raise ConfigError(
                f"{cls.name!r} needs at least {cls.min_agents} agents; this run has "
                f"{n_agents}{started}",
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

        A resume asks, and is refused before any release when they would take the agent
        past ``privacy.epsilon`` (mpi_privopt/services/resume.py). None (the default): not
        known ahead; the ledger's guard then refuses the first release over the budget.
        """
        return None

    def report(self) -> dict:
        """Extra facts for ``summary.json`` (rank 0's instance is asked), e.g. a certificate.

        Keys become ``summary["algorithm_report"]``; the summary table prints each one.
        """
        return {}
