"""The end of a run as one ordered commit, on every rank, with signals held.

Once the loop is over (all T iterations, or the iteration every agent agreed to stop at
on a signal), a run's end is written in this order:

1. **the final state**: every rank's checkpoint at the end iteration
   (:meth:`~mpi_privopt.services.checkpoint.Checkpointer.at_end`, with ``latest.json``
   marked ``final``), written by every run, whatever ``run.checkpoint_every`` says (but
   one with an ``on_setup`` hook: ``RunContext.final_state``). A signal's
   stop has just written it; a resume that finishes a run starts from it;
2. **the results**: each agent's own model file (``local`` and ``none`` modes), then on
   rank 0 ``traffic.json``, ``privacy.json`` and ``models.npz``, each written to a hidden
   ``.NAME.partial`` file, fsynced and renamed;
3. **the summary**, last (after an fsync of the directory, so every result it vouches for
   is durable first), then the directory again.

From the end of the loop until the run returns (until the process leaves, for the
command line) SIGTERM and SIGINT are held (:class:`SignalHold`): they are stored, not
acted on, so a signal during the commit lets it complete, and a summary that says
``completed`` is a run that exits 0. A rank killed outright (SIGKILL, a lost node) after
step 1 leaves a final checkpoint: ``run --resume DIR`` then writes steps 2 and 3 from it
without running an iteration or releasing anything (mpi_privopt/services/resume.py). The
commit's results are a function of the final state: the resumed files equal the ones an
uninterrupted end writes, byte for byte on the same machine (docs/reliability.md).
"""
from __future__ import annotations

import atexit
import csv
import math
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from mpi4py import MPI

from . import topology
from .methods import ALGORITHMS
from .errors import UserError
from .monitor import Evaluation
from .network import sleeping_barrier
from .privacy.report import assumed_note, privacy_report
from .problems.metrics import REFERENCE
from .results import write_agent_model
from .services.checkpoint_files import checkpoint_dir, resume_command, try_write, write_fix
from .services.faults import fault, wake_faults_on
from .services.stop_signal import STOP_SIGNALS, StopOnSignal, mark_interrupted
from .summary import EVALUATION_NOTES, RunSummary, format_summary
from .network.traffic import assemble_matrices, slowest_links

__all__ = ["ResultsWriteError", "RunResult", "SignalHold", "build_summary", "finish"]


@dataclass
class RunResult:
    """What rank 0 knows after a run (other ranks get ``None`` from ``engine.run``).

    ``models`` (K x P) and ``w_c`` exist in ``reference`` mode only; in the other modes
    each agent's model is in its own ``models-agent-K.npz``.
    """

    run_dir: str
    summary: RunSummary
    metrics: list[Evaluation] = field(default_factory=list)
    traffic: dict = field(default_factory=dict)
    models: np.ndarray | None = None
    w_c: np.ndarray | None = None


class ResultsWriteError(UserError):
    """The result files could not be written (a full disk); the final state is kept."""

    status = 4


