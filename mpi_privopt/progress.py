"""A progress line on stderr for long runs and reproductions (rank 0, or the driver).

``iter 120/200  elapsed 3.1 s  remaining ~2.0 s  epsilon 7.312 (worst link)``

On a terminal the line is rewritten in place (carriage return) a few times a second and
ends with a newline when the work is done. Where stderr is not a terminal it is off unless
asked for (``--progress``, ``run.progress = "on"``), and then a full line is written every
few seconds, so that a log file is not flooded. ``--quiet`` turns it off. stdout keeps the
run's own lines (the ``iter n/T`` metric lines and the summary): the progress line is for
whoever watches, not for the record.
"""
from __future__ import annotations

import sys
from time import perf_counter
from typing import TextIO

from . import display

#: the values of ``run.progress``
PROGRESS_MODES = ("auto", "on", "off")


def progress_wanted(setting: str, stream: TextIO | None = None) -> bool:
    """Whether to show progress: ``on``, ``off``, or ``auto`` (when ``stream``, stderr by
    default, is a terminal)."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """One progress line for ``total`` steps of ``what`` (``iter``, ``run``).

    Parameters
    ----------
    total : int
        The number of steps.
    what : str
        The step's name on the line.
    stream : file, optional
        Where the line goes (stderr by default).
    interval : float, optional
        Seconds between two updates; 0.25 on a terminal, 5 otherwise.
    """

    def __init__(self, total: int, what: str = "iter", stream: TextIO | None = None,
                 interval: float | None = None) -> None:
        self.total = total
        self.what = what
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.interval = interval if interval is not None else (0.25 if self.tty else 5.0)
        self.start = perf_counter()
        self._last = -float("inf")
        self._width = 0

    def line(self, done: int, epsilon: float | None = None, now: float | None = None) -> str:
        """The text of the line after ``done`` steps."""
        elapsed = (perf_counter() if now is None else now) - self.start
        parts = [f"{self.what} {done:>{len(str(self.total))}}/{self.total}",
                 f"elapsed {_seconds(elapsed)}"]
        if 0 < done < self.total:
            parts.append(f"remaining ~{_seconds(elapsed / done * (self.total - done))}")
        if epsilon is not None:
            parts.append(f"epsilon {display.loss(epsilon)} (worst link)")  # rounded up
        return "  ".join(parts)

    def update(self, done: int, epsilon: float | None = None) -> None:
        """Show the line if ``interval`` has passed since the last one (always at the end)."""
        now = perf_counter()
        if now - self._last < self.interval and done < self.total:
            return
        self._last = now
        text = self.line(done, epsilon, now)
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

    def clear(self) -> None:
        """Blank an in-place line (before another line is printed on the terminal); the
        next update draws it again."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
            self._last = -float("inf")

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
