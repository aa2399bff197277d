"""What a launch line needs for the MPI in use. The scripts in launch/ ask its command;
``reproduce`` starts its jobs with :func:`launch_flags` and :func:`child_environment`
(the environment without the starting process's job variables), and so do the tests
(tests/launch_util.py).

``python -m mpi_privopt.commands.launch_line srun-mpi``
    prints the ``srun --mpi=`` plugin for the library mpi4py loads: ``pmi2`` for MPICH
    and its derivatives, ``pmix`` for Open MPI (nothing when unknown: the site's default).
    ``srun`` without the right plugin starts K one-rank worlds (docs/install.md).
``python -m mpi_privopt.commands.launch_line family MPIEXEC``
    prints the launcher's family (``Open MPI``, ``MPICH``; nothing when unknown).
``python -m mpi_privopt.commands.launch_line mpiexec-flags MPIEXEC [--oversubscribe] [--export NAME]...``
    prints the flags ``MPIEXEC`` needs, one per line. For Open MPI's launcher:
    ``--mca odls_base_sigkill_timeout N`` (it kills the ranks 1 s after forwarding
    SIGTERM, too soon for a run to stop at an agreed iteration and save its state;
    MPICH's hydra forwards the signal and waits), ``--oversubscribe`` when asked (Open
    MPI refuses more ranks than slots; hydra allows it) and ``-x NAME`` for each exported
    variable that is set (Open MPI's ranks on other hosts get only what ``-x`` names;
    hydra passes the whole environment). For MPICH's hydra (4.2 and newer, those whose
    help lists it): ``-memory-alloc-kinds mpi,system``, without which a job of more than
    about 350 ranks on one host never leaves ``MPI_Init`` (:data:`HYDRA_KINDS`). ``N`` is
    ``$MPI_PRIVOPT_SIGKILL_TIMEOUT``, 30 s by default (Slurm's default KillWait).
"""
from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .mpi_family import launcher_family, vendor_family

#: what a launcher sets for one process of its job, by prefix (hydra/PMI, PMIx, Open MPI)
_JOB_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCAL")
#: names under those prefixes that the user sets and a child keeps (Open MPI refuses root
#: without the first; the second are the user's MCA settings)
_USER_PREFIXES = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_MCA_")
#: Open MPI's own per-job MCA settings (its launcher sets them in every rank)
_JOB_MCA = ("OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
            "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "OMPI_MCA_mpi_oversubscribe",
            "OMPI_MCA_mpi_yield_when_idle")
