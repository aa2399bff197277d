"""The verdict of an audit, the same rule in every mode: PASS, FAIL or INCONCLUSIVE.

* **FAIL**: a check flagged something (the lower bound above the ledger's figure, a noise
  test, a shift above the booked sensitivity).
* **INCONCLUSIVE**: nothing flagged, but the audit *could not have failed*: its best
  possible bound (every trial classified right, every guess right) is at or below the
  ledger's figure, so staying below it says nothing about the ledger.
* **PASS**: nothing flagged, and the bound could have exceeded the ledger's figure.

Each verdict has its own exit status (:data:`EXIT_STATUS`), documented in
docs/privacy-audit.md and in ``audit --help``; 2 stays bad input (the command refuses to
run), 3 a diverged run, 4 a stale checkpoint.
"""
from __future__ import annotations

from .. import display

__all__ = ["PASS", "FAIL", "INCONCLUSIVE", "EXIT_STATUS", "decide", "format_verdict"]

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
#: the audit command's exit status per verdict
EXIT_STATUS = {PASS: 0, FAIL: 1, INCONCLUSIVE: 5}


def decide(flags: list[str], best_possible: float, ledger: float) -> str:
    """The verdict of an audit.

    Parameters
    ----------
    flags : list of str
        What its checks flagged (empty: nothing).
    best_possible : float
        The largest bound the audit could have shown with these trials (or canaries and
        guesses), in the ledger's unit (mu or epsilon).
    ledger : float
        The ledger's figure it is compared with.
    """
    if flags:
        return FAIL
    # "could have failed" only if the bound could exceed the ledger (NaN: it could not)
    return PASS if best_possible > ledger else INCONCLUSIVE


def format_verdict(verdict: str, flags: list[str], best_possible: float, ledger: float,
                   quantity: str, more: str, ledger_label: str | None = None) -> str:
    """The verdict lines the command prints last.

    ``quantity`` names the compared figure ("mu", "epsilon"); ``more`` says what the best
    possible bound grows with (e.g. "the bound grows with --trials"); ``ledger_label``
    what the ledger's figure is when it is not a proven bound (shown beside it).
    """
    if verdict == FAIL:
        return "verdict: FAIL\n" + "\n".join(f"  - {f}" for f in flags)
    if verdict == INCONCLUSIVE:
        return (f"verdict: INCONCLUSIVE\n  - the audit could not have failed: at best it "
                f"shows {quantity} >= {display.lower_bound(best_possible)}, not above the ledger's "
                f"{display.loss(ledger)}{f' ({ledger_label})' if ledger_label else ''}"
                f"\n    ({more})")
    return "verdict: PASS"
