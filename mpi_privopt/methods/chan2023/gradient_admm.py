r"""Noisy gradient ADMM (Chan, Xie & Zhao 2023, Algorithm 1): the equations of one iteration.

The program is ``min_x frak_f(x) + g(y)  s.t.  A x + B y = c`` with public g, A, B, c; each
iteration uses one record's function f through one gradient query. Here A = I, B = -I,
c = 0 (the consensus split ``x - y = 0`` of the paper's experiments, which already has the
form A = [I_m | D] the theory needs, docs/methods/chan2023.md, "Constraint form"). One
iteration, in the paper's order
y -> lambda -> x (docs/methods/chan2023.md, "Algorithm 1"), from the token ``(xt, lam)``::

    w       = lam - beta xt
    y       = G(w)        = argmin_y g(y) + (beta/2) ||y + w/beta||^2          (5)
    lam'    = lam - beta (xt - y)                                              (6)
    x'      = (xt - eta [grad f(xt) - beta y - lam']) / (1 + eta beta)         (7), Lemma 3.2
    xt'     = x' + N(0, sigma^2 I)                                             (noisy ADMM, Sec. 3.2)

The gradient is taken at the noisy xt, which is also the prox centre; y and lam' get no
noise (they do not touch f). Only ``(xt', lam')`` leaves the holder: the clean x' never does.

For ``g(y) = c1 ||y||_1 + c2 ||y||_2^2`` the y-step is the soft threshold
``y = -soft(w, c1) / (2 c2 + beta)`` (docs/methods/chan2023.md, "Elastic-net instance").

Nothing here draws noise or communicates: the token method and the single-process replay
both call these functions, so each formula lives here once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ElasticNetPenalty", "soft_threshold", "y_step", "dual_step", "x_step",
           "iteration", "x_sensitivity"]


def soft_threshold(v: np.ndarray, c1: float) -> np.ndarray:
    """``sign(v) max(|v| - c1, 0)``, elementwise."""
    return np.sign(v) * np.maximum(np.abs(v) - c1, 0.0)


@dataclass(frozen=True)
class ElasticNetPenalty:
    """The public regulariser ``g(y) = c1 ||y||_1 + c2 ||y||_2^2`` (no factor 1/2).

    c2 > 0 makes g strongly convex (mu_g = 2 c2) and its y-minimiser unique
    (a footnote of the paper, the third, asks for a canonical one).
    """

    c1: float
    c2: float

    def value(self, y: np.ndarray) -> float:
        """g(y)."""
        return float(self.c1 * np.abs(y).sum() + self.c2 * (y @ y))

    @property
    def strong_convexity(self) -> float:
        """mu_g = 2 c2."""
        return 2.0 * self.c2

    def minimiser(self, w: np.ndarray, beta: float) -> np.ndarray:
        """G(w) = argmin_y g(y) + (beta/2) ||y + w/beta||^2 = -soft(w, c1) / (2 c2 + beta)."""
        return -soft_threshold(w, self.c1) / (2.0 * self.c2 + beta)


def y_step(x_tilde: np.ndarray, lam: np.ndarray, penalty: ElasticNetPenalty,
           beta: float) -> np.ndarray:
    """Eq. (5): ``y = G(lam - beta xt)``."""
    return penalty.minimiser(lam - beta * x_tilde, beta)


def dual_step(lam: np.ndarray, x_tilde: np.ndarray, y: np.ndarray, beta: float) -> np.ndarray:
    """Eq. (6): ``lam - beta (xt - y)`` (A xt + B y - c with A = I, B = -I, c = 0)."""
    return lam - beta * (x_tilde - y)


def x_step(x_tilde: np.ndarray, gradient: np.ndarray, y: np.ndarray, lam_new: np.ndarray,
           beta: float, eta: float) -> np.ndarray:
    """Eq. (7), Lemma 3.2 with A = I: ``(xt - eta (grad - beta y - lam')) / (1 + eta beta)``.

    ``gradient`` is grad f(xt) of the iteration's record; ``lam_new`` is the updated dual.
    """
    return (x_tilde - eta * (gradient - beta * y - lam_new)) / (1.0 + eta * beta)


def iteration(x_tilde: np.ndarray, lam: np.ndarray, gradient: np.ndarray,
              penalty: ElasticNetPenalty, beta: float,
              eta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One noiseless iteration y -> lambda -> x; returns ``(y, lam', x')``.

    The caller adds the noise to x' (``xt' = x' + N``); ``gradient`` must be grad f(xt).
    """
    y = y_step(x_tilde, lam, penalty, beta)
    lam_new = dual_step(lam, x_tilde, y, beta)
    return y, lam_new, x_step(x_tilde, gradient, y, lam_new, beta, eta)


def x_sensitivity(eta: float, beta: float, radius: float) -> float:
    """The l2 sensitivity of one iteration's x' to its record: ``eta Delta / (1 + eta beta)``.

    Two records whose gradients differ by at most ``radius`` (Delta, Definition 3.3) at
    every point, used in the same iteration on the same token ``(xt, lam)``, give the same
    y (eq. 5) and lam' (eq. 6), which do not touch f; in eq. (7) (Lemma 3.2 with A = I)
    only the gradient term differs, so ``x'_1 - x'_2 = -eta (g_1 - g_2) / (1 + eta beta)``
    and ``||x'_1 - x'_2|| <= eta Delta / (1 + eta beta)``, with equality for a pair whose
    gradients at xt differ by exactly Delta (two records clipped to opposite directions).
    The paper's proof of Corollaries 6.2 and 7.3 bounds ``(I + eta beta A^T A)^-1`` by 1
    and books ``eta Delta``; with A = I it is exactly ``1 / (1 + eta beta)``
    (docs/methods/chan2023.md, "Sensitivity of one iteration").
    """
    return eta * radius / (1.0 + eta * beta)
