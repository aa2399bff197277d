"""Paper reproductions: ``python -m mpi_privopt reproduce NAME [options]``.

Each method family that reproduces its paper has a ``reproduce`` package
(e.g. ``mpi_privopt/methods/gade2017/reproduce/``) whose ``__init__`` provides
``main(argv: list[str]) -> int``, parses its own options, launches the runs under
mpiexec, and writes figures (PNG) with the CSV behind each one.
"""
from __future__ import annotations

import argparse
import ast
import csv
import functools
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from .. import shm_segments
from ..commands.launch_line import child_environment, launch_flags
from ..errors import ConfigError
from ..methods import FAMILIES
from ..services.progress import progress_line
from ..watching import TERMINAL_VARIABLE

_METHODS = "mpi_privopt.methods"

#: progress lines of a reproduction (flushed: they are read while mpiexec jobs run)
log = functools.partial(print, flush=True)

#: the progress line on stderr over a reproduction's runs (:mod:`mpi_privopt.services.progress`):
#: "auto" (where a person watches), "on" (``--progress``) or "off" (``--quiet``); set by
#: :func:`run`
PROGRESS = {"mode": "auto"}
#: the options :func:`run` takes for itself before the reproduction's own parser
PROGRESS_FLAGS = {"--progress": "on", "--quiet": "off"}
#: seconds between two looks at a running batch's finished runs
POLL_SECONDS = 1.0
#: the ``reproduce`` extra (module: package): the figures, and the data sets that ship
#: in scikit-learn
NEEDS = {"matplotlib": "matplotlib", "sklearn": "scikit-learn"}
#: how to get :data:`NEEDS` (one line, as ``report --png`` says it for the plot extra)
EXTRA_FIX = ("pip install 'mpi_privopt[reproduce]' (from a clone: ./launch/reproduce.sh "
             "{name} [options])")


class BatchFailed(ConfigError):
    """An MPI job of a reproduction's runs ended non-zero (a reproduction may retry)."""


def require_at_least(args: argparse.Namespace, least: dict[str, int]) -> None:
    """Refuse (one :class:`ConfigError`) an option of ``args`` below its least value, e.g.
    ``{"runs": 1, "ranks": 2}``; an option left unset (None) takes its default later."""
    for name, minimum in least.items():
        value = vars(args)[name]
        if value is not None and value < minimum:
            option = "--" + name.replace("_", "-")
            raise ConfigError(f"{option} = {value} must be {minimum} or more",
                              f"give {option} {minimum} or more, or leave it out for its "
                              "default")


