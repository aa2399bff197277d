"""A run's graph drawn once per host: the first task builds it, the others read its verdict.

Every task of a job checks the graph before MPI starts (:mod:`mpi_privopt.prelaunch`), so
that bad input makes every task exit 2 with one message: a task 0 that left alone would
leave the others waiting in ``MPI_Init``. Drawing the graph takes networkx (about 0.07 s
of CPU and 20 MB per process) and, for a random kind, up to 200 draws (0.2 s at 500
agents); with K tasks on a few cores that is paid K times over. Instead:

1. a task reads the *verdict* file of the graph's key (a hash of everything the graph
   depends on, below): the edge list, or the error message that rejected the graph;
2. if there is none, it tries the key's lock file (``fcntl.flock``). The first task to
   find it free holds it exclusively, reads again (another task may have written the
   verdict meanwhile) and, if there is still none, builds and validates the graph with
   networkx and writes the verdict: to a temporary file, then renamed over the verdict
   file, so that a reader sees a whole verdict or none. A task that finds the lock held
   asks for it shared: it sleeps in the kernel until the builder lets go, and all such
   tasks wake together and read the verdict (had the builder failed, each builds the
   graph itself);
3. every task thus reaches the same verdict: the same :class:`~.topology.LightGraph`, or
   the same :class:`~.errors.TopologyError` raised again.

The key is the SHA-256 of the graph's inputs (kind, agent count, resolved seed,
direction, the ``[topology]`` parameters, an edge-list file's contents) and of the code
and libraries that draw it (the source of the ``topology`` package and of networkx's
``__init__.py``, which holds its version; the numpy and Python versions), so a verdict
is never read for another graph or another builder: a stale file is simply never asked
for. A verdict that cannot be read or does not match
its key (a file edited by hand, a disk that filled) is rebuilt and replaced.

Where: ``$MPI_PRIVOPT_CACHE_DIR`` if set (``off`` or empty: no cache), else
``mpi_privopt-<uid>/graphs`` in the system's temporary directory (``$TMPDIR``; usually
local to the host). The directory must belong to the user and be writable by no one
else; otherwise, or when the filesystem refuses locks, every task builds the graph
itself, as before: slower, never wrong. The files are small (about 10 KB for 500
agents) and may be deleted at any time.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .errors import TopologyError
from .topology.light import LightGraph

__all__ = ["cache_dir", "cached_graph", "CACHE_ENV"]

#: the environment variable naming the cache directory (``off``: no cache)
CACHE_ENV = "MPI_PRIVOPT_CACHE_DIR"
#: the verdict files' format; a change makes every older verdict unread
FORMAT = 1


def cache_dir(kind: str = "graphs") -> Path | None:
    """The verdicts' directory, created if needed; None when there is no usable one.

    ``kind``: ``graphs`` (this module's) or another cache's subdirectory (``checks``:
    :mod:`mpi_privopt.check_verdict`), inside ``$MPI_PRIVOPT_CACHE_DIR`` when it is set.
    """
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None and chosen.strip().lower() in ("", "off", "none", "0"):
        return None
    if chosen is not None:
        base = Path(chosen).expanduser()
        directory = base if kind == "graphs" else base / kind
    else:
        base = Path(tempfile.gettempdir()) / f"mpi_privopt-{os.getuid()}"
        directory = base / kind
    try:
        if chosen is None:  # ours alone, whatever the umask would give a parent
            base.mkdir(mode=0o700, exist_ok=True)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # a directory someone else owns or may write to could hand us their verdicts
        for place in (directory,) if directory == base else (directory, base):
            info = os.lstat(place)
            if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
                    or info.st_mode & 0o022):
                return None
    except OSError:
        return None
    return directory


def code_identity() -> dict[str, str]:
    """What draws the graph: the ``topology`` package's source and the libraries' versions."""
    import numpy
    source = hashlib.sha256()
    package = Path(__file__).resolve().parent / "topology"
    for path in sorted(package.glob("*.py")):
        source.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    # networkx by its __init__.py (which holds its __version__), found without importing
    # it; importlib.metadata would cost every task more than the rest of this key
    spec = importlib.util.find_spec("networkx")
    networkx = (hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()
                if spec is not None and spec.origin else "absent")
    return {"topology": source.hexdigest(), "numpy": numpy.__version__, "networkx": networkx,
            "python": "%d.%d" % sys.version_info[:2]}


def cached_graph(inputs: dict[str, Any], build: Callable[[], LightGraph]) -> LightGraph:
    """The graph ``build()`` returns for ``inputs``, built by one task per host.

    Parameters
    ----------
    inputs : dict
        Everything the graph depends on besides the code (JSON-serialisable); must hold
        ``n`` (the agent count) and ``directed``.
    build : callable
        Builds and validates the graph; a :class:`TopologyError` it raises is the
        verdict too, and is raised again by every task that reads it.

    Returns
    -------
    LightGraph
        The same graph on every task; raises the same TopologyError on every task.
    """
    directory = cache_dir()
    if directory is None:
        return build()
    key = hashlib.sha256(json.dumps({"format": FORMAT, "inputs": inputs,
                                     "code": code_identity()},
                                    sort_keys=True).encode()).hexdigest()
    path = directory / f"{key}.json"
    verdict = _read(path, key, inputs)
    if verdict is None:
        with _lock(directory / f"{key}.lock") as role:
            verdict = None if role == NO_LOCK else _read(path, key, inputs)
            if verdict is None:  # the builder; or the builder failed; or no locks here
                try:
                    verdict = build()
                except TopologyError as err:
                    verdict = err
                if role == BUILDER:
                    _write(path, key, verdict)
    if isinstance(verdict, TopologyError):
        raise verdict
    return verdict


#: what :func:`_lock` made of a task: the one that builds, one that waited for it, or
#: one on a filesystem without locks
BUILDER, WAITED, NO_LOCK = "builder", "waited", "no lock"


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[str]:
    """Take the lock of ``path``: exclusive if it is free (this task builds), else shared.

    A task that finds the lock taken sleeps in the kernel until the builder lets it go,
    and all such tasks wake together (shared locks), instead of each waiting in turn for
    an exclusive one: with K tasks on a few cores each hand-over would wait for the
    scheduler. Yields :data:`BUILDER`, :data:`WAITED` or :data:`NO_LOCK`.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield NO_LOCK
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            role = BUILDER
        except BlockingIOError:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)  # asleep until the builder is done
                role = WAITED
            except OSError:
                role = NO_LOCK
        except OSError:  # e.g. ENOLCK: a filesystem without locks
            role = NO_LOCK
        yield role
    finally:
        os.close(fd)  # closing releases the lock


