"""How a reproduction starts its MPI jobs: which mpiexec, and a failed job as one message."""
import sys
from pathlib import Path

import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.reproduce import BatchFailed, find_mpiexec, run_batch


def test_the_mpiexec_beside_the_interpreter_comes_before_path(monkeypatch, tmp_path):
    beside = Path(sys.executable).parent / "mpiexec"
    monkeypatch.setenv("PATH", str(tmp_path))  # an mpiexec elsewhere would come first
    (tmp_path / "mpiexec").write_text("#!/bin/sh\n")
    (tmp_path / "mpiexec").chmod(0o755)
    expected = str(beside) if beside.is_file() else str(tmp_path / "mpiexec")
    assert find_mpiexec(None, "x") == expected
    assert find_mpiexec("/opt/mpi/bin/mpiexec", "x") == "/opt/mpi/bin/mpiexec"


def test_a_failed_batch_is_one_message_with_the_launcher_output(tmp_path):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho 'rank 2: out of memory' >&2\nexit 7\n")
    fake.chmod(0o755)
    with pytest.raises(BatchFailed, match="exit 7") as err:
        run_batch(str(fake), 2, "mpi_privopt.methods.gauthier2024.reproduce", [{"a": 1}],
                  tmp_path / "batch.json")
    assert "rank 2: out of memory" in str(err.value) and "kept and reused" in err.value.fix
    assert isinstance(err.value, ConfigError)  # the command line prints it as one message


def test_a_missing_extra_stops_the_reproduction_before_any_job(monkeypatch, capsys):
    """Without matplotlib, reproduce says so first (it used to run every job, then fail
    drawing the first figure with a traceback)."""
    import importlib.util

    from mpi_privopt import cli, reproduce

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(reproduce, "run_batch", lambda *a, **k: pytest.fail("a job ran"))
    with pytest.raises(SystemExit) as stop:
        cli.main(["reproduce", "gade2017", "--quick", "--out", "/nonexistent/x"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert "reproduce gade2017 needs matplotlib (the reproduce extra)" in err
    assert "pip install 'mpi_privopt[reproduce]'" in err and "./launch/reproduce.sh" in err


def test_reproduce_help_lists_every_reproduction_and_the_progress_flags(capsys):
    from mpi_privopt import cli
    from mpi_privopt.reproduce import available

    with pytest.raises(SystemExit) as stop:
        cli.main(["reproduce", "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and "chen2025" in available()
    assert all(f"\n  {name} " in out for name in available())
    assert "--progress" in out and "--quiet" in out



def test_a_failed_batch_leaves_no_shared_memory_segment(tmp_path, monkeypatch):
    """A job stopped short leaves MPICH's segments in /dev/shm: the failed batch removes
    the ones that appeared during it and that no process maps."""
    from mpi_privopt import shm_segments
    monkeypatch.setattr(shm_segments, "SHM", tmp_path / "shm")
    (tmp_path / "shm").mkdir()
    kept = tmp_path / "shm" / "mpich_shm_before_0"
    kept.write_bytes(b"x" * 4096)  # there before the job: not this job's
    fake = tmp_path / "mpiexec"
    # (asked for its flags first, the fake answers nothing)
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = -n ] || exit 0\n"
                    f"head -c 8192 /dev/zero > {tmp_path}/shm/mpich_shm_job_0\nexit 9\n")
    fake.chmod(0o755)
    with pytest.raises(BatchFailed, match="exit 9"):
        run_batch(str(fake), 2, "mpi_privopt.methods.gauthier2024.reproduce", [{"a": 1}],
                  tmp_path / "batch.json")
    assert sorted(p.name for p in (tmp_path / "shm").iterdir()) == ["mpich_shm_before_0"]
