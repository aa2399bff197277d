"""``mpi_privopt report RUN_DIR``: the accuracy curve beside the per-link matrices.

Prints the learning curve's milestones, the bytes-per-link matrix, the time-per-link
matrices (the receiver's mean wait and the link's transit, network/link_time.py) and the
privacy-loss-per-link matrix of a finished run; with ``--png FILE`` (needs matplotlib, the
``plot`` extra) draws the three side by side (:mod:`mpi_privopt.report_figure`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import display
from .errors import ConfigError
from .results import read_metrics
from .network.traffic import LINK_TIME, slowest_links
from .report_values import (cell_epsilon, curve_column, headline_links, link_matrix,
                            pure_headline)
from .summary import RunSummary, slowest_links_text

SHOW_FULL = 16  # print whole matrices up to this many agents


def load_run(run_dir: str | Path) -> dict:
    path = Path(run_dir)
    # metrics.csv is absent from a run with run.evaluate = "none" (nothing was measured)
    needed = ("traffic.json", "privacy.json", "summary.json")
    missing = [n for n in needed if not (path / n).is_file()]
    if missing and (path / "config.toml").is_file():
        return load_incomplete_run(path, missing)
    if not path.is_dir():
        raise ConfigError(f"{path} does not exist" if not path.exists() else
                          f"{path} is a file, not a run directory",
                          "give the directory printed at the end of `mpi_privopt run`")
    if missing:
        raise ConfigError(f"{path} is not a finished run directory (missing {', '.join(missing)})",
                          "give the directory printed at the end of `mpi_privopt run`")
    traffic = json.loads((path / "traffic.json").read_text())
    privacy = json.loads((path / "privacy.json").read_text())
    return {
        "metrics": read_metrics(path),
        "bytes": np.array(traffic["total"]["bytes"], dtype=float),
        "epsilon": link_matrix(privacy["links"]["epsilon"]),
        "privacy": privacy,
        "summary": RunSummary.read(path),
        # absent from runs written before the traffic file recorded hosts
        "hosts": traffic.get("hosts"),
        "cross_host": (np.array(traffic["cross_host"], dtype=bool)
                       if "cross_host" in traffic else None),
        # absent from runs written before link times were measured
        "link_time": ({name: np.array(traffic["total"][name], dtype=float)
                       for name in LINK_TIME} if "wait_seconds" in traffic["total"] else None),
        "link_time_every": traffic.get("link_time_every"),
    }


def load_incomplete_run(path: Path, missing: list[str]) -> dict:
    """What a run that did not finish left: its metrics and the agents' stop records."""
    from .services.budget_stop import RECORDS, stop_record_path, stopped_agents
    records = {kind: {k: json.loads(stop_record_path(path, k, kind).read_text())
                      for k in stopped_agents(path, kind)} for kind in RECORDS}
    from .services.checkpoint_files import saved_ledgers
    from .services.watchdog import STALL_RECORD
    stall = path / STALL_RECORD
    return {"incomplete": True, "path": path, "missing": missing,
            "metrics": read_metrics(path), "stopped": records,
            "checkpoint": saved_ledgers(path),
            "stall": json.loads(stall.read_text()) if stall.is_file() else None}


#: how the report names each reason an agent stopped the run
STOP_REASONS = {"budget": "stopped by the privacy budget", "diverged": "diverged"}


def incomplete_text(run: dict) -> str:
    """The report of a run that did not finish: what it reached and what it spent."""
    from .services.budget_stop import agent_names as _names
    from .privacy.accountants import HeadlineAccountant
    m = run["metrics"]
    measured = (f"metrics up to iteration {int(m['iteration'][-1])}"
                if m.get("iteration") is not None and len(m["iteration"]) else "no metrics")
    kinds = [kind for kind, records in run["stopped"].items() if records]
    if kinds:
        kind = kinds[0]
        stopped = run["stopped"][kind]
        at = sorted({r["stopped_at_iteration"] for r in stopped.values()})
        lines = [f"incomplete run {run['path']}: {STOP_REASONS[kind]} at iteration "
                 f"{', '.join(map(str, at))} (no {', '.join(run['missing'])}); {measured}"]
        if kind == "diverged":
            lines.append(f"  {next(iter(stopped.values()))['reason']}")
        lines.append(f"each stopped agent recorded what it had spent before it stopped "
                     f"({STOP_RECORDS_SHOWN[kind]}):")
        for k, record in stopped.items():
            eps = HeadlineAccountant.from_dict(record["total"]).epsilon(record["delta"])["best"]
            sent = f", {record['bytes_sent']} bytes sent" if "bytes_sent" in record else ""
            label = f"; {record['epsilon_label']}" if record.get("epsilon_label") else ""
            lines.append(f"  agent {k}: {record['total']['releases']} releases, epsilon "
                         f"{display.loss(eps)} at delta {display.exact(record['delta'])} (budget "
                         f"{display.exact(record['budget'])}{label}){sent}")
        unknown = sorted(set(range(_agents(run['path']))) - set(stopped))
        if unknown:
            lines.append(f"  {_names(unknown)}: no record (aborted while waiting for a "
                         "stopped neighbour; what they spent was not written)")
    elif run.get("checkpoint"):
        lines = _failed_text(run["path"], *run["checkpoint"], measured)
    else:
        lines = [f"incomplete run {run['path']}: it did not finish (no "
                 f"{', '.join(run['missing'])}): it was killed or is still running; "
                 f"{measured}. Traffic and privacy totals are written only at the end."]
    if run.get("stall"):  # the watchdog's one message, kept in stall.json
        lines.insert(1, f"  it stalled: {run['stall'].get('message', '?')} (stall.json)")
    curve = curve_column(m)
    if curve is not None and len(m["iteration"]):
        lines.append(f"last measured ({curve}): iter {int(m['iteration'][-1])}: "
                     f"{display.number(m[curve][-1])}")
    return "\n".join(lines)


