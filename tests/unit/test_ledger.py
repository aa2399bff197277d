"""The per-link ledger and privacy.json assembly, without MPI."""
import math

import numpy as np
import pytest

from mpi_privopt import display
from mpi_privopt.errors import PrivacyBudgetExceeded
from mpi_privopt.privacy.accountants import (GaussianEvent, LaplaceEvent, PureDPAccountant,
                                             PureDPEvent, ZCDPAccountant)
from mpi_privopt.privacy.calibration import calibrate_gdp_mu, calibrate_zcdp_total
from mpi_privopt.privacy.conversions import gaussian_exact_eps, zcdp_to_eps_tight
from mpi_privopt.privacy.accountants import HeadlineAccountant
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.release import Release
from mpi_privopt.privacy.report import coalition_epsilon, privacy_report


def gaussian(d, s):
    return Release(np.zeros(2), GaussianEvent(d, s))


def test_broadcast_counts_once_for_a_coalition_and_scatter_per_link():
    ledger = Ledger(0, [1, 2, 3], delta=1e-5)
    ledger.on_release(gaussian(1.0, 2.0), [1, 2, 3], "w", 1)       # rho 1/8 to all
    ledger.on_release(gaussian(1.0, 1.0), [1], "s", 1)             # rho 1/2 to 1 only
    ledger.on_release(gaussian(1.0, 1.0), [2], "s", 1)             # rho 1/2 to 2 only
    assert ledger.links[1].rho == pytest.approx(0.625)
    assert ledger.links[3].rho == pytest.approx(0.125)
    assert ledger.total.rho == pytest.approx(1.125)                 # broadcast once
    assert ledger.coalition([1, 2]).rho == pytest.approx(1.125)
    assert ledger.coalition([1, 3]).rho == pytest.approx(0.625)
    assert ledger.coalition([3]).rho == pytest.approx(0.125)
    assert ledger.worst_observer()[0] == 1


def test_nonprivate_is_unbounded_and_public_is_free():
    ledger = Ledger(0, [1, 2], delta=1e-5)
    ledger.on_release(Release.public(np.ones(3)), [1, 2], "setup", 0)
    assert ledger.links[1].epsilon(1e-5)["tight"] == 0.0
    ledger.on_release(Release.nonprivate(np.ones(3), note="clear text"), [2], "x", 1)
    assert math.isinf(ledger.links[2].epsilon(1e-5)["tight"])
    assert ledger.links[1].epsilon(1e-5)["tight"] == 0.0
    assert math.isinf(ledger.total.epsilon(1e-5)["best"])
    report = privacy_report([ledger.to_dict(), Ledger(1, [0], 1e-5).to_dict(),
                             Ledger(2, [0], 1e-5).to_dict()], 1e-5, "fast")
    assert math.isinf(report["links"]["epsilon"][0][2])
    assert report["links"]["epsilon"][1][2] is None        # no link 1 -> 2: nothing there
    assert math.isinf(report["worst_link_epsilon"]) and report["worst_link"] == [0, 2]
    assert "clear text" in report["notes"]


def test_conversions_on_a_link_match_the_formulas():
    ledger = Ledger(0, [1], delta=1e-6)
    sigmas = [1.0, 2.0, 4.0, 3.0]
    for s in sigmas:
        ledger.on_release(gaussian(0.5, s), [1], "w", 1)
    rho = sum(0.25 / (2 * s * s) for s in sigmas)
    eps = ledger.links[1].epsilon(1e-6)
    assert eps["tight"] == pytest.approx(zcdp_to_eps_tight(rho, 1e-6), rel=1e-12)
    mu = math.sqrt(sum(0.25 / s ** 2 for s in sigmas))
    assert eps["exact"] == pytest.approx(gaussian_exact_eps(mu, 1e-6), rel=1e-12)
    assert eps["exact"] <= eps["tight"] <= eps["standard"]
    assert eps["pure"] is None
    assert eps["best"] == eps["exact"] and eps["conversion"] == "exact"


def test_laplace_reports_pure_epsilon():
    ledger = Ledger(0, [1], delta=1e-5)
    for _ in range(10):
        ledger.on_release(Release(np.zeros(1), LaplaceEvent(1.0, 10.0)), [1], "x", 1)
    eps = ledger.links[1].epsilon(1e-5)
    assert eps["pure"] == pytest.approx(1.0)
    assert eps["exact"] is None
    assert eps["best"] == min(eps["pure"], eps["tight"])
    assert ledger.links[1].rho == pytest.approx(10 * 0.01 / 2)


def test_a_pure_dp_event_is_booked_as_the_accountant_composes_it():
    ledger = Ledger(0, [1], delta=1e-5)
    events = [PureDPEvent(0.3), LaplaceEvent(1.0, 5.0), PureDPEvent(0.1)]
    for event in events:
        ledger.on_release(Release(np.zeros(1), event), [1], "x", 1)
    zcdp, pure = ZCDPAccountant(), PureDPAccountant()
    for event in events:
        zcdp.compose(event)
        pure.compose(event)
    link = ledger.links[1]
    assert link.rho == pytest.approx(zcdp.rho)
    assert link.pure_epsilon == link.pure.epsilon == pytest.approx(pure.epsilon) == pytest.approx(0.6)
    assert link.epsilon(1e-5)["pure"] == pytest.approx(0.6)


