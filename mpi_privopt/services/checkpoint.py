"""Checkpoints: every agent's whole state, saved periodically, at a signal and at the end.

What is saved (per rank; the files: mpi_privopt/services/checkpoint_files.py): the objects
the run loop carries from one iteration to the next (:class:`~.base.CarriedState`), the
algorithm (and through its agent the network, its channels and traffic meter, the agent's
random streams and noise source, the problem's oracle), the ledger and the divergence
guard. One generic mechanism serves every registered method: the objects are written
together as JSON and numpy arrays (mpi_privopt/services/state_codec.py; never a pickle),
so every array (iterates, duals, trackers, shares), every numpy Generator's state, every
counter and every aliasing between them (which of a channel's two send buffers is
``outgoing`` and which ``last_sent``, an iterate that *is* a channel buffer) come back as
they were. A method may say what its state is
(:attr:`~mpi_privopt.methods.contract.Algorithm.checkpoint_fields`): only those attributes
are saved, the others taken from the resume's fresh set-up. What belongs to this process
and not to the run is not saved but taken from the fresh set-up of the resumed run
(:func:`externals`): the MPI communicators, the graph and the config sections. Persistent
MPI requests are rebuilt on the restored buffers
(:meth:`~mpi_privopt.network.Network.reopen`), never saved.

:class:`Checkpointer` is the run service: after an iteration it writes a due checkpoint
(every ``run.checkpoint_every``) or the one of an agreed stop; at the run's end it writes
the final state (mpi_privopt/run_commit.py), whatever ``run.checkpoint_every`` says:
``latest.json`` then says ``"final": true``. A resume from it with a larger
``run.iterations`` extends the run; with the same one it only writes the run's results.
"""
from __future__ import annotations

import secrets
from typing import Any

from ..errors import ConfigError
from .base import CarriedState, LoopState, RunContext
from .checkpoint_files import (FORMAT, FULL_DISK_ERRORS, LATEST, PREVIOUS,
                               CheckpointWriteError, checkpoint_dir, config_fingerprint,
                               encode_record, remove_stale, resume_command, state_path,
                               try_write, write_atomic, write_fix, write_pointer)
from .checkpoint_format import encode_rank_file
from .faults import fault
from .state_codec import decode_state, encode_state, trusted_modules

__all__ = ["Checkpointer", "can_save", "decode_roots", "dump_state", "load_state",
           "refuse_unsaveable", "restore_state"]


def refuse_unsaveable(cfg) -> None:
    """ConfigError when ``run.checkpoint_every`` asks a method that cannot be saved
    between two iterations (its final state, at the run's end, is saved all the same)."""
    from ..methods import ALGORITHMS
    why = ALGORITHMS[cfg.algorithm.name].no_checkpoint
    if why and cfg.run.checkpoint_every:
        raise ConfigError(f"{cfg.algorithm.name!r} cannot be checkpointed: {why}",
                          "set run.checkpoint_every = 0 (a signal then ends the run "
                          "without a checkpoint; the run's end still saves its final "
                          "state, from which it can be extended)")


def can_save(cfg) -> bool:
    """Whether the method of ``cfg`` can be checkpointed between two iterations (and so
    stop at a signal)."""
    from ..methods import ALGORITHMS
    return not ALGORITHMS[cfg.algorithm.name].no_checkpoint


# -- the state of one rank -----------------------------------------------------------------

def externals(ctx: RunContext, state: CarriedState) -> dict[str, Any]:
    """Objects taken from the fresh set-up, never saved, by a fixed name."""
    cfg = ctx.cfg
    return {"net.comm": state.net.comm, "graph": ctx.graph,
            # the agent's once(step): a closure over the set-up's evaluation communicator
            "agent.once": state.algorithm.agent.once,
            "problem": state.problem, "cfg": cfg,
            "cfg.problem": cfg.problem, "cfg.topology": cfg.topology,
            "cfg.algorithm": cfg.algorithm, "cfg.algorithm.params": cfg.algorithm.params,
            "cfg.privacy": cfg.privacy, "cfg.run": cfg.run}


def state_roots(state: CarriedState) -> dict[str, Any]:
    """What a checkpoint saves: everything the loop carries between iterations.

    The agent's problem is shared with the monitor's evaluator (which reads, e.g., the
    trackers a method records in it), so it stays the fresh set-up's object and only its
    attributes are saved and put back into it (its sampling streams among them).
    """
    return {"algorithm": state.algorithm, "ledger": state.ledger,
            "divergence": state.divergence, "problem": dict(vars(state.problem))}


