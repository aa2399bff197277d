"""The bound on what a secure-noise run may have released after the checkpoint a resume
uses (mpi_privopt/services/release_gap.py), its log of resumes, and the ledger's booking
of it (the runs under mpiexec: tests/e2e/test_secure_resume.py)."""
from __future__ import annotations

import math
import types

import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.events import GaussianEvent
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.report import privacy_report
from mpi_privopt.services import checkpoint_files
from mpi_privopt.services.release_gap import gap_windows, log_resume, logged_resumes
from mpi_privopt.services.resume import refuse_overspend


def _info(iteration: int, final: bool = False) -> dict:
    return {"iteration": iteration, "final": final, "noise": "secure"}


def test_a_periodic_checkpoint_bounds_its_writer_to_the_next_one():
    # checkpoints every 5: killed after 10 and before 15 was complete
    assert gap_windows(_info(10), None, 5, [], 24) == [(11, 15)]
    # ... or the run's end when it comes first
    assert gap_windows(_info(20), None, 5, [], 24) == [(21, 24)]


def test_a_run_s_end_or_a_signal_s_stop_released_nothing_after_it():
    assert gap_windows(_info(24, final=True), None, 5, [], 24) == []
    assert gap_windows(_info(13), None, 5, [], 24) == []  # not a multiple: a signal's stop
    # without periodic checkpoints, a checkpoint is only ever a run's end
    assert gap_windows(_info(24, final=True), None, 0, [], 24) == []


def test_every_logged_resume_from_the_checkpoint_counts_once_more():
    # the run's end at 24, then two resumes to 40 killed before their first checkpoint
    entries = [{"from": 24, "iterations": 40}, {"from": 24, "iterations": 40}]
    assert gap_windows(_info(24, final=True), None, 5, entries, 40) == [(25, 25), (25, 25)]
    assert gap_windows(_info(24, final=True), None, 10, entries, 40) == [(25, 30), (25, 30)]
    # a resume from an earlier checkpoint is in the ledger of this one (it was booked
    # by the session that wrote it), so it is not counted again
    older = [{"from": 10, "iterations": 40}]
    assert gap_windows(_info(20), None, 10, older, 40) == [(21, 30)]
    # without periodic checkpoints a resume may have run to its end
    assert gap_windows(_info(24, final=True), None, 0, entries[:1], 40) == [(25, 40)]


def test_a_session_s_end_is_the_longest_run_any_session_was_given():
    # config.toml says 12 (a later resume's), but a logged session was given 30
    entries = [{"from": 10, "iterations": 30}]
    assert gap_windows(_info(10), None, 10, entries, 12) == [(11, 20), (11, 20)]


def test_a_fallback_reaches_past_the_damaged_checkpoint():
    # previous at 10, the damaged latest at 15 (a signal's stop, or periodic: unknown)
    assert gap_windows(_info(10), 15, 5, [], 24) == [(11, 20)]
    assert gap_windows(_info(10, final=True), 15, 5, [], 24) == [(11, 20)]


def test_an_unknown_length_without_periodic_checkpoints_is_refused():
    with pytest.raises(ConfigError, match="cannot be bounded"):
        gap_windows(_info(10), None, 0, [], None)


def test_the_log_of_resumes_is_kept_and_a_damaged_one_refused(tmp_path):
    checkpoint_files.checkpoint_dir(tmp_path).mkdir(parents=True)
    assert logged_resumes(tmp_path) == []
    log_resume(tmp_path, 10, 24)
    log_resume(tmp_path, 10, 30)
    assert logged_resumes(tmp_path) == [{"from": 10, "iterations": 24},
                                        {"from": 10, "iterations": 30}]
    (checkpoint_files.checkpoint_dir(tmp_path) / "resumes.json").write_text("{\"resu")
    with pytest.raises(ConfigError, match="cannot be bounded"):
        logged_resumes(tmp_path)


def _ledger() -> Ledger:
    return Ledger(0, [1, 2], delta=1e-5)


def test_the_ledger_books_the_gap_as_a_broadcast_and_says_so():
    events = [GaussianEvent(sensitivity=1.0, sigma=2.0 + n) for n in range(3)]
    booked, sent = _ledger(), _ledger()
    booked.book_assumed(events, 11, 13)
    for event in events:  # the same releases, as a broadcast to every neighbour
        sent._book_event(sent._group_for((1, 2)), event)
    assert booked.total.to_dict() == sent.total.to_dict()
    assert {j: a.to_dict() for j, a in booked.links.items()} == \
        {j: a.to_dict() for j, a in sent.links.items()}
    assert booked.assumed_iterations == 3 and booked.to_dict()["assumed_iterations"] == 3
    assert "assumed" not in sent.to_dict()  # a run without it writes what it wrote
    others = [Ledger(k, [0], delta=1e-5).to_dict() for k in (1, 2)]
    report = privacy_report([booked.to_dict(), *others], 1e-5, "secure")
    assert report["assumed_iterations"] == 3
    assert report["agents"][0]["assumed"] == [{"first": 11, "last": 13}]
    assert any("include 3 iterations booked as released before an interruption" in note
               for note in report["notes"])
    assert math.isfinite(report["worst_link_epsilon"])


def test_the_budget_check_of_a_resume_counts_the_booked_iterations():
    # a plan that fits the budget only without the booked iterations is refused
    plan = [GaussianEvent(sensitivity=1.0, sigma=10.0)] * 10
    gap = [GaussianEvent(sensitivity=1.0, sigma=10.0)] * 5

    def epsilon(events) -> float:
        ledger = _ledger()
        ledger.book_assumed(events, 1, len(events))
        return ledger.total.epsilon(1e-5)["best"]

    budget = (epsilon(plan) + epsilon(plan + gap)) / 2

    def ctx(booked: bool):
        ledger = Ledger(0, [1, 2], delta=1e-5, budget=budget)
        if booked:
            ledger.book_assumed(gap, 11, 15)
        algorithm = types.SimpleNamespace(planned_events=lambda first, last: plan)
        return types.SimpleNamespace(
            rank=0, cfg=types.SimpleNamespace(run=types.SimpleNamespace(iterations=25)),
            state=types.SimpleNamespace(ledger=ledger, algorithm=algorithm))

    refuse_overspend(ctx(booked=False), 16)  # fits
    with pytest.raises(ConfigError, match="5 iterations of it booked as released before "
                                          r"an interruption \(assumed\)"):
        refuse_overspend(ctx(booked=True), 16)


def test_an_unknown_run_length_still_bounds_a_session_by_its_next_checkpoint():
    """config.toml unreadable and no resume logged: the session that wrote checkpoint 100
    (every 50) may have run to 150, never 'nothing' (it booked nothing before)."""
    assert gap_windows(_info(100), None, 50, [], None) == [(101, 150)]
    assert gap_windows(_info(100, final=True), None, 50, [], None) == []
