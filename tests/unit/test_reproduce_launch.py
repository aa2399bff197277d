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
        run_batch(str(fake), 2, "mpi_privopt.reproduce.gauthier2024", [{"a": 1}],
                  tmp_path / "batch.json")
    assert "rank 2: out of memory" in str(err.value) and "kept and reused" in err.value.fix
    assert isinstance(err.value, ConfigError)  # the command line prints it as one message
