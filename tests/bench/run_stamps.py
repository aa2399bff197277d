"""The ``run`` command's phases at K ranks, alternating with a bare job (docs/performance.md, section 8).

``python tests/bench/run_stamps.py [--ranks 50] [--rounds 2] [--tree LABEL=PATH]... [-- RUN ARGS]``

Each round starts ``mpiexec -n K`` on a bare job (import numpy and mpi4py, meet at a
barrier) and on ``python -m mpi4py -m mpi_privopt run`` through this file, once per tree
(this checkout and each ``--tree``, on ``PYTHONPATH``), then the bare job again. A rank
runs :func:`mpi_privopt.cli.main` itself, with its steps wrapped to note the wall-clock
time and CPU time after each: ``parsed``, ``checked``, ``preloaded`` (if the tree has
it), ``imported`` (the engine and ``MPI_Init``), ``config``, ``set_up``, ``looped``,
``finished``. Printed per job: the load average when it started, the wall time, the CPU
of the whole job (every rank and the launcher), its ratio to the mean of the bare jobs
around it, and each phase (ending when the last rank ends it). Default run arguments:
the 50-rank measurement of docs/performance.md (``--set topology.kind=erdos-renyi --set
run.iterations=200``).
"""
from __future__ import annotations

import json
import os
import sys
import time

STAMPS, CPU = {"main": time.time()}, {"main": time.process_time()}
PHASES = ("main", "parsed", "checked", "preloaded", "imported", "config", "set_up",
          "looped", "finished", "finalized")
BARE = "import numpy\nfrom mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\n"
DEFAULT_RUN = ["--set", "topology.kind=erdos-renyi", "--set", "run.iterations=200"]


def _stamp(name: str) -> None:
    STAMPS[name], CPU[name] = time.time(), time.process_time()


def _wrap(module, name: str, stamp: str, before: str | None = None) -> None:
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        if before:
            _stamp(before)
        result = original(*args, **kwargs)
        _stamp(stamp)
        return result
    setattr(module, name, wrapped)


def rank_main(argv: list[str]) -> None:
    """One rank: ``cli.main(argv)`` with its steps stamped; the stamps to $STAMP_DIR at exit."""
    import atexit

    from mpi_privopt import cli, prelaunch

    def dump() -> None:  # after MPI_Finalize (mpi4py's exit handler was registered later)
        _stamp("finalized")
        rank = next((os.environ[v] for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK")
                     if v in os.environ), "0")
        with open(os.path.join(os.environ["STAMP_DIR"], f"{rank}.json"), "w") as f:
            json.dump({"wall": STAMPS, "cpu": CPU, "rank": rank}, f)
    atexit.register(dump)
    _wrap(cli, "build_parser", "parsed")
    _wrap(prelaunch, "validate_before_mpi", "checked")
    if hasattr(prelaunch, "preload_for_rank_0"):
        _wrap(prelaunch, "preload_for_rank_0", "preloaded")
    original = cli.load_agreed_config

    def load(*args, **kwargs):  # the engine is imported (cmd_run) and MPI started by now
        _stamp("imported")
        from mpi_privopt import engine
        _wrap(engine, "iterate", "looped", before="set_up")
        _wrap(engine, "finish", "finished")
        result = original(*args, **kwargs)
        _stamp("config")
        return result
    cli.load_agreed_config = load
    cli.main(argv)


def job(ranks: int, command: list[str], env: dict) -> dict:
    """One mpiexec job: wall time, CPU of all its processes, load average at its start."""
    import resource
    import shutil
    import subprocess
    load = os.getloadavg()[0]
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    proc = subprocess.run([shutil.which("mpiexec") or "mpiexec", "-n", str(ranks), *command],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    end = time.time()
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"job failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    return {"start": start, "wall": end - start, "cpu": cpu, "load": load}


def phases(stamp_dir: str, start: float, end: float) -> str:
    ranks = [json.load(open(os.path.join(stamp_dir, f))) for f in os.listdir(stamp_dir)]
    done = [p for p in PHASES if all(p in r["wall"] for r in ranks)]
    parts, previous = [], start
    for p in done:
        last = max(r["wall"][p] for r in ranks)
        parts.append(f"{p} {last - previous:.1f}")
        previous = last
    cpu = []  # each phase's CPU seconds summed over the ranks, and rank 0's
    for p, q in zip(done, done[1:]):
        total = sum(r["cpu"][q] - r["cpu"][p] for r in ranks)
        zero = next((r["cpu"][q] - r["cpu"][p] for r in ranks if r.get("rank") == "0"), 0.0)
        cpu.append(f"{q} {total:.1f}/{zero:.2f}")
    return (", ".join(parts) + f", exit {end - previous:.1f} (s, each until the last rank)"
            + "\n    CPU s, all ranks/rank 0: " + ", ".join(cpu))


def main(argv: list[str]) -> int:
    import argparse
    import tempfile
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH")
    parser.add_argument("run", nargs=argparse.REMAINDER, help="after --: the run's arguments")
    args = parser.parse_args(argv)
    run_args = [a for a in args.run if a != "--"] or DEFAULT_RUN
    trees = [("this", os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))] + [tuple(t.split("=", 1)) for t in args.tree]
    with tempfile.TemporaryDirectory(prefix="run-stamps-") as work:
        bare = os.path.join(work, "bare.py")
        with open(bare, "w") as f:
            f.write(BARE)
        for round_ in range(args.rounds):
            for label, tree in trees:
                before = job(args.ranks, [sys.executable, bare], dict(os.environ))
                print(f"bare: {before['wall']:.1f} s, {before['cpu']:.1f} CPU s, "
                      f"load {before['load']:.1f}", flush=True)
                stamps = os.path.join(work, f"{label}-{round_}")
                os.mkdir(stamps)
                env = {**os.environ, "STAMP_DIR": stamps,
                       "PYTHONPATH": os.pathsep.join(filter(None, [
                           tree, os.environ.get("PYTHONPATH")]))}
                out = os.path.join(work, f"out-{label}-{round_}")
                run = job(args.ranks, [sys.executable, "-m", "mpi4py", os.path.abspath(__file__),
                                       "--rank", "run", *run_args, "--out", out, "--quiet"],
                          env)
                after = job(args.ranks, [sys.executable, bare], dict(os.environ))
                ratio = run["wall"] / ((before["wall"] + after["wall"]) / 2)
                print(f"{label}: {run['wall']:.1f} s ({ratio:.1f}x bare), {run['cpu']:.1f} CPU s, "
                      f"load {run['load']:.1f}; {phases(stamps, run['start'], run['start'] + run['wall'])}",
                      flush=True)
                print(f"bare: {after['wall']:.1f} s, {after['cpu']:.1f} CPU s, "
                      f"load {after['load']:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        rank_main(sys.argv[2:])
    else:
        sys.exit(main(sys.argv[1:]))
