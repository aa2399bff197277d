"""What the launch scripts put on a launch line for each MPI (commands/launch_line.py)."""
import sys

from launch_util import run_child
from mpi_privopt.commands.launch_line import library_family, mpiexec_flags, srun_plugin


def test_srun_gets_the_pmi_each_mpi_reads():
    assert srun_plugin("MPICH") == "pmi2"
    assert srun_plugin("Intel MPI") == "pmi2"
    assert srun_plugin("Open MPI") == "pmix"
    assert srun_plugin(None) is None          # unknown: leave the site's default


def test_open_mpi_gets_time_to_stop_and_may_oversubscribe():
    flags = mpiexec_flags("Open MPI", oversubscribe=True, sigkill_timeout=45,
                          export=["PATH", "UNSET_HERE"], environ={"PATH": "/bin"})
    assert flags == ["--mca", "odls_base_sigkill_timeout", "45", "--oversubscribe",
                     "-x", "PATH"]
    assert "--oversubscribe" not in mpiexec_flags("Open MPI", oversubscribe=False)
    # MPICH's hydra forwards signals and waits, oversubscribes, and passes the environment
    assert mpiexec_flags("MPICH", oversubscribe=True, export=["PATH"]) == []


def test_the_command_names_the_plugin_of_the_library_mpi4py_loads():
    proc = run_child([sys.executable, "-m", "mpi_privopt.commands.launch_line", "srun-mpi"],
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (srun_plugin(library_family()) or "")


def test_the_command_asks_the_launcher_itself(tmp_path):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho 'mpiexec (OpenRTE) 4.1.4'\n")
    fake.chmod(0o755)
    proc = run_child([sys.executable, "-m", "mpi_privopt.commands.launch_line",
                      "mpiexec-flags", str(fake), "--oversubscribe"], timeout=120,
                     env={"MPI_PRIVOPT_SIGKILL_TIMEOUT": "60"})
    assert proc.stdout.split() == ["--mca", "odls_base_sigkill_timeout", "60",
                                   "--oversubscribe"]
