"""Run the golden cases under mpiexec: ``mpiexec -n 4 python -m mpi4py run_cases.py OUT [NAME...]``.

Each case's run directory is ``OUT/NAME``. Only the run directory is read afterwards, so
the comparison does not depend on in-memory interfaces that the renovation changes.
"""
import sys
from pathlib import Path

from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).parent))
from cases import cases  # noqa: E402

from mpi_privopt.config import load_config  # noqa: E402
from mpi_privopt.engine import run  # noqa: E402


def main(out: str, names: list[str]) -> None:
    selected = cases()
    for name in names or sorted(selected):
        experiment, overrides = selected[name]
        cfg = load_config(experiment, overrides)
        run(cfg, out=str(Path(out) / name), stream=None)
        MPI.COMM_WORLD.Barrier()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
