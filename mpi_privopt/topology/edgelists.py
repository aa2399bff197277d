"""File input and output: edge lists on the nodes ``0..n-1`` (``topology.kind = "file"``).

networkx is imported only by :func:`read_edge_list` (a run's ranks write and compare
edge lists without it: :mod:`.light`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mpi_privopt.errors import TopologyError

from .light import LightGraph
from .params import check_agent_count

_SEPARATOR = re.compile(r"[,\s]+")
_HEADER = re.compile(r"#\s*mpi_privopt edge list:\s*n=(\d+)")


def read_edge_list(path: str | os.PathLike[str], n: int, *, directed: bool = False):
    """Read an edge list on the nodes ``0..n-1``.

    One edge per line, ``u v`` separated by whitespace and/or a comma, with an optional
    third column (a weight, which is read and ignored: mixing weights always come from
    ``topology.weights``). Each link is listed once (a repeated edge is refused). Blank
    lines and lines starting with ``#`` are skipped. When directed each line is the arc ``u -> v``. Nodes that appear on no line
    are still added (and make the graph disconnected).

    Parameters
    ----------
    path : str or path-like
        The file.
    n : int
        Number of agents.
    directed : bool, default False
        Return a DiGraph of arcs.

    Raises
    ------
    TopologyError
        Missing or unreadable file, malformed line, self-loop, repeated edge, node outside
        ``0..n-1``, or a header written by :func:`write_edge_list` for a different ``n``.
    """
    n = check_agent_count(n)
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise TopologyError(f"edge-list file {str(path)!r} does not exist",
                            "check [topology] file (relative paths are relative to the working directory)") from err
    except (OSError, UnicodeDecodeError) as err:
        raise TopologyError(f"cannot read edge-list file {str(path)!r}: {err}",
                            "point [topology] file at a readable UTF-8 text file") from err
    import networkx as nx
    G = nx.empty_graph(n, create_using=nx.DiGraph if directed else nx.Graph)
    first_line: dict[tuple[int, int], int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            _check_header(line, n, path)
            continue
        if line:
            u, v = _parse_edge(line, lineno, n, path)
            key = (u, v) if directed else (min(u, v), max(u, v))
            if key in first_line:
                # a repeated edge would be one link either way: most likely a typo
                raise TopologyError(
                    f"{path}, line {lineno}: the {'arc' if directed else 'edge'} {u}-{v} is "
                    f"already on line {first_line[key]}",
                    "list each link once" + ("" if directed else
                                             " (an undirected edge u v is also v u)"))
            first_line[key] = lineno
            G.add_edge(u, v)
    return G


def _check_header(line: str, n: int, path: Path) -> None:
    # A file we wrote records its n; a mismatch is clearer here than as a disconnected graph.
    match = _HEADER.match(line)
    if match and int(match.group(1)) != n:
        written = int(match.group(1))
        raise TopologyError(
            f"edge-list file {str(path)!r} was written for {written} agents but the job has {n} ranks",
            f"run with mpiexec -n {written} or use an edge list for {n} agents",
        )


def _parse_edge(line: str, lineno: int, n: int, path: Path) -> tuple[int, int]:
    fields = _SEPARATOR.split(line)
    try:
        if len(fields) not in (2, 3):
            raise ValueError
        u, v = int(fields[0]), int(fields[1])
        if len(fields) == 3:
            float(fields[2])
    except ValueError:
        raise TopologyError(
            f"{path}, line {lineno}: malformed edge {line!r}",
            'write one edge per line as "u v" or "u,v" (integers), optionally followed by a weight',
        ) from None
    for node in (u, v):
        if not 0 <= node < n:
            raise TopologyError(
                f"{path}, line {lineno}: node {node} is outside 0..{n - 1} (the job has {n} ranks)",
                f"number the nodes 0..{n - 1}, or run with more ranks (mpiexec -n {max(u, v) + 1})"
                if node >= n else f"number the nodes 0..{n - 1}",
            )
    if u == v:
        raise TopologyError(f"{path}, line {lineno}: self-loop {u}-{v}",
                            "remove the line; an agent always keeps its own value")
    return u, v


def sorted_edges(G: Any) -> list[tuple[int, int]]:
    """Edges (arcs) sorted, an undirected edge as ``(min, max)``: one order for every rank.

    ``G`` is a networkx graph or a :class:`~.light.LightGraph` (whose edges are kept so).
    """
    if isinstance(G, LightGraph):
        return list(G.edges)
    if G.is_directed():
        return sorted((int(u), int(v)) for u, v in G.edges)
    return sorted((min(int(u), int(v)), max(int(u), int(v))) for u, v in G.edges)


def write_edge_list(G: Any, path: str | os.PathLike[str]) -> None:
    """Write ``G`` in the format read by :func:`read_edge_list`.

    A header ``# mpi_privopt edge list: n=<n> directed=<bool>`` and then one ``u v`` line
    per edge (arc), sorted; undirected edges are written as ``min max``.
    """
    lines = [f"# mpi_privopt edge list: n={G.number_of_nodes()} directed={G.is_directed()}"]
    lines += [f"{u} {v}" for u, v in sorted_edges(G)]
    Path(path).expanduser().write_text("\n".join(lines) + "\n", encoding="utf-8")