def dump_state(ctx: RunContext, state: CarriedState) -> tuple[Any, bytes]:
    """``state`` (:func:`state_roots`) as a JSON tree and the ``.npz`` bytes of its arrays
    (mpi_privopt/services/state_codec.py); ConfigError if the method holds something that
    cannot be saved."""
    try:
        return encode_state(state_roots(state), externals(ctx, state),
                            trusted_modules(ctx.cfg))
    except (TypeError, ValueError, AttributeError) as err:  # StateEncodeError among them
        raise ConfigError(f"{ctx.cfg.algorithm.name!r} cannot be checkpointed: its "
                          f"state holds something that cannot be saved ({err})",
                          "run without run.checkpoint_every (and do not interrupt it)") from None


def decode_roots(ctx: RunContext, saved: tuple[Any, bytes]) -> dict[str, Any]:
    """The saved carried objects (:func:`state_roots`) from :func:`dump_state`'s tree and
    arrays, the fresh set-up supplying the :func:`externals`. Local: no MPI call.

    Raises :class:`~.state_codec.StateDecodeError` when the state names anything a
    checkpoint may not hold, or is malformed."""
    tree, arrays = saved
    return decode_state(tree, arrays, externals(ctx, ctx.state), trusted_modules(ctx.cfg))


def load_state(ctx: RunContext, saved: tuple[Any, bytes]) -> CarriedState:
    """The saved carried objects in place of ``ctx.state``, with the network's
    persistent requests rebuilt (collective)."""
    return restore_state(ctx, decode_roots(ctx, saved))


def restore_state(ctx: RunContext, roots: dict[str, Any]) -> CarriedState:
    """:func:`decode_roots`' objects in place of ``ctx.state``, with the network's
    persistent requests rebuilt (collective: every rank, in the same order). The
    attributes a method leaves out of its checkpoint (``checkpoint_fields``) are the
    fresh set-up's."""
    fresh = ctx.state
    algorithm = roots["algorithm"]
    if type(algorithm).checkpoint_fields is not None:  # the rest: the fresh set-up's
        for name, value in vars(fresh.algorithm).items():
            vars(algorithm).setdefault(name, value)
    net = algorithm.agent.net
    # The fresh set-up's channels hold persistent requests on buffers nobody uses now;
    # the restored channels get theirs (same order on every agent: collective).
    for channel in fresh.net._channels:
        channel.free()
    fresh.net._channels = []
    net.reopen()
    vars(fresh.problem).update(roots["problem"])
    return CarriedState(algorithm=algorithm, net=net, ledger=roots["ledger"],
                        divergence=roots["divergence"], noise=algorithm.agent.noise,
                        problem=fresh.problem)


# -- the service --------------------------------------------------------------------------------

