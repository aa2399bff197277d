"""One writer per run directory: the claim a run holds from its set-up until it exits.

Rank 0 of a new run or of a resume takes the claim of its run directory before anything
is written there, and keeps it for the whole run; it is released when the run returns
(its end, an error, a signal that stopped it) and, as a safety net, when the process
exits. Another job given the same directory (``--out DIR``, ``--resume DIR``) meanwhile
is refused with one message; the other ranks learn the verdict through the set-up's
agreement (:func:`mpi_privopt.mpiutil.agree`).

The claim is the file ``DIR/.mpi_privopt-claim``. It records the owner: host name, the
kernel's boot id and pid namespace, pid, the process's start time (field 22 of
``/proc/PID/stat`` on Linux, in clock ticks since boot, and as a date), the command and
when it claimed. It appears whole and already locked: the record is written to a file of
its own, locked with ``flock``, then hard-linked to the claim's name (``link`` fails if the
name exists, on NFS too), so no reader ever sees a half-written claim.

A process that dies without releasing (SIGKILL, a lost node, SIGTERM before the run loop
handles signals) leaves its claim behind. Whether a claim is stale:

- on this host (same host name, boot and pid namespace): its owner is gone when the pid
  no longer exists, is a zombie, or belongs to a process started at another time (a pid
  used again). A stale claim is removed with a one-line note and the claim is taken;
- on another host the process cannot be checked from here: the refusal names the host,
  pid and start time, and gives the ``rm`` command that clears the claim once the user
  knows that run has ended;
- the ``flock`` settles the race of two jobs clearing the same stale claim: the one that
  holds the old file's lock removes it; the other finds it locked and is refused.

Test hook: ``MPI_PRIVOPT_TEST_FAULT=pause@claimed:0:0:FILE`` holds a run in its set-up
right after its claim is taken (:func:`_test_pause`).
"""
from __future__ import annotations

import atexit
import errno
import json
import os
import shlex
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from .errors import ConfigError

__all__ = ["CLAIM_FILE", "RunDirInUse", "claim", "claim_path", "owner_record",
           "process_start_ticks", "release"]

#: the claim's name inside the run directory (names starting with it are the claim's own)
CLAIM_FILE = ".mpi_privopt-claim"

#: claims this process holds: claim path -> the open, locked file descriptor
_HELD: dict[Path, int] = {}


class RunDirInUse(ConfigError):
    """A run directory claimed by another run (status 2, like any refused input)."""


def claim_path(run_dir: str | Path) -> Path:
    """Where the claim of ``run_dir`` is (absolute: the ``rm`` a refusal prints works
    from any directory)."""
    return Path(os.path.abspath(run_dir)) / CLAIM_FILE


# -- who owns a claim -------------------------------------------------------------------------

def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def _proc_stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` from field 3 (state) on: [state, ppid, ...] (None if absent).
    The command name (field 2) may hold spaces and parentheses: split after the last ')'."""
    text = _read(f"/proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    return text[text.rindex(")") + 2:].split()


def process_start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` (field 22 of ``/proc/PID/stat``: clock ticks after
    boot); None if there is no such process or no ``/proc``."""
    fields = _proc_stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def _start_date(ticks: int | None) -> str:
    """``ticks`` after boot as a UTC date (``unknown`` without ``/proc/stat``)."""
    boot = next((line.split()[1] for line in (_read("/proc/stat") or "").splitlines()
                 if line.startswith("btime ")), None)
    if ticks is None or boot is None:
        return "unknown"
    return _date(int(boot) + ticks / os.sysconf("SC_CLK_TCK"))


def _date(seconds: float) -> str:
    stamp = datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None)
    return f"{stamp.isoformat(sep=' ', timespec='seconds')} UTC"


def _machine() -> str:
    """This kernel's boot id and pid namespace: a pid means the same process only there
    (another container with the same host name, or the host after a restart, differs)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{_read('/proc/sys/kernel/random/boot_id') or ''} {namespace}".strip()


def owner_record() -> dict:
    """What a claim taken by this process records."""
    ticks = process_start_ticks(os.getpid())
    command = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    return {"host": socket.gethostname(), "machine": _machine(), "pid": os.getpid(),
            "start_ticks": ticks, "started": _start_date(ticks),
            "claimed": _date(time.time()), "command": shlex.join(command)}


