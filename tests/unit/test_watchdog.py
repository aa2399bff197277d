"""The stall watchdog in one process: several agents' watchdogs on one run directory.

A stopped rank is modelled by a watchdog whose thread stops without its last heartbeat
(what SIGSTOP does to both threads of a rank); the job's abort by a recording function.
The real thing, under mpiexec with SIGSTOP, is tests/e2e/test_stall_watchdog.py.
"""
import io
import json
import time

import pytest

from mpi_privopt.services import watchdog
from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.services.watchdog import STALL_RECORD, STALL_STATUS, Watchdog, stall_timeout_seconds

TIMEOUT = 0.6  # period 0.03 s


class Job:
    """K watchdogs on one directory; ``aborts`` records (agent, status) of each abort."""

    def __init__(self, run_dir, size, timeout=TIMEOUT):
        self.aborts, self.streams = [], []
        self.dogs = []
        for k in range(size):
            stream = io.StringIO()
            self.streams.append(stream)
            self.dogs.append(Watchdog(run_dir, k, size, timeout, "host-x",
                                      abort=lambda status, k=k: self.aborts.append((k, status)),
                                      stream=stream))

    def start(self):
        for dog in self.dogs:
            dog.start()

    def freeze(self, k):
        """Agent k stops answering: its thread ends without a last heartbeat."""
        dog = self.dogs[k]
        dog._stop.set()
        dog._thread.join()

    def stop(self):
        for dog in self.dogs:
            dog._stop.set()
        for dog in self.dogs:
            if dog._thread.is_alive():
                dog._thread.join()

    def messages(self):
        return [s.getvalue() for s in self.streams if s.getvalue()]


@pytest.fixture(autouse=True)
def short_quiet(monkeypatch):
    monkeypatch.setattr(watchdog, "QUIET_SECONDS", 0.2)
    monkeypatch.setattr(watchdog, "ABORT_GRACE_SECONDS", 0.0)


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not condition():
        time.sleep(0.02)
    return condition()


def test_a_silent_agent_is_named_once_and_the_job_aborted(tmp_path):
    job = Job(tmp_path, 4)
    job.start()
    for dog in job.dogs:
        dog.progress(17)
    time.sleep(3 * job.dogs[0].period)  # agent 2 publishes iteration 17, then stops
    job.freeze(2)
    started = time.monotonic()
    try:
        assert wait_for(lambda: len(job.aborts) == 3, 10 * TIMEOUT + 1)
        elapsed = time.monotonic() - started
    finally:
        job.stop()
    assert elapsed < TIMEOUT + 1.0
    assert all(status == STALL_STATUS for _, status in job.aborts)
    (message,) = job.messages()  # exactly one agent speaks
    assert message.startswith("mpi_privopt: error: agent 2 (host host-x, pid ")
    assert "stopped answering (its last heartbeat: iteration 17 done)" in message
    assert "waited in iteration 18" in message and "how to fix:" in message
    record = json.loads((tmp_path / STALL_RECORD).read_text())
    assert record["silent_agents"] == [2] and record["kind"] == "silent"
    assert record["detected_by"] != 2 and record["status"] == "stalled"


def test_an_agent_still_progressing_keeps_the_others_waiting(tmp_path):
    # a token's holder works while the others wait: no verdict
    job = Job(tmp_path, 3)
    job.start()
    try:
        deadline = time.monotonic() + 4 * TIMEOUT
        n = 0
        while time.monotonic() < deadline:
            n += 1
            job.dogs[1].progress(n)
            time.sleep(0.01)
    finally:
        job.stop()
    assert job.aborts == [] and job.messages() == []
    assert not (tmp_path / STALL_RECORD).exists()


def test_an_evaluation_is_not_a_stall(tmp_path):
    job = Job(tmp_path, 3)
    job.start()
    try:
        with job.dogs[0].paused():  # rank 0 evaluates for several timeouts
            time.sleep(4 * TIMEOUT)
    finally:
        job.stop()
    assert job.aborts == [] and job.messages() == []


def test_every_agent_alive_and_none_progressing_is_a_stuck_job(tmp_path):
    job = Job(tmp_path, 3)
    for k, dog in enumerate(job.dogs):
        dog.progress(10 - k)
    job.start()
    try:
        assert wait_for(lambda: len(job.aborts) == 3, 10 * TIMEOUT + 1)
    finally:
        job.stop()
    (message,) = job.messages()
    assert "no agent made progress for 0.6 s" in message
    assert "agent 2 (host host-x, pid" in message and "furthest behind at iteration 8" in message
    assert json.loads((tmp_path / STALL_RECORD).read_text())["kind"] == "stuck"


def test_a_disarmed_agent_is_not_silent(tmp_path):
    # an agent done with the loop (its last heartbeat says so) while another still waits
    job = Job(tmp_path, 2)
    job.start()
    job.dogs[1].stop()
    try:
        time.sleep(4 * TIMEOUT)
    finally:
        job.stop()
    # agent 0 alone is stalled: nobody silent; the done agent does not count as stuck,
    # and agent 0's own stall then reads as a stuck job naming agent 0
    assert all(k == 0 for k, _ in job.aborts)
    assert all("agent 1 " not in m for m in job.messages())


def test_the_watchdog_thread_sleeps(tmp_path):
    job = Job(tmp_path, 2, timeout=60.0)  # period 1 s: armed, nothing wrong
    job.start()
    cpu0, wall0 = time.process_time(), time.monotonic()  # CPU of every thread
    time.sleep(2.0)
    cpu = time.process_time() - cpu0
    job.stop()
    assert cpu / (time.monotonic() - wall0) < 0.05


@pytest.mark.parametrize("value, seconds", [(600, 600.0), (2.5, 2.5), (0, None),
                                            ("off", None), ("OFF", None)])
def test_stall_timeout_values(value, seconds):
    assert stall_timeout_seconds(value) == seconds


@pytest.mark.parametrize("text", ["-1", "nan", '"soon"'])
def test_a_bad_stall_timeout_is_one_message(text):
    with pytest.raises(ConfigError, match="run.stall_timeout") as err:
        load_config("default", [f"run.stall_timeout={text}"])
    assert '"off"' in err.value.fix


def test_the_default_is_generous():
    assert load_config("default").run.stall_timeout == watchdog.DEFAULT_STALL_TIMEOUT == 600


def test_a_resumed_run_moves_the_earlier_stall_record_aside(tmp_path):
    # left in place, the earlier record would make a new stall look already reported:
    # the job would end without its one message
    assert watchdog.archive_stall_record(tmp_path) is None
    (tmp_path / STALL_RECORD).write_text('{"n": 1}')
    assert watchdog.archive_stall_record(tmp_path) == tmp_path / "stall-1.json"
    (tmp_path / STALL_RECORD).write_text('{"n": 2}')
    assert watchdog.archive_stall_record(tmp_path) == tmp_path / "stall-2.json"
    assert not (tmp_path / STALL_RECORD).exists()
    assert json.loads((tmp_path / "stall-1.json").read_text()) == {"n": 1}
    job = Job(tmp_path, 3)  # and a new stall is reported again, once
    job.start()
    try:
        for dog in job.dogs:
            dog.progress(3)
        time.sleep(3 * job.dogs[0].period)
        job.freeze(1)
        assert wait_for(lambda: len(job.aborts) == 2, 10 * TIMEOUT + 1)
    finally:
        job.stop()
    (message,) = job.messages()
    assert "agent 1" in message
