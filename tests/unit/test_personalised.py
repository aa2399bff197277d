"""The personalised-learning task (Chen & Wang 2025 eq. 22): gradients, history, metrics."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from mpi_privopt.problems.aggregative.centralised import centralised_descent, total_gradient
from mpi_privopt.problems.metrics import LOCAL, NONE, REFERENCE
from mpi_privopt.problems.models.classifiers import SoftmaxRegression
from mpi_privopt.methods.chen2025.problems.personalised import build_personalised
from mpi_privopt.problems.sampling import sampling_rng

LAM = 0.5


def _task(rank=0, n_agents=5, seed=0, **options):
    return build_personalised({"lambda_pen": LAM, **options}, rank, n_agents, seed)


def _record_draws(task):
    """Wrap the history's draw so a test sees every index drawn."""
    drawn, draw = [], task.history.draw

    def recording(count, *, fresh=False):
        if fresh:
            drawn.clear()
        out = draw(count, fresh=fresh)
        drawn.append(out)
        return out

    task.history.draw = recording
    return drawn


def _point(task, seed=1, scale=0.5):
    # a point away from the initial one, so losses differ between samples
    return scale * np.random.default_rng(seed).standard_normal(task.block_size)


def _naive_ce(x, images, labels, features, classes=10):
    """Cross-entropy of softmax regression, written out independently of the models module."""
    W = x[:features * classes].reshape(features, classes)
    b = x[features * classes:]
    z = images.reshape(len(labels), -1) @ W + b
    return logsumexp(z, axis=1) - z[np.arange(len(labels)), labels]


# --- closed forms against finite differences --------------------------------------------------

def _fd_gradient(fun, x, coords, h=1e-6):
    out = np.empty(len(coords))
    for k, j in enumerate(coords):
        e = np.zeros_like(x)
        e[j] = h
        out[k] = (fun(x + e) - fun(x - e)) / (2 * h)
    return out


@pytest.fixture(scope="module")
def observed():
    task = _task(batch=3)
    for _ in range(6):
        task.observe()               # 18 draws from ~290 points: some repeats, mostly distinct
    x = _point(task)
    return task, x


def _coords(task, n=60):
    # coordinates of pixels that are lit in some image, and biases
    rng = np.random.default_rng(2)
    return np.concatenate([rng.choice(task.block_size - 10, n, replace=False),
                           np.arange(task.block_size - 10, task.block_size)])


def test_grad_x_matches_finite_differences(observed):
    task, x = observed
    y = np.array([1.7])
    coords = _coords(task)
    fd = _fd_gradient(lambda v: task.value(v, y), x, coords)
    assert np.allclose(task.grad_x(x, y)[coords], fd, rtol=1e-6, atol=1e-8)
    assert np.max(np.abs(fd)) > 1e-2     # a real gradient, not zeros


def test_aggregate_vjp_matches_finite_differences(observed):
    task, x = observed
    z = np.array([-0.8])
    coords = _coords(task)
    fd = _fd_gradient(lambda v: float(task.aggregate(v)[0]) * z[0], x, coords)
    assert np.allclose(task.aggregate_vjp(x, z)[coords], fd, rtol=1e-6, atol=1e-8)


def test_grad_y_matches_finite_differences(observed):
    task, x = observed
    y, h = 0.9, 1e-6
    fd = (task.value(x, np.array([y + h])) - task.value(x, np.array([y - h]))) / (2 * h)
    assert task.grad_y(x, np.array([y])).shape == (1,)
    assert np.isclose(task.grad_y(x, np.array([y]))[0], fd, rtol=1e-7)


def test_direction_is_grad_x_plus_vjp(observed):
    task, x = observed
    y, z = np.array([2.0]), np.array([0.3])
    assert np.allclose(task.direction(x, y, z),
                       task.grad_x(x, y) + task.aggregate_vjp(x, z), rtol=1e-12, atol=1e-14)


