"""The coalition's gradient inversion on transcripts of an independent numpy simulation.

The simulation below is the paper's DGD / RSS-NB written directly in matrix form, not the
package's algorithm classes; the transcript holds exactly the messages on links incident
to the coalition.
"""
import networkx as nx
import numpy as np
import pytest

from mpi_privopt import topology
from mpi_privopt.methods.gade2017.attacks import CoalitionView, PublicProtocol, fit_polynomial, invert_gradients
from mpi_privopt.problems.consensus.polynomial_presets import preset_polynomial

ROUNDS = 40


def simulate(graph, kind, coalition, delta=0.0, seed=0):
    """States, gradient points, true gradients of every agent, and the coalition's view."""
    n, dim = graph.number_of_nodes(), 2
    B = topology.metropolis_weights(graph, "self-inclusive")
    fs = [preset_polynomial("random", 3, k, dim) for k in range(n)]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, dim))
    shares = np.zeros((n, n, dim))  # shares[j, i] = s^{j,i} for the coming round
    messages, points, grads, states = {}, [], [], [x.copy()]
    for k in range(1, ROUNDS + 1):
        alpha = 1.0 / k
        d = shares.sum(axis=0) - shares.sum(axis=1)  # received minus sent
        w = x + alpha * d if kind == "rss-nb" else x
        upcoming = np.zeros_like(shares)
        for j, i in graph.to_directed().edges:
            if kind == "rss-nb":
                upcoming[j, i] = rng.uniform(-1, 1, dim) * delta / (2 * n * np.sqrt(dim))
            if j in coalition or i in coalition:
                messages[("w" if kind == "rss-nb" else "x", k, j, i)] = w[j].copy()
                if kind == "rss-nb":
                    messages[("s", k, j, i)] = upcoming[j, i].copy()
        shares = upcoming
        v = B @ w
        g = np.array([fs[j].gradient(v[j]) for j in range(n)])
        x = np.clip(v - alpha * g, -5, 5)
        points.append(v)
        grads.append(g)
        states.append(x.copy())
    return B, fs, messages, np.array(points), np.array(grads), np.array(states)


def test_dgd_inversion_is_exact_when_the_coalition_sees_every_input():
    graph = nx.complete_graph(5)
    B, fs, messages, points, grads, _ = simulate(graph, "dgd", {1})
    view = CoalitionView(messages, [1], graph)
    protocol = PublicProtocol("dgd", B, "inverse", 1.0)
    p_hat, g_hat = invert_gradients(view, protocol, 0, ROUNDS, 2)
    np.testing.assert_allclose(p_hat, points[:-1, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(g_hat, grads[:-1, 0], rtol=1e-9, atol=1e-9)
    coefficients, identifiable = fit_polynomial(p_hat, g_hat, fs[0].exponents)
    assert identifiable
    np.testing.assert_allclose(coefficients, fs[0].coefficients, rtol=1e-6, atol=1e-6)
    # one point cannot pin down a degree-4 polynomial, even from exact gradients
    _, identifiable = fit_polynomial(p_hat[:1], g_hat[:1], fs[0].exponents)
    assert not identifiable


def test_dgd_inversion_substitutes_the_target_state_for_an_unseen_neighbour():
    graph = nx.cycle_graph(4)  # target 0; coalition {1} never sees agent 3
    B, _, messages, _, grads, states = simulate(graph, "dgd", {1})
    view = CoalitionView(messages, [1], graph)
    _, g_hat = invert_gradients(view, PublicProtocol("dgd", B, "inverse", 1.0), 0, ROUNDS, 2)
    for k in range(1, ROUNDS):
        x = states[k - 1]
        # the only missing input is B[0,3] (x_3 - x_0), seen through the step 1/alpha_k = k
        expected = grads[k - 1, 0] - k * B[0, 3] * (x[3] - x[0])
        np.testing.assert_allclose(g_hat[k - 1], expected, rtol=1e-9, atol=1e-9)


def test_rss_nb_inversion_is_exact_only_when_all_shares_are_seen():
    graph = nx.complete_graph(4)
    B, _, all_in, _, grads, _ = simulate(graph, "rss-nb", {1, 2, 3}, delta=50.0)
    protocol = PublicProtocol("rss-nb", B, "inverse", 1.0)
    _, exact = invert_gradients(CoalitionView(all_in, [1, 2, 3], graph), protocol, 0, ROUNDS, 2)
    np.testing.assert_allclose(exact, grads[:-1, 0], rtol=1e-8, atol=1e-8)
    B, _, one, _, grads, _ = simulate(graph, "rss-nb", {1}, delta=50.0)
    _, rough = invert_gradients(CoalitionView(one, [1], graph), protocol, 0, ROUNDS, 2)
    # the unknown shares on links 0-2 and 0-3 move x_{k+1}; their effect is alpha_{k+1}/alpha_k
    # times at most 4 shares of norm Delta/(2n): bounded, and not zero
    error = np.linalg.norm(rough - grads[:-1, 0], axis=1)
    assert error[1:].max() <= 4 * 50.0 / 8 + 1e-9
    assert np.median(error[1:]) > 0.1


def test_no_estimate_without_a_link_to_the_target():
    graph = nx.path_graph(4)
    B, _, messages, _, _, _ = simulate(graph, "dgd", {3})
    view = CoalitionView(messages, [3], graph)
    _, g_hat = invert_gradients(view, PublicProtocol("dgd", B, "inverse", 1.0), 0, ROUNDS, 2)
    assert np.all(np.isnan(g_hat))


def test_unknown_algorithm_is_refused():
    graph = nx.cycle_graph(3)
    view = CoalitionView({}, [1], graph)
    with pytest.raises(ValueError, match="no inversion"):
        invert_gradients(view, PublicProtocol("admm", np.eye(3), "inverse", 1.0), 0, 3, 1)
