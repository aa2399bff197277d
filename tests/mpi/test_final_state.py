"""The final state every run saves at its end (mpi_privopt/run_commit.py), in process.

A run's end saves every rank's state whatever ``run.checkpoint_every`` says, but not a
run with an ``on_setup`` hook (an attack, an audit, a test's spy: what the hook attached
is not the run's own state, and a resume could not attach it again). A state that cannot
be saved on one rank is known to every rank: the results are written all the same and
rank 0 says the run cannot be extended, instead of one rank raising alone while the
others wait. (The ordered commit under a real launcher, with faults and signals:
tests/e2e/test_end_of_run.py.)
"""
import json
from pathlib import Path

import pytest

from mpi_privopt.services import checkpoint
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.errors import ConfigError


def _latest(run_dir: Path) -> dict | None:
    path = run_dir / "checkpoint" / "latest.json"
    return json.loads(path.read_text()) if path.is_file() else None


@pytest.mark.mpi(min_size=2)
def test_every_run_saves_its_final_state_but_a_hooked_one(comm, shared_dir, capsys):
    cfg = load_config("dgd-ridge", ["run.iterations=4"])
    run(cfg, out=f"{shared_dir}/plain", comm=comm, stream=None)
    run(cfg, out=f"{shared_dir}/hooked", comm=comm, stream=None,
        on_setup=lambda agent, algorithm: None)
    comm.Barrier()
    info = _latest(Path(shared_dir, "plain"))
    assert info["iteration"] == 4 and info["final"] is True
    hooked = Path(shared_dir, "hooked")
    assert json.loads((hooked / "summary.json").read_text())["status"] == "completed"
    assert not (hooked / "checkpoint").exists()
    assert "warning" not in capsys.readouterr().err  # none by design: nothing to say


@pytest.mark.mpi(min_size=2)
def test_a_state_that_cannot_be_saved_leaves_the_results_complete(comm, shared_dir, capsys,
                                                                   monkeypatch):
    # only the last rank's state cannot be saved: every rank must still end the run
    if comm.Get_rank() == comm.Get_size() - 1:
        def unpicklable(ctx, state):
            raise ConfigError("'dgd' cannot be checkpointed: its state holds a lock")
        monkeypatch.setattr(checkpoint, "dump_state", unpicklable)
    cfg = load_config("dgd-ridge", ["run.iterations=4"])
    out = Path(shared_dir, "locked")
    result = run(cfg, out=str(out), comm=comm, stream=None)
    comm.Barrier()
    assert json.loads((out / "summary.json").read_text())["status"] == "completed"
    assert (out / "models.npz").is_file() and _latest(out) is None
    assert not list((out / "checkpoint").glob("rank-*"))  # every rank removed its file
    if comm.Get_rank() == 0:
        assert result.summary.status == "completed"
        err = capsys.readouterr().err
        assert "its state holds a lock" in err
        assert err.count("the run cannot be extended from its end") == 1
