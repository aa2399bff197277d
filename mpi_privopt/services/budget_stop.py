"""Agents that must stop the run alone: a record of each, and one message for all.

Two reasons stop a run from inside one agent: its privacy budget (below) and a diverging
iterate (:mod:`mpi_privopt.services.divergence`); both use the records and the speaker here.

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

from ..errors import UserError

__all__ = ["STOP_RECORD", "stop_record_path", "stopped_agents", "speak_for_stopped_agents"]

#: the record a stopped agent leaves in the run directory, by reason
RECORDS = {"budget": "privacy-agent-{rank}-at-stop.json",
           "diverged": "diverged-agent-{rank}.json"}
STOP_RECORD = RECORDS["budget"]
#: the first line of the one message, by reason
HEADLINES = {"budget": "{who} reached the privacy budget at iteration {n}, before sending: ",
             "diverged": "{who} diverged: "}
#: how long a stopped agent waits for the others stopping at the same iteration
SETTLE_SECONDS = 2.0


def stop_record_path(run_dir: str | Path, rank: int, kind: str = "budget") -> Path:
    """Where agent ``rank`` records that ``kind`` (budget, diverged) stopped it."""
    return Path(run_dir) / RECORDS[kind].format(rank=rank)


def stopped_agents(run_dir: str | Path, kind: str = "budget") -> list[int]:
    """The agents that have recorded a ``kind`` stop in ``run_dir``, in rank order."""
    pattern = re.compile(re.escape(RECORDS[kind]).replace(r"\{rank\}", r"(\d+)") + "$")
    found = (pattern.match(p.name) for p in Path(run_dir).iterdir())
    return sorted(int(m.group(1)) for m in found if m)


def agent_names(agents: list[int]) -> str:
    """``agent 3`` or ``agents 0, 1 and 2``."""
    if len(agents) == 1:
        return f"agent {agents[0]}"
    return "agents " + ", ".join(map(str, agents[:-1])) + f" and {agents[-1]}"


def speak_for_stopped_agents(run_dir: str | Path, rank: int, iteration: int,
                             err: UserError, kind: str = "budget") -> UserError:
    """The error this stopped agent raises: the message for all, or a silent one.

    Call after writing this agent's record. The returned error has ``for_all = True``
    when this agent speaks for every agent stopped so far, ``quiet = True`` when a lower
    rank does (:func:`mpi_privopt.entrypoint.fail_user` then waits for that rank's abort).
    """
    import time
    time.sleep(SETTLE_SECONDS)  # others stopping at this iteration write their records
    stopped = stopped_agents(run_dir, kind) or [rank]
    if rank != min(stopped):
        quiet = type(err)(err.what, err.fix)
        quiet.quiet = True
        return quiet
    headline = HEADLINES[kind].format(who=agent_names(stopped), n=iteration)
    loud = type(err)(headline + err.what, err.fix)
    loud.for_all = True
    return loud
