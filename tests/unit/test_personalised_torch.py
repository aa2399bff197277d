"""The optional PyTorch CNNs of the personalised task (skipped without torch)."""
from __future__ import annotations

import numpy as np
import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.methods.chen2025.problems.personalised import build_personalised
from mpi_privopt.problems.models.torch_cnn import torch_available

needs_torch = pytest.mark.skipif(not torch_available(),
                                 reason="PyTorch is not installed (optional extra 'torch')")


@pytest.mark.skipif(torch_available(), reason="PyTorch is installed")
def test_cnn_without_torch_is_refused_with_the_fix():
    with pytest.raises(ConfigError) as err:
        build_personalised({"model": "cnn"}, 0, 5, seed=0)
    assert "PyTorch" in str(err.value) and "mpi_privopt[torch]" in err.value.fix


@needs_torch
@pytest.mark.parametrize("shape, params", [
    ((1, 8, 8), 1898), ((1, 28, 28), 28938), ((3, 8, 8), 16986), ((3, 32, 32), 66218)])
def test_cnn_sizes_are_the_method_page_sizes(shape, params):
    from mpi_privopt.problems.models.torch_cnn import make_cnn

    model = make_cnn(shape, 10)
    assert model.n_params == params
    x = model.initial(np.random.default_rng(0))
    assert x.shape == (params,)
    images = np.random.default_rng(1).uniform(size=(3,) + shape)
    assert model.losses(x, images, np.array([0, 1, 2])).shape == (3,)


@needs_torch
@pytest.mark.parametrize("dataset", ["digits", "colour-digits"])
def test_cnn_gradients_match_finite_differences(dataset):
    task = build_personalised({"model": "cnn", "dataset": dataset, "lambda_pen": 0.5,
                               "batch": 4}, 1, 5, seed=3)
    task.observe(3)
    x = task.initial_block()
    y, z = np.array([1.9]), np.array([0.7])
    gx, gv = task.grad_x(x, y), task.aggregate_vjp(x, z)
    coords = np.random.default_rng(0).choice(task.block_size, 40, replace=False)
    h = 1e-6
    for j in coords:
        e = np.zeros_like(x)
        e[j] = h
        fd = (task.value(x + e, y) - task.value(x - e, y)) / (2 * h)
        assert np.isclose(gx[j], fd, rtol=1e-5, atol=1e-8), j
        fd = z[0] * (task.aggregate(x + e)[0] - task.aggregate(x - e)[0]) / (2 * h)
        assert np.isclose(gv[j], fd, rtol=1e-5, atol=1e-8), j


@needs_torch
def test_cnn_initial_block_depends_on_the_seed_only():
    a = build_personalised({"model": "cnn"}, 2, 5, seed=9).initial_block()
    b = build_personalised({"model": "cnn"}, 2, 5, seed=9).initial_block()
    assert np.array_equal(a, b)
