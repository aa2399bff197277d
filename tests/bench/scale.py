"""Scaling benchmark: a whole ``run`` job at K ranks, its start-up by phase, memory per rank.

``python tests/bench/scale.py [--ranks 8,50,200] [--repeats 3] [--png FILE] [--json FILE]``

For each K (in turn, ``repeats`` rounds, the K values alternating within a round so that
the machine's load hits them alike) the script starts ``mpiexec -n K`` on
``tests/bench/scale_rank.py``, which runs the experiment exactly as ``python -m
mpi_privopt run`` does and stamps each rank's phases. Reported per K:

* **job**: wall time from before ``mpiexec`` starts to its exit (everything a user waits);
* **start-up**: from the job's start to the moment the last rank is ready to iterate,
  split into phases, each ending when the last rank ends it: ``launch`` (until the
  interpreter runs the script:
  the launcher, interpreter start-up), ``parse`` (the command line's parser, as ``run``
  builds it), ``check`` (the pre-MPI config and graph check),
  ``imports`` (the engine's imports, MPI initialisation included), ``config`` (the agreed
  config), ``set-up`` (graph, data, reference solution, network, algorithm);
* **loop**: the T iterations (``wall_seconds``) and the evaluation's share of it;
* **CPU**: the CPU seconds of every rank summed, until the last rank is ready and until
  the end. It includes MPI's polling (a rank waiting in an MPI call keeps testing), so it
  is not the work alone: a diagnostic to compare two trees in the same conditions;
* **RSS**: the largest resident set of a rank (median and max over the ranks), and its
  proportional set size at the end (PSS: library pages shared by the ranks counted once
  in all; the sum over the ranks is what the job takes from the machine);
* which heavy libraries the worker ranks (every rank but 0) imported, and how many ranks
  imported networkx (the one task that drew the graph for the host, or none).

Each job gets a fresh, empty graph cache (``MPI_PRIVOPT_CACHE_DIR``, mpi_privopt/graph_cache.py):
one of its tasks draws the graph, as the first job of a host does (``--graph-cache host``:
the user's own cache, where a repeated job reads the verdict).

At 500 ranks on one host (``--ranks 500``), per job: 500 Python processes (at most 4
threads each were seen at 50 ranks: about 2,000), and hydra's proxy holds about 4 file
descriptors per rank (210 at 50 ranks: the tasks' output pipes and PMI sockets): about
2,100, under this machine's ``ulimit -n`` of 20,000 (a soft limit of 1,024 would need
``ulimit -n 4096`` first). The default time limit grows with K (900 s + 2 s per rank).

The default experiment is the 50-rank run of docs/performance.md (zCDP-NFL on elastic
net, T = 200): ``gauthier2024-elastic-net`` with its reproduction's seeds. ``--png``
draws job time, start-up and memory per rank against K (matplotlib). The machine's load
is printed beside each job: on a shared machine compare the rows of one invocation.
Results: docs/performance.md, section "Scale".
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from time import perf_counter, time

from mpi_privopt.commands.launch_line import child_environment, mpiexec_options

HERE = Path(__file__).resolve().parent
#: the 50-rank measurement of docs/performance-gauthier2024.md
DEFAULT_CONFIG = ["gauthier2024-elastic-net", "--set", "problem.clip=3.0",
                  "--set", "topology.seed=2024", "--set", "run.seed=1000"]
#: (label, stamp before, stamp after) of the start-up phases
PHASES = (("launch", "job", "main"), ("parse", "main", "parsed"), ("check", "parsed", "checked"),
          ("imports", "checked", "imported"), ("config", "imported", "config"),
          ("set-up", "config", "set_up"))


def run_job(ranks: int, config: list[str], timeout: float, tree: str | None = None,
            cold_cache: bool = True) -> dict:
    """One ``mpiexec -n ranks`` job: its wall time and every rank's stamps.

    ``tree``: a checkout of the package to run instead of the installed one (on
    ``PYTHONPATH``), e.g. the code before a change, for a comparison in the same conditions.
    ``cold_cache``: the job's own empty graph cache (else the user's).
    """
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        raise SystemExit("no mpiexec on PATH")
    flags = mpiexec_options(mpiexec, oversubscribe=True)  # hydra's flag: 500 ranks start
    with tempfile.TemporaryDirectory(prefix="scale-") as out:
        cmd = [mpiexec, "-n", str(ranks), *flags, sys.executable,
               str(HERE / "scale_rank.py"), *config, "--out", os.path.join(out, "run")]
        load = os.getloadavg()[0]
        start_wall, start = time(), perf_counter()
        env = child_environment(None)
        if cold_cache:
            env["MPI_PRIVOPT_CACHE_DIR"] = os.path.join(out, "graph-cache")
        if tree:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=env)
        except subprocess.TimeoutExpired as err:
            raise JobFailed(f"{ranks} ranks: no end within {timeout:.0f} s") from err
        job = perf_counter() - start
    if proc.returncode != 0:
        raise JobFailed(f"{ranks} ranks: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("SCALE_RANKS "))
    data = json.loads(line.split(" ", 1)[1])
    data.update(K=ranks, job=job, job_start=start_wall, load=load)
    return data


def summarise(data: dict) -> dict:
    """The per-K figures of one job (see the module docstring)."""
    ranks = data["ranks"]
    for r in ranks:
        r["job"] = data["job_start"]
    # the critical path: each phase ends when the last rank has ended it (a rank that is
    # done early waits for the others in the next phase's first collective call)
    phases = {label: max(r[after] for r in ranks) - max(r[before] for r in ranks)
              for label, before, after in PHASES}
    rss = [r["maxrss_mib"] for r in ranks]
    pss = [r.get("pss_mib", float("nan")) for r in ranks]
    heavy = sorted({m for r in ranks[1:] for m in r["heavy"]})
    networkx_ranks = sum("networkx" in r["heavy"] for r in ranks)
    cpu = [r.get("cpu", {}) for r in ranks]
    cpu_startup = sum(c.get("set_up", float("nan")) for c in cpu)  # CPU from process start
    cpu_total = sum(c.get("finished", float("nan")) for c in cpu)
    return {"K": data["K"], "job": data["job"], "load": data["load"],
            "cpu_startup": cpu_startup, "cpu_total": cpu_total,
            "startup": max(r["set_up"] for r in ranks) - data["job_start"],
            "phases": phases, "loop": data["wall_seconds"], "eval": data["eval_seconds"],
            "eval_share": data["eval_seconds"] / data["wall_seconds"] if data["wall_seconds"] else 0.0,
            "rss_median": statistics.median(rss), "rss_max": max(rss),
            "pss_total": sum(pss) / 1024, "pss_median": statistics.median(pss),
            "worker_imports": heavy, "networkx_ranks": networkx_ranks,
            "final_error": data["final_error"],
            "job_start": data["job_start"], "stamps": ranks}  # every rank's, for --json


def table(rows: list[dict]) -> str:
    head = ("| tree | K | load | job s | start-up s | launch | parse | check | imports | config | set-up "
            "| loop s | eval share | CPU s start-up / job | RSS/rank MiB (median, max) "
            "| PSS/rank MiB | job PSS GiB | workers import | ranks with networkx |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|\n")
    lines = []
    for r in rows:
        p = r["phases"]
        lines.append(
            f"| {r.get('tree', 'this')} | {r['K']} | {r['load']:.1f} | {r['job']:.1f} | {r['startup']:.1f} | "
            + " | ".join(f"{p[label]:.1f}" for label, _, _ in PHASES)
            + f" | {r['loop']:.2f} | {100 * r['eval_share']:.0f}% | "
            f"{r.get('cpu_startup', float('nan')):.1f} / {r.get('cpu_total', float('nan')):.1f} | "
            f"{r['rss_median']:.0f}, {r['rss_max']:.0f} | {r.get('pss_median', float('nan')):.0f} | "
            f"{r.get('pss_total', float('nan')):.1f} | "
            f"{', '.join(r['worker_imports']) or 'none of ' + '/'.join(('scipy', 'networkx'))} | "
            f"{r.get('networkx_ranks', '?')} |")
    return head + "\n".join(lines)


def plot(rows: list[dict], path: str) -> None:
    """Job time, start-up and RSS per rank against K (each repeat a point, medians joined)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r.get("tree", "this") == "this"]
    Ks = sorted({r["K"] for r in rows})
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label, marker in (("job", "whole job", "o"), ("startup", "start-up", "s"),
                               ("loop", "200 iterations", "^")):
        ax_t.scatter([r["K"] for r in rows], [r[key] for r in rows], marker=marker, alpha=0.5)
        ax_t.plot(Ks, [statistics.median(r[key] for r in rows if r["K"] == K) for K in Ks],
                  marker=marker, label=label)
    ax_t.set(xscale="log", xlabel="ranks K (2 cores, oversubscribed)", ylabel="seconds",
             title="wall time against K")
    ax_t.set_xticks(Ks, [str(K) for K in Ks])
    ax_t.minorticks_off()
    ax_t.legend()
    for key, label in (("rss_median", "max RSS, median rank"), ("rss_max", "max RSS, largest rank"),
                       ("pss_median", "PSS, median rank")):
        ax_m.plot(Ks, [statistics.median(r[key] for r in rows if r["K"] == K) for K in Ks],
                  marker="o", label=label)
    ax_m.set(xscale="log", xlabel="ranks K", ylabel="MiB per rank",
             title="memory per rank against K")
    ax_m.set_xticks(Ks, [str(K) for K in Ks])
    ax_m.minorticks_off()
    ax_m.set_ylim(bottom=0)
    ax_m.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


