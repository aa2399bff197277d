"""Tables and figures (PNG with the CSV behind each) of ``reproduce chan2023``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mpi_privopt.privacy.amplification import AmplificationConstants, local_rho
from mpi_privopt.privacy.amplification_curves import CURVE_VARIANTS, amplification_curve
from mpi_privopt.privacy.conversions import zcdp_to_eps_standard
from mpi_privopt.reproduce import finish_figure, pyplot
from mpi_privopt import display
from mpi_privopt.reproduce._style import (MARKERS, Palette, Style, figure_legend, runs_phrase, sweep_palette,
                     tidy)
from .replay import Setting
from .settings import (FIG1A_POINTS, LFRAK_CASES, PAPER_TABLE1, PAPER_TABLE2, PENALTY, SIGMAS,
                       Case)
from .significance import Comparison, convergence_iteration, pairwise

#: the DP delta of the (epsilon, delta) column of privacy.csv
PRIVACY_DELTA = 1e-5


def table1_rows(settings: list[Setting]) -> list[dict]:
    """Table 1: eta and Lfrak at full precision (str, so that the CSV keeps every digit) and
    the convergence iterations of the statistical test."""
    return [{"case": s.case.label, "eta": repr(s.eta), "contraction": repr(s.case.contraction),
             "convergence_iterations": convergence_iteration(s.runs.objective)}
            for s in settings]


def table1_comparison(rows: list[dict]) -> list[dict]:
    """Table 1 beside the paper's printed row (for the summary and the doc)."""
    return [{**row, "paper_eta": p[0], "paper_contraction": p[1],
             "paper_convergence_iterations": p[2]} for row, p in zip(rows, PAPER_TABLE1)]


def curve_rows(settings: list[Setting]) -> list[dict]:
    """Mean gap (and, corrected mode, split gap) of every setting at every t: the CSV behind
    Figure 1(a) and 1(b), from which they are drawn."""
    rows = []
    for s in settings:
        gap, split = s.gap.mean(0), s.split_gap.mean(0)
        for i in range(gap.size):
            rows.append({"mode": s.mode, "case": s.case.label, "contraction": s.case.contraction,
                         "eta": s.eta, "sigma": s.sigma, "t": i, "mean_gap": float(gap[i]),
                         "mean_split_gap": float(split[i]),
                         "std_gap": float(s.gap[:, i].std(ddof=1)) if s.gap.shape[0] > 1
                         else float("nan"),
                         "reference": s.reference, "runs": s.gap.shape[0]})
    return rows


def _settings_of(rows: list[dict]) -> dict[tuple, list[dict]]:
    """The rows of each setting (case, eta, sigma), in the order they come."""
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["case"], r["eta"], r["sigma"]), []).append(r)
    return out


def label_1a(key: tuple, first: tuple, rows: list[dict]) -> str:
    return f"Lfrak = {rows[0]['contraction']:.2f}"


def label_1b(key: tuple, first: tuple, rows: list[dict]) -> str:
    eta = f" (eta = {key[1]:g})" if key[1] != first[1] else ""
    return f"sigma = {key[2]:.2f}{eta}"


#: a curve has settled when it stays this close to its final value (a share of the largest
#: gap drawn)
SETTLED = 0.01


def _settled_at(series: list[np.ndarray]) -> tuple[int, float]:
    """The first t after which every curve stays within the tolerance (:data:`SETTLED` of
    the largest |gap|) of its last value, and that tolerance."""
    tolerance = SETTLED * (max(float(np.nanmax(np.abs(y))) for y in series) or 1.0)
    last = 0
    for y in series:
        away = np.flatnonzero(np.abs(y - y[-1]) > tolerance)
        last = max(last, int(away[-1]) + 1 if away.size else 0)
    return last, tolerance


