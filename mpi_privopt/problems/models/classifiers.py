"""Classifiers of the personalised-learning task, as flat parameter vectors.

A model is the map from a parameter vector x (length ``n_params``, the agent's block x_i)
to per-sample cross-entropies L_p(x) = -log softmax(logits(x; image_p))[label_p], and the
one backward pass the task needs: ``sum_p c_p nabla L_p(x)`` for coefficients c_p (every
gradient of eq. (22) has that form, notes 5.1). Images come as float64 (N, C, H, W) in [0, 1].

``softmax`` (default)
    Multinomial logistic regression in numpy: logits = flatten(image) W + b, with W of
    shape (C H W, classes) stored first (row-major) and b last. Convex, fast; used by tests.
``cnn``
    The notes' scaled-down CNNs through PyTorch (optional extra ``torch``; see
    :mod:`mpi_privopt.problems.models.torch_cnn`).

Initialisation (notes 7 item 10) is PyTorch's default for linear layers, drawn with the
agent's numpy generator: every weight and bias uniform in ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np
import scipy  # its submodules load on first use (scipy's lazy attributes): not on import

from mpi_privopt.errors import ConfigError

__all__ = ["Classifier", "SoftmaxRegression", "MODELS", "make_model", "cross_entropies"]

MODELS = ("softmax", "cnn")


class Classifier(Protocol):
    """A classifier with a flat parameter vector (see the module docstring)."""

    n_params: int

    def losses(self, x: np.ndarray, images: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Per-sample cross-entropies L_p(x), shape (N,)."""
        ...

    def weighted_gradient(self, x: np.ndarray, images: np.ndarray, labels: np.ndarray,
                          coef: np.ndarray) -> np.ndarray:
        """``sum_p coef_p nabla L_p(x)``, shape (n_params,)."""
        ...

    def predict(self, x: np.ndarray, images: np.ndarray) -> np.ndarray:
        """Predicted labels, shape (N,)."""
        ...

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        """A random initial parameter vector drawn with ``rng``."""
        ...


def cross_entropies(logits: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row cross-entropy and its gradient in the logits, ``softmax - onehot``."""
    logp = scipy.special.log_softmax(logits, axis=1)
    rows = np.arange(labels.size)
    residual = np.exp(logp)
    residual[rows, labels] -= 1.0
    return -logp[rows, labels], residual


class SoftmaxRegression:
    """Multinomial logistic regression (see the module docstring for the layout of x).

    Parameters
    ----------
    input_shape : tuple of int
        (C, H, W) of the images.
    classes : int
    """

    def __init__(self, input_shape: tuple[int, ...], classes: int) -> None:
        self.features = int(np.prod(input_shape))
        self.classes = int(classes)
        self.n_params = (self.features + 1) * self.classes

    def _unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        split = self.features * self.classes
        return x[:split].reshape(self.features, self.classes), x[split:]

    def _logits(self, x: np.ndarray, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        weights, bias = self._unpack(x)
        flat = images.reshape(images.shape[0], self.features)
        return flat, flat @ weights + bias

    def losses(self, x: np.ndarray, images: np.ndarray, labels: np.ndarray) -> np.ndarray:
        _, logits = self._logits(x, images)
        return cross_entropies(logits, labels)[0]

    def weighted_gradient(self, x: np.ndarray, images: np.ndarray, labels: np.ndarray,
                          coef: np.ndarray) -> np.ndarray:
        flat, logits = self._logits(x, images)
        weighted = cross_entropies(logits, labels)[1] * coef[:, None]
        return np.concatenate([(flat.T @ weighted).ravel(), weighted.sum(axis=0)])

    def predict(self, x: np.ndarray, images: np.ndarray) -> np.ndarray:
        return np.argmax(self._logits(x, images)[1], axis=1)

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        bound = 1.0 / np.sqrt(self.features)
        return rng.uniform(-bound, bound, size=self.n_params)


def make_model(name: str, input_shape: tuple[int, ...], classes: int) -> Classifier:
    """The classifier ``name`` (one of :data:`MODELS`) for images of ``input_shape``."""
    if name == "softmax":
        return SoftmaxRegression(input_shape, classes)
    if name == "cnn":
        from mpi_privopt.problems.models.torch_cnn import make_cnn

        return make_cnn(input_shape, classes)
    raise ConfigError(f"unknown model {name!r}", f"use one of {list(MODELS)}")
