"""The audit's verdict (mpi_privopt/audit/verdict.py): an audit that could not have failed
is INCONCLUSIVE with its own exit status, never PASS; every mode uses the one rule."""
import math

import pytest

from mpi_privopt.audit import stats
from mpi_privopt.audit.command import EPILOG
from mpi_privopt.audit.one_run import best_possible_bound
from mpi_privopt.audit.verdict import (EXIT_STATUS, FAIL, INCONCLUSIVE, PASS, decide,
                                       format_verdict)


def test_a_flag_fails_whatever_the_bound_could_reach():
    assert decide(["mu: lower bound 3 > ledger mu 1"], 5.0, 1.0) == FAIL
    assert decide(["sensitivity: 9 times"], 0.1, 2813.0) == FAIL


def test_a_bound_that_cannot_exceed_the_ledger_is_inconclusive():
    assert decide([], 0.0, 8.5552) == INCONCLUSIVE
    assert decide([], 1.0, 1.0) == INCONCLUSIVE  # "at or below"
    assert decide([], math.nan, 1.0) == INCONCLUSIVE
    assert decide([], 1.0 + 1e-12, 1.0) == PASS


def test_the_exit_statuses_are_distinct_and_leave_2_to_bad_input():
    assert EXIT_STATUS == {PASS: 0, FAIL: 1, INCONCLUSIVE: 5}
    assert 2 not in EXIT_STATUS.values()


def test_audit_help_lists_every_verdict_with_its_status():
    for verdict, status in EXIT_STATUS.items():
        assert any(line.split()[:2] == [verdict, str(status)] for line in EPILOG.splitlines())


def test_the_one_run_audit_of_the_issue_is_inconclusive():
    # `audit --one-run --set run.iterations=20` on the 8-feature ridge: the plan makes one
    # guess, and one right guess refutes nothing (epsilon >= 0) against a ledger of 8.56
    best = best_possible_bound(8, 1, 1e-5)
    assert best == 0.0
    text = format_verdict(decide([], best, 8.5552), [], best, 8.5552, "epsilon", "more")
    assert text.splitlines()[0] == "verdict: INCONCLUSIVE"
    assert "could not have failed" in text and "8.556" in text  # the ledger's, rounded up


def test_too_few_trials_make_the_trial_audit_inconclusive_and_enough_can_pass():
    # the midpoint audit's best: no trial misclassified (16 trials: 8 per world)
    few = stats.audit_bound(0, 8, 0, 8, 0.95, 1e-5)["mu_lower"]
    many = stats.audit_bound(0, 2000, 0, 2000, 0.95, 1e-5)["mu_lower"]
    assert few < 1.7609 < many
    assert decide([], few, 1.7609) == INCONCLUSIVE and decide([], many, 1.7609) == PASS


@pytest.mark.parametrize("verdict", [PASS, FAIL])
def test_pass_and_fail_read_as_before(verdict):
    text = format_verdict(verdict, ["epsilon: lower bound 1.482 > ledger epsilon 0.8368"],
                          6.3, 0.8368, "epsilon", "more")
    assert text.splitlines()[0] == f"verdict: {verdict}"
    if verdict == FAIL:
        assert text.splitlines()[1] == "  - epsilon: lower bound 1.482 > ledger epsilon 0.8368"
