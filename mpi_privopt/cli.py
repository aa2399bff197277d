"""Command line: ``python -m mpi_privopt {run, check, list, bench, privacy, report, audit, reproduce}``.

Launch runs under MPI, one rank per agent::

    mpiexec -n 8 python -m mpi4py -m mpi_privopt run [CONFIG] [--set section.key=value] [--out DIR]

(``-m mpi4py`` makes an unexpected exception on one rank abort the whole job instead of
leaving the others waiting.) Bad input prints one message naming what is wrong and how to
fix it, and every rank exits with status 2. ``run --resume RUN_DIR`` continues a run from
its last checkpoint (mpi_privopt/services/resume.py); a run stopped by SIGTERM/SIGINT exits
128 + the signal with one line saying so.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import sys
import traceback

from .config import DEFAULT_EXPERIMENT
from .entrypoint import (announced_rank, fail_user, leave_on_early_interrupt,
                         leave_together, load_agreed_config)
from .errors import ConfigError, UserError


def _add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", default=DEFAULT_EXPERIMENT,
                        help="a TOML file or a packaged experiment name (default: 'default', "
                             "zCDP-NFL on elastic net)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="SECTION.KEY=VALUE",
                        help="override one config value (repeatable), e.g. --set run.iterations=50")


def cmd_run(args) -> int:
    from . import entrypoint
    from .mpi_start import start_mpi
    from .prelaunch import resume_config, validate_before_mpi
    entrypoint.EARLY_INTERRUPT = "before the first iteration: nothing was run"
    # the run parser leaves CONFIG unset (None) so that a resume can tell "default" typed
    # by the user, which it refuses, from no CONFIG at all
    config, out = args.config or DEFAULT_EXPERIMENT, args.out
    if args.resume:  # the run's own config and directory (checked before MPI starts)
        config, out = resume_config(args.resume, args.config, args.out, args.overrides)
    validate_before_mpi(config, args.overrides, resume=args.resume)  # bad input: exit 2
    start_mpi()  # the imports, task 0's preload, then MPI_Init on every task together
    from .engine import run
    cfg = load_agreed_config(config, args.overrides)
    _note_single_agent()
    # leaving: SIGTERM/SIGINT stay held from the end of the loop until the process
    # leaves, so a run whose summary says completed exits 0 (mpi_privopt/run_commit.py)
    result = run(cfg, out=out, stream=None if args.quiet else sys.stdout,
                 progress=progress_choice(args), resume=bool(args.resume), leaving=True)
    if args.quiet and result is not None:
        print(result.run_dir)  # quiet, but a run always says where its results are
    from mpi4py import MPI
    status = MPI.COMM_WORLD.bcast(result.summary.status if result is not None else None)
    if status == "interrupted":
        return _interrupted(result)
    if status == "diverged":
        # finished (run.on_divergence = "record"), but never a success
        if result is not None:
            print(f"mpi_privopt: the run diverged at iteration "
                  f"{result.summary.diverged_at_iteration} (agents "
                  f"{', '.join(map(str, result.summary.diverged_agents))}); its results are "
                  f"in {result.run_dir}", file=sys.stderr, flush=True)
        # every rank knows (the status above): leave together, so that `python -m
        # mpi4py` does not make each rank call MPI_Abort on a non-zero exit
        leave_together(3)
    return 0


def progress_choice(args) -> bool | None:
    """The stderr progress line: off with --quiet, on with --progress, else None (the
    config's run.progress decides; "auto": when a person watches, mpi_privopt/watching.py)."""
    if args.quiet:
        return False
    return True if args.progress else None


def _wait_policies(text: str) -> str:
    """``bench --wait``: known exchange wait policies, each once (checked here, before
    MPI starts: network.EXCHANGE_WAITS names the same two)."""
    policies = text.split(",")
    unknown = [p for p in policies if p not in ("backoff", "poll")]
    if unknown or len(set(policies)) != len(policies):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give backoff and/or poll, comma-separated, each once")
    return text


def _interrupted(result) -> int:
    """One line (rank 0) saying how to continue; the status says which signal (128 + N)."""
    import signal
    from mpi4py import MPI
    from .services.checkpoint_files import resume_command
    signum = MPI.COMM_WORLD.bcast(
        int(signal.Signals[result.summary.stop_signal]) if result is not None else None)
    if result is not None:
        s = result.summary
        print(f"mpi_privopt: interrupted by {s.stop_signal} after iteration "
              f"{s.stopped_at_iteration} of {s.iterations} (checkpoint written); continue "
              f"with: {resume_command(result.run_dir, s.ranks)}", file=sys.stderr, flush=True)
    # Every rank leaves together and cleanly: MPI is finalised first, so that a non-zero
    # exit under `python -m mpi4py` does not make each rank call MPI_Abort; the exit is
    # a normal one (sys.exit, not os._exit: measured with MPICH's hydra, ranks leaving
    # through os._exit after MPI_Finalize made it kill the others and report 9 in about
    # half the runs, sys.exit in none of 16).
    sys.stdout.flush()
    MPI.Finalize()
    sys.exit(128 + signum)


def _note_single_agent() -> None:
    """Say so when a run has one agent: usually `run` was started without mpiexec."""
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_size() == 1:
        print("mpi_privopt: note: one agent (a single process: not started by mpiexec or "
              "srun with several tasks); it runs alone with no neighbours. For a "
              "decentralized run start K agents: mpiexec -n K python -m mpi4py -m "
              "mpi_privopt run ...", file=sys.stderr, flush=True)


def cmd_check(args) -> int:
    from . import problems
    import numpy as np

    from . import display
    from .commands.noise_outlook import prelaunch_notes
    from .prelaunch import check_run_input
    if args.ranks < 1:
        raise ConfigError(f"--ranks {args.ranks}: a run has at least one agent",
                          f"give the number of ranks the job will start, e.g. --ranks "
                          f"{DEFAULT_CHECK_RANKS}")
    from .topology import describe

    from .methods import ALGORITHMS

    cfg, graph = check_run_input(args.config, args.overrides, args.ranks)
    from .problems.registry import is_aggregative  # its builder holds its data: no rows
    data = [] if is_aggregative(cfg.problem.name) else [
        problems.load_agent_data(cfg.problem, agent, args.ranks, cfg.run.seed)
        for agent in range(args.ranks)]
    counts = [len(y) for _, y in data]
    # what a method can refuse only once it sees the graph and the data (a token schedule)
    ALGORITHMS[cfg.algorithm.name].check_setup(cfg, graph, counts)
    # a schedule that cannot be calibrated (overflows over T) is refused here; the noise
    # warning and outlook (commands/noise_outlook.py), as run prints them before MPI
    notes = prelaunch_notes(args.config, args.overrides, cfg,
                            max([1.0] + [float(np.abs(a).max()) for d in data
                                         for a in d if a.size]))
    info = describe(graph)
    print(f"config {cfg.source}: OK for {args.ranks} ranks")
    params = {k: v for k, v in cfg.to_dict()["algorithm"].items() if k != "name"}
    print(f"  algorithm  {cfg.algorithm.name}"
          + (f"  ({display.mapping(params)})" if params else ""))
    source = (f"preset {cfg.problem.preset or 'gade2017'}" if cfg.problem.name == "polynomial"
              else f"module {cfg.problem.module}" if cfg.problem.module
              else f"data {cfg.problem.data}" if cfg.problem.data
              else f"dataset {cfg.problem.options['dataset']}"
              if "dataset" in cfg.problem.options else "synthetic data")
    print(f"  problem    {cfg.problem.name}  ({source})")
    print(f"  topology   {cfg.topology.kind}: {info['nodes']} nodes, {info['edges']} edges, "
          f"degree {info['min_degree']}..{info['max_degree']} "
          f"(mean {display.number(info['average_degree'])})")
    print(f"  run        {cfg.run.iterations} iterations, seed {cfg.run.seed}")
    for note in notes:
        print(note, file=sys.stderr, flush=True)
    print(f"launch with: mpiexec -n {args.ranks} python -m mpi4py -m mpi_privopt run "
          + " ".join(shlex.quote(word) for word in
                     [args.config, *(f for o in args.overrides for f in ("--set", o))]))
    return 0


def cmd_list(args) -> int:
    from . import display
    from .methods import ALGORITHMS
    from .config import packaged_experiments
    from .problems import PROBLEMS
    from .topology import TOPOLOGIES

    print("algorithms (algorithm.name):")
    for name in sorted(ALGORITHMS):
        cls = ALGORITHMS[name]
        print(f"  {name:<16} {cls.summary}")
    print("topologies (topology.kind):")
    print("  " + ", ".join(TOPOLOGIES))
    print("problems (problem.name):")
    from .problems.registry import AGGREGATIVE_PROBLEMS
    width = max(16, *(len(name) + 1 for name in (*PROBLEMS, *AGGREGATIVE_PROBLEMS)))
    for name, spec in PROBLEMS.items():
        print(f"  {name:<{width}} loss {spec.loss.name}, l1 {display.exact(spec.l1)}, "
              f"l2 {display.exact(spec.l2)}")
    from .problems.consensus.polynomial_presets import PRESETS
    print(f"  {'polynomial':<{width}} polynomial objectives, problem.preset: "
          f"{', '.join(PRESETS)}")
    for name in AGGREGATIVE_PROBLEMS:
        print(f"  {name:<{width}} an aggregative objective, for the *-aggregative methods "
              "(options in [problem.options], docs/config.md)")
    print("packaged experiments (run by name):")
    print("  " + ", ".join(packaged_experiments()))
    from .reproduce import available
    print("paper reproductions (reproduce NAME):")
    print("  " + (", ".join(available()) or "none yet"))
    return 0


def cmd_bench(args) -> int:
    from .bench import main as bench_main
    from .entrypoint import refuse_lone_copies
    from .services.progress import progress_mode
    refuse_lone_copies()
    args.progress_mode = progress_mode(args)
    return bench_main(args)


def cmd_privacy(args) -> int:
    from .commands.privacy import main as privacy_main
    return privacy_main(args)


def cmd_doctor(args) -> int:
    from .commands.doctor import main as doctor_main
    return doctor_main(args)


def cmd_report(args) -> int:
    from .report import main as report_main
    return report_main(args)


def cmd_audit(args) -> int:
    from .audit.command import main as audit_main
    cfg = load_agreed_config(args.config, args.overrides)
    return audit_main(args, cfg)


def cmd_reproduce(args) -> int:
    from .reproduce import run as reproduce_run
    flags = ["--quiet"] * args.quiet + ["--progress"] * args.progress  # given before NAME
    return reproduce_run(args.name, flags + args.options)


#: bench's --help: what it does and how long the defaults take (measured once: docs/usage.md)
BENCH_DESCRIPTION = (
    "Time the Network layer against raw mpi4py under mpiexec: one neighbour exchange "
    "four ways per payload size, every link's latency and bandwidth, and the registered "
    "dgd against a hand-written one (docs/performance.md). The defaults take about 4 "
    "minutes under mpiexec -n 2 on a 2-core machine (measured once: 3 min 44 s, the machine "
    "shared with other jobs); more ranks than cores take longer. Rank 0 shows a progress "
    "line with the time remaining on stderr where a person watches (docs/usage.md).")


#: ``check``'s agent count when --ranks is not given: what ./launch/local.sh starts
DEFAULT_CHECK_RANKS = 8

#: the subcommands whose arguments come from modules that import scipy (privacy, audit) or
#: many modules (reproduce): they are added only when that subcommand is the one asked for
HEAVY_COMMANDS = ("privacy", "audit", "reproduce")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser.

    ``command``: the subcommand about to be parsed (the first argument that is not an
    option), or None for all. Every subcommand is listed either way, but the arguments of
    :data:`HEAVY_COMMANDS` are added only for that subcommand or for None: building them
    imports scipy and the audit and reproduction modules, about 0.9 s of CPU that each of
    a ``run``'s K ranks would pay (docs/performance.md, section 8).
    """
    def wanted(name: str) -> bool:
        return command is None or command == name

    parser = argparse.ArgumentParser(
        prog="mpi_privopt",
        description="Private decentralized optimization on MPI (one rank per agent).")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run an experiment (under mpiexec, one rank per agent)")
    _add_config_args(p)
    p.set_defaults(config=None)
    p.add_argument("--out", default=None, help="run directory (default: runs/NAME-TIME-seedS)")
    p.add_argument("--quiet", action="store_true",
                   help="print only the run directory, no progress or summary")
    p.add_argument("--progress", action="store_true",
                   help="show the progress line on stderr even in a log (it is shown "
                        "anyway where a person watches; run.progress in the config)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="continue the run in RUN_DIR from its last checkpoint (with its "
                        "config; only --set run.iterations=N may change, to extend it)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("check", help="validate a config for K ranks without running it")
    _add_config_args(p)
    p.add_argument("--ranks", type=int, default=DEFAULT_CHECK_RANKS,
                   help=f"the number of ranks (agents); default {DEFAULT_CHECK_RANKS}, as "
                        "./launch/local.sh runs")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("list", help="list algorithms, topologies, problems and experiments")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("bench", help="time Network against raw mpi4py (under mpiexec)",
                       description=BENCH_DESCRIPTION)
    p.add_argument("--sizes", default="8,100,1000,10000,100000,1000000",
                   help="payload sizes in doubles, comma-separated")
    p.add_argument("--repeats", type=int, default=0,
                   help="exchanges per size (0: chosen per size)")
    p.add_argument("--iterations", type=int, default=5000,
                   help="iterations for the DGD comparison")
    p.add_argument("--topology", default="ring", help="graph for the bench (topology.kind)")
    p.add_argument("--wait", default="backoff", type=_wait_policies,
                   help="exchange wait policies, comma-separated (backoff, poll): the "
                        "package's variants run once per policy, compared in part 4")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    from .services.progress import add_progress_arguments
    add_progress_arguments(p, "no progress line (the results are printed all the same)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("privacy", help="privacy accounting: epsilon, calibrate, coalition, amplification")
    if wanted("privacy"):
        from .commands.privacy import add_arguments as add_privacy_arguments
        add_privacy_arguments(p)
    p.set_defaults(func=cmd_privacy)

    p = sub.add_parser("doctor", help="the MPI library mpi4py loaded and whether the "
                                      "launcher on PATH belongs to it")
    p.add_argument("--remove-left-shm", action="store_true",
                   help="remove the shared-memory segments that stopped MPI jobs left in "
                        "/dev/shm (those of this user that no process uses)")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("report", help="accuracy curve, bytes and privacy per link of a run")
    p.add_argument("run_dir", help="a run directory")
    p.add_argument("--png", default=None, help="also draw the three panels to this PNG file")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("audit", help="empirical privacy audit of a link: a lower bound "
                                     "on mu against the ledger's (under mpiexec)")
    _add_config_args(p)
    if wanted("audit"):
        from .audit.command import add_arguments as add_audit_arguments
        add_audit_arguments(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("reproduce", add_help=False,
                       help="reproduce a paper's experiments (reproduce --help lists them)",
                       description="Reproduce a paper's experiments: figures (PNG) with the "
                                   "CSV behind each; most launch mpiexec themselves.")
    if wanted("reproduce"):
        from .reproduce import add_arguments as add_reproduce_arguments
        add_reproduce_arguments(p)
    p.set_defaults(func=cmd_reproduce)
    return parser


#: the subcommands (a first word that is none of them gets the full parser's message)
_COMMANDS = ("run", "check", "list", "bench", "privacy", "doctor", "report", "audit",
             "reproduce")


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m mpi_privopt`` and ``mpi-privopt``."""
    if argv is None:  # the program (a caller passing argv keeps its own SIGINT handling)
        leave_on_early_interrupt()  # Ctrl-C before a run's loop: one line, no rank waiting
    words = sys.argv[1:] if argv is None else list(argv)
    command = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(command if command in _COMMANDS else None)
    if announced_rank(os.environ) == 0:
        args = parser.parse_args(argv)
    else:
        # a usage error or --help under mpiexec: task 0 alone prints it (once, not K
        # times); every task exits with argparse's status all the same
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            args = parser.parse_args(argv)
    from .display import install_warning_format
    install_warning_format()  # a warning is one line for a person, not a file:line
    try:
        code = args.func(args)
    except BrokenPipeError:
        # the reader went away (``... | head``): nothing more to say, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except UserError as err:
        fail_user(err)
    except Exception:
        traceback.print_exc()
        from .mpiutil import abort_others
        abort_others(1)
        raise
    sys.exit(code)
