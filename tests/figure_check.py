"""Whether a reader can read a drawn matplotlib Figure: checks in display coordinates.

:func:`check_figure` lists the problems of a figure (an empty list: none):

* a panel with nothing visible in it (a curve entirely off its axes, a log axis with only
  non-positive values, a lone point drawn without a marker);
* a legend entry whose line shows nothing (one point, no marker);
* a legend over more than :data:`MAX_LEGEND_SHARE` of a panel's plotted data (its lines
  sampled every :data:`STEP_PX` pixels along their length, markers, scatter points, image
  cells);
* a curve hidden under another: two lines within :data:`HIDDEN_PX` pixels of each other
  over most of their length, the lower one neither wider (a halo) nor carrying markers
  different from the upper one's.

The figure is drawn at a low resolution (:data:`CHECK_DPI`): the checks are geometric.
"""
from __future__ import annotations

import numpy as np

#: a legend may cover at most this share of a panel's plotted points
MAX_LEGEND_SHARE = 0.02
#: lines are sampled every this many pixels along their length
STEP_PX = 2.0
#: two lines closer than this (pixels at CHECK_DPI) coincide where they do
HIDDEN_PX = 1.5
#: ... and one hides the other when they coincide over this share of the lower one
HIDDEN_SHARE = 0.8
#: a halo is at least this much wider than the line on top of it
HALO_POINTS = 2.0
CHECK_DPI = 50