def _write(path: Path, key: str, verdict: LightGraph | TopologyError) -> None:
    """Write ``verdict`` whole or not at all (temporary file renamed over ``path``)."""
    if isinstance(verdict, TopologyError):
        body = {"error": {"what": verdict.what, "fix": verdict.fix}}
    else:
        body = {"n": verdict.n, "directed": verdict.directed,
                "edges": [list(e) for e in verdict.edges]}
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"format": FORMAT, "key": key, **body}, f, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass  # a full or read-only disk: the others build the graph themselves


def _read(path: Path, key: str, inputs: dict[str, Any]) -> LightGraph | TopologyError | None:
    """The verdict in ``path``, or None if there is none or it is not a valid one for ``key``."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data["format"] != FORMAT or data["key"] != key:
            return None
        if "error" in data:
            what, fix = data["error"]["what"], data["error"]["fix"]
            if isinstance(what, str) and (fix is None or isinstance(fix, str)):
                return TopologyError(what, fix)
            return None
        n, directed = data["n"], data["directed"]
        edges = [(u, v) for u, v in data["edges"]]
        if (n != inputs["n"] or directed != inputs["directed"]
                or not all(type(u) is int and type(v) is int and 0 <= u < n and 0 <= v < n
                           for u, v in edges)):
            return None
        return LightGraph(n, directed, edges)
    except (OSError, ValueError, KeyError, TypeError):
        return None
