"""The one wait of the package: spin (testing, yielding the core), then sleep with backoff.

A fake request completes after a given number of tests; ``sleep`` and the core's yield are
recorded instead of done, so nothing here depends on the machine's speed.
"""
import pytest

from mpi_privopt.network import wait as network
from mpi_privopt.network import (BACKOFF_CAP, ONE_OFF_CAP, Backoff, exchange_wait,
                                 set_exchange_wait, sleep_until, wait_exchange, wait_request,
                                 wait_sleeping, while_sleeping)


class Request:
    """Completes at its ``after``-th test; counts tests and Waits."""

    def __init__(self, after: int) -> None:
        self.after, self.tests, self.waits = after, 0, 0

    def Test(self, status=None):  # noqa: N802
        self.tests += 1
        return self.tests >= self.after

    def Wait(self, status=None):  # noqa: N802
        self.waits += 1


@pytest.fixture
def recorded(monkeypatch):
    """The sleeps and yields of the waits, recorded instead of done."""
    calls = {"sleep": [], "yield": 0}
    monkeypatch.setattr(network, "sleep", calls["sleep"].append)

    def yield_():
        calls["yield"] += 1
    monkeypatch.setattr(network, "_yield", yield_)
    return calls


def test_a_complete_request_costs_one_test(recorded):
    request = Request(after=1)
    wait_request(request, spin=1.0)
    assert request.tests == 1 and recorded == {"sleep": [], "yield": 0}


def test_a_request_done_within_the_spin_never_sleeps_and_yields_every_few_tests(recorded):
    request = Request(after=100)
    wait_request(request, spin=3600.0)
    assert request.tests == 100 and recorded["sleep"] == []
    assert recorded["yield"] == (100 - 2) // network._YIELD_EVERY


def test_after_the_spin_the_wait_sleeps_doubling_up_to_the_cap(recorded):
    request = Request(after=20)
    wait_request(request, spin=1e-12)
    spun = 1 + network._YIELD_EVERY            # the first test, then one yield period
    sleeps = recorded["sleep"]
    assert len(sleeps) == 20 - spun - 1 and recorded["yield"] == 0  # the 20th completes
    assert sleeps[:6] == [BACKOFF_CAP / 32 * 2 ** k for k in range(5)] + [BACKOFF_CAP]
    assert all(s == BACKOFF_CAP for s in sleeps[5:])


def test_a_token_wait_sleeps_from_the_first_failed_test(recorded):
    request = Request(after=4)
    wait_sleeping(request)
    # the first test, then a sleep after each failed one: the 4th completes
    assert request.tests == 4 and recorded["sleep"] == [BACKOFF_CAP / 32, BACKOFF_CAP / 16]
    assert recorded["yield"] == 0


def test_work_while_sleeping_runs_before_each_sleep_and_never_in_a_spin(recorded):
    done = []

    def work():
        done.append(len(recorded["sleep"]))  # the sleeps before this call
    with while_sleeping(work):
        wait_request(Request(after=50), spin=3600.0)  # done within the spin: no work
        assert done == []
        wait_sleeping(Request(after=4))
        assert done == [0, 1]  # before each of its two sleeps
        with while_sleeping(None):  # nested: none, then the outer work again
            wait_sleeping(Request(after=3))
        assert done == [0, 1]
        wait_sleeping(Request(after=3))
        assert done == [0, 1, 3]
    wait_sleeping(Request(after=3))  # the context ended: no work
    assert done == [0, 1, 3] and len(recorded["sleep"]) == 5


def test_backoff_doubles_from_its_first_sleep_and_starts_again_on_reset(recorded):
    backoff = Backoff(cap=8.0, first=1.0)
    for _ in range(5):
        backoff.sleep()
    assert recorded["sleep"] == [1.0, 2.0, 4.0, 8.0, 8.0]
    backoff.reset()
    backoff.sleep()
    assert recorded["sleep"][-1] == 1.0
    assert Backoff().first == BACKOFF_CAP / 32


def test_the_exchange_wait_policy_switches_between_backoff_and_mpi_s_own_wait(recorded):
    assert exchange_wait() == "backoff"
    try:
        set_exchange_wait("poll")
        assert exchange_wait() == "poll"
        request = Request(after=1000)
        wait_exchange(request)
        assert request.waits == 1 and request.tests == 0
        with pytest.raises(ValueError, match="'spin' is not one of backoff, poll"):
            set_exchange_wait("spin")
    finally:
        set_exchange_wait("backoff")
    request = Request(after=3)
    wait_exchange(request)
    assert request.waits == 0 and request.tests == 3 and recorded["sleep"] == []


def test_a_one_off_wait_sleeps_doubling_up_to_its_longer_cap(recorded):
    """The others' wait while one rank does the one-off work of set-up or the end
    (sleeping_barrier): its sleeps double from the same first sleep up to ONE_OFF_CAP."""
    request = Request(after=16)
    sleep_until(request.Test, ONE_OFF_CAP)
    sleeps = recorded["sleep"]
    assert request.tests == 16 and recorded["yield"] == 0
    assert sleeps[:12] == [BACKOFF_CAP / 32 * 2 ** k for k in range(11)] + [ONE_OFF_CAP]
    assert ONE_OFF_CAP > BACKOFF_CAP and max(sleeps) == ONE_OFF_CAP
