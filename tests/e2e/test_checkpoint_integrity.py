"""A checkpoint that cannot lie: damaged, swapped or edited files under real 4-rank resumes.

One run is killed at iteration 10 (checkpoints every 4 iterations: the latest is of
iteration 8, the previous of 4); each case copies its run directory, damages the copy and
resumes it with ``run --resume``. Every case must end in one of two ways only: exit 2 with
one message (no traceback), or exit 0 with ``models.npz`` and ``privacy.json`` equal byte
for byte to the uninterrupted run's. A resume that exits 0 with other results, or a
traceback, fails. docs/reliability.md ("Checkpoints that cannot lie") has a row per case.

Cases: 30 single-bit flips at seeded random positions of one rank's latest file (each is
checked in process: refused before a byte is decoded, with the previous checkpoint
intact; three of them, one in each part of the file, are resumed under mpiexec), two
ranks' files swapped, ``latest.json`` cut short, both checkpoints unusable, a rank's file
missing, an edited ``graph.edgelist``, a rank's state replaced by one that names a
function that would run a command (its checksums rewritten to match).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from launch_util import needs_mpiexec, run_mpiexec
from mpi_privopt.services import checkpoint_files
from mpi_privopt.services.checkpoint_format import CheckpointDamaged, encode_rank_file

pytestmark = needs_mpiexec

RANKS = 4
T = 12
CONFIG = ["default", "--set", "privacy.noise=fast", "--set", f"run.iterations={T}",
          "--set", "run.checkpoint_every=4", "--set", "run.eval_every=1"]
KILLED_AT, LATEST, PREVIOUS = 10, 8, 4
TIMEOUT = 120
FLIPS = 30
DAMAGED_RANK = 1


def _launch(*args: str, fault: str | None = None):
    env = {"MPI_PRIVOPT_AGREE_SECONDS": "0", **({"MPI_PRIVOPT_TEST_FAULT": fault} if fault
                                                 else {})}
    return run_mpiexec(RANKS, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
                               *args], timeout=TIMEOUT, env=env)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The uninterrupted run and the killed one (its checkpoints of iterations 4 and 8)."""
    root = tmp_path_factory.mktemp("integrity")
    done = _launch(*CONFIG, "--out", str(root / "straight"), "--quiet")
    assert done.returncode == 0, done.stderr
    killed = _launch(*CONFIG, "--out", str(root / "killed"), "--quiet",
                     fault=f"kill@iteration:2:{KILLED_AT}")
    assert killed.returncode != 0
    assert checkpoint_files.latest(root / "killed")["iteration"] == LATEST
    return root / "straight", root / "killed"


@pytest.fixture
def copy(runs, tmp_path):
    """A fresh copy of the killed run's directory."""
    target = tmp_path / "run"
    shutil.copytree(runs[1], target)
    (target / ".mpi_privopt-claim").unlink(missing_ok=True)  # the killed rank 0's claim
    return target


def _rank_file(run_dir: Path, rank: int, iteration: int = LATEST) -> Path:
    return checkpoint_files.state_path(run_dir, rank, iteration)


def _flip(path: Path, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name != ".mpi_privopt-claim"}


def resume_refused(run_dir: Path, *phrases: str) -> str:
    """The resume of ``run_dir`` exits 2 with one message naming ``phrases``, no
    traceback, and leaves the directory as it was; the message."""
    before = _files(run_dir)
    message = assert_refused(_launch("--resume", str(run_dir)), *phrases)
    assert _files(run_dir) == before
    return message


def assert_refused(done, *phrases: str) -> str:
    """Exit 2 with one message, no traceback; the message."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("mpi_privopt: error:") == 1, done.stderr
    for phrase in phrases:
        assert phrase in done.stderr, done.stderr
    return done.stderr


def assert_resumed_same(done, run_dir: Path, straight: Path, warned: str | None) -> None:
    """Exit 0 with the uninterrupted run's results byte for byte (and the fallback's one
    warning, naming ``warned``, when given)."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    for name in ("models.npz", "privacy.json"):
        assert (run_dir / name).read_bytes() == (straight / name).read_bytes(), name
    warnings = [line for line in done.stderr.splitlines() if "warning:" in line]
    if warned is None:
        assert not warnings, done.stderr
    else:
        assert len(warnings) == 1 and warned in warnings[0], done.stderr
        assert f"resuming from the previous checkpoint, of iteration {PREVIOUS}" in warnings[0]
        assert "no privacy spent is forgotten" in warnings[0]


def _seeded_flips(size: int) -> list[int]:
    return np.random.default_rng(2026).choice(8 * size, FLIPS, replace=False).tolist()


def test_thirty_bit_flips_are_each_refused_before_a_byte_is_used(runs, copy):
    # in process, for all 30: the damaged file is refused (never decoded), and the
    # previous checkpoint, which the resume falls back to, checks on every rank
    info = checkpoint_files.latest(copy)
    target = _rank_file(copy, DAMAGED_RANK)
    original = target.read_bytes()
    for bit in _seeded_flips(len(original)):
        _flip(target, bit)
        with pytest.raises(CheckpointDamaged, match=str(target)):
            checkpoint_files.read_record(target, info, DAMAGED_RANK)
        target.write_bytes(original)
    previous = checkpoint_files.pointers(copy)[1][1]
    assert previous["iteration"] == PREVIOUS
    for rank in range(RANKS):
        checkpoint_files.read_record(_rank_file(copy, rank, PREVIOUS), previous, rank)


