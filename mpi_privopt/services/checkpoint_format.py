"""The bytes of a checkpoint's files, and their check before a resume uses one of them.

A rank's file (``rank-K-iter-N.ckpt``) is, in order:

1. one line ``mpi_privopt-checkpoint FORMAT LENGTH SHA256``: the layout's version, the
   length of the rest of the file and its SHA-256 (hex);
2. the header, one line of JSON: the file's identity (``run``, the run's id, drawn once by
   its first checkpoint; ``rank``; ``iteration``; ``ranks``, the world size);
3. the payload: the record, the metadata and the state as JSON and numpy arrays, never a
   pickle (mpi_privopt/services/checkpoint_files.py).

:func:`decode_rank_file` checks the length, the checksum and the identity before it
returns a byte of the payload, so nothing is decoded from a file that was cut short,
changed after it was written (one flipped bit is enough), swapped with another rank's or
copied from another run or iteration. Any single flipped bit of the file is found: in the
first line it breaks the magic word, the version, the length or the checksum; anywhere
after it, the checksum.

``latest.json`` and ``previous.json`` (which checkpoint a resume uses, and the one before
it) are JSON with a ``sha256`` key: the SHA-256 of the object without it, written
canonically (sorted keys, no spaces). :func:`decode_pointer` refuses a file that is not
UTF-8, not JSON, not an object, or whose content does not match its checksum; a change
that leaves the same JSON value (a space turned into a tab) is harmless and accepted.

Every refusal is a :class:`CheckpointDamaged` naming the file and the fix.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import ConfigError

__all__ = ["CheckpointDamaged", "FORMAT", "MAGIC", "decode_pointer", "decode_rank_file",
           "encode_pointer", "encode_rank_file", "missing_file", "MISSING_CAUSES", "other_format"]

#: bumped when the file layout changes; a resume refuses another version (2: the state
#: was a pickle; 3: JSON and arrays)
FORMAT = 3
#: the first word of a rank's checkpoint file
MAGIC = b"mpi_privopt-checkpoint"
#: a first line is never longer (magic, version, a length, 64 hex digits)
_FIRST_LINE_MAX = 160

#: why a rank's file is missing or short, most likely first
MISSING_CAUSES = ("the write was interrupted (the job was killed or the disk filled "
                  "while the file was written)",
                  "the run directory is not on a filesystem every host shares (each host "
                  "then sees only the files its own ranks wrote)")


class CheckpointDamaged(ConfigError):
    """A checkpoint file that a resume must not use: missing, short, changed since it was
    written, or another rank's, iteration's or run's."""


def other_format(what: str, found: object) -> CheckpointDamaged:
    """The refusal of a checkpoint ``what`` ("the checkpoint in RUN_DIR") written in
    another format ``found``."""
    older = isinstance(found, int) and found < FORMAT
    return CheckpointDamaged(
        f"{what} has format {found}, this version reads format {FORMAT}"
        + (" (format 2 and older saved the state as a pickle, which this version never "
           "loads)" if older else ""),
        "start the run again, or resume it with the mpi_privopt version that wrote it"
        + (" (the release before checkpoints were written as JSON and arrays)"
           if older else ""))


