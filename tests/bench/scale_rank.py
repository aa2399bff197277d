"""One rank of the scaling benchmark: ``run`` as the command line does it, with timestamps.

Started by :mod:`tests.bench.scale` as ``mpiexec -n K python tests/bench/scale_rank.py
CONFIG [--set k=v]... --out DIR``; not meant to be run by hand. Each rank goes through the
same steps as ``python -m mpi_privopt run`` (:func:`mpi_privopt.cli.cmd_run`): the
command line's parsing, the pre-MPI check, the engine's imports (MPI starts here), the agreed config, the run, and
notes the wall-clock time (``time.time()``, comparable across the ranks of one machine)
after each. The process's own start comes from ``/proc/self/stat``. Rank 0 gathers every
rank's timestamps, its largest resident set (``ru_maxrss``), its proportional set size
at the end (``Pss``: shared library pages split among the ranks) and which of the heavy
libraries it imported, and prints one JSON line prefixed with ``SCALE_RANKS``.
"""
from __future__ import annotations

import os
import sys
import time

STAMPS = {"main": time.time()}
#: this process's CPU seconds at the same points (load-independent: the sum over the ranks
#: is the work the job asks of the machine's cores)
CPU = {"main": time.process_time()}


def _stamp(name: str) -> None:
    STAMPS[name], CPU[name] = time.time(), time.process_time()


def _process_start() -> float:
    """Wall-clock time this process started (Linux: /proc/self/stat, field 22)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _pss_mib() -> float:
    """This process's proportional set size (shared pages split among their users): its
    real share of the machine's memory, from /proc/self/smaps_rollup (nan elsewhere)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


#: libraries a worker rank should not need (reported per rank)
HEAVY = ("scipy", "scipy.optimize", "scipy.special", "networkx", "matplotlib")


def main(argv: list[str]) -> None:
    import argparse
    import json
    import resource

    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from mpi_privopt import cli
    words = ["run", args.config, *[w for o in args.overrides for w in ("--set", o)],
             "--out", args.out]
    try:  # what the command line parses on every rank
        cli.build_parser(words[0]).parse_args(words)
    except TypeError:  # an older tree: one parser for every command
        cli.build_parser().parse_args(words)
    _stamp("parsed")
    from mpi_privopt import prelaunch
    prelaunch.validate_before_mpi(args.config, args.overrides)
    _stamp("checked")
    try:  # as the run command: the imports, task 0's preload and the gate, MPI_Init
        from mpi_privopt.mpi_start import start_mpi
    except ImportError:  # an older tree
        getattr(prelaunch, "preload_for_rank_0", lambda: None)()  # (absent in older trees)
    else:
        start_mpi()
    from mpi_privopt.engine import run
    _stamp("imported")
    from mpi_privopt.entrypoint import load_agreed_config
    cfg = load_agreed_config(args.config, args.overrides)
    _stamp("config")

    def mark(agent, algorithm) -> None:
        _stamp("set_up")

    result = run(cfg, out=args.out, stream=None, on_setup=mark)
    _stamp("finished")
    from mpi4py import MPI
    mine = {"start": _process_start(), **STAMPS, "cpu": CPU,
            "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "pss_mib": _pss_mib(),
            "heavy": [m for m in HEAVY if m in sys.modules]}
    everyone = MPI.COMM_WORLD.gather(mine, root=0)
    if result is not None:
        s = result.summary
        print("SCALE_RANKS " + json.dumps({
            "ranks": everyone, "wall_seconds": s.wall_seconds, "eval_seconds": s.eval_seconds,
            "algorithm_seconds": s.algorithm_seconds, "final_error": s.final_error,
            "worst_link_epsilon": s.worst_link_epsilon}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
