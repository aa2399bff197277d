"""The progress line of ``reproduce``, ``bench`` and ``audit``: whole lines over the work
while it runs (a reproduction's batch, the bench's parts), silenced by ``--quiet``, none in
a batch job's own output. Clocks are synthetic: nothing here sleeps to measure time."""
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from mpi_privopt.services import progress as progress_module
from mpi_privopt import reproduce
from mpi_privopt.bench import ROUNDS, BenchProgress, _auto_repeats
from mpi_privopt.cli import build_parser
from mpi_privopt.services.progress import WATCHED_INTERVAL, Progress, progress_line, progress_mode
from mpi_privopt.watching import TERMINAL_VARIABLE


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress_module, "perf_counter", clock)
    return clock


def test_a_terminal_gets_whole_lines_every_few_seconds_when_not_in_place(clock, monkeypatch):
    monkeypatch.setenv(TERMINAL_VARIABLE, "0")
    out = Terminal()
    line = progress_line("auto", 100, "run", stream=out, in_place=False)
    assert not line.tty and line.interval == WATCHED_INTERVAL
    for n in range(101):
        clock.now = n * 0.5  # a run every 0.5 s: a line every 3 s, not one per run
        line.update(n)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and 15 <= len(lines) <= 19
    assert lines[-1].startswith("run 100/100") and "remaining ~" in lines[-2]
    assert progress_line("off", 100, stream=out, in_place=False) is None  # --quiet


def test_the_last_line_is_drawn_once(clock):
    out = io.StringIO()
    line = Progress(10, stream=out, interval=0.0)
    line.update(10)
    clock.now = 1.0
    line.update(10)  # the bench's finish after its last step
    assert len(out.getvalue().splitlines()) == 1


def test_bench_and_audit_take_quiet_and_progress():
    parse = build_parser().parse_args
    assert progress_mode(parse(["bench"])) == "auto"
    assert progress_mode(parse(["bench", "--quiet"])) == "off"
    assert progress_mode(parse(["bench", "--progress"])) == "on"
    assert progress_mode(parse(["audit", "default", "--quiet"])) == "off"
    assert progress_mode(parse(["audit", "default", "--progress"])) == "on"


def test_bench_help_says_how_long_the_defaults_take(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "The defaults take about" in text and "2-core machine" in text


@pytest.mark.parametrize("sizes, repeats, links, iterations, persistent", [
    ([8, 1000], 20, 3, 50, 1), ([8, 100, 1000, 10000, 100000, 1000000], 0, 2, 5000, 1),
    ([8, 1024], 0, 1, 500, 0)])
def test_the_bench_steps_add_up_to_its_plan(clock, sizes, repeats, links, iterations,
                                            persistent):
    # the steps bench_exchange, bench_links and bench_dgd take, in their order
    exchanges, variants = 3 + persistent, 4 + persistent
    total = BenchProgress.plan(sizes, repeats, exchanges, links, iterations, variants)
    out = io.StringIO()
    progress = BenchProgress(Progress(total, "bench", out, interval=0.0, percent=True,
                                      settle=0))
    for size in sizes:
        units = BenchProgress.exchange_units(size, repeats or _auto_repeats(size), exchanges)
        for r in range(ROUNDS):
            clock.now += 1.0
            progress.step(units, f"1/3 exchange of {size} doubles, round {r + 1}/{ROUNDS}")
    for _ in range(links):
        clock.now += 1.0
        progress.step(BenchProgress.LINK_UNITS, "2/3 link")
    for r in range(ROUNDS):
        clock.now += 1.0
        progress.step(variants * iterations * BenchProgress.DGD_UNITS, "3/3 DGD")
    assert progress.done == pytest.approx(total, rel=1e-12)
    progress.finish()
    lines = out.getvalue().splitlines()
    shares = [int(line.split()[1].rstrip("%")) for line in lines]
    assert shares == sorted(shares) and lines[-1].startswith("bench 100%  done")
    assert sum(line.startswith("bench 100%") for line in lines) == 1


def test_no_bench_line_on_the_other_ranks():
    progress = BenchProgress(None)
    progress.step(5.0, "anything")
    progress.finish()
    assert progress.done == 0.0


@dataclass
class FakeRun:
    key: str
    result_file: str = "result.json"


def test_a_reproduction_counts_runs_as_they_end_within_a_batch(clock, tmp_path, capsys,
                                                               monkeypatch):
    # one batch of 4 runs, each 10 s; the job is looked at every 5 s (POLL_SECONDS)
    def batch(mpiexec, ranks, module, items, batch_file, on_wait=None):
        for item in items:
            for _ in range(2):
                clock.now += 5.0
                on_wait()
            Path(item["out"]).mkdir(parents=True)
            (Path(item["out"]) / "result.json").write_text("{}")
        return 40.0

    monkeypatch.setattr(reproduce, "run_batch", batch)
    monkeypatch.setitem(reproduce.PROGRESS, "mode", "on")
    runs = [FakeRun(f"r{i}") for i in range(4)]
    reproduce.launch(runs, tmp_path, "mpiexec", ranks=2, module="m", batch_size=4,
                     progress="batch {batch}/{batches} done")
    captured = capsys.readouterr()
    assert captured.out == "batch 1/1 done\n"  # the record on stdout, the line on stderr
    counts = [int(line.split()[1].split("/")[0]) for line in captured.err.splitlines()]
    assert counts[0] == 0 and counts[-1] == 4
    assert {1, 2, 3} & set(counts), captured.err  # runs counted before the batch ended
    assert "\r" not in captured.err


def test_a_reproduction_shows_nothing_with_quiet(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(reproduce, "run_batch",
                        lambda *args, on_wait=None: (on_wait is None) or pytest.fail("polled"))
    monkeypatch.setitem(reproduce.PROGRESS, "mode", "off")
    reproduce.launch([FakeRun("r0")], tmp_path, "mpiexec", ranks=2, module="m",
                     batch_size=1, progress="batch {batch}")
    assert capsys.readouterr().err == ""


def fake_mpiexec(tmp_path: Path, body: str) -> str:
    fake = tmp_path / "mpiexec"
    # asked for its --version first (which MPI it is), then given the job
    fake.write_text(f'#!/bin/sh\n[ "$1" = --version ] && exit 0\n{body}\n')
    fake.chmod(0o755)
    return str(fake)


def test_a_batch_is_looked_at_while_it_runs_and_shows_no_line_of_its_own(tmp_path,
                                                                        monkeypatch):
    seen = tmp_path / "terminal"
    mpiexec = fake_mpiexec(tmp_path, f'echo "${TERMINAL_VARIABLE}" > {seen}; sleep 1')
    monkeypatch.setattr(reproduce, "POLL_SECONDS", 0.05)
    calls = []
    reproduce.run_batch(mpiexec, 2, "m", [{"a": 1}], tmp_path / "batch.json",
                        on_wait=lambda: calls.append(1))
    assert calls  # the job outlived one poll at least: the callback ran meanwhile
    assert seen.read_text().strip() == "0"  # its runs: nobody watches, no line


def test_a_failing_callback_ends_the_batch(tmp_path, monkeypatch):
    mpiexec = fake_mpiexec(tmp_path, "exec sleep 60")
    monkeypatch.setattr(reproduce, "POLL_SECONDS", 0.05)

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # and the job is killed, not waited for
        reproduce.run_batch(mpiexec, 2, "m", [{"a": 1}], tmp_path / "batch.json",
                            on_wait=interrupted)

