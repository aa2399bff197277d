"""A checkpoint that cannot lie, without MPI: every file is checked before a byte of it is
used, the state is JSON and arrays (tests/unit/test_state_codec.py), and a damaged latest
checkpoint falls back to the previous one, with a warning (the runs under mpiexec:
tests/e2e/test_checkpoint_integrity.py)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.prelaunch import build_graph
from mpi_privopt.services import checkpoint_choice, checkpoint_files, resume
from mpi_privopt.services.state_codec import encode_state
from mpi_privopt.services.checkpoint_format import (CheckpointDamaged, decode_pointer,
                                                    decode_rank_file, encode_pointer,
                                                    encode_rank_file)
from mpi_privopt.topology import graph_hash

WHO = {"run": "abc", "rank": 1, "iteration": 8, "ranks": 4}


def _meta(iteration: int) -> dict:
    """A record's metadata as a checkpoint writes it (what a resume reads from it)."""
    return {"iteration": iteration, "algorithm_seconds": 1.0, "eval_seconds": 0.5,
            "ledger": {}}


def _file(payload: bytes = b"payload bytes") -> tuple[bytes, str]:
    return encode_rank_file(WHO, payload)


def test_a_rank_file_gives_its_payload_back_only_when_it_checks(tmp_path):
    data, digest = _file()
    assert decode_rank_file(tmp_path / "f", data, WHO, digest) == b"payload bytes"


def test_every_single_bit_flip_of_a_rank_file_is_found(tmp_path):
    # all of them, in the first line, the header and the payload: none reaches the payload
    data, digest = _file(checkpoint_files.encode_record(_meta(8),
                                                        encode_state({"x": [1.5]}, {})))
    for bit in range(8 * len(data)):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        for recorded in (digest, None):  # with and without latest.json's record
            with pytest.raises(CheckpointDamaged, match="checkpoint file .*/f "):
                decode_rank_file(tmp_path / "f", bytes(flipped), WHO, recorded)


def test_a_short_or_missing_file_names_its_causes_in_order(tmp_path):
    data, digest = _file()
    with pytest.raises(CheckpointDamaged, match=r"is short: \d+ bytes of the \d+ written") \
            as short:
        decode_rank_file(tmp_path / "f", data[:-3], WHO, digest)
    fix = short.value.fix
    with pytest.raises(CheckpointDamaged, match=r"is short: 30 bytes, cut inside its first "
                                                "line"):
        decode_rank_file(tmp_path / "f", data[:30], WHO, digest)
    assert fix.index("the write was interrupted") < fix.index("not on a filesystem every "
                                                              "host shares")
    with pytest.raises(CheckpointDamaged, match="is missing") as missing:
        checkpoint_files.read_record(tmp_path / "absent.ckpt", {"run": "abc", "iteration": 8,
                                                                "ranks": 4}, 1)
    assert missing.value.fix == fix


def test_another_ranks_or_runs_file_is_refused_by_its_header(tmp_path):
    data, digest = _file()
    with pytest.raises(CheckpointDamaged, match=r"is not agent 2's checkpoint of iteration "
                                                r"8 of this run: its header says rank 1 "
                                                r"\(expected 2\)"):
        decode_rank_file(tmp_path / "f", data, {**WHO, "rank": 2})
    with pytest.raises(CheckpointDamaged, match=r"run 'abc' \(expected 'xyz'\)"):
        decode_rank_file(tmp_path / "f", data, {**WHO, "run": "xyz"})
    other, _ = encode_rank_file(WHO, b"another payload")  # right header, other content
    with pytest.raises(CheckpointDamaged, match="not the one this checkpoint recorded"):
        decode_rank_file(tmp_path / "f", other, WHO, digest)


