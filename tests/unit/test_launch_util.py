"""The suite's reading of a launcher's stderr (tests/launch_util.py)."""
from launch_util import OPEN_MPI_RULE, without_launcher_notices


def test_open_mpi_notices_go_and_the_package_lines_stay():
    # what Open MPI 4.1's mpiexec added after a diverged run's one line (exit 3)
    stderr = "\n".join([
        "mpi_privopt: the run diverged at iteration 3 (agents 0, 1, 2); its results are in x",
        OPEN_MPI_RULE, "Primary job  terminated normally, but 1 process returned",
        "a non-zero exit code. Per user-direction, the job has been aborted.", OPEN_MPI_RULE,
        OPEN_MPI_RULE, "  Exit code:    3", OPEN_MPI_RULE, ""])
    assert without_launcher_notices(stderr).splitlines() == [
        "mpi_privopt: the run diverged at iteration 3 (agents 0, 1, 2); its results are in x"]
    assert without_launcher_notices("a\n---\nb\n") == "a\n---\nb\n"  # a short rule is text
    assert without_launcher_notices("") == ""