def test_total_gradient_is_the_gradient_of_the_aggregative_objective():
    # F^t(x) = sum_i f_i^t(x_i, (1/m) sum_j g_j^t(x_j)): the chain rule through the aggregate
    tasks = [_task(rank=r, n_agents=3) for r in range(3)]
    for t in tasks:
        t.observe(4)
    xs = [_point(t, seed=10 + k) for k, t in enumerate(tasks)]

    def F(blocks):
        y = np.mean([t.aggregate(b)[0] for t, b in zip(tasks, blocks)])
        return sum(t.value(b, np.array([y])) for t, b in zip(tasks, blocks))

    grads = total_gradient(tasks, xs)
    for i in range(3):
        coords = _coords(tasks[i], n=20)

        def F_i(v, i=i):
            return F([v if k == i else xs[k] for k in range(3)])

        assert np.allclose(grads[i][coords], _fd_gradient(F_i, xs[i], coords),
                           rtol=1e-6, atol=1e-8)


def test_softmax_losses_match_an_independent_formula(observed):
    task, x = observed
    model = task.model
    assert isinstance(model, SoftmaxRegression) and task.block_size == 650
    assert np.allclose(model.losses(x, task.images, task.labels),
                       _naive_ce(x, task.images, task.labels, 64), rtol=1e-12)


# --- the history ------------------------------------------------------------------------------

def test_count_weighted_history_equals_the_naive_full_history_average():
    task = _task(batch=2)
    drawn = _record_draws(task)
    for _ in range(40):
        task.observe()
    task.observe(count=3)
    idx = np.concatenate(drawn)
    assert idx.size == 40 * 2 + 3 * 2 == task.history.total
    assert task.history.distinct < idx.size          # repeats happened: weights matter
    x, y, z = _point(task), np.array([1.3]), np.array([0.4])
    images, labels = task.images[idx], task.labels[idx]
    losses = _naive_ce(x, images, labels, 64)        # one row per draw, repeats included
    assert np.isclose(task.aggregate(x)[0], np.mean(losses), rtol=1e-13)
    assert np.isclose(task.value(x, y), np.mean(losses + LAM * (losses - y[0]) ** 2),
                      rtol=1e-13)
    uniform = np.full(idx.size, 1.0 / idx.size)
    naive_gx = task.model.weighted_gradient(x, images, labels,
                                            uniform * (1 + 2 * LAM * (losses - y[0])))
    naive_vjp = task.model.weighted_gradient(x, images, labels, uniform * z[0])
    assert np.allclose(task.grad_x(x, y), naive_gx, rtol=1e-11, atol=1e-14)
    assert np.allclose(task.aggregate_vjp(x, z), naive_vjp, rtol=1e-11, atol=1e-14)
    assert np.isclose(task.grad_y(x, y)[0], -2 * LAM * (np.mean(losses) - y[0]), rtol=1e-13)


def test_draws_come_from_the_agents_sampling_stream():
    task = _task(rank=3, seed=11)
    drawn = _record_draws(task)
    task.observe(count=5)
    expected = sampling_rng(11, 3).integers(0, task.images.shape[0], size=5)
    assert np.array_equal(drawn[0], expected)


def test_fresh_forgets_the_history():
    task = _task(batch=2)
    drawn = _record_draws(task)
    for _ in range(10):
        task.observe()
    x = _point(task)
    before = task.aggregate(x)[0]
    task.observe(count=3, fresh=True)
    assert task.history.total == 6 and len(drawn) == 1
    idx = drawn[0]
    assert task.history.distinct == np.unique(idx).size
    assert np.isclose(task.aggregate(x)[0], np.mean(_naive_ce(x, task.images[idx],
                                                              task.labels[idx], 64)))
    assert task.aggregate(x)[0] != before
    task.observe()                                     # then the history grows again
    assert task.history.total == 8


def test_functions_before_any_sample_are_refused():
    task = _task()
    with pytest.raises(ValueError, match="observe"):
        task.aggregate(task.initial_block())


def test_initial_block_is_seeded_per_agent():
    a, b = _task(rank=1, seed=4), _task(rank=1, seed=4)
    assert np.array_equal(a.initial_block(), b.initial_block())
    assert np.array_equal(a.initial_block(), a.initial_block())
    assert not np.array_equal(a.initial_block(), _task(rank=2, seed=4).initial_block())
    bound = 1 / np.sqrt(64)
    assert np.all(np.abs(a.initial_block()) <= bound)


def test_initial_blocks_are_every_agents_initial_block():
    tasks = [_task(rank=r, n_agents=4, seed=6) for r in range(4)]
    blocks = tasks[2].initial_blocks(4)
    assert len(blocks) == 4
    for t, b in zip(tasks, blocks):
        assert np.array_equal(b, t.initial_block())


