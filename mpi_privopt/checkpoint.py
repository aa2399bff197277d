"""Checkpoint and resume: every agent's whole state, written atomically, and read back.

What is saved (per rank, ``RUN_DIR/checkpoint/rank-K-iter-N.ckpt``): the state of the
objects the run loop carries from one iteration to the next, the algorithm (and through
its agent the network, its channels and traffic meter, the agent's random streams and
noise source, the problem's oracle), the ledger and the divergence guard. One generic
mechanism serves every registered method: the objects are pickled together, so every
array (iterates, duals, trackers, shares), every numpy Generator's state, every counter
and every aliasing between them (which of a channel's two send buffers is ``outgoing``
and which ``last_sent``, an iterate that *is* a channel buffer) come back as they were.
What belongs to this process and not to the run is not saved but taken from the fresh
set-up of the resumed run (:func:`externals`): the MPI communicators, the graph and the
config sections. Persistent MPI requests are rebuilt on the restored buffers
(:meth:`~mpi_privopt.network.Network.reopen`), never saved.

Beside the state each file carries plain metadata (iteration, rank count, config without
``run.iterations``, graph hash, the ledger's and the traffic meter's snapshots), readable
without unpickling any class (:func:`read_meta`): ``report`` shows a killed run from it.

Every run writes its final state at its end (mpi_privopt/run_commit.py), whatever
``run.checkpoint_every`` says: ``latest.json`` then says ``"final": true``. A resume from it
with a larger ``run.iterations`` extends the run; with the same one it only writes the
run's results (no iteration is run, nothing is released).

Atomicity: a rank writes ``.NAME.partial``, fsyncs and renames it; once every rank has
written (one agreement at each checkpoint, never per iteration), rank 0 points
``checkpoint/latest.json`` at the new iteration (again write-and-rename), and only then
are the older files removed. A rank killed, or a disk that fills, at any moment leaves
``latest.json`` naming a complete checkpoint.

Signals (:class:`StopOnSignal`): SIGTERM and SIGINT only set a flag. Every agent learns
every flag through a nonblocking ``Iallreduce`` started after iteration n and completed
after iteration n + 1, so all ranks stop after the same iteration without a blocking
collective per iteration (docs/performance.md has the measured cost).
"""
from __future__ import annotations

import errno
import io
import json
import math
import os
import pickle
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import display
from .errors import ConfigError, UserError

__all__ = ["CHECKPOINT_DIR", "CheckpointWriteError", "Checkpointer", "StopOnSignal",
           "config_fingerprint", "latest", "read_meta", "resume_command",
           "check_resume_input"]

#: the checkpoint directory inside a run directory
CHECKPOINT_DIR = "checkpoint"
#: names the iteration of the last complete checkpoint (written last, by rank 0)
LATEST = "latest.json"
#: one rank's state at one iteration
STATE_FILE = "rank-{rank}-iter-{iteration}.ckpt"
#: bumped when the file layout changes; a resume refuses another version
FORMAT = 1
#: the signals that stop a run at the next agreed iteration
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: a test hook (read only by the fault tests): ``ACTION@POINT:RANK:ITERATION[:FILE]``
FAULT_ENV = "MPI_PRIVOPT_TEST_FAULT"


class CheckpointWriteError(UserError):
    """A checkpoint could not be written (a full disk); the previous one is kept."""

    status = 4


class Interrupted(Exception):
    """Not an error of the user's: the run stopped at a signal after a checkpoint."""


def checkpoint_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR


def resume_command(run_dir: str | Path, ranks: int) -> str:
    """The launch line that continues the run in ``run_dir``."""
    return (f"mpiexec -n {ranks} python -m mpi4py -m mpi_privopt run --resume {run_dir}")


# -- what must match between the interrupted run and its resume ----------------------------

