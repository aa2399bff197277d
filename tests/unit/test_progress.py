"""The progress line on stderr: shown on a terminal or when asked, hidden otherwise."""
import io

import pytest
from mpi4py import MPI

from mpi_privopt.cli import build_parser, progress_choice
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.errors import ConfigError
from mpi_privopt.progress import Progress, progress_wanted


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_auto_shows_on_a_terminal_only():
    assert progress_wanted("auto", Terminal())
    assert not progress_wanted("auto", io.StringIO())
    assert progress_wanted("on", io.StringIO()) and not progress_wanted("off", Terminal())


def test_the_line_says_iteration_elapsed_remaining_and_epsilon():
    line = Progress(200).line(50, 7.3124, now=None)
    assert line.startswith("iter  50/200  elapsed ")
    assert "remaining ~" in line and "epsilon 7.313 (worst link)" in line  # up
    assert "remaining" not in Progress(200).line(200)  # done: nothing remains


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
def test_a_run_shows_its_line_on_stderr_only_when_asked(tmp_path, capsys, asked, shown):
    # stderr is captured here (not a terminal): "auto" hides the line
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
