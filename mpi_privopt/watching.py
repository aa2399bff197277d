"""Whether a person is watching this process's progress line (``run.progress = "auto"``).

Under ``mpiexec`` rank 0's stderr is a pipe to the launcher, so ``isatty`` says no even
when the launcher writes to a terminal. A person is taken to be watching when, in order:

1. this process's stderr is a terminal (no launcher in between): yes;
2. ``MPI_PRIVOPT_TERMINAL=0`` is in the environment: no;
3. the launcher that started this process writes its stderr (where it forwards rank 0's)
   to a terminal: yes. Found by walking the parent processes in ``/proc`` up to the
   launcher (``mpiexec``, ``mpirun``, ``hydra_pmi_proxy``, ``orted``, ``prterun``, ...)
   and reading where its descriptor 2 points (``/dev/pts/N``, ``/dev/ttyN``);
4. a batch job (``SLURM_JOB_ID``, ``PBS_JOBID``) whose launcher was not found on a
   terminal: no (its output goes to a file);
5. ``MPI_PRIVOPT_TERMINAL=1`` is in the environment: yes. ``launch/local.sh`` sets it when
   its own stderr is a terminal, for launchers the walk cannot follow (``srun``'s ranks
   are children of ``slurmstepd``, not of ``srun``; a system without ``/proc``);
6. otherwise no: a log file or a pipe into another program gets no progress line.

:func:`someone_watching` is the decision alone, a pure function of the environment and
the two terminal tests, so that it can be tested without processes.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TextIO

__all__ = ["TERMINAL_VARIABLE", "LAUNCHERS", "someone_watching", "launcher_on_terminal",
           "is_terminal", "watched"]

#: the environment variable that says a person watches (1) or not (0)
TERMINAL_VARIABLE = "MPI_PRIVOPT_TERMINAL"
#: process names (``/proc/PID/comm``, at most 15 characters) of launchers and their
#: per-host proxies; the walk stops after the outermost one
LAUNCHERS = frozenset({
    "mpiexec", "mpirun", "mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich",
    "mpiexec.openmpi", "mpirun.openmpi", "orterun", "prterun", "srun",  # the user's
    "hydra_pmi_proxy", "orted", "prted", "slurmstepd",                   # proxies
})
#: the launchers a user starts (the walk ends there: above it is the user's shell)
_OUTERMOST = frozenset({"mpiexec", "mpirun", "mpiexec.hydra", "mpiexec.mpich",
                        "mpirun.mpich", "mpiexec.openmpi", "mpirun.openmpi", "orterun",
                        "prterun", "srun"})
#: what a terminal's device path looks like
_TERMINAL = re.compile(r"^/dev/(pts/\d+|tty\w*|console)$")
#: the most parents looked at (a launcher is a few levels up)
_MAX_DEPTH = 12
#: what a batch job's environment holds
_BATCH_VARIABLES = ("SLURM_JOB_ID", "PBS_JOBID")


def someone_watching(environ: Mapping[str, str], stderr_tty: bool,
                     launcher_tty: bool | None) -> bool:
    """Whether a person watches (the module docstring's rules, in order).

    Parameters
    ----------
    environ : mapping
        The process's environment.
    stderr_tty : bool
        Whether this process's stderr is a terminal.
    launcher_tty : bool or None
        Whether the launcher's stderr is a terminal; None when no launcher was found.
    """
    if stderr_tty:
        return True
    flag = environ.get(TERMINAL_VARIABLE, "").strip()
    if flag == "0":
        return False
    if launcher_tty:
        return True
    if any(environ.get(name) for name in _BATCH_VARIABLES):
        return False
    return flag == "1"


def _stat(proc: str, pid: int) -> tuple[str, int] | None:
    """(name, parent pid) of ``pid`` from ``proc/PID/stat``; None if it cannot be read."""
    try:
        with open(os.path.join(proc, str(pid), "stat")) as handle:
            text = handle.read()
    except OSError:
        return None
    # the name is in parentheses and may itself hold spaces or parentheses
    open_, close = text.find("("), text.rfind(")")
    fields = text[close + 2:].split()
    if open_ < 0 or close < 0 or len(fields) < 2:
        return None
    return text[open_ + 1:close], int(fields[1])


def _on_terminal(proc: str, pid: int, fd: int = 2) -> bool:
    try:
        target = os.readlink(os.path.join(proc, str(pid), "fd", str(fd)))
    except OSError:  # gone, or another user's process
        return False
    return bool(_TERMINAL.match(target))


def launcher_on_terminal(pid: int | None = None, proc: str = "/proc") -> bool | None:
    """Whether the launcher above process ``pid`` (this one by default) writes its stderr
    to a terminal: True or False, or None when no launcher is among its parents (or
    ``proc`` cannot be read).

    Every launcher and proxy on the way up is looked at, up to the outermost launcher
    (a proxy's stderr is a pipe to the launcher; the launcher's is the user's).
    """
    pid = os.getpid() if pid is None else pid
    found = False
    for _ in range(_MAX_DEPTH):
        entry = _stat(proc, pid)
        if entry is None:
            break
        name, parent = entry
        if name in LAUNCHERS:
            found = True
            if _on_terminal(proc, pid):
                return True
            if name in _OUTERMOST:
                break
        if parent <= 1:
            break
        pid = parent
    return False if found else None


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (False for a closed or fake stream)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def watched(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a person watches ``stream`` (stderr), by :func:`someone_watching`."""
    environ = os.environ if environ is None else environ
    stderr_tty = is_terminal(stream)
    if stderr_tty or environ.get(TERMINAL_VARIABLE, "").strip() == "0":
        return stderr_tty
    return someone_watching(environ, stderr_tty, launcher_on_terminal())
