"""Checks of a run's input that need no MPI: the config, the agent count and the graph.

``check CONFIG --ranks K`` runs them for K; ``run`` runs them before MPI starts, with the
world size the launcher announced in the environment (``PMI_SIZE``, ``OMPI_COMM_WORLD_SIZE``,
...). Why before: once MPI has started, ranks that all find the same bad input and exit 2
race the launcher's clean-up, which sometimes kills the slower ones and reports status 9
with a banner. A process that has not started MPI just exits 2, and so does the job.

The graph is drawn by one task per host; the others read its verdict, the edge list or
the error, without importing networkx (:func:`run_graph`, :mod:`mpi_privopt.graph_cache`).

Nothing here imports mpi4py (a test checks it).
"""
from __future__ import annotations

import os
import sys
import time

from .config import Config, load_config

__all__ = ["build_graph", "check_run_input", "preload_for_rank_0", "resume_config",
           "run_graph", "validate_before_mpi"]

#: what rank 0 alone computes for everyone (reference solve, calibrations, the end-of-run
#: epsilon conversions) and the other ranks do not import at all
RANK_0_LIBRARIES = ("scipy.optimize", "scipy.special")


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
    from .services.checkpoint import refuse_unsaveable
    refuse_unsaveable(cfg)
    graph = run_graph(cfg, n_ranks)
    method.check_graph(cfg, graph)  # e.g. a token schedule's graph needs a Hamiltonian cycle
    return cfg, graph


def preload_for_rank_0() -> None:
    """On the launcher's task 0 only, import :data:`RANK_0_LIBRARIES` before MPI starts.

    Rank 0 computes what every rank needs once (:func:`mpi_privopt.mpiutil.computed_once`,
    the reference solution) while the others wait in a collective call, and an MPI wait
    polls: with K ranks on a few cores, a second of imports on rank 0 then takes many
    seconds of wall time. Before MPI starts the others wait in the launcher's barrier
    without using a core.
    """
    from .entrypoint import announced_rank
    if announced_rank(os.environ) == 0:
        import importlib
        for name in RANK_0_LIBRARIES:
            importlib.import_module(name)


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
    """
    from .entrypoint import announced_rank, announced_size
    from .errors import UserError
    notes: list[str] = []
    try:
        cfg, graph = check_run_input(config, overrides, announced_size(os.environ))
        if resume:
            from .services.resume import check_resume_input
            check_resume_input(resume, cfg, graph, announced_size(os.environ))
        else:  # every task computes them (a schedule that cannot be calibrated: all leave)
            from .commands.noise_outlook import prelaunch_notes
            notes = prelaunch_notes(config, overrides, cfg)
    except UserError as err:
        _leave(err)
    if announced_rank(os.environ) == 0:
        for note in notes:
            print(note, file=sys.stderr, flush=True)


def _leave(err) -> None:
    """Exit 2, the message printed once (by the launcher's task 0)."""
    from .entrypoint import QUIET_WAIT_SECONDS, announced_rank
    if announced_rank(os.environ) == 0:
        print(f"mpi_privopt: error: {err}", file=sys.stderr, flush=True)
    elif "OMPI_COMM_WORLD_RANK" in os.environ:
        # Open MPI's mpiexec ends the whole job as soon as one task exits non-zero: a
        # quiet task that left first would take task 0 and its message with it. The
        # launcher ends this wait once task 0 has spoken (hydra lets every task finish).
        time.sleep(QUIET_WAIT_SECONDS)
    sys.exit(2)
