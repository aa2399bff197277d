"""A real single-node Slurm runs launch/slurm.sh: 4 tasks give one 4-rank MPI world.

tests/cluster/slurm_single_node.sh does the work (installs Slurm and munge from the
distribution when missing, starts the daemons without systemd, submits the default
experiment with ``sbatch --ntasks=4 --overcommit`` and checks summary.json); this test
runs it and skips with the script's reason where Slurm cannot be installed or started
(not root, no apt-get, no network). About a minute with the install.
"""
import sys
from pathlib import Path

import pytest

from launch_util import run_child

SCRIPT = Path(__file__).with_name("slurm_single_node.sh")
pytestmark = pytest.mark.cluster


def test_sbatch_of_the_slurm_script_runs_one_world_of_four_ranks(tmp_path):
    proc = run_child(["bash", str(SCRIPT)], timeout=1200,
                     env={"MPI_PRIVOPT_VENV": sys.prefix,
                          "SLURM_TEST_DIR": str(tmp_path / "slurm")})
    lines = proc.stdout.strip().splitlines() or [""]
    if proc.returncode == 77:
        pytest.skip(lines[-1])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "PASSED: 4 distinct ranks under Slurm; srun without the PMI plugin refused" \
        in proc.stdout
    assert "summary.json: ranks 4" in proc.stdout
    # srun's PMI plugin followed the MPI mpi4py loads (and the run found a 4-rank world)
    assert "srun --mpi=pmi2" in proc.stdout or "srun --mpi=pmix" in proc.stdout
