"""Three hosts on one machine: one MPI world across network namespaces over TCP.

tests/cluster/multi_host.sh does the work (installs openssh-server from the distribution
when missing, builds three network namespaces with their own hostnames and sshd joined by a
bridge in a fourth, runs the default experiment on 6 ranks from host1 through ssh with the
transport forced to TCP, checks summary.json, traffic.json's cross-host marks, the TCP
connections between hosts and that one host gives the same models bit for bit, and removes
everything it made); this test runs it and skips
with the script's reason where it cannot (not root, no network namespaces, no apt-get).
About half a minute on an idle machine, plus the install.
"""
import sys
from pathlib import Path

import pytest

from launch_util import run_child

SCRIPT = Path(__file__).with_name("multi_host.sh")
pytestmark = pytest.mark.cluster


def test_one_world_across_three_hosts_over_tcp(tmp_path):
    proc = run_child(["bash", str(SCRIPT), "--set", "run.iterations=60"], timeout=1200,
                     env={"MPI_PRIVOPT_VENV": sys.prefix,
                          "MULTIHOST_TEST_DIR": str(tmp_path / "hosts")})
    lines = proc.stdout.strip().splitlines() or [""]
    if proc.returncode == 77:
        pytest.skip(lines[-1])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "PASSED: 3 hosts" in proc.stdout
    assert ("summary.json: ranks 6, hosts by rank ['host1', 'host1', 'host2', 'host2', "
            "'host3', 'host3']") in proc.stdout
    assert "links cross hosts" in proc.stdout and "host2 <-> host3 TCP" in proc.stdout
    # the report marks the links between hosts
    assert "links across hosts (* in the bytes matrix)" in proc.stdout
    # placement does not change the result: the same run on one host, bit for bit
    assert "final models 6 x 8 bitwise equal" in proc.stdout
    assert "deleted namespace" in proc.stdout  # cleaned up after itself
