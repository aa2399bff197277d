"""The graph drawn once per host (mpi_privopt/graph_cache.py): verdicts, locks, bad files."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from launch_util import child_env
from mpi_privopt import graph_cache
from mpi_privopt.config import load_config
from mpi_privopt.errors import TopologyError
from mpi_privopt.prelaunch import build_graph, run_graph
from mpi_privopt.topology import LightGraph, graph_hash, light_graph

INPUTS = {"kind": "test", "n": 3, "directed": False}
PATH3 = LightGraph(3, False, [(0, 1), (1, 2)])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv(graph_cache.CACHE_ENV, str(directory))
    return directory


class Builder:
    """A build function that counts its calls and returns (or raises) ``verdict``."""

    def __init__(self, verdict):
        self.verdict, self.calls = verdict, 0

    def __call__(self):
        self.calls += 1
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict


def _verdicts(directory):
    return sorted(directory.glob("*.json"))


def test_the_first_call_builds_and_the_next_ones_read_the_verdict(cache):
    build = Builder(PATH3)
    assert graph_cache.cached_graph(INPUTS, build) == PATH3
    assert graph_cache.cached_graph(INPUTS, build) == PATH3
    assert build.calls == 1
    (verdict,) = _verdicts(cache)
    assert json.loads(verdict.read_text())["edges"] == [[0, 1], [1, 2]]
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    # other inputs, another verdict
    assert graph_cache.cached_graph({**INPUTS, "seed": 1}, build) == PATH3
    assert build.calls == 2 and len(_verdicts(cache)) == 2


def test_a_rejected_graph_is_a_verdict_too_with_the_same_message(cache):
    build = Builder(TopologyError("the graph is not connected", "raise the degree"))
    for _ in range(3):
        with pytest.raises(TopologyError) as err:
            graph_cache.cached_graph(INPUTS, build)
        assert (err.value.what, err.value.fix) == ("the graph is not connected",
                                                  "raise the degree")
    assert build.calls == 1


def test_an_unexpected_failure_is_not_a_verdict(cache):
    build = Builder(RuntimeError("a bug"))
    for _ in range(2):
        with pytest.raises(RuntimeError):
            graph_cache.cached_graph(INPUTS, build)
    assert build.calls == 2 and not _verdicts(cache)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other key", "wrong size",
                                    "node out of range", "format"])
def test_a_damaged_verdict_is_built_again_and_replaced(cache, damage):
    graph_cache.cached_graph(INPUTS, Builder(PATH3))
    (path,) = _verdicts(cache)
    good = json.loads(path.read_text())
    bad = {"garbage": "not json at all", "truncated": path.read_text()[:20],
           "other key": json.dumps({**good, "key": "0" * 64}),
           "wrong size": json.dumps({**good, "n": 4}),
           "node out of range": json.dumps({**good, "edges": [[0, 1], [1, 7]]}),
           "format": json.dumps({**good, "format": 0})}[damage]
    path.write_text(bad)
    build = Builder(PATH3)
    assert graph_cache.cached_graph(INPUTS, build) == PATH3
    assert build.calls == 1
    assert json.loads(path.read_text()) == good


@pytest.mark.parametrize("setting", ["off", ""])
def test_the_cache_can_be_turned_off(monkeypatch, setting):
    monkeypatch.setenv(graph_cache.CACHE_ENV, setting)
    build = Builder(PATH3)
    graph_cache.cached_graph(INPUTS, build)
    graph_cache.cached_graph(INPUTS, build)
    assert build.calls == 2 and graph_cache.cache_dir() is None


def test_a_directory_others_may_write_is_not_used(cache):
    cache.mkdir(mode=0o777)
    os.chmod(cache, 0o777)  # what a umask would have kept
    build = Builder(PATH3)
    graph_cache.cached_graph(INPUTS, build)
    graph_cache.cached_graph(INPUTS, build)
    assert build.calls == 2 and not _verdicts(cache)


def test_the_default_directory_is_per_user_in_the_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(graph_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # gettempdir() reads TMPDIR again
    assert graph_cache.cache_dir() == tmp_path / f"mpi_privopt-{os.getuid()}" / "graphs"
    # someone else's (here: a world-writable) directory of that name is refused
    os.chmod(tmp_path / f"mpi_privopt-{os.getuid()}", 0o777)
    assert graph_cache.cache_dir() is None


def test_the_run_graph_is_the_built_graph(cache):
    for overrides in ([], ["topology.kind=regular", "topology.degree=4"],
                      ["topology.kind=small-world", "topology.seed=5"]):
        cfg = load_config("default", overrides)
        expected = graph_hash(build_graph(cfg, 12))
        assert graph_hash(run_graph(cfg, 12)) == expected  # built
        assert graph_hash(run_graph(cfg, 12)) == expected  # read


def test_an_edge_list_file_is_keyed_by_its_contents(cache, tmp_path):
    path = tmp_path / "graph.txt"
    path.write_text("0 1\n1 2\n2 3\n")
    cfg = load_config("default", ["topology.kind=file", f"topology.file={path}"])
    assert run_graph(cfg, 4) == LightGraph(4, False, [(0, 1), (1, 2), (2, 3)])
    path.write_text("0 1\n1 2\n2 3\n3 0\n")
    assert run_graph(cfg, 4) == LightGraph(4, False, [(0, 1), (1, 2), (2, 3), (0, 3)])
    path.write_text("0 1\n2 3\n")
    with pytest.raises(TopologyError, match="not connected"):
        run_graph(cfg, 4)
    path.unlink()
    with pytest.raises(TopologyError, match="does not exist"):
        run_graph(cfg, 4)
    assert light_graph(build_graph(load_config("default", []), 5)) == run_graph(
        load_config("default", []), 5)


def test_tasks_started_together_build_the_graph_once(cache):
    # what the tasks of one job do before MPI starts: one imports networkx and draws the
    # graph, the others sleep on the lock and read its verdict
    code = ("import sys\n"
            "from mpi_privopt.config import load_config\n"
            "from mpi_privopt.prelaunch import run_graph\n"
            "from mpi_privopt.topology import graph_hash\n"
            "g = run_graph(load_config('default', ['topology.degree=4']), 40)\n"
            "print(graph_hash(g), 'networkx' in sys.modules)\n")
    env = child_env({graph_cache.CACHE_ENV: str(cache)})
    tasks = [subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(6)]
    outputs = [task.communicate(timeout=120) for task in tasks]
    assert all(task.returncode == 0 for task in tasks), outputs
    lines = [out.split() for out, _ in outputs]
    assert len({digest for digest, _ in lines}) == 1
    assert [imported for _, imported in lines].count("True") == 1
    cfg = load_config("default", ["topology.degree=4"])
    assert lines[0][0] == graph_hash(build_graph(cfg, 40))


def test_without_locks_every_task_builds_and_nothing_is_written(cache, monkeypatch):
    # some network filesystems refuse flock (ENOLCK): slower, never wrong
    import errno

    def refuse(fd, operation):
        raise OSError(errno.ENOLCK, "no locks available")

    monkeypatch.setattr(graph_cache.fcntl, "flock", refuse)
    build = Builder(PATH3)
    assert graph_cache.cached_graph(INPUTS, build) == PATH3
    assert graph_cache.cached_graph(INPUTS, build) == PATH3
    assert build.calls == 2 and not _verdicts(cache)
