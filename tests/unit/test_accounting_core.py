"""The accounting core: events say what was released, accountants count, the ledger stores.

Covers what the architecture renovation added: events with owner, unit and record; the
headline accountant the ledger asks (merge = composition); parallel composition over
records; events of another owner; wrapped events resolved by the accountants' one walk; the
privacy loss distribution for Laplace releases at the end of a run.
"""
import math
from dataclasses import dataclass

import numpy as np
import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.accountants import (GaussianExactAccountant, HeadlineAccountant,
                                             PLDAccountant, PureDPAccountant, RDPAccountant,
                                             UnsupportedEventError, ZCDPAccountant,
                                             epsilon_all, epsilons, resolve, zcdp_rho)
from mpi_privopt.privacy.events import (GaussianEvent, LaplaceEvent, NonPrivateEvent,
                                        PackedLaplaceEvent, PrivacyEvent, PublicEvent,
                                        PureDPEvent, ZCDPEvent)
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.mechanisms import GaussianMechanism, LaplaceMechanism
from mpi_privopt.privacy.noise import agent_noise
from mpi_privopt.privacy.release import Release
from mpi_privopt.privacy.report import coalition_epsilon, privacy_report


def release(event):
    return Release(np.zeros(2), event)


def test_events_name_their_owner_unit_and_record():
    event = GaussianEvent(1.0, 2.0, owner=3, unit="dataset", record=7)
    assert (event.owner, event.unit, event.record) == (3, "dataset", 7)
    assert GaussianEvent(1.0, 2.0).owner is None and GaussianEvent(1.0, 2.0).unit == "record"
    with pytest.raises(ConfigError, match="unit"):
        LaplaceEvent(1.0, 1.0, unit="person")
    with pytest.raises(ConfigError, match="sigma"):
        GaussianEvent(1.0, 0.0)


def test_a_release_carries_its_payload_and_its_event_only():
    # and, for a token carrying several records, further events (``more``, empty otherwise)
    assert Release.__slots__ == ("payload", "event", "more")
    assert Release(np.zeros(1), LaplaceEvent(1.0, 1.0)).more == ()
    two = Release(np.zeros(1), LaplaceEvent(1.0, 1.0), (LaplaceEvent(1.0, 2.0),))
    assert two.events == (LaplaceEvent(1.0, 1.0), LaplaceEvent(1.0, 2.0))
    with pytest.raises(TypeError, match="privacy event"):
        Release(np.zeros(1), LaplaceEvent(1.0, 1.0), ("private",))
    with pytest.raises(TypeError, match="privacy event"):
        Release(np.zeros(1), "private")
    mech = LaplaceMechanism(agent_noise("fast", 0, 2), owner=2, unit="dataset")
    out = mech.release(np.zeros(3), 1.0, 2.0, record=5)
    assert out.event == LaplaceEvent(1.0, 2.0, owner=2, unit="dataset", record=5)
    assert out.kind == "private"


@pytest.mark.parametrize("accountant", [ZCDPAccountant, GaussianExactAccountant,
                                        PureDPAccountant, RDPAccountant])
def test_merge_is_the_composition_of_both_sequences(accountant):
    events = ([GaussianEvent(1.0, s) for s in (1.0, 2.0, 3.0)]
              if accountant is not PureDPAccountant else
              [LaplaceEvent(1.0, b) for b in (1.0, 2.0, 3.0)])
    whole, a, b = accountant(), accountant(), accountant()
    for i, event in enumerate(events):
        whole.compose(event)
        (a if i < 2 else b).compose(event)
    assert a.merge(b).get_epsilon(1e-5) == pytest.approx(whole.get_epsilon(1e-5), rel=1e-12)
    assert a.n_events == 3
    with pytest.raises(TypeError):
        a.merge(ZCDPAccountant() if accountant is not ZCDPAccountant else PureDPAccountant())


