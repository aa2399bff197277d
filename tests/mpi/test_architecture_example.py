"""The worked example of docs/architecture.md ("Adding a method") runs as written.

Its code block is executed as it stands in the doc, registered only while the test runs,
and run under mpiexec: the ledger must book exactly its Gaussian releases.
"""
import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from mpi_privopt.methods import ALGORITHMS, Algorithm, register
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.privacy.mechanisms import GaussianMechanism
from mpi_privopt.privacy.schedules import ConstantSchedule

DOC = Path(__file__).parents[2] / "docs" / "architecture.md"
T = 15


def example_source() -> str:
    text = DOC.read_text()
    start = text.index("1. **Its module**")
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


@pytest.fixture
def noisy_dgd():
    namespace = {"dataclasses": dataclasses, "np": np, "register": register,
                 "Algorithm": Algorithm, "GaussianMechanism": GaussianMechanism,
                 "ConstantSchedule": ConstantSchedule}
    exec(compile(example_source(), str(DOC), "exec"), namespace)
    try:
        yield namespace["NoisyDGD"]
    finally:
        ALGORITHMS.pop("noisy-dgd", None)


@pytest.mark.mpi(min_size=2)
def test_the_documented_example_runs_and_books_its_releases(noisy_dgd, comm, shared_dir):
    cfg = load_config("gauthier2024-ridge", ["algorithm.name=noisy-dgd", "privacy.epsilon=inf",
                                             f"run.iterations={T}", "algorithm.sigma=0.5"])
    run(cfg, out=shared_dir + "/run", comm=comm, stream=None)
    comm.Barrier()
    privacy = json.loads(Path(shared_dir, "run", "privacy.json").read_text())
    traffic = json.loads(Path(shared_dir, "run", "traffic.json").read_text())["total"]
    clip, samples, step = 5.0, 50, 0.05         # gauthier2024-ridge and the Params default
    D = 2 * step * clip / samples
    releases, rho = np.array(privacy["links"]["releases"]), privacy["links"]["rho"]
    for i, row in enumerate(traffic["bytes"]):
        for j, sent in enumerate(row):
            if sent:
                assert sent == T * 8 * 8                # T messages of P = 8 doubles
                assert releases[i][j] == T
                assert rho[i][j] == pytest.approx(T * D ** 2 / (2 * 0.5 ** 2), rel=1e-12)
            else:
                assert rho[i][j] is None
