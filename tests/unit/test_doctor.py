"""``doctor``: the MPI mpi4py loaded against the launcher on PATH."""
import os
import sys

import pytest

from launch_util import run_child
from mpi_privopt.commands.doctor import (MPIFacts, launcher_family, launcher_name,
                                         many_ranks_note, mismatch, vendor_family)

HYDRA = "HYDRA build details:\n    Version:                                 4.0\n"
OPEN_MPI = "mpiexec (OpenRTE) 4.1.2\n\nReport bugs to http://www.open-mpi.org/community/help/\n"


def facts(vendor, text, launcher="/usr/bin/mpiexec"):
    return MPIFacts("libmpi.so", vendor, "1.0", launcher,
                    launcher_family(text) if text else None, text)


def test_launchers_are_told_apart():
    assert launcher_family(HYDRA) == "MPICH"
    assert launcher_family(OPEN_MPI) == "Open MPI"
    assert launcher_family("something else 1.0") is None
    assert vendor_family("MPICH") == "MPICH" and vendor_family("MVAPICH2") == "MPICH"
    assert vendor_family("Open MPI") == "Open MPI"


def test_the_launcher_is_named_for_a_person():
    # hydra pads its version field with spaces; the line is not shown as it comes
    hydra = facts("MPICH", HYDRA, launcher="/x/mpiexec")
    hydra.launcher_text = "Version:                                 4.0"
    assert launcher_name(hydra) == "MPICH 4.0"
    open_mpi = facts("Open MPI", OPEN_MPI)
    open_mpi.launcher_text = "mpiexec (OpenRTE) 4.1.2"
    assert launcher_name(open_mpi) == "Open MPI 4.1.2"
    odd = facts("MPICH", "some   launcher\n")
    odd.launcher_text = "some   launcher"
    assert launcher_name(odd) == "unknown MPI: some launcher"


def test_a_mismatch_is_named_with_its_fix():
    problem = mismatch(facts("MPICH", OPEN_MPI))
    assert "Open MPI's launcher" in problem and "one-agent copies" in problem
    assert "--no-binary=mpi4py" in problem
    assert mismatch(facts("Open MPI", HYDRA)) is not None
    assert mismatch(facts("MPICH", HYDRA)) is None
    assert mismatch(facts("MPICH", "")) is None            # an unknown launcher: no claim
    assert "no mpiexec" in mismatch(facts("MPICH", "", launcher=None))


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for mpiexec")
def test_the_command_warns_about_a_foreign_launcher_on_path(tmp_path):
    fake = tmp_path / "mpiexec"
    fake.write_text(f"#!/bin/sh\nprintf '{OPEN_MPI.splitlines()[0]}\\n'\n")
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    proc = run_child([sys.executable, "-m", "mpi_privopt", "doctor"], env=env, timeout=120)
    assert "MPI library" in proc.stdout and str(fake) in proc.stdout
    from mpi4py import MPI
    if vendor_family(MPI.get_vendor()[0]) == "MPICH":
        assert proc.returncode == 1 and "Open MPI's launcher" in proc.stderr


def test_the_command_passes_with_the_launcher_of_the_loaded_mpi():
    proc = run_child([sys.executable, "-m", "mpi_privopt", "doctor"], timeout=120)
    if "no mpiexec" in proc.stderr:
        pytest.skip("no mpiexec on PATH")
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout


def test_hydra_that_takes_the_kinds_flag_is_named_for_many_ranks():
    note = many_ranks_note(facts("MPICH", HYDRA), hydra_kinds=True)
    assert "-memory-alloc-kinds mpi,system" in note and "300 ranks" in note
    assert many_ranks_note(facts("MPICH", HYDRA), hydra_kinds=False) is None  # older hydra
    assert many_ranks_note(facts("Open MPI", OPEN_MPI), hydra_kinds=True) is None


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for mpiexec")
def test_the_command_names_the_flag_under_a_hydra_that_takes_it(tmp_path):
    from mpi4py import MPI
    if vendor_family(MPI.get_vendor()[0]) != "MPICH":
        pytest.skip("a fake hydra matches only an MPICH mpi4py")
    fake = tmp_path / "mpiexec"
    fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then printf "HYDRA build details:\\n'
                    '    Version: 5.0.2\\n"; exit 0; fi\n'
                    'echo "    -memory-alloc-kinds    request support for memory allocation kinds"\n')
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    proc = run_child([sys.executable, "-m", "mpi_privopt", "doctor"], env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "many ranks" in proc.stdout and "-memory-alloc-kinds mpi,system" in proc.stdout


def test_segments_left_in_dev_shm_are_counted_and_removed_on_request(tmp_path, monkeypatch):
    from mpi_privopt import shm_segments
    from mpi_privopt.commands.doctor import left_shm_line
    monkeypatch.setattr(shm_segments, "SHM", tmp_path)
    assert left_shm_line(remove_them=False) is None  # nothing left: no line
    (tmp_path / "mpich_shm_1_0").write_bytes(b"\1" * 4096)
    (tmp_path / "mpich_shm_2_0").write_bytes(b"\1" * 4096)
    line = left_shm_line(remove_them=False)
    assert line.startswith("2 shared-memory segments") and "--remove-left-shm" in line
    assert len(list(tmp_path.iterdir())) == 2  # only counted
    assert left_shm_line(remove_them=True).startswith("removed the 2 shared-memory")
    assert list(tmp_path.iterdir()) == []
