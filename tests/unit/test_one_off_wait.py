"""The waits of every rank on one rank's one-off work (mpiutil.wait_for_one_off): they
sleep between tests, doubling up to a cap ten times the exchanges' (so that 49 waiting
ranks do not take the core the working rank needs). A fake request completes after a
given number of tests; the sleeps are recorded instead of done."""
import pytest

from mpi_privopt import mpiutil
from mpi_privopt.network import BACKOFF_CAP
from mpi_privopt.network import wait as network


class Request:
    """Completes at its ``after``-th test."""

    def __init__(self, after: int) -> None:
        self.after, self.tests = after, 0

    def Test(self, status=None):  # noqa: N802
        self.tests += 1
        return self.tests >= self.after


@pytest.fixture
def sleeps(monkeypatch):
    recorded = []
    monkeypatch.setattr(network, "sleep", recorded.append)
    return recorded


def test_a_complete_request_never_sleeps(sleeps):
    mpiutil.wait_for_one_off(Request(after=1))
    assert sleeps == []


def test_the_sleeps_double_up_to_ten_times_the_exchange_cap(sleeps):
    request = Request(after=12)
    mpiutil.wait_for_one_off(request)
    cap = mpiutil.ONE_OFF_CAP
    assert cap == pytest.approx(10 * BACKOFF_CAP)
    assert request.tests == 12 and len(sleeps) == 11  # one sleep per failed test
    assert sleeps[:6] == pytest.approx([cap / 32, cap / 16, cap / 8, cap / 4, cap / 2, cap])
    assert sleeps[6:] == pytest.approx([cap] * 5)


def test_the_set_up_and_end_waits_are_one_off_waits(monkeypatch):
    # the barriers of computed_once and agree wait this way (one rank, a real MPI)
    from mpi4py import MPI
    waited = []
    monkeypatch.setattr(mpiutil, "wait_for_one_off",
                        lambda request: (waited.append(request), request.Wait()))
    assert mpiutil.computed_once(MPI.COMM_SELF, lambda: 7) == 7
    assert mpiutil.agree(MPI.COMM_SELF, lambda: 8) == 8
    assert len(waited) == 2
