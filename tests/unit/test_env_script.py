"""launch/_env.sh: one environment holds the union of the extras the scripts ask for.

Driven with a stand-in environment whose ``bin/python`` records the pip commands it is
given (no network, no install): only a missing extra calls pip, with the whole union;
nothing is uninstalled; a changed pyproject.toml reinstalls the recorded union; the
stamps of the script's older versions are read; a failed pip is one message and exit 2.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def clone(tmp_path):
    """A clone with launch/_env.sh and a pyproject.toml, and a stand-in environment."""
    (tmp_path / "launch").mkdir()
    shutil.copy(REPO / "launch" / "_env.sh", tmp_path / "launch" / "_env.sh")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/../pip.log"\n'
                      'exit ${FAKE_PIP_STATUS:-0}\n')
    python.chmod(0o755)
    return tmp_path


def source(clone, extras, **env):
    """Source the script as launch/local.sh does; the pip commands it ran."""
    log = clone / "venv" / "pip.log"
    log.unlink(missing_ok=True)
    proc = subprocess.run(
        ["bash", "-c", 'set -euo pipefail; source "$1"; echo "PATH=$PATH"',
         "bash", str(clone / "launch" / "_env.sh")],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "MPI_PRIVOPT_VENV": str(clone / "venv"), "EXTRAS": extras,
             "PYTHON": sys.executable, **env})
    installs = [line.split()[-1] for line in (log.read_text().splitlines()
                                              if log.exists() else []) if "-e" in line.split()]
    return proc, installs


def record(clone):
    return (clone / "venv" / ".mpi_privopt-extras").read_text().split()


def test_local_and_test_scripts_no_longer_reinstall_each_other(clone):
    proc, installs = source(clone, "mpich")
    assert proc.returncode == 0, proc.stderr
    assert installs == [f"{clone}[mpich]"]
    assert f"PATH={clone / 'venv' / 'bin'}:" in proc.stdout
    proc, installs = source(clone, "mpich,test")          # test.sh: test is missing
    assert installs == [f"{clone}[mpich,test]"] and "(new: test)" in proc.stdout
    assert record(clone)[1:] == ["mpich", "test"]
    for extras in ("mpich", "mpich,test", "test", " test , mpich "):  # all there: no pip
        proc, installs = source(clone, extras)
        assert proc.returncode == 0 and installs == [] and "installing" not in proc.stdout
    assert record(clone)[1:] == ["mpich", "test"]          # nothing dropped


def test_a_changed_pyproject_reinstalls_the_whole_union(clone):
    source(clone, "mpich,test")
    first = record(clone)[0]
    (clone / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    proc, installs = source(clone, "reproduce")
    assert installs == [f"{clone}[mpich,test,reproduce]"], proc.stdout
    assert record(clone)[0] != first and record(clone)[1:] == ["mpich", "test", "reproduce"]


def test_the_stamp_of_the_older_script_counts_as_a_record(clone):
    import hashlib
    digest = hashlib.sha256((clone / "pyproject.toml").read_bytes()).hexdigest()[:16]
    stamp = clone / "venv" / f".mpi_privopt-{digest}-mpich_test"
    stamp.touch()
    proc, installs = source(clone, "test")
    assert installs == [] and proc.returncode == 0
    proc, installs = source(clone, "mpich,plot")
    assert installs == [f"{clone}[mpich,test,plot]"]
    assert not stamp.exists() and record(clone) == [digest, "mpich", "test", "plot"]


def test_a_failed_install_is_one_message_and_records_nothing(clone):
    proc, _ = source(clone, "mpich", FAKE_PIP_STATUS="1")
    assert proc.returncode == 2
    assert "mpi_privopt: error: installing mpi_privopt[mpich]" in proc.stderr
    assert not (clone / "venv" / ".mpi_privopt-extras").exists()


def test_the_package_is_compiled_to_bytecode_on_every_launch(clone):
    # Python writes no bytecode where PYTHONDONTWRITEBYTECODE is set: the script does
    for _ in range(2):  # also when nothing is installed
        source(clone, "mpich")
        calls = (clone / "venv" / "pip.log").read_text().splitlines()
        assert f"-m compileall -q {clone}/mpi_privopt" in calls