def test_headline_accountant_agrees_with_each_accountant():
    events = [GaussianEvent(0.5, s) for s in (1.0, 2.0, 4.0)]
    head = HeadlineAccountant()
    for event in events:
        head.add(event)
    eps = head.epsilon(1e-6)
    reference = epsilon_all(events, 1e-6)
    for name in ("exact", "tight", "standard"):
        assert eps[name] == pytest.approx(reference[name], rel=1e-12)
    assert eps["best"] == eps["exact"] and eps["pure"] is None
    head.add(NonPrivateEvent("in the clear"))
    assert math.isinf(head.epsilon(1e-6)["best"]) and head.notes == ["in the clear"]
    free = HeadlineAccountant()
    free.add(PublicEvent())
    assert free.epsilon(1e-6)["best"] == 0.0 and free.releases == 0 and free.public == 1


def test_laplace_releases_get_the_privacy_loss_distribution_at_the_end():
    # The measurement: 100 Laplace releases of scale 10 (sensitivity 1) book
    # 4.73 by tight zCDP and 4.53 by RDP; the PLD accountant gives 4.22 at delta 1e-5.
    ledger = Ledger(0, [1, 2], delta=1e-5)
    for n in range(100):
        ledger.on_release(release(LaplaceEvent(1.0, 10.0)), [1, 2], "y", n)
    during = ledger.links[1].epsilon(1e-5)
    assert during["pld"] is None                       # not computed on the hot path
    assert during["tight"] == pytest.approx(4.73, abs=0.01)
    rdp = RDPAccountant().compose(LaplaceEvent(1.0, 10.0), 100).get_epsilon(1e-5)
    assert rdp == pytest.approx(4.53, abs=0.01)
    snapshot = ledger.to_dict()
    link = HeadlineAccountant.from_dict(snapshot["links"][1]).epsilon(1e-5)
    assert link["pld"] == pytest.approx(4.22, abs=0.01)
    assert link["best"] == link["pld"] and link["conversion"] == "pld"
    report = privacy_report([snapshot, Ledger(1, [0], 1e-5).to_dict(),
                             Ledger(2, [0], 1e-5).to_dict()], 1e-5, "fast")
    assert report["links"]["epsilon"][0][2] == pytest.approx(4.22, abs=0.01)
    assert report["links"]["epsilon_pld"][0][1] == report["links"]["epsilon"][0][1]
    # at another delta the distribution was not computed: the valid bounds remain
    assert HeadlineAccountant.from_dict(snapshot["links"][1]).epsilon(1e-6)["pld"] is None


def test_pld_accountant_matches_the_exact_gaussian_composition():
    pld = PLDAccountant().compose(GaussianEvent(1.0, 5.0), 4)
    exact = GaussianExactAccountant().compose(GaussianEvent(1.0, 5.0), 4)
    assert pld.get_epsilon(1e-5) == pytest.approx(exact.get_epsilon(1e-5), rel=1e-6)
    assert pld.get_epsilon(1e-5) >= exact.get_epsilon(1e-5) - 1e-9  # pessimistic


def test_disjoint_records_compose_in_parallel():
    ledger = Ledger(0, [1], delta=1e-5)
    one = GaussianEvent(1.0, 1.0, record=0)
    for _ in range(4):
        ledger.on_release(release(one), [1], "t", 0)               # record 0, four times
    for r in range(1, 4):
        ledger.on_release(release(GaussianEvent(1.0, 1.0, record=r)), [1], "t", 0)
    # the worst record (0) saw four releases; the others one each
    assert ledger.links[1].rho == pytest.approx(4 * zcdp_rho(one))
    ledger.on_release(release(GaussianEvent(1.0, 2.0)), [1], "w", 0)  # every record
    assert ledger.links[1].rho == pytest.approx(4 * zcdp_rho(one) + zcdp_rho(GaussianEvent(1.0, 2.0)))
    assert ledger.total.releases == 5


def test_budget_guard_counts_the_record_a_release_names():
    ledger = Ledger(0, [1], delta=1e-5, budget=1.0)
    big = GaussianEvent(1.0, 4.0)
    per_record = 0
    while True:                                   # fill record 0 up to the budget
        try:
            ledger.admit([(release(GaussianEvent(1.0, 4.0, record=0)), [1])], "t")
        except Exception:
            break
        ledger.on_release(release(GaussianEvent(1.0, 4.0, record=0)), [1], "t", 0)
        per_record += 1
    assert per_record > 0
    ledger.admit([(release(GaussianEvent(1.0, 4.0, record=1)), [1])], "t")   # record 1: fresh
    with pytest.raises(Exception, match="over its budget"):
        ledger.admit([(release(big), [1])], "w")  # every record: record 0 has no room


