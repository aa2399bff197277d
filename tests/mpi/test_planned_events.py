"""A method's planned events are, event for event, what its ledger books (docs/reliability.md).

``Algorithm.planned_events(first, last)`` is what a resume adds to the restored ledger to
refuse, before any release, a run that would exceed ``privacy.epsilon``
(mpi_privopt/services/resume.py, ``refuse_overspend``). Here each private aggregative method
runs T iterations under mpiexec (its contract case's noisy configuration); just before
iteration ``first`` of each window the method is asked for its plan of ``first`` ..
``last`` (as a resume after iteration ``first - 1`` would ask), and after iteration
``last`` the plan must equal the events the agent's ledger booked on its links in those
iterations: the same events (type, epsilon, owner, unit, record), in the same order. The
count of messages per window is also checked against the methods' documented traffic
(Algorithm 1's framework: t = 0..T, t = 0 and 1 at iteration 1; the tracking baselines:
t = n - 1 at iteration n), so an empty plan cannot match an empty book.

Also in the ``secure`` noise mode (its rounding grows every booked sensitivity by one grid
step per coordinate) and with the noise off (sigma = 0: every message non-private).

Run under mpiexec, e.g. ``mpiexec -n 3 python -m pytest --with-mpi tests/mpi/test_planned_events.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.privacy.accountants import zcdp_rho
from mpi_privopt.privacy.events import NonPrivateEvent, PureDPEvent
from mpi_privopt.privacy.ledger import Ledger

sys.path.insert(0, str(Path(__file__).parent))
from contract_cases import BASE, case_for  # noqa: E402

pytestmark = pytest.mark.mpi(min_size=2)

T = 9
#: (first, last): the whole run, its start (with t = 0), a middle, a single iteration
WINDOWS = ((1, T), (1, 3), (4, T), (6, 6))
FRAMEWORK = ("ldp-aggregative", "pdop-aggregative", "tvs-aggregative")
TRACKING = ("aggregative-gt", "aggregative-pat")


def messages(name: str, first: int, last: int) -> int:
    """The messages iterations first..last send (docs/algorithms, the traffic counts)."""
    return last - first + 1 + (1 if name in FRAMEWORK and first == 1 else 0)


def planned_and_booked(comm, out: str, name: str, extra: list[str]):
    """Run ``name``; per window, its plan (asked before ``first``) and what its ledger
    booked on its links during ``first`` .. ``last`` (private events, and the counts of
    releases and of non-private ones with their notes)."""
    case = case_for(name)
    # the baselines have only the nominal accounting (docs/methods/chen2025.md, "Derived
    # accounting"); ldp-aggregative runs the default, derived one
    accounting = (["privacy.accounting=nominal"]
                  if name in FRAMEWORK + TRACKING and name != "ldp-aggregative" else [])
    cfg = load_config(None, BASE + case.noisy + extra + accounting
                      + [f"run.iterations={T}", f"run.eval_every={T}"])
    windows = {w: {} for w in WINDOWS}

    def attach(agent, algorithm) -> None:
        ledger = next(l for l in agent.net.listeners if isinstance(l, Ledger))
        step = algorithm.step

        def book():
            # a broadcast method books each message once, for all its out-neighbours
            assert list(ledger.groups) == [tuple(agent.net.out_neighbors)]
            assert not ledger.other
            group = ledger.groups[tuple(agent.net.out_neighbors)]
            return (len(group.events), group.accountant.releases,
                    group.accountant.nonprivate, list(group.accountant.notes),
                    list(group.events))

        def watched(n: int) -> None:
            for (first, last), seen in windows.items():
                if n == first:
                    seen["plan"] = algorithm.planned_events(first, last)
                    seen["before"] = book() if ledger.groups else (0, 0, 0, [], [])
            step(n)
            for (first, last), seen in windows.items():
                if n == last:
                    seen["after"] = book()
        algorithm.step = watched

    run(cfg, out=out, comm=comm, stream=None, on_setup=attach)
    comm.Barrier()
    return windows


def booked_in(seen: dict) -> tuple[list, int, int, list]:
    """The private events booked in the window, and the counts of releases and of
    non-private releases, and the notes that appeared."""
    before, after = seen["before"], seen["after"]
    return (after[4][before[0]:after[0]], after[1] - before[1], after[2] - before[2],
            after[3])


def in_noise_mode(comm, shared_dir: str, name: str, noise: str) -> dict:
    """:func:`planned_and_booked` with ``privacy.noise = noise`` (secure needs its extra)."""
    if noise == "secure":
        pytest.importorskip("cryptography", reason="privacy.noise = 'secure' needs it")
    return planned_and_booked(comm, f"{shared_dir}/{name}-{noise}", name,
                              [f"privacy.noise={noise}"])


@pytest.mark.parametrize("noise", ["fast", "secure"])
@pytest.mark.parametrize("name", FRAMEWORK + TRACKING)
def test_planned_events_are_what_the_ledger_books(comm, shared_dir, name, noise):
    windows = in_noise_mode(comm, shared_dir, name, noise)
    for (first, last), seen in windows.items():
        events, releases, nonprivate, _ = booked_in(seen)
        expected = messages(name, first, last)
        assert releases == expected and nonprivate == 0, (first, last)
        assert len(events) == expected
        assert seen["plan"] == events, (name, noise, first, last, comm.rank)
        assert all(type(e) is PureDPEvent and e.epsilon > 0 for e in events[1 if first == 1
                                                                           else 0:])


@pytest.mark.parametrize("name", ["ldp-aggregative", "aggregative-gt"])
def test_noise_off_plans_the_non_private_messages(comm, shared_dir, name):
    off = ["algorithm.sigma_y=0.0"]  # one block in the clear makes the message clear
    windows = planned_and_booked(comm, f"{shared_dir}/{name}-off", name, off)
    for (first, last), seen in windows.items():
        events, releases, nonprivate, notes = booked_in(seen)
        expected = messages(name, first, last)
        assert events == [] and releases == nonprivate == expected, (first, last)
        plan = seen["plan"]
        assert len(plan) == expected
        assert all(type(e) is NonPrivateEvent for e in plan)
        assert {e.note for e in plan} == set(notes) and "without noise on y" in notes[0]


PERTURBED = ("zcdp-nfl", "zcdp-grad-nfl", "eps-delta-nfl", "p-admm")


def perturbed_messages(name: str, first: int, last: int) -> int:
    """One perturbed iterate per iteration."""
    return last - first + 1


@pytest.mark.parametrize("noise", ["fast", "secure"])
@pytest.mark.parametrize("name", PERTURBED)
def test_a_perturbed_iterate_method_plans_what_it_books(comm, shared_dir, name, noise):
    # Asked at iteration 1 (a fresh run: no release yet) the plan is per unit sensitivity,
    # the same cost under a relative schedule in fast mode; asked after a release, as a
    # resume asks, it must be the booked events themselves, with each iteration's own
    # sensitivity (the step shrinks it) and the secure mode's rounding slack.
    windows = in_noise_mode(comm, shared_dir, name, noise)
    for (first, last), seen in windows.items():
        events, releases, nonprivate, _ = booked_in(seen)
        assert releases == len(events) == perturbed_messages(name, first, last)
        assert nonprivate == 0 and all(zcdp_rho(e) > 0 for e in events)
        plan = seen["plan"]
        assert plan is not None and len(plan) == len(events), (name, first, last)
        if first > 1:
            assert plan == events, (name, noise, first, last, comm.rank)
        elif noise == "fast":
            assert [zcdp_rho(e) for e in plan] == pytest.approx([zcdp_rho(e) for e in events], rel=1e-12)