class JobFailed(RuntimeError):
    """A job that did not end with status 0 (its status and the end of its stderr)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="8,50,200", help="comma-separated K values")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per job (default 900 + 2 per rank)")
    parser.add_argument("--graph-cache", choices=("cold", "host"), default="cold",
                        help="cold: each job its own empty graph cache (default); host: "
                             "the user's cache, as repeated jobs on one host use it")
    parser.add_argument("--png", default=None, help="draw the figure to this PNG")
    parser.add_argument("--json", default=None, help="write every job's figures here")
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH",
                        help="also run the package checked out at PATH (PYTHONPATH), "
                             "alternating with this one, e.g. before=/tmp/before")
    parser.add_argument("config", nargs=argparse.REMAINDER,
                        help="the experiment and --set overrides (default: the 50-rank "
                             "zCDP-NFL run of docs/performance.md)")
    args = parser.parse_args(argv)
    config = args.config or DEFAULT_CONFIG
    trees = [("this", None)] + [tuple(t.split("=", 1)) for t in args.tree]
    rows, failed = [], []
    for repeat in range(args.repeats):
        for K in (int(k) for k in args.ranks.split(",")):
            for label, path in trees:
                timeout = args.timeout or 900.0 + 2.0 * K
                try:
                    row = summarise(run_job(K, config, timeout, path,
                                            cold_cache=args.graph_cache == "cold"))
                except JobFailed as err:  # keep the other jobs' figures
                    print(err, file=sys.stderr, flush=True)
                    failed.append({"K": K, "tree": label, "repeat": repeat,
                                   "error": str(err)})
                    continue
                row.update(repeat=repeat, tree=label)
                rows.append(row)
                print(table([row]).splitlines()[-1], flush=True)
    print()
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"jobs": rows, "failed": failed}, indent=1)
                                   if failed else json.dumps(rows, indent=1))
    if args.png and rows:
        plot(rows, args.png)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
