"""The audit's printed report: the ledger's loss rounded up, the audited lower bound down,
so that "ledger epsilon x" and "epsilon >= y" both stay true when shown with 4 digits."""
from mpi_privopt.audit.one_run_runner import format_one_run


def _report(**changes):
    report = dict(link=[0, 1], passed=True, algorithm="zcdp-nfl", canaries=1000, features=2000,
                  releases=200, ledger_epsilon=8.5552, delta=1e-5, ledger_mu=1.76091,
                  epsilon_lower=0.34567, correct=612, guesses=1000, confidence=0.95,
                  best_possible=2.718281, seconds=12.3456)
    report.update(changes)
    return report


def test_the_ledger_is_rounded_up_and_the_bound_down():
    text = format_one_run(_report())
    assert "ledger epsilon      8.556    at delta 1e-05 (mu 1.761)" in text
    assert "epsilon >=          0.3456   (612 of 1000" in text     # not 0.3457
    assert "at best 2.718 with 1000 guesses" in text and "time                12.35 s" in text
    assert "8.5552" not in text and text.endswith("verdict: PASS")


def test_a_failed_audit_names_both_numbers_on_one_line():
    text = format_one_run(_report(passed=False, epsilon_lower=9.12345))
    assert text.splitlines()[-1] == ("  - epsilon lower bound 9.123 > ledger epsilon 8.556 "
                                     "on link 0->1")