def draw(fig):
    """Lay the figure out at :data:`CHECK_DPI` on an Agg canvas; returns its renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.set_dpi(CHECK_DPI)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def panels(fig) -> list:
    """The axes that plot data: not colour bars, not axes switched off (a panel that says in
    words that there is nothing to draw)."""
    return [ax for ax in fig.axes if ax.axison and not hasattr(ax, "_colorbar")
            and ax.get_visible()]


def _densify(xy: np.ndarray, step: float = STEP_PX) -> np.ndarray:
    """Points every ``step`` pixels along a polyline (display coordinates); segments with a
    non-finite end are gaps."""
    out = [xy[np.all(np.isfinite(xy), axis=1)]]
    a, b = xy[:-1], xy[1:]
    ok = np.all(np.isfinite(a), axis=1) & np.all(np.isfinite(b), axis=1)
    a, b = a[ok], b[ok]
    lengths = np.hypot(*(b - a).T)
    for p, q, n in zip(a, b, np.ceil(lengths / step).astype(int)):
        if n > 1:
            t = np.linspace(0.0, 1.0, n + 1)[1:-1, None]
            out.append(p + t * (q - p))
    return np.vstack(out) if out else np.empty((0, 2))


def _inside(ax, points: np.ndarray) -> np.ndarray:
    box = ax.get_window_extent()
    if not points.size:
        return points.reshape(0, 2)
    x, y = points[:, 0], points[:, 1]
    keep = (x >= box.x0 - 0.5) & (x <= box.x1 + 0.5) & (y >= box.y0 - 0.5) & (y <= box.y1 + 0.5)
    return points[keep]


def _line_display(line) -> np.ndarray:
    x, y = (np.asarray(v, dtype=float) for v in line.get_data())
    with np.errstate(divide="ignore", invalid="ignore"):
        xy = line.get_transform().transform(np.column_stack([x, y]))
    xy[~np.all(np.isfinite(xy), axis=1)] = np.nan
    return xy


def _has_marker(line) -> bool:
    return line.get_marker() not in (None, "None", "none", "", " ")


def _has_stroke(line) -> bool:
    return line.get_linestyle() not in ("None", "none", "", " ") and line.get_linewidth() > 0


def line_points(ax, line) -> np.ndarray:
    """What a line shows inside its panel: points along its strokes, and its vertices when
    it has markers."""
    xy = _line_display(line)
    parts = []
    if _has_stroke(line) and len(xy) > 1:
        parts.append(_densify(xy))
    if _has_marker(line):
        parts.append(xy[np.all(np.isfinite(xy), axis=1)])
    return _inside(ax, np.vstack(parts)) if parts else np.empty((0, 2))


def visible_points(ax) -> np.ndarray:
    """Every plotted point of a panel in display coordinates (lines, scatter, error bars,
    image cells)."""
    from matplotlib.collections import LineCollection, PathCollection

    parts = [line_points(ax, line) for line in ax.get_lines() if line.get_visible()]
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection):  # scatter
            offsets = np.asarray(coll.get_offsets(), dtype=float)
            if offsets.size:
                parts.append(_inside(ax, coll.get_offset_transform().transform(offsets)))
        elif isinstance(coll, LineCollection):  # error bars, vlines
            for seg in coll.get_segments():
                if len(seg):
                    parts.append(_inside(ax, _densify(coll.get_transform().transform(seg))))
    for image in ax.images:
        data = np.ma.masked_invalid(np.asarray(image.get_array(), dtype=float))
        rows, cols = np.nonzero(~np.ma.getmaskarray(data))
        if rows.size:
            left, right, bottom, top = image.get_extent()
            h, w = data.shape
            cx = left + (cols + 0.5) * (right - left) / w
            cy = top + (rows + 0.5) * (bottom - top) / h  # origin "upper": row 0 at the top
            parts.append(_inside(ax, ax.transData.transform(np.column_stack([cx, cy]))))
    parts = [p for p in parts if p.size]
    return np.vstack(parts) if parts else np.empty((0, 2))


def _name(ax) -> str:
    return repr(ax.get_title() or ax.get_ylabel() or "untitled panel")


def empty_panels(fig) -> list[str]:
    return [f"panel {_name(ax)} shows no data" for ax in panels(fig)
            if not len(visible_points(ax))]


def invisible_entries(fig) -> list[str]:
    """Labelled lines (legend entries) that draw nothing a reader can see."""
    problems = []
    for ax in panels(fig):
        for line in ax.get_lines():
            label = line.get_label()
            if label.startswith("_") or not line.get_visible():
                continue
            points = line_points(ax, line)
            if not len(points) or (not _has_marker(line) and np.ptp(points, axis=0).max() < 1):
                problems.append(f"{label!r} in panel {_name(ax)} shows nothing")
    return problems


def legend_shares(fig) -> list[tuple[str, str, float]]:
    """(legend, panel, share of the panel's plotted points under the legend) for every
    legend of the figure (the panels' and the figure's own) and every panel."""
    renderer = fig.canvas.get_renderer()
    legends = [(f"legend of panel {_name(ax)}", ax.get_legend()) for ax in fig.axes
               if ax.get_legend() is not None] + [("figure legend", leg) for leg in fig.legends]
    out = []
    for what, legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in panels(fig):
            points = visible_points(ax)
            if not len(points):
                continue
            under = ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
                     & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1))
            out.append((what, _name(ax), float(under.mean())))
    return out


def _coinciding(ax, lower, upper) -> bool:
    a, b = line_points(ax, lower), _line_display(upper)
    b = b[np.all(np.isfinite(b), axis=1)]
    if len(a) < 2 or len(b) < 2 or np.any(np.diff(b[:, 0]) < 0):
        return False  # only curves that are functions of x are compared
    within = (a[:, 0] >= b[0, 0]) & (a[:, 0] <= b[-1, 0])
    if within.mean() < HIDDEN_SHARE:
        return False
    gap = np.abs(np.interp(a[within, 0], b[:, 0], b[:, 1]) - a[within, 1])
    return bool(np.mean(gap <= HIDDEN_PX) >= HIDDEN_SHARE)


def hidden_lines(fig) -> list[str]:
    """Curves lying under another one without a way to see them (see the module docstring)."""
    problems = []
    for ax in panels(fig):
        lines = sorted((line for line in ax.get_lines()
                        if line.get_visible() and not line.get_label().startswith("_")),
                       key=lambda line: line.get_zorder())  # stable: drawing order
        for i, lower in enumerate(lines):
            for upper in lines[i + 1:]:
                if not _coinciding(ax, lower, upper):
                    continue
                halo = lower.get_linewidth() >= upper.get_linewidth() + HALO_POINTS
                markers = (_has_marker(lower) and _has_marker(upper)
                           and lower.get_marker() != upper.get_marker())
                if not (halo or markers):
                    problems.append(f"{lower.get_label()!r} is hidden under "
                                    f"{upper.get_label()!r} in panel {_name(ax)}")
    return problems


def check_figure(fig, max_legend_share: float = MAX_LEGEND_SHARE) -> list[str]:
    """Every problem :mod:`figure_check` finds in ``fig`` (drawn here at :data:`CHECK_DPI`)."""
    draw(fig)
    problems = empty_panels(fig) + invisible_entries(fig) + hidden_lines(fig)
    problems += [f"{what} covers {share:.0%} of the data of panel {panel}"
                 for what, panel, share in legend_shares(fig) if share > max_legend_share]
    return problems
