"""Time per link: the receiver books its in-links, the matrices put each time on its link
(row = sender, column = receiver), the slowest links are named, the report shows them
(mpi_privopt/network/link_time.py, mpi_privopt/network/traffic.py)."""
from __future__ import annotations

import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from mpi_privopt.network import traffic
from mpi_privopt.network.traffic import (LINK_TIME, TrafficMeter, assemble_matrices,
                                         set_sample_every, slowest_links)
from mpi_privopt.report import text_report
from mpi_privopt.summary import slowest_links_text

K = 3


def _meters() -> list[TrafficMeter]:
    """A triangle: agent 1 receives from 0 and 2 and timed two exchanges and one hop."""
    meters = [TrafficMeter([1, 2], [1, 2]), TrafficMeter([0, 2], [0, 2]),
              TrafficMeter([0, 1], [0, 1])]
    for m in meters:
        m.record_all("x", 8, 0.01)
    receiver = meters[1]
    receiver.record_link_time("x", [0.5, 0.1], [None, 0.2])
    receiver.record_link_time("x", [0.3, 0.1], [0.4, None])
    receiver.record_hop("token", 1, 0.07)  # in-link 1: from agent 2
    return meters


def test_the_receivers_times_land_on_its_in_links():
    matrices = assemble_matrices([m.rows(K) for m in _meters()], K)
    total = matrices["total"]
    assert set(LINK_TIME) <= set(total)
    # column 1 (the receiver), rows 0 and 2 (its in-neighbours)
    np.testing.assert_allclose(total["wait_seconds"][:, 1], [0.8, 0.0, 0.2])
    np.testing.assert_array_equal(total["wait_samples"][:, 1], [2, 0, 2])
    # a transit not measured (None) is neither summed nor counted; a hop's is
    np.testing.assert_allclose(total["transit_seconds"][:, 1], [0.4, 0.0, 0.27])
    np.testing.assert_array_equal(total["transit_samples"][:, 1], [1, 0, 2])
    assert total["wait_samples"].dtype == np.int64
    # nothing was booked on any other link, and the bytes stay the senders' rows
    others = np.ones((K, K), dtype=bool)
    others[:, 1] = False
    for name in LINK_TIME:
        assert not total[name][others].any()
    np.testing.assert_array_equal(total["bytes"], 8 * (1 - np.eye(K, dtype=int)))
    hop = matrices["phases"]["token"]
    assert hop["transit_samples"][2, 1] == 1 and not hop["wait_samples"].any()
    assert not hop["bytes"].any()  # the hop's receiver sent nothing in that phase


def test_the_slowest_links_come_by_mean_wait_then_by_transit():
    matrices = assemble_matrices([m.rows(K) for m in _meters()], K)
    slowest = slowest_links(matrices)
    assert [entry["link"] for entry in slowest] == [[0, 1], [2, 1]]
    assert slowest[0]["wait_mean_seconds"] == pytest.approx(0.4)
    assert slowest[0]["transit_mean_seconds"] == pytest.approx(0.4)
    assert slowest[1]["transit_mean_seconds"] == pytest.approx(0.135)
    assert slowest[0]["samples"] == 2
    # a link timed only by a token hop comes after every waited-for link
    only_hops = TrafficMeter([], [0])
    only_hops.record_hop("token", 0, 0.9)
    hop = assemble_matrices([{}, only_hops.rows(2)], 2)
    assert slowest_links(hop) == [{"link": [0, 1], "wait_mean_seconds": None,
                                   "transit_mean_seconds": 0.9, "samples": 1}]
    assert slowest_links({"total": {"bytes": [[0]]}}) == []  # an older traffic.json
    text = slowest_links_text(slowest + slowest_links(hop))
    assert text.startswith("0->1 wait 400 ms (transit 400 ms), 2->1 wait 100 ms")
    assert "0->1 transit 900 ms" in text


def test_a_meter_saved_before_link_times_reads_back_without_them():
    meter = TrafficMeter([1])
    state = dict(vars(meter))
    del state["link_time"], state["in_neighbors"]
    old = TrafficMeter.__new__(TrafficMeter)
    old.__setstate__(state)
    assert old.link_time == {} and old.in_neighbors == []
    assert pickle.loads(pickle.dumps(old)).rows(2) == {}


def test_sampling_is_set_for_every_exchange_and_refuses_a_negative_count():
    from mpi_privopt.config import RunConfig
    assert RunConfig().link_time_every == traffic.SAMPLE_EVERY  # the run's default
    try:
        set_sample_every(4)
        assert traffic.every_n == 4
        set_sample_every(0)
        assert traffic.every_n == 0
        with pytest.raises(ValueError, match="0 \\(off\\) or a positive count"):
            set_sample_every(-1)
    finally:
        set_sample_every(traffic.SAMPLE_EVERY)


def test_the_report_shows_mean_wait_and_transit_and_names_the_slowest_links():
    matrices = assemble_matrices([m.rows(K) for m in _meters()], K)
    run = {
        "metrics": {"iteration": np.array([0, 10]), "error": np.array([3.0, 0.1]),
                    "elapsed_seconds": np.zeros(2)},
        "bytes": matrices["total"]["bytes"].astype(float),
        "epsilon": np.where(np.eye(K, dtype=bool), np.nan, 1.0),
        "privacy": {"delta": 1e-5, "noise": "fast", "links": {}},
        "summary": SimpleNamespace(algorithm="dgd", problem="q", ranks=K, iterations=10,
                                   evaluate="reference", status="completed",
                                   privacy_delta=1e-5),
        "link_time": {name: matrices["total"][name].astype(float) for name in LINK_TIME},
        "link_time_every": 16,
    }
    text = text_report(run)
    wait = text.index("receiver's wait per link, ms")
    assert "every 16-th exchange" in text[wait:]
    # the wait matrix: row 0 (sender 0) column 1 holds 400 ms, unmeasured cells a dot
    rows = text[wait:].splitlines()
    assert rows[2].split() == ["0", ".", "400", "."]
    assert rows[4].split() == ["2", ".", "100", "."]
    transit = text.index("link transit, ms")
    assert text[transit:].splitlines()[4].split() == ["2", ".", "135", "."]
    assert "slowest links: 0->1 wait 400 ms" in text
    del run["link_time"]
    assert "time per link: not measured" in text_report(run)
