"""Record the golden set: ``python tests/golden/record.py`` (launches mpiexec itself).

Keeps, per case, only what is compared: models.npz, metrics.csv, traffic.json, privacy.json.
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from cases import RANKS  # noqa: E402
from launch_util import child_env, mpiexec_command  # noqa: E402

KEEP = ("models.npz", "metrics.csv", "traffic.json", "privacy.json")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(mpiexec_command(RANKS, sys.executable, "-m", "mpi4py",
                                       str(HERE / "run_cases.py"), tmp),
                       env=child_env(), check=True)
        data = HERE / "data"
        shutil.rmtree(data, ignore_errors=True)
        for case in sorted(Path(tmp).iterdir()):
            (data / case.name).mkdir(parents=True)
            for name in KEEP:
                shutil.copy(case / name, data / case.name / name)


if __name__ == "__main__":
    main()
