"""The per-iteration shortcuts give the same answers as the plain definitions.

The exchange and the gradient run every iteration, so they fold constants, work in place
and recognise repeated objects by identity. These tests pin each shortcut to the
definition it replaces, and check that no caller's array is changed behind its back.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt.network import Network
from mpi_privopt.privacy.accountants import GaussianEvent, HeadlineAccountant, resolve, zcdp_rho
from mpi_privopt.privacy.amplification import AmplificationConstants
from mpi_privopt.privacy.events import (AmplifiedGaussianEvent, LaplaceEvent, NonPrivateEvent,
                                        PackedLaplaceEvent, PublicEvent)
from mpi_privopt.privacy.ledger import Ledger, _IDENTITY_CACHE_SIZE
from mpi_privopt.privacy.release import NONPRIVATE, PUBLIC, Release
from mpi_privopt.problems import LOSSES, LocalProblem
from mpi_privopt.problems.consensus.regularizers import penalty_subgradient
from mpi_privopt.network.traffic import TrafficMeter


def _data(loss: str, M=30, P=5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((M, P))
    z = X @ rng.standard_normal(P)
    if LOSSES[loss].task == "classification":
        return X, np.where(z < 0, -1.0, 1.0)
    return X, z + 0.5 * rng.standard_normal(M)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_scaled_derivative_is_the_derivative(loss):
    X, y = _data(loss)
    z = X @ np.linspace(-1, 1, X.shape[1])
    expected = LOSSES[loss].derivative(z, y)
    d, scale = LOSSES[loss].scaled_derivative(z.copy(), y)
    np.testing.assert_allclose(scale * d, expected, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("clip", [0.0, 0.7])
@pytest.mark.parametrize("l1,l2", [(0.0, 0.0), (0.3, 0.0), (0.0, 0.4), (0.3, 0.4)])
def test_subgradient_is_the_definition_and_changes_no_input(loss, clip, l1, l2):
    X, y = _data(loss)
    K = 4
    problem = LocalProblem(X, y, loss, l1, l2, K, clip=clip)
    w = np.array([0.5, 0.0, -1.5, 2.0, -0.25])
    saved = (w.copy(), problem.X.copy(), problem.y.copy())
    # the definition, written out per sample
    d = LOSSES[loss].derivative(X @ w, y)
    per_sample = d[:, None] * X
    if clip:
        norms = np.linalg.norm(per_sample, axis=1)
        per_sample *= np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
    expected = per_sample.mean(axis=0) + penalty_subgradient(w, l1, l2) / K
    for clipped in (True, False):
        want = expected if clipped or not clip else (
            d[:, None] * X).mean(axis=0) + penalty_subgradient(w, l1, l2) / K
        np.testing.assert_allclose(problem.subgradient(w, clipped=clipped), want,
                                   rtol=1e-12, atol=1e-14)
    for array, before in zip((w, problem.X, problem.y), saved):
        np.testing.assert_array_equal(array, before)
    # two calls give two arrays: callers may modify what they get
    assert problem.subgradient(w) is not problem.subgradient(w)


def test_release_constructors_keep_the_checks_meaning():
    view = np.arange(12.0).reshape(3, 4)[:, 1]          # not contiguous
    for release, kind in ((Release.nonprivate(view, "why"), NONPRIVATE),
                          (Release.public(view), PUBLIC)):
        assert release.kind == kind
        assert release.payload.flags.c_contiguous
        np.testing.assert_array_equal(release.payload, view)
    assert Release.nonprivate(view, "why").event == NonPrivateEvent("why")
    assert Release.public(view).event == PublicEvent()
    # one event object per note: made once, not on every iteration
    assert Release.nonprivate(view, "why").event is Release.nonprivate(view, "why").event
    contiguous = np.ones(3)
    assert Release.nonprivate(contiguous).payload is contiguous   # no copy on the hot path


def test_ledger_total_is_every_release_once():
    ledger = Ledger(0, [1, 2, 3], 1e-5)
    gaussian = Release(np.zeros(2), GaussianEvent(1.0, 2.0))
    everyone = [1, 2, 3]
    for _ in range(3):
        ledger.on_release(gaussian, everyone, "x", 0)            # broadcast
    for j in (1, 2, 3):
        ledger.on_release(gaussian, (j,), "s", 0)                # scatter, fresh tuples
    total = ledger.total
    assert total.releases == 6
    assert total.rho == pytest.approx(6 * zcdp_rho(GaussianEvent(1.0, 2.0)))
    assert ledger.links[2].releases == 4
    assert ledger.coalition([1, 3]).releases == 5


def test_ledger_identity_cache_stays_bounded_and_correct():
    ledger = Ledger(0, [1, 2], 1e-5)
    release = Release.nonprivate(np.zeros(1))
    for i in range(3 * _IDENTITY_CACHE_SIZE):
        ledger.on_release(release, [1 + i % 2], "x", i)          # a new list every time
    assert len(ledger._keys) <= _IDENTITY_CACHE_SIZE
    assert ledger.links[1].nonprivate == ledger.links[2].nonprivate == 3 * _IDENTITY_CACHE_SIZE // 2
    assert math.isinf(ledger.total.epsilon(1e-5)["best"])


def test_collective_seconds_are_split_evenly_when_read():
    meter = TrafficMeter([4, 7])
    meter.record_all("x", 80, 0.3)
    meter.record_all("x", 80, 0.1)
    meter.record_link("x", 1, 8, 0.05)
    counters = meter.counters("x")
    np.testing.assert_allclose(counters.per_link("seconds"), [0.2, 0.25])
    np.testing.assert_array_equal(counters.per_link("bytes"), [160, 168])
    np.testing.assert_array_equal(counters.per_link("messages"), [2, 3])
    assert meter.total_seconds() == pytest.approx(0.45)
    lonely = TrafficMeter([])
    lonely.record_all("x", 8, 1.0)
    assert lonely.counters("x").per_link("seconds").shape == (0,)


def test_broadcast_shortcuts_still_refuse_bad_input():
    net = Network(MPI.COMM_SELF, [], [])
    try:
        with pytest.raises(TypeError, match="Release"):
            net.broadcast(np.zeros(3), "x")
        with pytest.raises(ValueError, match="out must be"):
            net.broadcast(Release.public(np.zeros(3)), "x", out=np.empty((0, 3), dtype=np.float32))
        got = net.broadcast(Release.public(np.zeros(3)), "x", out=np.empty((0, 3)))
        assert got.shape == (0, 3)
        assert net.meter.counters("x").all_messages == 1
    finally:
        net.free()


class _Recorder:
    """A listener without a booker: it needs the phase and round of every release."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def on_release(self, release, receivers, phase, round) -> None:
        self.seen.append((phase, round))


