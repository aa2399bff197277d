"""``python -m mpi_privopt doctor``: which MPI a run will really use, and whether the
launcher on PATH belongs to it.

A launcher of one MPI (Open MPI's ``mpirun``) starting an mpi4py built for another (MPICH)
gives K one-rank worlds (K copies of a one-agent run): the most common cluster mistake,
found here before a job is submitted.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from .mpi_family import FAMILIES, launcher_family, vendor_family  # noqa: F401 (re-exported)

@dataclass
class MPIFacts:
    """What this machine offers a run."""

    library: str            # the libmpi mpi4py loaded
    vendor: str             # its vendor, as mpi4py names it
    version: str
    launcher: str | None    # the mpiexec on PATH
    launcher_family: str | None
    launcher_text: str


def mismatch(facts: MPIFacts) -> str | None:
    """Why the launcher on PATH will not start this MPI's ranks together, or None."""
    if facts.launcher is None:
        return "no mpiexec on PATH: install the mpich extra or load the site's MPI module"
    wanted = vendor_family(facts.vendor)
    if wanted and facts.launcher_family and wanted != facts.launcher_family:
        return (f"mpi4py loaded {facts.vendor} but {facts.launcher} is {facts.launcher_family}'s "
                "launcher: each rank would see a world of one (K one-agent copies); put "
                f"{wanted}'s mpiexec first on PATH, or rebuild mpi4py against "
                f"{facts.launcher_family} (pip install --no-binary=mpi4py mpi4py)")
    return None


def many_ranks_note(facts: MPIFacts, hydra_kinds: bool) -> str | None:
    """What a person typing ``mpiexec -n K`` with K in the hundreds must add, or None.

    ``hydra_kinds``: the launcher is a hydra that takes ``-memory-alloc-kinds``; without
    it more than about 350 ranks on one host never leave ``MPI_Init``
    (docs/performance.md, "500 ranks under MPICH"). The launch scripts add it themselves.
    """
    if facts.launcher_family != "MPICH" or not hydra_kinds:
        return None
    return ("past about 300 ranks on one host add -memory-alloc-kinds mpi,system to a "
            "hand-typed mpiexec (without it 400 and 500 ranks hung in MPI_Init; "
            "launch/local.sh adds it)")


def gather_facts() -> MPIFacts:
    from mpi4py import MPI

    vendor, version = MPI.get_vendor()
    library = subprocess.run([sys.executable, "-m", "mpi4py", "--mpi-library"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    launcher = shutil.which("mpiexec")
    text = ""
    if launcher is not None:
        try:
            proc = subprocess.run([launcher, "--version"], capture_output=True, text=True,
                                  timeout=60)
            text = proc.stdout + proc.stderr
        except (OSError, subprocess.TimeoutExpired) as err:
            text = f"({launcher} --version failed: {err})"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    versioned = [line for line in lines if "version" in line.lower() or "(" in line]
    return MPIFacts(library=library or "(unknown)", vendor=vendor,
                    version=".".join(map(str, version)), launcher=launcher,
                    launcher_family=launcher_family(text) if text else None,
                    launcher_text=(versioned or lines or [""])[0])


def launcher_name(facts: MPIFacts) -> str:
    """The launcher's MPI as a person names it: ``MPICH 5.0.2``, ``Open MPI 4.1.4``, or
    the family with its ``--version`` line (spaces collapsed) when it names no version."""
    family = facts.launcher_family or "unknown MPI"
    version = re.search(r"\b\d+(?:\.\d+)+\b", facts.launcher_text)
    if version:
        return f"{family} {version.group(0)}"
    text = " ".join(facts.launcher_text.split())  # hydra pads its fields with spaces
    return f"{family}: {text}" if text else family


def left_shm_line(remove_them: bool) -> str | None:
    """What stopped jobs left in /dev/shm (mpi_privopt/shm_segments.py), or None."""
    from .. import shm_segments

    left = shm_segments.left_behind()
    if not left.names:
        return None
    if remove_them:
        return f"removed the {shm_segments.remove(left).describe()} that no process used"
    return (f"{left.describe()} that no process uses, left by stopped MPI jobs: "
            "python -m mpi_privopt doctor --remove-left-shm frees that memory")


def main(args) -> int:
    facts = gather_facts()
    try:
        return _report(facts)
    finally:
        shm = left_shm_line(args.remove_left_shm)
        if shm:
            print(f"shared memory {shm}")


def _report(facts: MPIFacts) -> int:
    print(f"MPI library   {facts.library} ({facts.vendor} {facts.version}, loaded by mpi4py)")
    print(f"launcher      {facts.launcher or 'none on PATH'}"
          + (f" ({launcher_name(facts)})" if facts.launcher else ""))
    problem = mismatch(facts)
    if problem:
        print(f"warning       {problem}", file=sys.stderr)
        return 1
    print("ok            the launcher on PATH starts this MPI's ranks together")
    from .launch_line import hydra_knows_kinds
    note = many_ranks_note(facts, facts.launcher is not None
                           and facts.launcher_family == "MPICH"
                           and hydra_knows_kinds(facts.launcher))
    if note:
        print(f"many ranks    {note}")
    return 0
