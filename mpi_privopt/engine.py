"""The run loop on every rank, in four named steps: set up, iterate, evaluate, finish.

Every rank runs :func:`run`. Setup steps that can fail on bad input run under
:func:`~mpi_privopt.mpiutil.agree`, so all ranks stop together with one message. The
evaluation uses its own communicator (a duplicate of the world), never counted as the
algorithm's traffic. What it carries depends on ``run.evaluate``:

``reference``  simulation: every agent's data once (the centralised reference), the
               average model at each evaluation, every final model (``models.npz``)
``local``      per-agent scalars at each evaluation; each agent writes its own model
``none``       deployment: only setup agreement (config and graph hashes, the run
               directory) and the end-of-run counters of traffic meters and ledgers

One iteration's data: ``algorithm.step(n)`` computes on the agent's own data and sends
releases through ``net`` (metered and booked by the ledger on the same send path);
every ``eval_every`` iterations :func:`evaluate` hands the agent's estimate and its two
cost counters to the monitor, which reduces per-agent quantities to one row on rank 0.
"""
from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import dataclass, field
from time import perf_counter
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np
from mpi4py import MPI

from . import display, topology
from .agent import Agent
from .methods import ALGORITHMS
from .mpiutil import agree, computed_once
from .config import Config
from .errors import ConfigError, PrivacyBudgetExceeded, TopologyError
from .monitor import Evaluation, Monitor, sent_bytes
from .network import Network, set_sample_every, sleeping_barrier, while_sleeping
from .privacy.accountants import Budget
from .privacy.ledger import Ledger
from .privacy.noise import agent_noise
from .problem_setup import ProblemSetup, build_problems
from .prelaunch import build_graph, run_graph  # noqa: F401  (the runners import build_graph)
from .services.progress import Progress, progress_line
from .results import RunDirectory, choose_run_dir, release_run_dir, write_json
from .summary import EVALUATION_NOTES
from .services.budget_stop import speak_for_stopped_agents, stop_record_path
from .services.divergence import Diverged, DivergenceGuard, NoiseWatch
from . import run_lock
from .services import faults, watchdog
from .services.base import CarriedState, LoopState, RunContext, RunService
from .services.checkpoint import Checkpointer, can_save, refuse_unsaveable
from .services.faults import FaultInjection
from .services.resume import Resume, check_resume_input, loop_start, resume_run
from .services.stop_signal import StopOnSignal
# the end of a run: one ordered commit (RunResult and finish kept importable from here)
from .run_commit import RunResult, SignalHold, finish  # noqa: F401


def config_hash(cfg: Config) -> str:
    """A digest of the resolved configuration, for the ranks to agree on."""
    return hashlib.sha256(cfg.to_toml().encode()).hexdigest()


def _confirm_same_config(comm: MPI.Intracomm, cfg: Config) -> None:
    hashes = comm.allgather(config_hash(cfg))
    if len(set(hashes)) != 1:
        differing = [r for r, h in enumerate(hashes) if h != hashes[0]]
        raise ConfigError(
            f"ranks resolved different configurations (ranks {differing} differ from rank 0)",
            "give every rank the same config file and --set overrides (a shared filesystem)")


def _confirm_same_graph(comm: MPI.Intracomm, graph) -> None:
    hashes = comm.allgather(topology.graph_hash(graph))
    if len(set(hashes)) != 1:
        differing = [r for r, h in enumerate(hashes) if h != hashes[0]]
        raise TopologyError(
            f"ranks built different graphs (ranks {differing} differ from rank 0)",
            "make every rank read the same config and edge-list file (a shared filesystem)")


