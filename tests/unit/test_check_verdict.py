"""The pre-MPI check once per host and job (mpi_privopt/check_verdict.py, prelaunch.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from launch_util import child_env
from mpi_privopt import check_verdict, graph_cache
from mpi_privopt.check_verdict import Verdict, check_key, check_once_per_host
from mpi_privopt.prelaunch import BUDGET_LIBRARIES, RANK_0_LIBRARIES, check_verdict_of

TIME_LIMIT = 120


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv(graph_cache.CACHE_ENV, str(directory))
    return directory / "checks"


class Check:
    """A check that counts its calls and returns ``verdict``."""

    def __init__(self, verdict: Verdict):
        self.verdict, self.calls = verdict, 0

    def __call__(self) -> Verdict:
        self.calls += 1
        return self.verdict


def _key(overrides=(), n_ranks=4, config="default", resume=None, environ=None):
    return check_key(config, list(overrides), n_ranks, resume, environ or {})


def test_the_first_task_checks_and_the_next_ones_read_its_verdict(cache):
    bad = Check(Verdict(error="unknown topology.kind 'x'\n  how to fix: ..."))
    key = _key(["topology.kind=x"])
    assert check_once_per_host(key, bad) == bad.verdict
    assert check_once_per_host(key, bad) == bad.verdict
    assert bad.calls == 1
    good = Check(Verdict(notes=["mpi_privopt: note: one", "two"]))
    assert check_once_per_host(_key(), good) == good.verdict
    assert check_once_per_host(_key(), good).notes == ["mpi_privopt: note: one", "two"]
    assert good.calls == 1
    assert len(list(cache.glob("*.json"))) == 2


@pytest.mark.parametrize("change", [
    {"overrides": ["run.iterations=7"]}, {"n_ranks": 5}, {"config": "other"},
    {"resume": "runs/x"}, {"environ": {"SLURM_JOB_ID": "12"}}])
def test_a_changed_input_is_checked_again(cache, change):
    check = Check(Verdict())
    check_once_per_host(_key(), check)
    check_once_per_host(_key(**change), check)
    assert check.calls == 2


def test_a_config_file_is_keyed_by_its_contents(cache, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('[run]\niterations = 5\n')
    first = check_key(str(config), [], 4, None, {})
    assert check_key(str(config), [], 4, None, {}) == first
    config.write_text('[run]\niterations = 6\n')
    assert check_key(str(config), [], 4, None, {}) != first


def test_another_job_checks_again(cache, monkeypatch):
    # the tasks of one job share the process that started them (the launcher's proxy)
    check = Check(Verdict())
    check_once_per_host(_key(), check)
    monkeypatch.setattr(check_verdict.os, "getppid", lambda: 1)
    check_once_per_host(_key(), check)
    assert check.calls == 2


@pytest.mark.parametrize("damage", [
    "not json", "{}", '{"format": 1}', "[1, 2]",
    json.dumps({"format": 2, "key": "another", "error": None, "notes": [], "preload": []}),
    json.dumps({"format": 99, "key": "KEY", "error": None, "notes": []}),
    json.dumps({"format": 2, "key": "KEY", "error": 3, "notes": [], "preload": []}),
    json.dumps({"format": 2, "key": "KEY", "error": None, "notes": "a note", "preload": []}),
    json.dumps({"format": 2, "key": "KEY", "error": None, "notes": [1], "preload": []}),
    json.dumps({"format": 2, "key": "KEY", "error": None, "notes": [], "preload": "scipy"})])
def test_a_stale_or_damaged_verdict_is_ignored_and_replaced(cache, damage):
    key = _key()
    cache.mkdir(parents=True, mode=0o700)
    (cache / f"{key}.json").write_text(damage.replace("KEY", key))
    check = Check(Verdict(error="bad input"))
    assert check_once_per_host(key, check) == check.verdict
    assert check.calls == 1
    assert json.loads((cache / f"{key}.json").read_text())["error"] == "bad input"


def test_without_a_cache_every_task_checks(monkeypatch):
    monkeypatch.setenv(graph_cache.CACHE_ENV, "off")
    check = Check(Verdict())
    check_once_per_host(_key(), check)
    check_once_per_host(_key(), check)
    assert check.calls == 2


def test_old_verdicts_are_pruned(cache):
    cache.mkdir(parents=True, mode=0o700)
    old, recent = cache / "old.json", cache / "recent.json"
    for path in (old, recent):
        path.write_text("{}")
    os.utime(old, (0, 0))
    check_once_per_host(_key(), Check(Verdict()))
    assert not old.exists() and recent.exists()


def test_the_verdict_is_the_checks_outcome():
    good = check_verdict_of("default", [], 4)
    assert good.error is None and good.notes == []
    # what task 0 loads before MPI: the calibration's libraries only for a finite budget
    assert good.preload == [*RANK_0_LIBRARIES, *BUDGET_LIBRARIES]
    assert check_verdict_of("default", ["algorithm.name=dgd", "privacy.epsilon=inf"],
                            4).preload == list(RANK_0_LIBRARIES)
    bad = check_verdict_of("default", ["topology.kind=nope"], 4)
    assert bad.error.startswith("unknown topology.kind 'nope'") and "how to fix" in bad.error
    assert check_verdict_of("default", ["run.iterations=3000"], 4).notes  # the noise warning


def _tasks(cache_root, overrides, n=4):
    """``n`` processes started together as the tasks of one job (same parent, PMI_*)."""
    code = ("from mpi_privopt.prelaunch import validate_before_mpi\n"
            f"validate_before_mpi('default', {overrides!r})\n"
            "print('passed')\n")
    tasks = [subprocess.Popen([sys.executable, "-c", code],
                              env=child_env({graph_cache.CACHE_ENV: str(cache_root),
                                             "PMI_SIZE": str(n), "PMI_RANK": str(rank)}),
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for rank in range(n)]
    return [(task.wait(timeout=TIME_LIMIT), *task.communicate()) for task in tasks]


def test_bad_input_exits_2_on_every_task_with_one_message(cache):
    results = _tasks(cache.parent, ["topology.kind=nope"])
    assert [status for status, _, _ in results] == [2, 2, 2, 2], results
    errors = [err for _, _, err in results]
    assert errors[0].count("mpi_privopt: error: unknown topology.kind 'nope'") == 1
    assert errors[1:] == ["", "", ""]  # task 0 speaks for all
    assert not any(out for _, out, _ in results)
    assert len(list(cache.glob("*.json"))) == 1  # one check, read by the others


def test_good_input_passes_on_every_task_and_task_0_prints_the_notes(cache):
    results = _tasks(cache.parent, ["run.iterations=3000"])
    assert [(status, out) for status, out, _ in results] == [(0, "passed\n")] * 4, results
    assert "mpi_privopt: warning: the noise" in results[0][2]
    assert [err for _, _, err in results[1:]] == ["", "", ""]


def test_the_gate_is_passed_at_once_without_task_0_on_the_host(cache):
    check_verdict.wait_at_gate(_key())  # no gate: another node, or no cache
    assert not list(cache.glob("*.gate"))


def _gate_holder(cache, key: str) -> subprocess.Popen:
    """A task 0 in another process that announces itself, says so, then waits for stdin."""
    code = ("import sys\n"
            "from mpi_privopt import check_verdict\n"
            f"check_verdict.announce_task_0({key!r})\n"
            "print('closed', flush=True)\n"
            "if sys.stdin.readline() == 'open\\n':\n"
            f"    check_verdict.open_gate({key!r})\n"
            "    print('opened', flush=True)\n"
            "    sys.stdin.readline()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], text=True,
                              env=child_env({graph_cache.CACHE_ENV: str(cache.parent)}),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout.readline() == "closed\n"
    return holder


def _waiter(cache, key: str) -> subprocess.Popen:
    code = ("import time\n"
            "from mpi_privopt import check_verdict\n"
            f"check_verdict.wait_at_gate({key!r})\n"
            "print('passed', time.process_time(), flush=True)\n")
    return subprocess.Popen([sys.executable, "-c", code], text=True,
                            env=child_env({graph_cache.CACHE_ENV: str(cache.parent)}),
                            stdout=subprocess.PIPE)


def test_the_gate_holds_the_others_asleep_until_task_0_opens_it(cache, monkeypatch):
    import threading
    import time
    key = _key()
    cache.mkdir(parents=True, mode=0o700)
    holder = _gate_holder(cache, key)
    asked = threading.Event()

    def open_it():
        asked.set()
        holder.stdin.write("open\n")
        holder.stdin.flush()

    def no_polling(seconds):
        raise AssertionError("the gate polls: it should sleep on the lock")
    try:
        opener = threading.Timer(0.5, open_it)
        opener.start()
        with monkeypatch.context() as patched:  # (only the wait: Popen.wait sleeps)
            patched.setattr(time, "sleep", no_polling)
            check_verdict.wait_at_gate(key)
        assert asked.is_set()  # returned only once task 0 was told to open it
        assert holder.stdout.readline() == "opened\n"
        opener.join()
    finally:
        holder.communicate("\n", timeout=TIME_LIMIT)


def test_a_task_0_that_dies_lets_the_others_go(cache):
    key = _key()
    cache.mkdir(parents=True, mode=0o700)
    holder = _gate_holder(cache, key)
    waiter = _waiter(cache, key)
    holder.kill()  # the kernel lets go of a dead task's lock
    holder.communicate(timeout=TIME_LIMIT)
    out, _ = waiter.communicate(timeout=TIME_LIMIT)
    assert out.split()[0] == "passed"


def test_a_gate_never_opened_is_left_after_the_longest_wait(cache, monkeypatch):
    key = _key()
    cache.mkdir(parents=True, mode=0o700)
    holder = _gate_holder(cache, key)  # alive, and never opens it
    try:
        monkeypatch.setattr(check_verdict, "GATE_WAIT_SECONDS", 0.05)
        check_verdict.wait_at_gate(key)  # returns: a stuck task 0 never hangs the others
        assert holder.poll() is None
    finally:
        holder.communicate("\n", timeout=TIME_LIMIT)


def test_task_0_preloads_and_the_others_start_after_it(cache):
    # four tasks of one job, as the command line runs them before MPI: the workers leave
    # the gate only once task 0 has loaded scipy (it lets go of the gate after)
    code = ("import os, sys, time\n"
            "from mpi_privopt import prelaunch\n"
            "prelaunch.validate_before_mpi('default', [])\n"
            "prelaunch.preload_for_rank_0()\n"
            "print(time.time(), 'scipy.optimize' in sys.modules)\n")
    tasks = [subprocess.Popen([sys.executable, "-c", code],
                              env=child_env({graph_cache.CACHE_ENV: str(cache.parent),
                                             "PMI_SIZE": "4", "PMI_RANK": str(rank)}),
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for rank in range(4)]
    results = [task.communicate(timeout=TIME_LIMIT) for task in tasks]
    assert all(task.returncode == 0 for task in tasks), results
    lines = [out.split() for out, _ in results]
    assert [loaded for _, loaded in lines] == ["True", "False", "False", "False"]
    assert "dp_accounting.gaussian_mechanism" in json.loads(next(cache.glob("*.json")).read_text())["preload"]
    (gate,) = cache.glob("*.gate")  # one gate, the job's own
    assert json.loads(next(cache.glob("*.json")).read_text())["key"] == gate.stem
