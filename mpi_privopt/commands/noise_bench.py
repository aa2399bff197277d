"""Time the noise sources: fast vs secure, Gaussian and Laplace, 10^3 and 10^6 coordinates.

Usage::

    python -m mpi_privopt.commands.noise_bench [--json PATH] [--repeats N] [--budget SECONDS]

Prints a Markdown table of the time per draw (best of ``--repeats`` rounds, each round
timing the fast and the secure draw one after the other; wall clock, and
the process CPU time, which does not count time lost to other processes on a busy machine)
and the ratio secure/fast. A secure draw of 10^6 coordinates that takes more than 60 s is
measured once (the table says so); one projected (from the 10^3 draw) to take more than
``--budget`` seconds is not run and the table says that, with the projection. Without
the ``secure`` extra (``cryptography``) the secure rows say it is not installed.
Alternating rounds keep the ratio comparable on a shared machine (the CPU-time ratio more
so).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time

import numpy as np

from ..errors import ConfigError
from ..privacy.noise import SecureNoise, agent_noise

SIZES = (10 ** 3, 10 ** 6)
LAWS = ("gaussian", "laplace")
ONCE_OVER_S = 60.0  # a run longer than this is not repeated
MIN_BLOCK_S = 0.05  # small draws are looped until a timed block lasts this long


def _time(fns, repeats: int, once_over: float = math.inf) -> list[dict]:
    """Best wall and CPU seconds per call of each of ``fns`` over ``repeats`` rounds.

    Each round times one block of every function in turn (alternating), so that a change
    of the machine's load hits all of them alike and their ratio stays comparable. A
    function whose first call takes more than ``once_over`` seconds is measured once.
    """
    out, loops = [], []
    for fn in fns:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        once = wall > once_over
        out.append({"wall_s": wall if once else math.inf, "cpu_s": cpu if once else math.inf,
                    "runs": 1 if once else repeats, "once": once,
                    "calls_per_run": 1 if once else max(1, int(MIN_BLOCK_S / max(wall, 1e-9)))})
    for _ in range(repeats):
        for fn, rec in zip(fns, out):
            if rec["once"]:
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(rec["calls_per_run"]):
                fn()
            rec["wall_s"] = min(rec["wall_s"], (time.perf_counter() - t0) / rec["calls_per_run"])
            rec["cpu_s"] = min(rec["cpu_s"], (time.process_time() - c0) / rec["calls_per_run"])
    return out


def run(repeats: int = 3, budget: float = 1800.0, log=None) -> dict:
    """Measure every (law, size, mode); returns the JSON-able record."""
    fast = agent_noise("fast", 0, 0)
    try:
        secure = SecureNoise()
        secure_error = None
    except ConfigError as err:
        secure, secure_error = None, f"not installed ({err.fix})"
    env = {
        "python": platform.python_version(), "numpy": np.__version__,
        "cryptography": secure.cryptography_version if secure else None,
        "granularity_log2": int(math.log2(secure.granularity)) if secure else None,
        "machine": platform.machine(), "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "repeats": repeats,
    }
    rows = []
    for law in LAWS:
        for n in SIZES:
            draw_f = getattr(fast, law)
            row = {"law": law, "n": n, "fast": None, "secure": None, "note": ""}
            if secure is None:
                row["fast"] = _time([lambda: draw_f(1.0, n)], repeats)[0]
                row["note"] = f"secure {secure_error}"
            else:
                draw_s = getattr(secure, law)
                small = next((r for r in rows if r["law"] == law and r["secure"]), None)
                projected = small["secure"]["wall_s"] * n / small["n"] if small else 0.0
                if projected > budget:
                    row["fast"] = _time([lambda: draw_f(1.0, n)], repeats)[0]
                    row["note"] = (f"secure not run: projected {projected:.0f} s per draw "
                                   f"(> --budget {budget:.0f} s)")
                else:
                    if log and n >= 10 ** 6:
                        log(f"timing secure {law} n={n} (projected {projected:.0f} s per draw)")
                    row["fast"], s = _time([lambda: draw_f(1.0, n), lambda: draw_s(1.0, n)],
                                           repeats, once_over=ONCE_OVER_S)
                    row["secure"] = s
                    if s["once"]:
                        row["note"] = f"secure measured once (> {ONCE_OVER_S:.0f} s per draw)"
            rows.append(row)
    env["load_average_end"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"environment": env, "results": rows}


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def table(record: dict) -> str:
    """The Markdown table of ``record`` (from :func:`run`)."""
    env = record["environment"]
    head = (f"Noise draw time, best of {env['repeats']} (wall clock; CPU time in parentheses). "
            f"Python {env['python']}, numpy {env['numpy']}, "
            f"cryptography {env.get('cryptography') or '-'}"
            + (f", secure grid 2**{env['granularity_log2']}" if env["granularity_log2"] else "")
            + f"; {env['machine']}, {env['cpus']} CPUs"
            + (f", load average {env['load_average_start']:.1f} at start, "
               f"{env['load_average_end']:.1f} at end" if env["load_average_start"] is not None
               else "") + ".")
    lines = [head, "",
             "| law | coordinates | fast per draw | secure per draw | secure per coordinate "
             "| secure/fast (wall) | secure/fast (CPU) | note |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in record["results"]:
        f, s = r["fast"], r["secure"]
        fast = f"{_fmt(f['wall_s'])} ({_fmt(f['cpu_s'])})"
        if s:
            sec = f"{_fmt(s['wall_s'])} ({_fmt(s['cpu_s'])})"
            per = f"{_fmt(s['wall_s'] / r['n'])} ({_fmt(s['cpu_s'] / r['n'])})"
            ratio_w = f"{s['wall_s'] / f['wall_s']:.0f}x"
            ratio_c = f"{s['cpu_s'] / f['cpu_s']:.0f}x" if f["cpu_s"] > 0 else "-"
        else:
            sec = per = ratio_w = ratio_c = "-"
        lines.append(f"| {r['law']} | {r['n']:.0e} | {fast} | {sec} | {per} | {ratio_w} "
                     f"| {ratio_c} | {r['note']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mpi_privopt.commands.noise_bench",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per case (best kept)")
    ap.add_argument("--budget", type=float, default=1800.0,
                    help="do not run a secure draw projected to take longer (seconds)")
    args = ap.parse_args(argv)
    record = run(args.repeats, args.budget,
                 log=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(table(record))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(record, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