def config_fingerprint(cfg) -> dict:
    """The resolved config without ``run.iterations`` (the only key a resume may change)."""
    data = cfg.to_dict()
    data["run"] = {k: v for k, v in data["run"].items() if k != "iterations"}
    return json.loads(json.dumps(data, default=str))  # as JSON reads it back (inf, tuples)


def _differences(saved: dict, now: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(saved) | set(now))
    found = []
    for key in keys:
        a, b = saved.get(key, "(absent)"), now.get(key, "(absent)")
        if isinstance(a, dict) and isinstance(b, dict):
            found += _differences(a, b, f"{prefix}{key}.")
        elif a != b and not (isinstance(a, float) and isinstance(b, float)
                             and math.isnan(a) and math.isnan(b)):
            found.append(f"{prefix}{key} ({a!r} then, {b!r} now)")
    return found


def latest(run_dir: str | Path) -> dict | None:
    """``checkpoint/latest.json`` of ``run_dir`` (None when the run has no checkpoint)."""
    path = checkpoint_dir(run_dir) / LATEST
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def check_resume_input(run_dir: str | Path, cfg, graph, n_ranks: int) -> dict:
    """Refuse (ConfigError, naming what differs) a resume of ``run_dir`` with ``cfg``,
    ``graph`` and ``n_ranks`` agents; return ``latest.json``. Needs no MPI."""
    from .topology import graph_hash
    info = latest(run_dir)
    if info is None:
        raise ConfigError(f"{run_dir} has no checkpoint to resume from "
                          f"(no {CHECKPOINT_DIR}/{LATEST}: the run was ended before its "
                          "end without run.checkpoint_every, or by an older version)",
                          "a run writes one at its end, every run.checkpoint_every "
                          "iterations and at SIGTERM/SIGINT; start a new run instead")
    if info.get("format") != FORMAT:
        raise ConfigError(f"the checkpoint in {run_dir} has format {info.get('format')}, "
                          f"this version reads format {FORMAT}",
                          "resume with the mpi_privopt version that wrote it")
    if n_ranks != info["ranks"]:
        raise ConfigError(f"the run in {run_dir} has {info['ranks']} agents, this resume "
                          f"started {n_ranks} ranks",
                          f"resume with the same rank count: {resume_command(run_dir, info['ranks'])}")
    differ = _differences(info["config"], config_fingerprint(cfg))
    if differ:
        raise ConfigError(f"the config differs from the checkpoint's in {'; '.join(differ)}",
                          "a resume may change only run.iterations: restore "
                          f"{Path(run_dir) / 'config.toml'} and drop other --set options")
    if graph_hash(graph) != info["graph_hash"]:
        raise ConfigError(f"the graph built now differs from the checkpoint's (hash "
                          f"{graph_hash(graph)[:12]} now, {info['graph_hash'][:12]} then)",
                          "a resume must build the same graph: restore the edge-list file "
                          "(topology.file) the run used")
    at = info["iteration"]
    if cfg.run.iterations < at or (cfg.run.iterations == at and not is_final(run_dir, info)):
        ended = (f"; --set run.iterations={at} writes the results of the run as it ended"
                 if is_final(run_dir, info) else "")
        why = ("" if cfg.run.iterations < at else
               " (written when a signal stopped the run, not at its end)")
        raise ConfigError(f"run.iterations = {cfg.run.iterations}, but the checkpoint is "
                          f"already at iteration {at}{why}",
                          f"give a larger run.iterations, e.g. --set run.iterations="
                          f"{2 * at}{ended}")
    return info


def is_final(run_dir: str | Path, info: dict) -> bool:
    """Whether the checkpoint ``info`` (``latest.json``) is a run's end: every result
    can be written from it. A ``latest.json`` older than its ``final`` key is one when it
    is at the ``run.iterations`` of the run's own ``config.toml`` (a signal's stop is
    always before it)."""
    if "final" in info:
        return bool(info["final"])
    return run_iterations(run_dir) == info["iteration"]


