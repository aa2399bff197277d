"""privacy.json: every agent's ledger as K x K matrices, per-agent totals, the worst link.

Rows are the agent whose data is protected (the sender); columns the neighbour that
observed the messages. Entries off the graph are ``null``: nothing travels there.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .ledger import Loss, observed_by

CONVERSIONS = {
    "best": "the smallest valid of the conversions below (the headline epsilon)",
    "tight": "zCDP -> (eps, delta) by Canonne-Kamath-Steinke 2020 Prop. 12 (continuous order)",
    "standard": "zCDP -> (eps, delta) by Bun-Steinke 2016 Prop. 1.3: rho + 2 sqrt(rho ln(1/delta))",
    "exact": "exact composition of Gaussian mechanisms (Gaussian DP, Dong-Roth-Su)",
    "pure": "pure epsilon (Laplace releases only), summed",
}


def privacy_report(ledgers: Sequence[dict], delta: float, noise: str) -> dict:
    """Assemble privacy.json from the agents' ledger snapshots (``Ledger.to_dict``)."""
    K = len(ledgers)
    matrices = {name: [[None] * K for _ in range(K)]
                for name in ("epsilon", "conversion", "epsilon_tight", "epsilon_standard",
                             "epsilon_exact", "epsilon_pure", "rho", "releases")}
    agents = []
    notes: list[str] = []
    worst_link, worst_eps = None, -math.inf
    for snapshot in ledgers:
        k = snapshot["agent"]
        for j, data in snapshot["links"].items():
            loss = Loss.from_dict(data)
            eps = loss.epsilon(delta)
            matrices["epsilon"][k][int(j)] = eps["best"]
            matrices["conversion"][k][int(j)] = eps["conversion"]
            matrices["epsilon_tight"][k][int(j)] = eps["tight"]
            matrices["epsilon_standard"][k][int(j)] = eps["standard"]
            matrices["epsilon_exact"][k][int(j)] = eps["exact"]
            matrices["epsilon_pure"][k][int(j)] = eps["pure"]
            matrices["rho"][k][int(j)] = math.inf if loss.unbounded else loss.rho
            matrices["releases"][k][int(j)] = loss.releases
            notes += [n for n in loss.notes if n not in notes]
            if eps["best"] > worst_eps:
                worst_link, worst_eps = [k, int(j)], eps["best"]
        link_eps = {int(j): matrices["epsilon"][k][int(j)] for j in snapshot["links"]}
        worst_observer = max(link_eps, key=lambda j: (link_eps[j], -j)) if link_eps else None
        total = Loss.from_dict(snapshot["total"])
        total_eps = total.epsilon(delta)
        agents.append({
            "agent": k,
            "worst_observer": worst_observer,
            "worst_observer_epsilon": link_eps.get(worst_observer, 0.0),
            "all_observers_epsilon": total_eps["best"],
            "all_observers": total_eps,
            "all_observers_rho": math.inf if total.unbounded else total.rho,
            "releases": total.releases,
            "public_releases": total.public,
            "budget": snapshot["budget"],
            "groups": snapshot["groups"],
        })
    return {
        "delta": delta,
        "noise": noise,
        "rows": "agent whose data is protected (sender)",
        "columns": "neighbour that observed the messages (receiver)",
        "headline_conversion": "best",
        "conversions": CONVERSIONS,
        "links": matrices,
        "agents": agents,
        "worst_link": worst_link,
        "worst_link_epsilon": worst_eps if worst_link is not None else 0.0,
        "notes": notes,
    }


def coalition_epsilon(report: dict, agent: int, observers: Sequence[int]) -> dict:
    """epsilon of ``agent`` against a coalition of observers, from a privacy.json dict."""
    groups = [(group["receivers"],
               Loss.from_dict({k: v for k, v in group.items() if k != "receivers"}))
              for group in report["agents"][agent]["groups"]]
    return observed_by(groups, observers).epsilon(report["delta"])
