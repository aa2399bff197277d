"""The cluster launch scripts, driven with stand-ins for the scheduler's launcher."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MPIEXEC = shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec on PATH")


def _env(tmp_path, **extra):
    env = dict(os.environ)
    env["MPI_PRIVOPT_VENV"] = sys.prefix     # the environment running these tests
    env["PATH"] = f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:{env['PATH']}"
    env.update(extra)
    return env


def test_slurm_script_runs_one_rank_per_task(tmp_path):
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "srun"
    # srun inside an allocation starts SLURM_NTASKS tasks; mpiexec does that here.
    fake.write_text(f'#!/usr/bin/env bash\nexec {MPIEXEC} -n "$SLURM_NTASKS" "$@"\n')
    fake.chmod(0o755)
    out = tmp_path / "run"
    proc = subprocess.run(["bash", str(REPO / "launch/slurm.sh"), "default",
                           "--set", "run.iterations=4", "--out", str(out)],
                          env=_env(tmp_path, SLURM_NTASKS="3", SLURM_SUBMIT_DIR=str(tmp_path)),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "summary.json").read_text())["ranks"] == 3


def test_pbs_script_reads_the_node_file(tmp_path):
    (tmp_path / "bin").mkdir()
    nodefile = tmp_path / "nodes"
    nodefile.write_text("localhost\nlocalhost\n")
    out = tmp_path / "run"
    proc = subprocess.run(["bash", str(REPO / "launch/pbs.sh")],
                          env=_env(tmp_path, PBS_NODEFILE=str(nodefile),
                                   PBS_O_WORKDIR=str(tmp_path),
                                   ARGS=f"default --set run.iterations=4 --out {out}"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "summary.json").read_text())["ranks"] == 2
