"""A resume: refuse one that differs from the run, load the saved state, keep the budget.

``run --resume DIR`` continues the run in ``DIR`` from its last checkpoint
(mpi_privopt/services/checkpoint_files.py). Before MPI starts, :func:`check_resume_input`
refuses a resume whose config (but ``run.iterations``), rank count or graph differ from the
run's, or whose ``graph.edgelist`` was edited, naming what differs. Once set up,
:func:`resume_run` has every rank check its checkpoint file before it reads a byte of it
(falling back to the previous checkpoint, with a warning, when the latest is damaged:
mpi_privopt/services/checkpoint_choice.py), loads every rank's saved state in place of the
fresh one, and refuses a ``run.iterations`` whose planned releases would
take an agent past ``privacy.epsilon`` (:func:`refuse_overspend`: the spent budget is the
restored ledger's, never reset). A resume of a secure-noise run first books what the run
may have released after the checkpoint (:func:`book_gap`,
mpi_privopt/services/release_gap.py). Every step is agreed, so a failure on any rank is
one message.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter

from .. import display
from ..errors import ConfigError
from .base import RunContext
from .checkpoint import Checkpointer, decode_roots, restore_state
from .state_codec import StateDecodeError
from .checkpoint_choice import EDGELIST, choose, edgelist_sha256, usable_pointer
from .checkpoint_files import (CHECKPOINT_DIR, LATEST, config_fingerprint, remove_stale,
                               resume_command, state_path)
from .release_gap import gap_windows, log_resume, logged_resumes

__all__ = ["Resume", "book_gap", "check_resume_input", "is_final", "loop_start",
           "refuse_overspend", "resume_run", "run_iterations"]


@dataclass
class Resume:
    """What a resumed session starts from."""

    iteration: int
    algorithm_seconds: float
    eval_seconds: float
    #: the run's wall time at its end (a final checkpoint's; None for any other)
    wall_seconds: float | None = None


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


def check_resume_input(run_dir: str | Path, cfg, graph, n_ranks: int) -> dict:
    """Refuse (ConfigError, naming what differs) a resume of ``run_dir`` with ``cfg``,
    ``graph`` and ``n_ranks`` agents; return ``latest.json`` (``previous.json`` when
    ``latest.json`` is damaged: the resume then falls back, services/checkpoint_choice.py).
    Needs no MPI. A damaged pointer is a ConfigError too (CheckpointDamaged)."""
    info = usable_pointer(run_dir)
    if info is None:
        raise ConfigError(f"{run_dir} has no checkpoint to resume from "
                          f"(no {CHECKPOINT_DIR}/{LATEST}: the run was ended before its "
                          "end without run.checkpoint_every, or by an older version)",
                          "a run writes one at its end, every run.checkpoint_every "
                          "iterations and at SIGTERM/SIGINT; start a new run instead")
    check_pointer(run_dir, info, cfg, graph, n_ranks)
    return info


def check_pointer(run_dir: str | Path, info: dict, cfg, graph, n_ranks: int) -> None:
    """Refuse (ConfigError) a resume of the checkpoint ``info`` with another config, rank
    count, graph, an edited ``graph.edgelist`` or too few iterations."""
    from ..topology import graph_hash
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
    recorded, now = info.get("edgelist_sha256"), edgelist_sha256(run_dir)
    if recorded is not None and now is not None and now != recorded:
        raise ConfigError(
            f"{Path(run_dir) / EDGELIST} was changed after the run wrote it (SHA-256 "
            f"{now[:12]} now, {recorded[:12]} then): it records the graph the run uses, "
            "which a resume cannot change",
            f"restore the file from a copy, or delete it (the resume writes it again from "
            f"the run's graph); to run on another graph, start a new run (topology.kind = "
            f"\"file\", topology.file = your edge list)")
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


def refuse_overspend(ctx: RunContext, first: int) -> None:
    """Raise ConfigError when the releases planned for iterations ``first`` .. T would
    take this agent past ``privacy.epsilon`` (the spent budget is the restored ledger's:
    it is never reset). Methods that cannot say their plan ahead (no
    ``planned_events``) are held by the ledger's guard, release by release."""
    from ..privacy.accountants import Budget
    ledger, last = ctx.state.ledger, ctx.cfg.run.iterations
    if math.isinf(ledger.budget):
        return
    events = ctx.state.algorithm.planned_events(first, last)
    if events is None:
        return
    after = ledger.total
    spent = after.epsilon(ledger.delta)["best"]
    assumed = (f", {ledger.assumed_iterations} iterations of it booked as released before "
               "an interruption (assumed)" if ledger.assumed else "")
    for event in events:
        after.add(event)
    if not after.within(Budget.of(ledger.budget, ledger.delta)):
        eps = after.epsilon(ledger.delta)["best"]
        raise ConfigError(
            f"resuming to run.iterations = {last} would take agent {ctx.rank}'s "
            f"privacy loss from epsilon {display.loss(spent)} (spent by iteration "
            f"{first - 1}{assumed}) to {display.loss(eps)} at delta "
            f"{display.exact(ledger.delta)}{ledger.labelled()}, over "
            f"privacy.epsilon = {display.exact(ledger.budget)}; "
            "nothing was released",
            "the spent budget is never reset: keep the run as it is, or resume to fewer "
            "iterations")


