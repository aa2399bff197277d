"""``python -m mpi_privopt privacy {epsilon, calibrate, coalition}``: accounting by hand.

These commands need no MPI: they answer "what does this noise cost?", "what noise meets
this budget?" and "what did this coalition learn in that run?".
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from ..errors import ConfigError
from ..privacy.accountants import GaussianEvent, LaplaceEvent, epsilon_all
from ..privacy.calibration import (ZCDP_CONVERSIONS, calibrate_gaussian_noise,
                                   calibrate_zcdp_total)
from ..privacy.report import coalition_epsilon


def _floats(text: str, name: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--{name} {text!r} is not a number or a comma-separated list",
                          f"write e.g. --{name} 2.5 or --{name} 1,2,4") from None
    if not values:
        raise ConfigError(f"--{name} is empty", f"give --{name} a number")
    return values


def _per_round(values: list[float], rounds: int | None, name: str) -> list[float]:
    if len(values) == 1:
        return values * (rounds or 1)
    if rounds is not None and rounds != len(values):
        raise ConfigError(f"--{name} lists {len(values)} rounds but --rounds is {rounds}",
                          "drop --rounds, or give one value per round")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="privacy_command", required=True)

    p = sub.add_parser("epsilon", help="epsilon of T releases of a mechanism, by each conversion")
    p.add_argument("--mechanism", choices=("gaussian", "laplace"), default="gaussian")
    p.add_argument("--sigma", help="Gaussian noise std (one value, or one per round: 1,2,4)")
    p.add_argument("--scale", help="Laplace scale b (one value, or one per round)")
    p.add_argument("--sensitivity", default="1", help="sensitivity (l2 Gaussian, l1 Laplace)")
    p.add_argument("--rounds", type=int, default=None, help="number of releases T")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(privacy_func=cmd_epsilon)

    p = sub.add_parser("calibrate", help="noise per round that meets an (epsilon, delta) budget")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--schedule", default="constant",
                   help="constant, geometric (zCDP-NFL's phi^(n) = phi^(1) tau^-(n-1)), or a "
                        "comma-separated list of per-round weights of the zCDP budget")
    p.add_argument("--tau", type=float, default=None, help="geometric schedule's ratio in (0, 1]")
    p.add_argument("--conversion", choices=ZCDP_CONVERSIONS, default="tight",
                   help="zCDP -> (eps, delta) conversion the budget is met under")
    p.add_argument("--json", action="store_true")
    p.set_defaults(privacy_func=cmd_calibrate)

    p = sub.add_parser("coalition", help="epsilon of one agent against a coalition, from a run")
    p.add_argument("run_dir", help="a run directory holding privacy.json")
    p.add_argument("--agent", type=int, required=True)
    p.add_argument("--observers", required=True, help="comma-separated agent ids")
    p.add_argument("--json", action="store_true")
    p.set_defaults(privacy_func=cmd_coalition)


def _print_json(data: dict) -> None:
    print(json.dumps(data, indent=2))


def cmd_epsilon(args) -> int:
    if args.mechanism == "gaussian":
        if args.sigma is None:
            raise ConfigError("--mechanism gaussian needs --sigma", "give the noise std, e.g. --sigma 4")
        sigmas = _per_round(_floats(args.sigma, "sigma"), args.rounds, "sigma")
        sens = _per_round(_floats(args.sensitivity, "sensitivity"), len(sigmas), "sensitivity")
        events = [GaussianEvent(d, s) for d, s in zip(sens, sigmas)]
    else:
        if args.scale is None:
            raise ConfigError("--mechanism laplace needs --scale", "give the scale b, e.g. --scale 10")
        scales = _per_round(_floats(args.scale, "scale"), args.rounds, "scale")
        sens = _per_round(_floats(args.sensitivity, "sensitivity"), len(scales), "sensitivity")
        events = [LaplaceEvent(d, b) for d, b in zip(sens, scales)]
    result = epsilon_all(events, args.delta)
    result["rounds"] = len(events)
    if args.json:
        _print_json(result)
        return 0
    print(f"{len(events)} {args.mechanism} release(s), delta = {args.delta:g}, "
          f"total zCDP rho = {result['rho']:.6g}")
    rows = [("pure", "pure epsilon (sum of D/b)"),
            ("pld", "privacy loss distributions (dp-accounting; Laplace releases)"),
            ("exact", "exact Gaussian composition (Gaussian DP)"),
            ("tight", "zCDP, tight conversion (Canonne-Kamath-Steinke)"),
            ("standard", "zCDP, standard conversion (Bun-Steinke)"),
            ("rdp", "RDP on dp-accounting's order grid")]
    for key, label in rows:
        if result.get(key) is not None:
            print(f"  {key:<9} {result[key]:.10g}   {label}")
    return 0


def cmd_calibrate(args) -> int:
    schedule: str | list[float] = args.schedule
    if schedule not in ("constant", "geometric"):
        schedule = _floats(schedule, "schedule")
    if schedule == "geometric" and args.tau is None:
        raise ConfigError("--schedule geometric needs --tau", "give the ratio, e.g. --tau 0.99")
    multipliers = calibrate_gaussian_noise(args.epsilon, args.delta, args.rounds, schedule,
                                           args.tau, args.conversion)
    rho = calibrate_zcdp_total(args.epsilon, args.delta, args.conversion)
    # Check the answer by accounting for it forward, sensitivity 1.
    check = epsilon_all([GaussianEvent(1.0, float(m)) for m in multipliers], args.delta)
    result = {"epsilon": args.epsilon, "delta": args.delta, "rounds": len(multipliers),
              "conversion": args.conversion, "rho_total": rho,
              "noise_multipliers": multipliers.tolist(),
              "epsilon_check": check[args.conversion if args.conversion != "exact" else "exact"]}
    if args.json:
        _print_json(result)
        return 0
    print(f"budget epsilon = {args.epsilon:g} at delta = {args.delta:g} over "
          f"{len(multipliers)} rounds ({args.conversion} conversion): total zCDP rho = {rho:.6g}")
    print("noise multiplier sigma_n / Delta_n (multiply by each round's l2 sensitivity):")
    shown = list(enumerate(multipliers, 1))
    if len(shown) > 8:
        shown = shown[:4] + [None] + shown[-3:]
    for item in shown:
        print("  ..." if item is None else f"  round {item[0]:>5}: {item[1]:.6g}")
    print(f"check: these releases cost epsilon = {result['epsilon_check']:.10g}")
    return 0


def cmd_coalition(args) -> int:
    path = Path(args.run_dir) / "privacy.json"
    if not path.is_file():
        raise ConfigError(f"{path} does not exist", "give a run directory of mpi_privopt run")
    report = json.loads(path.read_text())
    K = len(report["agents"])
    observers = [int(v) for v in _floats(args.observers, "observers")]
    for who in [args.agent, *observers]:
        if not 0 <= who < K:
            raise ConfigError(f"agent {who} is not in this run (agents 0..{K - 1})",
                              "give ids from 0 to K-1")
    eps = coalition_epsilon(report, args.agent, observers)
    # Observers that received nothing of the agent's data (not its neighbours, for methods
    # that send only to neighbours) add nothing: say so, or a 0 reads as a claim about them.
    seen = {int(j) for group in report["agents"][args.agent]["groups"]
            for j in group["receivers"]}
    unseen = [j for j in observers if j not in seen]
    result = {"agent": args.agent, "observers": observers, "delta": report["delta"], **eps,
              "observers_that_received_nothing": unseen}
    if args.json:
        _print_json(result)
        return 0
    shown = "inf (unbounded)" if math.isinf(eps["best"]) else f"{eps['best']:.6g}"
    print(f"agent {args.agent} against observers {observers}: epsilon = {shown} "
          f"at delta {report['delta']:g} ({eps['conversion']} conversion)")
    if unseen:
        print(f"  observers {unseen} received no message carrying agent {args.agent}'s data "
              "(not its neighbours), so they add nothing; what they may learn from their "
              "own neighbours is post-processing of releases already counted on agent "
              f"{args.agent}'s links")
    return 0


def main(args) -> int:
    return args.privacy_func(args)
