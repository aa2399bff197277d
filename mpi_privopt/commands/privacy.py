"""``python -m mpi_privopt privacy {epsilon, calibrate, coalition, amplification}``: accounting by hand.

These commands need no MPI: they answer "what does this noise cost?", "what noise meets
this budget?", "what did this coalition learn in that run?" and "what is a noisy ADMM
iteration worth k iterations later?" (amplification by iteration, Chan, Xie & Zhao 2023).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from .. import display
from ..errors import ConfigError
from ..privacy.accountants import GaussianEvent, LaplaceEvent, epsilon_all
from ..privacy.amplification import (AmplificationConstants, bound_applies, booked_bound,
                                     local_rho, midpoint_eta)
from ..privacy.amplification_curves import CURVE_VARIANTS, amplification_curve, first_amplified_k
from ..privacy.conversions import zcdp_to_eps_tight
from ..privacy.calibration import (ZCDP_CONVERSIONS, calibrate_gaussian_noise,
                                   calibrate_zcdp_total, check_rounds)
from ..privacy.report import coalition_epsilon


def _listed(text: str, name: str, parse=float, what: str = "a number",
            example: str = "2.5") -> list:
    """The comma-separated values of option ``--name``, each read by ``parse``."""
    try:
        values = [parse(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--{name} {text!r} is not {what} or a comma-separated list",
                          f"write e.g. --{name} {example} or --{name} 1,2,4") from None
    if not values:
        raise ConfigError(f"--{name} is empty", f"give --{name} {what}")
    return values


def _floats(text: str, name: str) -> list[float]:
    return _listed(text, name)


def _agent_ids(text: str, name: str) -> list[int]:
    return _listed(text, name, int, "an agent id", "2")


def _per_round(values: list[float], rounds: int | None, name: str) -> list[float]:
    if rounds is not None:
        check_rounds(rounds, "rounds")
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

    p = sub.add_parser("amplification",
                       help="zCDP of a noisy ADMM iteration seen k iterations later (Chan, Xie & Zhao 2023)")
    p.add_argument("--eta", type=float, default=None,
                   help="step size (default: the midpoint of interval (23), needs --mu and --mu-g)")
    p.add_argument("--beta", type=float, required=True, help="augmented-Lagrangian penalty")
    p.add_argument("--nu", type=float, required=True, help="smoothness of every record's f")
    p.add_argument("--mu", type=float, default=0.0, help="strong convexity of every f (0: none)")
    p.add_argument("--mu-g", type=float, default=0.0, help="strong convexity of g (0: none)")
    p.add_argument("--norm-A", type=float, default=1.0, help="||A|| (1 for A = I)")
    p.add_argument("--norm-AtB", type=float, default=1.0, help="||A^T B|| (1 for A = I, B = -I)")
    p.add_argument("--sigma", type=float, required=True, help="noise std added to x per iteration")
    p.add_argument("--radius", type=float, required=True,
                   help="Delta, the replace-one radius of Def. 3.3 (2 x clip for clipped gradients)")
    p.add_argument("--k", default="0,1,2,4,8,12,16,32,64,128",
                   help="iterations after the record's use (comma-separated)")
    p.add_argument("--bound", choices=("convex", "strongly-convex", "local"), default="convex",
                   help="the bound a run would book (the table shows every variant)")
    p.add_argument("--exponent", choices=("paper", "conservative", "precise", "precise-paper"),
                   default="conservative", help="strongly convex exponent a run would book")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of the epsilon column")
    p.add_argument("--json", action="store_true")
    p.set_defaults(privacy_func=cmd_amplification)


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
    print(f"{len(events)} {args.mechanism} release(s), delta = {display.exact(args.delta)}, "
          f"total zCDP rho = {display.loss(result['rho'])}")
    rows = [("pure", "pure epsilon (sum of D/b)"),
            ("pld", "privacy loss distributions (dp-accounting; Laplace releases)"),
            ("exact", "exact Gaussian composition (Gaussian DP)"),
            ("tight", "zCDP, tight conversion (Canonne-Kamath-Steinke)"),
            ("standard", "zCDP, standard conversion (Bun-Steinke)"),
            ("rdp", "RDP on dp-accounting's order grid")]
    for key, label in rows:
        if result.get(key) is not None:
            print(f"  {key:<9} {display.loss(result[key]):<9} {label}")
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
    print(f"budget epsilon = {display.exact(args.epsilon)} at delta = "
          f"{display.exact(args.delta)} over {len(multipliers)} rounds "
          f"({args.conversion} conversion): total zCDP rho = {display.loss(rho)}")
    # rounded up: more noise than calibrated, never less (--json gives the exact values)
    print("noise multiplier sigma_n / Delta_n (multiply by each round's l2 sensitivity; "
          "rounded up):")
    shown = list(enumerate(multipliers, 1))
    if len(shown) > 8:
        shown = shown[:4] + [None] + shown[-3:]
    for item in shown:
        print("  ..." if item is None else f"  round {item[0]:>5}: {display.loss(item[1])}")
    print(f"check: these releases cost epsilon = {display.loss(result['epsilon_check'])}")
    return 0


def cmd_coalition(args) -> int:
    path = Path(args.run_dir) / "privacy.json"
    if not path.is_file():
        raise ConfigError(f"{path} does not exist", "give a run directory of mpi_privopt run")
    report = json.loads(path.read_text())
    K = len(report["agents"])
    observers = _agent_ids(args.observers, "observers")
    for who in [args.agent, *observers]:
        if not 0 <= who < K:
            raise ConfigError(f"agent {who} is not in this run (agents 0..{K - 1})",
                              "give ids from 0 to K-1")
    if args.agent in observers:
        raise ConfigError(f"--observers names agent {args.agent} itself, whose data the "
                          "loss is about", f"leave {args.agent} out of --observers")
    eps = coalition_epsilon(report, args.agent, observers)
    # Observers that received nothing of the agent's data (not its neighbours, for methods
    # that send only to neighbours) add nothing: say so, or a 0 reads as a claim about them.
    seen = {int(j) for group in report["agents"][args.agent]["groups"]
            for j in group["receivers"]}
    unseen = [j for j in observers if j not in seen]
    label = report.get("epsilon_label")  # the run's epsilons are not a proven bound
    result = {"agent": args.agent, "observers": observers, "delta": report["delta"], **eps,
              "observers_that_received_nothing": unseen,
              **({"epsilon_label": label} if label else {})}
    if args.json:
        _print_json(result)
        return 0
    shown = display.loss(eps["best"])  # "unbounded" when infinite
    where = ("(messages without a DP guarantee)" if math.isinf(eps["best"]) else
             f"at delta {display.exact(report['delta'])} ({eps['conversion']} conversion)")
    print(f"agent {args.agent} against observers {', '.join(map(str, observers))}: "
          f"epsilon = {shown} {where}" + (f"; {label}" if label else ""))
    if unseen:
        several = len(unseen) > 1
        print(f"  observer{'s' if several else ''} {', '.join(map(str, unseen))} "
              f"received no message carrying agent {args.agent}'s data "
              f"(not {'neighbours' if several else 'a neighbour'} of agent {args.agent}), so "
              f"{'they add' if several else 'it adds'} nothing; what "
              f"{'they' if several else 'it'} may learn from "
              f"{'their' if several else 'its'} own neighbours is post-processing of "
              f"releases already counted on agent {args.agent}'s links")
    return 0


#: how far ``privacy amplification`` looks for the first k that beats local privacy
_K_SEARCH = 100_000


def cmd_amplification(args) -> int:
    ks = _floats(args.k, "k")
    if not all(k.is_integer() and k >= 0 for k in ks):
        raise ConfigError(f"--k {args.k!r} must list whole numbers of iterations >= 0",
                          "write e.g. --k 0,1,2,4,8")
    ks = [int(k) for k in ks]
    eta = args.eta
    if eta is None:
        if args.mu <= 0 or args.mu_g <= 0:
            raise ConfigError("--eta is missing", "give --eta, or --mu and --mu-g > 0 to use the "
                              "midpoint of interval (23)")
        eta = midpoint_eta(args.nu, args.mu, args.mu_g, args.beta, args.norm_AtB)
    for name in ("sigma", "radius"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"--{name} {value!r} must be a finite number > 0",
                              f"give --{name} as a positive number")
    constants = AmplificationConstants(eta=eta, beta=args.beta, nu=args.nu, norm_A=args.norm_A,
                                       norm_AtB=args.norm_AtB, mu=args.mu, mu_g=args.mu_g,
                                       bound=args.bound, exponent=args.exponent)
    curve = amplification_curve(constants, args.radius, args.sigma, ks)
    loc = local_rho(eta, args.radius, args.sigma)
    applies, why = bound_applies(constants)
    booked = booked_bound(constants)
    booked_name = booked if booked != "strongly-convex" else f"strongly-convex-{args.exponent}"
    booked_rho = [loc] * len(ks) if booked == "local" else curve[booked_name + "_rho"].tolist()
    result = {"eta": eta, "local_rho": loc, "local_epsilon": zcdp_to_eps_tight(loc, args.delta),
              "delta": args.delta, "k": ks, "requested": args.bound, "booked": booked_name,
              "booked_rho": booked_rho, "warning": why or None,
              "ratios": {n: [None if math.isnan(v) else v for v in curve[n].tolist()]
                         for n in CURVE_VARIANTS},
              "not_applicable": curve["reasons"],
              "first_k_below_local": first_amplified_k(
                  amplification_curve(constants, args.radius, args.sigma, np.arange(_K_SEARCH + 1)))}
    if args.json:
        _print_json(result)
        return 0
    print(f"eta = {display.number(eta)}, Delta = {args.radius:g}, sigma = {args.sigma:g}: "
          f"local zCDP rho = {display.loss(loc)} (epsilon {display.loss(result['local_epsilon'])} "
          f"at delta {display.exact(args.delta)})")
    if not applies:
        print(f"note: {why}")
    names = list(CURVE_VARIANTS)
    short = {"convex": "convex", "strongly-convex-paper": "sc-paper",
             "strongly-convex-conservative": "sc-conserv", "strongly-convex-precise": "sc-precise",
             "strongly-convex-precise-paper": "sc-prec-pap"}
    print("amplified / local rho (min with 1; T = floor(k/2); '-' where a bound does not apply):")
    print(f"  {'k':>6} {'T':>5} " + " ".join(f"{short[n]:>11}" for n in names)
          + f" {'booked rho':>12} {'epsilon':>9}")
    for i, k in enumerate(ks):
        # ratios of privacy losses: rounded up like the losses
        cells = " ".join("          -" if math.isnan(curve[n][i])
                         else f"{display.loss(curve[n][i]):>11}" for n in names)
        print(f"  {k:>6} {k // 2:>5} {cells} {display.loss(booked_rho[i]):>12} "
              f"{display.loss(zcdp_to_eps_tight(booked_rho[i], args.delta)):>9}")
    print(f"booked by a run: {booked_name}")
    for n, reason in curve["reasons"].items():
        print(f"  {n} does not apply: {reason}")
    firsts = ", ".join(f"{short[n]} {'-' if k is None else k}"
                       for n, k in result["first_k_below_local"].items())
    print(f"smallest k below local (of 0..{_K_SEARCH}; on a ring, the observer k + 1 hops "
          f"downstream): {firsts}")
    return 0


def main(args) -> int:
    return args.privacy_func(args)
