"""How numbers and names are shown to a person (mpi_privopt/display.py)."""
import math
import subprocess
import sys
import pytest

from mpi_privopt import display


@pytest.mark.parametrize("value, shown", [
    (0.18523, "0.1852"), (8.5552, "8.555"), (1429.3071355670852, "1429"),
    (21034.44827292746, "2.103e+04"), (2.615e-20, "2.615e-20"), (-2.402e-11, "-2.402e-11"),
    (0.0, "0"), (1.0, "1"), (200, "200"), (123456789, "123456789"), (True, "yes"),
    (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan"),
])
def test_a_number_has_four_significant_digits(value, shown):
    assert display.number(value) == shown


@pytest.mark.parametrize("value, shown", [
    (8.5552, "8.556"),                  # the default experiment's worst link: never 8.555
    (393.38374699468795, "393.4"), (1429.3071355670852, "1430"),
    (21034.44827292746, "2.104e+04"), (0.00242274, "0.002423"), (9.9995, "10"),
    (10.0, "10"), (0.1, "0.1"),          # a value with few digits is not bumped
    (1.0000000000000002, "1.001"),       # above 1, however little: shown above 1
    (math.inf, "unbounded"),            # no DP guarantee: never "inf", never 0
])
def test_a_privacy_loss_is_rounded_up(value, shown):
    assert display.loss(value) == shown


def test_a_loss_never_looks_smaller_and_a_lower_bound_never_larger():
    import numpy as np
    rng = np.random.default_rng(0)
    for value in np.concatenate([rng.lognormal(0, 5, 2000), [1e-300, 5e307]]):
        for digits in (2, 3, 4):
            assert float(display.loss(value, digits)) >= value
            assert float(display.lower_bound(value, digits)) <= value
            # and each is the nearest of its direction: one step further would cross
            shown = float(display.loss(value, digits))
            assert shown <= value * (1 + 10 ** (1 - digits)) * (1 + 1e-15)


def test_values_given_by_the_user_are_shown_as_given():
    assert display.exact(0.99) == "0.99" and display.exact(1.0) == "1"
    assert display.exact(0.123456789) == "0.123456789" and display.exact(1e-5) == "1e-05"
    assert display.exact(False) == "false" and display.exact([1, 2.5]) == "[1, 2.5]"
    assert display.exact(math.inf) == "inf" and display.exact("sqrt") == "sqrt"
    assert (display.mapping({"tau": 0.99, "noiseless": False, "schedule": "sqrt"})
            == "tau = 0.99, noiseless = false, schedule = sqrt")


def test_report_values_round_losses_up_by_their_key():
    assert display.is_loss("local_rho") and display.is_loss("epsilon_eq21_T")
    assert display.is_loss("zcdp-nfl phi^(1)") and not display.is_loss("Delta")
    assert display.value(393.38374699468795, "local_rho") == "393.4"
    assert display.value(8.0, "Delta") == "8"
    per_agent = [1429.3071355670852, 1430.01, 1428.0, 1429.5, 1431.2]
    assert display.value(per_agent, "epsilon_eq21_T") == "1430, 1431, 1428, 1430, 1432"
    assert display.value(list(range(20)), "count") == "0 to 19 (20 values)"
    assert display.value(None) == "none" and display.value("text") == "text"
    assert display.value({"epsilon": 1.23456, "seeds": 3}) == "epsilon = 1.235, seeds = 3"
    # an unbounded loss says so wherever a report shows one, a measured inf stays inf
    assert display.value(math.inf, "epsilon_T") == "unbounded"
    assert display.value([1.5, math.inf], "epsilon_T") == "1.5, unbounded"
    assert display.value(math.inf, "count") == "inf" and display.loss(-math.inf) == "-inf"


@pytest.mark.parametrize("seconds, shown", [
    (1.0674, "1.067 s"), (0.5457, "545.7 ms"), (0.000123, "0.123 ms"), (30.3, "30.3 s"),
    (59.99, "59.99 s"), (0.99996, "1 s"), (59.9996, "1 min 0 s"), (125.4, "2 min 5 s"),
    (3725, "1 h 2 min"),
])
def test_durations(seconds, shown):
    assert display.duration(seconds) == shown


@pytest.mark.parametrize("count, shown", [
    (100, "100 B"), (307200, "300 KiB"), (12800, "12.5 KiB"), (4896, "4.781 KiB"),
    (16.03 * 2 ** 20, "16.03 MiB"), (3 * 2 ** 40, "3 TiB"),
])
def test_byte_sizes(count, shown):
    assert display.byte_size(count) == shown


def test_a_warning_is_one_line_without_file_and_line():
    from mpi_privopt import engine
    ours = display.format_warning("Theorem 1 does not hold", UserWarning, engine.__file__, 262)
    assert ours == "mpi_privopt: warning: Theorem 1 does not hold\n"
    theirs = display.format_warning("overflow", RuntimeWarning, "/x/numpy/core/_methods.py", 9)
    assert "RuntimeWarning" in theirs and "_methods.py" not in theirs and ":9" not in theirs


def test_the_command_line_shows_warnings_that_way(tmp_path):
    # a warning raised in the package (engine.py, line 262) while a command runs
    script = ("import warnings; from mpi_privopt import cli, engine\n"
              "cli.cmd_list = lambda args: warnings.warn_explicit(\n"
              "    'look out', UserWarning, engine.__file__, 262) or 0\n"
              "cli.main(['list'])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "mpi_privopt: warning: look out\n"


def test_a_count_of_one_is_singular():
    assert [display.counted(n, "agent") for n in (0, 1, 2)] == ["0 agents", "1 agent",
                                                                 "2 agents"]
