"""The user-space delay line (tests/cluster/delay_line.py) between two namespaces.

Host a's eth0 is wired to ``left`` and host b's to ``right`` in a third namespace, where
the delay line relays between ``left`` and ``right``. Asserted, none of it timed against
the machine's speed: no ICMP echo comes back sooner than the delay there and back (every
frame is held at least ``d`` each way), a TCP stream of 4 MB crosses intact (veth's
offloaded super-frames and unfinished checksums cross with PACKET_VNET_HDR; without it no
TCP connection is made), and the relay counts what it passed. Bad input gives one line
and status 1 or 2. Root only (network namespaces); a few seconds.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launch_util import run_child, wait_for_file

LINE = Path(__file__).with_name("delay_line.py")
DELAY_MS = 5.0
pytestmark = pytest.mark.cluster
SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.231.78.2", 5001)); s.listen(); s.settimeout(60)
c, _ = s.accept(); c.settimeout(60); n = 0
while (d := c.recv(1 << 20)):
    n += len(d)
c.sendall(str(n).encode()); c.close()
"""
CLIENT = """
import socket
s = socket.create_connection(("10.231.78.2", 5001), timeout=30)
s.sendall(b"x" * (4 << 20)); s.shutdown(socket.SHUT_WR)
print("server received", s.recv(100).decode())
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def wired():
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and iproute2 (network namespaces)")
    tag = f"dl{os.getpid()}"
    names = {k: f"{tag}{k}" for k in ("a", "b", "sw")}
    made = []
    try:
        for ns in names.values():
            _ip("netns", "add", ns)
            made.append(ns)
        for host, end, address in (("a", "left", "10.231.78.1"),
                                   ("b", "right", "10.231.78.2")):
            _ip("-n", names[host], "link", "add", "eth0", "type", "veth", "peer", "name",
                end, "netns", names["sw"])
            _ip("-n", names["sw"], "link", "set", end, "up")
            _ip("-n", names[host], "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", names[host], "link", "set", "eth0", "up")
        yield names
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_frames_cross_late_and_tcp_crosses_intact(wired, tmp_path):
    ready = tmp_path / "ready"
    relay = subprocess.Popen(
        ["ip", "netns", "exec", wired["sw"], sys.executable, str(LINE), "left", "right",
         "--delay-ms", str(DELAY_MS), "--ready", str(ready)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = subprocess.Popen(["ip", "netns", "exec", wired["b"], sys.executable, "-c",
                               SERVER], stdout=subprocess.PIPE, text=True)
    try:
        wait_for_file(ready, relay, 30, "the delay line never said it was ready")
        echo = run_child(["ip", "netns", "exec", wired["a"], sys.executable, str(LINE),
                          "--ping", "10.231.78.2", "--count", "5"], timeout=60)
        assert echo.returncode == 0, echo.stdout + echo.stderr
        fastest = float(re.search(r" min ([\d.]+) ", echo.stdout).group(1))
        assert fastest >= 2 * DELAY_MS, echo.stdout
        stream = run_child(["ip", "netns", "exec", wired["a"], sys.executable, "-c",
                            CLIENT], timeout=120)
        assert stream.returncode == 0, stream.stdout + stream.stderr
        assert f"server received {4 << 20}" in stream.stdout
    finally:
        relay.terminate()
        server.kill()
        out, _ = relay.communicate(timeout=30)
        server.communicate(timeout=30)
    assert "SCHED_FIFO" in out, out  # root: it runs ahead of the processes it carries
    relayed = re.search(r"delay line stopped: (\d+) frames relayed, (\d+) dropped", out)
    assert relayed and int(relayed.group(1)) > 12, out  # 6 echoes, the stream, ARP
    assert relayed.group(2) == "0", out


def test_bad_input_one_line():
    usage = run_child([sys.executable, str(LINE), "only-one"], timeout=60)
    assert usage.returncode == 2 and "give two interfaces" in usage.stderr
    if os.geteuid() != 0:
        pytest.skip("the raw sockets need root")
    missing = run_child([sys.executable, str(LINE), "nosuch0", "nosuch1"], timeout=60)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().splitlines() == [
        "delay_line.py: cannot relay between nosuch0 and nosuch1: [Errno 19] No such device"]


def test_a_bad_delay_is_refused_by_multi_host_before_anything_starts():
    # a mistake of the caller's comes before the checks that skip (root, namespaces)
    script = Path(__file__).with_name("multi_host.sh")
    env = {**os.environ, "MULTIHOST_DELAY": "5sec"}
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.strip().splitlines() == [
        "FAILED: MULTIHOST_DELAY='5sec': give a one-way delay such as 5ms, 0.1ms or 200us"]
