"""What a run service sees of a run, and the points at which the engine calls it.

A run service (a checkpoint, the stop on a signal, a test's fault) never reads the
engine's session: the engine hands it a :class:`RunContext` (the run's fixed facts and the
objects the loop carries, frozen once set-up and any resume are done) and a
:class:`LoopState` (the loop's times and whether the agents agreed to stop, the only
values that change while the loop runs). The hook points (docs/architecture.md, "Run
services"):

``after_iteration(ctx, loop, n)``  after iteration ``n`` and its evaluation, in the order
                                   the engine lists the services (a fault, then the
                                   agreement on a signal, then a due checkpoint)
``at_end(ctx, loop)``              the first step of the run's ordered end
                                   (mpi_privopt/run_commit.py): the final state
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from mpi4py import MPI

    from ..config import Config
    from ..network import Network
    from ..privacy.ledger import Ledger
    from ..results import RunDirectory
    from .divergence import DivergenceGuard

__all__ = ["CarriedState", "LoopState", "RunContext", "RunService"]


@dataclass(frozen=True)
class CarriedState:
    """The objects the loop carries from one iteration to the next: what a checkpoint
    saves and a resume replaces (the resume makes a new one; nothing assigns a field)."""

    algorithm: Any
    net: Network
    ledger: Ledger
    divergence: DivergenceGuard
    #: the agent's noise source (the algorithm's agent's, after a resume)
    noise: Any
    #: the agent's local problem, shared with the monitor's evaluator: saved by its
    #: attributes and put back into this very object (mpi_privopt/services/checkpoint.py)
    problem: Any


@dataclass(frozen=True)
class RunContext:
    """One rank's run as the services see it: fixed once set-up (and a resume) are done."""

    cfg: Config
    #: the agents' communicator (the algorithm's) and the agreements' duplicate
    comm: MPI.Intracomm
    eval_comm: MPI.Intracomm
    run_dir: str
    graph: Any
    #: where rank 0 prints (None on the other ranks, or silent)
    stream: TextIO | None
    #: rank 0's run directory writer (None on the other ranks)
    directory: RunDirectory | None
    state: CarriedState
    #: whether the run's end saves its final state: not for a run with an ``on_setup``
    #: hook (an attack, an audit, a test's spy), which attaches what is not the run's own
    #: state and which a resume could not attach again
    final_state: bool = True

    @property
    def rank(self) -> int:
        return self.comm.Get_rank()

    @property
    def size(self) -> int:
        return self.comm.Get_size()


@dataclass
class LoopState:
    """The loop's values that change while it runs, by name (the engine keeps them)."""

    #: the loop's clock origin (``perf_counter``; a resumed run's goes on from its own)
    start: float = 0.0
    #: seconds spent evaluating so far, and the run's wall time once the loop is over
    eval_seconds: float = 0.0
    wall_seconds: float = 0.0
    #: the signal every agent agreed to stop on (0: none) and the iteration it stopped at
    stop_signal: int = 0
    stopped_at: int | None = None
    #: completes this rank's metrics rows in flight (before a checkpoint, so that
    #: metrics.csv holds every row up to it)
    flush_rows: Callable[[], None] = field(default=lambda: None)

    def algorithm_seconds(self) -> float:
        """The loop's time so far outside evaluations."""
        return perf_counter() - self.start - self.eval_seconds

    def end(self, iterations: int) -> int:
        """The iteration the run ends at: where the agents stopped, else the last one."""
        return self.stopped_at if self.stop_signal else iterations


class RunService(Protocol):
    """A service the engine calls at its named points (module docstring)."""

    def after_iteration(self, ctx: RunContext, loop: LoopState, n: int) -> None:
        """After iteration ``n``; may set ``loop.stop_signal`` (every agent stops here)."""

    def at_end(self, ctx: RunContext, loop: LoopState) -> str:
        """The run's end; '' when done, else what could not be done (a warning)."""
