"""What a secure-noise run may have released after the checkpoint a resume starts from.

A run killed between two checkpoints has already sent the iterations after its last one.
With ``privacy.noise = "fast"`` a resume runs them again from the seeded streams the
checkpoint restores and sends exactly the same messages: nothing new is released. With
``privacy.noise = "secure"`` (OS entropy) it sends them again with fresh noise, a second
release, while the checkpoint's ledger holds neither. A resume therefore books, before any
new release, an upper bound of what every earlier session may have released after the
checkpoint (:func:`gap_windows`), as the method's public plan of those iterations
(``Algorithm.planned_events``; docs/reliability.md, "Killed runs and secure noise").

The bound. A session writes a checkpoint at every multiple of ``run.checkpoint_every``
before its last iteration (mpi_privopt/services/checkpoint.py), and a write that fails ends
it; ``run.checkpoint_every`` cannot change on a resume (it is part of the config a resume
must keep). So a session whose last complete checkpoint is at iteration x released at most
up to the next multiple of ``checkpoint_every`` after x (its run's end when sooner; when
``checkpoint_every`` is 0, up to its end). Which sessions may have released after the
checkpoint at iteration N that the resume uses:

* the session that wrote it, unless it ended there: a checkpoint marked ``final`` is a
  run's end, and one at an iteration that is not a multiple of ``checkpoint_every`` is a
  signal's stop (the session ends once it is written). A stop that falls on a multiple is
  taken as a periodic checkpoint (conservative);
* every session that resumed from N or later and wrote no checkpoint after it: each
  resume that may release records itself in ``checkpoint/resumes.json`` (:func:`log_resume`)
  before its first release, since its own ledger dies with it.

When the resume falls back from a damaged latest checkpoint at iteration L to the previous
one, its writer is counted whatever N is, and every window reaches as far as a session
whose last checkpoint is L may go. A session's end is bounded by the largest
``run.iterations`` any session of the run was given (``config.toml`` and the log).
Resumes made before this log existed are not in it.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..errors import ConfigError
from .checkpoint_files import checkpoint_dir, write_atomic

__all__ = ["RESUMES", "gap_windows", "log_resume", "logged_resumes"]

#: the log of secure-noise resumes that may release (in the run's checkpoint directory)
RESUMES = "resumes.json"


def logged_resumes(run_dir: str | Path) -> list[dict]:
    """The entries of ``checkpoint/resumes.json`` (``{"from", "iterations"}``); [] when
    there is none.

    Raises
    ------
    ConfigError
        When the file exists but cannot be read: without it no bound can be proven.
    """
    path = checkpoint_dir(run_dir) / RESUMES
    try:
        data = json.loads(path.read_text())
        entries = [{"from": int(e["from"]), "iterations": int(e["iterations"])}
                   for e in data["resumes"]]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"{path} cannot be read ({type(err).__name__}: {err}); it records "
                          "the resumes of this secure-noise run whose releases no "
                          "checkpoint holds, so the privacy they spent cannot be bounded",
                          "restore it from a copy of the run directory, or start a new "
                          "run") from None
    return entries


def log_resume(run_dir: str | Path, start: int, iterations: int) -> None:
    """Record (whole or not at all) that a resume from iteration ``start`` to
    ``iterations`` may release from now on. Rank 0, before any release."""
    entries = logged_resumes(run_dir) + [{"from": start, "iterations": iterations}]
    write_atomic(checkpoint_dir(run_dir) / RESUMES,
                 json.dumps({"resumes": entries}, indent=1).encode())


def _session_end(last_checkpoint: int, every: int, cap: int) -> int:
    """The last iteration a session whose last complete checkpoint is
    ``last_checkpoint`` may have released, its run being at most ``cap`` long."""
    if not every:
        return cap
    return min((last_checkpoint // every + 1) * every, cap)


def gap_windows(info: dict, damaged_latest: int | None, every: int, entries: list[dict],
                config_iterations: int | None) -> list[tuple[int, int]]:
    """The iterations ``(first, last)`` each earlier session may have released after the
    checkpoint ``info`` (``latest.json``'s content) without its ledger holding them: one
    window per session that may have gone on past it ([] when none did).

    Parameters
    ----------
    info : dict
        The pointer of the checkpoint the resume uses.
    damaged_latest : int or None
        The iteration of the damaged latest checkpoint the resume falls back from (None:
        no fallback).
    every : int
        ``run.checkpoint_every``.
    entries : list of dict
        :func:`logged_resumes`.
    config_iterations : int or None
        ``run.iterations`` of the run directory's ``config.toml`` (the last session's).
    """
    start = int(info["iteration"])
    reach = start if damaged_latest is None else max(start, damaged_latest)
    lengths = [*([config_iterations] if config_iterations else []),
               *(e["iterations"] for e in entries)]
    if not every and not lengths:
        raise ConfigError("the run directory's config.toml cannot be read: how far the "
                          "run went after its checkpoint cannot be bounded",
                          "restore config.toml from a copy of the run directory, or "
                          "start a new run")
    # no run length known: the next periodic checkpoint still bounds a session (it would
    # have been written), so the window runs to it, never to the checkpoint itself
    cap = max([reach, *lengths]) if lengths else math.inf
    # without periodic checkpoints (every = 0) a checkpoint is only ever a run's end
    writer_ended = damaged_latest is None and (
        bool(info.get("final")) or not every or start % every != 0)
    sessions = [] if writer_ended else [reach]
    sessions += [max(reach, e["from"]) for e in entries if e["from"] >= start]
    windows = []
    for last_checkpoint in sessions:
        end = _session_end(last_checkpoint, every, cap)
        if end > start:
            windows.append((start + 1, end))
    return windows
