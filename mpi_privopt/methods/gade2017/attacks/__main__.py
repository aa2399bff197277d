"""``python -m mpi4py -m mpi_privopt.methods.gade2017.attacks CONFIG --coalition A,B (--target T | --sums) [--set ...]``."""
from __future__ import annotations

import argparse
import json
import sys


def _agents(text: str) -> list[int]:
    return [int(a) for a in text.split(",") if a.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mpi_privopt.methods.gade2017.attacks",
        description="Run a configuration with a coalition of curious agents and score their "
                    "gradient-inversion attack on a target, or (--sums, Function Sharing) "
                    "their attack on the sums of groups of the other agents' objectives "
                    "(under mpiexec, one rank per agent).")
    parser.add_argument("config", nargs="?", default=None,
                        help="a TOML file or a packaged experiment name")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="SECTION.KEY=VALUE", help="override one config value")
    parser.add_argument("--coalition", type=_agents, required=True,
                        help="comma-separated ids of the colluding agents")
    goal = parser.add_mutually_exclusive_group(required=True)
    goal.add_argument("--target", type=int, help="the attacked agent (gradient inversion)")
    goal.add_argument("--sums", action="store_true",
                      help="attack the sum of every strict group of agents outside the "
                           "coalition (fs on polynomial objectives; Gade & Vaidya P2)")
    parser.add_argument("--out", default=None, help="run directory (attack.json goes there)")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    return parser


def main(argv: list[str] | None = None) -> int:
    from mpi_privopt.entrypoint import fail_user, load_agreed_config
    from mpi_privopt.errors import UserError
    from .runner import run_attack
    from .subset_sum_runner import run_subset_sum_attack

    args = build_parser().parse_args(argv)
    try:
        cfg = load_agreed_config(args.config, args.overrides)
        if args.sums:
            report = run_subset_sum_attack(cfg, args.coalition, out=args.out)
        else:
            report = run_attack(cfg, args.coalition, args.target, out=args.out)
    except UserError as err:
        fail_user(err)
    if report is not None and not args.quiet:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