def _canonical(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- a rank's file -----------------------------------------------------------------------

def encode_rank_file(identity: dict, payload: bytes) -> tuple[bytes, str]:
    """The file's bytes for ``payload`` with its ``identity`` header, and the checksum
    written in it (``latest.json`` records every rank's)."""
    body = _canonical(identity) + b"\n" + payload
    digest = _sha256(body)
    first = b"%s %d %d %s\n" % (MAGIC, FORMAT, len(body), digest.encode())
    return first + body, digest


def missing_file(path: Path, what: str) -> CheckpointDamaged:
    """The refusal of a rank's file that is absent (``what``: "is missing") or cut short."""
    causes = "; then ".join(f"({i}) {c}" for i, c in enumerate(MISSING_CAUSES, 1))
    return CheckpointDamaged(
        f"the checkpoint file {path} {what}",
        f"likely causes, in this order: {causes}. Restore the file (each rank's file must "
        "be in the run directory every rank sees), or resume from a copy of the run "
        "directory that holds it")


def _damaged(path: Path, why: str) -> CheckpointDamaged:
    return CheckpointDamaged(
        f"the checkpoint file {path} is damaged: {why}",
        "it was changed after it was written (a disk or copy error, or an edit): restore "
        "it from a copy of the run directory, or start a new run")


def decode_rank_file(path: Path, data: bytes, expected: dict,
                     digest: str | None = None) -> bytes:
    """The payload of the rank file ``path`` (its bytes ``data``), once its length,
    checksum and identity are checked.

    Parameters
    ----------
    path : Path
        The file (named in the messages).
    data : bytes
        Its content.
    expected : dict
        The identity it must carry: ``run``, ``rank``, ``iteration``, ``ranks``.
    digest : str, optional
        The checksum ``latest.json`` recorded for it (None: not recorded).

    Raises
    ------
    CheckpointDamaged
        Naming the file, what is wrong and how to fix it.
    """
    end = data.find(b"\n", 0, _FIRST_LINE_MAX)
    fields = data[:end].split(b" ") if end > 0 else []
    if len(fields) != 4 or fields[0] != MAGIC:
        if not data:
            raise missing_file(path, "is empty")
        if end < 0 and len(data) < _FIRST_LINE_MAX and (
                data.startswith(MAGIC) or MAGIC.startswith(data)):
            raise missing_file(path, f"is short: {len(data)} bytes, cut inside its first "
                                     "line")
        raise _damaged(path, "it does not begin with the first line of an mpi_privopt checkpoint")
    if fields[1] != str(FORMAT).encode():
        if fields[1].isdigit():
            raise other_format(f"the checkpoint file {path}", int(fields[1]))
        raise _damaged(path, "its format field is not a number")
    body = data[end + 1:]
    if not fields[2].isdigit():
        raise _damaged(path, "its length field is not a number")
    length, matches = int(fields[2]), _sha256(body) == fields[3].decode("ascii", "replace")
    if len(body) < length and not matches:  # (a whole body with a wrong length: damaged)
        raise missing_file(path, f"is short: {len(body) + end + 1} bytes of the "
                                 f"{length + end + 1} written")
    if len(body) != length or not matches:
        raise _damaged(path, "its content does not match its checksum (SHA-256)")
    header_end = body.find(b"\n")
    try:
        identity = json.loads(body[:header_end])
    except ValueError:
        raise _damaged(path, "its header is not JSON") from None
    if not isinstance(identity, dict):
        raise _damaged(path, "its header is not a JSON object")
    differ = [f"{key} {identity.get(key, '(absent)')!r} (expected {value!r})"
              for key, value in expected.items() if identity.get(key) != value]
    if differ:
        raise CheckpointDamaged(
            f"the checkpoint file {path} is not agent {expected['rank']}'s checkpoint of "
            f"iteration {expected['iteration']} of this run: its header says "
            f"{', '.join(differ)}",
            "put each file back under its own name (rank-K-iter-N.ckpt holds agent K's "
            "state at iteration N of this run; files may not be renamed, swapped or "
            "copied from another run), or restore the run directory from a copy")
    if digest is not None and fields[3].decode() != digest:
        raise CheckpointDamaged(
            f"the checkpoint file {path} is not the one this checkpoint recorded (its "
            "SHA-256 differs from the one recorded when the checkpoint was written): it "
            "was replaced by another file of the same name", "restore the file the run "
            "wrote, from a copy of the run directory, or start a new run")
    return body[header_end + 1:]


# -- latest.json, previous.json ------------------------------------------------------------

def encode_pointer(info: dict) -> bytes:
    """``info`` as the text of ``latest.json``, with its checksum (``sha256``)."""
    plain = {k: v for k, v in info.items() if k != "sha256"}
    return (json.dumps({**plain, "sha256": _sha256(_canonical(plain))}, indent=2)
            + "\n").encode()


def decode_pointer(path: Path, data: bytes) -> dict:
    """The checked content of ``latest.json`` or ``previous.json`` (its bytes ``data``).

    Raises
    ------
    CheckpointDamaged
        When it is not UTF-8 JSON, not an object, or its checksum does not match.
    """
    def damaged(why: str) -> CheckpointDamaged:
        return CheckpointDamaged(
            f"{path} is damaged: {why}",
            "it was changed after it was written (an interrupted copy, a disk error, an "
            "edit): restore it from a copy of the run directory, or start a new run")
    try:
        info = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise damaged("it is not text (UTF-8)") from None
    except ValueError:
        raise damaged("it is not JSON (cut short or changed)") from None
    if not isinstance(info, dict):
        raise damaged("it is not a JSON object")
    if "sha256" not in info:
        if isinstance(info.get("format"), int) and info["format"] != FORMAT:
            raise other_format(f"the checkpoint in {path.parent.parent}", info["format"])
        raise damaged("it has no checksum (sha256)")
    claimed = info.pop("sha256")
    if claimed != _sha256(_canonical(info)):
        raise damaged("its content does not match its checksum (sha256)")
    if info.get("format") != FORMAT:
        raise other_format(f"the checkpoint in {path.parent.parent}", info.get("format"))
    return info
