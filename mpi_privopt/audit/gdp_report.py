"""The report of a GDP (mu) audit: the verdicts from every rank's records, and its lines.

Used by the audits whose trials give a Gaussian likelihood-ratio statistic (a method's
mechanism, the token's iterations: :class:`~.method_audit.MethodAudit`'s default); the
pure-epsilon audit of ldp-aggregative has its own (``methods/chen2025/audit.py``).
"""
from __future__ import annotations

import math

from .. import display
from ..config import Config
from . import stats
from .harness import link_residuals
from .verdict import PASS, decide, format_verdict

__all__ = ["TEST_LEVEL", "format_gdp_report", "summarise"]

#: p-value below which a noise test flags
TEST_LEVEL = 1e-6


def _noise_tests(checks: dict) -> dict:
    return {"variance": stats.variance_test(checks["sum_squares"], checks["count"]),
            "independence": stats.lag_correlation_test(checks["lag_products"],
                                                       checks["pairs"])}


def _flagged(tests: dict) -> list[str]:
    return [name for name, test in tests.items()
            if test.get("p_value") is not None and test["p_value"] < TEST_LEVEL]


def summarise(cfg: Config, graph, records: list[dict], target: int, receiver: int,
              all_links: bool, confidence: float, seconds: float, trials: int) -> dict:
    """The audit report from every rank's records (rank 0)."""
    by_agent = {r["agent"]: r for r in records}
    me = by_agent[target]
    h = me["harness"]
    delta = cfg.privacy.delta
    ledger = me["ledger"][receiver]
    # a token's releases are booked as zCDP (the amplification transform resolves them);
    # the ones this link saw of the canary's record are Gaussian (k = 0): mu = sqrt(2 rho)
    exact = ledger["gaussian_only"]
    ledger_mu = math.sqrt(ledger["mu2"] if exact else 2.0 * ledger["rho"])
    bound = stats.midpoint_audit(h["statistic"], h["positive"], confidence, delta)
    flags = []
    if bound["mu_lower"] > ledger_mu:
        flags.append(f"mu: lower bound {display.lower_bound(bound['mu_lower'])} > ledger mu "
                     f"{display.loss(ledger_mu)} on link {target}->{receiver}")
    trial_tests = _noise_tests(h["noise"])
    flags += [f"trial-{name}: p = {trial_tests[name]['p_value']:.3g}"
              for name in _flagged(trial_tests)]
    pairs = ([(s, r) for s, r in sorted(graph.to_directed().edges())] if all_links
             else [(target, receiver)])
    wire = {}
    for s, r in pairs:
        checks = link_residuals(by_agent[s]["sent"], by_agent[r]["received"], s).to_dict()
        tests = _noise_tests(checks)
        wire[f"{s}->{r}"] = tests
        flags += [f"wire-{name} on link {s}->{r}: p = {tests[name]['p_value']:.3g}"
                  for name in _flagged(tests)]
    report = {
        "algorithm": cfg.algorithm.name, "agents": graph.number_of_nodes(),
        "link": [target, receiver], "all_links": all_links, "trials": trials,
        "iterations": cfg.run.iterations, "releases": h["releases"],
        "confidence": confidence, "delta": delta, "seed": cfg.run.seed,
        "noise_mode": cfg.privacy.noise,
        "ledger_mu": ledger_mu, "ledger_mu_from_rho": math.sqrt(2.0 * ledger["rho"]),
        "ledger_mu_source": "exact Gaussian composition" if exact else "sqrt(2 rho)",
        "ledger_epsilon": ledger["epsilon"],
        "planned_mu": me["plan"]["planned_mu"], "trials_needed": me["plan"]["needed"],
        "trials_enough": me["plan"]["enough"],
        "booked_mu": h["booked_mu"], "shift_mu": h["shift_mu"],
        "worst_shift_ratio": h["worst_shift_ratio"], "worst_mismatch": h["worst_mismatch"],
        "bound": dict(bound), "gap_ratio": bound["mu_lower"] / ledger_mu,
        "trial_noise": trial_tests, "wire": wire,
        "seconds": seconds, "flags": flags,
    }
    # the bound with every trial classified right: at or below the ledger's mu, the audit
    # could not have failed (INCONCLUSIVE, not PASS)
    report["best_possible_mu"] = stats.audit_bound(0, bound["negatives"], 0, bound["positives"],
                                                   confidence, delta)["mu_lower"]
    report["verdict"] = decide(flags, report["best_possible_mu"], ledger_mu)
    report["passed"] = report["verdict"] == PASS
    if h.get("membership") is not None:
        attack = stats.membership_attack(h["membership"]["score"], h["membership"]["member"],
                                         confidence)
        attack["gdp_bound"] = stats.mi_advantage_bound(ledger_mu)
        attack["eps_delta_bound"] = stats.eps_advantage_bound(ledger["epsilon"], delta)
        attack["exceeds_bound"] = attack["advantage_lower"] > attack["gdp_bound"]
        report["membership"] = attack
    return report


