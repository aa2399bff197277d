"""The packaged gade2017 experiments load, and bad Gade & Vaidya parameters are refused."""
import math

import pytest

from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.config import load_config, packaged_experiments
from mpi_privopt.errors import ConfigError

GADE = [name for name in packaged_experiments() if name.startswith("gade2017-")]


def test_every_method_has_a_figure1_and_a_logistic_config():
    for method in ("dgd", "rss-nb", "rss-lb", "fs"):
        assert f"gade2017-fig1-{method}" in GADE
        assert f"gade2017-logistic-{method}" in GADE


@pytest.mark.parametrize("name", GADE)
def test_packaged_experiment_loads_with_the_papers_weights(name):
    cfg = load_config(name)
    assert cfg.topology.weights == "self-inclusive"
    params = cfg.algorithm.params
    if name.startswith("gade2017-fig1-"):
        assert cfg.problem.name == "polynomial" and cfg.problem.preset == "gade2017"
        assert (params.box, params.init, params.step, params.schedule) == \
            (30.0, "spread", 1.0, "inverse")
    if cfg.algorithm.name in ("dgd", "fs"):
        assert params.gradient_at == "fused"


def test_dgd_defaults_are_unchanged():
    params = load_config(None, ["algorithm.name=dgd"]).algorithm.params
    assert (params.step, params.schedule, params.box, params.gradient_at, params.init) == \
        (0.05, "sqrt", math.inf, "own", "zero")
    assert ALGORITHMS["rss-nb"].private is False and ALGORITHMS["fs"].private is False


@pytest.mark.parametrize("overrides,message", [
    (["algorithm.name=rss-nb", "algorithm.delta=-1.0"], "delta"),
    (["algorithm.name=rss-nb", "algorithm.noise=gaussian"], "noise"),
    (["algorithm.name=rss-lb", "algorithm.noise=cube"], "noise"),
    (["algorithm.name=rss-lb", "algorithm.scale=huge"], "scale"),
    (["algorithm.name=rss-lb", "algorithm.adversaries=-1"], "adversaries"),
    (["algorithm.name=fs", "algorithm.adversaries=-2"], "adversaries = -2 must be >= 0"),
    (["algorithm.name=rss-nb", "algorithm.init=spread"], "finite algorithm.box"),
    (["algorithm.name=dgd", "algorithm.gradient_at=mine"], "gradient_at"),
    (["algorithm.name=dgd", "algorithm.box=0.0"], "box"),
    (["algorithm.name=fs", "algorithm.degree=0"], "degree"),
    (["algorithm.name=fs", "algorithm.sigma=-0.1"], "sigma"),
    (["algorithm.name=rss-nb", "algorithm.step=0.0"], "step"),
    (["algorithm.name=rss-nb", "algorithm.gradient_at=own"], "unknown key"),
])
def test_bad_parameters_are_refused_with_their_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)