def draw_curves(rows: list[dict], label, points: int):
    """Figure 1(a)/(b) from :func:`curve_rows`: left, the gap on a linear scale over the
    t where the curves still move (the notebook's linear plot, zoomed); right, |gap| on a
    log scale over t = 0 .. ``points`` - 1, hollow markers where the gap is negative (the
    reference lies above the optimum: a log scale cannot show the sign). Corrected mode
    also draws f(x~_t) + g(y_t) - F* dashed."""
    from matplotlib.lines import Line2D

    plt = pyplot()
    groups = _settings_of([r for r in rows if r["t"] < points])
    keys = list(groups)
    labels = {k: label(k, keys[0], groups[k]) for k in keys}
    palette = sweep_palette([labels[k] for k in keys])
    corrected = rows[0]["mode"] == "corrected"
    fig, (lin, log) = plt.subplots(1, 2, figsize=(11.0, 4.4))
    gaps = {k: np.array([r["mean_gap"] for r in groups[k]]) for k in keys}
    settled, tolerance = _settled_at(list(gaps.values()))
    settled = min(points - 1, max(3, settled + 2))
    negative = False
    for k in keys:
        t = np.array([r["t"] for r in groups[k]], dtype=float)
        gap, split = gaps[k], np.array([r["mean_split_gap"] for r in groups[k]])
        near = t <= settled
        palette.plot(lin, t[near], gap[near], labels[k], labels[k])
        palette.plot(log, t, np.abs(gap), labels[k], labels[k])
        below = gap < 0
        if below.any():
            negative = True
            log.plot(t[below], np.abs(gap[below]), linestyle="none",
                     marker=palette[labels[k]].marker, markerfacecolor="white",
                     color=palette[labels[k]].colour, markersize=5, zorder=3)
        if corrected:
            for ax, keep in ((lin, near), (log, np.ones_like(near))):
                ax.plot(t[keep], np.abs(split[keep]) if ax is log else split[keep], "--",
                        color=palette[labels[k]].colour, lw=1.0)
    ylabel = ("average gap F(x~_t) - F*" if corrected
              else "average optimality gap F(x~_t) - opt (notebook)")
    lin.set_ylabel(ylabel, fontsize=9)
    log.set_ylabel(f"|{ylabel}|", fontsize=9)
    log.set_yscale("log")
    lin.set_title(f"linear y, t = 0..{settled} (after that every curve stays within "
                  f"{tolerance:.2g} of its final value)", fontsize=8)
    if negative:
        log.set_title("log |gap|: hollow markers where the gap is negative (the notebook's "
                      "'opt' lies above the optimum)", fontsize=8)
    for ax in (lin, log):
        ax.set_xlabel("numbers of iterations (t)")
        ax.grid(True, which="both", alpha=0.3)
        tidy(ax)
    extra = []
    if negative:
        extra.append((Line2D([], [], color="grey", marker="o", markerfacecolor="white",
                             linestyle="none"), "gap < 0 (|gap| drawn)"))
    if corrected:
        extra.append((Line2D([], [], color="grey", linestyle="--"),
                      "dashed: f(x~_t) + g(y_t) - F*"))
    figure_legend(fig, [lin], extra=extra)
    return fig


def title_1a(rows: list[dict]) -> str:
    return (f"Figure 1(a), {rows[0]['mode']} mode: average gap vs t, one curve per Lfrak "
            f"({runs_phrase(rows[0]['runs'])})")


def title_1b(rows: list[dict]) -> str:
    return (f"Figure 1(b), {rows[0]['mode']} mode: average gap vs t, one curve per sigma "
            f"({runs_phrase(rows[0]['runs'])})")


def fig1a(settings: list[Setting], out: Path) -> list[dict]:
    """Figure 1(a): utility against Lfrak, t = 0..29 (the CSV has every t)."""
    rows = curve_rows(settings)
    finish_figure(draw_curves(rows, label_1a, FIG1A_POINTS),
                  out / f"fig1a_{rows[0]['mode']}.png", rows, title_1a(rows))
    return rows


def fig1b(settings: list[Setting], out: Path) -> list[dict]:
    """Figure 1(b): utility against sigma, t = 0..99 as the notebook draws it."""
    rows = curve_rows(settings)
    # t = 0 .. T - 1, as the notebook draws it
    finish_figure(draw_curves(rows, label_1b, settings[0].gap.shape[1] - 1),
                  out / f"fig1b_{rows[0]['mode']}.png", rows, title_1b(rows))
    return rows


def table2_rows(settings: list[Setting]) -> tuple[list[dict], list[list[Comparison]]]:
    """Table 2: the tests between the sigmas' final scores F(x~_T), beside the paper's
    (``settings`` in the order of :data:`SIGMAS`)."""
    if tuple(s.sigma for s in settings) != SIGMAS:
        raise ValueError("Table 2 compares the settings of every sigma of SIGMAS, in order")
    table = pairwise([s.runs.objective[:, -1] for s in settings])
    rows = []
    for i, a in enumerate(settings):
        for j, b in enumerate(settings):
            c = table[i][j]
            rows.append({"mode": a.mode, "sigma_a": a.sigma, "sigma_b": b.sigma,
                         "levene_p": c.levene_p, "test": c.test, "p_value": c.p_value,
                         "paper_p_value": float(PAPER_TABLE2[i, j])})
    return rows, table


def plateau(setting: Setting, last: int = 20) -> float:
    """The mean gap over the last ``last`` iterations and all runs (a curve's plateau)."""
    return float(setting.gap[:, -last:].mean())


