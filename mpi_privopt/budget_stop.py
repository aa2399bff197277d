"""Agents that reach their privacy budget: a record of each, and one message for all.

The budget guard refuses a release before it leaves the agent, so only that agent knows;
its neighbours wait for a message that will not come and the job must be aborted. In a
calibrated run every agent usually reaches its budget at the same iteration, and each used
to print its own message before the launcher's abort lines. Now each stopped agent writes
``privacy-agent-K-at-stop.json`` (iteration, reason, its ledger and its traffic rows), waits
a moment for the others to write theirs, and the lowest stopped rank speaks for all of
them; the others stay silent and wait for its abort (and speak for themselves only if it
never comes). ``report`` reads these records to show the stopped run.
"""
from __future__ import annotations

import re
from pathlib import Path

from .errors import PrivacyBudgetExceeded

__all__ = ["STOP_RECORD", "stop_record_path", "stopped_agents", "speak_for_stopped_agents"]

#: the record a stopped agent leaves in the run directory
STOP_RECORD = "privacy-agent-{rank}-at-stop.json"
#: how long a stopped agent waits for the others stopping at the same iteration
SETTLE_SECONDS = 0.5

_RECORD = re.compile(r"privacy-agent-(\d+)-at-stop\.json$")


def stop_record_path(run_dir: str | Path, rank: int) -> Path:
    """Where agent ``rank`` records that its budget stopped it."""
    return Path(run_dir) / STOP_RECORD.format(rank=rank)


def stopped_agents(run_dir: str | Path) -> list[int]:
    """The agents that have recorded a budget stop in ``run_dir``, in rank order."""
    found = (_RECORD.match(p.name) for p in Path(run_dir).glob("privacy-agent-*-at-stop.json"))
    return sorted(int(m.group(1)) for m in found if m)


def agent_names(agents: list[int]) -> str:
    """``agent 3`` or ``agents 0, 1 and 2``."""
    if len(agents) == 1:
        return f"agent {agents[0]}"
    return "agents " + ", ".join(map(str, agents[:-1])) + f" and {agents[-1]}"


def speak_for_stopped_agents(run_dir: str | Path, rank: int, iteration: int,
                             err: PrivacyBudgetExceeded) -> PrivacyBudgetExceeded:
    """The error this stopped agent raises: the message for all, or a silent one.

    Call after writing this agent's record. The returned error has ``for_all = True``
    when this agent speaks for every agent stopped so far, ``quiet = True`` when a lower
    rank does (:func:`mpi_privopt.entrypoint.fail_user` then waits for that rank's abort).
    """
    import time
    time.sleep(SETTLE_SECONDS)  # others stopping at this iteration write their records
    stopped = stopped_agents(run_dir) or [rank]
    if rank != min(stopped):
        quiet = PrivacyBudgetExceeded(err.what, err.fix)
        quiet.quiet = True
        return quiet
    who = agent_names(stopped)
    loud = PrivacyBudgetExceeded(
        f"{who} reached the privacy budget at iteration {iteration}, before sending: "
        f"{err.what}", err.fix)
    loud.for_all = True
    return loud
