"""Checkpoint checks that need no MPI: what a resume must match, what it refuses, and the
metadata reader (the MPI side is in tests/mpi/test_checkpoint_every_method.py and the
fault tests in tests/e2e/test_faults.py)."""
from __future__ import annotations

import json
import pickle

import pytest

from mpi_privopt.services import checkpoint_files, resume
from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.prelaunch import build_graph, check_run_input, resume_config
from mpi_privopt.topology import graph_hash


def _saved(run_dir, cfg, graph, ranks=4, iteration=10, final=False):
    """A run directory whose latest checkpoint was made with ``cfg`` and ``graph``
    (``final``: at the run's end; else by a signal's stop or run.checkpoint_every)."""
    folder = run_dir / checkpoint_files.CHECKPOINT_DIR
    folder.mkdir(parents=True)
    (run_dir / "config.toml").write_text(cfg.to_toml())
    info = {"format": checkpoint_files.FORMAT, "run": "r", "iteration": iteration,
            "ranks": ranks, "files": ["0" * 64] * ranks,
            "config": checkpoint_files.config_fingerprint(cfg), "graph_hash": graph_hash(graph),
            "noise": "fast", "delta": cfg.privacy.delta, "final": final}
    checkpoint_files.write_pointer(folder / checkpoint_files.LATEST, info)


def test_a_resume_may_change_only_the_iteration_count(tmp_path):
    cfg = load_config("dgd-ridge", ["run.iterations=10"])
    graph = build_graph(cfg, 4)
    _saved(tmp_path, cfg, graph)
    longer = load_config("dgd-ridge", ["run.iterations=30"])
    assert resume.check_resume_input(tmp_path, longer, graph, 4)["iteration"] == 10
    other = load_config("dgd-ridge", ["run.iterations=30", "algorithm.step=0.1",
                                      "run.seed=3"])
    with pytest.raises(ConfigError, match=r"algorithm.step \(0.05 then, 0.1 now\); "
                                          r"run.seed \(0 then, 3 now\)"):
        resume.check_resume_input(tmp_path, other, build_graph(other, 4), 4)
    with pytest.raises(ConfigError, match="has 4 agents, this resume started 5 ranks"):
        resume.check_resume_input(tmp_path, longer, graph, 5)
    with pytest.raises(ConfigError, match=r"already at iteration 10 \(written when a "
                                          "signal stopped the run"):
        resume.check_resume_input(tmp_path, load_config("dgd-ridge", ["run.iterations=10"]),
                                      graph, 4)
    with pytest.raises(ConfigError, match=r"already at iteration 10\n"):
        resume.check_resume_input(tmp_path, load_config("dgd-ridge", ["run.iterations=5"]),
                                      graph, 4)


def test_a_final_checkpoint_at_the_same_iterations_only_finishes_the_run(tmp_path):
    # the run's end (final) at run.iterations = 10: a resume at 10 writes its results
    cfg = load_config("dgd-ridge", ["run.iterations=10"])
    graph = build_graph(cfg, 4)
    _saved(tmp_path, cfg, graph, final=True)
    assert resume.check_resume_input(tmp_path, cfg, graph, 4)["iteration"] == 10
    with pytest.raises(ConfigError, match="run.iterations=10 writes the results of the run"):
        resume.check_resume_input(tmp_path, load_config("dgd-ridge", ["run.iterations=5"]),
                                      graph, 4)


def test_a_latest_without_the_final_key_is_final_at_the_runs_own_iterations(tmp_path):
    # written by a version before the key: at config.toml's run.iterations it is the end
    cfg = load_config("dgd-ridge", ["run.iterations=10"])
    graph = build_graph(cfg, 4)
    _saved(tmp_path, cfg, graph)
    latest = tmp_path / checkpoint_files.CHECKPOINT_DIR / checkpoint_files.LATEST
    info = checkpoint_files.latest(tmp_path)
    del info["final"]
    checkpoint_files.write_pointer(latest, info)
    assert resume.is_final(tmp_path, info)
    (tmp_path / "config.toml").write_text(load_config("dgd-ridge", ["run.iterations=20"]).to_toml())
    assert not resume.is_final(tmp_path, info)


def test_a_resume_refuses_another_graph_from_the_same_config(tmp_path):
    edges = tmp_path / "graph.txt"
    edges.write_text("0 1\n1 2\n2 3\n3 0\n")
    cfg = load_config("dgd-ridge", ["topology.kind=file", f"topology.file={edges}"])
    _saved(tmp_path / "run", cfg, build_graph(cfg, 4))
    edges.write_text("0 1\n1 2\n2 3\n3 0\n0 2\n")  # the file changed on disk
    with pytest.raises(ConfigError, match="the graph built now differs"):
        resume.check_resume_input(tmp_path / "run", cfg, build_graph(cfg, 4), 4)


