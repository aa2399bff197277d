"""Checks of a run's input that need no MPI: the config, the agent count and the graph.

``check CONFIG --ranks K`` runs them for K; ``run`` runs them before MPI starts, with the
world size the launcher announced in the environment (``PMI_SIZE``, ``OMPI_COMM_WORLD_SIZE``,
...). Why before: once MPI has started, ranks that all find the same bad input and exit 2
race the launcher's clean-up, which sometimes kills the slower ones and reports status 9
with a banner. A process that has not started MPI just exits 2, and so does the job.

The whole check runs on one task per host and job; the others read its verdict, the
error message or the notes (:func:`validate_before_mpi`, :mod:`mpi_privopt.check_verdict`).
The graph is drawn by one task per host too, across jobs; the others read its verdict,
the edge list or the error, without importing networkx (:func:`run_graph`,
:mod:`mpi_privopt.graph_cache`).

Nothing here imports mpi4py (a test checks it).
"""
from __future__ import annotations

import os
import sys
import time

from .config import Config, load_config

__all__ = ["build_graph", "check_run_input", "check_verdict_of", "preload_for_rank_0",
           "resume_config", "run_graph", "validate_before_mpi"]

#: what rank 0 alone computes for everyone (reference solve, calibrations, the end-of-run
#: epsilon conversions) and the other ranks do not import at all
RANK_0_LIBRARIES = ("scipy.optimize", "scipy.special")
#: what rank 0 also loads for a finite budget: the budget's calibration (``Budget.of``,
#: ``calibrate_gdp_mu``), which loads scipy.stats
BUDGET_LIBRARIES = ("dp_accounting.gaussian_mechanism",)
#: the key of this job's check (:func:`validate_before_mpi`), for the gate before MPI_Init
_job_key: str | None = None
#: what the check said task 0 should load before MPI starts (None: no check ran)
_preload: list[str] | None = None


def _graph_inputs(cfg: Config, n_ranks: int) -> dict:
    """What the graph of ``cfg`` for ``n_ranks`` agents is drawn from (the builder's
    arguments, the seed resolved)."""
    t = cfg.topology
    return {"kind": t.kind, "n": n_ranks, "seed": t.seed if t.seed >= 0 else cfg.run.seed,
            "directed": t.directed,
            "params": {"degree": t.degree, "radius": t.radius, "neighbors": t.neighbors,
                       "rewire": t.rewire, "rows": t.rows, "file": t.file}}


def build_graph(cfg: Config, n_ranks: int):
    """The validated communication graph of ``cfg`` for ``n_ranks`` agents (networkx)."""
    from . import topology
    g = _graph_inputs(cfg, n_ranks)
    graph = topology.build_graph(g["kind"], n_ranks, seed=g["seed"], directed=g["directed"],
                                 params=g["params"])
    topology.validate_graph(graph, n_ranks)
    return graph


def run_graph(cfg: Config, n_ranks: int):
    """:func:`build_graph` as a :class:`~.topology.LightGraph`, drawn once per host.

    The first task of the host to need it builds it with networkx; the others read its
    verdict, the edge list or the TopologyError, without importing networkx
    (:mod:`mpi_privopt.graph_cache`). An edge-list file is part of the key by its
    contents; one that cannot be read is left to the builder's own message.
    """
    from .graph_cache import cached_graph
    from .topology.light import light_graph
    inputs = _graph_inputs(cfg, n_ranks)

    def build():
        return light_graph(build_graph(cfg, n_ranks))

    if cfg.topology.kind == "file":
        import hashlib
        from pathlib import Path
        try:
            inputs["file_sha256"] = hashlib.sha256(
                Path(cfg.topology.file).expanduser().read_bytes()).hexdigest()
        except OSError:
            return build()  # raises the builder's message naming the file
    return cached_graph(inputs, build)


def check_run_input(config: str | None, overrides: list[str], n_ranks: int):
    """Load ``config`` and check it for ``n_ranks`` agents; returns ``(cfg, graph)``.

    ``graph`` is a :class:`~.topology.LightGraph` (:func:`run_graph`). Raises the
    UserError of the first problem found.
    """
    from .methods import ALGORITHMS
    cfg = load_config(config, overrides)
    method = ALGORITHMS[cfg.algorithm.name]
    method.check_agent_count(n_ranks)
    from .user_modules import check_problem_product
    check_problem_product(cfg.problem, n_ranks, cfg.run.seed)  # your own problem's members
    _build_packaged_aggregative(cfg.problem, n_ranks, cfg.run.seed)
    from .services.checkpoint import refuse_unsaveable
    refuse_unsaveable(cfg)
    graph = run_graph(cfg, n_ranks)
    method.check_graph(cfg, graph)  # e.g. a token schedule's graph needs a Hamiltonian cycle
    return cfg, graph


def _build_packaged_aggregative(problem, n_ranks: int, seed: int) -> None:
    """Build agent 0's objective of a packaged aggregative problem, for its refusals that
    need the data: a split of a real data set that leaves some agent without samples
    (which every agent checks for all of them) is then refused before MPI starts, by
    ``check`` too, and not at set-up once K ranks have started (25 s at 30 ranks)."""
    from .problems.registry import AGGREGATIVE_PROBLEMS, is_aggregative
    if problem.module or not is_aggregative(problem.name):
        return  # a user module's objective: check_problem_product built it
    AGGREGATIVE_PROBLEMS[problem.name](dict(problem.options), 0, n_ranks, seed)


