"""A reproduction's options are checked before any job starts (one message, exit 2).

Before, ``reproduce gauthier2024 --runs 0`` spent two minutes of 50-rank jobs on its first
step, ``--ranks 0`` and ``--ranks 1`` started jobs, ``--iterations 0`` ended in a worker's
traceback, ``--epsilons abc`` named argparse's internal ``_floats``, and ``reproduce
gade2017 --seeds 0`` was taken for the default while ``--iterations -5`` was used as is.
"""
import argparse

import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.methods.gade2017 import reproduce as gade2017
from mpi_privopt.methods.gauthier2024 import reproduce as gauthier2024
from mpi_privopt.reproduce import numbers, require_at_least


@pytest.mark.parametrize("main, argv, says", [
    (gauthier2024.main, ["--runs", "0"], "--runs = 0 must be 1 or more"),
    (gauthier2024.main, ["--ranks", "1"], "--ranks = 1 must be 2 or more"),
    (gauthier2024.main, ["--iterations", "0"], "--iterations = 0 must be 1 or more"),
    (gauthier2024.main, ["--coarse-every", "0"], "--coarse-every = 0 must be 1 or more"),
    (gade2017.main, ["--seeds", "0"], "--seeds = 0 must be 1 or more"),
    (gade2017.main, ["--iterations", "-5"], "--iterations = -5 must be 1 or more"),
])
def test_a_count_below_its_least_is_refused_before_any_job(tmp_path, main, argv, says):
    with pytest.raises(ConfigError, match=says):
        main([*argv, "--out", str(tmp_path / "out"), "--mpiexec", "/nonexistent/mpiexec"])
    assert not (tmp_path / "out").exists()  # refused before the output folder is made


@pytest.mark.parametrize("text, says", [("abc", "is not a comma-separated list of numbers"),
                                        ("1,-1", "each > 0"), ("", "one or more numbers")])
def test_a_list_of_budgets_is_numbers_each_positive(text, says):
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        numbers(text)
    assert numbers("1, 10,100") == (1.0, 10.0, 100.0)


def test_an_option_left_unset_takes_its_default_later():
    require_at_least(argparse.Namespace(seeds=None, runs=3), {"seeds": 1, "runs": 1})
