"""The traffic matrices mark the links between hosts (traffic.json and ``report``)."""
import json

import numpy as np

from mpi_privopt.report import _hosts_text, _matrix_text
from mpi_privopt.results import RunDirectory
from mpi_privopt.network.traffic import TrafficMeter, assemble_matrices, cross_host_links

HOSTS = ["n1", "n1", "n2"]


def _rows():
    rows = []
    for k, out in enumerate([[1, 2], [0], [0]]):
        meter = TrafficMeter(out)
        meter.record_all("w", 80 * (k + 1), 0.0)
        rows.append(meter.rows(3))
    return rows


def test_cross_host_links():
    expected = np.array([[False, False, True], [False, False, True], [True, True, False]])
    assert np.array_equal(cross_host_links(HOSTS), expected)
    assert not cross_host_links(["vm"] * 4).any()


def test_assembled_traffic_carries_hosts_into_traffic_json(tmp_path):
    plain = assemble_matrices(_rows(), 3)
    assert "hosts" not in plain and "cross_host" not in plain
    traffic = assemble_matrices(_rows(), 3, HOSTS)
    assert traffic["hosts"] == HOSTS
    assert np.array_equal(traffic["total"]["bytes"], plain["total"]["bytes"])
    RunDirectory(tmp_path).write_traffic(traffic, [0.0, 0.0, 0.0])
    written = json.loads((tmp_path / "traffic.json").read_text())
    assert written["hosts"] == HOSTS
    assert written["cross_host"][0] == [False, False, True]


def test_report_marks_cross_host_links_and_says_who_ran_where():
    traffic = assemble_matrices(_rows(), 3, HOSTS)
    moved = traffic["total"]["bytes"].astype(float)
    run = {"bytes": moved, "hosts": HOSTS, "cross_host": traffic["cross_host"]}
    text = "\n".join(_hosts_text(run))
    # links 0->2 (80 B) and 2->0 (240 B) cross; 0->1 (80 B) and 1->0 (160 B) do not
    assert "links across hosts (* in the bytes matrix): 2 of 4 links, 320 of 560 bytes" in text
    assert "n1: agents 0, 1" in text and "n2: agents 2" in text
    rows = _matrix_text(moved, lambda v: "." if v == 0 else f"{v:.0f}",
                        traffic["cross_host"] & (moved > 0))
    assert rows[1].split() == ["0", ".", "80", "80*"]
    assert rows[3].split() == ["2", "240*", ".", "."]
    one_host = {"bytes": moved, "hosts": ["vm"] * 3, "cross_host": cross_host_links(["vm"] * 3)}
    assert _hosts_text(one_host) == ["hosts: all 3 agents ran on vm; no link crosses hosts"]
    assert _hosts_text({"bytes": moved, "hosts": None, "cross_host": None}) == []