def test_budget_guard_refuses_the_release_that_would_exceed():
    budget, delta = 1.0, 1e-5
    ledger = Ledger(0, [1, 2], delta=delta, budget=budget)
    # Gaussian releases: the headline is the exact composition, mu^2 adds up.
    mu2_budget = calibrate_gdp_mu(budget, delta) ** 2
    sigma = 1.0 / math.sqrt(mu2_budget / 3.5)          # three fit, the fourth does not
    for n in range(1, 4):
        release = gaussian(1.0, sigma)
        ledger.admit([(release, [1, 2])], "w")
        ledger.on_release(release, [1, 2], "w", n)
    assert ledger.total.epsilon(delta)["best"] <= budget < ledger.total.epsilon(delta)["tight"]
    with pytest.raises(PrivacyBudgetExceeded, match="over its budget") as info:
        ledger.admit([(gaussian(1.0, sigma), [1, 2])], "w")
    assert "nothing was sent" in str(info.value)
    # the spent loss is shown rounded up (never below what was spent), the budget as given
    spent = ledger.total.epsilon(delta)["best"]
    assert f"from epsilon {display.loss(spent)} to " in str(info.value)
    assert float(display.loss(spent)) >= spent and "privacy.epsilon = 1;" in str(info.value)
    assert ledger.total.releases == 3
    with pytest.raises(PrivacyBudgetExceeded):
        ledger.admit([(Release.nonprivate(np.zeros(1)), [1])], "x")
    ledger.admit([(Release.public(np.zeros(1)), [1])], "x")   # free
    assert "epsilon_label" not in ledger.to_dict()  # a proven bound: no label
    # a method whose epsilons are not a proven bound: its label beside them, and in the
    # snapshot a stopped agent's record and a checkpoint keep
    ledger.epsilon_label = "nominal (C = 1): not a privacy guarantee"
    with pytest.raises(PrivacyBudgetExceeded) as info:
        ledger.admit([(gaussian(1.0, sigma), [1, 2])], "w")
    assert (f"at delta 1e-05 ({ledger.epsilon_label}), over its budget privacy.epsilon = 1;"
            in str(info.value))
    assert ledger.to_dict()["epsilon_label"] == ledger.epsilon_label


def test_budget_guard_judges_mixed_releases_by_the_tight_conversion():
    budget, delta = 1.0, 1e-5
    ledger = Ledger(0, [1], delta=delta, budget=budget)
    rho_budget = calibrate_zcdp_total(budget, delta, "tight")
    laplace = Release(np.zeros(1), LaplaceEvent(1.0, 1.0 / math.sqrt(rho_budget)))
    ledger.admit([(laplace, [1])], "x")      # rho = rho_budget / 2
    ledger.on_release(laplace, [1], "x", 1)
    sigma = 1.0 / math.sqrt(rho_budget * 0.8)  # rho = 0.4 rho_budget: fits
    ledger.admit([(gaussian(1.0, sigma), [1])], "w")
    ledger.on_release(gaussian(1.0, sigma), [1], "w", 2)
    with pytest.raises(PrivacyBudgetExceeded):
        ledger.admit([(gaussian(1.0, sigma), [1])], "w")


def test_coalition_from_the_report_equals_the_ledger():
    ledgers = [Ledger(k, [j for j in range(3) if j != k], 1e-5) for k in range(3)]
    ledgers[0].on_release(gaussian(1.0, 3.0), [1, 2], "w", 1)
    ledgers[0].on_release(gaussian(1.0, 1.5), [2], "s", 1)
    report = privacy_report([l.to_dict() for l in ledgers], 1e-5, "fast")
    for observers in ([1], [2], [1, 2]):
        assert coalition_epsilon(report, 0, observers)["best"] == pytest.approx(
            ledgers[0].coalition(observers).epsilon(1e-5)["best"])
    assert report["agents"][0]["worst_observer"] == 2


def test_accountant_round_trips_through_a_dict():
    for events in ([GaussianEvent(1.0, 2.0)], [LaplaceEvent(1.0, 3.0), PureDPEvent(0.2)],
                   [GaussianEvent(1.0, 2.0), LaplaceEvent(1.0, 3.0)]):
        loss = HeadlineAccountant()
        for event in events:
            loss.add(event)
        again = HeadlineAccountant.from_dict(loss.to_dict())
        assert again == loss
        assert again.epsilon(1e-5) == loss.epsilon(1e-5)


def test_the_budget_message_shows_delta_as_configured():
    # a delta of more than 6 significant digits was shown rounded ("g" format) before
    delta = 1.2345678e-5
    ledger = Ledger(0, [1], delta=delta, budget=0.5)
    with pytest.raises(PrivacyBudgetExceeded) as info:
        ledger.admit([(Release.nonprivate(np.zeros(1)), [1])], "x")
    assert f"at delta {delta!r}" in str(info.value) and "1.23457e-05" not in str(info.value)
