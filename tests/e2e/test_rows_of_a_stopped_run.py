"""A run that one agent other than rank 0 stops keeps every metrics row all agents posted.

The agent that stops (its iterate diverges, or its privacy budget is reached) aborts the job
while rank 0 waits for
its next message. Rank 0 writes the rows whose every share has arrived while it waits
(``network.while_sleeping``); before, it wrote them only at its next evaluation, so a stop
before that lost the last rows, and a stop before the first evaluation after the start left
no ``metrics.csv`` at all (docs/reliability.md).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from launch_util import needs_mpiexec, run_mpiexec

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"

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


@needs_mpiexec
def test_rows_every_agent_posted_are_kept_when_another_agent_reaches_its_budget(tmp_path):
    # the documented example method, with ten times the noise on every agent but agent 1:
    # agent 1 alone reaches privacy.epsilon = 5, at iteration 786
    method = (EXAMPLES / "my_private_method.py").read_text()
    assert "ConstantSchedule(params.sigma)" in method
    (tmp_path / "my_private_method.py").write_text(method.replace(
        "ConstantSchedule(params.sigma)",
        "ConstantSchedule(params.sigma * (1 if agent.id == 1 else 10))"))
    config = tmp_path / "method.toml"
    config.write_text((EXAMPLES / "my_private_method.toml").read_text())
    out = tmp_path / "run"
    proc = run_mpiexec(4, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
                           str(config), "--set", "run.iterations=2000", "--set",
                           "run.eval_every=100", "--out", str(out)], timeout=180)
    assert proc.returncode == 2, proc.stderr
    assert "agent 1 reached the privacy budget at iteration 786" in proc.stderr
    assert [p.name for p in out.glob("privacy-agent-*-at-stop.json")] == [
        "privacy-agent-1-at-stop.json"]
    lines = (out / "metrics.csv").read_text().splitlines()
    # the row of iteration 700 was rank 0's to write at 800
    assert [int(line.split(",")[0]) for line in lines[1:]] == list(range(0, 800, 100))