def book_gap(ctx: RunContext, info: dict, damaged_latest: int | None) -> list[tuple[int, int]]:
    """Book into this agent's ledger, before any release, what a secure-noise run may have
    released after the checkpoint ``info`` (falling back from a damaged latest checkpoint
    of iteration ``damaged_latest``): the method's planned releases of every window
    :func:`~mpi_privopt.services.release_gap.gap_windows` bounds. The windows booked ([]
    for seeded noise, whose re-run releases nothing new). Collective on ``ctx.eval_comm``.

    Raises
    ------
    ConfigError
        On every rank: when a window is past ``run.iterations`` (the plan does not reach
        it), or the method cannot say its releases ahead (no ``planned_events``) and its
        loss is not unbounded already.
    """
    from ..mpiutil import agree
    cfg = ctx.cfg
    if cfg.privacy.noise != "secure":
        return []
    comm = ctx.eval_comm
    windows = agree(comm, lambda: gap_windows(
        info, damaged_latest, cfg.run.checkpoint_every, logged_resumes(ctx.run_dir),
        run_iterations(ctx.run_dir)) if ctx.rank == 0 else None)
    windows = comm.bcast(windows)  # one file read: every rank books the same windows
    if not windows:
        return []
    at, last = info["iteration"], max(end for _first, end in windows)
    described = ", ".join(f"{first} to {end}" for first, end in windows)

    def book() -> bool:
        if last > cfg.run.iterations:
            raise ConfigError(
                f"this run draws its noise from OS entropy (privacy.noise = \"secure\") "
                f"and may have released iterations {described} after the checkpoint of "
                f"iteration {at}; run.iterations = {cfg.run.iterations} does not reach "
                "them, so their releases cannot be booked from the method's plan",
                f"resume with --set run.iterations={last} or more")
        algorithm = ctx.state.algorithm
        planned = [algorithm.planned_events(first, end) for first, end in windows]
        if any(events is None for events in planned) and ctx.state.ledger.total.unbounded:
            return False  # messages in the clear: the loss is unbounded, nothing to lose
        if any(events is None for events in planned):
            raise ConfigError(
                f"this run draws its noise from OS entropy (privacy.noise = \"secure\") "
                f"and may have released iterations {described} after the checkpoint of "
                f"iteration {at}; a resume would release them again with fresh noise, and "
                f"{algorithm.name} cannot say its releases ahead (no planned_events), so "
                "the privacy spent the first time cannot be booked",
                "start a new run (a resume from a run's end or a signal's stop books "
                "nothing; privacy.noise = \"fast\" runs resume without this)")
        for (first, end), events in zip(windows, planned):
            ctx.state.ledger.book_assumed(events, first, end)
        return True
    return windows if agree(comm, book) else []


def _decoded(ctx: RunContext, info: dict, record: dict) -> dict:
    """This rank's saved objects (no MPI: a failure here is agreed before any rank goes on
    to the collective restore)."""
    path = state_path(ctx.run_dir, ctx.rank, info["iteration"])
    try:
        return decode_roots(ctx, record["state"])
    except StateDecodeError as err:
        raise ConfigError(f"agent {ctx.rank}'s checkpoint file {path} is refused: {err}",
                          "a checkpoint may hold only data, numpy arrays and generators, "
                          "and objects of the package's classes (docs/reliability.md, "
                          "\"What a resume reads\"): resume only "
                          "checkpoints this version wrote, from a run directory you "
                          "trust") from None
    except Exception as err:  # noqa: BLE001 (the file checks: this code cannot read it)
        raise ConfigError(f"agent {ctx.rank}'s checkpoint file {path} cannot be loaded "
                          f"({type(err).__name__}: {err}); the file checks (its SHA-256 "
                          "matches), so this version, or the modules the config names, "
                          "cannot read the state it holds",
                          "resume with the mpi_privopt version and modules that wrote it, "
                          "or start a new run") from None


