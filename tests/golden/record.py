"""Record the golden set: ``python tests/golden/record.py`` (launches mpiexec itself).

Keeps, per case, only what is compared: models.npz, metrics.csv, traffic.json, privacy.json.
``python tests/golden/record.py CASE ...`` re-records only the cases named (an intended
change of their results, said in the commit and in docs/architecture.md, "Intended changes
of results"); every other record stays as it is.
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from cases import RANKS, cases  # noqa: E402
from launch_util import child_env, mpiexec_command  # noqa: E402

KEEP = ("models.npz", "metrics.csv", "traffic.json", "privacy.json")


def main(only: list[str]) -> None:
    unknown = sorted(set(only) - set(cases()))
    if unknown:
        sys.exit(f"record.py: unknown case(s) {', '.join(unknown)}; cases: "
                 f"{', '.join(sorted(cases()))}")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(mpiexec_command(RANKS, sys.executable, "-m", "mpi4py",
                                       str(HERE / "run_cases.py"), tmp),
                       env=child_env(), check=True)
        data = HERE / "data"
        if not only:
            shutil.rmtree(data, ignore_errors=True)
        for case in sorted(Path(tmp).iterdir()):
            if only and case.name not in only:
                continue
            shutil.rmtree(data / case.name, ignore_errors=True)
            (data / case.name).mkdir(parents=True)
            for name in KEEP:
                shutil.copy(case / name, data / case.name / name)


if __name__ == "__main__":
    main(sys.argv[1:])
