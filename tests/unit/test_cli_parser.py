"""The command line's parser builds only what the command asked for needs (mpi_privopt/cli.py).

Every rank of a ``run`` parses the command line: the arguments of ``privacy``, ``audit``
and ``reproduce`` import scipy and many modules (about 0.9 s of CPU per rank), so they
are added only when that command is the one run (docs/performance.md, section 8).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from launch_util import child_env
from mpi_privopt import cli

HEAVY_MODULES = ("scipy.optimize", "scipy.special", "mpi_privopt.audit.command",
                 "mpi_privopt.reproduce", "mpi_privopt.commands.privacy")


def _choices(parser):
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sub.choices


def test_run_parses_without_the_heavy_commands_modules():
    code = ("import sys\n"
            "from mpi_privopt import cli\n"
            "words = ['run', 'default', '--set', 'run.iterations=5', '--out', 'x']\n"
            "args = cli.build_parser(words[0]).parse_args(words)\n"
            "assert args.overrides == ['run.iterations=5'] and args.out == 'x'\n"
            f"print([m for m in {HEAVY_MODULES!r} if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), text=True,
                         capture_output=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"


def test_every_command_is_listed_whichever_is_asked_for():
    full = set(_choices(cli.build_parser()))
    assert full == set(cli._COMMANDS)
    for command in cli._COMMANDS:
        assert set(_choices(cli.build_parser(command))) == full


@pytest.mark.parametrize("words", [["privacy", "epsilon", "--help"], ["audit", "--help"],
                                   ["reproduce", "--help"]])
def test_a_heavy_command_gets_its_arguments(words, capsys):
    with pytest.raises(SystemExit) as leave:
        cli.main(words)
    assert leave.value.code == 0
    assert "usage: mpi_privopt " + words[0] in capsys.readouterr().out