def numbers(text: str) -> tuple[float, ...]:
    """An argparse type: a comma-separated list of numbers (``1,10,100``), all positive."""
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of numbers (e.g. 1,10,100)") from None
    if not values or not all(v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more numbers, each > 0")
    return values


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


def run_batch(mpiexec: str, ranks: int, module: str, items: list[dict], batch_file,
              on_wait: Callable[[], None] | None = None) -> float:
    """Run ``items`` (one dict of run settings each) in one MPI job of ``module --worker``.

    Starting K Python processes costs more than a short run, so a reproduction hands a
    batch of runs to one job whose ranks loop over them. ``on_wait`` is called every
    :data:`POLL_SECONDS` while the job runs (the progress line counts the runs done).
    Returns the job's seconds; raises :class:`BatchFailed` (a ConfigError: one message, no
    traceback) with the end of its stderr if it fails.
    """
    batch_file = Path(batch_file)
    batch_file.parent.mkdir(parents=True, exist_ok=True)
    batch_file.write_text(json.dumps(items))
    cmd = [mpiexec, "-n", str(ranks), *launch_flags(mpiexec), sys.executable, "-m", "mpi4py",
           "-m", module, "--worker", str(batch_file)]
    tick = time.perf_counter()
    # A clean environment: this process has started MPI (an Open MPI singleton then sets
    # job variables that make a child mpiexec fail); Open MPI gets --oversubscribe. The
    # job's output is read only if it fails: its runs show no progress line of their own
    # (this process shows one over the runs).
    env = {**child_environment(), TERMINAL_VARIABLE: "0"}
    shm_before = shm_segments.snapshot()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as proc:
        try:
            while True:
                try:  # a blocking wait that reads the output, woken to report progress
                    _, stderr = proc.communicate(timeout=POLL_SECONDS if on_wait else None)
                    break
                except subprocess.TimeoutExpired:
                    on_wait()
        except BaseException:  # Ctrl-C, or the callback failed: the job goes too
            proc.terminate()  # the launcher ends its ranks on SIGTERM
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
        finally:
            if proc.poll() != 0:  # a job stopped short leaves MPICH's segments in /dev/shm
                shm_segments.clean_after(shm_before)
    batch_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        end = stderr[-4000:].rstrip()
        raise BatchFailed(f"mpiexec failed (exit {proc.returncode}) on a batch of "
                          f"{len(items)} runs of {module}; "
                          + (f"the end of its output:\n{end}" if end else
                             "it printed nothing on stderr"),
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
    # runs take different times, and a batch's first pays the job's start: settle 1 run;
    # whole lines, also on a terminal (the batches' lines on stdout go between them)
    line = (progress_line(PROGRESS["mode"], len(todo), "run", settle=1, in_place=False)
            if todo else None)
    if line is not None:
        line.update(0)
    for b, batch in enumerate(batches, 1):
        def runs_done(batch=batch, launched=launched) -> None:
            # a run is done once its result file is written (the worker runs them in turn)
            line.update(launched + sum((run_dir(out, r) / r.result_file).is_file()
                                       for r in batch))

        seconds = run_batch(mpiexec, ranks, module,
                            [{**asdict(r), "out": str(run_dir(out, r))} for r in batch],
                            out / "runs" / f"batch-{os.getpid()}-{b}.json",
                            on_wait=runs_done if line is not None else None)
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


def save_figures(figures, folder: Path) -> list[Path]:
    """Save each ``(file name, title, Figure)`` of ``figures`` in ``folder`` with
    :func:`save_figure`; returns the PNGs written."""
    written = []
    for name, title, fig in figures:
        save_figure(fig, folder / name, title)
        written.append(folder / name)
    return written


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
    return sorted(family for family in FAMILIES
                  if importlib.util.find_spec(f"{_METHODS}.{family}.reproduce") is not None)


def title(name: str) -> str:
    """The first paragraph of reproduction ``name``'s module docstring, read from its file
    without importing it (``reproduce --help`` works without the reproduce extra)."""
    path = Path(importlib.util.find_spec(f"{_METHODS}.{name}.reproduce").origin)
    doc = ast.get_docstring(ast.parse(path.read_text())) or name
    first = " ".join(doc.split("\n\n")[0].split())
    return first.removeprefix("Reproduction of ").rstrip(".")


class _Help(argparse.Action):
    """``reproduce --help``: the options, then every reproduction (from :func:`available`,
    so the list cannot drift from what is shipped)."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show this help, with every reproduction, and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        names = available()
        width = max(map(len, names), default=0)
        indent = " " * (width + 4)
        parser.epilog = "\n".join(
            ["reproductions (reproduce NAME --help for the options of each):"]
            + [textwrap.fill(f"  {n:<{width}}  {title(n)}", 88, subsequent_indent=indent)
               for n in names]
            + ["", textwrap.fill("They need matplotlib and scikit-learn: "
                                 f"{EXTRA_FIX.format(name='NAME')}.", 88)])
        parser.print_help()
        parser.exit()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``reproduce`` command's own arguments (cli.py); the rest go to the reproduction."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("-h", "--help", action=_Help)
    parser.add_argument("--progress", action="store_true",
                        help="show the progress line over the runs on stderr even when it "
                             "is not a terminal (also accepted among the options)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress line (also accepted among the options)")
    parser.add_argument("name", help="the reproduction (listed below)")
    parser.add_argument("options", nargs=argparse.REMAINDER,
                        help="options of that reproduction (see reproduce NAME --help)")


def check_extras(name: str) -> None:
    """Refuse, before any job runs, a reproduction whose figures could not be drawn."""
    missing = [package for module, package in NEEDS.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        raise ConfigError(f"reproduce {name} needs {' and '.join(missing)} (the reproduce "
                          "extra), which is not installed", EXTRA_FIX.format(name=name))


def run(name: str, argv: list[str]) -> int:
    """Run the reproduction ``name`` with its command-line options ``argv``."""
    if name not in available():
        raise ConfigError(f"no reproduction named {name!r}",
                          f"available: {', '.join(available()) or 'none yet'}")
    if not {"-h", "--help"} & set(argv):
        check_extras(name)
    module = importlib.import_module(f"{_METHODS}.{name}.reproduce")
    # --quiet / --progress: the progress line over the runs (every reproduction alike)
    modes = [PROGRESS_FLAGS[a] for a in argv if a in PROGRESS_FLAGS]
    PROGRESS["mode"] = "off" if "off" in modes else ("on" if modes else "auto")
    return module.main([a for a in argv if a not in PROGRESS_FLAGS])
