"""How long the random-graph builders take: the measurement that was once a unit-test bound.

``python tests/bench/graph_build.py [--repeats N] [--check]``

The unit tests check what the builders build (edge counts, connectivity, determinism);
how fast they build it depends on the machine and its load, so it is measured here, never
asserted in a test. Each row is the best and the median of ``repeats`` builds, a fresh seed
per build. With ``--check`` the script exits 1 when a row's best time exceeds the row's
budget: 0.5 s for the sparse Erdos-Renyi graph of 50 nodes, the bound the unit test used to
assert (it takes about a millisecond).
Results: docs/performance.md, section "Graph construction".
"""
from __future__ import annotations

import argparse
import statistics
import sys
from time import perf_counter

from mpi_privopt.topology import build_graph

#: (kind, nodes, params, budget in seconds or None): the sparse rejection path, the
#: tree-plus-edges fallback, larger K
ROWS = (
    ("erdos-renyi", 50, {"degree": 3.0}, 0.5),
    ("erdos-renyi", 200, {"degree": 2.2}, None),
    ("erdos-renyi", 1000, {"degree": 3.0}, None),
    ("small-world", 1000, {}, None),
)


def measure(kind: str, nodes: int, params: dict, repeats: int) -> list[float]:
    times = []
    for seed in range(repeats):
        start = perf_counter()
        build_graph(kind, nodes, seed=seed, params=params)
        times.append(perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a row's best build takes longer than its budget")
    args = parser.parse_args(argv)
    over = False
    print(f"{'kind':<18}{'nodes':>6}  {'best':>10}  {'median':>10}")
    for kind, nodes, params, budget in ROWS:
        try:
            times = measure(kind, nodes, params, args.repeats)
        except Exception as err:  # a kind renamed or absent: say so, time the rest
            print(f"{kind:<18}{nodes:>6}  skipped: {err}")
            continue
        best, median = min(times), statistics.median(times)
        print(f"{kind:<18}{nodes:>6}  {best * 1e3:>8.2f}ms  {median * 1e3:>8.2f}ms")
        if args.check and budget is not None and best > budget:
            print(f"  over its budget of {budget} s")
            over = True
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
