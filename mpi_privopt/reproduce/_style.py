"""The look of the reproductions' figures, shared by all of them.

* :class:`Palette`: one colour, marker and line style per method (or series) name, the same
  in every figure of a reproduction, so that a reader follows a method across figures;
* :func:`mark_coincident`: curves that lie on top of each other are both kept visible (the
  lower one drawn as a wide translucent halo, markers at different places) and the panel
  says "A coincides with B" above it;
* :func:`figure_legend`: one legend below the panels, never over the data.

matplotlib is imported inside the functions: the reproductions' modules are loaded by
their MPI worker ranks, which draw nothing.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: markers in the order a palette hands them out
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")
#: markers per line across the width of a panel
MARKERS_PER_LINE = 9
#: two curves coincide when they are this close (share of the axes' height) ...
COINCIDE_WITHIN = 0.012
#: ... over at least this share of the points they share
COINCIDE_SHARE = 0.8


@dataclass(frozen=True)
class Style:
    """How one method is drawn: colour, marker and line style."""

    colour: str
    marker: str = "o"
    linestyle: str = "-"
    linewidth: float = 1.5


class Palette:
    """One :class:`Style` per name, in a fixed order (which also staggers the markers).

    Parameters
    ----------
    styles
        Name -> style; the order decides where each line's first marker sits, so that
        the markers of two coinciding curves do not fall on the same points.
    """

    def __init__(self, styles: Mapping[str, Style]) -> None:
        self.styles = dict(styles)

    def __getitem__(self, name: str) -> Style:
        return self.styles[name]

    def __contains__(self, name: str) -> bool:
        return name in self.styles

    def plot(self, ax, x, y, name: str, label: str, **overrides):
        """Draw ``y`` against ``x`` in ``name``'s style (``overrides``: matplotlib keywords)."""
        style = self.styles[name]
        options = {"color": style.colour, "marker": style.marker,
                   "linestyle": style.linestyle, "linewidth": style.linewidth,
                   "markersize": 5, "label": label}
        options.update(overrides)
        (line,) = ax.plot(x, y, **options)
        if "markevery" not in overrides:
            # a few markers, placed by :func:`tidy` once the axes' scales are known; each
            # name starts at its own offset so that coinciding curves show both markers
            line.marker_offset = (0.37 * list(self.styles).index(name)) % 1.0
            line.set_markevery(max(1, np.size(x) // MARKERS_PER_LINE))
        return line

    def band(self, ax, x, low, high, name: str, alpha: float = 0.18) -> None:
        """A shaded band (min-max, +- std) in ``name``'s colour, behind the lines."""
        ax.fill_between(x, low, high, color=self.styles[name].colour, alpha=alpha, lw=0,
                        zorder=1)


def sweep_palette(names: Sequence[str], cmap: str = "viridis") -> Palette:
    """A palette for an ordered sweep of one parameter: colours along ``cmap`` (dark to
    light, kept clear of its palest end), one marker each, solid lines."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    shades = colormaps[cmap](np.linspace(0.0, 0.85, max(len(names), 2)))
    return Palette({name: Style(to_hex(shades[i]), MARKERS[i % len(MARKERS)])
                    for i, name in enumerate(names)})


def runs_phrase(runs: int) -> str:
    """"1 run" / "5 runs"."""
    return f"{runs} run" if runs == 1 else f"{runs} runs"


def spread_phrase(runs: int, spread: str = "mean +- std") -> str:
    """What a curve and its band are: "mean +- std over 5 runs", or "one run (no spread)"."""
    return "one run (no spread)" if runs == 1 else f"{spread} over {runs} runs"


def _labelled_lines(ax) -> list:
    return [line for line in ax.get_lines()
            if not line.get_label().startswith("_") and line.get_visible()
            and np.size(line.get_xdata()) > 1]


def _scaled(values: np.ndarray, scale: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if scale == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(values > 0, np.log10(values), np.nan)
    return values


def coincide(ax, lower, upper) -> bool:
    """Whether two lines of ``ax`` lie within :data:`COINCIDE_WITHIN` of the axes' height of
    each other over :data:`COINCIDE_SHARE` of the visible x range they share."""
    ax.autoscale_view()
    x1, y1 = (np.asarray(v, dtype=float) for v in lower.get_data())
    x2, y2 = (np.asarray(v, dtype=float) for v in upper.get_data())
    lo, hi = sorted(ax.get_xlim())
    keep = (x1 >= max(lo, np.nanmin(x2))) & (x1 <= min(hi, np.nanmax(x2))) & np.isfinite(y1)
    if keep.sum() < 2:
        return False
    order = np.argsort(x2)
    scale = ax.get_yscale()
    other = np.interp(x1[keep], x2[order], _scaled(y2[order], scale))
    mine = _scaled(y1[keep], scale)
    bottom, top = _scaled(np.array(ax.get_ylim()), scale)
    height = abs(top - bottom) or 1.0
    close = np.abs(mine - other) <= COINCIDE_WITHIN * height
    return bool(np.mean(close) >= COINCIDE_SHARE)


def space_markers(ax) -> None:
    """Put the markers of the palette's lines at evenly spaced places across the panel (on
    its x scale, log or linear), each line from its own offset."""
    lo, hi = ax.get_xlim()
    scale = ax.get_xscale()
    left, right = _scaled(np.array([lo, hi]), scale)
    for line in ax.get_lines():
        offset = getattr(line, "marker_offset", None)
        if offset is None:
            continue
        x = _scaled(line.get_xdata(), scale)
        y = np.asarray(line.get_ydata(), dtype=float)
        where = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
        if where.size == 0 or not np.isfinite(right - left) or right == left:
            continue
        spacing = (right - left) / MARKERS_PER_LINE
        targets = left + (offset + np.arange(MARKERS_PER_LINE)) * spacing
        targets = targets[(targets >= x[where].min()) & (targets <= x[where].max())]
        nearest = where[np.abs(x[where][None, :] - targets[:, None]).argmin(axis=1)]
        line.set_markevery(sorted(set(nearest.tolist())) or [int(where[0])])


def plain_log_ticks(ax) -> None:
    """A log y axis spanning less than a decade or two labels its ticks ``2``, ``0.3`` (not
    ``2 x 10^0``), its minor ticks too: they are the only ones it has."""
    from matplotlib.ticker import FuncFormatter

    low, high = sorted(ax.get_ylim())
    if ax.get_yscale() != "log" or low <= 0 or high / low > 30:
        return
    plain = FuncFormatter(lambda v, _: f"{v:.3g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def tidy(ax) -> list[tuple[str, str]]:
    """After a panel is drawn and its scales set: :func:`space_markers`,
    :func:`plain_log_ticks`, then :func:`mark_coincident` (returns its pairs)."""
    ax.autoscale_view()
    space_markers(ax)
    plain_log_ticks(ax)
    return mark_coincident(ax)


def _groups(lines: list, pairs: list) -> list[list]:
    """The connected groups of coinciding lines, each in drawing order."""
    group = {id(line): {id(line)} for line in lines}
    for a, b in pairs:
        merged = group[id(a)] | group[id(b)]
        for member in merged:
            group[member] = merged
    seen, out = set(), []
    for line in lines:
        members = group[id(line)]
        if len(members) > 1 and id(line) not in seen:
            seen |= members
            out.append([x for x in lines if id(x) in members])
    return out


def _and(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def mark_coincident(ax) -> list[list[str]]:
    """Keep curves that coincide visible, and say so above the panel.

    Lines that coincide form groups. In a group, a lower line (drawn earlier) becomes a
    wide translucent halo under the others when its group is a pair or when a line above it
    has its marker (several distinct markers on one curve show the group already); the
    panel's title gains "A coincides with B" ("A, B and C coincide"), wrapped to the
    panel's width. Returns the groups' labels.
    """
    import textwrap

    lines = _labelled_lines(ax)
    pairs = [(a, b) for i, a in enumerate(lines) for b in lines[i + 1:] if coincide(ax, a, b)]
    groups = _groups(lines, pairs)
    for group in groups:
        top = group[-1]
        for i, lower in enumerate(group[:-1]):
            above = group[i + 1:]
            if len(group) > 2 and all(x.get_marker() != lower.get_marker() for x in above):
                continue
            if not hasattr(lower, "plain_style"):  # the legend keeps showing the plain line
                lower.plain_style = (lower.get_linewidth(), lower.get_alpha())
            lower.set_linewidth(max(x.get_linewidth() for x in above) + 3.0)
            lower.set_alpha(0.45)
            lower.set_zorder(min(lower.get_zorder(), top.get_zorder() - 0.1))
    if groups:
        note = "; ".join(f"{g[0].get_label()} coincides with {g[1].get_label()}" if len(g) == 2
                         else f"{_and([x.get_label() for x in g])} coincide" for g in groups)
        # about the characters of 8-point text across the panel
        width = max(30, int(ax.get_position().width * ax.figure.get_figwidth() * 72 / 4.6))
        note = textwrap.fill(note, width)
        title = ax.get_title()
        ax.set_title(f"{title}\n{note}" if title else note, fontsize=None if title else 8)
    return [[x.get_label() for x in g] for g in groups]


def _plain(handle):
    """A legend handle: a line as its palette drew it (not the halo of a coinciding one)."""
    from matplotlib.lines import Line2D

    if not isinstance(handle, Line2D) or not hasattr(handle, "plain_style"):
        return handle
    width, alpha = handle.plain_style
    return Line2D([], [], color=handle.get_color(), marker=handle.get_marker(),
                  linestyle=handle.get_linestyle(), linewidth=width, alpha=alpha,
                  markersize=handle.get_markersize(),
                  markerfacecolor=handle.get_markerfacecolor())


def figure_legend(fig, axes: Iterable | None = None, ncol: int | None = None,
                  extra: Sequence = ()) -> None:
    """One legend for the whole figure, below its panels: each label once, in the order the
    panels first drew it (``extra``: more (handle, label) pairs at its end).

    The figure is saved with ``bbox_inches="tight"`` (:func:`mpi_privopt.reproduce.
    save_figure`), which takes the legend in.
    """
    handles: dict[str, object] = {}
    for ax in (fig.axes if axes is None else axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, _plain(handle))
    for handle, label in extra:
        handles.setdefault(label, handle)
    if not handles:
        return
    fig.tight_layout()
    columns = ncol or min(len(handles), 3 if max(map(len, handles)) > 30 else 5)
    fig.legend(list(handles.values()), list(handles), loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=columns, fontsize=8, frameon=False)


def panel_legend(ax, ncol: int = 2) -> None:
    """A legend below one panel (its x label above it), for figures whose panels show
    different entries."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend([_plain(h) for h in handles], labels, loc="upper center",
                  bbox_to_anchor=(0.5, -0.2), ncol=ncol, fontsize=7.5, frameon=False)