def test_another_owners_events_go_to_that_owners_row():
    # agent 1 carries agent 0's data on to agent 2 (a token), booked on agent 1's ledger
    ledgers = [Ledger(0, [1], 1e-5), Ledger(1, [0, 2], 1e-5), Ledger(2, [1], 1e-5)]
    ledgers[0].on_release(release(GaussianEvent(1.0, 1.0)), [1], "t", 1)
    ledgers[1].on_release(release(GaussianEvent(1.0, 2.0, owner=0)), [2], "t", 2)
    ledgers[1].on_release(release(GaussianEvent(1.0, 1.0)), [2], "t", 2)   # its own data
    report = privacy_report([l.to_dict() for l in ledgers], 1e-5, "fast")
    rho = report["links"]["rho"]
    assert rho[0][1] == pytest.approx(0.5)          # agent 1 saw agent 0's release
    assert rho[0][2] == pytest.approx(0.125)        # agent 2 saw it carried on
    assert rho[1][2] == pytest.approx(0.5)          # agent 1's own data
    assert coalition_epsilon(report, 0, [1, 2])["tight"] == pytest.approx(
        ZCDPAccountant().compose(ZCDPEvent(0.625)).epsilon_tight(1e-5))


@dataclass(frozen=True)
class Unknown(PrivacyEvent):
    """An event type the accountants do not know."""


def test_wrapped_events_resolve_in_the_accountants_walk_and_unknown_ones_are_refused():
    packed = PackedLaplaceEvent((LaplaceEvent(1.0, 4.0), LaplaceEvent(1.0, 2.0)), owner=0)
    assert resolve(packed) == PureDPEvent(0.75, owner=0)
    ledger = Ledger(0, [1], 1e-5)
    ledger.on_release(release(packed), [1], "t", 0)
    assert ledger.links[1].rho == pytest.approx(0.5 * 0.75 ** 2)
    assert ledger.links[1].pure_only                  # stored as what it resolves to
    head = HeadlineAccountant()
    head.add(packed)
    assert head.to_dict() == ledger.links[1].to_dict()
    with pytest.raises(UnsupportedEventError, match="Unknown"):
        HeadlineAccountant().add(Unknown())   # never counted as 0
    with pytest.raises(UnsupportedEventError, match="Unknown"):
        ZCDPAccountant().compose(Unknown())


def test_epsilon_all_reports_the_distribution_for_laplace_only_where_it_applies():
    laplace = epsilon_all([(LaplaceEvent(1.0, 10.0), 100)], 1e-5)
    assert laplace["pld"] == pytest.approx(4.22, abs=0.01)
    assert laplace["pld"] < laplace["rdp"] < laplace["tight"]
    assert "pld" not in epsilon_all([(GaussianEvent(1.0, 10.0), 100)], 1e-5)
    mixed = epsilon_all([LaplaceEvent(1.0, 10.0), ZCDPEvent(0.01)], 1e-5)
    assert "pld" not in mixed                      # a zCDP event has no distribution


def test_the_vectorised_end_of_run_conversion_is_each_accountants_own():
    accountants = [HeadlineAccountant() for _ in range(5)]
    accountants[1].add(GaussianEvent(1.0, 2.0), 30)
    accountants[2].add(GaussianEvent(0.5, 3.0), 7)
    accountants[3].add(LaplaceEvent(1.0, 10.0), 4)
    accountants[4].add(GaussianEvent(1.0, 2.0))
    accountants[4].add(NonPrivateEvent())
    together = epsilons(accountants, 1e-6)
    assert together == [acc.epsilon(1e-6) for acc in accountants]
    assert together[1]["conversion"] == "exact" and together[4]["best"] == math.inf
    assert epsilons([], 1e-6) == []