#: single names: hydra's, and the task counts and numbers the entry point reads (Slurm's)
_JOB_NAMES = ("MPIR_CVAR_CH3_INTERFACE_HOSTNAME", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID")

#: the srun --mpi= plugin of each MPI family (MPICH's PMI-2 client; Open MPI's PMIx)
SRUN_PLUGINS = {"MPICH": "pmi2", "Intel MPI": "pmi2", "Open MPI": "pmix"}
#: seconds Open MPI's launcher waits after forwarding SIGTERM, unless the user says
SIGKILL_TIMEOUT = 30
#: hydra's flag that answers every rank's MPI_Init query for the job's memory kinds in
#: the proxy. Without it each rank's query (PMI key ``PMI_mpi_memory_alloc_kinds``) goes
#: on to mpiexec and back; with 400 ranks on one host the proxy and mpiexec both block
#: writing those small messages to each other and the job never leaves MPI_Init
#: (docs/performance.md, "500 ranks under MPICH"). ``mpi,system`` is what MPICH grants
#: anyway (a communicator's ``mpi_memory_alloc_kinds`` info is the same with or without)
HYDRA_KINDS = ("-memory-alloc-kinds", "mpi,system")


def set_by_launcher(name: str) -> bool:
    """Whether an environment variable belongs to the job this process runs in (its
    launcher set it), rather than to the user."""
    if name in _JOB_NAMES or name.startswith(_JOB_MCA):
        return True
    return name.startswith(_JOB_PREFIXES) and not name.startswith(_USER_PREFIXES)


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a new job started from this process: ``environ`` (this
    process's, as Python saw it at start) without what a launcher set for this process.

    A child ``mpiexec`` that inherits those believes it runs inside a job (Open MPI's then
    exits 1 without a word), and a one-process command that inherits ``PMI_SIZE=4``
    refuses as one of K lone copies. Passing the result explicitly also leaves out what an
    MPI library adds to the C environment when it starts (an Open MPI singleton does).
    """
    return {k: v for k, v in (os.environ if environ is None else environ).items()
            if not set_by_launcher(k)}


def library_family() -> str | None:
    """The family of the MPI library mpi4py loads, without initialising MPI."""
    import mpi4py
    mpi4py.rc.initialize = False  # no singleton start-up: this process is not a rank
    from mpi4py import MPI
    return vendor_family(MPI.get_vendor()[0])


def srun_plugin(family: str | None) -> str | None:
    """The ``srun --mpi=`` value for an MPI family (None: leave the site's default)."""
    return SRUN_PLUGINS.get(family or "")


def mpiexec_family(mpiexec: str) -> str | None:
    """The MPI family of a launcher, from its ``--version`` (None if it says nothing)."""
    try:
        proc = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return launcher_family(proc.stdout + proc.stderr)


def hydra_knows_kinds(mpiexec: str) -> bool:
    """Whether ``mpiexec`` is a hydra that takes :data:`HYDRA_KINDS` (its help lists it:
    MPICH 4.2 and newer; an older one would refuse the flag, and its ranks ask nothing)."""
    try:
        proc = subprocess.run([mpiexec, "-h"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return HYDRA_KINDS[0] in (proc.stdout + proc.stderr).split()


def mpiexec_flags(family: str | None, *, oversubscribe: bool,
                  sigkill_timeout: int = SIGKILL_TIMEOUT, export: Sequence[str] = (),
                  environ: Mapping[str, str] = os.environ,
                  hydra_kinds: bool = False) -> list[str]:
    """The flags a launcher of ``family`` needs on our launch lines.

    ``export`` names the variables every rank must see (those set in ``environ``).
    ``hydra_kinds``: the launcher is a hydra that takes :data:`HYDRA_KINDS`
    (:func:`hydra_knows_kinds`).
    """
    if family == "MPICH" and hydra_kinds:
        return list(HYDRA_KINDS)
    if family != "Open MPI":
        return []
    flags = ["--mca", "odls_base_sigkill_timeout", str(sigkill_timeout)]
    if oversubscribe:
        flags.append("--oversubscribe")
    for name in export:
        if name in environ:
            flags += ["-x", name]
    return flags


@functools.cache
def launch_flags(mpiexec: str) -> tuple[str, ...]:
    """What a job that the package starts itself with ``mpiexec`` needs on the command
    line: more ranks than cores allowed, time to stop on a signal (Open MPI), hydra's
    start-up past 350 ranks on one host (MPICH)."""
    return tuple(mpiexec_options(mpiexec, oversubscribe=True))


def mpiexec_options(mpiexec: str, *, oversubscribe: bool, export: Sequence[str] = (),
                    environ: Mapping[str, str] = os.environ) -> list[str]:
    """:func:`mpiexec_flags` for the launcher ``mpiexec``, asking it what it is."""
    family = mpiexec_family(mpiexec)
    return mpiexec_flags(family, oversubscribe=oversubscribe,
                         sigkill_timeout=_sigkill_timeout(), export=export, environ=environ,
                         hydra_kinds=family == "MPICH" and hydra_knows_kinds(mpiexec))


def _sigkill_timeout() -> int:
    return int(os.environ.get("MPI_PRIVOPT_SIGKILL_TIMEOUT", SIGKILL_TIMEOUT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpi_privopt.commands.launch_line",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("srun-mpi", help="the srun --mpi= plugin for the MPI mpi4py loads")
    family = sub.add_parser("family", help="the family of MPIEXEC (Open MPI, MPICH; "
                                           "nothing when unknown)")
    family.add_argument("mpiexec")
    flags = sub.add_parser("mpiexec-flags", help="the flags MPIEXEC needs, one per line")
    flags.add_argument("mpiexec")
    flags.add_argument("--oversubscribe", action="store_true",
                       help="the job may run more ranks than slots")
    flags.add_argument("--export", action="append", default=[], metavar="NAME",
                       help="a variable every rank must see (repeatable)")
    args = parser.parse_args(argv)
    if args.what == "srun-mpi":
        print(srun_plugin(library_family()) or "")
        return 0
    if args.what == "family":
        print(mpiexec_family(args.mpiexec) or "")
        return 0
    for flag in mpiexec_options(args.mpiexec, oversubscribe=args.oversubscribe,
                                export=args.export):
        print(flag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
