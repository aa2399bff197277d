"""A progress line on stderr for long runs, reproductions, benches and audits.

``iter 120/200  elapsed 3.1 s  remaining ~2.0 s  epsilon 7.312 (worst link)``

The epsilon is rounded up (:func:`mpi_privopt.display.loss`); a non-private run's is
``unbounded``, and a method whose epsilons are not a proven bound has its label beside it
(``epsilon 601.2 (worst link; nominal (C = 1): not a privacy guarantee)``).

Where it goes (:func:`progress_line`): on a terminal the line is rewritten in place
(carriage return) a few times a second and ends with a newline when the work is done.
Where a person watches through a pipe (rank 0 under ``mpiexec`` whose launcher writes to a
terminal: :mod:`mpi_privopt.watching`) a whole line is written every few seconds. A log
file or a batch job gets no line unless asked for (``--progress``, ``run.progress =
"on"``), and then a whole line every :data:`LOG_INTERVAL` seconds. ``--quiet`` turns it
off. stdout keeps the run's own lines (the ``iter n/T`` metric lines and the summary): the
progress line is for whoever watches, not for the record.

The time remaining comes from :class:`RecentRate`: the rate over a moving window of recent
(time, steps done) samples, none taken before a few steps have passed since the first
update. Set-up and the first iterations (imports, first allocations, the first
evaluation) are thereby left out of the estimate, and a rate that changes (a run slowed
by another job) is followed within the window.
"""
from __future__ import annotations

import math
import sys
from collections import deque
from time import perf_counter
from typing import TextIO

from .. import display
from ..watching import is_terminal, watched

#: the values of ``run.progress``
PROGRESS_MODES = ("auto", "on", "off")
#: seconds between two redraws of an in-place line on a terminal
TERMINAL_INTERVAL = 0.25
#: seconds between two whole lines where a person watches through a pipe
WATCHED_INTERVAL = 3.0
#: seconds between two whole lines in a log (``--progress``)
LOG_INTERVAL = 5.0
#: seconds between two samples of the rate (at most; a line is always a sample too)
SAMPLE_SPACING = 0.5


def add_progress_arguments(parser, quiet: str) -> None:
    """``--quiet`` (help text ``quiet``) and ``--progress`` on a command's ``parser``."""
    parser.add_argument("--quiet", action="store_true", help=quiet)
    parser.add_argument("--progress", action="store_true",
                        help="show the progress line on stderr even in a log (it is shown "
                             "anyway where a person watches)")


def progress_mode(args) -> str:
    """``off`` with ``--quiet``, ``on`` with ``--progress``, else ``auto``."""
    return "off" if args.quiet else ("on" if args.progress else "auto")


