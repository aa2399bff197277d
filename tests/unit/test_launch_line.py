"""What the launch scripts put on a launch line for each MPI (commands/launch_line.py)."""
import sys
from pathlib import Path

from launch_util import run_child
from mpi_privopt.commands.launch_line import (HYDRA_KINDS, child_environment, hydra_knows_kinds,
                                              library_family, mpiexec_flags, srun_plugin)


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
    # ... and answers the ranks' memory-kinds query itself when it can (500 ranks start)
    assert mpiexec_flags("MPICH", oversubscribe=True, hydra_kinds=True) == [
        "-memory-alloc-kinds", "mpi,system"]
    assert "-memory-alloc-kinds" not in mpiexec_flags("Open MPI", oversubscribe=True,
                                                      hydra_kinds=True)


def _fake_hydra(path: Path, *, kinds: bool) -> Path:
    # hydra 4.2+ lists -memory-alloc-kinds in its -h; an older one does not
    help_line = "    -memory-alloc-kinds   request support for memory allocation kinds" if kinds else ""
    path.write_text("#!/bin/sh\n"
                    'if [ "$1" = --version ]; then echo "HYDRA build details:"; '
                    'echo "    Version: 5.0.2"; exit 0; fi\n'
                    f'echo "Usage: ./mpiexec [global opts]"; echo "{help_line}"\n')
    path.chmod(0o755)
    return path


def test_hydra_gets_the_kinds_flag_only_when_its_help_lists_it(tmp_path):
    new = _fake_hydra(tmp_path / "new", kinds=True)
    old = _fake_hydra(tmp_path / "old", kinds=False)
    assert hydra_knows_kinds(str(new)) and not hydra_knows_kinds(str(old))
    assert not hydra_knows_kinds(str(tmp_path / "missing"))
    for fake, flags in ((new, list(HYDRA_KINDS)), (old, [])):
        proc = run_child([sys.executable, "-m", "mpi_privopt.commands.launch_line",
                          "mpiexec-flags", str(fake), "--oversubscribe"], timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == flags


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


def test_a_child_job_gets_the_users_environment_without_the_launchers():
    # what Open MPI's mpiexec (4.1) and MPICH's hydra set in a rank, and what a user sets
    inside = {"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "1", "OMPI_UNIVERSE_SIZE": "2",
              "OMPI_MCA_orte_hnp_uri": "1.0;tcp://x", "OMPI_MCA_ess": "^singleton",
              "OMPI_MCA_pmix": "^s1", "OMPI_MCA_ess_base_jobid": "1", "OMPI_FILE_LOCATION": "/t",
              "PMIX_RANK": "1", "PMIX_SERVER_URI4": "x", "PMI_RANK": "1", "PMI_SIZE": "4",
              "PMI_FD": "6", "MPI_LOCALNRANKS": "4", "MPI_LOCALRANKID": "1",
              "MPIR_CVAR_CH3_INTERFACE_HOSTNAME": "vm", "SLURM_STEP_NUM_TASKS": "4",
              "SLURM_PROCID": "1"}
    user = {"PATH": "/bin", "HOME": "/root", "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "tcp,self",
            "SLURM_JOB_ID": "7", "MPIR_CVAR_ASYNC_PROGRESS": "1"}
    assert child_environment({**inside, **user}) == user


def test_local_sh_forwards_the_terminal_word_to_open_mpi_ranks(tmp_path):
    # launch/_mpi.sh's set_mpiexec_flags, as launch/local.sh calls it: -x for a variable
    # that is set, nothing for one that is not
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho 'mpirun (Open MPI) 4.1.4'\n")
    fake.chmod(0o755)
    script = ('source launch/_mpi.sh; set_mpiexec_flags "$1" oversubscribe '
              '--export MPI_PRIVOPT_TERMINAL; printf "%s\\n" "${MPIEXEC_FLAGS[@]}"')
    for value, exported in (("1", True), (None, False)):
        env = {"MPI_PRIVOPT_SIGKILL_TIMEOUT": "30", "PYTHON": sys.executable}
        if value is not None:
            env["MPI_PRIVOPT_TERMINAL"] = value
        proc = run_child(["bash", "-c", f'python() {{ "$PYTHON" "$@"; }}; {script}', "x",
                          str(fake)], timeout=120, env=env,
                         cwd=str(Path(__file__).resolve().parents[2]))
        assert proc.returncode == 0, proc.stderr
        flags = proc.stdout.split()
        assert "--oversubscribe" in flags
        assert (flags[-2:] == ["-x", "MPI_PRIVOPT_TERMINAL"]) is exported, flags