def ignore_stop_signals() -> None:
    """Ignore SIGTERM and SIGINT from now on (at exit: :meth:`SignalHold.keep_until_exit`)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


class SignalHold:
    """SIGTERM and SIGINT stored, not acted on, from the end of the loop on.

    :meth:`begin` takes over from the loop's
    :class:`~mpi_privopt.services.stop_signal.StopOnSignal` without a moment in which the
    default action (the process ends) is installed; :meth:`release` puts back the handlers that
    were there before the loop. A held signal has nothing left to stop: the commit it
    arrived in completes and the run ends as written (the command line never releases:
    the process leaves holding, so a signal during ``MPI_Finalize`` cannot turn a written
    run into a killed one). Only the main thread may call these, as for any handler.
    """

    def __init__(self) -> None:
        #: the first signal held (0: none)
        self.signum = 0
        #: set by a held signal (a paused test fault wakes on it)
        self.received = threading.Event()
        self._previous: dict = {}

    def _store(self, signum, frame) -> None:
        self.signum = self.signum or int(signum)
        self.received.set()

    def begin(self, stop: StopOnSignal | None = None) -> "SignalHold":
        """Hold from now on; ``stop``'s handlers (if any) are replaced in place."""
        handed = stop.hand_over() if stop is not None else {}
        for sig in STOP_SIGNALS:
            before = signal.signal(sig, self._store)
            self._previous.setdefault(sig, handed.get(sig, before))
        wake_faults_on(self)
        return self

    def keep_until_exit(self) -> None:
        """Hold the signals until the process is gone (the command line, which leaves).

        They stay held here until the interpreter exits, and are ignored from its exit
        callbacks on (:func:`ignore_stop_signals`). Python resets a signal whose handler
        is a Python function to its default action while it finalises, and ``python -m
        mpi4py`` calls ``MPI_Finalize`` after that: a SIGINT then (a terminal's Ctrl-C
        reaches every rank) killed a rank whose run had completed, and the launcher then
        killed the others (``mpiexec`` exited 2 with ``status = "completed"``, 2 of 32
        tries at the run's end). An ignored signal stays ignored through finalisation.
        Not ignored at once: a process started meanwhile (by an in-process caller, a
        test) would inherit the ignored signals, and a shell script cannot trap a signal
        ignored when it starts.
        """
        atexit.unregister(ignore_stop_signals)  # once, however many runs hold them
        atexit.register(ignore_stop_signals)

    def release(self) -> None:
        """Put back the handlers from before the loop (a held signal is dropped)."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
        wake_faults_on(None)


# -- the commit ------------------------------------------------------------------------------

def finish(s) -> RunResult | None:
    """The ordered end of a run (module docstring) on every rank of session ``s``.

    Raises :class:`ResultsWriteError` on every rank (one message) when a result file
    could not be written; the final state is then kept for a resume that writes them.
    """
    end = s.loop.stopped_at if s.loop.stop_signal else s.cfg.run.iterations
    rank = s.rank
    fault("commit-begin", rank, end)
    _timings_from_final_state(s, end)
    unsaved = s.checkpoints.at_end(s.ctx, s.loop)  # step 1: the final state
    fault("commit-results", rank, end)
    mode = s.cfg.run.evaluate
    final_models, failure = None, None
    if s.loop.stop_signal:
        pass  # not final: the checkpoint holds the models, a resume writes the final ones
    elif mode == REFERENCE:
        final_models = s.monitor.gather_models(s.algorithm.estimate)
    else:
        failure = try_write(lambda: write_agent_model(s.run_dir, rank, s.algorithm.estimate))
    n_agents = s.comm.Get_size()
    meter = s.net.meter
    gathered = s.eval_comm.gather((meter.rows(n_agents), meter.total_seconds(),
                                   sum(meter.receive_seconds.values()), s.ledger.to_dict(),
                                   # run.on_divergence = "record": each agent's first
                                   # diverged iteration (an int or None)
                                   s.divergence.first, MPI.Get_processor_name(), failure),
                                  root=0)
    collective_path = s.net.collective_path
    s.net.free()
    if not s.root:
        # asleep while rank 0 converts and writes the results: a polling wait would take
        # the cores it needs when there are more ranks than cores
        sleeping_barrier(s.eval_comm)
        _agree_written(s, None, end, unsaved)
        return None

    all_rows, comm_seconds, receive_seconds, ledgers, s.diverged, hosts, failures = (
        list(column) for column in zip(*gathered))
    traffic = assemble_matrices(all_rows, n_agents, hosts)
    privacy = privacy_report(ledgers, s.cfg.privacy.delta, s.noise.mode)
    summary = build_summary(s, traffic, privacy, comm_seconds)
    if summary.epsilon_label:  # privacy.json's epsilons are the same figures
        privacy["epsilon_label"] = summary.epsilon_label
    summary.hosts, summary.collective_path = hosts, collective_path
    summary.slowest_links = slowest_links(traffic) or None
    vendor, version = MPI.get_vendor()
    summary.mpi_library = (f"{vendor} {'.'.join(map(str, version))} "
                           f"(MPI {'.'.join(map(str, MPI.Get_version()))})")
    mark_interrupted(summary, s.loop.stop_signal, s.loop.stopped_at)
    reference = s.problem.reference
    failure = next((f for f in failures if f), None) or try_write(
        lambda: _write_results(s, traffic, receive_seconds, privacy, final_models))
    if failure is None:
        fault("commit-summary", rank, end)
        failure = try_write(lambda: _write_summary(s, summary))
    s.directory.close()
    sleeping_barrier(s.eval_comm)  # the other ranks may go on
    _agree_written(s, failure, end, unsaved)
    fault("commit-end", rank, end)
    if unsaved and s.final_state:
        print(f"mpi_privopt: warning: {unsaved}; the results are complete, but the run "
              "cannot be extended from its end", file=sys.stderr, flush=True)
    if not s.loop.stop_signal:  # an interrupted run says one line (the command line's)
        _print(s.stream, format_summary(summary))
    return RunResult(run_dir=s.run_dir, summary=summary, metrics=s.metrics, traffic=traffic,
                     models=None if final_models is None else final_models.copy(),
                     w_c=None if reference is None else reference.w)


def _timings_from_final_state(s, end: int) -> None:
    """A resume that only finishes a run reports the run's own times (its final state's),
    so that its summary is the one the run's end would have written."""
    resumed = s.resumed
    if resumed is not None and resumed.iteration == end and resumed.wall_seconds is not None:
        s.loop.wall_seconds, s.loop.eval_seconds = resumed.wall_seconds, resumed.eval_seconds


