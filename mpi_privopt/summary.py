"""The run summary: one schema, written as ``summary.json`` and read back by results/report.

:class:`RunSummary` holds the headline numbers of one run. Its fields are the keys of
``summary.json`` (``algorithm_report`` and ``privacy_note`` only when present), so readers
that load the JSON as a dict keep working; ``summary["key"]`` also works on the object.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import display

#: the summary keys written only when they have a value
OPTIONAL = ("algorithm_report", "privacy_note", "epsilon_label", "worst_observer_entry",
            "diverged_at_iteration", "diverged_agents", "stopped_at_iteration",
            "stop_signal", "slowest_links")


#: what the monitor gathered or reduced in each mode (summary.json's evaluation_note),
#: by ``run.evaluate`` (mpi_privopt/problems/metrics.py's REFERENCE, LOCAL, NONE)
EVALUATION_NOTES = {
    "reference": "simulation: rank 0 gathered every agent's data once for the centralised "
                 "reference (and l1 = auto); each evaluation reduced the average model; "
                 "models.npz holds every final model",
    "local": "each agent evaluated itself; only per-agent scalars were reduced; each agent "
             "wrote its own models-agent-K.npz",
    "none": "deployment: nothing was evaluated during the run; only setup agreement and "
            "end-of-run counters left the agents beyond the algorithm's messages; each "
            "agent wrote its own models-agent-K.npz",
}


@dataclass
class RunSummary:
    """The headline numbers of one run (``summary.json``).

    The ``final_*`` consensus metrics exist in ``evaluate = "reference"`` mode (None
    otherwise); ``final_metrics`` holds every metric column of the last row in any mode
    (empty in ``none`` mode, which measures nothing). Reference fields are None outside
    reference mode; ``evaluation_note`` says what the monitor gathered or reduced.
    """

    algorithm: str
    problem: str
    topology: str
    ranks: int
    edges: int
    iterations: int
    seed: int
    final_error: float | None
    final_objective_gap: float | None
    final_consensus_gap: float | None
    bytes_total: int
    bytes_busiest_link: int
    busiest_link: list[int]
    messages_total: int
    wall_seconds: float
    algorithm_seconds: float
    eval_seconds: float
    comm_seconds: float
    comm_seconds_max: float
    private: bool
    worst_link_epsilon: float
    worst_link: list[int] | None
    worst_link_conversion: str | None
    privacy_delta: float
    noise: str
    reference_method: str | None
    optimum_value: float | None
    graph_hash: str
    run_dir: str
    evaluate: str = "reference"
    final_metrics: dict[str, float] = field(default_factory=dict)
    evaluation_note: str = ""
    l1: float | None = None
    #: the host each rank ran on (MPI_Get_processor_name), by rank
    hosts: list[str] = field(default_factory=list)
    #: the MPI library the ranks loaded and the MPI standard it implements
    mpi_library: str = ""
    #: how the broadcast channels exchanged: "persistent" (MPI-4), "one-off" (the MPI-3
    #: fallback: no persistent collectives in the library) or "none" (no channel)
    collective_path: str = ""
    algorithm_report: dict[str, Any] | None = None
    privacy_note: str | None = None
    #: what every epsilon of the run is when it is not a proven bound, shown beside each one
    #: (the method's ``algorithm_report["epsilon_label"]``, e.g. the aggregative methods'
    #: nominal accounting: "nominal (C = 1): not a privacy guarantee")
    epsilon_label: str | None = None
    #: a token method: the worst entry (observer, owner, epsilon, rho) of the observer matrix
    worst_observer_entry: dict[str, Any] | None = None
    #: "completed", "diverged" (run.on_divergence = "record" let a diverged run finish) or
    #: "interrupted" (a signal: stopped after a checkpoint; run --resume continues it)
    status: str = "completed"
    diverged_at_iteration: int | None = None
    diverged_agents: list[int] | None = None
    #: status "interrupted": the last iteration run (and checkpointed), the signal's name
    stopped_at_iteration: int | None = None
    stop_signal: str | None = None
    #: the links that cost their receivers most time (network/traffic.py slowest_links):
    #: ``{"link", "wait_mean_seconds", "transit_mean_seconds", "samples"}``, slowest first
    slowest_links: list[dict[str, Any]] | None = None

    def __getitem__(self, key: str) -> Any:
        """The value of summary.json key ``key`` (KeyError if the run has none)."""
        if key not in _FIELDS or (key in OPTIONAL and getattr(self, key) is None):
            raise KeyError(key)
        return getattr(self, key)

    def to_dict(self) -> dict[str, Any]:
        """The summary.json mapping."""
        data = dataclasses.asdict(self)
        for key in OPTIONAL:
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunSummary":
        """Read a summary.json mapping; keys this version does not know are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def read(cls, run_dir: str | Path) -> "RunSummary":
        """The summary of the run in ``run_dir``."""
        return cls.from_dict(json.loads((Path(run_dir) / "summary.json").read_text()))


_FIELDS = frozenset(f.name for f in dataclasses.fields(RunSummary))


def _privacy_line(s: RunSummary) -> str:
    eps = s.worst_link_epsilon
    if s.worst_link is None and not math.isinf(eps):
        # one agent, or a graph without edges: no message left any agent
        return ("no link, so no message left any agent and none has a privacy loss"
                + ("" if s.private else
                   "; the method gives no privacy guarantee once agents have neighbours"))
    if math.isinf(eps):
        return "worst link epsilon = unbounded (messages without a DP guarantee)"
    i, j = s.worst_link  # a finite loss with no worst link returned above
    return (f"worst link epsilon = {display.loss(eps)} on link {i}->{j} at delta "
            f"{display.exact(s.privacy_delta)} ({s.worst_link_conversion} conversion, "
            f"{s.noise} noise)"
            + (f"; {s.epsilon_label}" if s.epsilon_label else "")
            + (f"; {s.privacy_note}" if s.private and s.privacy_note else ""))


