"""The run directory: everything a run leaves behind, written by rank 0 (models: see below).

Layout::

    config.toml     the fully resolved configuration (runs again as it is)
    graph.edgelist  the communication graph, one "u v" line per edge
    metrics.csv     iteration, the problem's metrics in this evaluation mode (reference:
                    error, objective_gap, consensus_gap), elapsed_seconds, then the cost
                    so far: bytes_total, worst_link_epsilon (not written in "none" mode),
                    and, when that epsilon is not a proven bound, epsilon_label (the same
                    text in every row, e.g. "nominal (C = 1): not a privacy guarantee")
    traffic.json    K x K matrices of messages, bytes and seconds, by phase and in total,
                    and the time each link cost its receiver (network/traffic.py)
                    (row = sender, column = receiver)
    privacy.json    K x K privacy loss per link (row = protected agent, column = observer),
                    per-agent totals, the conversions used (see docs/privacy.md)
    models.npz      reference mode: W, every agent's final model (row k = agent k); w_c
    models-agent-K.npz  local / none modes: agent K's own final model w, written by agent K
    summary.json    the headline numbers of the run (:class:`~mpi_privopt.summary.RunSummary`)
    .mpi_privopt-claim  while a run (or a resume) writes here: who it is (mpi_privopt/run_lock.py)

``metrics.csv`` is appended and flushed at every evaluation, so a run that stops early
keeps everything it measured up to then.
"""
from __future__ import annotations

import csv
import json
import errno
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import run_lock
from .errors import ConfigError
from .monitor import COST_COLUMNS, Evaluation
from .network.traffic import LINK_TIME_UNITS, sample_every
from .summary import RunSummary
from .topology import write_edge_list


#: the text column of a run whose worst_link_epsilon is not a proven bound (the method's
#: ``epsilon_label``), beside that column in every row; :func:`read_metrics` leaves it out
LABEL_COLUMN = "epsilon_label"


def metrics_header(columns: tuple[str, ...], labelled: bool = False) -> tuple[str, ...]:
    """The ``metrics.csv`` header for the problem's metric ``columns`` (``labelled``: with
    :data:`LABEL_COLUMN` last)."""
    return ("iteration", *columns, "elapsed_seconds", *COST_COLUMNS,
            *((LABEL_COLUMN,) if labelled else ()))


def agent_model_path(run_dir: str | Path, agent: int) -> Path:
    """Where agent ``agent`` writes its own final model (``local`` and ``none`` modes)."""
    return Path(run_dir) / f"models-agent-{agent}.npz"


def write_agent_model(run_dir: str | Path, agent: int, w: np.ndarray) -> None:
    """Agent ``agent``'s final model ``w``, written by that agent itself (whole, durable).

    The directory is made if missing: on hosts without a shared filesystem each agent
    keeps its model on its own disk, under the same run directory name.
    """
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    write_npz(agent_model_path(run_dir, agent), w=np.asarray(w, dtype=np.float64))