def _write_results(s, traffic: dict, receive_seconds: list[float], privacy: dict,
                   final_models: np.ndarray | None) -> None:
    """Step 2 on rank 0: every result file but the summary, each durable and whole."""
    directory, reference = s.directory, s.problem.reference
    directory.write_traffic(traffic, receive_seconds)
    directory.write_privacy(privacy)
    if final_models is not None:
        # a problem without a closed-form reference (e.g. personalised) has no w_c to save
        directory.write_models(final_models, None if reference is None else reference.w)


def _write_summary(s, summary: RunSummary) -> None:
    """Step 3 on rank 0: the summary, once every result it vouches for is durable."""
    _sync_directory(s.directory.path)
    s.directory.write_summary(summary)
    _sync_directory(s.directory.path)


def _sync_directory(path: Path) -> None:
    """Make the renames in ``path`` durable (a no-op where directories cannot be synced)."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the renames still happened
    finally:
        os.close(handle)


def _agree_written(s, failure: str | None, end: int, unsaved: str) -> None:
    """Every rank learns from rank 0 whether every result file was written; if not, all
    raise the same :class:`ResultsWriteError` (one message, one exit status)."""
    failure = s.eval_comm.bcast(failure, root=0)
    if not failure:
        return
    ranks = s.comm.Get_size()
    if unsaved:
        fix = f"{write_fix(failure, s.run_dir)} and run again"
        kept = f"and the final state could not be saved either ({unsaved})"
    else:
        fix = (f"{write_fix(failure, s.run_dir)}, then write them (nothing is run or "
               "released) with: " + resume_command(s.run_dir, ranks))
        kept = (f"the final state (iteration {end}) is kept in "
                f"{checkpoint_dir(s.run_dir)}")
    err = ResultsWriteError(f"the results of the run could not be written in {s.run_dir} "
                            f"({failure}); {kept}", fix)
    err.collective = True
    raise err


# -- the summary ---------------------------------------------------------------------------------

def final_values(s) -> dict:
    """The metric columns of the run's last metrics row: this session's, or, for a resume
    that ran no evaluation (one that only finishes a run), ``metrics.csv``'s last row
    (written with ``repr``: read back, the very same floats)."""
    if s.metrics:
        return s.metrics[-1].values
    path = Path(s.run_dir) / "metrics.csv"
    if not path.is_file():
        return {}
    with open(path, newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
    if len(rows) < 2:
        return {}
    header, last = rows[0], rows[-1]
    columns = header[1:header.index("elapsed_seconds")]
    return {column: float(value) for column, value in zip(columns, last[1:])}


def build_summary(s, traffic: dict, privacy: dict, comm_seconds: list[float]) -> RunSummary:
    """``summary.json`` of session ``s`` from the assembled traffic and privacy reports."""
    cfg = s.cfg
    bytes_matrix = traffic["total"]["bytes"]
    busiest = np.unravel_index(int(np.argmax(bytes_matrix)), bytes_matrix.shape)
    algorithm_cls = ALGORITHMS[cfg.algorithm.name]
    final = final_values(s)
    reference = s.problem.reference
    worst, worst_eps = privacy["worst_link"], privacy["worst_link_epsilon"]
    conversion = (privacy["links"]["conversion"][worst[0]][worst[1]] if worst else None)
    delta = cfg.privacy.delta
    if algorithm_cls.pure_headline:
        # a pure local-DP method: its headline is pure epsilon at delta = 0, never an
        # (epsilon, delta) conversion (privacy.json keeps every conversion)
        worst, worst_eps = _worst_pure_link(privacy["links"]["epsilon_pure"], worst, worst_eps)
        conversion, delta = ("pure" if worst_eps < math.inf else conversion), 0.0
    summary = RunSummary(
        algorithm=cfg.algorithm.name,
        problem=cfg.problem.name,
        topology=cfg.topology.kind,
        ranks=s.comm.Get_size(),
        edges=s.graph.number_of_edges(),
        iterations=cfg.run.iterations,
        seed=cfg.run.seed,
        final_error=final.get("error"),
        final_objective_gap=final.get("objective_gap"),
        final_consensus_gap=final.get("consensus_gap"),
        bytes_total=int(bytes_matrix.sum()),
        bytes_busiest_link=int(bytes_matrix[busiest]),
        busiest_link=[int(busiest[0]), int(busiest[1])],
        messages_total=int(traffic["total"]["messages"].sum()),
        wall_seconds=s.loop.wall_seconds,
        algorithm_seconds=s.loop.wall_seconds - s.loop.eval_seconds,
        eval_seconds=s.loop.eval_seconds,
        comm_seconds=float(np.mean(comm_seconds)),
        comm_seconds_max=float(np.max(comm_seconds)),
        private=algorithm_cls.private,
        worst_link_epsilon=worst_eps,
        worst_link=worst,
        worst_link_conversion=conversion,
        privacy_delta=delta,
        noise=s.noise.mode,
        reference_method=None if reference is None else reference.method,
        optimum_value=None if reference is None else reference.value,
        graph_hash=topology.graph_hash(s.graph),
        run_dir=s.run_dir,
        evaluate=cfg.run.evaluate,
        final_metrics=dict(final),
        evaluation_note=EVALUATION_NOTES[cfg.run.evaluate],
        l1=s.problem.l1,
        algorithm_report=s.algorithm.report() or None,
        worst_observer_entry=(privacy.get("observers") or {}).get("worst"),
    )
    summary.epsilon_label = (summary.algorithm_report or {}).get("epsilon_label")
    diverged = {k: n for k, n in enumerate(s.diverged or []) if n is not None}
    if diverged:
        summary.status = "diverged"
        summary.diverged_at_iteration = min(diverged.values())
        summary.diverged_agents = sorted(diverged)
    if not algorithm_cls.private:
        summary.privacy_note = (
            "; ".join(privacy["notes"]) + " (no differential-privacy guarantee: each link's "
            "loss is reported as unbounded, inf)" if privacy["notes"] else
            "non-private algorithm: every message is sent in the clear, so each link's "
            "privacy loss is unbounded (inf)")
    elif privacy.get("assumed_iterations"):  # a secure-noise resume (privacy/report.py)
        summary.privacy_note = assumed_note(privacy["assumed_iterations"])
    return summary


def _worst_pure_link(pure: list[list[float | None]], worst: list[int] | None,
                     worst_eps: float) -> tuple[list[int] | None, float]:
    """The link of largest pure epsilon; unbounded links (no pure figure) stay as given."""
    if worst_eps == math.inf:
        return worst, worst_eps
    best, best_eps = worst, -math.inf
    for k, row in enumerate(pure):
        for j, eps in enumerate(row):
            if eps is not None and eps > best_eps:
                best, best_eps = [k, j], eps
    return (best, best_eps) if best_eps > -math.inf else (worst, worst_eps)


def _print(stream, text: str) -> None:
    if stream is not None:
        print(text, file=stream, flush=True)
