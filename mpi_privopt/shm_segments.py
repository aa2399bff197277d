"""Shared-memory segments an MPI job left in ``/dev/shm`` when it was stopped.

MPICH keeps its ranks' shared-memory segments (``/dev/shm/mpich_shm_*``; UCX, under Open
MPI, ``ucx_shm_posix_*``) as files while a job runs and removes them in ``MPI_Finalize``. A job that does not reach it, because a rank
was killed, the job aborted on an error or the launcher was stopped, leaves them behind:
``/dev/shm`` is memory, so each such job keeps its segments' memory until the machine
restarts (one segment per host and job, about 1 MiB at 2 ranks and growing with K; on the
development machine 977 of them held 4.2 GiB after a few days of fault tests,
docs/reliability.md "Shared memory left by a stopped job").

A segment is *left behind* when it is a file of this user's that no process maps, in two
looks :data:`SETTLE` seconds apart (a job that has just created a segment maps it within
microseconds: the second look covers that moment; a segment's times do not help, the
ranks' writes move them). :func:`clean_after` removes only the
segments that appeared while a job ran (compared with a :func:`snapshot` from before):
the launch scripts call it when their job ends. ``python -m mpi_privopt doctor`` counts
every left-behind segment of this user and ``doctor --remove-left-shm`` removes them.

Command line (launch/local.sh)::

    python -m mpi_privopt.shm_segments snapshot FILE
    python -m mpi_privopt.shm_segments clean-after FILE
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LeftSegments", "SETTLE", "clean_after", "left_behind", "mapped", "remove",
           "snapshot"]

SHM = Path("/dev/shm")
#: the segments of the MPIs we know to leave them: MPICH's ch4 POSIX shared memory, and
#: UCX's POSIX shared memory (Open MPI over UCX; 8 such files, 17 MB, were left on the
#: development machine by its Open MPI jobs)
PREFIXES = ("mpich_shm_", "ucx_shm_posix_")
#: seconds between the two looks at which segments the processes map
SETTLE = 0.2


@dataclass(frozen=True)
class LeftSegments:
    """Segments left behind: their names and the memory they hold, in bytes."""

    names: tuple[str, ...]
    nbytes: int

    def describe(self) -> str:
        return (f"{len(self.names)} shared-memory segment{'s' * (len(self.names) != 1)} "
                f"({self.nbytes / 2**20:.1f} MiB) in {SHM}")


def _root(root: Path | None) -> Path:
    return SHM if root is None else root  # read at call time: tests point SHM elsewhere


def _ours(root: Path | None) -> dict[str, os.stat_result]:
    """This user's segments under ``root`` by name (with their stat)."""
    found = {}
    try:
        entries = list(os.scandir(_root(root)))
    except OSError:
        return {}
    uid = os.getuid()
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_uid == uid:
            found[entry.name] = st
    return found


def _held(st: os.stat_result) -> int:
    """The memory a segment holds: its pages written (a segment is a sparse file)."""
    return st.st_blocks * 512


def snapshot(root: Path | None = None) -> set[str]:
    """The names of this user's segments now."""
    return set(_ours(root))


def mapped(root: Path | None = None, proc: Path = Path("/proc")) -> set[str]:
    """The names of the segments under ``root`` that a process maps (that we can see).

    Another user's processes cannot be read; their segments are not ours to remove
    (``/dev/shm`` is sticky), so :func:`left_behind` never considers them.
    """
    prefix = f"{_root(root)}/"
    names = set()
    for maps in proc.glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:  # the process ended, or it is another user's
            continue
        for line in text.splitlines():
            at = line.find(prefix)
            if at >= 0:
                names.add(line[at + len(prefix):].split(" (deleted)")[0].strip())
    return names


def left_behind(root: Path | None = None, *, since: set[str] | None = None,
                in_use=None) -> LeftSegments:
    """This user's segments under ``root`` that no process maps (two looks, :data:`SETTLE`
    s apart); only those not in ``since`` when given (a :func:`snapshot`).

    ``in_use``: what stands in for :func:`mapped` (tests), called once per look.
    """
    look = (lambda: mapped(root)) if in_use is None else in_use
    ours = _ours(root)
    candidates = {name for name in ours if since is None or name not in since}
    if candidates:
        candidates -= look()
    if candidates:
        time.sleep(SETTLE)
        candidates -= look()
        candidates &= set(_ours(root))  # removed meanwhile: not ours to count
    names = sorted(candidates)
    return LeftSegments(tuple(names), sum(_held(ours[name]) for name in names))


def remove(left: LeftSegments, root: Path | None = None) -> LeftSegments:
    """Remove ``left``'s segments; those removed (another cleaner may have come first)."""
    done, nbytes = [], 0
    sizes = _ours(root)
    for name in left.names:
        try:
            (_root(root) / name).unlink()
        except OSError:
            continue
        done.append(name)
        nbytes += _held(sizes[name]) if name in sizes else 0
    return LeftSegments(tuple(done), nbytes)


def clean_after(before: set[str], root: Path | None = None) -> LeftSegments:
    """Remove the segments that a job which has ended left behind: those not in ``before``
    that no process maps."""
    return remove(left_behind(root, since=before), root)


def _main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("snapshot", "clean-after"):
        print("usage: python -m mpi_privopt.shm_segments snapshot|clean-after FILE",
              file=sys.stderr)
        return 2
    command, file = argv
    if command == "snapshot":
        Path(file).write_text("".join(f"{name}\n" for name in sorted(snapshot())))
        return 0
    try:
        before = set(Path(file).read_text().split())
    except OSError:
        return 0  # no snapshot: nothing is known to be this job's
    done = clean_after(before)
    if done.names:
        print(f"mpi_privopt: removed the {done.describe()} that the stopped MPI job left "
              "behind", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
