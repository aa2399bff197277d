"""P-ADMM: decentralized ADMM with exact local minimisation and zCDP noise (smooth baseline)."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ...errors import ConfigError
from ...problems.config import configured_l1, problem_loss
from ..baselines.admm import ConsensusState
from ..contract import Algorithm
from ..perturbed import (planned_iterate_events, ZCDP_CHOICES, IterateRelease, ZCDPParams,
                        validate_budget, validate_noise_params, zcdp_schedule,
                        config_zcdp_schedule)
from .audit import exact_admm, mechanism_audit

#: Newton iterations a local solve may take before it stops where it is (see
#: :meth:`PADMM.local_minimiser`); every solve stopped there is counted and reported.
NEWTON_ITERATIONS = 60
#: a Newton direction this small relative to the iterate ends the solve (its tolerance)
NEWTON_TOLERANCE = 1e-15


class NewtonCapWarning(RuntimeWarning):
    """A local solve of P-ADMM stopped at its iteration cap, not at the minimiser."""


def require_smooth_squared_loss(name: str, cfg) -> None:
    """Raise ConfigError unless f_k is the squared loss plus l2 (what the solve can do)."""
    loss = problem_loss(cfg.problem)
    l1 = configured_l1(cfg.problem)
    if loss.name != "squared" or l1 != 0:
        raise ConfigError(
            f"{name} minimises f_k exactly, which it can only do for a smooth "
            f"squared-loss objective, but problem {cfg.problem.name!r} has the "
            f"{loss.name} loss with l1 = {l1!r}",
            "use problem.name = ridge (or set problem.l1 = 0 with the squared loss), or "
            "zcdp-nfl for nonsmooth objectives")


class PADMM(Algorithm):
    r"""P-ADMM, the smooth-objective baseline of Gauthier et al. 2024 (Fig. 3).

    The paper describes it only as "networked FL, zCDP and the ADMM, constrained to smooth
    objectives" (ref. [24], Ding et al. 2019). This is option A of
    docs/methods/gauthier2024.md, "P-ADMM": the exact decentralized ADMM of eq. (3), fed the
    released iterates, with zCDP-NFL's
    Gaussian perturbation and noise schedule. Agent k starts from wt_k^(0) = gamma_k^(0) = 0
    and, for n = 1..T, with d_k = |N_k|::

        w_k^(n)  = argmin_w  f_k(w) + w^T gamma_k^(n-1)
                             + rho sum_{l in N_k} || w - (wt_k^(n-1) + wt_l^(n-1))/2 ||^2
        wt_k^(n) = w_k^(n) + xi_k^(n),   xi_k^(n) ~ N(0, sigma_k^2(n) I_P)
        phase "w": broadcast wt_k^(n) to every l in N_k, receive wt_l^(n)
        gamma_k^(n) = gamma_k^(n-1) + rho sum_{l in N_k} (wt_k^(n) - wt_l^(n))

    There is no step size: the local problem is solved by Newton's method, which is what
    "smooth objectives only" buys. The solve ends at the exact minimiser of the quadratic
    piece it lands in (a full step that keeps the set of unclipped samples and the side of
    every clipped one), up to the
    rounding of that linear solve, or when the Newton direction falls below
    1e-15 (1 + max|w|) in every coordinate; it is capped at
    ``NEWTON_ITERATIONS`` (60) iterations, and a solve stopped by the cap (not at the
    minimiser: the sensitivity bound assumes the exact one) is counted in the report
    (``p-admm capped local solves``) and warned about once per agent. f_k must be the squared
    loss plus l2 (ridge): ``(1/M_k) sum_j h_j(x_j^T w) + (l2/K) ||w||^2``. With clipping on
    (c1 = ``problem.clip``), h_j is the loss whose z-derivative is 2 (z - y_j) clamped to
    +-c1/||x_j||, i.e. the squared loss with its per-sample gradient clipped to norm c1
    (a Huber loss, equal to (z - y_j)^2 while the sample's gradient is below c1); the
    clipped gradient oracle of the linearised methods is the gradient of the same surrogate.

    Sensitivity: everything but one sample's term is (2 rho d_k + 2 l2/K)-strongly convex,
    and the replaced sample's gradient moves by at most 2 c1 / M_k, so the minimiser moves
    by at most::

        Delta_k = 2 c1 / ( M_k (2 rho d_k + 2 l2 / K) )

    the same for every n. The noise follows zCDP-NFL's dynamic schedule with the same
    phi^(1), tau and conversion, sigma_k^2(n) = Delta_k^2 tau^(n-1) / (2 phi^(1)); so its
    variance falls only through tau (no step size shrinking the sensitivity).

    Privacy claim: as zCDP-NFL, Phi = sum_n phi^(n) -zCDP per agent. The Newton solve
    starts from the released wt_k^(n-1), so w_k^(n) depends on the data only through the
    current exact minimisation. ``noiseless = true``: the exact (non-private) decentralized
    ADMM of eq. (3), a sanity reference.
    """

    name = "p-admm"
    summary = "P-ADMM: exact-minimisation decentralized ADMM with zCDP noise (smooth only)"
    private = True

    @dataclasses.dataclass
    class Params(ZCDPParams):
        rho: float = 1.0

    positive = ("rho",)
    choices = ZCDP_CHOICES
    param_checks = (validate_noise_params,)

    config_checks = (validate_budget, require_smooth_squared_loss)
    noise_schedule = classmethod(config_zcdp_schedule)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        problem = agent.problem
        self.state = ConsensusState(agent.net, problem.n_features, params.rho)
        #: the noise schedule (None: noiseless)
        self.schedule = zcdp_schedule(agent, params)
        self.release = IterateRelease(agent.noise, self.schedule)
        self.w = np.zeros(problem.n_features)
        self.strong_convexity = (2.0 * problem.l2 / problem.n_agents
                                 + 2.0 * params.rho * self.state.degree)
        #: the Newton cap of the local solves, and how many solves stopped at it
        self.newton_iterations = NEWTON_ITERATIONS
        self.capped_solves = 0
        self.solves = 0
        # Huber threshold of each sample in residual units: |2 r_j| ||x_j|| <= c1
        self._threshold = (np.full(problem.n_samples, np.inf) if not problem.clip else
                           problem.clip / (2.0 * np.maximum(problem.row_norms, 1e-300)))

    def sensitivity(self) -> float:
        problem = self.agent.problem
        return 2.0 * problem.clip / (problem.n_samples * self.strong_convexity)

    def release_sensitivity(self, n: int) -> float:
        """The sensitivity of release n: the same at every iteration."""
        return self.sensitivity()

    def _surrogate(self, w: np.ndarray) -> float:
        """(1/M) sum_j h_j(x_j^T w): the (clipped) squared loss."""
        problem = self.agent.problem
        r = np.abs(problem.X @ w - problem.y)
        t = self._threshold
        with np.errstate(invalid="ignore"):  # t = inf (no clipping): the branch not taken
            h = np.where(r <= t, r * r, 2.0 * t * r - t * t)
        return float(h.mean())

    def local_minimiser(self, start: np.ndarray, linear: np.ndarray) -> np.ndarray:
        """argmin_w (1/M) sum_j h_j(x_j^T w) + (l2/K)||w||^2 + (rho d_k) ||w||^2 + linear^T w.

        (The consensus term rho sum_l ||w - c_l||^2 is rho d_k ||w||^2 - 2 rho w^T sum_l c_l
        up to a constant; ``linear`` = gamma - 2 rho sum_l c_l.) Newton's method with
        backtracking on a piecewise-quadratic, strongly convex function: it ends when a full
        step keeps the piece (the unclipped samples, and the side of each clipped one), i.e.
        lands on the exact minimiser of the quadratic piece it lies in, which is then the
        global one.
        """
        problem = self.agent.problem
        X, mu = problem.X, self.strong_convexity - 2.0 * problem.l2 / problem.n_agents
        diagonal = np.diag_indices(problem.n_features)

        def value(w):
            return (self._surrogate(w) + (problem.l2 / problem.n_agents + 0.5 * mu) * (w @ w)
                    + linear @ w)

        def gradient(w):
            return problem.subgradient(w) + mu * w + linear

        w = start.copy()
        f0 = value(w)
        residual = X @ w - problem.y
        active = np.abs(residual) <= self._threshold
        piece = np.where(active, 0.0, np.sign(residual))
        self.solves += 1
        for _ in range(self.newton_iterations):
            g = gradient(w)
            Xa = X[active]
            H = (2.0 / problem.n_samples) * (Xa.T @ Xa)
            H[diagonal] += self.strong_convexity
            direction = np.linalg.solve(H, g)
            if np.abs(direction).max() <= NEWTON_TOLERANCE * (1.0 + np.abs(w).max()):
                return w
            # Armijo backtracking; values within rounding of f0 count as no increase
            decrease = g @ direction
            slack = 8.0 * np.finfo(float).eps * (1.0 + abs(f0))
            t = 1.0
            while (trial := value(candidate := w - t * direction)) > (
                    f0 - 0.25 * t * decrease + slack):
                t *= 0.5
            w, f0 = candidate, trial  # f0 = value(w) for the next iteration
            residual = X @ w - problem.y
            previous, active = piece, np.abs(residual) <= self._threshold
            # the piece is the active set and the side of every clipped sample (its linear
            # term changes sign with its residual): only a full step that keeps both lands
            # on the minimiser of the piece the Newton model was built on
            piece = np.where(active, 0.0, np.sign(residual))
            if t == 1.0 and np.array_equal(piece, previous):
                return w  # the exact minimiser of the quadratic piece it lies in: the minimiser
        self.capped_solves += 1
        if self.capped_solves == 1:
            warnings.warn(f"p-admm agent {self.agent.id}: a local solve stopped at the cap "
                          f"of {self.newton_iterations} Newton iterations, not at the exact "
                          "minimiser (counted in the run's report)", NewtonCapWarning,
                          stacklevel=2)
        return w

    def step(self, n: int) -> None:
        state, rho = self.state, self.params.rho
        consensus = state.degree * state.wt + state.neighbour_sum  # 2 sum_l (wt_k + wt_l)/2
        self.w = self.local_minimiser(state.wt, state.gamma - rho * consensus)
        state.exchange(self.release(self.w, n, self.sensitivity(), state.outgoing))

    #: one perturbed iterate per iteration, on a public schedule (a resume checks it)
    planned_events = planned_iterate_events

    @property
    def estimate(self) -> np.ndarray:
        return self.w

    #: the trial audit through its mechanism (methods/gauthier2024/audit.py)
    audit = mechanism_audit(exact_admm)

    def report(self) -> dict:
        out = self.release.report(self.name, self.agent.id, "phi^(1)")
        key = f"{self.name} capped local solves agent {self.agent.id}"
        if self.capped_solves:
            out[key] = (f"WARNING: {self.capped_solves} of {self.solves} stopped at the cap "
                        f"of {self.newton_iterations} Newton iterations, not at the exact "
                        "minimiser (the sensitivity bound assumes the exact one)")
        else:
            out[key] = (f"0 of {self.solves} (each ended at its minimiser within "
                        f"{self.newton_iterations} Newton iterations)")
        return out
