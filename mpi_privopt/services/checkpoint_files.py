"""The checkpoint's files: where they are, how they are written, and how they are read.

Per rank, ``RUN_DIR/checkpoint/rank-K-iter-N.ckpt`` holds a checked header (its length,
SHA-256 and identity: the run's id, the rank, the iteration, the rank count;
mpi_privopt/services/checkpoint_format.py) and then the record (:func:`encode_record`):
the metadata (iteration, rank count, the ledger's and the traffic meter's snapshots) as
one line of JSON (:func:`read_meta`: ``report`` shows a killed run from it), the rank's
carried objects as a line of JSON and a ``.npz`` archive of their arrays
(mpi_privopt/services/state_codec.py). Nothing in a checkpoint is read with pickle.
``checkpoint/latest.json`` names the iteration of the last complete checkpoint, with the
run's id, every rank file's SHA-256, the config (without ``run.iterations``), the graph's
hash and the SHA-256 of the run's ``graph.edgelist``, all under a checksum of its own;
``checkpoint/previous.json`` is the same for the complete checkpoint before it, whose
files are kept too (a resume falls back to it when the latest is damaged:
mpi_privopt/services/checkpoint_choice.py).

Atomicity: a rank writes ``.NAME.partial``, fsyncs and renames it (:func:`write_atomic`);
once every rank has written, rank 0 writes ``previous.json`` (the pointer of the
checkpoint before) and then points ``latest.json`` at the new iteration (each written and
renamed), and only then are the files of older checkpoints removed
(:func:`remove_stale`). A rank killed, or a disk that fills, at any moment leaves
``latest.json`` naming a complete checkpoint.
"""
from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UserError
from .checkpoint_format import (FORMAT, CheckpointDamaged, decode_pointer, decode_rank_file,
                                encode_pointer, missing_file)
from .faults import fault

__all__ = ["CHECKPOINT_DIR", "CheckpointDamaged", "CheckpointWriteError", "FORMAT", "LATEST",
           "PREVIOUS", "STATE_FILE", "checkpoint_dir", "config_fingerprint", "identity",
           "encode_record", "latest", "pointers", "read_meta", "read_record", "remove_stale",
           "resume_command",
           "saved_ledgers", "state_path", "try_write", "write_atomic", "write_pointer"]

#: the checkpoint directory inside a run directory
CHECKPOINT_DIR = "checkpoint"
#: names the iteration of the last complete checkpoint (written last, by rank 0)
LATEST = "latest.json"
#: names the complete checkpoint before it (a resume's fallback)
PREVIOUS = "previous.json"
#: one rank's state at one iteration
STATE_FILE = "rank-{rank}-iter-{iteration}.ckpt"


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


# -- latest.json and previous.json ------------------------------------------------------------

def write_pointer(path: Path, info: dict) -> None:
    """``info`` written to ``path`` (``latest.json``, ``previous.json``) with its checksum,
    whole or not at all."""
    write_atomic(path, encode_pointer(info))


def _read_pointer(path: Path) -> dict | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise CheckpointDamaged(f"{path} cannot be read ({err.strerror or err})",
                                "make it readable, or restore the run directory") from None
    return decode_pointer(path, data)


def latest(run_dir: str | Path) -> dict | None:
    """``checkpoint/latest.json`` of ``run_dir``, checked (None when the run has none).

    Raises
    ------
    CheckpointDamaged
        When it cannot be read or does not match its checksum.
    """
    return _read_pointer(checkpoint_dir(run_dir) / LATEST)


def pointers(run_dir: str | Path) -> list[tuple[Path, dict | None, CheckpointDamaged | None]]:
    """``latest.json`` then ``previous.json``: each file, its checked content (None if it
    is absent or damaged) and what is wrong with it (None if nothing)."""
    found = []
    for name in (LATEST, PREVIOUS):
        path = checkpoint_dir(run_dir) / name
        try:
            found.append((path, _read_pointer(path), None))
        except CheckpointDamaged as err:
            found.append((path, None, err))
    return found


def identity(info: dict, rank: int) -> dict:
    """What rank ``rank``'s file of the checkpoint ``info`` (a pointer) must say it is."""
    return {"run": info.get("run"), "rank": rank, "iteration": info["iteration"],
            "ranks": info["ranks"]}


# -- a rank's file: the checked header, then the metadata and the state as JSON and arrays --

