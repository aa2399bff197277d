"""A job's pre-MPI check done once per host: the first task checks, the others read its verdict.

Every task of a ``run`` checks its input before MPI starts (:mod:`mpi_privopt.prelaunch`),
so that bad input makes every task exit 2 with one message. The check is the same on
every task of a job, so the first task of the host to get here runs it and writes the
*verdict*: the error message, or none and the lines the first task prints. The other tasks
sleep until it is written and read it: the same exit, without each loading the config,
the method, the checkpoint rules and the noise outlook again. The locking is the graph
cache's (:func:`mpi_privopt.graph_cache._lock`: the first task holds the key's lock
exclusively, the others wait for it shared, asleep in the kernel, and wake together).

The key is the SHA-256 of the check's inputs (the config's name and, for a file, its
contents; the ``--set`` overrides; the agent count; the resumed run directory) **and of
the job**: the launcher's job variables where it sets them (``SLURM_JOB_ID``,
``PMIX_NAMESPACE``, ...) and the process that started this task on this host (the
launcher's proxy, e.g. hydra's ``hydra_pmi_proxy``: its pid and start time). So a verdict
serves only the tasks of one job, which all see the same files: a later job checks
afresh (a data file, a checkpoint or a user module may have changed in between), and a
task started through a wrapper of its own simply checks alone, as before. A verdict that
cannot be read or does not match its key is ignored, and the task checks for itself.

Where: the graph cache's directory (:func:`mpi_privopt.graph_cache.cache_dir`), in its
``checks`` subdirectory; ``MPI_PRIVOPT_CACHE_DIR=off`` turns both off (every task
checks). A job of one task (no launcher) checks without the cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Verdict", "check_once_per_host", "job_identity", "check_key", "JOB_VARIABLES",
           "announce_task_0", "open_gate", "wait_at_gate"]

#: the verdict files' format; a change makes every older verdict unread
FORMAT = 2
#: what launchers set to name the job (and its step), where they name it at all
JOB_VARIABLES = ("SLURM_JOB_ID", "SLURM_STEP_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                 "OMPI_MCA_orte_ess_jobid", "PBS_JOBID", "LSB_JOBID")


@dataclass(frozen=True)
class Verdict:
    """The outcome of a pre-MPI check: ``error`` (the message to print, None if the input is
    good), ``notes`` (what task 0 prints before a good run starts) and ``preload`` (the
    modules task 0 loads before MPI starts: :func:`~mpi_privopt.prelaunch.preload_for_rank_0`)."""

    error: str | None = None
    notes: list[str] = field(default_factory=list)
    preload: list[str] = field(default_factory=list)


def _start_time(pid: int) -> str:
    """When process ``pid`` started (Linux: clock ticks since boot), so that a reused pid
    is another key; empty where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def job_identity(environ: Mapping[str, str]) -> dict[str, str]:
    """What names this task's job on this host: the launcher's job variables and the
    parent process (pid and start time)."""
    parent = os.getppid()
    return {**{name: environ[name] for name in JOB_VARIABLES if name in environ},
            "parent": str(parent), "parent_start": _start_time(parent)}


def check_key(config: str | None, overrides: list[str], n_ranks: int, resume: str | None,
              environ: Mapping[str, str]) -> str:
    """The SHA-256 naming the verdict of one check of one job (see the module docstring)."""
    contents = ""
    if config is not None:
        with contextlib.suppress(OSError):
            path = Path(config).expanduser()
            if path.is_file():
                contents = hashlib.sha256(path.read_bytes()).hexdigest()
    inputs = {"format": FORMAT, "config": config, "config_sha256": contents,
              "overrides": list(overrides), "n_ranks": n_ranks, "resume": resume,
              "job": job_identity(environ)}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def check_once_per_host(key: str, check: Callable[[], Verdict]) -> Verdict:
    """``check()``'s verdict, computed by one task of the host and read by the others.

    Parameters
    ----------
    key : str
        :func:`check_key` of the check.
    check : callable
        The check itself; returns a :class:`Verdict` (a user error is a verdict, not an
        exception). Any exception it raises is raised on the task that ran it, and the
        waiting tasks then check for themselves.

    Returns
    -------
    Verdict
        The same on every task of the job on this host.
    """
    from .graph_cache import BUILDER, NO_LOCK, _lock, cache_dir
    directory = cache_dir("checks")
    if directory is None:
        return check()
    path = directory / f"{key}.json"
    verdict = _read(path, key)
    if verdict is None:
        with _lock(directory / f"{key}.lock") as role:
            verdict = None if role == NO_LOCK else _read(path, key)
            if verdict is None:  # the first task; or it failed; or no locks here
                verdict = check()
                if role == BUILDER:
                    _write(path, key, verdict)
                    _prune(directory)
    return verdict


