"""A process that runs alone although its launcher started K tasks is refused:
K one-agent copies of a run would otherwise run and write over each other."""
import pytest

from mpi_privopt.entrypoint import LAUNCHER_SIZES, announced_rank, lone_copy_error


@pytest.mark.parametrize("name", LAUNCHER_SIZES)
def test_a_launcher_announcing_k_tasks_to_a_one_rank_world_is_named(name):
    err = lone_copy_error({name: "4"}, world_size=1)
    assert err is not None
    text = str(err)
    assert f"{name}=4" in text and "4 copies of a one-agent run" in text
    assert "srun --mpi=pmi2" in text and "--mpi=pmix" in text and "how to fix" in text


def test_agreeing_launchers_and_plain_runs_pass():
    assert lone_copy_error({"PMI_SIZE": "4"}, world_size=4) is None    # mpiexec as meant
    assert lone_copy_error({}, world_size=1) is None                   # python -m ... alone
    assert lone_copy_error({"SLURM_STEP_NUM_TASKS": "1"}, world_size=1) is None
    assert lone_copy_error({"PMI_SIZE": "x"}, world_size=1) is None    # not a launcher's


def test_the_announced_rank_decides_who_speaks():
    assert announced_rank({"PMI_RANK": "3"}) == 3
    assert announced_rank({"SLURM_PROCID": "2"}) == 2
    assert announced_rank({}) == 0