def privacy_rows(settings: list[Setting], clip: float) -> list[dict]:
    """Local zCDP of one record's iteration at every setting (:func:`local_rho` with
    Delta = 2 clip, the replace-one radius of a clipped gradient), its (epsilon, 1e-5)-DP by
    the standard Bun-Steinke conversion, and the largest per-record gradient norm the chains
    queried (whether the clip would have changed anything)."""
    rows = []
    for s in settings:
        rho = local_rho(s.eta, 2.0 * clip, s.sigma) if s.sigma > 0 else float("inf")
        rows.append({"mode": s.mode, "study": s.study, "case": s.case.label, "eta": s.eta,
                     "sigma": s.sigma, "clip": clip, "Delta": 2.0 * clip, "local_rho": rho,
                     "epsilon_at_delta_1e-5": zcdp_to_eps_standard(rho, PRIVACY_DELTA),
                     "max_gradient_norm": s.runs.max_gradient_norm,
                     "clip_above_every_gradient": bool(s.runs.max_gradient_norm <= clip)})
    return rows


#: how the privacy curve labels each variant; strongly convex ones are nominal here
#: (docs/methods/chan2023.md, "Strong convexity in the experiments")
CURVE_LABELS = {"convex": "convex, C/T (Cor. 6.2)",
                "strongly-convex-paper": "strongly convex, paper's Lfrak^(2T-1) (nominal)",
                "strongly-convex-conservative": "strongly convex, Lfrak^T (re-derived; nominal)",
                "strongly-convex-precise": "strongly convex, phi_T form, L = Lfrak (nominal)",
                "strongly-convex-precise-paper": "strongly convex, phi_T form, L = Lfrak^2 "
                                                 "(nominal)"}


def case_constants(case: Case) -> AmplificationConstants:
    """The public constants of a Table 1 case with the code's nominal mu = nu = 2 r^2."""
    return AmplificationConstants(eta=case.eta, beta=case.beta, nu=case.nu, mu=case.nu,
                                  mu_g=PENALTY.strong_convexity)


def privacy_curve_rows(clip: float, sigma: float, max_k: int = 200) -> list[dict]:
    """Amplified over local zCDP against k for every variant and Table 1 case (the CSV
    behind :func:`draw_privacy_curve`), and the zCDP itself at Delta = 2 clip and ``sigma``."""
    ks = np.arange(max_k + 1)
    rows = []
    for case in LFRAK_CASES:
        curve = amplification_curve(case_constants(case), 2.0 * clip, sigma, ks)
        for i, k in enumerate(ks):
            rows.append({"case": case.label, "eta": case.eta, "contraction": case.contraction,
                         "k": int(k), "T": int(curve["T"][i]),
                         "local_rho": float(curve["local_rho"][i]),
                         **{f"{name}_ratio": float(curve[name][i]) for name in CURVE_VARIANTS},
                         **{f"{name}_rho": float(curve[name + "_rho"][i])
                            for name in CURVE_VARIANTS}})
    return rows


#: one style per variant, the same in every panel
CURVE_PALETTE = Palette({name: Style(colour, marker, "-" if name == "convex" else "--")
                         for name, colour, marker in zip(
                             CURVE_VARIANTS, ("black", "tab:blue", "tab:orange", "tab:green",
                                              "tab:red", "tab:purple"), MARKERS)})


def draw_privacy_curve(rows: list[dict]):
    """One log panel per Table 1 case: amplified / local zCDP against k, every variant."""
    plt = pyplot()
    cases = list(dict.fromkeys(r["case"] for r in rows))
    fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 4.0), sharey=True,
                             squeeze=False)
    for ax, case in zip(axes[0], cases):
        mine = [r for r in rows if r["case"] == case]
        ks = np.array([r["k"] for r in mine], dtype=float)
        for name in CURVE_VARIANTS:
            ratio = np.array([r[f"{name}_ratio"] for r in mine], dtype=float)
            if not np.isnan(ratio).all():
                CURVE_PALETTE.plot(ax, ks, ratio, name, CURVE_LABELS[name])
        ax.set_yscale("log")
        ax.set_title(f"{case}: eta = {mine[0]['eta']:.4g}, Lfrak = {mine[0]['contraction']:.3f}",
                     fontsize=9)
        ax.set_xlabel("k: noisy iterations after the record's use")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("amplified / local zCDP  (min with 1)")
    axes[0][0].set_ylim(1e-12, 2.0)
    for ax in axes[0]:
        tidy(ax)
    figure_legend(fig, ncol=3)
    return fig


def privacy_curve_title(rows: list[dict], clip: float, sigma: float) -> str:
    return (f"Privacy amplification by iteration on the paper's instance (local rho at "
            f"sigma = {sigma:g}, Delta = {2 * clip:g}: {display.loss(rows[0]['local_rho'], 3)} "
            "for the first case)")


def privacy_curve(out: Path, clip: float, sigma: float, max_k: int = 200) -> list[dict]:
    """Beyond the paper: amplified over local zCDP against k, the noisy iterations after a
    record's use (T = floor(k/2) Markov operators), every variant, one panel per Table 1
    case; the CSV also has the zCDP itself at Delta = 2 clip and ``sigma``."""
    rows = privacy_curve_rows(clip, sigma, max_k)
    finish_figure(draw_privacy_curve(rows), out / "privacy_curve.png", rows,
                  privacy_curve_title(rows, clip, sigma))
    return rows