#: the longest a task waits at the gate for task 0 (then it goes on to MPI_Init: no hang)
GATE_WAIT_SECONDS = 300.0
#: task 0's hold on its gate (an open file locked exclusively), until it opens the gate
_gate_fd: int | None = None


def _gate_file(key: str, suffix: str) -> Path | None:
    directory = cache_dir_checks()
    return None if directory is None else directory / f"{key}.{suffix}"


def cache_dir_checks() -> Path | None:
    """The verdicts' directory (None: no cache)."""
    from .graph_cache import cache_dir
    return cache_dir("checks")


def announce_task_0(key: str) -> None:
    """Task 0 is on this host: it holds the job's gate closed until :func:`open_gate`
    (the others sleep at it: :func:`wait_at_gate`).

    The gate is a file locked exclusively before it gets its name (a temporary file
    renamed), so that a task that sees it finds it closed. Where that fails (no cache, no
    locks on this filesystem) there is no gate and the others go on at once.
    """
    import fcntl
    global _gate_fd
    path = _gate_file(key, "gate")
    if path is None or _gate_fd is not None:
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(tmp, path)
    except OSError:  # e.g. ENOLCK: no gate
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return
    _gate_fd = fd


def open_gate(key: str) -> None:
    """Task 0 is ready to start MPI: the tasks sleeping at the gate wake and go on (the
    lock is let go; it is let go too if task 0 dies first)."""
    global _gate_fd
    if _gate_fd is not None:
        os.close(_gate_fd)
        _gate_fd = None


def wait_at_gate(key: str) -> None:
    """Before MPI_Init, sleep until task 0 of this job is ready too, if it is on this host.

    Task 0 alone loads what it computes for everyone (:func:`~mpi_privopt.prelaunch.
    preload_for_rank_0`) after the check, and the others would wait for it inside
    ``MPI_Init``, where MPICH keeps testing (at 50 ranks on 2 cores, about a core
    between them: measured 0.16 s of CPU per waiting task over 7 s), taking the cores
    task 0 needs. Here they sleep instead, in the kernel (a shared lock on the gate that
    task 0 holds exclusively: no polling), all wake when task 0 lets it go, and start MPI
    together. A task that finds no gate (another node, a task 0 not yet started, a task
    started through a wrapper of its own: another key) goes on at once, as before; one
    that waits :data:`GATE_WAIT_SECONDS` goes on too.
    """
    import fcntl
    import threading
    path = _gate_file(key, "gate")
    if path is None:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # no gate: no task 0 on this host (yet)

    def take() -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_SH)  # asleep until task 0 lets go

    # the lock is taken in a thread so that the wait has a limit (a blocking flock has
    # none); the main thread sleeps on the join, and signals still reach it
    waiter = threading.Thread(target=take, name="mpi_privopt-gate", daemon=True)
    waiter.start()
    waiter.join(GATE_WAIT_SECONDS)
    if not waiter.is_alive():
        os.close(fd)  # (a waiter still blocked keeps its file: closing it under it races)


#: verdicts (and their locks) older than this are deleted by the next job's first task:
#: each serves one job's start-up, a few seconds
PRUNE_SECONDS = 24 * 3600.0


def _prune(directory: Path) -> None:
    """Delete the files of ``directory`` older than :data:`PRUNE_SECONDS` (one per job
    would otherwise pile up)."""
    import time
    limit = time.time() - PRUNE_SECONDS
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < limit:
                    os.unlink(entry.path)


def _write(path: Path, key: str, verdict: Verdict) -> None:
    """Write ``verdict`` whole or not at all (temporary file renamed over ``path``)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"format": FORMAT, "key": key, "error": verdict.error,
                           "notes": list(verdict.notes), "preload": list(verdict.preload)}, f)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass  # a full or read-only disk: the others check for themselves


def _read(path: Path, key: str) -> Verdict | None:
    """The verdict in ``path``, or None if there is none or it is not a valid one for ``key``."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        error, printed, preload = data["error"], data["notes"], data["preload"]
        if (data["format"] != FORMAT or data["key"] != key
                or not (error is None or isinstance(error, str))
                or not all(isinstance(x, list) and all(isinstance(n, str) for n in x)
                           for x in (printed, preload))):
            return None
        return Verdict(error, printed, preload)
    except (OSError, ValueError, KeyError, TypeError):
        return None
