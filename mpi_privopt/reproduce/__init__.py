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
