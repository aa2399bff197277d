"""The paper's CNNs, scaled as in the notes (6.2, 7 item 15), through PyTorch (optional).

Install with ``pip install 'mpi_privopt[torch]'``; nothing else in the package needs it, and
the tests of this module skip without it. The parameters are one float64 vector x (the
agent's block), laid out in ``module.named_parameters()`` order; a forward pass reads x
through :func:`torch.func.functional_call`, so the backward pass is one ``autograd`` call.

Grey images (1 channel; the paper's "two-layer CNN", MNIST)::

    conv kxk(1->c1, same padding)-ReLU-maxpool2 -> conv kxk(c1->c2)-ReLU-maxpool2 -> FC(10)

    8x8 digits:  k = 3, (c1, c2) = (8, 16)   about 1.9k parameters
    28x28 MNIST: k = 5, (c1, c2) = (16, 32)  about 29k parameters

Colour images (3 channels; the paper's "four-layer CNN", CIFAR-10)::

    conv3x3(3->c1)-ReLU -> conv3x3(c1->c2)-ReLU-maxpool2 -> conv3x3(c2->c3)-ReLU
    -> conv3x3(c3->c4)-ReLU-maxpool2 -> global average pool -> FC(c4->10)

    colour digits (up to 16x16): (16, 16, 32, 32)   about 17k parameters
    32x32 CIFAR-10:              (32, 32, 64, 64)   about 66k parameters

No batch norm (its running statistics are not parameters of x) and no dropout (notes 7
item 15). Initialisation: PyTorch's default bounds for Conv2d / Linear (uniform in
``[-1/sqrt(fan_in), 1/sqrt(fan_in)]`` for weights and biases) but drawn with the agent's
numpy generator, so the initial block depends on the seed alone, not on torch's global RNG.
"""
from __future__ import annotations

import importlib.util

import numpy as np

from mpi_privopt.errors import ConfigError

__all__ = ["torch_available", "TorchClassifier", "make_cnn", "SMALL_IMAGE"]

#: images up to this side length get the scaled-down widths of the notes (digits stand-ins)
SMALL_IMAGE = 16
# rows per forward pass, so that evaluating on a whole data set stays within memory
_CHUNK = 2048


def torch_available() -> bool:
    """Whether PyTorch can be imported."""
    return importlib.util.find_spec("torch") is not None


def _torch():
    if not torch_available():
        raise ConfigError("model = \"cnn\" needs PyTorch, which is not installed",
                          "pip install 'mpi_privopt[torch]' (a CPU wheel is enough), or use "
                          "model = \"softmax\" (the default, numpy only)")
    import torch

    return torch


def _two_layer(nn, channels: int, height: int, width: int, classes: int):
    small = max(height, width) <= SMALL_IMAGE
    (c1, c2), kernel = ((8, 16), 3) if small else ((16, 32), 5)
    pad = kernel // 2
    return nn.Sequential(
        nn.Conv2d(channels, c1, kernel, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, kernel, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * (height // 4) * (width // 4), classes))


def _four_layer(nn, channels: int, height: int, width: int, classes: int):
    small = max(height, width) <= SMALL_IMAGE
    c1, c2, c3, c4 = (16, 16, 32, 32) if small else (32, 32, 64, 64)
    return nn.Sequential(
        nn.Conv2d(channels, c1, 3, padding=1), nn.ReLU(),
        nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c2, c3, 3, padding=1), nn.ReLU(),
        nn.Conv2d(c3, c4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c4, classes))


class TorchClassifier:
    """A torch module seen as a
    :class:`~mpi_privopt.problems.models.classifiers.Classifier` of a flat
    float64 parameter vector.

    Parameters
    ----------
    module : torch.nn.Module
        Made of Conv2d / Linear layers (their fan-ins give the initialisation bounds).
    """

    def __init__(self, module) -> None:
        torch = _torch()
        self._torch = torch
        self.module = module.double().requires_grad_(False)
        named = list(self.module.named_parameters())
        self._names = [name for name, _ in named]
        self._shapes = [tuple(p.shape) for _, p in named]
        self._sizes = [int(np.prod(s)) for s in self._shapes]
        self.n_params = int(sum(self._sizes))
        fan_in = {}
        for prefix, layer in self.module.named_modules():
            weight = getattr(layer, "weight", None)
            if weight is not None:
                fan = int(np.prod(weight.shape[1:]))
                fan_in[f"{prefix}.weight"] = fan_in[f"{prefix}.bias"] = fan
        self._fan_in = [fan_in[name] for name in self._names]

    def _logits(self, flat, images: np.ndarray):
        params = dict(zip(self._names, (v.view(s) for v, s in
                                        zip(self._torch.split(flat, self._sizes),
                                            self._shapes))))
        batch = self._torch.from_numpy(np.ascontiguousarray(images, dtype=np.float64))
        return self._torch.func.functional_call(self.module, params, (batch,))

    def _flat(self, x: np.ndarray, grad: bool = False):
        return self._torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=grad)

    def _ce(self, logits, labels: np.ndarray):
        target = self._torch.from_numpy(np.asarray(labels, dtype=np.int64))
        return self._torch.nn.functional.cross_entropy(logits, target, reduction="none")

    def losses(self, x: np.ndarray, images: np.ndarray, labels: np.ndarray) -> np.ndarray:
        flat = self._flat(x)
        out = []
        with self._torch.no_grad():
            for start in range(0, len(labels), _CHUNK):
                part = slice(start, start + _CHUNK)
                out.append(self._ce(self._logits(flat, images[part]), labels[part]).numpy())
        return np.concatenate(out) if out else np.empty(0)

    def weighted_gradient(self, x: np.ndarray, images: np.ndarray, labels: np.ndarray,
                          coef: np.ndarray) -> np.ndarray:
        flat = self._flat(x, grad=True)
        weights = self._torch.from_numpy(np.asarray(coef, dtype=np.float64))
        for start in range(0, len(labels), _CHUNK):  # gradients accumulate in flat.grad
            part = slice(start, start + _CHUNK)
            ce = self._ce(self._logits(flat, images[part]), labels[part])
            (ce * weights[part]).sum().backward()
        if flat.grad is None:
            return np.zeros(self.n_params)
        return flat.grad.numpy().copy()

    def predict(self, x: np.ndarray, images: np.ndarray) -> np.ndarray:
        flat = self._flat(x)
        out = []
        with self._torch.no_grad():
            for start in range(0, len(images), _CHUNK):
                out.append(self._logits(flat, images[start:start + _CHUNK]).argmax(1).numpy())
        return np.concatenate(out) if out else np.empty(0, dtype=np.int64)

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        return np.concatenate([rng.uniform(-1.0, 1.0, size=n) / np.sqrt(fan)
                               for n, fan in zip(self._sizes, self._fan_in)])


def make_cnn(input_shape: tuple[int, ...], classes: int) -> TorchClassifier:
    """The two-layer CNN for grey images, the four-layer CNN for colour ones (see above)."""
    torch = _torch()
    channels, height, width = (int(v) for v in input_shape)
    if min(height, width) < 4:
        raise ConfigError(f"model = \"cnn\" needs images of at least 4x4 (two 2x2 poolings), "
                          f"got {height}x{width}", "use model = \"softmax\"")
    # one MPI rank per agent: torch's own thread pool would oversubscribe the cores
    torch.set_num_threads(1)
    build = _two_layer if channels == 1 else _four_layer
    return TorchClassifier(build(torch.nn, channels, height, width, classes))
