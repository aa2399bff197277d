"""Which checkpoint a resume uses: the latest whose every file checks, else the one before.

A run keeps its last two complete checkpoints (``latest.json`` and ``previous.json``,
mpi_privopt/services/checkpoint_files.py). Before a resume uses a byte of a rank's file,
every rank checks its own file of the latest checkpoint (length, SHA-256, identity and the
checksum ``latest.json`` recorded: mpi_privopt/services/checkpoint_format.py), and the
ranks agree on the verdicts (:func:`choose`). When a file of the latest checkpoint, or
``latest.json`` itself, is missing, short or damaged, the resume falls back to the
previous checkpoint, if its files all check, and rank 0 prints one warning naming what
was wrong; when neither can be used it is one message (exit 2) naming the first damaged
file and how to fix it.

The budget across a fallback. The previous checkpoint's ledger does not hold the releases
made after it, and the resume runs those iterations again:

* with ``privacy.noise = "fast"`` every random draw comes from the seeded streams the
  checkpoint restores, so the iterations run again send exactly the messages they sent
  before (the resumed run is bitwise the uninterrupted one). Nothing new is released, and
  the ledger books those same releases again: at the latest checkpoint's iteration it
  holds exactly what the lost ledger held. The warning says so;
* with ``privacy.noise = "secure"`` the draws come from OS entropy: running the
  iterations again releases them a second time with fresh noise, and the ledger of the
  previous checkpoint does not hold the first releases. The resume books them first, as
  the method's planned releases up to where the run may have gone past the damaged
  checkpoint (mpi_privopt/services/release_gap.py); it is refused (exit 2) when that
  iteration is unknown (``latest.json`` damaged and none of its files left).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import ConfigError
from .checkpoint_files import (LATEST, CheckpointDamaged, checkpoint_dir, pointers,
                               read_record, state_path)

__all__ = ["choose", "edgelist_sha256", "fallback_text", "secure_fallback_text",
           "usable_pointer"]

#: the run directory's record of the graph (mpi_privopt/results.py)
EDGELIST = "graph.edgelist"


def edgelist_sha256(run_dir: str | Path) -> str | None:
    """The SHA-256 of the run's ``graph.edgelist`` (None when it has none)."""
    try:
        return hashlib.sha256((Path(run_dir) / EDGELIST).read_bytes()).hexdigest()
    except OSError:
        return None


def usable_pointer(run_dir: str | Path) -> dict | None:
    """The content of ``latest.json`` or, when it is absent or damaged, of
    ``previous.json`` (the checks a resume can make before MPI starts); None when the run
    has neither.

    Raises
    ------
    CheckpointDamaged
        When a pointer exists but none can be used (naming ``latest.json``'s damage).
    """
    listed = pointers(run_dir)
    for _path, info, _problem in listed:
        if info is not None:
            return info
    problems = [problem for _path, _info, problem in listed if problem is not None]
    if problems:
        raise problems[0]
    return None


def fallback_text(problem: str, info: dict, later: int | None) -> str:
    """The warning of a resume from the previous checkpoint ``info``: what was wrong
    with the latest (``problem``) and why no spent budget is forgotten."""
    at = info["iteration"]
    rerun = (f"iterations {at + 1} to {later}" if later is not None
             else f"the iterations after {at}")
    return (f"{problem}; resuming from the previous checkpoint, of iteration {at}, "
            f"instead. {rerun[0].upper() + rerun[1:]} are run again: with the seeded "
            "noise (privacy.noise = \"fast\") they send exactly what they sent before, "
            "so the ledger books those releases again and no privacy spent is forgotten")


def secure_fallback_text(problem: str, info: dict, later: int) -> str:
    """The warning of a secure-noise resume from the previous checkpoint ``info``."""
    at = info["iteration"]
    return (f"{problem}; resuming from the previous checkpoint, of iteration {at}, "
            f"instead. Iterations {at + 1} to {later} are run again with fresh noise "
            "(privacy.noise = \"secure\"): what the run released after iteration "
            f"{at} is booked first, as released before the interruption (assumed), so "
            "no privacy spent is forgotten")


def _refuse_secure(problem: ConfigError, info: dict) -> ConfigError:
    at = info["iteration"]
    return ConfigError(
        f"{problem.what}. The previous checkpoint, of iteration {at}, is complete, but this "
        f"run draws its noise from OS entropy (privacy.noise = \"secure\") and how far "
        f"the run went after iteration {at} is unknown (no file of the damaged checkpoint "
        "is left): the privacy it spent cannot be bounded, so it is not used",
        problem.fix)


def choose(comm, run_dir: str | Path,
           rank: int) -> tuple[dict, dict, str | None, int | None]:
    """The checkpoint a resume uses (collective on ``comm``): its pointer, this rank's
    checked record ``{"meta", "state"}``, the fallback warning and the damaged latest
    checkpoint's iteration (both None when it is the latest checkpoint).

    Raises
    ------
    ConfigError
        On every rank (one message), when no checkpoint can be used, or only the previous
        one, the run's noise is ``secure`` and the damaged one's iteration is unknown.
    """
    listed = comm.bcast([(path, info, None if problem is None else (problem.what, problem.fix))
                         for path, info, problem in pointers(run_dir)] if rank == 0 else None)
    problems: list[ConfigError] = []
    later: int | None = None  # the iteration of a damaged latest checkpoint, when known
    for path, info, problem in listed:
        if info is None:
            if problem is not None:
                problems.append(CheckpointDamaged(*problem))
            elif path.name == LATEST and any(other is not None for _p, other, _q in listed[1:]):
                problems.append(CheckpointDamaged(
                    f"{path} is missing", "restore it from a copy of the run directory"))
            continue
        mine = None
        try:
            record = read_record(state_path(run_dir, rank, info["iteration"]), info, rank)
        except CheckpointDamaged as err:
            mine = (err.what, err.fix)
        verdicts = comm.allgather(mine)
        bad = next((v for v in verdicts if v is not None), None)
        if bad is None:
            break
        problems.append(CheckpointDamaged(*bad))
        if path.name == LATEST:
            later = info["iteration"]
    else:
        first = problems[0] if problems else CheckpointDamaged(
            f"{Path(run_dir) / 'checkpoint'} holds no checkpoint", "start a new run")
        also = (f" (the previous checkpoint cannot be used either: {problems[1].what})"
                if len(problems) > 1 else "")
        err = CheckpointDamaged(first.what + also, first.fix)
        err.collective = True
        raise err
    if not problems:
        return info, record, None, None
    if later is None:  # latest.json itself unusable: how far its files went, by their names
        later = _last_saved(run_dir, info["iteration"])
    if info.get("noise") == "secure":
        if later is None:
            err = _refuse_secure(problems[0], info)
            err.collective = True
            raise err
        return info, record, secure_fallback_text(problems[0].what, info, later), later
    return info, record, fallback_text(problems[0].what, info, later), later


def _last_saved(run_dir: str | Path, after: int) -> int | None:
    """The largest iteration after ``after`` a rank file is named for (None if none)."""
    found = []
    for path in checkpoint_dir(run_dir).glob("rank-*-iter-*.ckpt"):
        number = path.stem.rsplit("-", 1)[-1]
        if number.isdigit() and int(number) > after:
            found.append(int(number))
    return max(found, default=None)