# --- the evaluator ----------------------------------------------------------------------------

def _monitor(tasks, xs, mode):
    """What the monitor does with an evaluator: shares -> mean -> terms -> combine."""
    evs = [t.evaluator(mode) for t in tasks]
    agg = np.mean([e.aggregate_share(x) for e, x in zip(evs, xs)], axis=0)
    terms = np.array([e.terms(x, agg) for e, x in zip(evs, xs)])
    return evs[0].columns, evs[0].combine(terms)


def test_evaluator_columns_on_a_tiny_case():
    tasks = [_task(rank=r, n_agents=3, seed=5) for r in range(3)]
    xs = [_point(t, seed=20 + k, scale=0.3) for k, t in enumerate(tasks)]
    columns, values = _monitor(tasks, xs, REFERENCE)
    assert columns == ("objective", "cross_entropy", "union_cross_entropy", "test_accuracy")
    # by hand, from the partitions and the whole data set
    local = [_naive_ce(x, t.images, t.labels, 64) for t, x in zip(tasks, xs)]
    G = np.mean([np.mean(L) for L in local])
    objective = np.mean([np.mean(L + LAM * (L - G) ** 2) for L in local])
    data = tasks[0].data
    union = np.mean([np.mean(_naive_ce(x, data.as_float(data.train_images),
                                       data.train_labels, 64)) for x in xs])
    acc = np.mean([np.mean(np.argmax(t.test_images.reshape(len(t.test_labels), -1)
                                     @ x[:640].reshape(64, 10) + x[640:], axis=1)
                           == t.test_labels) for t, x in zip(tasks, xs)])
    assert np.isclose(values["objective"], objective, rtol=1e-12)
    assert np.isclose(values["cross_entropy"], np.mean([np.mean(L) for L in local]), rtol=1e-12)
    assert np.isclose(values["union_cross_entropy"], union, rtol=1e-12)
    assert np.isclose(values["test_accuracy"], acc, rtol=1e-12)
    # the training partitions together are the whole training set
    assert sum(t.labels.size for t in tasks) == data.train_labels.size


def test_local_mode_has_the_objective_but_not_the_union():
    tasks = [_task(rank=r, n_agents=3) for r in range(3)]
    xs = [t.initial_block() for t in tasks]
    columns, values = _monitor(tasks, xs, LOCAL)
    assert columns == ("objective", "cross_entropy", "test_accuracy")
    assert tasks[0].evaluator(LOCAL).aggregate_size == 1
    assert np.isclose(values["objective"], _monitor(tasks, xs, REFERENCE)[1]["objective"])
    assert tasks[0].evaluator(NONE) is None


def test_evaluator_takes_the_stacked_estimate_or_the_block():
    tasks = [_task(rank=r, n_agents=3) for r in range(3)]
    xs = [_point(t, seed=30 + k) for k, t in enumerate(tasks)]
    stacked = np.concatenate(xs)       # every agent's estimate = the true blocks
    by_block = _monitor(tasks, xs, REFERENCE)[1]
    by_stack = _monitor(tasks, [stacked] * 3, REFERENCE)[1]
    assert by_block == by_stack
    with pytest.raises(ValueError, match="stacked estimate"):
        tasks[0].evaluator(LOCAL).aggregate_share(stacked[:-1])


# --- the task learns --------------------------------------------------------------------------

def test_centralised_descent_reduces_the_objective_well_below_the_start():
    # the noise-free, perfect-communication limit; step = lambda_x / m of the paper's
    # lambda_x = (t + 1)^-0.55 (m = 5), 300 iterations of one sample per agent
    tasks = [_task(rank=r) for r in range(5)]
    x0 = [t.initial_block() for t in tasks]
    xs = centralised_descent(tasks, x0, 300, lambda t: 0.2 * (t + 1) ** -0.55)
    start, end = _monitor(tasks, x0, LOCAL)[1], _monitor(tasks, xs, LOCAL)[1]
    assert end["objective"] < 0.7 * start["objective"]
    assert end["cross_entropy"] < 0.7 * start["cross_entropy"]
    assert end["test_accuracy"] > 0.5 > start["test_accuracy"]