def _progress_every(cfg: Config) -> int:
    if cfg.run.progress_every:
        return cfg.run.progress_every
    return max(1, cfg.run.iterations // 10)


def _print(stream: TextIO | None, text: str) -> None:
    if stream is not None:
        print(text, file=stream, flush=True)


@dataclass
class Session:
    """Everything one rank holds during a run (made by :func:`set_up`).

    The run services (mpi_privopt/services/) see only its :attr:`ctx` (what is fixed once
    set-up and a resume are done) and :attr:`loop` (what the loop changes); the properties
    below read both by their plain names.
    """

    ctx: RunContext
    problem: ProblemSetup
    monitor: Monitor
    #: checkpoints (mpi_privopt/services/checkpoint.py)
    checkpoints: Checkpointer
    loop: LoopState = field(default_factory=LoopState)
    metrics: list[Evaluation] = field(default_factory=list)
    diverged: list | None = None
    progress: Progress | None = None  # rank 0's line on stderr, when shown
    resumed: Resume | None = None  # when the session continues a run

    cfg = property(lambda self: self.ctx.cfg)
    comm = property(lambda self: self.ctx.comm)
    eval_comm = property(lambda self: self.ctx.eval_comm)
    stream = property(lambda self: self.ctx.stream)
    graph = property(lambda self: self.ctx.graph)
    run_dir = property(lambda self: self.ctx.run_dir)
    directory = property(lambda self: self.ctx.directory)
    #: whether the run's end saves its final state (:class:`RunContext`)
    final_state = property(lambda self: self.ctx.final_state)
    algorithm = property(lambda self: self.ctx.state.algorithm)
    net = property(lambda self: self.ctx.state.net)
    ledger = property(lambda self: self.ctx.state.ledger)
    noise = property(lambda self: self.ctx.state.noise)
    divergence = property(lambda self: self.ctx.state.divergence)
    @property
    def rank(self) -> int:
        return self.comm.Get_rank()

    @property
    def root(self) -> bool:
        return self.rank == 0


def run(cfg: Config, out: str | None = None, comm: MPI.Intracomm | None = None,
        stream: TextIO | None = sys.stdout,
        on_setup: Callable[[Agent, Any], None] | None = None,
        progress: bool | None = None, resume: bool = False,
        leaving: bool = False) -> RunResult | None:
    """Run ``cfg`` with one agent per rank of ``comm``.

    Parameters
    ----------
    cfg : Config
        The validated configuration (identical on every rank).
    out : str, optional
        Run directory; a fresh one under ``runs/`` if None.
    comm : MPI.Intracomm, optional
        The agents' communicator, ``COMM_WORLD`` by default.
    stream : file, optional
        Where rank 0 prints progress and the summary (None: silent).
    on_setup : callable, optional
        Called on every rank as ``on_setup(agent, algorithm)`` before the first iteration,
        e.g. to attach a receive listener that models a curious neighbour.
    progress : bool, optional
        Rank 0's progress line on stderr (:mod:`mpi_privopt.services.progress`); None: as
        ``run.progress`` says (``auto``: when a person watches, :mod:`mpi_privopt.watching`).
    resume : bool, optional
        Continue the run in ``out`` from its last checkpoint (``cfg`` may differ from the
        run's only in ``run.iterations``); from a final checkpoint at ``run.iterations``,
        only write the run's results (mpi_privopt/run_commit.py).
    leaving : bool, optional
        The caller leaves the process right after (the command line): SIGTERM and SIGINT
        are held from the end of the loop until the process exits, and ignored from its
        exit callbacks on, so that a signal after the results are written (during
        ``MPI_Finalize`` too) cannot end a completed run with a signal's status. Otherwise
        the caller's handlers are put back when the run returns.

    Returns
    -------
    RunResult or None
        On rank 0 the result; None on the other ranks.
    """
    comm = comm or MPI.COMM_WORLD
    eval_comm = comm.Dup()  # the monitor's channel: never algorithm traffic
    hold = SignalHold()  # from the end of the loop: signals wait for the commit
    try:
        # numpy's error state as the caller had it once the run returns (a run whose
        # iterate diverged silences its floating-point warnings: _loop)
        with np.errstate():
            session = set_up(cfg, out, comm, eval_comm,
                             stream if comm.Get_rank() == 0 else None, on_setup, resume)
            if session.root:
                mode = cfg.run.progress if progress is None else ("on" if progress else "off")
                session.progress = progress_line(mode, cfg.run.iterations,
                                                 epsilon_label=session.ledger.epsilon_label)
            try:
                iterate(session, hold)
            finally:
                if session.progress is not None:
                    session.progress.close()
            return finish(session)
    finally:
        run_lock.release()  # rank 0's claim of the run directory, held until now
        eval_comm.Free()
        if leaving:
            hold.keep_until_exit()
        else:
            hold.release()


def set_up(cfg: Config, out: str | None, comm: MPI.Intracomm, eval_comm: MPI.Intracomm,
           stream: TextIO | None, on_setup=None, resume: bool = False) -> Session:
    """Agree on config, graph and run directory; build problem, network, ledger, algorithm."""
    rank, n_agents = comm.Get_rank(), comm.Get_size()
    root = rank == 0
    name = cfg.run.name or cfg.algorithm.name

    agree(eval_comm, lambda: _confirm_same_config(eval_comm, cfg))
    agree(eval_comm, lambda: ALGORITHMS[cfg.algorithm.name].check_agent_count(n_agents))
    # light: the edge list the pre-MPI check left on this host, without networkx
    graph = agree(eval_comm, lambda: run_graph(cfg, n_agents))
    agree(eval_comm, lambda: _confirm_same_graph(eval_comm, graph))
    agree(eval_comm, lambda: refuse_unsaveable(cfg))
    if resume:  # the run's own directory, with its checkpoint
        agree(eval_comm, lambda: run_lock.claim(out, f"--resume {out}") if root else None)
        agree(eval_comm, lambda: check_resume_input(out, cfg, graph, n_agents))
        session = _set_up_in(out, cfg, comm, eval_comm, stream, on_setup, graph, resume)
        # the saved carried objects in place of the fresh ones (services/resume.py)
        session.ctx, session.resumed = resume_run(session.ctx, session.checkpoints)
        session.loop.eval_seconds = session.resumed.eval_seconds
        return session
    run_dir = agree(eval_comm, lambda: choose_run_dir(out, name, cfg.run.seed) if root else None)
    run_dir = eval_comm.bcast(run_dir, root=0)
    try:
        return _set_up_in(run_dir, cfg, comm, eval_comm, stream, on_setup, graph)
    except BaseException:
        if root:
            release_run_dir(run_dir)  # refused during set-up: no empty directory left
        raise


def _set_up_in(run_dir, cfg: Config, comm: MPI.Intracomm, eval_comm: MPI.Intracomm,
               stream: TextIO | None, on_setup, graph, resume: bool = False) -> Session:
    """The rest of :func:`set_up`, once the run directory is claimed."""
    rank, n_agents = comm.Get_rank(), comm.Get_size()
    root = rank == 0
    mode = cfg.run.evaluate
    method = ALGORITHMS[cfg.algorithm.name]
    problem = build_problems(cfg.problem, eval_comm, cfg.run.seed, mode,
                             records=method.uses_records)

    in_nbrs, out_nbrs = topology.neighbors(graph, rank)
    set_sample_every(cfg.run.link_time_every)  # the time per link (network/link_time.py)
    net = Network(comm, in_nbrs, out_nbrs)
    # The ledger sees every release on the same send path as the traffic meter; with a
    # budget it also refuses a release before it leaves the agent.
    # the budget's calibration (scipy's root finder) once, on rank 0, for every agent
    limits = computed_once(eval_comm, lambda: Budget.of(cfg.privacy.epsilon, cfg.privacy.delta))
    ledger = Ledger(rank, out_nbrs, cfg.privacy.delta, cfg.privacy.epsilon, limits)
    net.add_listener(ledger)
    if math.isfinite(cfg.privacy.epsilon):
        net.guards.append(ledger)
    rng = np.random.default_rng(np.random.SeedSequence(cfg.run.seed).spawn(n_agents)[rank])
    noise = agree(eval_comm, lambda: agent_noise(cfg.privacy.noise, cfg.run.seed, rank))
    agent = Agent(id=rank, n_agents=n_agents, problem=problem.local, net=net, graph=graph,
                  rng=rng, weights=cfg.topology.weights, noise=noise, privacy=cfg.privacy,
                  iterations=cfg.run.iterations, seed=cfg.run.seed,
                  once=lambda step: computed_once(eval_comm, step))
    # A method may refuse its setting only once it sees the agent (a noise schedule that
    # overflows over T, shares too large for its degree): every rank agrees, so one message.
    algorithm = agree(eval_comm, lambda: method(agent, cfg.algorithm.params))
    # a method's nominal epsilons are labelled wherever they are shown (its budget
    # messages, its stop record and checkpoints through the ledger)
    ledger.epsilon_label = algorithm.epsilon_label
    if on_setup is not None:
        on_setup(agent, algorithm)
    noise_watch = NoiseWatch()
    net.add_listener(noise_watch)
    divergence = DivergenceGuard(np.array(algorithm.estimate, dtype=float), noise_watch,
                                 mode=cfg.run.on_divergence)

    monitor = Monitor(eval_comm, problem.evaluator, mode, cfg.privacy.delta)
    directory = None
    if root:
        directory = RunDirectory(run_dir, ledger.epsilon_label)
        if not resume:  # a resume writes its config once accepted (services/resume.py)
            directory.write_config(cfg.to_toml())
            directory.write_graph(graph)
        _print(stream, f"mpi_privopt: {cfg.algorithm.name} on {cfg.problem.name}, "
                       f"{display.counted(n_agents, 'agent')}, {cfg.topology.kind} graph "
                       f"({display.counted(graph.number_of_edges(), 'edge')}), "
                       f"{display.counted(cfg.run.iterations, 'iteration')}")
        if algorithm.setup_note:  # what the method decided at set-up and the user should know
            _print(stream, f"note: {algorithm.setup_note}")
        if problem.reference is not None:
            _print(stream, f"reference optimum: {problem.reference.method}, "
                           f"F(w_c) = {display.number(problem.reference.value)}")
        else:
            _print(stream, f"evaluation: {mode} ({EVALUATION_NOTES[mode]})")
    state = CarriedState(algorithm=algorithm, net=net, ledger=ledger, divergence=divergence,
                         noise=noise, problem=problem.local)
    ctx = RunContext(cfg=cfg, comm=comm, eval_comm=eval_comm, run_dir=str(run_dir),
                     graph=graph, stream=stream, directory=directory, state=state,
                     final_state=on_setup is None)
    return Session(ctx=ctx, problem=problem, monitor=monitor, checkpoints=Checkpointer(ctx))


def iterate(s: Session, hold: SignalHold | None = None) -> None:
    """Run the algorithm's T iterations, evaluating every ``run.eval_every``; ``hold``
    takes over the signals once the loop is over (mpi_privopt/run_commit.py)."""
    iterations, eval_every = s.cfg.run.iterations, s.cfg.run.eval_every
    if s.resumed is None:
        evaluate(s, 0, 0.0)
    sleeping_barrier(s.eval_comm)  # a long wait: sleep (docs/performance.md)
    first, s.loop.start = loop_start(s.resumed)
    watch = watchdog.arm(s.run_dir, s.comm, s.cfg.run.stall_timeout)
    try:
        with StopOnSignal(s.comm, can_save(s.cfg)) as stop:
            # after each iteration, in this order (services/base.py): a test's fault, the
            # agreement on a signal, a due checkpoint (or the agreed stop's)
            services = [*([FaultInjection()] if faults.armed() else []), stop, s.checkpoints]
            with while_sleeping(_write_completed_rows(s)):
                _loop(s, watch, services, first, iterations, eval_every)
            if hold is not None:
                hold.begin(stop)  # in place of the loop's handlers, without a gap
    finally:
        watch.stop()


def _loop(s: Session, watch, services: list[RunService], first: int, iterations: int,
          eval_every: int) -> None:
    """The iterations of :func:`iterate`, from ``first`` (after a resume), with the stall
    watchdog ``watch`` armed and the run ``services`` called after each."""
    ctx, loop = s.ctx, s.loop
    # the carried objects do not change while the loop runs (a resume replaced them before)
    algorithm, net, divergence = ctx.state.algorithm, ctx.state.net, ctx.state.divergence
    start = loop.start
    loop.flush_rows = lambda: _flush_rows(s)  # a checkpoint completes the rows in flight
    quiet = False  # numpy's floating-point warnings silenced (a recorded divergence)
    for n in range(first, iterations + 1):
        net.round = n
        try:
            algorithm.step(n)
            watch.progress(n)
            divergence.check(algorithm.estimate, n, algorithm)
            if divergence.first is not None and not quiet:
                # run.on_divergence = "record": the iterate overflows from here on, and
                # each numpy operation would say so; the summary says it once (run()
                # restores the caller's error state)
                np.seterr(over="ignore", invalid="ignore", divide="ignore")
                quiet = True
        except Diverged as err:
            _flush_rows(s)
            write_json(stop_record_path(s.run_dir, s.rank, "diverged"),
                       {"stopped_at_iteration": n, "reason": err.what, **s.ledger.to_dict()})
            raise speak_for_stopped_agents(s.run_dir, s.rank, n, err, "diverged") from None
        except PrivacyBudgetExceeded as err:
            # Only this agent knows; the others wait on it, so the job is aborted by the
            # caller. Leave this agent's ledger and traffic beside what rank 0 has written
            # so far, then let one stopped agent speak for all (services/budget_stop.py).
            _flush_rows(s)
            write_json(stop_record_path(s.run_dir, s.rank),
                       {"stopped_at_iteration": n, "reason": err.what,
                        "bytes_sent": sent_bytes(s.net.meter),
                        "traffic": {phase: {key: value.tolist() for key, value in row.items()}
                                    for phase, row in s.net.meter.rows(s.comm.Get_size()).items()},
                        **s.ledger.to_dict()})
            raise speak_for_stopped_agents(s.run_dir, s.rank, n, err) from None
        if s.progress is not None:
            s.progress.update(n, s.metrics[-1].worst_link_epsilon if s.metrics else None)
        if s.monitor.active and (n % eval_every == 0 or n == iterations):
            tick = perf_counter()
            with watch.paused():  # an evaluation may take longer than an iteration
                evaluate(s, n, tick - start - loop.eval_seconds)
            loop.eval_seconds += perf_counter() - tick
        for service in services:
            service.after_iteration(ctx, loop, n)
        if loop.stop_signal:  # a signal: every agent stops here, its checkpoint written
            loop.stopped_at = n
            break
    tick = perf_counter()
    _flush_rows(s)
    loop.eval_seconds += perf_counter() - tick
    # a rank that finished early (a token's non-holders) may wait long here: sleep
    sleeping_barrier(s.eval_comm)
    loop.wall_seconds = perf_counter() - start


def evaluate(s: Session, n: int, elapsed: float) -> None:
    """One metrics row: every agent posts its quantities; rank 0 writes the rows completed."""
    if not s.monitor.active:
        return
    for row in s.monitor.evaluate(n, s.algorithm.estimate, elapsed, sent_bytes(s.net.meter),
                                  s.ledger.worst_link_exposure()):
        _record(s, row)


def _write_completed_rows(s: Session) -> Callable[[], None] | None:
    """Rank 0's work while it waits (:func:`~mpi_privopt.network.while_sleeping`): write
    the rows every agent has posted. An agent that stops the run alone (its budget,
    divergence) aborts the job while rank 0 waits for its message; the rows it had posted
    are then in metrics.csv (before, the last one or two were lost, and a stop before rank
    0's first evaluation after the start left no metrics.csv at all)."""
    if not (s.monitor.active and s.monitor.root):
        return None

    def write() -> None:
        for row in s.monitor.completed():
            _record(s, row)
    return write


def _flush_rows(s: Session) -> None:
    """Complete this rank's metrics rows in flight; rank 0 writes them. At the end of the
    loop, and when this agent stops the run (its budget, divergence): every agent posted
    its rows up to the last evaluation before the stop, so a stopped rank 0 keeps them all
    (a rank 0 that is not stopped keeps those it had completed: docs/reliability.md)."""
    for row in s.monitor.flush():
        _record(s, row)


def _record(s: Session, row: Evaluation) -> None:
    """Rank 0: a completed metrics row to metrics.csv, and its progress line."""
    n = row.iteration
    s.metrics.append(row)
    s.directory.append_metrics(row)
    iterations = s.cfg.run.iterations
    if n and (n % _progress_every(s.cfg) == 0 or n == iterations):
        if s.progress is not None:
            s.progress.clear()  # the terminal's progress line, before a line on stdout
        shown = "  ".join(f"{k.replace('_', ' ')} {v:.3e}" for k, v in row.values.items())
        _print(s.stream, f"  iter {n:>{len(str(iterations))}}/{iterations}  {shown}")
