"""Reading user data files (.npz, .csv) with numpy only, and checking what was read.

Every problem raises :class:`DataError` naming the file, what is wrong and how to fix it.
Row numbers in messages count data rows from 1 (the csv header is not a data row).
"""
from __future__ import annotations

import os
import warnings
import zipfile
from dataclasses import dataclass

import numpy as np

from mpi_privopt.errors import DataError

__all__ = ["Table", "read_table", "peek_feature_count", "check_finite", "short_list"]

_LABEL_NAMES = ("y", "target")
_AGENT_NAME = "agent"


@dataclass
class Table:
    """One data file's contents.

    Attributes
    ----------
    X : ndarray, shape (N, P)
    y : ndarray, shape (N,)
    agent : ndarray of float, shape (N,), or None if the file has no agent column
    path : str
    """

    X: np.ndarray
    y: np.ndarray
    agent: np.ndarray | None
    path: str


def short_list(values, limit: int = 10) -> str:
    """``[a, b, c, ...]`` with at most ``limit`` items, for messages."""
    values = list(values)
    body = ", ".join(str(v) for v in values[:limit])
    more = f", ... ({len(values)} in all)" if len(values) > limit else ""
    return f"[{body}{more}]"


def check_finite(arr: np.ndarray, what: str, path: str) -> None:
    """DataError if ``arr`` holds NaN or inf, giving the count and the first data row."""
    bad = ~np.isfinite(arr)
    if bad.any():
        rows = np.flatnonzero(bad.reshape(len(arr), -1).any(axis=1))
        raise DataError(
            f"{path}: {int(bad.sum())} non-finite value(s) (NaN, inf, empty or unparseable) "
            f"in {what}, in {len(rows)} row(s), first at data row {rows[0] + 1}",
            "remove or impute those rows; every feature and label must be a finite number",
        )


def _require_file(path: str, role: str) -> None:
    if not os.path.isfile(path):
        what = "is a directory, not a file" if os.path.isdir(path) else "does not exist"
        raise DataError(
            f"data file {path!r} ({role}) {what}",
            "check [problem] data (paths are relative to the working directory of the job, "
            "and every rank must be able to read it), or set data = \"\" for synthetic data",
        )


def _suffix(path: str) -> str:
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".npz", ".csv"):
        raise DataError(
            f"data file {path!r} has unsupported extension {suffix!r}",
            "use a .npz file (arrays X, y[, agent]) or a .csv file with a header row",
        )
    return suffix


def read_table(path: str, role: str) -> Table:
    """Read a .npz (arrays X, y, optional agent) or .csv (header; agent, y/target, features).

    ``role`` says what the file is for, e.g. "data for agent 3", for messages.
    """
    _require_file(path, role)
    if _suffix(path) == ".npz":
        return _read_npz(path)
    return _read_csv(path)


def _as_float(arr: np.ndarray, name: str, path: str) -> np.ndarray:
    try:
        return np.ascontiguousarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{path}: array {name!r} is not numeric (dtype {arr.dtype})",
            f"store {name} as a numeric array ({exc})",
        ) from None