def test_broadcast_books_with_every_listener_added_at_any_time():
    net = Network(MPI.COMM_SELF, [], [])
    try:
        ledger = Ledger(0, [], 1e-5)
        net.add_listener(ledger)
        release = Release.nonprivate(np.zeros(2))
        net.broadcast(release, "x", np.empty((0, 2)))            # the booker path
        assert ledger.total.releases == 1
        recorder = _Recorder()
        net.add_listener(recorder)                               # joins mid-run
        net.round = 7
        net.broadcast(release, "x", np.empty((0, 2)))            # the on_release path
        assert ledger.total.releases == 2
        assert recorder.seen == [("x", 7)]
        assert net.listeners == (ledger, recorder)
    finally:
        net.free()


def test_booker_and_on_release_book_into_the_same_group():
    ledger = Ledger(0, [1, 2], 1e-5)
    release = Release(np.zeros(1), GaussianEvent(1.0, 1.0))
    book = ledger.booker([1, 2])
    book(release)
    ledger.on_release(release, [2, 1], "x", 0)
    assert list(ledger.groups) == [(1, 2)]
    assert ledger.links[1].releases == ledger.links[2].releases == 2


def _releases_of_every_kind() -> list[Release]:
    """One release per path of the ledger's booking (the booker's shortcut and the rest)."""
    constants = AmplificationConstants(eta=2.0, beta=0.9, nu=0.5)
    payload = np.zeros(2)
    return [Release.public(payload), Release.nonprivate(payload, "clear"),
            Release(payload, GaussianEvent(1.0, 2.0)),
            Release(payload, GaussianEvent(1.0, 3.0, owner=0)),
            Release(payload, LaplaceEvent(1.0, 4.0)),
            Release(payload, GaussianEvent(1.0, 2.0, record=5)),        # one record
            Release(payload, GaussianEvent(1.0, 2.0, owner=3)),         # another's data
            Release(payload, PackedLaplaceEvent((LaplaceEvent(1.0, 4.0),))),   # wrapped
            Release(payload, AmplifiedGaussianEvent(GaussianEvent(1.0, 1.0), 2, constants)),
            Release(payload, GaussianEvent(1.0, 2.0), (GaussianEvent(1.0, 5.0, owner=3),))]


def test_the_booker_books_every_kind_of_release_as_on_release_does():
    booked, plain = Ledger(0, [1, 2], 1e-5), Ledger(0, [1, 2], 1e-5)
    book = booked.booker([1, 2])
    for _ in range(3):                                   # repeats, as every iteration
        for release in _releases_of_every_kind():
            book(release)
            plain.on_release(release, [1, 2], "x", 0)
    assert booked.to_dict() == plain.to_dict()
    for mine, theirs in ((booked.groups, plain.groups), (booked.other, plain.other)):
        assert list(mine) == list(theirs)
        for key in mine:
            assert mine[key].events == theirs[key].events
            assert mine[key].accountant.to_dict() == theirs[key].accountant.to_dict()


def test_the_accountant_counts_a_wrapped_event_as_what_it_resolves_to():
    constants = AmplificationConstants(eta=2.0, beta=0.9, nu=0.5)
    for event in (PackedLaplaceEvent((LaplaceEvent(1.0, 4.0), LaplaceEvent(1.0, 2.0))),
                  AmplifiedGaussianEvent(GaussianEvent(1.0, 1.0), 2, constants),
                  GaussianEvent(1.0, 2.0), NonPrivateEvent(note="n"), PublicEvent()):
        wrapped, resolved = HeadlineAccountant(), HeadlineAccountant()
        wrapped.add(event, 2)
        resolved.add(resolve(event), 2)
        assert wrapped.to_dict() == resolved.to_dict()