def progress_wanted(setting: str, stream: TextIO | None = None) -> bool:
    """Whether to show progress: ``on``, ``off``, or ``auto`` (when a person watches
    ``stream``, stderr by default: :func:`mpi_privopt.watching.watched`)."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    return watched(sys.stderr if stream is None else stream)


def progress_line(setting: str, total: float, what: str = "iter",
                  stream: TextIO | None = None, in_place: bool = True,
                  **options) -> "Progress | None":
    """The :class:`Progress` line ``setting`` (``auto``, ``on``, ``off``) asks for, or None.

    A terminal gets an in-place line (whole lines every :data:`WATCHED_INTERVAL` seconds
    with ``in_place`` False); a person watching through a pipe a whole line every
    :data:`WATCHED_INTERVAL` seconds; a log that asked for it (``on``) one every
    :data:`LOG_INTERVAL` seconds. ``options`` go to :class:`Progress`.
    """
    if setting == "off":
        return None
    stream = sys.stderr if stream is None else stream
    person = watched(stream)
    if not person and setting != "on":
        return None
    interval = (TERMINAL_INTERVAL if in_place and is_terminal(stream)
                else WATCHED_INTERVAL if person else LOG_INTERVAL)
    return Progress(total, what, stream, interval=options.pop("interval", interval),
                    in_place=in_place, **options)


class RecentRate:
    """The time remaining, from the rate over a moving window of (time, done) samples.

    The first sample only marks where the work started; samples before ``settle`` more
    steps are done are ignored (set-up, warm-up). No estimate is given before two samples
    after that, with steps done between them.

    Parameters
    ----------
    settle : float, optional
        Steps after the first sample before samples count.
    window : float, optional
        Seconds of samples the rate is taken over (the oldest within it is kept).
    """

    def __init__(self, settle: float = 2, window: float = 30.0) -> None:
        self.settle = settle
        self.window = window
        self._start: float | None = None
        self._samples: deque[tuple[float, float]] = deque()

    def add(self, now: float, done: float) -> None:
        """A sample: ``done`` steps at time ``now`` (seconds, any origin)."""
        if self._start is None:
            self._start = done
        if done < self._start + self.settle:
            return
        samples = self._samples
        samples.append((now, done))
        while len(samples) > 2 and now - samples[1][0] >= self.window:
            samples.popleft()

    def remaining(self, total: float) -> float | None:
        """Seconds until ``total`` steps are done, at the last sample's time; None before
        there is a rate (or when nothing was done in the window)."""
        if len(self._samples) < 2:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        if d1 <= d0 or t1 <= t0:
            return None
        return max(total - d1, 0) * (t1 - t0) / (d1 - d0)


class Progress:
    """One progress line for ``total`` steps of ``what`` (``iter``, ``run``, ``bench``).

    Parameters
    ----------
    total : float
        The number of steps (or the total work, with ``percent``).
    what : str
        The step's name on the line.
    stream : file, optional
        Where the line goes (stderr by default).
    interval : float, optional
        Seconds between two lines; :data:`TERMINAL_INTERVAL` on a terminal,
        :data:`LOG_INTERVAL` otherwise.
    percent : bool, optional
        Show the share done (``bench  42%``) instead of ``n/total`` (weighted work).
    settle : float, optional
        Steps left out of the rate at the start (:class:`RecentRate`).
    in_place : bool, optional
        Rewrite the line in place on a terminal; False: whole lines there too (output of
        its own between them stays readable, and a terminal's log keeps every line).
    epsilon_label : str, optional
        What the run's epsilons are when they are not a proven bound (the method's
        ``epsilon_label``), shown beside the epsilon.
    """

    def __init__(self, total: float, what: str = "iter", stream: TextIO | None = None,
                 interval: float | None = None, percent: bool = False,
                 settle: float = 2, in_place: bool = True,
                 epsilon_label: str | None = None) -> None:
        self.total = total
        self.epsilon_label = epsilon_label
        self.what = what
        self.stream = sys.stderr if stream is None else stream
        self.tty = in_place and is_terminal(self.stream)
        self.interval = interval if interval is not None else (
            TERMINAL_INTERVAL if self.tty else LOG_INTERVAL)
        self.percent = percent
        self.rate = RecentRate(settle)
        self.start = perf_counter()
        self._spacing = min(self.interval, SAMPLE_SPACING)
        self._due = -float("inf")        # the next sample (or line)
        self._line_due = -float("inf")   # the next line
        self._width = 0
        self._ended = False

    def line(self, done: float, epsilon: float | None = None, now: float | None = None,
             label: str | None = None) -> str:
        """The text of the line after ``done`` steps."""
        elapsed = (perf_counter() if now is None else now) - self.start
        # the share rounded down: 100% only when done
        share = math.floor(100 * min(done / self.total, 1.0)) if self.total else 100
        head = (f"{self.what} {share:3d}%" if self.percent else f"{self.what} {done:>{len(str(self.total))}}/{self.total}")
        parts = [head] + ([label] if label else []) + [f"elapsed {_seconds(elapsed)}"]
        left = self.rate.remaining(self.total) if done < self.total else None
        if left is not None:
            parts.append(f"remaining ~{_seconds(left)}")
        if epsilon is not None:
            # rounded up; "unbounded" for a non-private run
            where = "worst link" + (f"; {self.epsilon_label}" if self.epsilon_label else "")
            parts.append(f"epsilon {display.loss(epsilon)} ({where})")
        return "  ".join(parts)

    def update(self, done: float, epsilon: float | None = None,
               label: str | None = None) -> None:
        """Record ``done`` steps; show the line if ``interval`` has passed since the last
        one (always at the end). One clock read per call: the run loop calls it every
        iteration."""
        now = perf_counter()
        if now < self._due and done < self.total or self._ended:
            return
        self.rate.add(now, done)
        self._due = now + self._spacing
        if now < self._line_due and done < self.total:
            return
        self._line_due = now + self.interval
        text = self.line(done, epsilon, now, label)
        if self.tty:
            # rewrite in place; pad over a longer previous line
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
            if done >= self.total:
                self.stream.write("\n")
                self._width = 0
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._ended = done >= self.total  # the last line is drawn once

    def clear(self) -> None:
        """Blank an in-place line (before another line is printed on the terminal); the
        next update draws it again."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
            self._due = self._line_due = -float("inf")

    def close(self) -> None:
        """End an in-place line that stopped short of ``total`` (an interrupted run)."""
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0


def _seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s" if minutes < 120 else f"{minutes // 60} h {minutes % 60:02d} min"
