"""The claim of a run directory (mpi_privopt/run_lock.py): who holds it, and when a claim
left behind is stale (docs/reliability.md). Real runs: tests/e2e/test_run_lock.py."""
import fcntl
import json
import os
import shlex
import socket
import subprocess
import sys
import time

import pytest

from mpi_privopt import run_lock
from mpi_privopt.errors import ConfigError
from mpi_privopt.results import RunDirectory, choose_run_dir, release_run_dir
from mpi_privopt.run_lock import (CLAIM_FILE, RunDirInUse, claim, owner_record,
                                  process_start_ticks, release)

pytestmark = pytest.mark.skipif(not os.path.isfile("/proc/self/stat"), reason="needs /proc")


@pytest.fixture(autouse=True)
def _release_claims():
    yield
    release()  # whatever a test left held by this process


def write_claim(run_dir, **changes) -> dict:
    """A claim file in ``run_dir`` as this process would write it, with ``changes``."""
    run_dir.mkdir(exist_ok=True)
    record = {**owner_record(), **changes}
    (run_dir / CLAIM_FILE).write_text(json.dumps(record))
    return record


def ended_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_claim_records_host_pid_start_time_command_and_time(tmp_path):
    path = claim(tmp_path, "--out x")
    record = json.loads(path.read_text())
    stat = open("/proc/self/stat").read()
    assert record["host"] == socket.gethostname() and record["pid"] == os.getpid()
    assert record["start_ticks"] == int(stat[stat.rindex(")") + 2:].split()[19])
    assert record["started"].endswith("UTC") and record["claimed"].endswith("UTC")
    assert shlex.split(record["command"])[0] == sys.orig_argv[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [CLAIM_FILE]  # nothing else left
    release(tmp_path)
    assert not path.exists()


def test_a_live_claim_refuses_another_job(tmp_path):
    claim(tmp_path, "--out x")
    with pytest.raises(RunDirInUse) as refused:
        claim(tmp_path, f"--resume {tmp_path}")
    assert f"pid {os.getpid()} on this host" in str(refused.value)
    assert "one writer at a time" in refused.value.fix


def test_a_claim_of_an_ended_process_is_removed_with_a_note(tmp_path):
    pid = ended_pid()
    write_claim(tmp_path, pid=pid)
    notes = []
    claim(tmp_path, "--out x", on_note=notes.append)
    assert len(notes) == 1 and f"left by pid {pid}" in notes[0]
    assert "no longer running" in notes[0]
    assert json.loads((tmp_path / CLAIM_FILE).read_text())["pid"] == os.getpid()


def test_a_process_that_has_ended_but_not_been_reaped_is_not_the_owner(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])  # a zombie until waited for
    try:
        for _ in range(200):
            state = open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
            time.sleep(0.05)
        write_claim(tmp_path, pid=child.pid, start_ticks=process_start_ticks(child.pid))
        notes = []
        claim(tmp_path, "--out x", on_note=notes.append)
        assert "that process has ended" in notes[0]
    finally:
        child.wait()


def test_a_pid_used_again_by_another_process_is_not_the_owner(tmp_path):
    mine = owner_record()
    write_claim(tmp_path, start_ticks=mine["start_ticks"] - 1)  # this pid, started earlier
    notes = []
    claim(tmp_path, "--out x", on_note=notes.append)
    assert "now belongs to another process" in notes[0]


def test_a_claim_from_another_host_names_it_and_the_rm_that_clears_it(tmp_path):
    write_claim(tmp_path, host="node-elsewhere-7", pid=4242, started="2026-01-02 03:04:05 UTC")
    with pytest.raises(RunDirInUse) as refused:
        claim(tmp_path, "--out x")
    text = str(refused.value)
    assert "host node-elsewhere-7" in text and "pid 4242" in text
    assert "started 2026-01-02 03:04:05 UTC" in text
    assert refused.value.fix.endswith(f"rm {tmp_path / CLAIM_FILE}")
    assert (tmp_path / CLAIM_FILE).is_file()  # never removed from here
    rm = refused.value.fix[refused.value.fix.index("rm "):]
    subprocess.run(rm, shell=True, check=True, timeout=10)  # the fix, as printed
    claim(tmp_path, "--out x")


