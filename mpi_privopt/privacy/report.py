"""privacy.json: every agent's ledger as K x K matrices, per-agent totals, the worst link.

Rows are the agent whose data is protected (normally the sender); columns the agent that
observed the messages. Entries where nothing of the row's data was observed are ``null``
(off the graph, for methods that send only their own data to neighbours). Each rank's ledger
computed its own figures (the end-of-run privacy loss distribution included); events that
another agent booked on the row agent's data (a token that carries it) are merged in here.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .accountants import HeadlineAccountant, epsilons
from .ledger import compose_observed

CONVERSIONS = {
    "best": "the smallest valid of the conversions below (the headline epsilon)",
    "tight": "zCDP -> (eps, delta) by Canonne-Kamath-Steinke 2020 Prop. 12 (continuous order)",
    "standard": "zCDP -> (eps, delta) by Bun-Steinke 2016 Prop. 1.3: rho + 2 sqrt(rho ln(1/delta))",
    "exact": "exact composition of Gaussian mechanisms (Gaussian DP, Dong-Roth-Su)",
    "pure": "pure epsilon (Laplace releases only), summed",
    "pld": "privacy loss distributions composed by dp-accounting (links with Laplace "
           "releases; computed once at the end of the run)",
}


def _books(groups: list[dict]) -> list[tuple]:
    """(receivers, record, accountant) of privacy.json group entries."""
    keep = ("receivers", "owner", "record")
    return [(g["receivers"], g.get("record"),
             HeadlineAccountant.from_dict({k: v for k, v in g.items() if k not in keep}))
            for g in groups]


def _foreign(ledgers: Sequence[dict]) -> dict[int, list[dict]]:
    """Group entries booked by one agent on another agent's data, by owner."""
    out: dict[int, list[dict]] = {}
    for snapshot in ledgers:
        for group in snapshot["groups"]:
            owner = group.get("owner", snapshot["agent"])
            if owner != snapshot["agent"]:
                out.setdefault(owner, []).append(group)
    return out


def privacy_report(ledgers: Sequence[dict], delta: float, noise: str) -> dict:
    """Assemble privacy.json from the agents' ledger snapshots (``Ledger.to_dict``)."""
    K = len(ledgers)
    matrices = {name: [[None] * K for _ in range(K)]
                for name in ("epsilon", "conversion", "epsilon_tight", "epsilon_standard",
                             "epsilon_exact", "epsilon_pure", "epsilon_pld", "rho", "releases")}
    foreign = _foreign(ledgers)
    agents = []
    notes: list[str] = []
    worst_link, worst_eps = None, -math.inf
    for snapshot in ledgers:
        k = snapshot["agent"]
        links = {int(j): HeadlineAccountant.from_dict(data) for j, data in snapshot["links"].items()}
        total = HeadlineAccountant.from_dict(snapshot["total"])
        groups = [g for g in snapshot["groups"] if g.get("owner", k) == k] + foreign.get(k, [])
        if k in foreign:
            # Another agent carried this agent's data on: compose everything anew (the
            # end-of-run distributions of the agent's own ledger no longer cover it).
            books = _books(groups)
            observers = sorted({int(j) for g in groups for j in g["receivers"]} | set(links))
            links = {j: compose_observed(books, (j,), delta) for j in observers}
            total = compose_observed(books, observers, delta)
        # every link's exact Gaussian epsilon, and the agent's, in one vectorised conversion
        *link_conversions, total_eps = epsilons([*links.values(), total], delta)
        for (j, loss), eps in zip(links.items(), link_conversions):
            matrices["epsilon"][k][int(j)] = eps["best"]
            matrices["conversion"][k][int(j)] = eps["conversion"]
            matrices["epsilon_tight"][k][int(j)] = eps["tight"]
            matrices["epsilon_standard"][k][int(j)] = eps["standard"]
            matrices["epsilon_exact"][k][int(j)] = eps["exact"]
            matrices["epsilon_pure"][k][int(j)] = eps["pure"]
            matrices["epsilon_pld"][k][int(j)] = eps["pld"]
            matrices["rho"][k][int(j)] = math.inf if loss.unbounded else loss.rho
            matrices["releases"][k][int(j)] = loss.releases
            notes += [n for n in loss.notes if n not in notes]
            if eps["best"] > worst_eps:
                worst_link, worst_eps = [k, int(j)], eps["best"]
        link_eps = {int(j): matrices["epsilon"][k][int(j)] for j in links}
        worst_observer = max(link_eps, key=lambda j: (link_eps[j], -j)) if link_eps else None
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
            "groups": groups,
            # a secure-noise resume's booking of releases it did not see (Ledger.assumed)
            **({"assumed": snapshot["assumed"],
                "assumed_iterations": snapshot["assumed_iterations"]}
               if "assumed" in snapshot else {}),
        })
    assumed = max((a.get("assumed_iterations", 0) for a in agents), default=0)
    if assumed:
        notes.append(assumed_note(assumed))
    report = {
        "delta": delta,
        "noise": noise,
        "rows": "agent whose data is protected (the sender, unless another agent carried it on)",
        "columns": "agent that observed the messages (the receiver)",
        "headline_conversion": "best",
        "conversions": CONVERSIONS,
        "links": matrices,
        "agents": agents,
        "worst_link": worst_link,
        "worst_link_epsilon": worst_eps if worst_link is not None else 0.0,
        "notes": notes,
    }
    if foreign:
        report["observers"] = observer_matrix(matrices)
    if assumed:
        report["assumed_iterations"] = assumed
    return report


def assumed_note(iterations: int) -> str:
    """What privacy.json, the report and the summary say of releases booked as made
    before an interruption (mpi_privopt/services/release_gap.py)."""
    return (f"the losses include {iterations} iterations booked as released before an "
            "interruption (assumed: a resume of a privacy.noise = \"secure\" run books "
            "the planned releases of the iterations the run may have sent after its "
            "checkpoint, an upper bound; docs/reliability.md)")


def observer_matrix(matrices: dict) -> dict:
    """The links matrices seen from the observers (a token carries other agents' records).

    Entry (q, j): what observer q learned of agent j's data, the worst single record of j
    (sequential over q's sightings, parallel over j's records), i.e. ``links[j][q]``.
    """
    K = len(matrices["epsilon"])
    flip = {name: [[matrices[name][j][q] for j in range(K)] for q in range(K)]
            for name in ("epsilon", "rho", "releases")}
    entries = [(flip["epsilon"][q][j], q, j) for q in range(K) for j in range(K)
               if flip["epsilon"][q][j] is not None]
    worst = None
    if entries:
        eps, q, j = max(entries, key=lambda e: (e[0], -e[1], -e[2]))
        worst = {"observer": q, "owner": j, "epsilon": eps, "rho": flip["rho"][q][j]}
    return {"rows": "observer (every agent that saw the token)",
            "columns": "owner: the worst single record of that agent's data",
            **flip, "worst": worst}


def coalition_epsilon(report: dict, agent: int, observers: Sequence[int]) -> dict:
    """epsilon of ``agent`` against a coalition of observers, from a privacy.json dict."""
    groups = report["agents"][agent]["groups"]
    return compose_observed(_books(groups), observers, report["delta"]).epsilon(report["delta"])
