"""The progress line on stderr: shown where a person watches or when asked, hidden
otherwise; its time remaining from the recent rate, set-up left out."""
import io

import pytest
from mpi4py import MPI

from mpi_privopt.services import progress as progress_module
from mpi_privopt.cli import build_parser, progress_choice
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.errors import ConfigError
from mpi_privopt.services.progress import (LOG_INTERVAL, TERMINAL_INTERVAL, WATCHED_INTERVAL, Progress,
                                  RecentRate, progress_line, progress_wanted)
from mpi_privopt.watching import TERMINAL_VARIABLE


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def nobody(monkeypatch):
    """No person watching unless a test says so (the environment may say otherwise)."""
    monkeypatch.setenv(TERMINAL_VARIABLE, "0")


def test_auto_shows_where_a_person_watches(nobody, monkeypatch):
    assert progress_wanted("auto", Terminal())
    assert not progress_wanted("auto", io.StringIO())
    assert progress_wanted("on", io.StringIO()) and not progress_wanted("off", Terminal())
    monkeypatch.setenv(TERMINAL_VARIABLE, "1")  # rank 0 behind a pipe, watched
    assert progress_wanted("auto", io.StringIO())


def test_each_place_gets_its_kind_of_line(nobody, monkeypatch):
    terminal = progress_line("auto", 10, stream=Terminal())
    assert terminal.tty and terminal.interval == TERMINAL_INTERVAL
    assert progress_line("auto", 10, stream=io.StringIO()) is None        # a log
    assert progress_line("on", 10, stream=io.StringIO()).interval == LOG_INTERVAL
    assert progress_line("off", 10, stream=Terminal()) is None
    monkeypatch.setenv(TERMINAL_VARIABLE, "1")
    watched = progress_line("auto", 10, stream=io.StringIO())
    assert not watched.tty and watched.interval == WATCHED_INTERVAL  # whole lines


def test_the_line_says_iteration_elapsed_remaining_and_epsilon():
    progress = Progress(200)
    for now, done in ((0.0, 1), (1.0, 10), (2.0, 20)):
        progress.rate.add(now, done)
    line = progress.line(50, 7.3124)
    assert line.startswith("iter  50/200  elapsed ")
    assert "remaining ~18.0 s" in line and "epsilon 7.313 (worst link)" in line  # rounded up
    assert "remaining" not in progress.line(200)  # done: nothing remains
    assert "remaining" not in Progress(200).line(50)  # no rate yet: no guess


def test_the_epsilon_says_unbounded_or_carries_the_methods_label():
    # a non-private run: unbounded, never inf; a nominal accounting: its label beside it
    assert Progress(10).line(5, float("inf")).endswith("epsilon unbounded (worst link)")
    label = "nominal (C = 1): not a privacy guarantee"
    assert Progress(10, epsilon_label=label).line(5, 601.11).endswith(
        f"epsilon 601.2 (worst link; {label})")
    assert progress_line("on", 10, stream=io.StringIO(), epsilon_label=label).epsilon_label \
        == label


def test_no_estimate_until_a_few_steps_after_the_first_then_the_true_rate():
    # 8000 iterations of 3 ms; the first update comes after a slow first iteration
    rate = RecentRate(settle=2)
    rate.add(0.25, 1)
    assert rate.remaining(8000) is None
    rate.add(0.253, 2)                    # within the settling steps: left out
    assert rate.remaining(8000) is None
    rate.add(0.5, 84)                     # the first sample that counts
    assert rate.remaining(8000) is None   # one sample is no rate
    rate.add(1.0, 84 + 500 / 3)
    assert rate.remaining(8000) == pytest.approx((8000 - 84 - 500 / 3) * 0.003)


def test_the_rate_follows_a_slow_down_within_its_window():
    rate = RecentRate(settle=0, window=10.0)
    for t in range(0, 21):               # 100 steps a second for 20 s
        rate.add(float(t), 100.0 * t)
    assert rate.remaining(10000) == pytest.approx(80.0)
    for t in range(21, 41):              # then 50 a second
        rate.add(float(t), 2000 + 50.0 * (t - 20))
    assert rate.remaining(10000) == pytest.approx((10000 - 3000) / 50)


