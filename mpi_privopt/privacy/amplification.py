r"""Privacy amplification by iteration for noisy gradient ADMM (Chan, Xie & Zhao 2023).

A record used in one noisy iteration of the token method, seen by an observer only after
``k`` further noisy iterations, costs that observer less than the local zCDP
``rho_local = eta^2 Delta^2 / (2 sigma^2)`` of the iteration itself. The release is
booked as an :class:`AmplifiedGaussianEvent` (the record's own Gaussian event and ``k``);
the transform registered in this module turns it into the zCDP event it is worth,
``min(rho_local, rho_amplified(k))`` (notes section 3.9; T = floor(k/2), A2).

Issue 13 part 3 fills in the bounds; the event's fields are the contract the token method
books against.
"""
from __future__ import annotations

from dataclasses import dataclass

from .events import GaussianEvent, PrivacyEvent

__all__ = ["AmplificationConstants", "AmplifiedGaussianEvent"]


@dataclass(frozen=True)
class AmplificationConstants:
    """The public constants of one run that the amplified bounds need.

    Attributes
    ----------
    eta, beta : float
        Step size and augmented-Lagrangian penalty.
    nu : float
        Smoothness of every record's f.
    norm_A, norm_AtB : float
        ``||A||`` and ``||A^T B||`` (1 and 1 for A = I, B = -I).
    mu, mu_g : float
        Strong convexity of every f and of g (0: not strongly convex).
    bound : {"convex", "strongly-convex", "local"}
        Which amplified bound is requested.
    exponent : {"paper", "conservative", "precise"}
        Strongly convex case only: Lfrak^(2T-1) as printed, Lfrak^T (A1), or the phi_T form.
    """

    eta: float
    beta: float
    nu: float
    norm_A: float = 1.0
    norm_AtB: float = 1.0
    mu: float = 0.0
    mu_g: float = 0.0
    bound: str = "convex"
    exponent: str = "conservative"


@dataclass(frozen=True)
class AmplifiedGaussianEvent(PrivacyEvent):
    """A record's noisy iteration (``base``), seen ``iterations_after`` noisy iterations later.

    ``base`` is the Gaussian event of the iteration that used the record: sensitivity
    ``eta * Delta``, noise ``sigma``, with the record's ``owner`` and ``record``; the wrapper
    carries the same owner, unit and record.
    """

    base: GaussianEvent
    iterations_after: int
    constants: AmplificationConstants
