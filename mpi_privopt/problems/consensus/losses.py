"""Per-sample losses of a linear model, written in terms of the prediction z = x^T w.

Every loss here is a function of the scalar z and the label y only, so a per-sample
(sub)gradient with respect to w is ``derivative(z, y) * x``. Working with the scalar
derivative keeps the hot path to two matrix-vector products and lets clipping use
``|derivative| * ||x||`` as the per-sample gradient norm without forming an M x P array.

The losses follow Gauthier et al. (zCDP-NFL, eq. 1 & 4) and carry no factor 1/2:
squared is ``(z - y)^2`` with derivative ``2 (z - y)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy  # its submodules load on first use (scipy's lazy attributes): not on import

from mpi_privopt.errors import ConfigError

__all__ = [
    "Loss",
    "Squared",
    "Absolute",
    "Huber",
    "Hinge",
    "Logistic",
    "LOSSES",
    "make_loss",
]


@dataclass(frozen=True)
class Loss:
    """Base class: a convex per-sample loss ``loss(z, y)`` of the prediction z = x^T w.

    Attributes
    ----------
    name : str
        Registry name.
    task : {"regression", "classification"}
        Classification losses expect labels in {-1, +1}.
    smooth : bool
        Whether the derivative in z is Lipschitz (then ``max_curvature`` is its constant).
    max_curvature : float or None
        Supremum over z of the second derivative; None for nonsmooth losses.
    """

    name: ClassVar[str] = "loss"
    task: ClassVar[str] = "regression"
    smooth: ClassVar[bool] = False
    max_curvature: ClassVar[float | None] = None

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-sample loss values."""
        raise NotImplementedError

    def derivative(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """A (sub)derivative in z per sample; at kinks the minimum-norm choice (often 0)."""
        raise NotImplementedError

    def scaled_derivative(self, z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        """``(d, c)`` with ``derivative(z, y) == c * d``; may overwrite ``z``.

        Gradients are ``X^T derivative / M``: returning the constant factor apart lets
        the caller apply it to the P-vector instead of the M-vector (one array operation
        fewer per gradient, which matters for small models). ``z`` must be a fresh array.
        """
        return self.derivative(z, y), 1.0

    def curvature(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Second derivative in z per sample (smooth losses only)."""
        raise ConfigError(
            f"the {self.name} loss is not smooth and has no second derivative",
            "use a smooth loss (squared, huber, logistic) where curvature is needed",
        )

    def derivative_bound(
        self, x_norm: np.ndarray, y: np.ndarray, radius: float
    ) -> np.ndarray:
        """Upper bound on ``|derivative(x^T w, y)|`` over ``||w|| <= radius``, per sample.

        Uses ``|x^T w| <= ||x|| radius`` (Cauchy-Schwarz).
        """
        raise NotImplementedError

    def pieces(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
        """Max-of-linear form of a piecewise-linear loss.

        Returns ``(s, c, lo, hi)`` with ``loss(z, y_i) = max_{lo <= a <= hi} a (s_i z + c_i)``;
        the reference solver uses it for linear programs and duals.
        """
        raise ConfigError(
            f"the {self.name} loss is not piecewise linear",
            "only the absolute and hinge losses have a max-of-linear form",
        )


@dataclass(frozen=True)
class Squared(Loss):
    """``(z - y)^2``; derivative ``2 (z - y)``."""

    name: ClassVar[str] = "squared"
    smooth: ClassVar[bool] = True
    max_curvature: ClassVar[float | None] = 2.0

    def value(self, z, y):
        return (z - y) ** 2

    def derivative(self, z, y):
        return 2.0 * (z - y)

    def scaled_derivative(self, z, y):
        z -= y
        return z, 2.0

    def curvature(self, z, y):
        return np.full(np.shape(z), 2.0)

    def derivative_bound(self, x_norm, y, radius):
        return 2.0 * (x_norm * radius + np.abs(y))


@dataclass(frozen=True)
class Absolute(Loss):
    """``|z - y|``; subderivative ``sign(z - y)`` with sign(0) = 0."""

    name: ClassVar[str] = "absolute"

    def value(self, z, y):
        return np.abs(z - y)

    def derivative(self, z, y):
        return np.sign(z - y)

    def derivative_bound(self, x_norm, y, radius):
        return np.ones(np.shape(x_norm))

    def pieces(self, y):
        y = np.asarray(y, dtype=float)
        return np.ones_like(y), -y, -1.0, 1.0


@dataclass(frozen=True)
class Huber(Loss):
    """``r^2 / 2`` if ``|r| <= delta`` else ``delta (|r| - delta / 2)``, with r = z - y.

    Parameters
    ----------
    delta : float
        Width of the quadratic zone (> 0).
    """

    delta: float = 1.0
    name: ClassVar[str] = "huber"
    smooth: ClassVar[bool] = True
    max_curvature: ClassVar[float | None] = 1.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.delta) and self.delta > 0):
            raise ConfigError(
                f"huber_delta = {self.delta!r} must be a positive finite number",
                "set [problem] huber_delta to e.g. 1.0",
            )

    def value(self, z, y):
        a = np.abs(z - y)
        return np.where(a <= self.delta, 0.5 * a * a, self.delta * (a - 0.5 * self.delta))

    def derivative(self, z, y):
        return np.clip(z - y, -self.delta, self.delta)

    def curvature(self, z, y):
        return (np.abs(z - y) <= self.delta).astype(float)

    def derivative_bound(self, x_norm, y, radius):
        # |psi(r)| = min(|r|, delta) and |r| <= ||x|| R + |y|: tighter than delta alone.
        return np.minimum(self.delta, x_norm * radius + np.abs(y))


@dataclass(frozen=True)
class Hinge(Loss):
    """``max(0, 1 - y z)``; subderivative ``-y`` where ``1 - y z > 0`` else 0."""

    name: ClassVar[str] = "hinge"
    task: ClassVar[str] = "classification"

    def value(self, z, y):
        return np.maximum(0.0, 1.0 - y * z)

    def derivative(self, z, y):
        return np.where(1.0 - y * z > 0.0, -y, 0.0)

    def derivative_bound(self, x_norm, y, radius):
        return np.abs(y) * np.ones(np.shape(x_norm))

    def pieces(self, y):
        y = np.asarray(y, dtype=float)
        return -y, np.ones_like(y), 0.0, 1.0


@dataclass(frozen=True)
class Logistic(Loss):
    """``log(1 + exp(-y z))``, evaluated stably with ``logaddexp``."""

    name: ClassVar[str] = "logistic"
    task: ClassVar[str] = "classification"
    smooth: ClassVar[bool] = True
    # sigma(m) (1 - sigma(m)) <= 1/4 for labels of magnitude 1
    max_curvature: ClassVar[float | None] = 0.25

    def value(self, z, y):
        return np.logaddexp(0.0, -y * z)

    def derivative(self, z, y):
        return -y * scipy.special.expit(-y * z)

    def curvature(self, z, y):
        m = y * z
        return y * y * scipy.special.expit(m) * scipy.special.expit(-m)

    def derivative_bound(self, x_norm, y, radius):
        # |d| = |y| sigma(-y z) and -y z <= |y| ||x|| R, so sigma of that bounds it (< |y|).
        ay = np.abs(y)
        return ay * scipy.special.expit(ay * x_norm * radius)


LOSSES: dict[str, Loss] = {
    loss.name: loss for loss in (Squared(), Absolute(), Huber(), Hinge(), Logistic())
}


def make_loss(name: str, huber_delta: float = 1.0) -> Loss:
    """Return the loss called ``name``; ``huber_delta`` only matters for "huber".

    Raises
    ------
    ConfigError
        If ``name`` is not in :data:`LOSSES`.
    """
    if name not in LOSSES:
        raise ConfigError(
            f"unknown loss {name!r}",
            f"choose one of {', '.join(sorted(LOSSES))} (or leave [problem] loss empty)",
        )
    if name == "huber":
        return Huber(delta=float(huber_delta))
    return LOSSES[name]