def _judge(owner: dict | None) -> tuple[str, str]:
    """``("gone" | "live" | "elsewhere", why)`` for the claim of ``owner``."""
    if owner is None:
        return "gone", "no owner is recorded in it (an older version's marker, or damaged)"
    if owner.get("host") != socket.gethostname() or owner.get("machine", "") != _machine():
        return "elsewhere", ""
    pid = int(owner["pid"])
    try:
        os.kill(pid, 0)  # signal 0: only whether the pid exists
    except ProcessLookupError:
        return "gone", "that process is no longer running"
    except PermissionError:
        pass  # another user's process: it exists
    fields = _proc_stat(pid)
    if fields is None:  # no /proc, or hidden (hidepid): the pid exists, nothing more known
        return "live", ""
    if fields[0] in ("Z", "X"):
        return "gone", "that process has ended"
    if owner.get("start_ticks") is not None and int(fields[19]) != owner["start_ticks"]:
        return "gone", (f"pid {pid} now belongs to another process, started "
                        f"{_start_date(int(fields[19]))}")
    return "live", ""


def _parse(data: bytes) -> dict | None:
    try:
        owner = json.loads(data)
        # a pid the kernel can hold (pid_max is at most 2**22): a larger one is damage
        if 0 < int(owner["pid"]) < 2**31 and isinstance(owner["host"], str):
            return owner
    except (ValueError, KeyError, TypeError):
        pass
    return None


# -- the OS lock: held by the owner for the run, taken by whoever clears a stale claim -----

def _try_lock(fd: int) -> bool | None:
    """Take ``fd``'s exclusive flock without waiting: True taken, False held by another,
    None when the file system has no flock (the pid check alone then decides)."""
    import fcntl
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as err:
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        return None


def _same_file(path: Path, fd: int) -> bool:
    try:
        a, b = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# -- taking and releasing ------------------------------------------------------------------

def claim(run_dir: str | Path, what: str, on_note=None) -> Path:
    """Take the claim of the existing directory ``run_dir`` for this process, for the run.

    ``what`` names the directory in messages (``--out DIR``, ``--resume DIR``). A stale
    claim (see the module's text) is removed with one note, printed by ``on_note`` (a line
    on stderr by default). Raises :class:`RunDirInUse` when another run holds it, and
    ConfigError when the claim cannot be written. Returns the claim's path.
    """
    path = claim_path(run_dir)
    record = (json.dumps(owner_record(), indent=1) + "\n").encode()
    try:
        fd = _take(path, record, what, on_note)
    except OSError as err:
        raise ConfigError(f"{what} cannot be claimed: {err.strerror or err}",
                          "choose a directory on a writable file system") from None
    _HELD[path] = fd
    _test_pause()
    return path


def _take(path: Path, record: bytes, what: str, on_note) -> int:
    """Make ``path`` the claim holding ``record``, whole and locked; its descriptor."""
    own = path.with_name(f"{CLAIM_FILE}.{socket.gethostname()}.{os.getpid()}")
    fd = os.open(own, os.O_CREAT | os.O_TRUNC | os.O_RDWR, 0o644)
    try:
        os.write(fd, record)
        os.fsync(fd)
        _try_lock(fd)  # before the claim appears under its name: nobody sees it unlocked
        for attempt in range(3):
            try:
                return _link(own, path, fd)
            except FileExistsError:
                _clear_if_stale(path, what, on_note, last=attempt == 2)
        raise RunDirInUse(f"{what} is in use by another run, which is claiming it at "
                          "this moment", _wait_fix(what))
    except BaseException:
        os.close(fd)
        raise
    finally:
        own.unlink(missing_ok=True)  # the claim keeps the file under its own name


#: what ``link`` says on a file system without hard links
_NO_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS)


def _link(own: Path, path: Path, fd: int) -> int:
    """Hard-link ``own`` (open as ``fd``) to ``path``, FileExistsError if ``path`` exists;
    the descriptor to hold. Without hard links: an exclusive create and a copy (a reader
    may then find it empty for a moment, and take it for stale)."""
    try:
        os.link(own, path)
        return fd
    except OSError as err:
        if err.errno not in _NO_LINKS:
            raise
    made = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
    _try_lock(made)
    os.write(made, os.pread(fd, 1 << 16, 0))
    os.close(fd)
    return made