def test_no_checkpoint_is_one_message(tmp_path):
    cfg = load_config("dgd-ridge", [])
    with pytest.raises(ConfigError, match="no checkpoint to resume from"):
        resume.check_resume_input(tmp_path, cfg, build_graph(cfg, 4), 4)


def test_the_resume_line_sets_nothing_but_the_iteration_count(tmp_path):
    (tmp_path / "config.toml").write_text(load_config("dgd-ridge", []).to_toml())
    assert resume_config(str(tmp_path), None, None, ["run.iterations=50"]) == (
        str(tmp_path / "config.toml"), str(tmp_path))
    for config, out, sets in (("other.toml", None, []), ("default", None, []),
                              (None, "elsewhere", []),
                              (None, None, ["algorithm.step=1", "run.iterations=5"])):
        with pytest.raises(SystemExit) as leaving:
            resume_config(str(tmp_path), config, out, sets)
        assert leaving.value.code == 2
    with pytest.raises(SystemExit):
        resume_config(str(tmp_path / "missing"), None, None, [])


def test_the_refusals_are_single_messages(tmp_path, capsys):
    with pytest.raises(SystemExit):
        resume_config(str(tmp_path), None, None, ["algorithm.step=1"])
    err = capsys.readouterr().err
    assert err.count("mpi_privopt: error:") == 1
    assert "may change only run.iterations, not algorithm.step" in err


def test_checkpoint_every_is_validated_and_refused_for_the_token_method():
    with pytest.raises(ConfigError, match="run.checkpoint_every = -1 must be >= 0"):
        load_config("dgd-ridge", ["run.checkpoint_every=-1"])
    with pytest.raises(ConfigError, match="'token-admm' cannot be checkpointed: its token "
                                          "may be in flight"):
        check_run_input("token-admm-elastic-net", ["run.checkpoint_every=5"], 4)
    check_run_input("token-admm-elastic-net", [], 4)  # without checkpoints it runs


def test_the_metadata_reader_never_imports_a_class(tmp_path):
    # report reads a killed run's checkpoints: plain data only, whatever the file holds
    # (here files of format 1, a bare pickle; format 2's are checked first, then read so)
    plain = tmp_path / "plain.ckpt"
    plain.write_bytes(pickle.dumps({"meta": {"iteration": 3, "ledger": {"total": [1.0]}},
                                    "state": b"..."}))
    assert checkpoint_files.read_meta(plain) == {"iteration": 3, "ledger": {"total": [1.0]}}
    hostile = tmp_path / "hostile.ckpt"
    hostile.write_bytes(pickle.dumps({"meta": ConfigError("x"), "state": b""}))
    with pytest.raises(checkpoint_files.CheckpointDamaged,
                       match="names mpi_privopt.errors.ConfigError"):
        checkpoint_files.read_meta(hostile)


def test_an_atomic_write_leaves_the_old_file_or_the_new_one(tmp_path, monkeypatch):
    target = tmp_path / "f"
    target.write_bytes(b"old")

    def refuse(*args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(checkpoint_files.os, "fsync", refuse)
    assert checkpoint_files.try_write(lambda: checkpoint_files.write_atomic(target, b"new")) == \
        "ENOSPC: No space left on device"
    assert target.read_bytes() == b"old" and list(tmp_path.iterdir()) == [target]
    monkeypatch.undo()
    checkpoint_files.write_atomic(target, b"new")
    assert target.read_bytes() == b"new" and list(tmp_path.iterdir()) == [target]


def test_every_private_method_that_can_resume_plans_its_releases():
    # a resume past privacy.epsilon is refused before any release only for a method that
    # says its releases ahead (Algorithm.planned_events, services/resume.py: refuse_overspend); a
    # method without it would be held by the ledger's guard only, at the first release over
    # the budget (docs/reliability.md). A new private method must declare it (token-admm
    # cannot be checkpointed at all).
    from mpi_privopt.methods import ALGORITHMS
    from mpi_privopt.methods.contract import Algorithm
    unplanned = sorted(name for name, cls in ALGORITHMS.items()
                       if cls.private and not cls.no_checkpoint
                       and cls.planned_events is Algorithm.planned_events)
    assert unplanned == []


@pytest.mark.parametrize("failure, fix", [
    ("ENOSPC: No space left on device", "free space there"),
    ("EDQUOT: Disk quota exceeded", "free space there"),
    ("ENOENT: No such file or directory",
     "make sure /r/checkpoints still exists and, on several hosts, is on a filesystem every "
     "host shares"),
    ("EROFS: Read-only file system", "make /r/checkpoints writable"),
    ("EIO: Input/output error", "check /r/checkpoints (free space, permissions, the filesystem)"),
])
def test_a_failed_write_is_fixed_by_what_its_errno_says(failure, fix):
    # a vanished directory is not a full disk: the fix follows the error, not one guess
    from mpi_privopt.services.checkpoint_files import write_fix
    assert write_fix(failure, "/r/checkpoints") == fix
