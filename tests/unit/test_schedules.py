"""Noise schedules against their closed forms, and calibration that makes them from a budget."""
import dataclasses
import math

import numpy as np
import pytest

from mpi_privopt.privacy.calibration import CALIBRATION_MARGIN, calibrate_phi1, zcdp_nfl_schedule
from mpi_privopt.privacy.classical_calibration import basic_composition_gaussian_schedule
from mpi_privopt.privacy.schedules import (BasicCompositionSchedule, ConstantSchedule,
                                           DecayingLaplaceSchedule, GeometricZCDPSchedule,
                                           NoiseSchedule)

DELTA = 1e-5


def test_geometric_zcdp_schedule_is_theorem_one():
    schedule = GeometricZCDPSchedule(phi1=0.004, tau=0.97, conversion="tight", horizon=50)
    assert schedule.relative
    for n in (1, 2, 10, 50, 80):                    # past the horizon the rule goes on
        phi_n = 0.004 * 0.97 ** -(n - 1)
        assert schedule.budget(n) == pytest.approx(phi_n, rel=1e-15)
        for delta_n in (1.0, 0.37, 2e-3):
            sigma = schedule.scale(n, delta_n)
            assert sigma == pytest.approx(delta_n * math.sqrt(1 / (2 * phi_n)), rel=1e-14)
            # a Gaussian with that sigma spends exactly phi^(n) zCDP
            assert delta_n ** 2 / (2 * sigma ** 2) == pytest.approx(phi_n, rel=1e-14)
    assert schedule.scale(3) == schedule.scale(3, 1.0)
    assert schedule.scale(1, 2.0) > schedule.scale(40, 2.0)     # noise falls with tau < 1
    assert schedule.describe() == "0.004 (tau 0.97, tight conversion, T = 50)"


def test_zcdp_nfl_schedule_spends_the_budget_less_the_margin():
    eps, T, tau = 3.0, 40, 0.98
    schedule = zcdp_nfl_schedule(eps, DELTA, T, tau, "standard")
    assert schedule.phi1 == (1.0 - CALIBRATION_MARGIN) * calibrate_phi1(eps, DELTA, T, tau)
    assert (schedule.tau, schedule.conversion, schedule.horizon) == (tau, "standard", T)
    # the T releases add up to Bun-Steinke's total for (eps, delta), just below it
    L = math.log(1 / DELTA)
    total = sum(schedule.budget(n) for n in range(1, T + 1))
    bun_steinke = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert total < bun_steinke
    assert total == pytest.approx(bun_steinke, rel=1e-11)


def test_basic_composition_schedule_is_the_classical_gaussian_per_release():
    eps, T, tau = 2.0, 30, 0.99
    schedule = basic_composition_gaussian_schedule(eps, DELTA, T, tau, "classical")
    assert isinstance(schedule, BasicCompositionSchedule) and schedule.relative
    assert schedule.horizon == T
    s = math.sqrt(tau)
    for n in (1, 7, T):
        eps_n = eps * (s ** (T - 1) - s ** T) / (1 - s ** T) * s ** -(n - 1)
        expected = math.sqrt(2 * math.log(1.25 * T / DELTA)) / eps_n   # Dwork-Roth Thm A.1
        assert schedule.scale(n) == pytest.approx(expected, rel=1e-12)
        assert schedule.scale(n, 0.3) == pytest.approx(0.3 * expected, rel=1e-12)
    assert schedule.eps_n.sum() == pytest.approx(eps, rel=1e-12)
    with pytest.raises(IndexError):
        schedule.scale(T + 1)                          # no budget past the horizon
    assert schedule.describe().startswith("classical Gaussian, basic composition over T = 30")
    analytic = basic_composition_gaussian_schedule(eps, DELTA, T, tau, "analytic")
    assert all(analytic.scale(n) < schedule.scale(n) for n in (1, 15, T))


def test_decaying_laplace_schedule_is_chen_and_wang_assumption_four():
    schedule = DecayingLaplaceSchedule(std=0.8, decay=0.3)
    assert not schedule.relative
    for t in range(0, 6):                            # the paper's counter t = n - 1
        b = 0.8 * (t + 1) ** -0.3 / math.sqrt(2)
        assert schedule.scale(t + 1) == pytest.approx(b, rel=1e-15)
        assert schedule.scale(t + 1, 123.0) == schedule.scale(t + 1)   # absolute
        # Laplace(b) has standard deviation sqrt(2) b = std (t+1)^-vs
        assert math.sqrt(2) * schedule.scale(t + 1) == pytest.approx(0.8 * (t + 1) ** -0.3)
    assert "0.8" in schedule.describe() and "0.3" in schedule.describe()


def test_constant_schedule_is_the_same_absolute_scale_every_release():
    schedule = ConstantSchedule(0.25)
    assert not schedule.relative
    assert {schedule.scale(n, s) for n in (1, 5, 1000) for s in (0.1, 7.0)} == {0.25}
    assert schedule.describe() == "constant sigma 0.25"


def test_every_schedule_is_a_noise_schedule_value():
    schedules = [GeometricZCDPSchedule(0.1, 1.0), ConstantSchedule(1.0),
                 DecayingLaplaceSchedule(1.0, 0.5),
                 basic_composition_gaussian_schedule(1.0, DELTA, 10, 1.0, "analytic")]
    for schedule in schedules:
        assert isinstance(schedule, NoiseSchedule)
        with pytest.raises(dataclasses.FrozenInstanceError):   # a value: nothing changes it
            schedule.extra = 0.5
        assert isinstance(schedule.describe(), str) and schedule.describe()
    assert np.isfinite([s.scale(3, 1.0) for s in schedules]).all()