class Checkpointer:
    """Writes a checkpoint every ``run.checkpoint_every`` iterations before the last and
    when the agents agree to stop on a signal; the run's end writes the final one
    (mpi_privopt/run_commit.py), so any finished run can be extended."""

    def __init__(self, ctx: RunContext) -> None:
        self.every = ctx.cfg.run.checkpoint_every
        #: the iteration of the last checkpoint this run wrote or resumed from
        self.saved_at: int | None = None
        #: the run's id in every checkpoint file's header (drawn by its first checkpoint)
        self.run_id: str | None = None
        #: rank 0: the pointer (latest.json's content) of ``saved_at``
        self.pointer: dict | None = None
        #: rank 0: the SHA-256 of the run's graph.edgelist (a resume checks it)
        self.edgelist_sha256: str | None = None
        self._dir = checkpoint_dir(ctx.run_dir)

    def due(self, n: int, last: int) -> bool:
        # the last iteration's is the end's, written once the loop is over (run_commit.py)
        return bool(self.every) and n % self.every == 0 and n < last

    def after_iteration(self, ctx: RunContext, loop: LoopState, n: int) -> None:
        """A due checkpoint, or the one of the stop every agent agreed on after ``n``
        (the metrics rows in flight are completed first, so that metrics.csv holds every
        row up to the checkpoint)."""
        if loop.stop_signal or self.due(n, ctx.cfg.run.iterations):
            loop.flush_rows()
            self.save(ctx, n, loop.algorithm_seconds(), loop.eval_seconds)

    def at_end(self, ctx: RunContext, loop: LoopState) -> str:
        """Step 1 of the run's end: every rank's final state ('' once written, or what
        went wrong).

        Skipped when it exists (a signal's stop wrote it, or the run resumed from it) and
        for a run with an ``on_setup`` hook (``RunContext.final_state``). A checkpoint
        that cannot be written (a full disk: every rank knows) does not stop the results
        from being written; the run then cannot be extended from its end.
        """
        end = loop.end(ctx.cfg.run.iterations)
        if self.saved_at == end:
            return ""
        if not ctx.final_state:  # a hooked run: none by design
            return "a run with an on_setup hook saves no final state"
        if ctx.directory is not None:
            ctx.directory.sync_metrics()  # every row to ``end`` durable before latest.json
        try:
            self.save(ctx, end, loop.wall_seconds - loop.eval_seconds, loop.eval_seconds,
                      final=True, wall_seconds=loop.wall_seconds)
        except CheckpointWriteError as err:
            return err.what
        return ""

    def save(self, ctx: RunContext, n: int, algorithm_seconds: float, eval_seconds: float,
             final: bool = False, wall_seconds: float | None = None) -> None:
        """Every rank writes its state at iteration ``n``; rank 0 then moves ``latest``.

        ``final``: the run's end writes it (``latest.json`` says so, and the metadata
        keeps ``wall_seconds``, the run's time, for a resume that only writes the results).

        Raises :class:`CheckpointWriteError` on every rank (one message) when a rank
        could not write: the previous checkpoint stays complete and named by ``latest``.
        """
        from ..monitor import sent_bytes
        from ..results import _jsonable
        state = ctx.state
        rank, ranks = ctx.rank, ctx.size
        fault("checkpoint-begin", rank, n)
        if self.run_id is None:  # the first checkpoint of the run: one id for its files
            self.run_id = ctx.eval_comm.bcast(secrets.token_hex(8) if rank == 0 else None)
        meta = _jsonable({"format": FORMAT, "iteration": n, "rank": rank, "ranks": ranks,
                "algorithm_seconds": algorithm_seconds, "eval_seconds": eval_seconds,
                "ledger": state.ledger.to_dict(), "bytes_sent": sent_bytes(state.net.meter),
                "traffic": state.net.meter.rows(ranks),
                **({"wall_seconds": wall_seconds} if final else {})})
        path = state_path(ctx.run_dir, rank, n)
        failure = digest = None
        try:
            data, digest = encode_rank_file(
                {"run": self.run_id, "rank": rank, "iteration": n, "ranks": ranks},
                encode_record(meta, dump_state(ctx, state)))
        except ConfigError as err:
            if not final:
                raise
            # the end saves every run's state, even one that cannot be saved (a method
            # holding a module or a lock): every rank learns it below, and the results
            # are written all the same (run_commit.py)
            failure = err.what
        if failure is None:
            failure = try_write(lambda: (self._dir.mkdir(exist_ok=True),
                                         write_atomic(path, data, "checkpoint-write", rank, n)))
        written = ctx.eval_comm.allgather((failure, digest))
        failures = [f for f, _ in written]
        if not any(failures) and rank == 0:
            failure = try_write(lambda: self._point_latest(ctx, n, ranks, [d for _, d in written],
                                                           final))
        failures = [f for f in failures if f] or [ctx.eval_comm.bcast(failure, root=0)]
        if failures[0]:
            path.unlink(missing_ok=True)
            raise self._write_error(ctx, n, failures[0])
        # the previous complete checkpoint stays: a resume falls back to it when this one
        # is damaged (services/checkpoint_choice.py)
        keep = {path} | ({state_path(ctx.run_dir, rank, self.saved_at)}
                         if self.saved_at is not None else set())
        remove_stale(ctx.run_dir, rank, keep=keep)
        self.saved_at = n

    def _point_latest(self, ctx: RunContext, n: int, ranks: int, digests: list[str],
                      final: bool = False) -> None:
        """Rank 0, once every rank has written: ``previous.json`` names the checkpoint
        before (``self.pointer``), then ``latest.json`` the new one."""
        from ..topology import graph_hash
        from .checkpoint_choice import edgelist_sha256
        if self.edgelist_sha256 is None:  # written by the run's set-up, before any checkpoint
            self.edgelist_sha256 = edgelist_sha256(ctx.run_dir)
        info = {"format": FORMAT, "run": self.run_id, "iteration": n, "ranks": ranks,
                "files": digests, "config": config_fingerprint(ctx.cfg),
                "graph_hash": graph_hash(ctx.graph), "edgelist_sha256": self.edgelist_sha256,
                "noise": ctx.state.noise.mode, "delta": ctx.cfg.privacy.delta, "final": final}
        if self.pointer is not None:
            write_pointer(self._dir / PREVIOUS, self.pointer)
        write_pointer(self._dir / LATEST, info)
        self.pointer = info

    def _write_error(self, ctx: RunContext, n: int, failure: str) -> CheckpointWriteError:
        kept = self.saved_at is not None
        kept_text = (f"the checkpoint of iteration {self.saved_at} is kept"
                     if kept else "no earlier checkpoint exists")
        full = "the disk is full: " if failure.split(":", 1)[0] in FULL_DISK_ERRORS else ""
        fix = write_fix(failure, self._dir)
        err = CheckpointWriteError(
            f"{full}the checkpoint of iteration {n} could not be written in "
            f"{self._dir} ({failure}); {kept_text}",
            f"{fix}, then continue with: " + resume_command(ctx.run_dir, ctx.size)
            if kept else f"{fix} and run again")
        err.collective = True  # every rank knows: one message, from rank 0
        return err
