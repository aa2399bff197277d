"""Tables and figures (PNG with the CSV behind each) of ``reproduce chan2023``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...privacy.amplification import local_rho
from .. import finish_figure, pyplot, write_csv
from .replay import Setting
from .settings import FIG1A_POINTS, PAPER_TABLE1, PAPER_TABLE2, SIGMAS
from .significance import Comparison, convergence_iteration, pairwise


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


def _curves(settings: list[Setting], name: str, label, points: int, out: Path,
            title: str) -> list[dict]:
    """Mean gap against t for every setting, linear and log y (as the notebook saves both);
    in corrected mode also f(x~_t) + g(y_t) - F* (dashed)."""
    plt = pyplot()
    corrected = settings[0].mode == "corrected"
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2))
    rows = []
    for s in settings:
        gap, split = s.gap.mean(0), s.split_gap.mean(0)
        t = np.arange(gap.size)
        for ax in axes:
            line, = ax.plot(t[:points], gap[:points], label=label(s), lw=1.4)
            if corrected:
                ax.plot(t[:points], split[:points], "--", color=line.get_color(), lw=1.0)
        for i in t:
            rows.append({"mode": s.mode, "case": s.case.label, "contraction": s.case.contraction,
                         "eta": s.eta, "sigma": s.sigma, "t": int(i), "mean_gap": float(gap[i]),
                         "mean_split_gap": float(split[i]),
                         "std_gap": float(s.gap[:, i].std(ddof=1)) if s.gap.shape[0] > 1
                         else float("nan"),
                         "reference": s.reference, "runs": s.gap.shape[0]})
    ylabel = ("average gap F(x~_t) - F*  (dashed: f(x~_t) + g(y_t) - F*)" if corrected
              else "average optimality gap F(x~_t) - opt (notebook)")
    for ax, scale in zip(axes, ("linear", "log")):
        ax.set_yscale(scale)
        ax.set_xlabel("numbers of iterations (t)")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    if any((s.gap.mean(0)[:points] <= 0).any() for s in settings):
        axes[1].set_title("log y: a curve stops where its gap turns negative", fontsize=9)
    finish_figure(fig, out / f"{name}.png", rows, title)
    return rows


def fig1a(settings: list[Setting], out: Path) -> list[dict]:
    """Figure 1(a): utility against Lfrak, t = 0..29 (the CSV has every t)."""
    mode = settings[0].mode
    return _curves(settings, f"fig1a_{mode}", lambda s: f"L={s.case.contraction:.2f}",
                   FIG1A_POINTS, out,
                   f"Figure 1(a), {mode} mode: average gap vs t, one curve per Lfrak "
                   f"({settings[0].gap.shape[0]} runs)")


def fig1b(settings: list[Setting], out: Path) -> list[dict]:
    """Figure 1(b): utility against sigma, t = 0..99 as the notebook draws it."""
    mode = settings[0].mode
    return _curves(settings, f"fig1b_{mode}",
                   lambda s: f"sigma={s.sigma:.2f}" + (f" (eta={s.eta:g})"
                                                       if s.eta != settings[0].eta else ""),
                   settings[0].gap.shape[1] - 1, out,
                   f"Figure 1(b), {mode} mode: average gap vs t, one curve per sigma "
                   f"({settings[0].gap.shape[0]} runs)")


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
    Delta = 2 clip, the replace-one radius of a clipped gradient), and the largest per-record gradient norm the chains queried (whether
    the clip would have changed anything)."""
    rows = []
    for s in settings:
        rho = local_rho(s.eta, 2.0 * clip, s.sigma) if s.sigma > 0 else float("inf")
        rows.append({"mode": s.mode, "study": s.study, "case": s.case.label, "eta": s.eta,
                     "sigma": s.sigma, "clip": clip, "Delta": 2.0 * clip, "local_rho": rho,
                     "max_gradient_norm": s.runs.max_gradient_norm,
                     "clip_above_every_gradient": bool(s.runs.max_gradient_norm <= clip)})
    return rows