def write_durable(path: str | Path, write) -> None:
    """Write a file whole or not at all, and durably: ``write(handle)`` fills a hidden
    ``.NAME.partial`` file, which is fsynced, then renamed to ``path``."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    try:
        with open(partial, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_npz(path: str | Path, **arrays: np.ndarray) -> None:
    """``numpy.savez`` of ``arrays`` at ``path``, through :func:`write_durable` (the same
    bytes: an archive's entries carry no time stamp)."""
    write_durable(path, lambda handle: np.savez(handle, **arrays))


#: the claim a run holds on its directory from set-up to exit (mpi_privopt/run_lock.py)
CLAIM_MARKER = run_lock.CLAIM_FILE


def choose_run_dir(out: str | None, name: str, seed: int, base: str = "runs") -> Path:
    """Create (claim) the directory for a new run and return it.

    Never one that already holds results, and never one that another run claims: the
    default ``runs/NAME-STAMP-seedS`` is made with an exclusive ``mkdir`` (a suffix is
    added until one succeeds), and either directory is claimed for the whole run
    (:func:`mpi_privopt.run_lock.claim`, released when the run returns). Checked now,
    while the ranks agree, rather than found when rank 0 writes.
    """
    if out:
        try:
            return _claim_out(out)
        except OSError as err:  # /proc, /sys, a name too long, a read-only mount, ...
            raise _cannot_make(f"--out {out}", err) from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    stem = Path(base) / f"{name}-{stamp}-seed{seed}"
    _check_can_make(stem, f"the run directory {stem}")
    path, suffix = stem, 1
    while True:
        try:
            path.mkdir(parents=True)  # exclusive: two jobs in the same second differ
            break
        except FileExistsError:
            suffix += 1
            path = stem.with_name(f"{stem.name}-{suffix}")
        except OSError as err:
            raise _cannot_make(f"the run directory {path}", err) from None
    run_lock.claim(path, f"the run directory {path}")
    return path


def _cannot_make(what: str, err: OSError) -> ConfigError:
    too_long = err.errno == errno.ENAMETOOLONG
    return ConfigError(
        f"{what} cannot be made: {err.strerror or err}",
        "use a shorter name (a path component holds at most 255 bytes)" if too_long else
        "choose a directory on a writable file system (--out DIR)")


def _claim_out(out: str) -> Path:
    """Claim the ``--out`` directory ``out`` (see :func:`choose_run_dir`): it must be new
    or empty (but for a claim: another run's, refused, or a stale one, removed)."""
    path = Path(out)
    if path.exists() and (not path.is_dir() or _contents(path)):
        raise _not_empty(out)
    _check_can_make(path, f"--out {out}")
    path.mkdir(parents=True, exist_ok=True)
    run_lock.claim(path, f"--out {out}")
    if _contents(path):  # another run wrote there and ended just before this claim
        run_lock.release(path)
        raise _not_empty(out)
    return path


def _contents(path: Path) -> list[Path]:
    """What ``path`` holds besides claims (a claim being taken has a name of its own)."""
    return [p for p in path.iterdir() if not p.name.startswith(CLAIM_MARKER)]


def _not_empty(out: str) -> ConfigError:
    return ConfigError(f"--out {out} already exists and is not empty",
                       "choose a new directory; earlier results are never overwritten")


def release_run_dir(path: str | Path) -> None:
    """Undo a claim whose run never started: release it and remove the directory if
    nothing else is in it (a run refused during set-up leaves no empty directory)."""
    path = Path(path)
    run_lock.release(path)
    try:
        path.rmdir()
    except OSError:
        pass  # something was written: keep it


def _check_can_make(path: Path, what: str) -> None:
    """Raise ConfigError unless ``path`` can be created: its nearest existing ancestor must
    be a directory this process may write to."""
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"{what} cannot be made: {ancestor} is a file, not a directory",
                          "choose a path under a directory (--out DIR)")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} cannot be made: {ancestor} is not writable",
                          "choose a directory you can write to (--out DIR)")


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _numpy_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _compact(value: Any) -> str:
    # json's C encoder: it runs only without indent (at 200 agents the indenting Python
    # encoder took 30 s of rank 0's end of run for traffic.json and privacy.json)
    return json.dumps(value, default=_numpy_default)


def _is_container(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple, np.ndarray))


def to_json_text(value: Any, level: int = 0) -> str:
    """``value`` as JSON laid out for reading: a dict's keys one per line (indented two
    spaces a level), a list of lists or dicts one element per line (a matrix a row per
    line), everything else on one line. numpy arrays and scalars as lists and numbers."""
    if isinstance(value, np.ndarray) and value.ndim > 1:
        value = list(value)
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{_compact({key: 0})[1:-4]}: {to_json_text(item, level + 1)}"
                 for key, item in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)) and value and all(map(_is_container, value)):
        return "[\n" + ",\n".join(inner + _compact(item) for item in value) + f"\n{pad}]"
    return _compact(value)


def write_json(path: Path, data: Any, durable: bool = False) -> None:
    """``data`` as indented JSON at ``path``: the whole file or, if interrupted, none of it.

    An agent stopped by its budget writes its ledger and then the job is aborted, possibly
    while another agent is still writing its own: writing to a temporary name and renaming
    means an abort never leaves a truncated file behind. ``durable``: fsynced before the
    rename too (the files of a run's end, mpi_privopt/run_commit.py).
    """
    # Infinity is written for unbounded quantities (a non-private link's privacy loss);
    # Python's json and most JSON readers in data tools accept it.
    text = to_json_text(data) + "\n"
    if durable:
        write_durable(path, lambda handle: handle.write(text.encode()))
        return
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text)
    os.replace(partial, path)