def _json_line(value: Any) -> bytes:
    # one line: JSON never writes a raw newline (ensure_ascii escapes every other byte too)
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def encode_record(meta: dict, state: tuple[Any, bytes]) -> bytes:
    """A rank file's payload: the metadata and the state's tree, a line of JSON each, then
    the state's arrays (a ``.npz`` archive; mpi_privopt/services/state_codec.py)."""
    tree, arrays = state
    return _json_line(meta) + _json_line(tree) + arrays


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise missing_file(path, "is missing") from None
    except OSError as err:
        raise CheckpointDamaged(f"the checkpoint file {path} cannot be read "
                                f"({err.strerror or err})",
                                "make it readable by every rank") from None


def read_record(path: Path, info: dict, rank: int) -> dict:
    """Rank ``rank``'s record ``{"meta": dict, "state": (tree, arrays)}`` of the
    checkpoint ``info``, once its file's length, checksum and identity are checked; only
    JSON is parsed (the arrays are read when the state is decoded, without pickle).

    Raises
    ------
    CheckpointDamaged
        When the file is missing, short, damaged, or not the one ``info`` recorded.
    """
    files = info.get("files") or []
    payload = decode_rank_file(path, _read_bytes(path), identity(info, rank),
                               files[rank] if rank < len(files) else None)
    meta_line, _, rest = payload.partition(b"\n")
    tree_line, _, arrays = rest.partition(b"\n")
    try:
        meta, tree = json.loads(meta_line), json.loads(tree_line)
    # its checksum matched: written so by a faulty writer, or made to (nested past
    # Python's recursion limit); every rank must learn it, never a traceback on one
    except (ValueError, RecursionError) as err:
        raise CheckpointDamaged(f"the checkpoint file {path} cannot be read: "
                                f"{type(err).__name__}: {err}", "start a new run") from None
    if not isinstance(meta, dict) or not arrays or not _meta_complete(meta):
        raise CheckpointDamaged(f"the checkpoint file {path} holds no checkpoint record",
                                "start a new run")
    return {"meta": meta, "state": (tree, arrays)}


#: what a resume reads from a record's metadata, and its type
_META_TYPES = {"iteration": int, "algorithm_seconds": (int, float),
               "eval_seconds": (int, float), "ledger": dict}


def _meta_complete(meta: dict) -> bool:
    return all(isinstance(meta.get(key), kinds) and not isinstance(meta.get(key), bool)
               for key, kinds in _META_TYPES.items())


def read_meta(path: str | Path, info: dict | None = None, rank: int = 0) -> dict:
    """The metadata of one rank's checkpoint file, checked against the pointer ``info``
    when given. A file of format 1 (no header, written before the checks; ``report``
    only) is read as it is (mpi_privopt/services/checkpoint_legacy.py)."""
    path = Path(path)
    data = _read_bytes(path)
    if data[:1] == b"\x80":  # format 1: a bare pickle of plain data
        from .checkpoint_legacy import format_1_meta
        return format_1_meta(path, data)
    if info is None:
        raise CheckpointDamaged(f"no checkpoint names {path}", "give its latest.json")
    return read_record(path, info, rank)["meta"]


def saved_ledgers(run_dir: str | Path) -> tuple[dict, list[dict], str | None] | None:
    """The pointer of the newest usable checkpoint, every rank's metadata (ledger and
    traffic snapshots) at it, and what was skipped to reach it (one line, None when it is
    the latest checkpoint); None when the run has none that can be read."""
    skipped: str | None = None  # the latest checkpoint's damage, when it was passed over
    for path, info, problem in pointers(run_dir):
        if info is None:
            info = _format_1(path)  # a run written before the checks: read as it is
            if info is None:
                if path.name == LATEST:
                    skipped = f"{LATEST} is {'damaged' if problem else 'missing'}"
                continue
        try:
            metas = [read_meta(state_path(run_dir, k, info["iteration"]), info, k)
                     for k in range(info["ranks"])]
        except CheckpointDamaged:
            if path.name == LATEST:
                skipped = f"the latest checkpoint (iteration {info['iteration']}) is damaged"
            continue
        if skipped is not None:
            skipped += f": showing the previous one, iteration {info['iteration']}"
        return info, metas, skipped
    return None


def _format_1(path: Path) -> dict | None:
    """A ``latest.json`` of format 1 (no checksum), for ``report`` only; else None."""
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("format") == 1 else None


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


def remove_stale(run_dir: str | Path, rank: int, keep: set[Path] | None = None) -> None:
    """Remove this rank's checkpoint files but ``keep`` (None: every complete one) and any
    partial file a killed writer left."""
    folder = checkpoint_dir(run_dir)
    name = STATE_FILE.format(rank=rank, iteration="*")
    for old in folder.glob(f".{name}.partial"):
        old.unlink(missing_ok=True)
    if keep is None:
        return
    for old in folder.glob(name):
        if old not in keep:
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
