"""The launch scripts: local.sh's refusals, and the cluster scripts driven with stand-ins
for the scheduler's launcher.

A real Slurm runs launch/slurm.sh in tests/cluster/ (marked ``cluster``); here a fake
``srun`` records its options and starts the tasks with the mpiexec on PATH, and PBS is a
node file and the variables PBS sets.
"""
import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from launch_util import MPIEXEC, launcher_flags, needs_mpiexec, run_child
from mpi_privopt.commands.launch_line import library_family, srun_plugin

REPO = Path(__file__).resolve().parents[2]
TIME_LIMIT = 300


def _env(tmp_path, **extra):
    return {"MPI_PRIVOPT_VENV": sys.prefix,     # the environment running these tests
            "PATH": f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:{os.environ['PATH']}",
            **extra}


def _fake_srun(tmp_path) -> Path:
    """An ``srun`` that lists pmi2 and pmix, records its options, and starts
    ``$SLURM_NTASKS`` tasks with mpiexec (as srun does inside an allocation)."""
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "srun"
    flags = " ".join(shlex.quote(f) for f in launcher_flags())
    fake.write_text(f"""#!/usr/bin/env bash
if [ "$1" = --mpi=list ]; then printf 'MPI plugin types are...\\n\\tnone\\n\\tpmi2\\n\\tpmix\\n'; exit 0; fi
options=()
while [[ "$1" == --* ]]; do options+=("$1"); shift; done
printf '%s\\n' "${{options[@]}}" > {shlex.quote(str(tmp_path / 'srun-options'))}
exec {shlex.quote(MPIEXEC)} -n "$SLURM_NTASKS" {flags} "$@"
""")
    fake.chmod(0o755)
    return tmp_path / "srun-options"


def _one_clear_refusal(proc, words):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("mpi_privopt: error:") == 1, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


@needs_mpiexec
def test_slurm_script_runs_one_rank_per_task_with_the_pmi_of_the_loaded_mpi(tmp_path):
    options = _fake_srun(tmp_path)
    out = tmp_path / "run"
    proc = run_child(["bash", str(REPO / "launch/slurm.sh"), "default",
                      "--set", "run.iterations=4", "--set", "run.name=two words",
                      "--out", str(out)],
                     env=_env(tmp_path, SLURM_NTASKS="3", SLURM_SUBMIT_DIR=str(tmp_path)),
                     timeout=TIME_LIMIT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "summary.json").read_text())["ranks"] == 3
    assert 'name = "two words"' in (out / "config.toml").read_text()   # quoting kept
    # MPICH (the wheel in CI) gets --mpi=pmi2, Open MPI --mpi=pmix
    plugin = srun_plugin(library_family())
    assert options.read_text().split() == ([f"--mpi={plugin}"] if plugin else [])


def test_slurm_script_refuses_a_one_task_job(tmp_path):
    _fake_srun(tmp_path)
    proc = run_child(["bash", str(REPO / "launch/slurm.sh"), "default"],
                     env=_env(tmp_path, SLURM_NTASKS="1", SLURM_SUBMIT_DIR=str(tmp_path)),
                     timeout=TIME_LIMIT)
    _one_clear_refusal(proc, ["1 task", "one agent", "--ntasks=8"])
    assert not (tmp_path / "srun-options").exists()      # srun never started


@pytest.mark.parametrize("ranks", ["abc", "0", "-2", "4x"])
def test_local_script_refuses_a_rank_count_that_is_not_one(tmp_path, ranks):
    # before: MPICH's mpiexec ran "abc" (and 0, -2) as one rank, a run of one agent
    proc = run_child([str(REPO / "launch" / "local.sh"), "dgd-ridge", "--out",
                      str(tmp_path / "run")], env={"RANKS": ranks},
                     timeout=TIME_LIMIT, cwd=REPO)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"mpi_privopt: error: RANKS={ranks} is not a number of ranks",
        "how to fix: give one rank per agent as digits, e.g. RANKS=4 ./launch/local.sh"]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("script", ["slurm.sh", "pbs.sh"])
def test_a_batch_script_without_its_environment_says_where_it_looked(tmp_path, script):
    # before: bash's "…/bin/activate: No such file or directory" from `source`
    proc = run_child(["bash", str(REPO / "launch" / script)],
                     env=_env(tmp_path, MPI_PRIVOPT_VENV=str(tmp_path / "none")),
                     timeout=TIME_LIMIT)
    _one_clear_refusal(proc, [f"no virtual environment at {tmp_path / 'none'}",
                              f"the lines at the top of launch/{script}", "MPI_PRIVOPT_VENV"])


def test_slurm_script_leaves_the_plugin_to_the_user_when_told(tmp_path):
    options = _fake_srun(tmp_path)
    # SRUN_MPI overrides the detected plugin (a wrong choice gives K one-rank worlds,
    # which the run itself refuses: test_cli.py)
    proc = run_child(["bash", str(REPO / "launch/slurm.sh"), "list"],
                     env=_env(tmp_path, SLURM_NTASKS="2", SLURM_SUBMIT_DIR=str(tmp_path),
                              SRUN_MPI="none"),
                     timeout=TIME_LIMIT)
    assert options.read_text().split() == ["--mpi=none"], proc.stderr


@needs_mpiexec
@pytest.mark.parametrize("form", ["ARGS", "arguments"])
def test_pbs_script_runs_one_rank_per_node_file_line_with_arguments_kept(tmp_path, form):
    (tmp_path / "bin").mkdir()
    nodefile = tmp_path / "nodes"
    nodefile.write_text("localhost\nlocalhost\n")
    out = tmp_path / "run"
    args = ["default", "--set", "run.iterations=4", "--set", "run.name=two words",
            "--out", str(out)]
    env = _env(tmp_path, PBS_NODEFILE=str(nodefile), PBS_O_WORKDIR=str(tmp_path))
    if form == "ARGS":      # qsub -v ARGS="..."  (split as a shell would, not run)
        env["ARGS"] = shlex.join(args) + " $(touch pwned)"
    command = ["bash", str(REPO / "launch/pbs.sh")] + (args if form == "arguments" else [])
    proc = run_child(command, env=env, timeout=TIME_LIMIT)
    if form == "ARGS":      # "$(touch pwned)" is two words of input, never a command
        assert proc.returncode != 0 and "$(touch" in proc.stderr, proc.stderr
        assert not (tmp_path / "pwned").exists()
        env["ARGS"] = shlex.join(args)
        proc = run_child(command, env=env, timeout=TIME_LIMIT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "summary.json").read_text())["ranks"] == 2
    assert 'name = "two words"' in (out / "config.toml").read_text()


def test_pbs_script_refuses_a_one_slot_job(tmp_path):
    (tmp_path / "bin").mkdir()
    nodefile = tmp_path / "nodes"
    nodefile.write_text("node01\n")
    proc = run_child(["bash", str(REPO / "launch/pbs.sh"), "default"],
                     env=_env(tmp_path, PBS_NODEFILE=str(nodefile),
                              PBS_O_WORKDIR=str(tmp_path)), timeout=TIME_LIMIT)
    _one_clear_refusal(proc, ["1 MPI slot", "one agent", "mpiprocs=8", "ppn=8"])