def test_a_pointer_that_is_cut_scrambled_or_edited_is_one_message(tmp_path):
    info = {"format": checkpoint_files.FORMAT, "iteration": 8, "ranks": 4, "x": [1.5, None]}
    text = encode_pointer(info)
    path = tmp_path / "latest.json"
    assert decode_pointer(path, text) == info
    # the same JSON value written otherwise (a space turned into a tab) is the same pointer
    assert decode_pointer(path, text.replace(b"\n  ", b"\n\t", 1)) == info
    for bad, why in ((text[:len(text) // 2], "not JSON"), (bytes([0xff, 0xfe]) + text[2:],
                     "not text"), (text.replace(b'"iteration": 8', b'"iteration": 9'),
                                   "does not match its checksum"), (b"[1, 2]", "not a JSON "
                                                                    "object")):
        with pytest.raises(CheckpointDamaged, match=why):
            decode_pointer(path, bad)
    rng = np.random.default_rng(3)
    for _ in range(200):  # single bit flips: refused, or the same value
        flipped = bytearray(text)
        bit = int(rng.integers(8 * len(text)))
        flipped[bit // 8] ^= 1 << (bit % 8)
        try:
            assert decode_pointer(path, bytes(flipped)) == info
        except CheckpointDamaged:
            pass


class _OneRank:
    """A communicator of one rank (``choose`` is collective)."""

    def bcast(self, value, root=0):
        return value

    def allgather(self, value):
        return [value]


def _checkpoint(run_dir, iteration: int, noise: str = "fast", run: str = "abc") -> dict:
    """One rank's checkpoint of ``iteration`` (a metadata-only record) and its pointer."""
    folder = checkpoint_files.checkpoint_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    record = checkpoint_files.encode_record(_meta(iteration), encode_state({}, {}))
    data, digest = encode_rank_file({"run": run, "rank": 0, "iteration": iteration,
                                     "ranks": 1}, record)
    checkpoint_files.state_path(run_dir, 0, iteration).write_bytes(data)
    return {"format": checkpoint_files.FORMAT, "run": run, "iteration": iteration, "ranks": 1,
            "files": [digest], "noise": noise}


def _two_checkpoints(run_dir, noise: str = "fast") -> None:
    folder = checkpoint_files.checkpoint_dir(run_dir)
    checkpoint_files.write_pointer(folder / "previous.json", _checkpoint(run_dir, 4, noise))
    checkpoint_files.write_pointer(folder / "latest.json", _checkpoint(run_dir, 8, noise))


def _flip(path, at: int = -5) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def test_the_latest_checkpoint_is_used_when_it_checks(tmp_path):
    _two_checkpoints(tmp_path)
    info, record, warning, damaged = checkpoint_choice.choose(_OneRank(), tmp_path, 0)
    assert info["iteration"] == 8 and record["meta"] == _meta(8) and warning is None
    assert damaged is None


def test_a_damaged_latest_falls_back_to_the_previous_with_a_warning(tmp_path):
    _two_checkpoints(tmp_path)
    _flip(checkpoint_files.state_path(tmp_path, 0, 8))
    info, record, warning, damaged = checkpoint_choice.choose(_OneRank(), tmp_path, 0)
    assert info["iteration"] == 4 and record["meta"] == _meta(4) and damaged == 8
    assert "rank-0-iter-8.ckpt is damaged" in warning
    assert "resuming from the previous checkpoint, of iteration 4" in warning
    # the budget: what is released again is what was released before, and it says so
    assert "Iterations 5 to 8 are run again" in warning
    assert "no privacy spent is forgotten" in warning


@pytest.mark.parametrize("damage", ["truncated", "scrambled", "missing"])
def test_a_damaged_latest_json_falls_back_too(tmp_path, damage):
    _two_checkpoints(tmp_path)
    latest = checkpoint_files.checkpoint_dir(tmp_path) / "latest.json"
    if damage == "truncated":
        latest.write_bytes(latest.read_bytes()[:40])
    elif damage == "scrambled":
        latest.write_bytes(bytes(np.random.default_rng(0).integers(0, 256, 300, np.uint8)))
    else:
        latest.unlink()
    info, _record, warning, damaged = checkpoint_choice.choose(_OneRank(), tmp_path, 0)
    assert info["iteration"] == 4 and "latest.json" in warning and damaged == 8
    # how far the lost checkpoint went, from its files' names
    assert "Iterations 5 to 8 are run again" in warning
    checkpoint_files.state_path(tmp_path, 0, 8).unlink()
    warning = checkpoint_choice.choose(_OneRank(), tmp_path, 0)[2]
    assert "The iterations after 4 are run again" in warning


def test_a_secure_run_falls_back_and_says_the_gap_is_booked(tmp_path):
    # fresh noise releases iterations 5..8 a second time; the ledger of iteration 4 does
    # not hold the first releases, so the resume books them (services/release_gap.py):
    # the damaged checkpoint's iteration is handed on for that
    _two_checkpoints(tmp_path, noise="secure")
    _flip(checkpoint_files.state_path(tmp_path, 0, 8))
    info, _record, warning, damaged = checkpoint_choice.choose(_OneRank(), tmp_path, 0)
    assert info["iteration"] == 4 and damaged == 8
    assert "Iterations 5 to 8 are run again with fresh noise" in warning
    assert "booked first, as released before the interruption (assumed)" in warning


def test_a_secure_run_does_not_fall_back_when_the_damaged_one_is_unknown(tmp_path):
    # latest.json damaged and none of its files left: how far the run went is unknown,
    # so its releases cannot be bounded; refused rather than forgetting spent budget
    _two_checkpoints(tmp_path, noise="secure")
    (checkpoint_files.checkpoint_dir(tmp_path) / "latest.json").unlink()
    checkpoint_files.state_path(tmp_path, 0, 8).unlink()
    with pytest.raises(ConfigError, match=r"how far the run went after iteration 4 is "
                                          "unknown") as refused:
        checkpoint_choice.choose(_OneRank(), tmp_path, 0)
    assert refused.value.collective and "restore it from a copy" in refused.value.fix


def test_when_neither_checkpoint_checks_it_is_one_message_naming_the_latest(tmp_path):
    _two_checkpoints(tmp_path)
    checkpoint_files.state_path(tmp_path, 0, 8).unlink()
    _flip(checkpoint_files.state_path(tmp_path, 0, 4))
    with pytest.raises(CheckpointDamaged, match=r"rank-0-iter-8.ckpt is missing \(the "
                                                r"previous checkpoint cannot be used "
                                                r"either: .*rank-0-iter-4.ckpt is damaged"):
        checkpoint_choice.choose(_OneRank(), tmp_path, 0)


def test_report_reads_the_newest_checkpoint_that_checks(tmp_path):
    _two_checkpoints(tmp_path)
    assert checkpoint_files.saved_ledgers(tmp_path)[0]["iteration"] == 8
    assert checkpoint_files.saved_ledgers(tmp_path)[2] is None
    _flip(checkpoint_files.state_path(tmp_path, 0, 8))
    assert checkpoint_files.saved_ledgers(tmp_path)[0]["iteration"] == 4
    # ... and says so (report prints it under the checkpoint it shows)
    assert checkpoint_files.saved_ledgers(tmp_path)[2] == (
        "the latest checkpoint (iteration 8) is damaged: showing the previous one, "
        "iteration 4")
    _flip(checkpoint_files.state_path(tmp_path, 0, 4))
    assert checkpoint_files.saved_ledgers(tmp_path) is None


def test_report_still_reads_a_checkpoint_of_format_1(tmp_path):
    # written before the checks: no header, no checksum; read as it is, never resumed
    folder = checkpoint_files.checkpoint_dir(tmp_path)
    folder.mkdir()
    (folder / "latest.json").write_text('{"format": 1, "iteration": 3, "ranks": 1}')
    checkpoint_files.state_path(tmp_path, 0, 3).write_bytes(
        pickle.dumps({"meta": {"iteration": 3}, "state": b""}))
    assert checkpoint_files.saved_ledgers(tmp_path) == (
        {"format": 1, "iteration": 3, "ranks": 1}, [{"iteration": 3}], None)
    with pytest.raises(CheckpointDamaged, match="has format 1, this version reads format "
                                               f"{checkpoint_files.FORMAT}"):
        checkpoint_choice.usable_pointer(tmp_path)


def test_an_edited_edge_list_in_the_run_directory_is_refused(tmp_path):
    cfg = load_config("dgd-ridge", ["run.iterations=10"])
    graph = build_graph(cfg, 4)
    (tmp_path / "config.toml").write_text(cfg.to_toml())
    edges = tmp_path / "graph.edgelist"
    edges.write_text("0 1\n1 2\n2 3\n")
    info = {"format": checkpoint_files.FORMAT, "run": "r", "iteration": 5, "ranks": 4,
            "files": ["0" * 64] * 4, "config": checkpoint_files.config_fingerprint(cfg),
            "graph_hash": graph_hash(graph),
            "edgelist_sha256": checkpoint_choice.edgelist_sha256(tmp_path), "noise": "fast",
            "delta": cfg.privacy.delta, "final": False}
    folder = checkpoint_files.checkpoint_dir(tmp_path)
    folder.mkdir()
    checkpoint_files.write_pointer(folder / "latest.json", info)
    longer = load_config("dgd-ridge", ["run.iterations=20"])
    assert resume.check_resume_input(tmp_path, longer, graph, 4)["iteration"] == 5
    edges.write_text("0 1\n1 2\n2 3\n0 3\n")
    with pytest.raises(ConfigError, match="graph.edgelist was changed after the run wrote "
                                          "it") as edited:
        resume.check_resume_input(tmp_path, longer, graph, 4)
    assert "restore the file from a copy, or delete it" in edited.value.fix
    edges.unlink()  # deleted: the resume writes it again from the run's graph
    assert resume.check_resume_input(tmp_path, longer, graph, 4)["iteration"] == 5


def test_a_pickled_checkpoint_of_format_2_is_one_message_with_its_fix(tmp_path):
    # written by the versions that pickled the state: never loaded, whatever it holds
    folder = checkpoint_files.checkpoint_dir(tmp_path)
    folder.mkdir()
    checkpoint_files.write_pointer(folder / "latest.json", {"format": 2, "iteration": 3,
                                                            "ranks": 1})
    with pytest.raises(CheckpointDamaged, match="has format 2, this version reads format 3 "
                                               r"\(format 2 and older saved the state as a "
                                               "pickle") as refused:
        checkpoint_choice.usable_pointer(tmp_path)
    assert refused.value.fix.startswith("start the run again, or resume it with the "
                                        "mpi_privopt version that wrote it")
    body = b'{"run":"abc"}\n' + pickle.dumps({"meta": {}, "state": b""})
    old = b"mpi_privopt-checkpoint 2 %d %s\n" % (len(body), b"0" * 64) + body
    with pytest.raises(CheckpointDamaged, match="has format 2, this version reads format 3"):
        decode_rank_file(tmp_path / "f", old, WHO)


@pytest.mark.parametrize("meta, tree", [
    (b'{"iteration": 8}', b"[]"),                 # no ledger, no times: no record
    (b"{}", b"[]"),
    (b'{"iteration": 8, "algorithm_seconds": 1, "eval_seconds": 0, "ledger": {}}',
     b"[" * 200_000 + b"]" * 200_000),             # nested past the recursion limit
])
def test_a_record_that_checks_but_is_not_one_is_one_message(tmp_path, meta, tree):
    """Its checksum matches (anyone can compute one), so it is read: a bad record must
    still be CheckpointDamaged on its rank, never another error (the others would wait)."""
    data, digest = encode_rank_file(WHO, meta + b"\n" + tree + b"\n" + b"arrays")
    path = tmp_path / "rank-1.ckpt"
    path.write_bytes(data)
    info = {"run": "abc", "iteration": 8, "ranks": 4, "files": [None, digest, None, None]}
    with pytest.raises(CheckpointDamaged):
        checkpoint_files.read_record(path, info, 1)