@pytest.mark.parametrize("part", ["first line", "header", "payload"])
def test_a_bit_flip_resumes_to_the_same_result_from_the_previous_checkpoint(runs, copy, part):
    target = _rank_file(copy, DAMAGED_RANK)
    data = target.read_bytes()
    header_end = data.index(b"\n", data.index(b"\n") + 1)
    where = {"first line": lambda b: b // 8 < data.index(b"\n"),
             "header": lambda b: data.index(b"\n") < b // 8 < header_end,
             "payload": lambda b: b // 8 > header_end}[part]
    candidates = [b for b in _seeded_flips(len(data)) if where(b)]
    bit = candidates[0] if candidates else next(b for b in range(8 * len(data)) if where(b))
    _flip(target, bit)
    done = _launch("--resume", str(copy))
    assert_resumed_same(done, copy, runs[0], warned=str(target))


def test_swapped_rank_files_are_found_by_their_headers(runs, copy):
    a, b = _rank_file(copy, 0), _rank_file(copy, 1)
    a_bytes = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(a_bytes)
    done = _launch("--resume", str(copy))
    assert_resumed_same(done, copy, runs[0], warned=f"{a} is not agent 0's checkpoint")


def test_swapped_files_in_both_checkpoints_are_one_message(runs, copy):
    for iteration in (LATEST, PREVIOUS):
        a, b = _rank_file(copy, 0, iteration), _rank_file(copy, 1, iteration)
        a_bytes = a.read_bytes()
        a.write_bytes(b.read_bytes())
        b.write_bytes(a_bytes)
    resume_refused(copy,
                   f"{_rank_file(copy, 0)} is not agent 0's checkpoint of iteration {LATEST}",
                   "its header says rank 1 (expected 0)",
                   "put each file back under its own name")


def test_a_truncated_latest_json_falls_back_to_the_previous(runs, copy):
    latest = copy / "checkpoint" / "latest.json"
    latest.write_bytes(latest.read_bytes()[:100])
    done = _launch("--resume", str(copy))
    assert_resumed_same(done, copy, runs[0], warned=f"{latest} is damaged: it is not JSON")


def test_both_pointers_damaged_is_one_message_before_mpi_starts(runs, copy):
    folder = copy / "checkpoint"
    (folder / "latest.json").write_bytes((folder / "latest.json").read_bytes()[:100])
    (folder / "previous.json").write_bytes(bytes(range(256)))  # scrambled: not UTF-8
    resume_refused(copy, "latest.json is damaged: it is not JSON")


def test_a_missing_rank_file_names_its_likely_causes(runs, copy):
    _rank_file(copy, 3).unlink()
    _rank_file(copy, 3, PREVIOUS).write_bytes(_rank_file(copy, 3, PREVIOUS).read_bytes()[:50])
    message = resume_refused(copy, f"{_rank_file(copy, 3)} is missing",
                             f"{_rank_file(copy, 3, PREVIOUS)} is short")
    assert message.index("the write was interrupted") < message.index(
        "not on a filesystem every host shares")


def test_a_crafted_state_with_a_valid_header_runs_nothing(runs, copy, tmp_path):
    # a forger who rewrites the checksums too: the state still describes only what a
    # checkpoint may hold, checked on one rank, and the job ends with one message (no
    # rank hangs)
    marker = tmp_path / "ran"
    info = checkpoint_files.latest(copy)
    target = _rank_file(copy, 2)
    record = checkpoint_files.read_record(target, info, 2)
    _tree, arrays = record["state"]
    # posix.system named as a class, with the command as its state: refused by name,
    # never imported as a callable, never called
    crafted = {"dict": {"algorithm": {"class": "posix:system", "#": 1,
                                      "state": f"touch {marker}"}}, "#": 0}
    data, digest = encode_rank_file(checkpoint_files.identity(info, 2),
                                    checkpoint_files.encode_record(record["meta"],
                                                                   (crafted, arrays)))
    target.write_bytes(data)
    info["files"][2] = digest
    checkpoint_files.write_pointer(copy / "checkpoint" / "latest.json", info)
    resume_refused(copy,
                   f"agent 2's checkpoint file {target} is refused: the state names "
                   "posix.system, which a checkpoint may not hold")
    assert not marker.exists()


def test_an_edited_edge_list_is_refused(runs, copy):
    edges = copy / "graph.edgelist"
    edges.write_text(edges.read_text() + "0 3\n")
    resume_refused(copy, "graph.edgelist was changed after the run wrote it")


def test_report_says_when_it_shows_the_previous_checkpoint(runs, copy):
    # in process: what `report DIR` prints for the killed run, its latest file damaged
    from mpi_privopt.report import incomplete_text, load_incomplete_run
    shown = incomplete_text(load_incomplete_run(copy, ["summary.json"]))
    assert f"last checkpoint: iteration {LATEST}" in shown and "damaged" not in shown
    _flip(_rank_file(copy, DAMAGED_RANK), 8 * 200)
    shown = incomplete_text(load_incomplete_run(copy, ["summary.json"]))
    assert f"last checkpoint: iteration {PREVIOUS}" in shown
    assert (f"the latest checkpoint (iteration {LATEST}) is damaged: showing the previous "
            f"one, iteration {PREVIOUS}") in shown.splitlines()[2]
    (copy / "checkpoint" / "latest.json").write_text("{")
    shown = incomplete_text(load_incomplete_run(copy, ["summary.json"]))
    assert f"latest.json is damaged: showing the previous one, iteration {PREVIOUS}" in shown