def _read_npz(path: str) -> Table:
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataError(
            # numpy's own message for a non-archive is a hint to unpickle it: not shown
            f"{path}: cannot be read as a .npz archive (not a numpy.savez archive of arrays)"
            if "pickle" in str(exc) else f"{path}: cannot be read as a .npz archive ({exc})",
            "write it with numpy.savez(path, X=X, y=y, agent=agent)",
        ) from None
    # numpy hands back the raw bytes of a member that is not a .npy array
    raw = sorted(k for k, v in arrays.items() if not isinstance(v, np.ndarray))
    if raw:
        raise DataError(
            f"{path}: cannot be read as a .npz archive (not a numpy.savez archive of "
            f"arrays: {short_list(raw)} are not .npy arrays)",
            "write it with numpy.savez(path, X=X, y=y, agent=agent)",
        )
    missing = [k for k in ("X", "y") if k not in arrays]
    if missing:
        raise DataError(
            f"{path}: missing array(s) {missing}; found {sorted(arrays)}",
            "write it with numpy.savez(path, X=X, y=y, agent=agent) (agent only for a single "
            "file shared by all agents)",
        )
    X = _as_float(arrays["X"], "X", path)
    y = _as_float(arrays["y"], "y", path)
    agent = _as_float(arrays["agent"], "agent", path) if "agent" in arrays else None
    if X.ndim != 2:
        raise DataError(
            f"{path}: X has shape {X.shape} but must be 2-D (samples x features)",
            "reshape X to (N, P); use X.reshape(-1, 1) for a single feature",
        )
    for name, arr in (("y", y), ("agent", agent)):
        if arr is not None and arr.shape != (X.shape[0],):
            raise DataError(
                f"{path}: {name} has shape {arr.shape} but X has {X.shape[0]} rows",
                f"{name} must be 1-D with one entry per row of X",
            )
    return Table(X, y, agent, path)


def _header(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8-sig") as fh:
            line = fh.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the header row ({exc})",
                        "save the file as UTF-8 text with a header row") from None
    names = [c.strip().strip('"').strip("'").strip().lower() for c in line.rstrip("\r\n").split(",")]
    if not line.strip() or any(not n for n in names):
        raise DataError(
            f"{path}: the first line must be a header naming every column, got {line.strip()!r}",
            "add a header such as: agent,y,x1,x2,... (one name per column)",
        )
    return names


def _label_column(names: list[str], path: str) -> int:
    found = [i for i, n in enumerate(names) if n in _LABEL_NAMES]
    if len(found) != 1:
        what = "no label column" if not found else f"{len(found)} label columns"
        raise DataError(
            f"{path}: {what} (header: {short_list(names)})",
            "name exactly one column 'y' (or 'target'); all other columns except 'agent' "
            "are features",
        )
    return found[0]


def _read_csv(path: str) -> Table:
    names = _header(path)
    label = _label_column(names, path)
    agent_cols = [i for i, n in enumerate(names) if n == _AGENT_NAME]
    if len(agent_cols) > 1:
        raise DataError(f"{path}: {len(agent_cols)} columns named 'agent'",
                        "keep a single 'agent' column")
    features = [i for i in range(len(names)) if i != label and i not in agent_cols]
    if not features:
        raise DataError(f"{path}: no feature columns (header: {short_list(names)})",
                        "add at least one feature column besides 'agent' and 'y'")
    try:
        with warnings.catch_warnings():
            # an empty body warns; it is reported as "zero rows" by the caller instead
            warnings.simplefilter("ignore")
            data = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=np.float64,
                                 encoding="utf-8", ndmin=2)
    except ValueError as exc:
        raise DataError(
            f"{path}: rows do not all have {len(names)} comma-separated fields ({exc})",
            "make every row have one value per header column",
        ) from None
    if data.size == 0:
        data = np.empty((0, len(names)))
    if data.shape[1] != len(names):
        raise DataError(
            f"{path}: the header names {len(names)} columns but the rows have {data.shape[1]}",
            "make the header and every row have the same number of fields",
        )
    X = np.ascontiguousarray(data[:, features])
    y = np.ascontiguousarray(data[:, label])
    agent = np.ascontiguousarray(data[:, agent_cols[0]]) if agent_cols else None
    return Table(X, y, agent, path)


def peek_feature_count(path: str) -> int | None:
    """Number of features in a data file, read from its header only; None if unreadable.

    Lets an agent compare its feature count with another agent's file without
    loading that file's data.
    """
    try:
        if _suffix(path) == ".csv":
            names = _header(path)
            n_agent = sum(n == _AGENT_NAME for n in names)
            return len(names) - 1 - n_agent
        with zipfile.ZipFile(path) as zf, zf.open("X.npy") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape = np.lib.format.read_array_header_1_0(fh)[0]
            else:
                shape = np.lib.format.read_array_header_2_0(fh)[0]
        return int(shape[1]) if len(shape) == 2 else None
    except (DataError, OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
