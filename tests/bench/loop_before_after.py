"""Time per iteration of a registered method's run loop: this tree against another checkout.

The 5% goal of docs/performance.md asks that the reliability machinery (the stall
watchdog's progress mark and thread, the strided stop-signal agreement, the sleeping waits around the loop) leave
the exchange at most 5% slower at 2 ranks on 2 cores. The exchange's own code path did not
change, so what is measured is the whole loop of ``dgd`` (one neighbour exchange and one
local step per iteration) through ``engine.run`` with ``run.evaluate = "none"``, in this
tree and in a checkout from before the change (``--tree LABEL=PATH``, put first on
``PYTHONPATH``), jobs alternating so that both see the same load::

    git clone -q . /tmp/before && git -C /tmp/before checkout -q 91bd234
    python tests/bench/loop_before_after.py --tree before=/tmp/before --pairs 10

Each job is ``mpiexec -n K python tests/bench/loop_before_after.py --child`` and reports
``summary.algorithm_seconds / iterations`` (the loop without evaluation). Printed: every
pair's ratio this / other, the median of those ratios, and the ratio of the best jobs
(the least disturbed by other processes on a shared machine).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def child(experiment: str, iterations: int, sets: list[str]) -> None:
    from mpi4py import MPI

    from mpi_privopt.config import load_config
    from mpi_privopt.engine import run

    comm = MPI.COMM_WORLD
    cfg = load_config(experiment, ["run.evaluate=none", f"run.iterations={iterations}",
                                   *sets])
    out = comm.bcast(tempfile.mkdtemp(prefix="bench-loop-") if comm.rank == 0 else None)
    result = run(cfg, out=f"{out}/run", comm=comm, stream=None)
    if comm.rank == 0:
        print(json.dumps({"per_iteration": result.summary.algorithm_seconds / iterations}))


def job(ranks: int, tree: str | None, args) -> float:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
    command = ["mpiexec", "-n", str(ranks), sys.executable, os.path.abspath(__file__),
               "--child", "--experiment", args.experiment, "--iterations",
               str(args.iterations)] + [a for s in args.set for a in ("--set", s)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["per_iteration"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--experiment", default="dgd-ridge")
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--tree", required=False, metavar="LABEL=PATH")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    if args.child:
        child(args.experiment, args.iterations, args.set)
        return
    if not args.tree:
        parser.error("--tree LABEL=PATH is required (the checkout to compare against)")
    label, path = args.tree.split("=", 1)
    rows = []
    for pair in range(args.pairs):
        # Alternate which tree goes first, so that a trend in the load favours neither.
        order = [("this", None), (label, path)]
        if pair % 2:
            order.reverse()
        times = {name: job(args.ranks, tree, args) for name, tree in order}
        load = os.getloadavg()[0]
        rows.append({"this": times["this"], label: times[label], "load": load})
        print(f"pair {pair}: this {times['this'] * 1e6:.2f} us, {label} "
              f"{times[label] * 1e6:.2f} us, ratio {times['this'] / times[label]:.3f}, "
              f"load {load:.1f}", flush=True)
    ratios = [r["this"] / r[label] for r in rows]
    best = min(r["this"] for r in rows) / min(r[label] for r in rows)
    print(f"{args.ranks} ranks, {args.iterations} iterations of {args.experiment}: "
          f"per-pair ratio this / {label} {min(ratios):.3f}-{max(ratios):.3f}, median "
          f"{statistics.median(ratios):.3f}; best this / best {label} {best:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": args.ranks, "iterations": args.iterations,
                       "experiment": args.experiment, "other": label, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
