"""The noise outlook before a run: a budget calibrated over a longer horizon than the
configuration's own forces more noise; ``run`` (before MPI) and ``check`` say how much, and
which ``privacy.epsilon`` keeps the configuration's own level, from the method's own
calibration.

The case it answers: the default experiment (zCDP-NFL, epsilon 10, T = 200) with
``run.iterations = 4000`` stopped at iteration 2 (noise scale 8e7, the divergence guard)
with no way forward.
"""
import pytest

from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.commands.noise_outlook import (NOTABLE_GROWTH, epsilon_for, horizon_outlook,
                                                prelaunch_notes, round_up, worst_multiplier)
from mpi_privopt.config import load_config
from mpi_privopt.entrypoint import LAUNCHER_RANKS, LAUNCHER_SIZES
from mpi_privopt.prelaunch import validate_before_mpi


def worst(config, overrides, T):
    cfg = load_config(config, overrides)
    return worst_multiplier(ALGORITHMS[cfg.algorithm.name].noise_schedule(cfg), T)[1]


def outlook(*overrides, config="default"):
    cfg = load_config(config, list(overrides))
    return prelaunch_notes(config, list(overrides), cfg)


def test_the_case_gets_the_ratio_at_both_horizons_and_a_budget():
    notes = [n for n in outlook("run.iterations=4000") if "noise outlook" in n]
    assert len(notes) == 2 and all(n.startswith("mpi_privopt: note: ") for n in notes)
    ratio, ratio0 = worst("default", ["run.iterations=4000"], 4000), worst("default", [], 200)
    assert f"T = 4000 releases forces sigma / sensitivity = {ratio:.4g}" in notes[0]
    assert f"against {ratio0:.4g} over the configuration's own T = 200" in notes[0]
    found = epsilon_for(load_config("default", ["run.iterations=4000"]), ratio0)
    assert f"--set privacy.epsilon={found:.4g}" in notes[1]


def test_the_budget_is_the_smallest_that_keeps_the_level_to_its_digits():
    for T in (400, 1000, 4000):
        ratio0 = worst("default", [], 200)
        found = epsilon_for(load_config("default", [f"run.iterations={T}"]), ratio0)
        assert worst("default", [f"run.iterations={T}", f"privacy.epsilon={found!r}"],
                     T) <= ratio0
        below = float(f"{found:.3e}") * (1 - 1.5e-3)  # below one unit less in the 4th digit
        assert worst("default", [f"run.iterations={T}", f"privacy.epsilon={below!r}"],
                     T) > ratio0


def test_algorithm_horizon_is_a_horizon_too():
    notes = outlook("algorithm.horizon=1000")
    assert any("over T = 1000 releases" in n for n in notes)


@pytest.mark.parametrize("overrides", [
    [],                                             # the horizons agree
    ["run.iterations=100"],                         # shorter: less noise
    ["algorithm.name=dgd", "privacy.epsilon=inf", "run.iterations=4000"],  # no noise
])
def test_no_outlook_where_the_noise_does_not_grow(overrides):
    assert not [n for n in outlook(*overrides) if "noise outlook" in n]


@pytest.mark.parametrize("method", ["ldp-aggregative", "pdop-aggregative", "tvs-aggregative",
                                    "aggregative-gt", "aggregative-pat"])
def test_a_private_method_without_a_calibrated_schedule_has_no_outlook(method):
    # a finite budget, a longer run (a resume's --set run.iterations), and no schedule to
    # look at: no outlook, and no horizon asked of a method that has none (the baselines
    # have only the nominal accounting)
    assert not [n for n in outlook(f"algorithm.name={method}", "privacy.epsilon=50",
                                   "run.iterations=400", "privacy.accounting=nominal",
                                   config="ldp-aggregative-quadratic")
                if "noise outlook" in n]


def test_only_a_notable_growth_is_shown():
    ratio0 = worst("default", [], 200)
    small = next(T for T in range(201, 400) if worst("default", [f"run.iterations={T}"], T)
                 > ratio0)
    big = next(T for T in range(small, 1000)
               if worst("default", [f"run.iterations={T}"], T) > NOTABLE_GROWTH * ratio0)
    assert horizon_outlook(load_config("default", [f"run.iterations={small}"]),
                           load_config("default", [])) == []
    assert len(horizon_outlook(load_config("default", [f"run.iterations={big}"]),
                               load_config("default", []))) == 2


def test_no_budget_is_said_when_none_exists():
    notes = outlook("run.iterations=50000")
    assert any("no privacy.epsilon up to 1e300" in n for n in notes)


def test_round_up_keeps_four_digits_and_never_goes_down():
    assert round_up(1.0) == 1.0 and round_up(37.7051) == 37.71 and round_up(37.7) == 37.7
    assert round_up(9.99951) == 10.0 and round_up(6.9041e16) == 6.905e16
    for value in (1.23456789, 98765.4321, 3.3e-7):
        assert value <= round_up(value) <= value * (1 + 1e-3)


def test_run_prints_it_once_before_mpi(capsys, monkeypatch):
    for name in LAUNCHER_RANKS + LAUNCHER_SIZES:
        monkeypatch.delenv(name, raising=False)
    validate_before_mpi("default", ["run.iterations=4000"])
    assert capsys.readouterr().err.count("noise outlook") == 2
    monkeypatch.setenv("PMI_RANK", "1")  # another task: silent
    monkeypatch.setenv("PMI_SIZE", "2")
    validate_before_mpi("default", ["run.iterations=4000"])
    assert "noise outlook" not in capsys.readouterr().err