def _failed_text(path: Path, info: dict, metas: list[dict], skipped: str | None,
                 measured: str) -> list[str]:
    """A run that ended without its summary but with a checkpoint (``skipped``: a damaged
    latest one passed over): status "failed", what it had reached and spent then."""
    from .services.checkpoint_files import resume_command
    from .services.resume import is_final, run_iterations
    from .privacy.report import privacy_report
    privacy = privacy_report([m["ledger"] for m in metas], info["delta"], info["noise"])
    worst = privacy["worst_link"]
    label = next((m["ledger"]["epsilon_label"] for m in metas  # not a proven bound
                  if m["ledger"].get("epsilon_label")), None)
    # the run's own end (not an earlier part's, before an extension that did not finish)
    ended = is_final(path, info) and run_iterations(path) == info["iteration"]
    return [f"failed run {path}: status failed (it ended without its summary: a rank was "
            f"killed, or the job was); {measured}" + (
                f"; it had reached its end (iteration {info['iteration']}, final state "
                "saved) but not written all its results" if ended else ""),
            f"last checkpoint: iteration {info['iteration']}; privacy spent to then: worst "
            f"link epsilon {display.loss(privacy['worst_link_epsilon'])} at delta "
            f"{display.exact(info['delta'])}{f' (link {worst[0]}->{worst[1]})' if worst else ''}"
            f"{f' ({label})' if label else ''}; {sum(m['bytes_sent'] for m in metas)} bytes sent"
            + ("\n  " + skipped if skipped else ""),
            ("write the results (nothing is run or released) with: " if ended else
             "continue with: ") + resume_command(path, info["ranks"])]


#: the record files named in the report, by reason
STOP_RECORDS_SHOWN = {"budget": "privacy-agent-K-at-stop.json",
                      "diverged": "diverged-agent-K.json"}


def _agents(path: Path) -> int:
    """The number of agents of a run directory, from its graph file's header (0 if none)."""
    import re
    graph = path / "graph.edgelist"
    header = graph.read_text().partition("\n")[0] if graph.is_file() else ""
    found = re.search(r"\bn=(\d+)", header)
    return int(found.group(1)) if found else 0


def _matrix_text(matrix: np.ndarray, fmt, mark: np.ndarray | None = None) -> list[str]:
    """The matrix as text, ``*`` after cells where ``mark``; cells never touch (wider)."""
    K = matrix.shape[0]
    cells = [[fmt(matrix[i, j]) + ("" if mark is None else "*" if mark[i, j] else " ")
              for j in range(K)] for i in range(K)]
    width = max([9] + [len(c) + 1 for row in cells for c in row])
    header = "      " + "".join(f"{j:>{width}}" for j in range(K))
    lines = [header]
    for i in range(K):
        lines.append(f"{i:>5} " + "".join(f"{c:>{width}}" for c in cells[i]))
    return lines


def _hosts_text(run: dict) -> list[str]:
    """Which agents ran where, and the links (and bytes) that crossed hosts."""
    hosts, cross = run.get("hosts"), run.get("cross_host")
    if not hosts or cross is None:
        return []
    names = sorted(set(hosts))
    if len(names) == 1:
        every = "the one agent" if len(hosts) == 1 else f"all {len(hosts)} agents"
        return [f"hosts: {every} ran on {names[0]}; no link crosses hosts"]
    moved = run["bytes"]
    used = moved > 0
    lines = [f"\nlinks across hosts (* in the bytes matrix): {int((used & cross).sum())} of "
             f"{int(used.sum())} links, {moved[cross].sum():.0f} of {moved.sum():.0f} bytes"]
    lines += [f"  {name}: agents {', '.join(str(k) for k, h in enumerate(hosts) if h == name)}"
              for name in names]
    return lines


def _ms(value: float) -> str:
    """A matrix cell's time in milliseconds; ``.`` for a link never timed."""
    return "." if np.isnan(value) else f"{value * 1e3:.3g}"


