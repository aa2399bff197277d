"""Function Sharing, FS (Gade & Vaidya 2017, Algorithm 3; Part I, arXiv 1612.05236)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import ConfigError
from ...privacy.release import Release
from ...problems.consensus.polynomial import Polynomial, basis_size, monomial_basis
from .certificate import ADVERSARIES_MEANING, certificate_report
from ..contract import Algorithm
from ..baselines.dgd import DGD, DGD_CHOICES, DGDParams, validate_box

FS_NOTE = ("FS: DGD on the obfuscated objective f-hat; not differential privacy; "
           "see the topology certificate")
FS_SHARE_NOTE = ("FS function share s^{j,i} (data-independent polynomial, secret to the link): "
                 "not differential privacy; see the topology certificate")
#: coefficients per share above which the setup exchange is refused (a mistake, not a plan)
MAX_MONOMIALS = 200_000


class SharedObjective:
    """``f-hat_j = f_j + p_j`` (eq. 9): what an FS agent descends on.

    Parameters
    ----------
    base : local problem
        The agent's private objective f_j (anything with ``value`` and ``subgradient``).
    noise : Polynomial
        p_j = sum_i s^{i,j} - sum_i s^{j,i} (eq. 8).
    """

    def __init__(self, base, noise: Polynomial) -> None:
        self.base = base
        self.noise = noise
        self.n_features = base.n_features

    def value(self, w: np.ndarray) -> float:
        return self.base.value(w) + self.noise.value(w)

    def subgradient(self, w: np.ndarray, *, clipped: bool = True) -> np.ndarray:
        return self.base.subgradient(w, clipped=clipped) + self.noise.gradient(w)


def validate_shares(name: str, params) -> None:
    """Raise ConfigError for a share scale or degree FS cannot use."""
    if not params.sigma >= 0:
        raise ConfigError(f"algorithm.sigma = {params.sigma} must be >= 0",
                          "the standard deviation of the share coefficients")
    if params.degree < 1:
        raise ConfigError(f"algorithm.degree = {params.degree} must be >= 1",
                          "the largest total degree of the shared polynomials")


class FunctionSharing(Algorithm):
    r"""FS: a one-time exchange of random functions, then DGD on the obfuscated objectives.

    Setup (once, before iteration 1), agent j::

        draw s^{j,i}(x), a random polynomial, for every neighbour i
        phase "fs-setup" (scatter): the coefficients of s^{j,i} to neighbour i;
                                    receive s^{i,j} from each neighbour i
        p_j(x)     = sum_{i in N_j} s^{i,j}(x) - sum_{i in N_j} s^{j,i}(x)      (eq. 8)
        f-hat_j(x) = f_j(x) + p_j(x)                                          (eq. 9)

    Then for k = 1, 2, ... the paper's DGD with f-hat_j in place of f_j (phase "x",
    broadcast of the clean iterate of the obfuscated problem; the agent runs a
    :class:`~mpi_privopt.methods.baselines.dgd.DGD` whose objective it sets to f-hat_j)::

        v_k^j = sum_{i in N_j U {j}} B[j,i] x_k^i,   x_{k+1}^j = P_X[v_k^j - alpha_k grad f-hat_j(v_k^j)]

    Every share enters one receiver with + and its sender with -, so sum_j p_j = 0 as a
    polynomial (eq. 6) and sum_j f-hat_j = sum_j f_j (eq. 7): the problem solved is the
    original one although no f-hat_j need be convex. Shares are polynomials on the
    monomials of total degree 1..``degree`` in D variables (only pure powers x_d^p when
    ``cross_terms = false``), coefficients i.i.d. N(0, ``sigma``^2) from the sender's
    stream. The exchange happens in the first call of :meth:`step`, so it is metered and
    observable like every other message.

    Privacy (Theorem 2, the certificate in the report): with min degree >= f + 1, a
    coalition of f passive agents cannot tell f_j from f_j + q for any q in the share
    class; the paper states it for polynomial objectives of bounded degree.
    """

    min_agents = 2  # every agent sends its neighbours shares of its function
    name = "fs"
    summary = "FS function sharing: random polynomial shares, then DGD (Gade & Vaidya; not DP)"
    release_note = FS_NOTE

    @dataclasses.dataclass
    class Params(DGDParams):
        step: float = 1.0
        schedule: str = "inverse"
        gradient_at: str = "fused"
        sigma: float = 0.1
        degree: int = 2
        cross_terms: bool = True
        adversaries: int = 1

    positive = ("step",)
    non_negative = {"adversaries": ADVERSARIES_MEANING}
    choices = DGD_CHOICES

    param_checks = (validate_box, validate_shares)

    @classmethod
    def share_basis(cls, params, dim: int) -> np.ndarray:
        """The exponents of the shared polynomials (public: degree and cross_terms)."""
        return monomial_basis(dim, params.degree, params.cross_terms)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        #: the DGD the agent runs, on f_j until the shares arrive, then on f-hat_j
        self.dgd = DGD(agent, params, note=FS_NOTE)
        size = basis_size(agent.problem.n_features, params.degree, params.cross_terms)
        if size > MAX_MONOMIALS:
            raise ConfigError(
                f"fs shares would have {size} coefficients per link "
                f"(D = {agent.problem.n_features}, degree {params.degree})",
                "lower algorithm.degree or set algorithm.cross_terms = false")
        self.noise_function: Polynomial | None = None
        self.shares_sent: np.ndarray | None = None
        self.shares_received: np.ndarray | None = None

    def share_functions(self) -> None:
        """The setup exchange (phase "fs-setup") and f-hat_j = f_j + p_j."""
        net, params = self.agent.net, self.params
        basis = self.share_basis(params, self.agent.problem.n_features)
        self.shares_sent = params.sigma * self.agent.rng.standard_normal((net.n_out, len(basis)))
        self.shares_received = net.scatter([Release.nonprivate(c, note=FS_SHARE_NOTE)
                                            for c in self.shares_sent], "fs-setup")
        self.noise_function = Polynomial(
            basis, self.shares_received.sum(axis=0) - self.shares_sent.sum(axis=0))
        self.dgd.objective = SharedObjective(self.agent.problem, self.noise_function)

    def step(self, n: int) -> None:
        if self.noise_function is None:
            self.share_functions()
        self.dgd.step(n)

    def gradient_step(self, n: int) -> tuple[str, float, float | None]:
        """DGD's step on f-hat_j (whose curvature the shared polynomial changes: unknown
        unless the objective states it)."""
        return self.dgd.gradient_step(n)

    @property
    def objective(self):
        """What the agent descends on: f-hat_j after the setup exchange (f_j before)."""
        return self.dgd.objective

    @property
    def x(self) -> np.ndarray:
        """x_k^j, the agent's iterate."""
        return self.dgd.x

    @property
    def gradient_point(self) -> np.ndarray:
        """Where the last gradient (of f-hat_j) was taken."""
        return self.dgd.gradient_point

    @property
    def estimate(self) -> np.ndarray:
        return self.dgd.x

    def report(self) -> dict:
        cls = (f"polynomials of degree <= {self.params.degree}"
               + ("" if self.params.cross_terms else " without cross terms"))
        scope = (f"Gade & Vaidya Theorem 2 (FS): a coalition of f passive agents cannot tell "
                 f"f_j from f_j + q for any q in the share class ({cls}); stated in the paper "
                 f"for polynomial objectives")
        return certificate_report(self.agent.graph, self.params.adversaries, scope)
