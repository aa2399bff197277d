"""The run summary schema: summary.json written and read back as one dataclass."""
import json
import math
import re

import pytest

from mpi_privopt.summary import RunSummary, format_summary


def _summary(**changes):
    fields = dict(
        algorithm="zcdp-nfl", problem="ridge", topology="ring", ranks=4, edges=4,
        iterations=10, seed=0, final_error=0.5, final_objective_gap=0.25,
        final_consensus_gap=0.125, bytes_total=1280, bytes_busiest_link=320,
        busiest_link=[0, 1], messages_total=40, wall_seconds=1.0, algorithm_seconds=0.75,
        eval_seconds=0.25, comm_seconds=0.1, comm_seconds_max=0.2, private=True,
        worst_link_epsilon=2.5, worst_link=[0, 1], worst_link_conversion="exact",
        privacy_delta=1e-5, noise="fast", reference_method="closed-form", optimum_value=1.5,
        graph_hash="abc", run_dir="runs/x", final_metrics={"error": 0.5})
    fields.update(changes)
    return RunSummary(**fields)


def test_summary_round_trips_through_json_with_the_documented_keys(tmp_path):
    s = _summary(algorithm_report={"phi": 0.1})
    (tmp_path / "summary.json").write_text(json.dumps(s.to_dict()))
    back = RunSummary.read(tmp_path)
    assert back == s
    data = s.to_dict()
    for key in ("algorithm", "final_error", "bytes_total", "worst_link_epsilon", "evaluate",
                "final_metrics", "evaluation_note", "algorithm_report"):
        assert key in data
    assert "privacy_note" not in data  # optional keys only when they have a value
    assert s["final_error"] == 0.5 and s["algorithm_report"] == {"phi": 0.1}
    with pytest.raises(KeyError):
        s["privacy_note"]


def test_older_and_newer_summaries_are_read():
    data = _summary().to_dict()
    for key in ("evaluate", "final_metrics", "evaluation_note", "l1"):
        del data[key]  # a summary written before run.evaluate existed
    data["written_by_a_later_version"] = 1
    s = RunSummary.from_dict(data)
    assert s.evaluate == "reference" and s.final_metrics == {}


def test_the_printed_table_follows_the_evaluation_mode():
    assert "final error" in format_summary(_summary())
    local = format_summary(_summary(evaluate="local", final_error=None, final_objective_gap=None,
                                    final_consensus_gap=None,
                                    final_metrics={"objective": 3.0, "training_loss": 0.5}))
    assert "objective" in local and "training loss" in local and "final error" not in local
    none = format_summary(_summary(evaluate="none", final_error=None, final_objective_gap=None,
                                   final_consensus_gap=None, final_metrics={},
                                   worst_link_epsilon=math.inf))
    assert "nothing measured" in none
    # a non-private run: unbounded, never inf (nor 0)
    assert "worst link epsilon = unbounded (messages without a DP guarantee)" in none
    assert "inf" not in none.replace("information", "")


def test_the_printed_table_says_which_mpi_and_which_collective_path_ran():
    s = _summary(mpi_library="Open MPI 4.1.4 (MPI 3.1)", hosts=["a", "b", "a", "b"],
                 collective_path="one-off")
    table = format_summary(s)
    assert "Open MPI 4.1.4 (MPI 3.1) on 2 hosts (a, b)" in table
    assert "MPI-3 fallback" in table
    assert "MPI-4 Neighbor_allgather_init" in format_summary(_summary(collective_path="persistent"))
    # a summary written before these keys existed prints without them
    assert "neighbour exchange" not in format_summary(_summary())


def test_the_printed_table_is_for_a_person_and_the_json_keeps_every_digit(tmp_path):
    s = _summary(worst_link_epsilon=8.5552, final_error=0.18523, wall_seconds=0.5457,
                 bytes_total=307200, bytes_busiest_link=12800,
                 algorithm_report={"local_rho": 393.38374699468795, "Delta": 8.0,
                                   "epsilon_eq21_T": [1429.3071355670852, 1430.01, 1428.0],
                                   "schedule": "sample", "records": 1000})
    table = format_summary(s)
    assert "worst link epsilon = 8.556" in table          # a loss is rounded up
    assert "0.1852   (sum_k" in table
    assert "545.7 ms" in table and "300 KiB in total, 12.5 KiB" in table
    assert "local rho" in table and "393.4" in table and "393.38" not in table
    assert "1430, 1431, 1428" in table and "[" not in table.split("run directory")[0]
    assert "Delta" in table and " 8\n" in table
    (tmp_path / "summary.json").write_text(json.dumps(s.to_dict()))
    back = json.loads((tmp_path / "summary.json").read_text())
    assert back["algorithm_report"]["local_rho"] == 393.38374699468795
    assert back["worst_link_epsilon"] == 8.5552


def test_an_epsilon_label_is_shown_beside_every_epsilon(tmp_path):
    # the aggregative methods' nominal accounting (mpi_privopt/methods/chen2025/ldp_budget.py)
    label = "nominal (C = 1): not a privacy guarantee"
    s = _summary(algorithm_report={"accounting": "nominal (...)", "epsilon_label": label,
                                   "epsilon_eq21_T": 601.1, "epsilon_limit_bound_155": 2.1e4},
                 epsilon_label=label, worst_link_epsilon=601.11)
    table = format_summary(s).splitlines()
    privacy = next(line for line in table if line.startswith("privacy "))
    assert "601.2" in privacy and privacy.endswith(f"; {label}")  # rounded up, labelled
    for key in ("epsilon eq21 T", "epsilon limit bound 155"):
        row = next(line for line in table if line.startswith(key))
        assert row.endswith(f"({label})"), row
    assert s.to_dict()["epsilon_label"] == label
    (tmp_path / "summary.json").write_text(json.dumps(s.to_dict()))
    assert RunSummary.read(tmp_path).epsilon_label == label
    plain = _summary(algorithm_report={"epsilon_T": 3.0})  # a proven bound: no label
    assert "epsilon_label" not in plain.to_dict()
    assert "not a privacy guarantee" not in format_summary(plain)


def test_a_summary_written_before_the_fallback_was_renamed_prints_the_same_row():
    old = format_summary(_summary(collective_path="blocking"))
    assert "one-off Ineighbor_allgather per exchange (MPI-3 fallback" in old
    assert old == format_summary(_summary(collective_path="one-off"))


@pytest.mark.parametrize("private", [True, False])
def test_a_run_without_links_says_so_instead_of_a_link_and_a_conversion(private):
    # one agent: privacy.json has no worst link and epsilon 0, the meter a 0 -> 0 "busiest"
    table = format_summary(_summary(ranks=1, edges=0, bytes_total=0, bytes_busiest_link=0,
                                    busiest_link=[0, 0], messages_total=0, private=private,
                                    worst_link=None, worst_link_epsilon=0.0,
                                    worst_link_conversion=None))
    assert re.search(r"bytes sent +none \(the graph has no links\)", table)
    assert "0->0" not in table and "None conversion" not in table
    assert "no link, so no message left any agent and none has a privacy loss" in table
    assert "(1 agent, ring, 0 edges)" in table
    assert ("no privacy guarantee once agents have neighbours" in table) is not private