def _link_time_text(run: dict, K: int) -> list[str]:
    """The time each link cost its receiver: mean wait and mean transit per sample, and
    the slowest links (network/link_time.py says what is measured)."""
    times = run.get("link_time")
    if times is None:
        return ["\ntime per link: not measured (a run written before link times were)"]
    with np.errstate(invalid="ignore", divide="ignore"):
        wait = np.where(times["wait_samples"] > 0,
                        times["wait_seconds"] / times["wait_samples"], np.nan)
        transit = np.where(times["transit_samples"] > 0,
                           times["transit_seconds"] / times["transit_samples"], np.nan)
    every = run.get("link_time_every")
    if np.isnan(wait).all() and np.isnan(transit).all():
        return ["\ntime per link: nothing was timed" +
                (" (link-time sampling was off)" if every == 0 else "")]
    lines = []
    if not np.isnan(wait).all():
        lines.append(f"\nreceiver's wait per link, ms, mean per timed exchange (every "
                     f"{every}-th exchange of each phase; row = sender, column = receiver; "
                     f". = not timed): how long the receiver waited for this in-neighbour")
        if K <= SHOW_FULL:
            lines += _matrix_text(wait, _ms)
    if not np.isnan(transit).all():
        lines.append("\nlink transit, ms, mean (sender's stamp to the receiver seeing the "
                     "marker or token; only between agents on one clock, only markers "
                     "still in flight when the receiver began to wait; . = not measured)")
        if K <= SHOW_FULL:
            lines += _matrix_text(transit, _ms)
    slowest = slowest_links({"total": times})
    if slowest:
        lines.append(f"slowest links: {slowest_links_text(slowest)}")
    return lines


def text_report(run: dict) -> str:
    s, m = run["summary"], run["metrics"]
    lines = [f"{s.algorithm} on {s.problem}: {display.counted(s.ranks, 'agent')}, "
             f"{display.counted(s.iterations, 'iteration')}, evaluate = {s.evaluate}"]
    if s.status == "interrupted":
        from .services.checkpoint_files import resume_command
        lines.append(f"status: interrupted by {s.stop_signal} after iteration "
                     f"{s.stopped_at_iteration}; continue with: "
                     f"{resume_command(s.run_dir, s.ranks)}")
    curve = curve_column(m)
    if curve is None:
        lines.append("accuracy curve: none (nothing was measured during the run: "
                     f"evaluate = {s.evaluate})")
    else:
        marks = sorted({0, len(m["iteration"]) // 4, len(m["iteration"]) // 2,
                        3 * len(m["iteration"]) // 4, len(m["iteration"]) - 1})
        lines.append(f"accuracy curve ({curve}): " + ", ".join(
            f"iter {int(m['iteration'][i])}: {display.number(m[curve][i])}" for i in marks))
    K = run["bytes"].shape[0]
    link_bytes = run["bytes"][run["bytes"] > 0]
    lines.append(f"\nbytes per link (row = sender, column = receiver): total "
                 f"{run['bytes'].sum():.0f}, per link min {link_bytes.min() if link_bytes.size else 0:.0f} "
                 f"max {link_bytes.max() if link_bytes.size else 0:.0f}")
    if K <= SHOW_FULL:
        several = run.get("hosts") and len(set(run["hosts"])) > 1
        lines += _matrix_text(run["bytes"], lambda v: "." if v == 0 else f"{v:.0f}",
                              run["cross_host"] & (run["bytes"] > 0) if several else None)
    lines += _hosts_text(run)
    lines += _link_time_text(run, K)
    p = run["privacy"]
    eps, measure = headline_links(run)
    how = ("local DP: the run's headline" if pure_headline(run)
           else "best valid conversion per link")
    finite = eps[~np.isnan(eps)]
    lines.append(f"\nprivacy loss per link: {measure} ({how}, {p['noise']} noise; row = "
                 f"protected agent, column = observer; . = no link): worst "
                 f"{display.loss(finite.max()) if finite.size else '-'}"
                 + (f"; {p['epsilon_label']}" if p.get("epsilon_label") else ""))
    if K <= SHOW_FULL:
        lines += _matrix_text(eps, cell_epsilon)
    observers = p.get("observers")
    if observers is not None:
        lines += _observer_text(observers, p["delta"], K)
    for note in p.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _observer_text(observers: dict, delta: float, K: int) -> list[str]:
    """A token method's observer matrix: what each observer learned of each agent's data."""
    worst = observers["worst"]
    where = ("" if worst is None else
             f": worst {display.loss(worst['epsilon'])} (observer {worst['observer']}, agent "
             f"{worst['owner']}'s worst record)")
    lines = [f"\nobserver matrix: epsilon at delta {display.exact(delta)} of the worst single "
             f"record (row = observer, column = owner; . = saw nothing of it){where}"]
    if K <= SHOW_FULL:
        lines += _matrix_text(link_matrix(observers["epsilon"]), cell_epsilon)
        lines.append("the same as zCDP rho:")
        lines += _matrix_text(link_matrix(observers["rho"]), cell_epsilon)
    return lines


def main(args) -> int:
    run = load_run(args.run_dir)
    if run.get("incomplete"):
        print(incomplete_text(run))
        return 0
    print(text_report(run))
    if args.png:
        from .report_figure import plot_report  # matplotlib only for a figure
        plot_report(run, args.png)
        print(f"\nwritten: {args.png}")
    return 0