class RunDirectory:
    """Writer of one run's directory (used on rank 0 only).

    ``epsilon_label``: what the run's epsilons are when they are not a proven bound (the
    method's ``epsilon_label``); metrics.csv then carries it beside worst_link_epsilon.
    """

    def __init__(self, path: Path, epsilon_label: str | None = None) -> None:
        self.path = Path(path)
        self.epsilon_label = epsilon_label
        self.path.mkdir(parents=True, exist_ok=True)
        self._metrics_file = None
        self._metrics = None

    def write_config(self, toml_text: str) -> None:
        (self.path / "config.toml").write_text(toml_text)

    def write_graph(self, graph) -> None:
        write_edge_list(graph, self.path / "graph.edgelist")

    def append_metrics(self, row: Evaluation) -> None:
        if self._metrics is None:
            self._metrics_file = open(self.path / "metrics.csv", "w", newline="")
            self._metrics = csv.writer(self._metrics_file)
            self._metrics.writerow(metrics_header(tuple(row.values),
                                                  bool(self.epsilon_label)))
        self._metrics.writerow([row.iteration, *(repr(v) for v in row.values.values()),
                                f"{row.elapsed:.6f}", row.bytes_total,
                                repr(row.worst_link_epsilon),
                                *((self.epsilon_label,) if self.epsilon_label else ())])
        self._metrics_file.flush()

    def resume_metrics(self, iteration: int) -> None:
        """Continue ``metrics.csv`` after ``iteration``: rows measured later (after the
        checkpoint a resume starts from) are dropped, whole file or nothing."""
        path = self.path / "metrics.csv"
        if not path.is_file():
            return
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
        kept = rows[:1] + [row for row in rows[1:] if row and int(row[0]) <= iteration]
        partial = path.with_name(f".{path.name}.partial")
        with open(partial, "w", newline="") as handle:
            csv.writer(handle).writerows(kept)
        os.replace(partial, path)
        self._metrics_file = open(path, "a", newline="")
        self._metrics = csv.writer(self._metrics_file)

    def sync_metrics(self) -> None:
        """Make the metrics rows written so far durable (before a final checkpoint)."""
        if self._metrics_file is not None:
            self._metrics_file.flush()
            os.fsync(self._metrics_file.fileno())

    def write_traffic(self, matrices: dict, receive_seconds: list[float]) -> None:
        write_json(self.path / "traffic.json", {
            "agents": int(matrices["total"]["bytes"].shape[0]),
            "rows": "sender", "columns": "receiver",
            "units": {"messages": "count", "bytes": "payload bytes",
                      # the sender's: a neighbour collective's split evenly over out-links
                      "seconds": "sender's seconds in MPI calls",
                      **LINK_TIME_UNITS},
            "link_time_every": sample_every(),
            "phases": matrices["phases"],
            "total": matrices["total"],
            "receive_seconds": receive_seconds,
            # each agent's host, and True on the links between two hosts (sender != receiver)
            **{key: matrices[key] for key in ("hosts", "cross_host") if key in matrices},
        }, durable=True)

    def write_privacy(self, report: dict) -> None:
        write_json(self.path / "privacy.json", report, durable=True)

    def write_models(self, W: np.ndarray, w_c: np.ndarray | None) -> None:
        # w_c only when the problem has a reference solution (no object arrays in the file)
        write_npz(self.path / "models.npz", W=W, **({} if w_c is None else {"w_c": w_c}))

    def write_summary(self, summary: RunSummary) -> None:
        write_json(self.path / "summary.json", summary.to_dict(), durable=True)

    def close(self) -> None:
        if self._metrics_file is not None:
            self._metrics_file.close()
            self._metrics_file = None


def read_metrics(path: str | Path) -> dict[str, np.ndarray]:
    """Every numeric column of a run's ``metrics.csv`` as a float array (empty if it has
    none); the text column :data:`LABEL_COLUMN` is left out.

    A run with ``run.evaluate = "none"`` writes no ``metrics.csv``: the result is ``{}``.
    """
    file = Path(path) / "metrics.csv"
    if not file.is_file():
        return {}
    with open(file) as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        columns = reader.fieldnames or []
    return {c: np.array([float(r[c]) for r in rows]) for c in columns if c != LABEL_COLUMN}
