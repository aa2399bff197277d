"""The run services' interface (mpi_privopt/services/base.py, docs/architecture.md "Run
services"): what each hook does with the loop's state, and that no service reaches into
the engine (it sees a RunContext and a LoopState, never the engine's Session)."""
from __future__ import annotations

import ast
import dataclasses
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import mpi_privopt.services as services
from mpi_privopt.services import checkpoint, faults
from mpi_privopt.services.base import LoopState, RunContext
from mpi_privopt.services.stop_signal import StopOnSignal, mark_interrupted

SERVICES_DIR = Path(services.__file__).parent


def _context(iterations: int = 10, every: int = 4, final_state: bool = True) -> RunContext:
    cfg = SimpleNamespace(run=SimpleNamespace(iterations=iterations, checkpoint_every=every))
    return RunContext(cfg=cfg, comm=None, eval_comm=None, run_dir="/nonexistent", graph=None,
                      stream=None, directory=None, state=None, final_state=final_state)


class _Recorder(checkpoint.Checkpointer):
    """A Checkpointer whose save only records what it was asked (no files, no MPI)."""

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.saved: list[tuple] = []

    def save(self, ctx, n, algorithm_seconds, eval_seconds, final=False, wall_seconds=None):
        self.saved.append((n, final))
        self.saved_at = n


def test_no_service_imports_the_engine_or_the_commit():
    for path in sorted(SERVICES_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
                assert not {"engine", "run_commit", "..engine"} & set(names), path.name
                assert not (node.module or "").endswith(("engine", "run_commit")), path.name


def test_the_context_is_frozen():
    ctx = _context()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.run_dir = "elsewhere"


def test_a_due_checkpoint_completes_the_rows_first_and_the_last_is_the_ends():
    ctx, flushed = _context(iterations=10, every=4), []
    loop = LoopState(flush_rows=lambda: flushed.append(True))
    saver = _Recorder(ctx)
    for n in range(1, 11):
        saver.after_iteration(ctx, loop, n)
    assert saver.saved == [(4, False), (8, False)] and len(flushed) == 2
    loop.wall_seconds = 1.0
    assert saver.at_end(ctx, loop) == ""
    assert saver.saved[-1] == (10, True)
    assert saver.at_end(ctx, loop) == "" and len(saver.saved) == 3  # written once


def test_an_agreed_stop_is_saved_and_ends_the_run_there():
    ctx = _context(iterations=10, every=0)
    loop = LoopState()
    saver = _Recorder(ctx)
    saver.after_iteration(ctx, loop, 3)
    assert saver.saved == []
    loop.stop_signal, loop.stopped_at = 15, 3
    saver.after_iteration(ctx, loop, 3)
    assert saver.saved == [(3, False)] and loop.end(10) == 3
    assert saver.at_end(ctx, loop) == "" and len(saver.saved) == 1  # the stop's is the end's


def test_a_hooked_run_saves_no_final_state():
    ctx = _context(final_state=False)
    saver = _Recorder(ctx)
    assert "on_setup" in saver.at_end(ctx, LoopState())
    assert saver.saved == []


def test_no_agreement_after_the_last_iteration():
    class Counting(StopOnSignal):
        def __init__(self):  # no communicator: only the hook's logic is checked
            self.asked = 0

        def agreed(self):
            self.asked += 1
            return 0

    ctx, loop, stop = _context(iterations=3), LoopState(), Counting()
    for n in (1, 2, 3):
        stop.after_iteration(ctx, loop, n)
    assert stop.asked == 2 and loop.stop_signal == 0


def test_an_interrupted_summary_names_the_signal():
    summary = SimpleNamespace(status="completed")
    mark_interrupted(summary, 0, None)
    assert summary.status == "completed"
    mark_interrupted(summary, 15, 7)
    assert (summary.status, summary.stopped_at_iteration, summary.stop_signal) == (
        "interrupted", 7, "SIGTERM")


def test_the_fault_hook_is_off_without_its_variable(monkeypatch):
    monkeypatch.setattr(faults, "_FAULTS", ())
    assert not faults.armed()
    monkeypatch.setattr(faults, "_FAULTS", (("kill", "iteration", 0, 5, ""),))
    assert faults.armed()
    faults.fault("iteration", 1, 5)  # another rank's place: nothing happens
    faults.fault("iteration", 0, 4)


def test_several_faults_are_all_injected(monkeypatch, tmp_path):
    """``MPI_PRIVOPT_TEST_FAULT`` takes several faults separated by commas (a file path
    keeps its colons); a pause woken by its go file says so in ``FILE.woke``."""
    paused = tmp_path / "p:aused"
    parsed = faults._parse_faults(f"pause@iteration:1:3:{paused},slow@commit-begin:0:0:0.01")
    assert parsed == (("pause", "iteration", 1, 3, str(paused)),
                      ("slow", "commit-begin", 0, 0, "0.01"))
    monkeypatch.setattr(faults, "_FAULTS", parsed)
    Path(f"{paused}.go").touch()
    faults.fault("iteration", 1, 3)
    assert paused.read_text().strip().isdigit()
    assert Path(f"{paused}.woke").read_text() == "go\n"
    slept = time.perf_counter()
    faults.fault("commit-begin", 0, 7)
    assert time.perf_counter() - slept >= 0.01