def _test_pause() -> None:
    """Tests only: ``MPI_PRIVOPT_TEST_FAULT=pause@claimed:0:0:FILE`` (the fault hook of
    mpi_privopt/services/faults.py, at this point) holds the claiming process here, its pid
    written to FILE, until ``FILE.go`` exists or a signal ends the process."""
    action, _, where = os.environ.get("MPI_PRIVOPT_TEST_FAULT", "").partition("@")
    point, _, file = where.partition(":0:0:")
    if action == "pause" and point == "claimed" and file:
        Path(file).write_text(f"{os.getpid()}\n")
        while not Path(f"{file}.go").exists():
            time.sleep(0.05)


def _clear_if_stale(path: Path, what: str, on_note, last: bool = False) -> None:
    """Remove the claim at ``path`` if its owner is gone (with a note); raise RunDirInUse
    if it lives or cannot be checked from here. Nothing found: nothing to do."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return  # released meanwhile: try again
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    try:
        locked = _try_lock(fd)
        owner = _parse(os.read(fd, 1 << 16))
        verdict, why = _judge(owner)
        if verdict == "elsewhere":
            raise _held_elsewhere(path, what, owner)
        if verdict == "live":
            raise _held_here(what, owner)
        if locked is False or last:  # another job is clearing it right now
            raise RunDirInUse(f"{what} is in use by another run, which is claiming it at "
                              "this moment", _wait_fix(what))
        if _same_file(path, fd):
            path.unlink()  # under its lock: no other job can take this file meanwhile
        by = (f" left by pid {owner['pid']} (started {owner.get('started', 'unknown')}, "
              f"claimed {owner.get('claimed', 'unknown')})" if owner else "")
        (on_note or _note)(f"mpi_privopt: note: removed the stale claim on {path.parent}"
                           f"{by}: {why}")
    finally:
        os.close(fd)


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _wait_fix(what: str) -> str:
    return ("wait for that run to end (a run directory has one writer at a time)"
            + ("" if what.startswith("--resume") else ", or choose a new directory"))


def _held_here(what: str, owner: dict) -> RunDirInUse:
    return RunDirInUse(
        f"{what} is in use by another run: pid {owner['pid']} on this host "
        f"({owner['host']}), started {owner.get('started', 'unknown')}, claimed "
        f"{owner.get('claimed', 'unknown')} ({owner.get('command', 'command unknown')})",
        _wait_fix(what))


def _held_elsewhere(path: Path, what: str, owner: dict) -> RunDirInUse:
    here = socket.gethostname()
    if owner["host"] == here:  # the same name, another boot or pid namespace (container)
        here = f"this boot and pid namespace of {here}"
    return RunDirInUse(
        f"{what} is in use by a run on host {owner['host']}: pid {owner['pid']}, started "
        f"{owner.get('started', 'unknown')}, claimed {owner.get('claimed', 'unknown')} "
        f"({owner.get('command', 'command unknown')}); whether it still runs cannot be "
        f"checked from {here}",
        f"if that run has ended (on {owner['host']}: ps -p {owner['pid']}), remove its "
        f"claim: rm {shlex.quote(str(path))}")


def release_all() -> None:
    """Release every claim this process holds and remove each claimed directory that is
    still empty (a run interrupted in its set-up, before anything was written there)."""
    directories = [path.parent for path in _HELD]
    release()
    for directory in directories:
        try:
            directory.rmdir()
        except OSError:
            pass  # something was written (or a resume's own directory): keep it


def release(run_dir: str | Path | None = None) -> None:
    """Release the claim this process holds on ``run_dir`` (None: every claim it holds).

    The file is removed only while it is still this process's own (under its lock), then
    the lock goes with the descriptor. Nothing held: nothing to do.
    """
    for path in [p for p in _HELD if run_dir is None or p == claim_path(run_dir)]:
        fd = _HELD.pop(path)
        try:
            if _same_file(path, fd):
                path.unlink(missing_ok=True)
        finally:
            os.close(fd)


atexit.register(release)  # a process that leaves without returning from its run
