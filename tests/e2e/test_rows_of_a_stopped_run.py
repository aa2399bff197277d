"""A run that one agent other than rank 0 stops keeps every metrics row all agents posted.

The agent that stops (here: its iterate diverges) aborts the job while rank 0 waits for
its next message. Rank 0 writes the rows whose every share has arrived while it waits
(``network.while_sleeping``); before, it wrote them only at its next evaluation, so a stop
before that lost the last rows, and a stop before the first evaluation after the start left
no ``metrics.csv`` at all (docs/reliability.md).
"""
from __future__ import annotations

import sys

import pytest

from launch_util import needs_mpiexec, run_mpiexec

#: a DGD whose agent 1 reports a blown-up iterate from iteration ``blow_up_at`` on; the
#: divergence guard then stops the run on agent 1 alone
BLOW_UP = '''
import dataclasses

from mpi_privopt.methods.baselines.dgd import DGD, DGDParams


@dataclasses.dataclass
class BlowUpParams(DGDParams):
    blow_up_at: int = 2


class BlowUp(DGD):
    """DGD, but agent 1's estimate is 1e9 times its iterate from ``blow_up_at`` on."""

    name = "blow-up-dgd"
    summary = "a DGD whose agent 1 diverges (a test's)"
    Params = BlowUpParams

    def step(self, n):
        super().step(n)
        self.last_step = n

    @property
    def estimate(self):
        x = super().estimate
        if self.agent.id == 1 and getattr(self, "last_step", 0) >= self.params.blow_up_at:
            return x * 1e9
        return x
'''

CONFIG = '''
[problem]
name = "ridge"

[topology]
kind = "ring"

[algorithm]
module = "blow_up:BlowUp"
step = 0.05
blow_up_at = {blow_up_at}

[run]
iterations = 200
eval_every = {eval_every}
'''


@needs_mpiexec
@pytest.mark.parametrize("blow_up_at, eval_every, rows", [
    (2, 20, [0]),             # before rank 0's first evaluation after the start
    (23, 10, [0, 10, 20]),    # the row of iteration 20 was rank 0's to write at 30
])
def test_rows_every_agent_posted_are_kept_when_another_agent_stops_the_run(
        tmp_path, blow_up_at, eval_every, rows):
    (tmp_path / "blow_up.py").write_text(BLOW_UP)
    config = tmp_path / "blow_up.toml"
    config.write_text(CONFIG.format(blow_up_at=blow_up_at, eval_every=eval_every))
    out = tmp_path / "run"
    proc = run_mpiexec(4, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
                           str(config), "--out", str(out)], timeout=180)
    assert proc.returncode == 3, proc.stderr
    assert "agent 1 diverged: the iterate's norm reached" in proc.stderr
    assert f"at iteration {blow_up_at}," in proc.stderr
    assert [p.name for p in out.glob("diverged-agent-*.json")] == ["diverged-agent-1.json"]
    lines = (out / "metrics.csv").read_text().splitlines()
    assert lines[0].startswith("iteration,")
    assert [int(line.split(",")[0]) for line in lines[1:]] == rows