def format_gdp_report(report: dict) -> str:
    """The lines of a GDP (mu) audit report (:func:`summarise`'s)."""
    b = report["bound"]
    i, j = report["link"]
    lines = [
        f"audit of {report['algorithm']} on link {i}->{j} ({report['agents']} agents, "
        f"{report['releases']} releases, {report['trials']} trials, seed {report['seed']}, "
        f"{report['noise_mode']} noise)",
        # the ledger's losses rounded up, the audit's lower bounds down: both claims hold
        f"  ledger mu           {display.loss(report['ledger_mu']):<6}   (sqrt(2 rho) = "
        f"{display.loss(report['ledger_mu_from_rho'])}; epsilon "
        f"{display.loss(report['ledger_epsilon'])} at "
        f"delta {display.exact(report['delta'])})",
        f"  audited mu >=       {display.lower_bound(b['mu_lower']):<6}   "
        f"(gap ratio {report['gap_ratio']:.3f}; "
        f"FPR {b['fpr']:.4f} <= {b['fpr_upper']:.4f}, FNR {b['fnr']:.4f} <= "
        f"{b['fnr_upper']:.4f}, Clopper-Pearson at {b['confidence']:g})",
        f"  epsilon >=          {display.lower_bound(b['eps_lower']):<6}   at delta "
        f"{display.exact(b['delta'])} (reported, "
        f"not asserted: far below the ledger's at feasible trial counts)",
        f"  realised shift mu   {report['shift_mu']:.4f}   (largest shift / booked "
        f"sensitivity {report['worst_shift_ratio']:.4f})",
    ]
    t = report["trial_noise"]
    lines.append(f"  trial noise         variance ratio {t['variance']['variance_ratio']:.4f} "
                 f"(p {t['variance']['p_value']:.3g}), lag-1 correlation "
                 f"{t['independence']['correlation']:.4f} (p {t['independence']['p_value']:.3g})")
    for link, tests in report["wire"].items():
        v, ind = tests["variance"], tests["independence"]
        if v["values"]:
            lines.append(f"  wire {link:<14} variance ratio {v['variance_ratio']:.4f} "
                         f"(p {v['p_value']:.3g}), lag-1 correlation "
                         f"{ind['correlation']:.4f} (p {ind['p_value']:.3g})")
    if "membership" in report:
        m = report["membership"]
        lines.append(f"  membership attack   advantage {m['advantage']:.4f} (>= "
                     f"{m['advantage_lower']:.4f}) vs GDP bound 2 Phi(mu/2) - 1 = "
                     f"{m['gdp_bound']:.4f}; (epsilon, delta) bound {m['eps_delta_bound']:.4f}"
                     + ("   ABOVE THE BOUND" if m["exceeds_bound"] else ""))
    if not report["trials_enough"]:
        lines.append(f"  note: --force with fewer trials than the "
                     f"{report['trials_needed']} needed to reach half the ledger's mu")
    lines.append(f"  time                {display.duration(report['seconds'])}")
    lines.append(format_verdict(report["verdict"], report["flags"],
                                report["best_possible_mu"], report["ledger_mu"], "mu",
                                "the bound grows with the number of trials, --trials"))
    return "\n".join(lines)
