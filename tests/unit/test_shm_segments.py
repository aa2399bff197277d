"""Shared-memory segments a stopped MPI job left in /dev/shm (mpi_privopt/shm_segments.py)."""
import mmap
import subprocess
import sys

from mpi_privopt import shm_segments


def _segment(root, name, nbytes=8192):
    (root / name).write_bytes(b"\1" * nbytes)
    return root / name


def test_a_segment_no_process_maps_is_left_behind_and_one_mapped_is_not(tmp_path):
    _segment(tmp_path, "mpich_shm_left_0")
    used = _segment(tmp_path, "mpich_shm_used_0")
    _segment(tmp_path, "other_file")  # not an MPI segment
    with open(used, "r+b") as f, mmap.mmap(f.fileno(), 0) as mapping:
        assert shm_segments.mapped(tmp_path) >= {"mpich_shm_used_0"}
        left = shm_segments.left_behind(tmp_path)
        assert mapping[0] == 1
    assert left.names == ("mpich_shm_left_0",)
    assert left.nbytes >= 8192  # the pages written, not the apparent size
    assert "1 shared-memory segment (" in left.describe()


def test_ucx_segments_count_too(tmp_path):
    """Open MPI over UCX leaves ``ucx_shm_posix_*`` files as MPICH leaves its own."""
    _segment(tmp_path, "ucx_shm_posix_46d88903")
    _segment(tmp_path, "mpich_shm_left_0")
    left = shm_segments.left_behind(tmp_path, in_use=set)
    assert left.names == ("mpich_shm_left_0", "ucx_shm_posix_46d88903")


def test_a_segment_mapped_at_the_second_look_is_kept(tmp_path):
    """A job that has just created its segment maps it within microseconds: a segment
    seen unmapped once and mapped at the second look is that job's."""
    _segment(tmp_path, "mpich_shm_new_0")
    looks = iter([set(), {"mpich_shm_new_0"}])
    assert shm_segments.left_behind(tmp_path, in_use=lambda: next(looks)).names == ()


def test_only_the_segments_that_appeared_since_the_snapshot_are_removed(tmp_path):
    _segment(tmp_path, "mpich_shm_old_0")
    before = shm_segments.snapshot(tmp_path)
    _segment(tmp_path, "mpich_shm_job_0", nbytes=3 * 4096)
    removed = shm_segments.clean_after(before, tmp_path)
    assert removed.names == ("mpich_shm_job_0",) and removed.nbytes >= 3 * 4096
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mpich_shm_old_0"]


def test_the_command_line_removes_a_jobs_segments_and_says_so(tmp_path):
    snap = tmp_path / "snapshot"
    script = ("import sys; from pathlib import Path; from mpi_privopt import shm_segments; "
              f"shm_segments.SHM = Path({str(tmp_path)!r}); "
              "sys.exit(shm_segments._main(sys.argv[1:]))")
    run = lambda *args: subprocess.run([sys.executable, "-c", script, *args],  # noqa: E731
                                       capture_output=True, text=True, timeout=60)
    assert run("snapshot", str(snap)).returncode == 0
    _segment(tmp_path, "mpich_shm_job_0")
    done = run("clean-after", str(snap))
    assert done.returncode == 0 and not (tmp_path / "mpich_shm_job_0").exists()
    assert "removed the 1 shared-memory segment" in done.stderr
    assert run("clean-after", str(snap)).stderr == ""  # nothing left: nothing said