def resume_from(ctx: RunContext) -> tuple[RunContext, Resume, dict, str | None, int | None]:
    """This rank's saved state loaded in place of the fresh set-up's (``ctx``), once every
    rank's file is checked, with the checkpoint's pointer, the fallback warning and the
    damaged latest checkpoint's iteration (both None when it is the latest checkpoint).
    Collective; each step is agreed."""
    from ..mpiutil import agree  # MPI: not at import (check_resume_input runs before it)
    info, record, warning, damaged = agree(
        ctx.eval_comm, lambda: choose(ctx.eval_comm, ctx.run_dir, ctx.rank))
    if warning is not None:  # the previous checkpoint: the same run, checked again
        agree(ctx.eval_comm, lambda: check_pointer(ctx.run_dir, info, ctx.cfg, ctx.graph,
                                                   ctx.size))
    roots = agree(ctx.eval_comm, lambda: _decoded(ctx, info, record))
    restored = restore_state(ctx, roots)  # collective: every rank has its objects
    meta = record["meta"]
    return replace(ctx, state=restored), Resume(
        iteration=meta["iteration"], algorithm_seconds=meta["algorithm_seconds"],
        eval_seconds=meta["eval_seconds"], wall_seconds=meta.get("wall_seconds")), \
        info, warning, damaged


def resume_run(ctx: RunContext, checkpoints: Checkpointer) -> tuple[RunContext, Resume]:
    """Continue the run in ``ctx.run_dir``: the context with this rank's saved state, and
    where the run resumes. Keeps the metrics measured up to the checkpoint, and refuses a
    plan that would overspend the budget. Every step is agreed, so a failure on any rank
    is one message."""
    from ..mpiutil import agree
    fresh = ctx.state.algorithm  # built by the resume's set-up for its run.iterations
    restored, resumed, info, warning, damaged = resume_from(ctx)
    remove_stale(ctx.run_dir, ctx.rank)  # partial files only: both checkpoints stay
    checkpoints.saved_at = resumed.iteration  # the end's commit does not write it again
    checkpoints.run_id, checkpoints.pointer = info.get("run"), info
    checkpoints.edgelist_sha256 = info.get("edgelist_sha256")
    if ctx.rank == 0 and warning is not None:
        print(f"mpi_privopt: warning: {warning}", file=sys.stderr, flush=True)
    cfg = ctx.cfg
    finishing = resumed.iteration == cfg.run.iterations
    if not finishing:
        # a method whose public plan covers only the iterations it was set up for takes
        # the longer one from the resume's fresh set-up (token-admm's schedule)
        agree(ctx.eval_comm, lambda: restored.state.algorithm.extend(fresh, cfg.run.iterations))
    # secure noise: what the run may have released after the checkpoint, booked before
    # any release (and before the budget check, which must count it)
    gap = book_gap(restored, info, damaged)
    if ctx.rank == 0 and gap:
        print(f"mpi_privopt: note: {_gap_text(gap)}", file=sys.stderr, flush=True)
    if not finishing:
        agree(ctx.eval_comm, lambda: refuse_overspend(restored, resumed.iteration + 1))
    if not finishing and cfg.privacy.noise == "secure":
        # this session's own releases die with it if it is killed before a checkpoint:
        # the next resume reads this record (durable before any rank releases: agreed)
        agree(ctx.eval_comm, lambda: log_resume(ctx.run_dir, resumed.iteration,
                                                cfg.run.iterations)
              if ctx.rank == 0 else None)
    if ctx.directory is not None:
        # what the earlier part wrote at its end is not this run's end: a resume that
        # is killed must show as failed at its checkpoint, not as the earlier part's stop
        for name in ("summary.json", "traffic.json", "privacy.json", "models.npz"):
            (ctx.directory.path / name).unlink(missing_ok=True)
        ctx.directory.write_config(cfg.to_toml())  # its run.iterations, now accepted
        ctx.directory.resume_metrics(resumed.iteration)
        if edgelist_sha256(ctx.run_dir) is None:  # deleted: written again (check_pointer)
            ctx.directory.write_graph(ctx.graph)
        if ctx.stream is not None:
            print(f"the checkpoint of iteration {resumed.iteration} is the run's end: "
                  "its results are written from it (no iteration is run, nothing is "
                  "released)" if finishing else
                  f"resumed from the checkpoint of iteration {resumed.iteration}",
                  file=ctx.stream, flush=True)

    return restored, resumed


def _gap_text(windows: list[tuple[int, int]]) -> str:
    count = sum(end - first + 1 for first, end in windows)
    described = ", ".join(f"{first} to {end}" for first, end in windows)
    return (f"booked {count} iterations ({described}) as released before the interruption "
            "(assumed: with privacy.noise = \"secure\" the releases the run made after its "
            "checkpoint are not in its ledger and are not repeated exactly)")


def loop_start(resumed: Resume | None) -> tuple[int, float]:
    """The first iteration to run and the loop's clock origin (a resumed run's elapsed
    time goes on from what it had measured)."""
    if resumed is None:
        return 1, perf_counter()
    before = resumed.algorithm_seconds + resumed.eval_seconds
    return resumed.iteration + 1, perf_counter() - before