def test_another_boot_or_pid_namespace_of_this_host_name_is_not_checked_here(tmp_path):
    write_claim(tmp_path, machine="another-boot pid:[1]", pid=ended_pid())
    with pytest.raises(RunDirInUse, match="cannot be checked"):
        claim(tmp_path, "--out x")


def test_an_unreadable_claim_is_removed_with_a_note(tmp_path):
    (tmp_path / CLAIM_FILE).touch()  # an older version's marker, left by a signal
    notes = []
    claim(tmp_path, "--out x", on_note=notes.append)
    assert "no owner is recorded" in notes[0]


def test_a_stale_claim_another_job_is_clearing_is_left_to_it(tmp_path):
    write_claim(tmp_path, pid=ended_pid())
    with open(tmp_path / CLAIM_FILE, "r+") as clearing:
        fcntl.flock(clearing, fcntl.LOCK_EX)  # as the other job holds it while it clears
        with pytest.raises(RunDirInUse, match="claiming it at this moment"):
            claim(tmp_path, "--out x")
    assert json.loads((tmp_path / CLAIM_FILE).read_text())["pid"] != os.getpid()


def test_release_leaves_a_claim_that_is_not_its_own(tmp_path):
    claim(tmp_path, "--out x")
    (tmp_path / CLAIM_FILE).unlink()  # removed by hand, then taken by another job
    write_claim(tmp_path, host="node-elsewhere-7")
    release(tmp_path)
    assert json.loads((tmp_path / CLAIM_FILE).read_text())["host"] == "node-elsewhere-7"


def test_a_claim_that_cannot_be_written_is_one_message(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(run_lock.os, "open", refuse)
    with pytest.raises(ConfigError, match="cannot be claimed: Permission denied"):
        claim(tmp_path, "--resume d")


# -- the run directory of a new run (mpi_privopt/results.py) ------------------------------

def test_a_new_run_holds_its_claim_until_released(tmp_path):
    out = tmp_path / "run"
    choose_run_dir(str(out), "x", 0)
    RunDirectory(out).write_config("[run]\n")
    assert (out / CLAIM_FILE).is_file()  # held for the whole run, not until config.toml
    release()
    with pytest.raises(ConfigError, match="not empty"):
        choose_run_dir(str(out), "x", 0)
    assert not (out / CLAIM_FILE).exists()


def test_a_default_run_directory_is_claimed_too(tmp_path):
    made = choose_run_dir(None, "x", 0, base=str(tmp_path))
    assert (made / CLAIM_FILE).is_file()
    release_run_dir(made)
    assert not made.exists()


def test_a_stale_claim_in_an_empty_out_no_longer_blocks_it(tmp_path, capsys):
    out = tmp_path / "c"
    out.mkdir()
    (out / CLAIM_FILE).touch()
    assert choose_run_dir(str(out), "x", 0) == out
    assert "removed the stale claim" in capsys.readouterr().err


def test_a_file_system_without_hard_links_gets_an_exclusive_create(tmp_path, monkeypatch):
    def no_links(*args):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(run_lock.os, "link", no_links)
    path = claim(tmp_path, "--out x")
    assert json.loads(path.read_text())["pid"] == os.getpid()
    assert sorted(p.name for p in tmp_path.iterdir()) == [CLAIM_FILE]
    with pytest.raises(RunDirInUse, match="in use by another run"):
        claim(tmp_path, "--out x")


def test_a_claim_naming_a_pid_no_kernel_holds_is_damage_not_a_traceback():
    """os.kill(2**40, 0) raises OverflowError: such a claim is read as damaged (no owner)."""
    from mpi_privopt.run_lock import _judge, _parse
    assert _parse(b'{"pid": 1099511627776, "host": "h"}') is None
    assert _judge(None)[0] == "gone"
