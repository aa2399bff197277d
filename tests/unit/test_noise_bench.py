"""The noise benchmark runs, times both sources in alternating rounds and prints its table."""
import pytest

from mpi_privopt.commands import noise_bench


def test_noise_bench_small(monkeypatch):
    pytest.importorskip("cryptography", reason="secure noise needs the 'secure' extra")
    monkeypatch.setattr(noise_bench, "SIZES", (10, 1000))
    monkeypatch.setattr(noise_bench, "MIN_BLOCK_S", 0.001)
    record = noise_bench.run(repeats=2)
    assert [(r["law"], r["n"]) for r in record["results"]] == [
        ("gaussian", 10), ("gaussian", 1000), ("laplace", 10), ("laplace", 1000)]
    for r in record["results"]:
        for mode in ("fast", "secure"):
            assert 0 < r[mode]["wall_s"] < 10 and r[mode]["runs"] == 2 and not r[mode]["once"]
    text = noise_bench.table(record)
    assert "| gaussian | 1e+03 |" in text and "cryptography" in text


def test_alternating_rounds_time_every_function():
    calls = []
    out = noise_bench._time([lambda: calls.append("a"), lambda: calls.append("b")], 3)
    assert len(out) == 2 and all(o["wall_s"] >= 0 for o in out)
    # one warm-up call each, then rounds that alternate a-block, b-block
    assert calls[:2] == ["a", "b"]
    la, lb = out[0]["calls_per_run"], out[1]["calls_per_run"]
    assert calls[2:] == (["a"] * la + ["b"] * lb) * 3