def test_nothing_done_in_the_window_gives_no_estimate():
    rate = RecentRate(settle=0, window=5.0)
    for t in range(20):
        rate.add(float(t), 7)
    assert rate.remaining(10) is None


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_set_up_is_left_out_of_the_first_estimate(monkeypatch):
    # The case: a 25 s run of 8000 iterations said "remaining ~6 min 51 s" at
    # first, its set-up and first evaluation counted as iterations. Synthetic clock.
    clock = Clock()
    monkeypatch.setattr(progress_module, "perf_counter", clock)
    out = io.StringIO()
    progress = Progress(8000, stream=out, interval=WATCHED_INTERVAL)
    clock.now = 2.0                          # set-up and the first evaluation: 2 s
    for n in range(1, 8001):
        clock.now += 0.003
        progress.update(n)
    lines = out.getvalue().splitlines()
    assert "remaining" not in lines[0] and lines[0].startswith("iter    1/8000")
    estimates = [line for line in lines if "remaining" in line]
    assert estimates, lines
    true_left = (8000 - int(estimates[0].split("/")[0].split()[-1])) * 0.003
    first = estimates[0].split("remaining ~")[1].split(" s")[0]
    assert float(first) == pytest.approx(true_left, abs=0.11)   # shown to 0.1 s
    assert len(lines) == len(estimates) + 2   # the first line has none, the last needs none
    assert lines[-1].startswith("iter 8000/8000")


def test_a_terminal_line_is_rewritten_in_place_and_ends_with_a_newline():
    out = Terminal()
    progress = Progress(3, stream=out, interval=0.0)
    for n in (1, 2, 3):
        progress.update(n, 1.5)
    text = out.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 1 and text.endswith("\n")
    assert "iter 3/3" in text


def test_a_log_gets_whole_lines_at_most_every_interval_and_the_last_one():
    out = io.StringIO()
    progress = Progress(100, stream=out, interval=3600.0)
    for n in range(1, 101):
        progress.update(n)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("iter   1/100") and "100/100" in lines[1]
    assert "\r" not in out.getvalue()


def test_the_command_line_flags():
    parse = build_parser().parse_args
    assert progress_choice(parse(["run"])) is None  # run.progress decides
    assert progress_choice(parse(["run", "--progress"])) is True
    assert progress_choice(parse(["run", "--quiet"])) is False
    assert progress_choice(parse(["run", "--quiet", "--progress"])) is False


def test_run_progress_is_checked():
    assert load_config(None, ["run.progress=on"]).run.progress == "on"
    with pytest.raises(ConfigError, match="run.progress"):
        load_config(None, ["run.progress=sometimes"])


@pytest.mark.parametrize("asked, shown", [(True, True), (False, False), (None, False)])
def test_a_run_shows_its_line_on_stderr_only_when_asked(tmp_path, capsys, monkeypatch,
                                                        asked, shown):
    # stderr is captured here (not a terminal, no launcher): "auto" hides the line
    monkeypatch.delenv(TERMINAL_VARIABLE, raising=False)
    cfg = load_config(None, ["run.iterations=5", "problem.samples=10"])
    run(cfg, out=str(tmp_path / "run"), comm=MPI.COMM_SELF, stream=None, progress=asked)
    err = capsys.readouterr().err
    assert ("iter 5/5  elapsed" in err) is shown


def test_a_reproduction_takes_quiet_and_progress_for_its_progress_line():
    from mpi_privopt import reproduce
    for argv, mode in ((["--quiet"], "off"), (["--progress"], "on"), ([], "auto"),
                       (["--progress", "--quiet"], "off")):
        with pytest.raises(SystemExit) as done:  # the reproduction's own --help
            reproduce.run("gauthier2024", [*argv, "--help"])
        assert done.value.code == 0
        assert reproduce.PROGRESS["mode"] == mode
    reproduce.PROGRESS["mode"] = "auto"
