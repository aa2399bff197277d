"""Time per link under real mpiexec: a slowed agent's out-links stand out in traffic.json,
and a token's hops are timed (mpi_privopt/network/link_time.py, docs/performance.md
"Time per link").

The slow agent is made by the fault hook of mpi_privopt/services/faults.py
(``slow@iteration:R:N:SECONDS``: rank R sleeps after every step from iteration N on).
The assertions are orderings and ratios between links of one run, never absolute times.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from launch_util import needs_mpiexec, run_mpiexec

pytestmark = needs_mpiexec

RANKS = 4
SLOW = 2
#: 49 exchanges: timed at 0, 16, 32 and 48
T = 49
EVERY = 16
TIMEOUT = 120


def _run(out: Path, *args: str, env: dict | None = None):
    done = run_mpiexec(RANKS, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
                               *args, "--set", f"run.iterations={T}",
                               "--set", f"run.link_time_every={EVERY}", "--out", str(out),
                               "--quiet"], timeout=TIMEOUT, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads((out / "traffic.json").read_text())


def _means(total: dict, name: str) -> np.ndarray:
    seconds = np.array(total[f"{name}_seconds"], dtype=float)
    samples = np.array(total[f"{name}_samples"])
    return np.where(samples > 0, seconds / np.maximum(samples, 1), np.nan)


def test_a_slow_agents_out_links_stand_out(tmp_path):
    out = tmp_path / "slow"
    traffic = _run(out, "default", "--set", "topology.kind=complete",
                   "--set", f"run.eval_every={T}",
                   env={"MPI_PRIVOPT_TEST_FAULT": f"slow@iteration:{SLOW}:0:0.05"})
    total = traffic["total"]
    # every link was timed on the same exchanges: one in EVERY of its messages
    messages = np.array(total["messages"])
    samples = np.array(total["wait_samples"])
    linked = messages > 0
    assert linked.sum() == RANKS * (RANKS - 1)
    assert np.array_equal(samples[linked], -(-messages[linked] // EVERY))
    assert np.all(samples[~linked] == 0)
    assert traffic["link_time_every"] == EVERY
    assert "receiver" in traffic["units"]["wait_seconds"]
    wait = _means(total, "wait")
    for receiver in range(RANKS):
        if receiver == SLOW:
            continue
        others = [wait[j, receiver] for j in range(RANKS) if j not in (receiver, SLOW)]
        # each receiver waited for the slow agent far longer than for anyone else
        assert wait[SLOW, receiver] > 4 * max(others), (receiver, wait)
    summary = json.loads((out / "summary.json").read_text())
    named = [tuple(entry["link"]) for entry in summary["slowest_links"]]
    assert sorted(named) == [(SLOW, k) for k in range(RANKS) if k != SLOW]


def test_a_tokens_hops_are_timed(tmp_path):
    traffic = _run(tmp_path / "token", "token-admm-elastic-net", "--set", "run.eval_every=49")
    phases = traffic["phases"]
    hops = [name for name in phases if np.array(phases[name]["transit_samples"]).sum()]
    assert hops, "no token hop was timed"
    for name in hops:
        transit = np.array(phases[name]["transit_samples"])
        sent = np.array(phases[name]["messages"])
        # a hop is timed only on a link that carried the token, at most once a message
        assert np.all(transit <= sent)
        assert np.all(np.array(phases[name]["transit_seconds"])[transit > 0] > 0)
    assert math.isfinite(sum(np.array(phases[name]["transit_seconds"]).sum()
                             for name in hops))
