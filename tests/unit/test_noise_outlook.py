"""``check`` warns before launch when a calibrated noise schedule is absurd.

The example of the issue: the default experiment (zCDP-NFL, epsilon 10) with
``run.iterations = 50000`` calibrates sigma = 7.4e109 x the sensitivity at n = 1 (2.1e108
with its sensitivity 0.0286); ``check`` accepted it.
"""
import math
import subprocess

import pytest

from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.cli import main as command_line
from mpi_privopt.commands import noise_outlook
from mpi_privopt.commands.noise_outlook import noise_warning, release_points
from mpi_privopt.config import load_config
from mpi_privopt.privacy.calibration import zcdp_nfl_schedule
from mpi_privopt.privacy.schedules import DecayingLaplaceSchedule


def check(capsys, *args):
    with pytest.raises(SystemExit) as stop:
        command_line(["check", *args])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, stop.value.code, captured.out, captured.err)


def test_the_issue_example_is_warned_before_launch(capsys):
    proc = check(capsys, "default", "--ranks", "8", "--set", "run.iterations=50000")
    assert proc.returncode == 0  # a warning, not a refusal
    assert proc.stderr.count("mpi_privopt: warning:") == 1
    assert "zcdp-nfl" in proc.stderr and "over 50000 iterations" in proc.stderr
    assert "7.45e+109 times the release's sensitivity at n = 1" in proc.stderr
    assert "Raise privacy.epsilon or lower run.iterations" in proc.stderr
    assert "launch with:" in proc.stdout


def test_a_sane_schedule_is_not_warned(capsys):
    proc = check(capsys, "default", "--ranks", "8")
    assert proc.returncode == 0 and "warning" not in proc.stderr


def test_the_warning_starts_where_the_noise_passes_the_factor():
    # zCDP-NFL's multiplier at n = 1 grows with T: find where it passes 1e6 and check
    # that the warning switches on exactly there
    cfg = load_config("default")
    T = next(T for T in range(200, 5000, 50)
             if zcdp_nfl_schedule(10.0, 1e-5, T, 0.99).scale(1) > 1e6)
    below = load_config("default", [f"run.iterations={T - 50}"])
    above = load_config("default", [f"run.iterations={T}"])
    assert noise_warning(below, 1.0) is None
    assert noise_warning(above, 1.0) is not None
    assert noise_warning(cfg, 1.0) is None


@pytest.mark.parametrize("overrides", [
    ["algorithm.name=eps-delta-nfl", "privacy.epsilon=1", "problem.clip=5"],
    ["algorithm.name=zcdp-grad-nfl", "problem.clip=5"],
    ["algorithm.name=p-admm", "problem.name=ridge", "problem.l1=0", "problem.clip=5"],
])
def test_every_budget_calibrated_method_is_looked_at(overrides):
    short = load_config("default", [*overrides, "run.iterations=100"])
    long = load_config("default", [*overrides, "run.iterations=20000"])
    assert ALGORITHMS[short.algorithm.name].noise_schedule(short) is not None
    assert noise_warning(short, 1.0) is None
    assert "drowns its releases" in noise_warning(long, 1.0)


def test_methods_without_a_calibrated_schedule_have_none():
    for overrides in (["algorithm.name=dgd", "privacy.epsilon=inf"],
                      ["algorithm.noiseless=true", "privacy.epsilon=inf"]):
        cfg = load_config("default", overrides)
        assert noise_warning(cfg, 1.0) is None
        assert ALGORITHMS[cfg.algorithm.name].noise_schedule(cfg) is None


def test_an_absolute_schedule_is_measured_against_the_data(monkeypatch):
    cfg = load_config("default", ["run.iterations=10"])
    method = ALGORITHMS[cfg.algorithm.name]
    schedule = DecayingLaplaceSchedule(std=3e6 * math.sqrt(2), decay=0.5)  # b(1) = 3e6
    monkeypatch.setattr(method, "noise_schedule", classmethod(lambda cls, cfg: schedule))
    assert noise_warning(cfg, 10.0) is None  # 3e6 <= 1e6 x 10
    warning = noise_warning(cfg, 1.0)
    assert "its scale is 3e+06 at n = 1, more than 1e+06 times the data's scale 1" in warning


def test_release_points_cover_the_horizon():
    assert list(release_points(5)) == [1, 2, 3, 4, 5]
    big = release_points(10**7)
    assert big[0] == 1 and big[-1] == 10**7 and len(big) <= noise_outlook.MAX_POINTS + 1
    assert list(big[:1000]) == list(range(1, 1001))