def run_iterations(run_dir: str | Path) -> int | None:
    """``run.iterations`` of the run's own ``config.toml`` (None if it cannot be read)."""
    import tomllib
    try:
        config = tomllib.loads((Path(run_dir) / "config.toml").read_text())
        return int(config["run"]["iterations"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def refuse_unsaveable(cfg) -> None:
    """ConfigError when ``run.checkpoint_every`` asks a method that cannot be saved
    between two iterations (its final state, at the run's end, is saved all the same)."""
    from .methods import ALGORITHMS
    why = ALGORITHMS[cfg.algorithm.name].no_checkpoint
    if why and cfg.run.checkpoint_every:
        raise ConfigError(f"{cfg.algorithm.name!r} cannot be checkpointed: {why}",
                          "set run.checkpoint_every = 0 (a signal then ends the run "
                          "without a checkpoint; the run's end still saves its final "
                          "state, from which it can be extended)")


def can_save(s) -> bool:
    """Whether this session's method can be checkpointed between two iterations (and so
    stop at a signal)."""
    from .methods import ALGORITHMS
    return not ALGORITHMS[s.cfg.algorithm.name].no_checkpoint


# -- the state of one rank -----------------------------------------------------------------

def externals(session) -> dict[str, Any]:
    """Objects of a session taken from the fresh set-up, never saved, by a fixed name."""
    cfg = session.cfg
    return {"net.comm": session.net.comm, "graph": session.graph,
            # the agent's once(step): a closure over the set-up's evaluation communicator
            "agent.once": session.algorithm.agent.once,
            "problem": session.problem.local, "cfg": cfg,
            "cfg.problem": cfg.problem, "cfg.topology": cfg.topology,
            "cfg.algorithm": cfg.algorithm, "cfg.algorithm.params": cfg.algorithm.params,
            "cfg.privacy": cfg.privacy, "cfg.run": cfg.run}


def state_roots(session) -> dict[str, Any]:
    """What a checkpoint saves: everything the loop carries between iterations.

    The agent's problem is shared with the monitor's evaluator (which reads, e.g., the
    trackers a method records in it), so it stays the fresh set-up's object and only its
    attributes are saved and put back into it (its sampling streams among them).
    """
    return {"algorithm": session.algorithm, "ledger": session.ledger,
            "divergence": session.divergence,
            "problem": dict(vars(session.problem.local))}


class _StatePickler(pickle.Pickler):
    def __init__(self, file, names: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = names

    def persistent_id(self, obj):  # noqa: D102 (pickle's hook)
        return self._names.get(id(obj))


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, file, objects: dict[str, Any]) -> None:
        super().__init__(file)
        self._objects = objects

    def persistent_load(self, pid):  # noqa: D102
        return self._objects[pid]


class _MetaUnpickler(pickle.Unpickler):
    """Reads the outer record only: plain data, no class is ever imported."""

    def find_class(self, module, name):  # noqa: D102
        raise pickle.UnpicklingError(f"a checkpoint's metadata names {module}.{name}")


def dump_state(session) -> bytes:
    """The pickled state of ``session`` (:func:`state_roots`); ConfigError if the method
    holds something that cannot be saved."""
    fixed = externals(session)
    names = {id(obj): name for name, obj in fixed.items()}
    buffer = io.BytesIO()
    try:
        _StatePickler(buffer, names).dump(state_roots(session))
    except (pickle.PicklingError, TypeError, AttributeError) as err:
        raise ConfigError(f"{session.cfg.algorithm.name!r} cannot be checkpointed: its "
                          f"state holds something that cannot be saved ({err})",
                          "run without run.checkpoint_every (and do not interrupt it)") from None
    return buffer.getvalue()


def load_state(session, state: bytes) -> None:
    """Replace ``session``'s carried objects by the saved ones (the fresh set-up supplies
    the :func:`externals`), and rebuild the network's persistent requests."""
    fresh_net = session.net
    roots = _StateUnpickler(io.BytesIO(state), externals(session)).load()
    algorithm = roots["algorithm"]
    net = algorithm.agent.net
    # The fresh set-up's channels hold persistent requests on buffers nobody uses now;
    # the restored channels get theirs (same order on every agent: collective).
    for channel in fresh_net._channels:
        channel.free()
    fresh_net._channels = []
    net.reopen()
    vars(session.problem.local).update(roots["problem"])
    session.algorithm, session.net = algorithm, net
    session.ledger, session.divergence = roots["ledger"], roots["divergence"]
    session.noise = algorithm.agent.noise


def write_atomic(path: Path, data: bytes, fault_point: str | None = None,
                 rank: int = 0, iteration: int = 0) -> None:
    """Write ``data`` to ``path`` whole or not at all (temporary file, fsync, rename)."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        with open(partial, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if fault_point:
            fault(fault_point, rank, iteration)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def read_meta(path: str | Path) -> dict:
    """The metadata of one rank's checkpoint file (no class is unpickled)."""
    with open(path, "rb") as handle:
        return _MetaUnpickler(handle).load()["meta"]


def read_record(path: str | Path) -> dict:
    with open(path, "rb") as handle:
        return _MetaUnpickler(handle).load()


def state_path(run_dir: str | Path, rank: int, iteration: int) -> Path:
    return checkpoint_dir(run_dir) / STATE_FILE.format(rank=rank, iteration=iteration)


def saved_ledgers(run_dir: str | Path) -> tuple[dict, list[dict]] | None:
    """``latest.json`` and every rank's ledger and traffic snapshot at that checkpoint."""
    info = latest(run_dir)
    if info is None:
        return None
    metas = [read_meta(state_path(run_dir, k, info["iteration"])) for k in range(info["ranks"])]
    return info, metas


# -- the run loop's side ---------------------------------------------------------------------

@dataclass
class Resume:
    """What a resumed session starts from."""

    iteration: int
    algorithm_seconds: float
    eval_seconds: float
    #: the run's wall time at its end (a final checkpoint's; None for any other)
    wall_seconds: float | None = None


class Checkpointer:
    """Writes a checkpoint every ``run.checkpoint_every`` iterations before the last and
    when the agents agree to stop on a signal; the run's end writes the final one
    (mpi_privopt/run_commit.py), so any finished run can be extended."""

    def __init__(self, session, every: int) -> None:
        self.every = every
        self.saved_at: int | None = None
        self._dir = checkpoint_dir(session.run_dir)

    def due(self, n: int, last: int) -> bool:
        # the last iteration's is the end's, written once the loop is over (run_commit.py)
        return bool(self.every) and n % self.every == 0 and n < last

    def save(self, s, n: int, algorithm_seconds: float, final: bool = False,
             wall_seconds: float | None = None) -> None:
        """Every rank writes its state at iteration ``n``; rank 0 then moves ``latest``.

        ``final``: the run's end writes it (``latest.json`` says so, and the metadata
        keeps ``wall_seconds``, the run's time, for a resume that only writes the results).

        Raises :class:`CheckpointWriteError` on every rank (one message) when a rank
        could not write: the previous checkpoint stays complete and named by ``latest``.
        """
        from .monitor import sent_bytes
        rank, ranks = s.comm.Get_rank(), s.comm.Get_size()
        fault("checkpoint-begin", rank, n)
        from .results import _jsonable
        meta = _jsonable({"format": FORMAT, "iteration": n, "rank": rank, "ranks": ranks,
                "algorithm_seconds": algorithm_seconds, "eval_seconds": s.eval_seconds,
                "ledger": s.ledger.to_dict(), "bytes_sent": sent_bytes(s.net.meter),
                "traffic": s.net.meter.rows(ranks),
                **({"wall_seconds": wall_seconds} if final else {})})
        path = state_path(s.run_dir, rank, n)
        failure = None
        try:
            record = pickle.dumps({"meta": meta, "state": dump_state(s)},
                                  protocol=pickle.HIGHEST_PROTOCOL)
        except ConfigError as err:
            if not final:
                raise
            # the end saves every run's state, even one that cannot be pickled (a method
            # holding a module or a lock): every rank learns it below, and the results
            # are written all the same (run_commit.py)
            failure = err.what
        if failure is None:
            failure = _try(lambda: (self._dir.mkdir(exist_ok=True),
                                    write_atomic(path, record, "checkpoint-write", rank, n)))
        failures = s.eval_comm.allgather(failure)
        if not any(failures) and rank == 0:
            failure = _try(lambda: self._point_latest(s, n, ranks, final))
        failures = [f for f in failures if f] or [s.eval_comm.bcast(failure, root=0)]
        if failures[0]:
            path.unlink(missing_ok=True)
            raise self._write_error(s, n, failures[0])
        remove_stale(s.run_dir, rank, keep=path)
        self.saved_at = n

    def _point_latest(self, s, n: int, ranks: int, final: bool = False) -> None:
        from .topology import graph_hash
        info = {"format": FORMAT, "iteration": n, "ranks": ranks,
                "config": config_fingerprint(s.cfg), "graph_hash": graph_hash(s.graph),
                "noise": s.noise.mode, "delta": s.cfg.privacy.delta, "final": final}
        write_atomic(self._dir / LATEST, (json.dumps(info, indent=2) + "\n").encode())

    def _write_error(self, s, n: int, failure: str) -> CheckpointWriteError:
        kept = latest(s.run_dir)
        kept_text = (f"the checkpoint of iteration {kept['iteration']} is kept"
                     if kept else "no earlier checkpoint exists")
        full = "the disk is full: " if "ENOSPC" in failure or "EFBIG" in failure else ""
        err = CheckpointWriteError(
            f"{full}the checkpoint of iteration {n} could not be written in "
            f"{self._dir} ({failure}); {kept_text}",
            "free space there, then continue with: " + resume_command(s.run_dir, s.comm.Get_size())
            if kept else "free space there and run again")
        err.collective = True  # every rank knows: one message, from rank 0
        return err


def remove_stale(run_dir: str | Path, rank: int, keep: Path | None) -> None:
    """Remove this rank's older checkpoint files and any partial file a killed writer left."""
    folder = checkpoint_dir(run_dir)
    name = STATE_FILE.format(rank=rank, iteration="*")
    for old in [*folder.glob(name), *folder.glob(f".{name}.partial")]:
        if old != keep:
            old.unlink(missing_ok=True)


def _try(action) -> str | None:
    """None, or what went wrong (``ENOSPC: No space left on device``) as text."""
    try:
        action()
    except OSError as err:
        code = errno.errorcode.get(err.errno or 0, "")
        return f"{code + ': ' if code else ''}{err.strerror or err}"
    return None


def resume_from(s) -> Resume:
    """Load this rank's saved state into the fresh session ``s`` (set up for the resume)."""
    info = latest(s.run_dir)
    record = read_record(state_path(s.run_dir, s.comm.Get_rank(), info["iteration"]))
    load_state(s, record["state"])
    meta = record["meta"]
    return Resume(iteration=meta["iteration"], algorithm_seconds=meta["algorithm_seconds"],
                  eval_seconds=meta["eval_seconds"], wall_seconds=meta.get("wall_seconds"))


def refuse_overspend(s, first: int) -> None:
    """Raise ConfigError when the releases planned for iterations ``first`` .. T would
    take this agent past ``privacy.epsilon`` (the spent budget is the restored ledger's:
    it is never reset). Methods that cannot say their plan ahead (no
    ``planned_events``) are held by the ledger's guard, release by release."""
    from .privacy.accountants import Budget
    ledger, last = s.ledger, s.cfg.run.iterations
    if math.isinf(ledger.budget):
        return
    events = s.algorithm.planned_events(first, last)
    if events is None:
        return
    after = ledger.total
    spent = after.epsilon(ledger.delta)["best"]
    for event in events:
        after.add(event)
    if not after.within(Budget.of(ledger.budget, ledger.delta)):
        eps = after.epsilon(ledger.delta)["best"]
        raise ConfigError(
            f"resuming to run.iterations = {last} would take agent {s.comm.Get_rank()}'s "
            f"privacy loss from epsilon {display.loss(spent)} (spent by iteration "
            f"{first - 1}) to {display.loss(eps)} at delta {ledger.delta:g}, over "
            f"privacy.epsilon = {display.exact(ledger.budget)}; "
            "nothing was released",
            "the spent budget is never reset: keep the run as it is, or resume to fewer "
            "iterations")


# -- signals ----------------------------------------------------------------------------------

class StopOnSignal:
    """SIGTERM / SIGINT set a flag; the agents agree on it at iterations they all know.

    Use as a context manager around the loop and call :meth:`agreed` after every
    iteration; it returns the signal number every agent agrees to stop on (0: go on).
    Only the main thread runs Python signal handlers, and they only store the number.

    The agreement is a nonblocking ``Iallreduce`` (MAX) of ``[signal, stride]`` started
    after one iteration and completed ``stride`` iterations later; the next one starts
    there. An Iallreduce after every iteration cost as much as a blocking Allreduce in the
    exchange benchmark (about a third of a small DGD iteration at 2 to 4 ranks), so rank 0
    proposes the stride in the same reduction: as many iterations as take about
    :data:`AGREE_SECONDS` (1 to :data:`MAX_STRIDE`). Every rank gets the same stride from
    the reduction, so all complete it, and stop, after the same iteration; a signal is
    acted on within about two strides (tens of milliseconds) plus one iteration.
    """

    #: the time between two agreements rank 0 aims at (seconds; the environment variable
    #: MPI_PRIVOPT_AGREE_SECONDS overrides it, 0: agree after every iteration)
    AGREE_SECONDS = 0.02
    MAX_STRIDE = 1024

    def __init__(self, comm, enabled: bool = True) -> None:
        from time import perf_counter
        #: False for a method that cannot be checkpointed: signals keep their default
        #: effect (the run ends without a checkpoint) and nothing is agreed
        self.enabled = enabled
        self._comm = comm.Dup()  # its own channel: never mixed with evaluation traffic
        self._proposes = comm.Get_rank() == 0
        self._aim = float(os.environ.get("MPI_PRIVOPT_AGREE_SECONDS", self.AGREE_SECONDS))
        self._local = np.zeros(2, dtype=np.int64)     # [signal, proposed stride]
        self._agreed = np.zeros(2, dtype=np.int64)
        self._request = None
        self._count = 0        # iterations since the pending agreement started
        self._stride = 1       # ... and how many it spans (agreed)
        self._clock = perf_counter
        self._started = 0.0
        self._previous: dict = {}
        self.received = threading.Event()

    def _handle(self, signum, frame) -> None:
        self._local[0] = max(int(self._local[0]), int(signum))
        self.received.set()

    def __enter__(self) -> "StopOnSignal":
        global _stopper
        _stopper = self
        for sig in STOP_SIGNALS if self.enabled else ():
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def agreed(self) -> int:
        """After an iteration: the agreed stop signal (0 until every agent knows one)."""
        if not self.enabled:
            return 0
        self._count += 1
        if self._request is not None and self._count < self._stride:
            return 0
        stop = 0
        if self._request is not None:
            # a neighbour's stop would hold every rank here too: wait like an exchange
            # (spin, then sleep), not in MPI's polling Wait
            from .network import wait_exchange
            wait_exchange(self._request)
            stop, self._stride = int(self._agreed[0]), max(1, int(self._agreed[1]))
        if not stop:
            self._start()
        return stop

    def _start(self) -> None:
        from mpi4py import MPI
        now = self._clock()
        if self._proposes and self._count:
            per_iteration = (now - self._started) / self._count
            self._local[1] = min(self.MAX_STRIDE,
                                 max(1, int(self._aim / max(per_iteration, 1e-9))))
        self._started, self._count = now, 0
        # a copy: the handler may change the flag while the reduction reads its buffer;
        # kept until the request completes (Open MPI reads it at Wait: a temporary was
        # freed and reused first, and the agreed signal came back as garbage)
        self._sent = self._local.copy()
        self._request = self._comm.Iallreduce(self._sent, self._agreed, op=MPI.MAX)

    def hand_over(self) -> dict:
        """The handlers from before the loop, for a successor that installs its own in
        place of this one's (run_commit.SignalHold); this one then puts none back."""
        previous, self._previous = self._previous, {}
        return previous

    def __exit__(self, *exc) -> None:
        global _stopper
        if _stopper is self:
            _stopper = None
        everywhere = exc[0] is None or getattr(exc[1], "collective", False)
        if self._request is not None and everywhere:
            self._request.Wait()  # every rank posted it: completes
        self._request = None
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if everywhere:
            self._comm.Free()


# -- fault injection for the fault tests --------------------------------------------------

def _parse_fault(text: str) -> tuple[str, str, int, int, str] | None:
    if not text:
        return None
    action, _, rest = text.partition("@")
    point, rank, iteration, *file = rest.split(":", 3)
    return action, point, int(rank), int(iteration), (file[0] if file else "")


_FAULT = _parse_fault(os.environ.get(FAULT_ENV, ""))
#: what a paused fault wakes on: anything with a ``received`` Event (the loop's
#: StopOnSignal, then the end's SignalHold)
_stopper: Any = None


def wake_faults_on(holder: Any) -> None:
    """Make a paused test fault wake when ``holder.received`` is set (None: nothing)."""
    global _stopper
    _stopper = holder


def fault(point: str, rank: int, iteration: int) -> None:
    """Inject the fault ``MPI_PRIVOPT_TEST_FAULT`` names, if this is its place (tests only).

    ``kill@POINT:R:N``  rank R kills itself (SIGKILL) at POINT of iteration N;
    ``term@POINT:R:N``, ``int@...``  rank R sends itself SIGTERM (SIGINT) there;
    ``pause@POINT:R:N:FILE``  rank R creates FILE, then waits (sleeping) until a stop
    signal arrives or ``FILE.go`` exists. POINT: ``iteration`` (after the step),
    ``checkpoint-begin`` (before writing) or ``checkpoint-write`` (file written, not yet
    renamed); at the run's end (mpi_privopt/run_commit.py, ITERATION is the end's):
    ``commit-begin`` (before the final checkpoint), ``commit-results`` (final checkpoint
    written, no result yet), ``commit-summary`` (rank 0: every result written, not the
    summary) and ``commit-end`` (every file written, the ranks about to return).
    """
    if _FAULT is None or _FAULT[1:4] != (point, rank, iteration):
        return
    action, file = _FAULT[0], _FAULT[4]
    sent = {"kill": signal.SIGKILL, "term": signal.SIGTERM, "int": signal.SIGINT}
    if action in sent:  # SIGKILL, or SIGTERM / SIGINT to this rank alone
        os.kill(os.getpid(), sent[action])
    if action == "pause":
        Path(file).write_text(f"{os.getpid()}\n")  # the test may kill this rank by pid
        go = Path(file + ".go")
        event = _stopper.received if _stopper is not None else threading.Event()
        while not go.exists() and not event.wait(0.05):
            pass


# -- the engine's calls (kept here so the run loop stays as it was) ------------------------

def resume_session(s) -> None:
    """Continue the run in ``s.run_dir``: load this rank's saved state, keep the metrics
    measured up to the checkpoint, and refuse a plan that would overspend the budget.
    Every step is agreed, so a failure on any rank is one message."""
    from .collective import agree

    def load() -> None:
        try:
            s.resumed = resume_from(s)
        except (OSError, pickle.UnpicklingError, EOFError) as err:
            raise ConfigError(f"agent {s.comm.Get_rank()} cannot read its checkpoint in "
                              f"{checkpoint_dir(s.run_dir)}: {err}",
                              "every rank must see the run directory (a shared "
                              "filesystem) with the files the run wrote") from None

    fresh = s.algorithm  # built by the resume's set-up for its run.iterations
    agree(s.eval_comm, load)
    remove_stale(s.run_dir, s.comm.Get_rank(),
                 keep=state_path(s.run_dir, s.comm.Get_rank(), s.resumed.iteration))
    s.eval_seconds = s.resumed.eval_seconds
    s.checkpoints.saved_at = s.resumed.iteration  # the end's commit does not write it again
    finishing = s.resumed.iteration == s.cfg.run.iterations
    if not finishing:
        # a method whose public plan covers only the iterations it was set up for takes
        # the longer one from the resume's fresh set-up (token-admm's schedule)
        agree(s.eval_comm, lambda: s.algorithm.extend(fresh, s.cfg.run.iterations))
    if not finishing:
        agree(s.eval_comm, lambda: refuse_overspend(s, s.resumed.iteration + 1))
    if s.directory is not None:
        # what the earlier part wrote at its end is not this run's end: a resume that
        # is killed must show as failed at its checkpoint, not as the earlier part's stop
        for name in ("summary.json", "traffic.json", "privacy.json", "models.npz"):
            (s.directory.path / name).unlink(missing_ok=True)
        s.directory.write_config(s.cfg.to_toml())  # its run.iterations, now accepted
        s.directory.resume_metrics(s.resumed.iteration)
        if s.stream is not None:
            print(f"the checkpoint of iteration {s.resumed.iteration} is the run's end: "
                  "its results are written from it (no iteration is run, nothing is "
                  "released)" if finishing else
                  f"resumed from the checkpoint of iteration {s.resumed.iteration}",
                  file=s.stream, flush=True)


def loop_start(s) -> tuple[int, float]:
    """The first iteration to run and the loop's clock origin (a resumed run's elapsed
    time goes on from what it had measured)."""
    from time import perf_counter
    if s.resumed is None:
        return 1, perf_counter()
    before = s.resumed.algorithm_seconds + s.resumed.eval_seconds
    return s.resumed.iteration + 1, perf_counter() - before


def after_iteration(s, stop: StopOnSignal, n: int, algorithm_seconds: Callable[[], float],
                    before_save: Callable[[], None] | None = None) -> bool:
    """After iteration ``n``: a due checkpoint, and the agreement on a signal. True when
    every agent stops here (its checkpoint written). ``algorithm_seconds()`` is the loop's
    time so far, asked only when a checkpoint is written; ``before_save`` runs first then
    (the engine completes its metrics rows in flight, so that metrics.csv holds every row
    up to the checkpoint)."""
    if _FAULT is not None:  # tests only; a call per iteration otherwise
        fault("iteration", s.comm.Get_rank(), n)
    last = s.cfg.run.iterations
    signum = stop.agreed() if n < last else 0  # the last iteration ends the run anyway
    if s.checkpoints.due(n, last) or signum:
        if before_save is not None:
            before_save()
        s.checkpoints.save(s, n, algorithm_seconds())
    if signum:
        s.interrupted, s.stopped_at = signum, n
    return bool(signum)


def mark_interrupted(s, summary) -> None:
    """An interrupted run's summary says so, with the iteration it reached."""
    if s.interrupted:
        summary.status = "interrupted"
        summary.stopped_at_iteration = s.stopped_at
        summary.stop_signal = signal.Signals(s.interrupted).name
