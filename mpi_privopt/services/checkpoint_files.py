"""The checkpoint's files: where they are, how they are written, and how they are read.

Per rank, ``RUN_DIR/checkpoint/rank-K-iter-N.ckpt`` is a pickle of a plain record
``{"meta": ..., "state": bytes}``: the metadata (iteration, rank count, the ledger's and the
traffic meter's snapshots) is readable without unpickling any class (:func:`read_meta`:
``report`` shows a killed run from it); the state is the rank's carried objects, pickled
again inside (mpi_privopt/services/checkpoint.py). ``checkpoint/latest.json`` names the
iteration of the last complete checkpoint, with the config (without ``run.iterations``)
and the graph hash a resume must match (mpi_privopt/services/resume.py).

Atomicity: a rank writes ``.NAME.partial``, fsyncs and renames it (:func:`write_atomic`);
once every rank has written, rank 0 points ``latest.json`` at the new iteration (again
write-and-rename), and only then are the older files removed (:func:`remove_stale`). A rank
killed, or a disk that fills, at any moment leaves ``latest.json`` naming a complete
checkpoint.
"""
from __future__ import annotations

import errno
import io
import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UserError
from .faults import fault

__all__ = ["CHECKPOINT_DIR", "CheckpointWriteError", "FORMAT", "LATEST", "STATE_FILE",
           "checkpoint_dir", "config_fingerprint", "latest", "read_meta", "read_record",
           "remove_stale", "resume_command", "saved_ledgers", "state_path", "try_write",
           "write_atomic"]

#: the checkpoint directory inside a run directory
CHECKPOINT_DIR = "checkpoint"
#: names the iteration of the last complete checkpoint (written last, by rank 0)
LATEST = "latest.json"
#: one rank's state at one iteration
STATE_FILE = "rank-{rank}-iter-{iteration}.ckpt"
#: bumped when the file layout changes; a resume refuses another version
FORMAT = 1


class CheckpointWriteError(UserError):
    """A checkpoint could not be written (a full disk); the previous one is kept."""

    status = 4


def checkpoint_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR


def state_path(run_dir: str | Path, rank: int, iteration: int) -> Path:
    return checkpoint_dir(run_dir) / STATE_FILE.format(rank=rank, iteration=iteration)


def resume_command(run_dir: str | Path, ranks: int) -> str:
    """The launch line that continues the run in ``run_dir``."""
    return (f"mpiexec -n {ranks} python -m mpi4py -m mpi_privopt run --resume {run_dir}")


def config_fingerprint(cfg) -> dict:
    """The resolved config without ``run.iterations`` (the only key a resume may change)."""
    data = cfg.to_dict()
    data["run"] = {k: v for k, v in data["run"].items() if k != "iterations"}
    return json.loads(json.dumps(data, default=str))  # as JSON reads it back (inf, tuples)


def latest(run_dir: str | Path) -> dict | None:
    """``checkpoint/latest.json`` of ``run_dir`` (None when the run has no checkpoint)."""
    path = checkpoint_dir(run_dir) / LATEST
    if not path.is_file():
        return None
    return json.loads(path.read_text())


# -- pickling: the state inside, plain metadata outside -------------------------------------

class _StatePickler(pickle.Pickler):
    def __init__(self, file, names: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = names

    def persistent_id(self, obj):  # noqa: D102 (pickle's hook)
        return self._names.get(id(obj))


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, file, objects: dict[str, Any]) -> None:
        super().__init__(file)
        self._objects = objects

    def persistent_load(self, pid):  # noqa: D102
        return self._objects[pid]


class _MetaUnpickler(pickle.Unpickler):
    """Reads the outer record only: plain data, no class is ever imported."""

    def find_class(self, module, name):  # noqa: D102
        raise pickle.UnpicklingError(f"a checkpoint's metadata names {module}.{name}")


def pickle_state(roots: dict[str, Any], externals: dict[str, Any]) -> bytes:
    """``roots`` pickled, every object of ``externals`` saved by its name only."""
    names = {id(obj): name for name, obj in externals.items()}
    buffer = io.BytesIO()
    _StatePickler(buffer, names).dump(roots)
    return buffer.getvalue()


def unpickle_state(state: bytes, externals: dict[str, Any]) -> dict[str, Any]:
    """The roots of :func:`pickle_state`, each name of ``externals`` replaced by its object."""
    return _StateUnpickler(io.BytesIO(state), externals).load()


def pickle_record(meta: dict, state: bytes) -> bytes:
    return pickle.dumps({"meta": meta, "state": state}, protocol=pickle.HIGHEST_PROTOCOL)


def read_meta(path: str | Path) -> dict:
    """The metadata of one rank's checkpoint file (no class is unpickled)."""
    with open(path, "rb") as handle:
        return _MetaUnpickler(handle).load()["meta"]


def read_record(path: str | Path) -> dict:
    with open(path, "rb") as handle:
        return _MetaUnpickler(handle).load()


def saved_ledgers(run_dir: str | Path) -> tuple[dict, list[dict]] | None:
    """``latest.json`` and every rank's ledger and traffic snapshot at that checkpoint."""
    info = latest(run_dir)
    if info is None:
        return None
    metas = [read_meta(state_path(run_dir, k, info["iteration"])) for k in range(info["ranks"])]
    return info, metas


# -- writing ----------------------------------------------------------------------------------

def write_atomic(path: Path, data: bytes, fault_point: str | None = None,
                 rank: int = 0, iteration: int = 0) -> None:
    """Write ``data`` to ``path`` whole or not at all (temporary file, fsync, rename)."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        with open(partial, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if fault_point:
            fault(fault_point, rank, iteration)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def remove_stale(run_dir: str | Path, rank: int, keep: Path | None) -> None:
    """Remove this rank's older checkpoint files and any partial file a killed writer left."""
    folder = checkpoint_dir(run_dir)
    name = STATE_FILE.format(rank=rank, iteration="*")
    for old in [*folder.glob(name), *folder.glob(f".{name}.partial")]:
        if old != keep:
            old.unlink(missing_ok=True)


#: errno names of a write that failed for want of space
FULL_DISK_ERRORS = ("ENOSPC", "EFBIG", "EDQUOT")


def write_fix(failure: str, where: str | Path) -> str:
    """The first words of the fix line for a write into ``where`` that failed with
    ``failure`` (:func:`try_write`'s text, its errno name first): the likely cause's fix."""
    code = failure.split(":", 1)[0]
    if code in FULL_DISK_ERRORS:
        return "free space there"
    if code in ("ENOENT", "ENOTDIR", "ESTALE"):
        return (f"make sure {where} still exists and, on several hosts, is on a filesystem "
                "every host shares")
    if code in ("EACCES", "EPERM", "EROFS"):
        return f"make {where} writable"
    return f"check {where} (free space, permissions, the filesystem)"


def try_write(action: Callable[[], Any]) -> str | None:
    """None, or what went wrong (``ENOSPC: No space left on device``) as text."""
    try:
        action()
    except OSError as err:
        code = errno.errorcode.get(err.errno or 0, "")
        return f"{code + ': ' if code else ''}{err.strerror or err}"
    return None
