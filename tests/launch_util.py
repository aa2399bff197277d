"""How a test starts a child ``mpiexec`` (or a one-process command) under any MPI.

Every test that launches processes itself goes through here, so that the suite passes
under the ``mpich`` wheel, a system MPICH and a system Open MPI alike:

- the child's environment drops what a launcher set for the test's own process (PMI_*,
  PMIX_*, OMPI_COMM_WORLD_*, Open MPI's job-wiring OMPI_MCA_* ...): a child ``mpiexec``
  that inherits them believes it runs inside a job (Open MPI's then exits 1 without a
  word), and a one-process command that inherits ``PMI_SIZE=4`` refuses as one of K lone
  copies. ``OMPI_ALLOW_RUN_AS_ROOT*`` stays: CI runs as root, and Open MPI refuses root
  without it. The rule is the package's own (``reproduce`` starts its jobs the same way);
- under Open MPI ``mpiexec`` gets ``--oversubscribe`` (the suite runs more ranks than a CI
  machine has cores; MPICH's hydra oversubscribes by default).

Importable from every test module as ``launch_util`` (tests/conftest.py puts tests/ on
the path).
"""
from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from mpi_privopt.commands.launch_line import child_environment, mpiexec_family

#: the mpiexec on PATH (the wheel's in CI; the site script puts the system one first)
MPIEXEC = shutil.which("mpiexec")
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec on PATH")



@functools.cache
def is_open_mpi(mpiexec: str | None = MPIEXEC) -> bool:
    """Whether ``mpiexec`` is Open MPI's launcher (from its ``--version``)."""
    return mpiexec is not None and mpiexec_family(mpiexec) == "Open MPI"


def child_env(extra: Mapping[str, str] | None = None, *,
              base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process: ``base`` (this process's) without what a
    launcher set for this process (the package's own rule, ``child_environment``), with
    ``extra`` on top."""
    env = child_environment(base)
    env.update(extra or {})
    return env


def launcher_flags(mpiexec: str | None = None) -> list[str]:
    """The flags ``mpiexec`` (the one on PATH) needs in the suite, after ``-n K``."""
    return ["--oversubscribe"] if is_open_mpi(mpiexec or MPIEXEC) else []


def mpiexec_command(ranks: int, *args: str, mpiexec: str | None = None) -> list[str]:
    """``mpiexec -n ranks args...`` with the flags this launcher needs in the suite."""
    mpiexec = mpiexec or MPIEXEC
    if mpiexec is None:
        raise RuntimeError("no mpiexec on PATH (mark the test with needs_mpiexec)")
    return [mpiexec, "-n", str(ranks), *launcher_flags(mpiexec), *args]


def run_mpiexec(ranks: int, args: Sequence[str], *, timeout: float, cwd=None,
                env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``mpiexec -n ranks args`` in a clean environment (``env`` added), capturing text."""
    return subprocess.run(mpiexec_command(ranks, *args), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=child_env(env))


#: the rule above and below each of Open MPI's launcher notices ("Primary job terminated
#: normally, but 1 process returned a non-zero exit code...")
OPEN_MPI_RULE = "-" * 74


def without_launcher_notices(stderr: str) -> str:
    """``stderr`` without Open MPI's launcher notices, the ruled blocks its ``mpiexec``
    prints once per job after a non-zero exit (the package's own lines are what a test
    reads; MPICH's hydra prints none for an exit status)."""
    kept, inside = [], False
    for line in stderr.splitlines(keepends=True):
        if line.rstrip("\n") == OPEN_MPI_RULE:
            inside = not inside
        elif not inside:
            kept.append(line)
    return "".join(kept).rstrip("\n") + ("\n" if kept else "")


def run_child(args: str | Sequence[str], *, timeout: float, cwd=None,
              env: Mapping[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run a one-process command (a shell line with ``shell=True``) in a clean environment
    (``env`` added), capturing text."""
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=child_env(env), **kwargs)


def wait_for_file(path: Path, job: subprocess.Popen, timeout: float,
                  what: str = "the paused rank never said so") -> str:
    """Wait (sleeping) until ``path`` exists with some text while ``job`` runs; the text.

    A paused test fault (mpi_privopt/services/faults.py) writes its pid to ``FILE`` and,
    once woken, ``FILE.woke``."""
    deadline = time.monotonic() + timeout
    while not (path.is_file() and path.read_text().strip()):
        assert job.poll() is None, f"the run ended first: {job.communicate()}"
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return path.read_text()


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux: read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:  # field 4: the parent
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (its children, theirs, ...)."""
    return [pid] + [q for child in child_pids(pid) for q in descendants(child)]


def kill_script_and_job(script: subprocess.Popen) -> None:
    """End a launch script started in a session of its own (``launch/local.sh``) and every
    process below it: the launcher, in a process group of its own, and MPICH's proxy and
    ranks, each in a session of its own. What a test leaves when it fails must not run on
    (a paused rank would wait for ever) or stay stopped."""
    if script.poll() is not None:
        return
    groups = [script.pid, *child_pids(script.pid)]  # the script's and the launcher's
    processes = descendants(script.pid)
    for kill, target in [(os.killpg, g) for g in groups] + [(os.kill, p) for p in processes]:
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    script.wait()
