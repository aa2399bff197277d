"""A job stopped short by a killed rank leaves MPICH's shared-memory segments in
/dev/shm (memory until the machine restarts): ``./launch/local.sh`` removes them once the
job has ended (mpi_privopt/shm_segments.py; docs/reliability.md, "Shared memory left by a
stopped job")."""
import re
import subprocess
from pathlib import Path

import pytest

from launch_util import child_env, is_open_mpi, needs_mpiexec
from mpi_privopt import shm_segments

REPO = Path(__file__).resolve().parents[2]


@needs_mpiexec
def test_local_sh_removes_the_segments_of_a_job_whose_rank_was_killed(tmp_path):
    if is_open_mpi():
        pytest.skip("Open MPI's launcher removes its own /dev/shm segments (vader_segment.*) "
                    "when a rank is killed; only MPICH's are left behind")
    before = shm_segments.snapshot()
    env = child_env({"RANKS": "2", "MPI_PRIVOPT_TEST_FAULT": "kill@iteration:1:5"})
    proc = subprocess.run([str(REPO / "launch" / "local.sh"), "dgd-ridge", "--set",
                           "run.iterations=50", "--quiet", "--out", str(tmp_path / "run")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0, proc.stderr
    # its own segment, and any another job stopped short left meanwhile (this machine may
    # run other jobs: then more than one)
    assert re.search(r"removed the \d+ shared-memory segments? \(", proc.stderr), proc.stderr
    # nothing of this job's is left: a segment that appeared meanwhile is another job's,
    # mapped by it
    assert shm_segments.left_behind(since=before).names == ()
