"""Paper reproductions: ``python -m mpi_privopt reproduce NAME [options]``.

Each module here named after a paper (e.g. ``gade2017``) provides
``main(argv: list[str]) -> int``, parses its own options, launches the runs under
mpiexec, and writes figures (PNG) with the CSV behind each one.
"""
from __future__ import annotations

import csv
import functools
import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from ..commands.launch_line import child_environment, launch_flags
from ..errors import ConfigError
from ..progress import Progress, progress_wanted

#: progress lines of a reproduction (flushed: they are read while mpiexec jobs run)
log = functools.partial(print, flush=True)

#: the progress line on stderr over a reproduction's runs (:mod:`mpi_privopt.progress`):
#: "auto" (on a terminal), "on" (``--progress``) or "off" (``--quiet``); set by :func:`run`
PROGRESS = {"mode": "auto"}
#: the options :func:`run` takes for itself before the reproduction's own parser
PROGRESS_FLAGS = {"--progress": "on", "--quiet": "off"}


class BatchFailed(ConfigError):
    """An MPI job of a reproduction's runs ended non-zero (a reproduction may retry)."""


def find_mpiexec(given: str | None, name: str) -> str:
    """The mpiexec a reproduction launches its runs with: ``given``, else the one on PATH."""
    # the mpiexec beside this interpreter first: the one of the MPI its mpi4py loaded (the
    # mpich extra's), not whichever mpiexec comes first on PATH (a system Open MPI, say)
    beside = Path(sys.executable).parent / "mpiexec"
    mpiexec = given or (str(beside) if beside.is_file() else shutil.which("mpiexec"))
    if mpiexec is None:
        raise ConfigError(f"reproduce {name}: no mpiexec on PATH",
                          "install the mpich extra (pip install 'mpi_privopt[mpich]'), load "
                          "the site's MPI, or give --mpiexec")
    return mpiexec


def run_batch(mpiexec: str, ranks: int, module: str, items: list[dict], batch_file) -> float:
    """Run ``items`` (one dict of run settings each) in one MPI job of ``module --worker``.

    Starting K Python processes costs more than a short run, so a reproduction hands a
    batch of runs to one job whose ranks loop over them. Returns the job's seconds; raises
    :class:`BatchFailed` (a ConfigError: one message, no traceback) with the end of its
    stderr if it fails.
    """
    batch_file = Path(batch_file)
    batch_file.parent.mkdir(parents=True, exist_ok=True)
    batch_file.write_text(json.dumps(items))
    cmd = [mpiexec, "-n", str(ranks), *launch_flags(mpiexec), sys.executable, "-m", "mpi4py",
           "-m", module, "--worker", str(batch_file)]
    tick = time.perf_counter()
    # A clean environment: this process has started MPI (an Open MPI singleton then sets
    # job variables that make a child mpiexec fail); Open MPI gets --oversubscribe.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_environment())
    batch_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise BatchFailed(f"mpiexec failed (exit {proc.returncode}) on a batch of "
                          f"{len(items)} runs of {module}; the end of its output:\n"
                          f"{proc.stderr[-4000:].rstrip()}",
                          "the output above names the failing run; runs already finished "
                          "are kept and reused when the command is repeated")
    return time.perf_counter() - tick


def run_dir(out: Path, run) -> Path:
    """The directory of one run (anything with a ``key``) under a reproduction's ``out``."""
    return out / "runs" / run.key


