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
