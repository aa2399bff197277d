"""Claiming a run directory: unique and atomic, so concurrent jobs never share one."""
import time

import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.results import CLAIM_MARKER, RunDirectory, choose_run_dir, release_run_dir


def test_two_jobs_in_the_same_second_get_two_directories(tmp_path, monkeypatch):
    monkeypatch.setattr(time, "strftime", lambda fmt: "20261124-120000")
    first = choose_run_dir(None, "default", 0, base=str(tmp_path))
    second = choose_run_dir(None, "default", 0, base=str(tmp_path))
    assert first != second
    assert first.is_dir() and second.is_dir()  # claimed when chosen, not when first written
    assert second.name == "default-20261124-120000-seed0-2"


def test_an_out_directory_is_claimed_once(tmp_path):
    out = tmp_path / "run"
    assert choose_run_dir(str(out), "x", 0) == out
    with pytest.raises(ConfigError, match="another run"):
        choose_run_dir(str(out), "x", 0)
    RunDirectory(out).write_config("[run]\n")
    assert (out / CLAIM_MARKER).exists()  # held for the whole run (run_lock.py)
    release_run_dir(out)
    with pytest.raises(ConfigError, match="not empty"):
        choose_run_dir(str(out), "x", 0)


def test_a_run_refused_during_set_up_leaves_no_empty_directory(tmp_path):
    claimed = choose_run_dir(str(tmp_path / "a"), "x", 0)
    release_run_dir(claimed)
    assert not claimed.exists()
    kept = choose_run_dir(None, "x", 0, base=str(tmp_path))
    (kept / "metrics.csv").write_text("iteration\n")
    release_run_dir(kept)
    assert (kept / "metrics.csv").is_file()


@pytest.mark.parametrize("out,message,fix", [
    (lambda tmp: tmp / ("a" * 300), "File name too long", "use a shorter name"),
    (lambda tmp: "/proc/mpi_privopt-test", "cannot be made", "--out DIR"),
])
def test_an_out_the_system_refuses_is_one_message(tmp_path, out, message, fix):
    with pytest.raises(ConfigError) as err:
        choose_run_dir(str(out(tmp_path)), "x", 0)
    assert message in str(err.value) and fix in err.value.fix
