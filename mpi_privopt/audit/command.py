"""``python -m mpi_privopt audit EXPERIMENT [--link i,j | --all-links] [--target AGENT]
[--trials N | --one-run [--canaries M] [--guesses R]] [--confidence C] [--force] [--out DIR]
[--quiet | --progress]``
(under mpiexec, one rank per agent)."""
from __future__ import annotations

import argparse
from collections.abc import Callable

from ..errors import ConfigError
from ..services.progress import add_progress_arguments, progress_mode
from .verdict import EXIT_STATUS, FAIL, INCONCLUSIVE, PASS


def _link(text: str) -> tuple[int, int]:
    try:
        i, j = (int(a) for a in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--link {text!r} is not two agent ids i,j") from None
    return i, j


#: what ``audit --help`` says last: the verdicts and their exit statuses (.verdict)
EPILOG = f"""verdict (the last line printed) and exit status:
  PASS          {EXIT_STATUS[PASS]}  nothing flagged, and the bound could have exceeded the ledger's
  FAIL          {EXIT_STATUS[FAIL]}  a check flagged something (the bound above the ledger's, a noise
                   test, a shift above the booked sensitivity): a finding
  INCONCLUSIVE  {EXIT_STATUS[INCONCLUSIVE]}  nothing flagged, but the audit could not have failed: even with
                   every trial (or guess) right its bound is not above the ledger's
  bad input     2  one message, nothing run
docs/privacy-audit.md explains each mode and its bounds."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The audit command's options (cli.py adds the config arguments) and its epilog."""
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--link", type=_link, default=None, metavar="I,J",
                       help="audit agent I's releases on the link to J (default: the "
                            "target's smallest neighbour)")
    where.add_argument("--all-links", action="store_true",
                       help="also test the residual noise on every link of the graph")
    parser.add_argument("--target", type=int, default=None,
                        help="the audited agent (default 0, or I of --link)")
    parser.add_argument("--trials", type=int, default=4000,
                        help="independent worlds (default 4000; a multiple of 4)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence of the Clopper-Pearson bounds (default 0.95)")
    parser.add_argument("--force", action="store_true",
                        help="run even with fewer trials than the bound needs")
    parser.add_argument("--out", default=None, help="run directory (audit.json goes there)")
    parser.add_argument("--one-run", action="store_true",
                        help="audit with many canaries in this one run (Steinke, Nasr & "
                             "Jagielski 2023) instead of trials: an epsilon lower bound")
    parser.add_argument("--canaries", type=int, default=None,
                        help="--one-run: canaries, one per feature (default: every feature)")
    parser.add_argument("--guesses", type=int, default=None,
                        help="--one-run: signs guessed (default: planned from the schedule)")
    add_progress_arguments(parser, "no progress line (the report is printed all the same)")


def _progress(args) -> bool | None:
    """The run's progress line: off with --quiet, on with --progress, else None (where a
    person watches)."""
    return {"off": False, "on": True, "auto": None}[progress_mode(args)]


def main(args, cfg) -> int:
    """Audit ``cfg`` (loaded and agreed by the caller) as ``args`` asks; print on rank 0."""
    from mpi4py import MPI

    from .runner import format_report, is_auditable, run_audit

    target = args.target if args.target is not None else (args.link[0] if args.link else 0)
    receiver = None
    if args.link is not None:
        if args.target is not None and args.target != args.link[0]:
            raise ConfigError(f"--target {args.target} and --link {args.link[0]},"
                              f"{args.link[1]} name different agents",
                              "the audited agent is the link's sender: drop --target")
        receiver = args.link[1]
    if not 0 < args.confidence < 1:
        raise ConfigError(f"--confidence {args.confidence} must be in (0, 1)",
                          "e.g. --confidence 0.95")
    comm = MPI.COMM_WORLD
    if not is_auditable(cfg):
        return _unbounded(cfg, target, receiver, args, comm)
    if args.one_run:
        return _one_run(cfg, target, receiver, args, comm)
    report = run_audit(cfg, target=target, receiver=receiver, all_links=args.all_links,
                       trials=args.trials, confidence=args.confidence, force=args.force,
                       out=args.out, comm=comm, progress=_progress(args))
    return _leave(_announce(comm, report, format_report, "audit.json"))


def _announce(comm, report: dict | None, formatted: Callable[[dict], str], file: str) -> str:
    """Print the report (rank 0 holds it) and give every rank its verdict.

    Through :func:`~mpi_privopt.mpiutil.computed_once`, so that a failure while rank 0
    formats the report reaches every rank as one error instead of leaving the others
    waiting for the verdict.
    """
    from ..mpiutil import computed_once

    def show() -> str:
        print(formatted(report))
        print(f"{file} in {report['run_dir']}")
        return report["verdict"]
    return computed_once(comm, show)


def _leave(verdict: str) -> int:
    """The verdict's exit status (:data:`~.verdict.EXIT_STATUS`); every rank knows the
    verdict, so a non-zero status ends the job cleanly, with no MPI_Abort banner."""
    from ..entrypoint import leave_together

    status = EXIT_STATUS[verdict]
    if status:
        leave_together(status)
    return status


def _unbounded(cfg, target: int, receiver: int | None, args, comm) -> int:
    """A non-private run: its loss is unbounded; run the attack on it instead."""
    from ..mpiutil import agree
    from ..engine import build_graph
    from ..methods import ALGORITHMS, attack_on, attacked_methods

    def private_methods() -> list[str]:
        return [n for n in ALGORITHMS if ALGORITHMS[n].private]

    name = cfg.algorithm.name
    unbounded = (f"{name} sends its values without differential-privacy noise: its privacy "
                 f"loss is unbounded (privacy.json says inf), so there is no bound to audit")

    def check() -> None:
        if attack_on(name) is None:
            raise ConfigError(f"{unbounded}, and there is no attack for it to run instead",
                              f"attack one of: {', '.join(attacked_methods())}; or audit a "
                              f"private method ({', '.join(private_methods())})")
    agree(comm, check)
    if comm.Get_rank() == 0:
        print(f"mpi_privopt: {unbounded}; running the curious-neighbour attack instead",
              flush=True)
    if receiver is None:
        receiver = min(build_graph(cfg, comm.Get_size()).neighbors(target))
    report = attack_on(name)(cfg, [receiver], target, out=args.out, comm=comm,
                        progress=_progress(args))
    if report is not None:
        print(f"attack by agent {receiver} on agent {target}: gradient relative error "
              f"{report['gradient_relative_error']:.3g}, exact recovery: {report['exact']}")
    return 0


def _one_run(cfg, target: int, receiver: int | None, args, comm) -> int:
    """``--one-run``: the canaries' epsilon lower bound against the ledger's."""
    from .one_run_runner import format_one_run, run_one_run_audit

    report = run_one_run_audit(cfg, target=target, receiver=receiver,
                               canaries=args.canaries, guesses=args.guesses,
                               confidence=args.confidence, out=args.out, comm=comm,
                               progress=_progress(args))
    return _leave(_announce(comm, report, format_one_run, "one-run-audit.json"))
