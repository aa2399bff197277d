"""How a test starts a child ``mpiexec`` (or a one-process command) under any MPI.

Every test that launches processes itself goes through here, so that the suite passes
under the ``mpich`` wheel, a system MPICH and a system Open MPI alike:

- the child's environment drops what a launcher set for the test's own process (PMI_*,
  PMIX_*, OMPI_COMM_WORLD_*, Open MPI's job-wiring OMPI_MCA_* ...): a child ``mpiexec``
  that inherits them believes it runs inside a job (Open MPI then fails to start), and a
  one-process command that inherits ``PMI_SIZE=4`` refuses as one of K lone copies.
  ``OMPI_ALLOW_RUN_AS_ROOT*`` stays: CI runs as root, and Open MPI refuses root without it;
- under Open MPI ``mpiexec`` gets ``--oversubscribe`` (the suite runs more ranks than a CI
  machine has cores; MPICH's hydra oversubscribes by default), and the environment says
  the same to launches the package makes itself (``reproduce``).

Importable from every test module as ``launch_util`` (tests/conftest.py puts tests/ on
the path).
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

import pytest

from mpi_privopt.commands.doctor import launcher_family
from mpi_privopt.entrypoint import LAUNCHER_RANKS, LAUNCHER_SIZES

#: the mpiexec on PATH (the wheel's in CI; the site script puts the system one first)
MPIEXEC = shutil.which("mpiexec")
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec on PATH")

#: what launchers set for one process of a job, by prefix (hydra/PMI, PMIx, Open MPI)
_LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCAL")
#: names under those prefixes that the user sets and a child must keep
_KEEP_PREFIXES = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_MCA_")
#: Open MPI's own per-job MCA settings (orted sets them in every rank's environment)
_OMPI_JOB_MCA = ("OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                 "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "OMPI_MCA_mpi_oversubscribe",
                 "OMPI_MCA_mpi_yield_when_idle")
#: a single name hydra sets
_HYDRA_NAMES = ("MPIR_CVAR_CH3_INTERFACE_HOSTNAME",)


def _set_by_launcher(name: str) -> bool:
    if name in LAUNCHER_SIZES or name in LAUNCHER_RANKS or name in _HYDRA_NAMES:
        return True
    if name.startswith(_OMPI_JOB_MCA):
        return True
    return name.startswith(_LAUNCHER_PREFIXES) and not name.startswith(_KEEP_PREFIXES)


@functools.cache
def is_open_mpi(mpiexec: str | None = MPIEXEC) -> bool:
    """Whether ``mpiexec`` is Open MPI's launcher (from its ``--version``)."""
    if mpiexec is None:
        return False
    proc = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                          timeout=60, env=child_env(oversubscribe=False))
    return launcher_family(proc.stdout + proc.stderr) == "Open MPI"


def child_env(extra: Mapping[str, str] | None = None, *, base: Mapping[str, str] | None = None,
              oversubscribe: bool = True) -> dict[str, str]:
    """The environment for a child process: ``base`` (this process's) without what a
    launcher set for this process, with ``extra`` on top.

    Under Open MPI (``oversubscribe``) it also lets the package's own launches
    (``reproduce``) run more ranks than cores, as ``--oversubscribe`` does for ours.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not _set_by_launcher(k)}
    if oversubscribe and is_open_mpi():
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
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


def run_child(args: str | Sequence[str], *, timeout: float, cwd=None,
              env: Mapping[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run a one-process command (a shell line with ``shell=True``) in a clean environment
    (``env`` added), capturing text."""
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=child_env(env), **kwargs)
