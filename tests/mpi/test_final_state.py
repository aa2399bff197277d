"""The final state every run saves at its end (mpi_privopt/run_commit.py), in process.

A run's end saves every rank's state whatever ``run.checkpoint_every`` says. A caller's
hook may make a rank's state unpicklable (an observer holding a lock or a file): then
every rank learns it, the results are written all the same and rank 0 says the run
cannot be extended, instead of one rank raising alone while the others wait. (The
ordered commit under a real launcher, with faults and signals: tests/e2e/test_end_of_run.py.)
"""
import json
import threading
from pathlib import Path

import pytest

from mpi_privopt.config import load_config
from mpi_privopt.engine import run


class _LockedRecorder:
    """A release listener that cannot be pickled (it holds a lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.releases = 0

    def on_release(self, release, receivers, phase, round) -> None:
        self.releases += 1


def _latest(run_dir: Path) -> dict | None:
    path = run_dir / "checkpoint" / "latest.json"
    return json.loads(path.read_text()) if path.is_file() else None


@pytest.mark.mpi(min_size=2)
def test_every_run_saves_its_final_state(comm, shared_dir):
    cfg = load_config("dgd-ridge", ["run.iterations=4"])
    result = run(cfg, out=f"{shared_dir}/plain", comm=comm, stream=None)
    comm.Barrier()
    info = _latest(Path(shared_dir, "plain"))
    assert info["iteration"] == 4 and info["final"] is True
    assert result is None or result.summary.status == "completed"


@pytest.mark.mpi(min_size=2)
def test_a_state_that_cannot_be_saved_leaves_the_results_complete(comm, shared_dir, capsys):
    # only the last rank's state is unpicklable: every rank must still end the run
    cfg = load_config("dgd-ridge", ["run.iterations=4"])
    last = comm.Get_size() - 1

    def attach(agent, algorithm) -> None:
        if agent.id == last:
            agent.net.add_listener(_LockedRecorder())

    out = Path(shared_dir, "locked")
    result = run(cfg, out=str(out), comm=comm, stream=None, on_setup=attach)
    comm.Barrier()
    assert json.loads((out / "summary.json").read_text())["status"] == "completed"
    assert (out / "models.npz").is_file() and _latest(out) is None
    assert not list((out / "checkpoint").glob("rank-*"))  # every rank removed its file
    if comm.Get_rank() == 0:
        assert result.summary.status == "completed"
        err = capsys.readouterr().err
        assert "cannot be checkpointed" in err
        assert err.count("the run cannot be extended from its end") == 1