def preload_for_rank_0() -> None:
    """On the launcher's task 0 only, import :data:`RANK_0_LIBRARIES` before MPI starts
    (and :data:`BUDGET_LIBRARIES` for a finite budget: the check's verdict lists them).

    Rank 0 computes what every rank needs once (:func:`mpi_privopt.mpiutil.computed_once`,
    the reference solution) while the others wait in a collective call, testing for it
    every millisecond: with K ranks on a few cores, a second of imports on rank 0 then
    takes several seconds of wall time. Here, before MPI starts, the other tasks of the
    job on task 0's host sleep until task 0 is done
    (:func:`~mpi_privopt.check_verdict.wait_at_gate`), then all start MPI together.
    (Waiting inside ``MPI_Init`` instead, MPICH keeps testing: measured at 50 ranks, a
    task waiting 7 s there used 0.16 s of CPU, about a core for the 49 of them.)
    """
    from .check_verdict import open_gate, wait_at_gate
    from .entrypoint import announced_rank
    if announced_rank(os.environ) == 0:
        import importlib
        for name in RANK_0_LIBRARIES if _preload is None else _preload:
            importlib.import_module(name)
        if _job_key is not None:
            open_gate(_job_key)
    elif _job_key is not None:
        wait_at_gate(_job_key)


def resume_config(run_dir: str, config: str | None, out: str | None,
                  overrides: list[str]) -> tuple[str, str]:
    """The config file and run directory of ``run --resume RUN_DIR`` (no MPI needed).

    Exits 2 with one message (task 0) when the resume line names a config or ``--out``
    (the run's own are used) or sets anything but ``run.iterations``.
    """
    from .errors import ConfigError
    from pathlib import Path
    try:
        if config is not None or out:
            raise ConfigError("run --resume continues a run with its own config and "
                              "directory; a CONFIG or --out cannot be given with it",
                              f"mpi_privopt run --resume {run_dir} [--set run.iterations=N]")
        changed = sorted({o.partition("=")[0].strip() for o in overrides} - {"run.iterations"})
        if changed:
            raise ConfigError(f"a resume may change only run.iterations, not "
                              f"{', '.join(changed)}",
                              "drop those --set options (start a new run to change them)")
        if not (Path(run_dir) / "config.toml").is_file():
            raise ConfigError(f"--resume {run_dir} is not a run directory (no config.toml)",
                              "give the directory a run printed (runs/NAME-TIME-seedS)")
    except ConfigError as err:
        _leave(err)
    return str(Path(run_dir) / "config.toml"), run_dir


def validate_before_mpi(config: str | None, overrides: list[str],
                        resume: str | None = None) -> None:
    """Exit 2 with one message (from the launcher's task 0) if the input is bad.

    The agent count is the one the launcher announced (1 without a launcher); a launcher
    that MPI cannot read is found later, once MPI has started (lone copies). With
    ``resume`` (a run directory) the run's checkpoint must match the config, the graph
    and the agent count. Good input of a new run gets the noise warning and outlook
    (:mod:`mpi_privopt.commands.noise_outlook`), printed once, by task 0.

    The check runs on one task per host and job; the others read its verdict
    (:mod:`mpi_privopt.check_verdict`). This is the one entry of the pre-MPI check:
    whatever a run must refuse before MPI starts belongs in :func:`check_verdict_of`.
    """
    from .entrypoint import announced_rank, announced_size
    n_ranks = announced_size(os.environ)

    def check():
        return check_verdict_of(config, overrides, n_ranks, resume)

    if n_ranks > 1:
        from .check_verdict import announce_task_0, check_key, check_once_per_host
        global _job_key
        _job_key = check_key(config, overrides, n_ranks, resume, os.environ)
        if announced_rank(os.environ) == 0:
            announce_task_0(_job_key)
        verdict = check_once_per_host(_job_key, check)
    else:
        verdict = check()
    if verdict.error is not None:
        _leave(verdict.error)
    global _preload
    _preload = list(verdict.preload)
    if announced_rank(os.environ) == 0:
        for note in verdict.notes:
            print(note, file=sys.stderr, flush=True)


def check_verdict_of(config: str | None, overrides: list[str], n_ranks: int,
                     resume: str | None = None):
    """The pre-MPI check itself, as a :class:`~.check_verdict.Verdict` (a UserError is
    its message: ``error``)."""
    from .check_verdict import Verdict
    from .errors import UserError
    try:
        cfg, graph = check_run_input(config, overrides, n_ranks)
        import math
        preload = [*RANK_0_LIBRARIES,
                   *(BUDGET_LIBRARIES if math.isfinite(cfg.privacy.epsilon) else ())]
        if resume:
            from .services.resume import check_resume_input
            check_resume_input(resume, cfg, graph, n_ranks)
            return Verdict(preload=preload)
        # a schedule that cannot be calibrated is an error too
        from .commands.noise_outlook import prelaunch_notes
        return Verdict(notes=list(prelaunch_notes(config, overrides, cfg)), preload=preload)
    except UserError as err:
        return Verdict(error=str(err))


def _leave(err) -> None:
    """Exit 2, the message printed once (by the launcher's task 0); ``err`` is a UserError
    or its message."""
    from .entrypoint import QUIET_WAIT_SECONDS, announced_rank
    if announced_rank(os.environ) == 0:
        print(f"mpi_privopt: error: {err}", file=sys.stderr, flush=True)
    elif "OMPI_COMM_WORLD_RANK" in os.environ:
        # Open MPI's mpiexec ends the whole job as soon as one task exits non-zero: a
        # quiet task that left first would take task 0 and its message with it. The
        # launcher ends this wait once task 0 has spoken (hydra lets every task finish).
        time.sleep(QUIET_WAIT_SECONDS)
    sys.exit(2)