def launch(runs: list, out: Path, mpiexec: str, *, ranks: int, module: str, batch_size: int,
           progress: str) -> None:
    """Run every run whose directory holds no ``run.result_file`` yet, in batches.

    A run is a dataclass with a ``key`` (its directory, :func:`run_dir`) and a
    ``result_file``; its fields, with ``out``, are the item :func:`worker` gets. A run
    directory without its result is what an interrupted run leaves: it is cleared and
    the run starts again. ``batch_size`` runs go to one ``mpiexec -n ranks`` job of
    ``module --worker`` (:func:`run_batch`); after each, ``progress`` is logged,
    formatted with ``batch``, ``batches``, ``runs`` (in the batch), ``ranks``,
    ``seconds``, ``done`` and ``total`` (of ``runs``), ``launched`` and ``todo``.
    """
    todo = [r for r in runs if not (run_dir(out, r) / r.result_file).is_file()]
    for r in todo:
        if run_dir(out, r).exists():  # an interrupted run: start it again from scratch
            shutil.rmtree(run_dir(out, r))
    batches = [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
    done, launched = len(runs) - len(todo), 0
    line = Progress(len(todo), "run") if todo and progress_wanted(PROGRESS["mode"]) else None
    for b, batch in enumerate(batches, 1):
        seconds = run_batch(mpiexec, ranks, module,
                            [{**asdict(r), "out": str(run_dir(out, r))} for r in batch],
                            out / "runs" / f"batch-{os.getpid()}-{b}.json")
        done, launched = done + len(batch), launched + len(batch)
        if line is not None:
            line.clear()  # the terminal's progress line, before the batch's line on stdout
        log(progress.format(batch=b, batches=len(batches), runs=len(batch), ranks=ranks,
                            seconds=seconds, done=done, total=len(runs), launched=launched,
                            todo=len(todo)))
        if line is not None:
            line.update(launched)


def run_engine(cfg, item: dict, comm) -> None:
    """One engine run (``mpi_privopt run`` semantics) of a batch item, into ``item["out"]``."""
    from ..engine import run

    run(cfg, out=item["out"], comm=comm, stream=None)


def worker(batch_file: str, run_one=run_engine) -> int:
    """Inside one MPI job of :func:`run_batch`: every rank runs the batch's items in order.

    Each item's configuration is ``item["config"]`` (a packaged one; none: the defaults)
    with ``item["overrides"]``; ``run_one(cfg, item, comm)`` runs it.
    """
    from mpi4py import MPI

    from ..config import load_config

    comm = MPI.COMM_WORLD
    for item in json.loads(Path(batch_file).read_text()):
        run_one(load_config(item.get("config"), list(item["overrides"])), item, comm)
    return 0


def write_csv(path: Path, rows: list[dict]) -> None:
    """``rows`` as CSV (floats to 6 significant digits); nothing is written for no rows."""
    if not rows:
        return
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
                         for row in rows)


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (the reproduce extra)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def read_csv(path: Path) -> list[dict]:
    """The rows of a CSV written by :func:`write_csv`, numbers as int or float (the
    figures of a reproduction are drawn again from them: ``--redraw``)."""
    def value(text: str):
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        return text

    with open(path, newline="") as handle:
        return [{k: value(v) for k, v in row.items()} for row in csv.DictReader(handle)]


#: resolution of the committed figures
DPI = 110


def save_figure(fig, path: Path, title: str | None = None) -> None:
    """Title (if given), lay out, save and close a figure (with a legend below its panels:
    ``bbox_inches="tight"`` takes it in)."""
    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    pyplot().close(fig)


def finish_figure(fig, path: Path, rows: list[dict], title: str | None = None) -> None:
    """:func:`save_figure`, then the CSV behind the figure next to it."""
    save_figure(fig, path, title)
    write_csv(path.with_suffix(".csv"), rows)


def redraw(folder: Path, draw, name: str) -> int:
    """``reproduce NAME --redraw``: ``draw(folder)`` draws every figure again from the CSVs
    a finished reproduction left in ``folder`` (no runs); one message if one is missing."""
    if not folder.is_dir():
        raise ConfigError(f"reproduce {name} --redraw: {folder} is not a directory",
                          "give --out the folder of a finished reproduction")
    try:
        written = draw(folder)
    except FileNotFoundError as err:
        raise ConfigError(f"reproduce {name} --redraw: {err.filename} is missing",
                          "give --out the folder of a finished reproduction (its CSVs "
                          "and summary.json)") from None
    log(f"redrew {len(written)} figures in {folder}")
    return 0


def available() -> list[str]:
    """Names of the reproductions shipped in this package."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def run(name: str, argv: list[str]) -> int:
    """Run the reproduction ``name`` with its command-line options ``argv``."""
    if name not in available():
        raise ConfigError(f"no reproduction named {name!r}",
                          f"available: {', '.join(available()) or 'none yet'}")
    module = importlib.import_module(f"{__name__}.{name}")
    # --quiet / --progress: the progress line over the runs (every reproduction alike)
    modes = [PROGRESS_FLAGS[a] for a in argv if a in PROGRESS_FLAGS]
    PROGRESS["mode"] = "off" if "off" in modes else ("on" if modes else "auto")
    return module.main([a for a in argv if a not in PROGRESS_FLAGS])
