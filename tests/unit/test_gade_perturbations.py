"""RSS-NB shares and RSS-LB noise: bounds, balance and the degree-1 corner case."""
import numpy as np
import pytest

from mpi_privopt import topology
from mpi_privopt.methods.gade2017.perturbations import (LB_DISTRIBUTIONS, NB_DISTRIBUTIONS,
                                                  locally_balanced_noise,
                                                  network_balanced_shares, uniform_ball)


@pytest.mark.parametrize("dim", [1, 3, 10])
def test_uniform_ball_stays_inside_and_fills_it(dim):
    points = uniform_ball(np.random.default_rng(0), 4000, dim, 2.5)
    norms = np.linalg.norm(points, axis=1)
    assert norms.max() <= 2.5
    # uniform in the ball: E||x|| = R D / (D + 1)
    assert norms.mean() == pytest.approx(2.5 * dim / (dim + 1), rel=0.03)


@pytest.mark.parametrize("distribution", NB_DISTRIBUTIONS)
def test_nb_shares_respect_the_bound(distribution):
    rng = np.random.default_rng(1)
    shares = network_balanced_shares(rng, 2, [0, 1, 3, 4], 3, 0.7, distribution)
    assert shares.shape == (4, 3)
    assert np.linalg.norm(shares, axis=1).max() <= 0.7 * (1 + 1e-12)
    assert np.all(np.linalg.norm(shares, axis=1) > 0)


def test_biased_shares_have_a_sign_set_by_the_link():
    shares = network_balanced_shares(np.random.default_rng(2), 2, [0, 1, 3, 4], 2, 1.0, "biased")
    assert np.all(shares[:2] < 0) and np.all(shares[2:] > 0)


def test_network_balance_holds_for_any_share_values():
    # d^j = sum_i s^{i,j} - sum_i s^{j,i} sums to zero over a graph for any shares
    graph = topology.build_graph("erdos-renyi", 9, seed=4, params={"degree": 3.0})
    rng = np.random.default_rng(5)
    shares = {(j, i): network_balanced_shares(rng, j, [i], 2, 1.0, "biased")[0]
              for j, i in graph.to_directed().edges}
    d = np.zeros((9, 2))
    for (j, i), s in shares.items():
        d[i] += s
        d[j] -= s
    np.testing.assert_allclose(d.sum(axis=0), 0.0, atol=1e-14)
    assert np.abs(d).max() > 0.1


@pytest.mark.parametrize("distribution", LB_DISTRIBUTIONS)
@pytest.mark.parametrize("scale", ["random", "max"])
def test_lb_noise_is_locally_balanced_and_bounded(distribution, scale):
    rng = np.random.default_rng(6)
    graph = topology.build_graph("erdos-renyi", 8, seed=2, params={"degree": 4.0})
    B = topology.metropolis_weights(graph, "self-inclusive")
    for j in range(8):
        nbrs = sorted(graph.neighbors(j))
        column = B[nbrs, j]
        d = locally_balanced_noise(rng, column, 4, 3.0, distribution, scale)
        assert d.shape == (len(nbrs), 4)
        np.testing.assert_allclose(column @ d, 0.0, atol=1e-14)
        largest = np.linalg.norm(d, axis=1).max()
        assert largest <= 3.0 * (1 + 1e-12)
        if scale == "max" and len(nbrs) > 1:
            assert largest == pytest.approx(3.0, rel=1e-12)


def test_lb_noise_vanishes_with_one_neighbour_or_zero_delta():
    rng = np.random.default_rng(7)
    np.testing.assert_array_equal(locally_balanced_noise(rng, np.array([0.25]), 3, 5.0),
                                  np.zeros((1, 3)))
    np.testing.assert_array_equal(locally_balanced_noise(rng, np.array([0.25, 0.25]), 3, 0.0),
                                  np.zeros((2, 3)))
    # with two equal weights the two links get opposite perturbations (docs/methods/gade2017.md)
    d = locally_balanced_noise(rng, np.array([0.25, 0.25]), 1, 5.0)
    assert d[0, 0] == pytest.approx(-d[1, 0], rel=1e-12) and d[0, 0] != 0


def test_unknown_distributions_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown RSS-NB"):
        network_balanced_shares(rng, 0, [1], 1, 1.0, "laplace")
    with pytest.raises(ValueError, match="unknown RSS-LB"):
        locally_balanced_noise(rng, np.array([0.5, 0.5]), 1, 1.0, "laplace")
