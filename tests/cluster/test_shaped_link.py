"""A delayed link stands out in the time per link: three hosts on one machine
(tests/cluster/multi_host.sh), host3's link to the switch delayed 5 ms each way, with
``tc netem`` where the kernel has ``sch_netem``, else with the user-space delay line
(tests/cluster/delay_line.py, ``MULTIHOST_DELAY``).

The model (docs/performance.md "Emulated networks: a recipe"): a synchronous method that
does E exchanges in a run, each crossing the delayed link, waits about ``d`` more per
exchange, so its wall time grows by about ``E x d``. The test asserts only what does not
depend on the machine's speed: the links over host3's cable have the longer mean wait,
and the slowest link named crosses it; with the delay line, also that no echo came back
through it sooner than the delay there and back (it holds every frame at least ``d``).
It prints the measured growth beside the predicted one (``d`` as measured by ICMP echo
with the delay line). It skips, with the script's reason, where there are no network
namespaces (not root). ``MULTIHOST_SHAPE_TEST`` picks a qdisc instead, e.g. ``tbf rate
1mbit burst 4kb latency 200ms``; ``MULTIHOST_DELAY_TEST`` the delay line's delay.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from launch_util import run_child

SCRIPT = Path(__file__).with_name("multi_host.sh")
SHAPE = os.environ.get("MULTIHOST_SHAPE_TEST", "netem delay 5ms")
DELAY = os.environ.get("MULTIHOST_DELAY_TEST", "5ms")
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
ADDED = re.compile(r"^measured one-way delay added: (-?[\d.]+) ms", re.M)
ECHO_WITH = re.compile(r"^  host1 -> host3 with it: .* min ([\d.]+) ", re.M)
RELAYED = re.compile(r"^delay line stopped: (\d+) frames relayed", re.M)


def _netem_available() -> bool:
    """Whether ``tc`` can add a netem qdisc (in a throw-away network namespace)."""
    try:
        return subprocess.run(["unshare", "-n", "tc", "qdisc", "add", "dev", "lo", "root",
                               "netem", "delay", "1ms"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _run(tmp_path: Path, name: str, shape: str | None, delay: str | None = None):
    env = {"MPI_PRIVOPT_VENV": sys.prefix, "MULTIHOST_TEST_DIR": str(tmp_path / name)}
    if shape:
        env["MULTIHOST_SHAPE"] = shape
    if delay:
        env["MULTIHOST_DELAY"] = delay
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
    # the delay line where netem is missing (and no qdisc was asked for): the same steps
    use_line = "MULTIHOST_SHAPE_TEST" not in os.environ and not _netem_available()
    shape, delay = (None, DELAY) if use_line else (SHAPE, None)
    shaped_out, (via, n_via, rest, n_rest, wall, algo, exchanges) = _run(
        tmp_path, "shaped", shape, delay)
    if use_line:
        added = float(ADDED.search(shaped_out).group(1))
        # every frame waits at least d each way: no echo comes back sooner than 2 d
        d_set = float(re.fullmatch(r"([\d.]+)(ms|us)?", delay).group(1)) * (
            1e-3 if delay.endswith("us") else 1)
        assert float(ECHO_WITH.search(shaped_out).group(1)) >= 2 * d_set, shaped_out[-4000:]
        assert int(RELAYED.search(shaped_out).group(1)) > 0
        label, d_ms = f"delay line {delay}, measured {added:.3f} ms one way", added
    else:
        assert f"shaped: host3's link to the switch, both directions: {shape}" in shaped_out
        found = re.search(r"delay ([\d.]+)ms", shape)
        label, d_ms = shape, float(found.group(1)) if found else None
    assert n_via > 0 and n_rest > 0
    # the receivers waited longer on the links over the shaped cable, and the slowest
    # link named crosses it
    assert via > rest, (via, rest)
    sender, receiver = map(int, SLOWEST.search(shaped_out).groups())
    assert (sender in HOST3) != (receiver in HOST3), (sender, receiver)
    _, (_, _, _, _, plain_wall, plain_algo, _) = _run(tmp_path, "plain", None)
    if d_ms is not None:
        predicted = exchanges * d_ms * 1e-3
        print(f"\n{label}: algorithm time {plain_algo:.3f} s -> {algo:.3f} s, grew "
              f"{algo - plain_algo:.3f} s; predicted E x d = {exchanges:.0f} x "
              f"{d_ms:.3f} ms = {predicted:.3f} s")