def _report_row(s: RunSummary, key: str, value: Any) -> tuple[str, str]:
    """One ``algorithm_report`` entry for a person; an epsilon carries the run's
    ``epsilon_label`` beside it."""
    shown = display.value(value, key)
    if s.epsilon_label and key.startswith("epsilon") and key != "epsilon_label":
        shown += f"  ({s.epsilon_label})"
    return display.label(key), shown


def _observer_line(worst: dict) -> str:
    eps = worst["epsilon"]
    value = (display.loss(eps) if math.isinf(eps) else
             f"{display.loss(eps)} (rho {display.loss(worst['rho'])})")
    return (f"worst entry: observer {worst['observer']} about agent {worst['owner']}'s "
            f"worst record, epsilon {value}")


def _metric_rows(s: RunSummary) -> list[tuple[str, str]]:
    if s.final_error is not None:
        return [("final error", f"{display.number(s.final_error)}   "
                                "(sum_k ||w_k - w_c||^2 / ||w_c||^2)"),
                ("objective gap", display.number(s.final_objective_gap)),
                ("consensus gap", display.number(s.final_consensus_gap))]
    if s.final_metrics:
        return [(display.label(name), display.number(value)) for name, value in
                s.final_metrics.items()]
    return [("metrics", 'none (run.evaluate = "none": nothing measured during the run)')]


#: what each collective path means, as the summary prints it
COLLECTIVE_PATHS = {
    "persistent": "persistent neighbour allgather (MPI-4 Neighbor_allgather_init)",
    "one-off": "one-off Ineighbor_allgather per exchange (MPI-3 fallback: the library "
               "has no persistent collectives)",
    # the same path, as summaries written before it was renamed call it
    "blocking": "one-off Ineighbor_allgather per exchange (MPI-3 fallback: the library "
                "has no persistent collectives)",
    "none": "no broadcast channel (per-call collectives and point to point)",
}


def _mpi_rows(s: RunSummary) -> list[tuple[str, str]]:
    rows = []
    if s.mpi_library:
        hosts = sorted(set(s.hosts))
        where = (f" on {len(hosts)} host{'s' if len(hosts) > 1 else ''} ({', '.join(hosts[:4])}"
                 f"{', ...' if len(hosts) > 4 else ''})" if hosts else "")
        rows.append(("MPI", f"{s.mpi_library}{where}"))
    if s.collective_path:
        rows.append(("neighbour exchange", COLLECTIVE_PATHS.get(s.collective_path,
                                                                s.collective_path)))
    return rows


def slowest_links_text(links: list[dict[str, Any]]) -> str:
    """``2->0 wait 5.1 ms (transit 5 ms), ...``: the mean per timed exchange (or hop)."""
    parts = []
    for entry in links:
        i, j = entry["link"]
        wait, transit = entry.get("wait_mean_seconds"), entry.get("transit_mean_seconds")
        text = f"{i}->{j}"
        if wait is not None:
            text += f" wait {display.duration(wait)}"
        if transit is not None:
            text += (" (transit " if wait is not None else " transit ") + \
                display.duration(transit) + (")" if wait is not None else "")
        parts.append(text)
    return ", ".join(parts) + " (mean per timed exchange or hop, receiver's side)"


def format_summary(s: RunSummary) -> str:
    """The end-of-run table rank 0 prints."""
    i, j = s.busiest_link
    rows = [
        ("algorithm", f"{s.algorithm} on {s.problem} ({display.counted(s.ranks, 'agent')}, "
                      f"{s.topology}, {display.counted(s.edges, 'edge')})"),
        *_metric_rows(s),
        ("iterations", f"{s.iterations}"),
        ("wall time", f"{display.duration(s.wall_seconds)}  "
                      f"(evaluation {display.duration(s.eval_seconds)})"),
        ("time in communication", f"{display.duration(s.comm_seconds)} per agent on average "
                                  f"(max {display.duration(s.comm_seconds_max)})"),
        ("bytes sent", f"{display.byte_size(s.bytes_total)} in total, "
                       f"{display.byte_size(s.bytes_busiest_link)} on the busiest link {i}->{j}"
                       if s.edges else "none (the graph has no links)"),
        *([("status", f"DIVERGED at iteration {s.diverged_at_iteration} (agents "
                      f"{', '.join(map(str, s.diverged_agents or []))}); the run went on "
                      "because run.on_divergence = \"record\"")]
          if s.status == "diverged" else []),
        *([("status", f"INTERRUPTED by {s.stop_signal} after iteration "
                      f"{s.stopped_at_iteration}; a checkpoint is kept: run --resume "
                      f"{s.run_dir} continues it")] if s.status == "interrupted" else []),
        ("privacy", _privacy_line(s)),
        *([("observer matrix", _observer_line(s.worst_observer_entry))]
          if s.worst_observer_entry else []),
        *([("slowest links", slowest_links_text(s.slowest_links))] if s.slowest_links else []),
        *_mpi_rows(s),
        # summary.json keeps the full values; the table shows them for a person
        *(_report_row(s, str(k), v) for k, v in (s.algorithm_report or {}).items()),
        ("run directory", s.run_dir),
    ]
    width = max(len(k) for k, _ in rows)
    line = "-" * (width + 60)
    return "\n".join([line] + [f"{k:<{width}}  {v}" for k, v in rows] + [line] +
                     [f"per-link matrices: python -m mpi_privopt report {s.run_dir}"])
