"""``report`` on a run directory that did not finish shows it as such, never refuses it."""
import argparse

from mpi_privopt.report import main as report_main


def test_a_killed_run_is_reported_as_incomplete(tmp_path, capsys):
    (tmp_path / "config.toml").write_text("[run]\n")
    (tmp_path / "graph.edgelist").write_text("# mpi_privopt edge list: n=2 directed=False\n0 1\n")
    (tmp_path / "metrics.csv").write_text("iteration,error,elapsed_seconds\n0,1.5,0.0\n7,0.25,0.1\n")
    assert report_main(argparse.Namespace(run_dir=str(tmp_path), png=None)) == 0
    text = capsys.readouterr().out
    assert "incomplete run" in text and "did not finish" in text
    assert "no traffic.json, privacy.json, summary.json" in text
    assert "metrics up to iteration 7" in text and "iter 7: 0.25" in text


def test_a_stalled_run_says_so_with_the_watchdogs_message(tmp_path, capsys):
    (tmp_path / "config.toml").write_text("[run]\n")
    (tmp_path / "graph.edgelist").write_text("# mpi_privopt edge list: n=2 directed=False\n0 1\n")
    (tmp_path / "metrics.csv").write_text("iteration,error,elapsed_seconds\n0,1.5,0.0\n")
    (tmp_path / "stall.json").write_text(
        '{"status": "stalled", "message": "agent 1 (host h, pid 7) stopped answering"}')
    assert report_main(argparse.Namespace(run_dir=str(tmp_path), png=None)) == 0
    text = capsys.readouterr().out
    assert "it stalled: agent 1 (host h, pid 7) stopped answering (stall.json)" in text


def _ledger(label: str | None, budget: float = 5.0) -> dict:
    from mpi_privopt.privacy.ledger import Ledger
    ledger = Ledger(0, [1], 1e-5, budget)
    ledger.epsilon_label = label
    return ledger.to_dict()


def test_a_budget_stop_shows_each_agents_epsilon_with_its_label(tmp_path, capsys):
    # an agent of a nominal run stopped by its budget: its record (its ledger) carries the
    # label, shown beside its epsilon
    import json
    from mpi_privopt.methods.chen2025.ldp_budget import NOMINAL_EPSILON
    (tmp_path / "config.toml").write_text("[run]\n")
    (tmp_path / "graph.edgelist").write_text("# mpi_privopt edge list: n=2 directed=False\n0 1\n")
    (tmp_path / "privacy-agent-0-at-stop.json").write_text(json.dumps(
        {"stopped_at_iteration": 3, "reason": "budget", "bytes_sent": 64,
         **_ledger(NOMINAL_EPSILON)}))
    assert report_main(argparse.Namespace(run_dir=str(tmp_path), png=None)) == 0
    text = capsys.readouterr().out
    assert f"agent 0: 0 releases, epsilon 0 at delta 1e-05 (budget 5; {NOMINAL_EPSILON})" in text


def test_a_failed_runs_spent_epsilon_carries_the_label_of_its_ledgers(tmp_path):
    from mpi_privopt.methods.chen2025.ldp_budget import NOMINAL_EPSILON
    from mpi_privopt.report import _failed_text
    info = {"iteration": 5, "ranks": 2, "delta": 1e-5, "noise": "fast", "final": False}
    metas = [{"ledger": {**_ledger(NOMINAL_EPSILON), "agent": k}, "bytes_sent": 8}
             for k in range(2)]
    spent = _failed_text(tmp_path, info, metas, None, "metrics up to iteration 5")[1]
    assert spent.startswith("last checkpoint: iteration 5; privacy spent to then: worst "
                            "link epsilon")
    assert f"({NOMINAL_EPSILON}); 16 bytes sent" in spent
    plain = [{"ledger": {**_ledger(None), "agent": k}, "bytes_sent": 8} for k in range(2)]
    assert "nominal" not in _failed_text(tmp_path, info, plain, None, "")[1]
