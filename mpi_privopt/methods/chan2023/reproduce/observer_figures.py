"""Figures (PNG with the CSV behind each) of ``reproduce chan2023 --distributed``: the observer
matrices and utility against epsilon (:mod:`.distributed` runs them)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpi_privopt import display
from mpi_privopt.privacy.conversions import zcdp_to_eps_tight
from mpi_privopt.reproduce import finish_figure, pyplot
from mpi_privopt.reproduce._style import Palette, Style, mark_coincident, panel_legend
from . import distributed
from .distributed import DP_DELTA
from .settings import ITERATIONS

#: an entry counts as amplified when its rho is below local by more than rounding
AMPLIFIED_BELOW = 1.0 - 1e-9


def matrix_rows(obs: dict[str, np.ndarray], local: float,
                closed_form: np.ndarray | None = None) -> list[dict]:
    """The observer matrix in long form: one row per (observer, owner) with an entry."""
    rows = []
    K = obs["rho"].shape[0]
    for q in range(K):
        for j in range(K):
            if np.isnan(obs["rho"][q, j]):
                continue
            row = {"observer": q, "owner": j, "epsilon": float(obs["epsilon"][q, j]),
                   "rho": float(obs["rho"][q, j]), "releases": int(obs["releases"][q, j]),
                   "ratio_to_local": float(obs["rho"][q, j] / local)}
            if closed_form is not None:
                row["closed_form_ratio"] = float(closed_form[q, j])
            rows.append(row)
    return rows


def heatmap(obs: dict[str, np.ndarray], path: Path, rows: list[dict], title: str,
            local_epsilon: float) -> None:
    """:func:`draw_heatmap`, saved with its CSV."""
    finish_figure(draw_heatmap(obs, local_epsilon), path, rows, title)


def draw_heatmap(obs: dict[str, np.ndarray], local_epsilon: float):
    """Observer (rows) against owner (columns), epsilon on a colour scale from its smallest
    to its largest entry (logarithmic over more than a decade)."""
    from matplotlib.colors import LogNorm, Normalize

    plt = pyplot()
    eps = obs["epsilon"]
    seen = eps[np.isfinite(eps)]
    low, high = float(seen.min()), float(seen.max())
    log = high > 10 * low
    fig, ax = plt.subplots(figsize=(7.8, 7.0))
    cmap = plt.get_cmap("viridis").with_extremes(bad="lightgrey")
    image = ax.imshow(np.ma.masked_invalid(eps), cmap=cmap, origin="upper",
                      norm=(LogNorm if log else Normalize)(vmin=low, vmax=high))
    bar = fig.colorbar(image, ax=ax)
    bar.set_label(f"epsilon at delta = {DP_DELTA:g} ({'log' if log else 'linear'} scale; "
                  f"local: {display.loss(local_epsilon, 3)})")
    K = eps.shape[0]
    ticks = np.arange(0, K, max(1, K // 12))
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlabel("owner j (whose worst single record)")
    ax.set_ylabel("observer q (agent that saw the token)")
    ax.set_title("grey: nothing observed (the diagonal: own data)", fontsize=8)
    return fig


def matrix_title(schedule: str, K: int) -> str:
    """The title of the observer-matrix heatmap of ``schedule`` ("ring" or "sample")."""
    if schedule == "ring":
        what = (f"ring schedule, {distributed.RING_PASSES * K} iterations "
                f"({distributed.RING_PASSES} passes)")
    else:
        what = f"sample schedule (the paper's), {ITERATIONS} iterations"
    p = distributed.experiment()
    sigma = distributed.sigma_for_epsilon(distributed.MATRIX_EPSILON)
    return (f"Observer matrix of token-admm, {K} ranks on a ring graph,\n{what};\n"
            f"r = 0.5, eta = {p.eta:g}, beta = {p.beta:g}, Delta = {distributed.radius():g}, "
            f"sigma = {sigma:.4g}, {p.bound} bound")


def matrix_from_rows(rows: list[dict]) -> dict[str, np.ndarray]:
    """The ``epsilon`` matrix back from :func:`matrix_rows` (NaN where nothing was seen)."""
    K = 1 + max(max(r["observer"], r["owner"]) for r in rows)
    eps = np.full((K, K), np.nan)
    for r in rows:
        eps[r["observer"], r["owner"]] = r["epsilon"]
    return {"epsilon": eps}


def matrix_summary(obs: dict[str, np.ndarray], local: float) -> dict:
    """Counts of local and amplified entries, the smallest entry and where it is."""
    ratio = obs["rho"] / local
    have = np.isfinite(ratio)
    amplified = have & (ratio < AMPLIFIED_BELOW)
    q, j = np.unravel_index(np.nanargmin(ratio), ratio.shape)
    worst = np.unravel_index(np.nanargmax(obs["epsilon"]), ratio.shape)
    return {"entries": int(have.sum()), "amplified_entries": int(amplified.sum()),
            "local_or_worse_entries": int((have & ~amplified).sum()),
            "smallest_ratio": float(ratio[q, j]), "smallest_at": [int(q), int(j)],
            "smallest_epsilon": float(obs["epsilon"][q, j]),
            "worst_epsilon": float(obs["epsilon"][worst]), "worst_at": [int(worst[0]),
                                                                      int(worst[1])],
            "worst_ratio": float(ratio[worst])}


def ring_rows_by_distance(ratio: np.ndarray) -> list[dict]:
    """For the ring: per downstream distance d = (q - j) mod K, the entries' ratio range
    (the final release caps some entries above the pass-by-pass value)."""
    K = ratio.shape[0]
    out = []
    for d in range(1, K):
        values = np.array([ratio[(j + d) % K, j] for j in range(K)])
        out.append({"distance": d, "k_mid_run": d - 1, "min_ratio": float(values.min()),
                    "max_ratio": float(values.max()),
                    "amplified_owners": int((values < AMPLIFIED_BELOW).sum())})
    return out


def utility_rows(results: list[dict]) -> list[dict]:
    """Per target local epsilon: sigma, the gaps over the runs and their observer entries.

    ``results``: one dict per run with ``epsilon``, ``sigma``, ``local_rho``, ``gap`` and
    ``observers`` (the arrays of :func:`.distributed.observers`).
    """
    rows = []
    for eps in sorted({r["epsilon"] for r in results}):
        group = [r for r in results if r["epsilon"] == eps]
        gaps = np.array([r["gap"] for r in group])
        worst = np.array([np.nanmax(r["observers"]["epsilon"]) for r in group])
        least = np.array([np.nanmin(r["observers"]["epsilon"]) for r in group])
        ratios = np.concatenate([(r["observers"]["rho"] / r["local_rho"]).ravel()
                                 for r in group])
        ratios = ratios[np.isfinite(ratios)]
        rows.append({
            "target_local_epsilon": eps, "sigma": group[0]["sigma"],
            "local_rho": group[0]["local_rho"],
            "local_epsilon": zcdp_to_eps_tight(group[0]["local_rho"], DP_DELTA),
            "runs": len(group), "mean_gap": float(gaps.mean()),
            "std_gap": float(gaps.std(ddof=1)) if len(group) > 1 else float("nan"),
            "min_gap": float(gaps.min()), "max_gap": float(gaps.max()),
            "worst_entry_epsilon_max": float(worst.max()),
            "worst_entry_epsilon_median": float(np.median(worst)),
            "smallest_entry_epsilon_min": float(least.min()),
            "amplified_entry_fraction": float((ratios < AMPLIFIED_BELOW).mean())})
    return rows


#: one style per curve of the utility figure
UTILITY_PALETTE = Palette({
    "gap": Style("tab:blue", "o"),
    "local": Style("black", "x", "--", 1.2),
    "worst-max": Style("tab:red", "o"),
    "worst-median": Style("tab:orange", "s", ":"),
    "smallest": Style("tab:green", "^"),
})


def draw_utility(rows: list[dict]):
    """Left: final gap F(x~) - F* against local epsilon (mean, bar: min-max over the runs);
    right: the observer entries beside the local epsilon of one iteration."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.0, 4.6))
    eps = np.array([r["local_epsilon"] for r in rows])
    mean = np.array([r["mean_gap"] for r in rows])
    spread = [mean - np.array([r["min_gap"] for r in rows]),
              np.array([r["max_gap"] for r in rows]) - mean]
    left.errorbar(eps, mean, yerr=spread, color=UTILITY_PALETTE["gap"].colour, fmt="none",
                  capsize=3, lw=1.0)
    UTILITY_PALETTE.plot(left, eps, mean, "gap",
                         f"final gap: mean of {rows[0]['runs']} runs (bar: min-max)",
                         markevery=1)
    left.axhline(rows[0]["initial_gap"], color="k", ls=":", lw=1.0,
                 label="gap at x_0 = 3 * 1 (no iteration)")
    left.set_ylabel("final gap F(x~_100) - F*")
    UTILITY_PALETTE.plot(right, eps, eps, "local", "local (one iteration)", markevery=1)
    for name, column, label in (
            ("worst-max", "worst_entry_epsilon_max", "worst observer entry (max over runs)"),
            ("worst-median", "worst_entry_epsilon_median",
             "worst observer entry (median over runs)"),
            ("smallest", "smallest_entry_epsilon_min", "smallest entry (min over runs)")):
        UTILITY_PALETTE.plot(right, eps, [r[column] for r in rows], name, label, markevery=1)
    right.set_ylabel("epsilon of an observer-matrix entry")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"local epsilon of one iteration (delta = {DP_DELTA:g})")
        ax.grid(True, which="both", alpha=0.3)
        mark_coincident(ax)
        panel_legend(ax)
    return fig


def utility_title(ranks: int) -> str:
    return (f"Utility against epsilon: token-admm-elastic-net ({ranks} ranks, sample "
            f"schedule,\n{ITERATIONS} iterations, Delta = {distributed.radius():g}, sigma from "
            "the target local epsilon)")


def utility_figure(rows: list[dict], path: Path, title: str) -> None:
    """:func:`draw_utility`, saved with its CSV."""
    finish_figure(draw_utility(rows), path, rows, title)
