"""Paper reproductions: ``python -m mpi_privopt reproduce NAME [options]``.

Each module here named after a paper (e.g. ``gade2017``) provides
``main(argv: list[str]) -> int``, parses its own options, launches the runs under
mpiexec, and writes figures (PNG) with the CSV behind each one.
"""
from __future__ import annotations

import importlib
import pkgutil


def find_mpiexec(given: str | None, name: str) -> str:
    """The mpiexec a reproduction launches its runs with: ``given``, else the one on PATH."""
    import shutil

    from ..errors import ConfigError

    mpiexec = given or shutil.which("mpiexec")
    if mpiexec is None:
        raise ConfigError(f"reproduce {name}: no mpiexec on PATH",
                          "install the mpich extra (pip install 'mpi_privopt[mpich]'), load "
                          "the site's MPI, or give --mpiexec")
    return mpiexec


def run_batch(mpiexec: str, ranks: int, module: str, items: list[dict], batch_file) -> float:
    """Run ``items`` (one dict of run settings each) in one MPI job of ``module --worker``.

    Starting K Python processes costs more than a short run, so a reproduction hands a
    batch of runs to one job whose ranks loop over them. Returns the job's seconds; raises
    RuntimeError with the end of its stderr if it fails.
    """
    import json
    import subprocess
    import sys
    import time
    from pathlib import Path

    batch_file = Path(batch_file)
    batch_file.parent.mkdir(parents=True, exist_ok=True)
    batch_file.write_text(json.dumps(items))
    cmd = [mpiexec, "-n", str(ranks), sys.executable, "-m", "mpi4py", "-m", module,
           "--worker", str(batch_file)]
    tick = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    batch_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise RuntimeError(f"mpiexec failed (exit {proc.returncode}) on a batch of "
                           f"{len(items)} runs of {module}:\n{proc.stderr[-4000:]}")
    return time.perf_counter() - tick


def available() -> list[str]:
    """Names of the reproductions shipped in this package."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def run(name: str, argv: list[str]) -> int:
    from ..errors import ConfigError

    if name not in available():
        raise ConfigError(f"no reproduction named {name!r}",
                          f"available: {', '.join(available()) or 'none yet'}")
    module = importlib.import_module(f"{__name__}.{name}")
    return module.main(argv)
