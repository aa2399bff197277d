"""Tables and figures (PNG with the CSV behind each) of ``reproduce chan2023``."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...privacy.amplification import (CURVE_VARIANTS, AmplificationConstants,
                                      amplification_curve, local_rho)
from ...privacy.conversions import zcdp_to_eps_standard
from .. import finish_figure, pyplot
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


#: how the privacy curve labels each variant; strongly convex ones are nominal here (A4)
CURVE_LABELS = {"convex": "convex, C/T (Cor. 6.2)",
                "strongly-convex-paper": "strongly convex, paper's Lfrak^(2T-1) (nominal)",
                "strongly-convex-conservative": "strongly convex, Lfrak^T (A1; nominal)",
                "strongly-convex-precise": "strongly convex, phi_T form, L = Lfrak (nominal)",
                "strongly-convex-precise-paper": "strongly convex, phi_T form, L = Lfrak^2 "
                                                 "(nominal)"}


def case_constants(case: Case) -> AmplificationConstants:
    """The public constants of a Table 1 case with the code's nominal mu = nu = 2 r^2."""
    return AmplificationConstants(eta=case.eta, beta=case.beta, nu=case.nu, mu=case.nu,
                                  mu_g=PENALTY.strong_convexity)


def privacy_curve(out: Path, clip: float, sigma: float, max_k: int = 200) -> list[dict]:
    """Beyond the paper: amplified over local zCDP against k, the noisy iterations after a
    record's use (T = floor(k/2) Markov operators), every variant, one panel per Table 1
    case; the CSV also has the zCDP itself at Delta = 2 clip and ``sigma``."""
    plt = pyplot()
    ks = np.arange(max_k + 1)
    fig, axes = plt.subplots(1, len(LFRAK_CASES), figsize=(4.2 * len(LFRAK_CASES), 4.0),
                             sharey=True)
    rows = []
    for ax, case in zip(axes, LFRAK_CASES):
        curve = amplification_curve(case_constants(case), 2.0 * clip, sigma, ks)
        for name in CURVE_VARIANTS:
            if not np.isnan(curve[name]).all():
                ax.semilogy(ks, curve[name], "-" if name == "convex" else "--",
                            label=CURVE_LABELS[name], lw=1.3)
        for i, k in enumerate(ks):
            rows.append({"case": case.label, "eta": case.eta, "contraction": case.contraction,
                         "k": int(k), "T": int(curve["T"][i]),
                         "local_rho": float(curve["local_rho"][i]),
                         **{f"{name}_ratio": float(curve[name][i]) for name in CURVE_VARIANTS},
                         **{f"{name}_rho": float(curve[name + "_rho"][i])
                            for name in CURVE_VARIANTS}})
        ax.set_title(f"{case.label}: eta = {case.eta:.4g}, Lfrak = {case.contraction:.3f}",
                     fontsize=9)
        ax.set_xlabel("k: noisy iterations after the record's use")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("amplified / local zCDP  (min with 1)")
    axes[0].set_ylim(1e-12, 2.0)
    axes[0].legend(fontsize=6.5, loc="lower left")
    finish_figure(fig, out / "privacy_curve.png", rows,
                  f"Privacy amplification by iteration on the paper's instance (local rho at "
                  f"sigma = {sigma:g}, Delta = {2 * clip:g}: "
                  f"{local_rho(LFRAK_CASES[0].eta, 2 * clip, sigma):.3g} for the first case)")
    return rows
