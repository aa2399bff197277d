"""A shaped link stands out in the time per link: three hosts on one machine
(tests/cluster/multi_host.sh), host3's link to the switch delayed with ``tc netem``.

The model (docs/performance.md "Time per link"): a synchronous method that does E
exchanges in a run, each crossing the delayed link, waits about ``d`` more per exchange,
so its wall time grows by about ``E x d``. The test asserts only what does not depend on
the machine's speed: the links over host3's cable have the longer mean wait, and the
slowest link named crosses it; it prints the measured growth beside the
predicted one. It skips, with the
script's reason, where there are no network namespaces or the kernel has no sch_netem
(``MULTIHOST_SHAPE_TEST`` picks another qdisc, e.g. ``tbf rate 1mbit burst 4kb latency
200ms``, to run the same steps there).
"""
import os
import re
import sys
from pathlib import Path

import pytest

from launch_util import run_child

SCRIPT = Path(__file__).with_name("multi_host.sh")
SHAPE = os.environ.get("MULTIHOST_SHAPE_TEST", "netem delay 5ms")
T = 60
#: 8 KB messages: a rate limit shows too (MULTIHOST_SHAPE_TEST="tbf rate 10mbit ...")
FEATURES = 1000
#: host3's agents (2 slots per host, in host order)
HOST3 = {4, 5}
SLOWEST = re.compile(r"^slowest links: (\d+)->(\d+) ", re.M)
pytestmark = pytest.mark.cluster
LINE = re.compile(r"link wait: ([\d.]+) ms mean over the (\d+) links over host3's cable, "
                  r"([\d.]+) ms over the other (\d+); wall time ([\d.]+) s, algorithm "
                  r"([\d.]+) s, (\d+) exchanges per link")


def _run(tmp_path: Path, name: str, shape: str | None):
    env = {"MPI_PRIVOPT_VENV": sys.prefix, "MULTIHOST_TEST_DIR": str(tmp_path / name)}
    if shape:
        env["MULTIHOST_SHAPE"] = shape
    proc = run_child(["bash", str(SCRIPT), "--set", f"run.iterations={T}",
                      "--set", f"run.eval_every={T}", "--set", "run.link_time_every=5",
                      "--set", f"problem.features={FEATURES}"],
                     timeout=1200, env=env)
    if proc.returncode == 77:  # the reason, before the clean-up's lines
        pytest.skip(next((line for line in proc.stdout.splitlines()
                          if line.startswith("SKIPPED:")), "skipped"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    found = LINE.search(proc.stdout)
    assert found, proc.stdout[-4000:]
    return proc.stdout, [float(v) for v in found.groups()]


def test_a_delayed_link_stands_out_in_the_time_per_link(tmp_path):
    shaped_out, (via, n_via, rest, n_rest, wall, algo, exchanges) = _run(
        tmp_path, "shaped", SHAPE)
    assert f"shaped: host3's link to the switch, both directions: {SHAPE}" in shaped_out
    assert n_via > 0 and n_rest > 0
    # the receivers waited longer on the links over the shaped cable, and the slowest
    # link named crosses it
    assert via > rest, (via, rest)
    sender, receiver = map(int, SLOWEST.search(shaped_out).groups())
    assert (sender in HOST3) != (receiver in HOST3), (sender, receiver)
    _, (_, _, _, _, plain_wall, plain_algo, _) = _run(tmp_path, "plain", None)
    delay = re.search(r"delay ([\d.]+)ms", SHAPE)
    if delay:
        predicted = exchanges * float(delay.group(1)) * 1e-3
        print(f"\n{SHAPE}: algorithm time {plain_algo:.3f} s -> {algo:.3f} s, grew "
              f"{algo - plain_algo:.3f} s; predicted E x d = {exchanges:.0f} x "
              f"{delay.group(1)} ms = {predicted:.3f} s")
