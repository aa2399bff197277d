"""A method that says what its state is (``Algorithm.checkpoint_fields``) has only that
saved, takes the rest from the resume's fresh set-up, and still resumes to the very same
result (mpi_privopt/services/state_codec.py, mpi_privopt/services/checkpoint.py).

Run under mpiexec, e.g. ``mpiexec -n 3 python -m pytest --with-mpi tests/mpi/test_checkpoint_fields.py``.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from mpi4py import MPI

from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.methods.baselines.dgd import DGD
from mpi_privopt.methods.contract import register
from mpi_privopt.services import checkpoint, checkpoint_files, faults

T, SIGNALLED_AT = 10, 4


class FieldsDGD(DGD):
    """DGD that lists its state: the channel (its buffers) and the iterates; its weights,
    objective and options are what the set-up computes, so a resume makes them again."""

    name = "dgd-fields"
    checkpoint_fields = ("channel", "x", "gradient_point")


@pytest.fixture
def fields_method():
    register(FieldsDGD)
    yield FieldsDGD.name
    del ALGORITHMS[FieldsDGD.name]


@pytest.mark.mpi(min_size=2)
def test_a_method_that_lists_its_state_resumes_to_the_same_result(fields_method, monkeypatch):
    comm = MPI.COMM_WORLD
    root = Path(comm.bcast(tempfile.mkdtemp(prefix="mpi_privopt-fields-")
                           if comm.rank == 0 else None))
    cfg = load_config("dgd-ridge", [f"algorithm.name={fields_method}",
                                    f"run.iterations={T}", "run.eval_every=1"])
    monkeypatch.setenv("MPI_PRIVOPT_AGREE_SECONDS", "0")
    # this module stands for your own method's (algorithm.module): its classes are trusted
    monkeypatch.setattr(checkpoint, "trusted_modules", lambda cfg: ("mpi_privopt", __name__))
    straight, stopped = root / "straight", root / "stopped"
    run(cfg, out=str(straight), comm=comm, stream=None)
    monkeypatch.setattr(faults, "_FAULTS", (("term", "iteration", 0, SIGNALLED_AT, ""),))
    run(cfg, out=str(stopped), comm=comm, stream=None)
    monkeypatch.setattr(faults, "_FAULTS", ())
    info = checkpoint_files.latest(stopped)
    record = checkpoint_files.read_record(
        checkpoint_files.state_path(stopped, comm.rank, info["iteration"]), info, comm.rank)
    saved = record["state"][0]["dict"]["algorithm"]["fields"]
    resumed = run(cfg, out=str(stopped), comm=comm, stream=None, resume=True)
    comm.Barrier()
    try:
        # its agent always; the weights, objective and options are not written
        assert sorted(saved) == ["agent", "channel", "gradient_point", "x"]
        if comm.rank == 0:
            assert resumed.summary.status == "completed"
            for file in ("models.npz", "privacy.json"):
                assert (stopped / file).read_bytes() == (straight / file).read_bytes(), file
            assert json.loads((stopped / "summary.json").read_text())["status"] == "completed"
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(root, ignore_errors=True)
