r"""A strongly convex quadratic aggregative instance with a closed-form optimum
(docs/methods/chen2025.md, "Quadratic test instance").

Agent i (of m) has a block x_i in R^{n_i} (n_i = ``block``), an aggregate map with values
in R^r (r = ``aggregate``) and the private parameters A_i (r x n_i), p_i (n_i) and b_i (r).
Its samples are xi ~ N(0, noise_g^2 I_r) and phi ~ N(0, noise_f^2 I_{n_i}), with::

    l(x_i; xi)       = A_i x_i + xi
    h(x_i, s; phi)   = 0.5 ||x_i - p_i - phi||^2 + 0.5 kappa ||s - b_i||^2

so, in expectation, g_i(x_i) = A_i x_i, f_i(x_i, s) = 0.5||x_i - p_i||^2 + 0.5 kappa
||s - b_i||^2 + const, and F(x) = sum_i f_i(x_i, (1/m) sum_j A_j x_j) is strongly convex
with the unique minimiser x* of the linear system (stacked A = [A_1 ... A_m], r x n)::

    x_i - p_i + kappa A_i^T ( (1/m) sum_j A_j x_j - bbar ) = 0,     bbar = (1/m) sum_j b_j
    <=>  ( I_n + (kappa/m) A^T A ) x = p + kappa A^T bbar

The empirical functions after t+1 draws average over the whole history: with the running
sums S_xi and S_phi of the samples and their count c (so an iteration costs O(1) in t)::

    g_i^t(x_i)          = A_i x_i + S_xi / c
    nabla g_i^t(x_i) z  = A_i^T z
    nabla_x f_i^t(x, y) = x - p_i - S_phi / c
    nabla_y f_i^t(x, y) = kappa (y - b_i)

Streams (``(seed, agent)`` only, never the rank placement): the parameters from
``SeedSequence([seed, TAG, 1, agent])``; the initial block x_i^0 ~ U(-init, init)^{n_i}
from ``SeedSequence([seed, TAG, 2, j])`` (data-independent, so every agent can compute
every x_j^0: docs/methods/chen2025.md, "Initialisation"); the samples from the agent's
sampling stream
(:func:`~mpi_privopt.problems.sampling.sampling_rng`), each draw of ``count`` samples
taking xi (count x r) and then phi (count x n_i).

Record domain (docs/methods/chen2025.md, "Derived accounting"): every sample is clipped to
the l2 ball of radius ``clip`` standard deviations times sqrt(dimension), xi to
``c_g = clip noise_g sqrt(r)`` and phi to ``c_f = clip noise_f sqrt(n_i)`` (at the default 5
the clip binds with probability below 1e-10 per sample at r = n_i = 2), so the exact
constants of Assumption 5 exist (:meth:`QuadraticAggregative.record_bounds`)::

    L_l = ||A_i||_2, Lbar_l = 0, d_l = sqrt(r) c_g, L_h = c_f, Lbar_h = max(1, kappa)

Options (``[problem.options]``): ``block`` (n_i, 2), ``aggregate`` (r, 2), ``kappa`` (1.0),
``noise_g`` and ``noise_f`` (sample standard deviations, 0.1), ``init`` (half-width of the
initial box, 1.0), ``scale_p`` (p_i ~ U(-scale_p, scale_p), 1.0), ``clip`` (the record
domain's radius in standard deviations times sqrt(dimension), 5.0).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.reference.solution import ReferenceSolution
from mpi_privopt.problems.metrics import LOCAL, REFERENCE, AgentMetrics, Evaluator, Metric, REDUCTIONS
from mpi_privopt.problems.options import refuse_unknown_options
from mpi_privopt.problems.sampling import sampling_rng
from mpi_privopt.problems.aggregative.objective import RecordBounds

__all__ = ["QuadraticOptions", "QuadraticAggregative", "build_quadratic", "quadratic_optimum",
           "quadratic_parameters", "quadratic_initial_block"]

_TAG = 0xA66E
_PARAMETER_STREAM = 1
_INIT_STREAM = 2


@dataclass(frozen=True)
class QuadraticOptions:
    """The options of ``aggregative-quadratic`` (see the module docstring)."""

    block: int = 2
    aggregate: int = 2
    kappa: float = 1.0
    noise_g: float = 0.1
    noise_f: float = 0.1
    init: float = 1.0
    scale_p: float = 1.0
    clip: float = 5.0

    @classmethod
    def of(cls, options: Mapping[str, object]) -> "QuadraticOptions":
        """Checked options; ConfigError naming an unknown key or a bad value."""
        names = cls.__dataclass_fields__
        refuse_unknown_options(options, names, "aggregative-quadratic")
        values = {}
        for key, value in options.items():
            integer = key in ("block", "aggregate")
            ok = (isinstance(value, int) and not isinstance(value, bool) if integer else
                  isinstance(value, (int, float)) and not isinstance(value, bool))
            if not ok or not np.isfinite(value) or value < (1 if integer else 0):
                raise ConfigError(
                    f"[problem.options] {key} = {value!r} must be "
                    f"{'an integer >= 1' if integer else 'a finite number >= 0'}",
                    f"set problem.options.{key} accordingly (default {names[key].default})")
            values[key] = int(value) if integer else float(value)
        return cls(**values)


def quadratic_parameters(opts: QuadraticOptions, seed: int,
                         agent: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Agent ``agent``'s private (A_i, p_i, b_i)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, _TAG, _PARAMETER_STREAM, agent]))
    A = rng.standard_normal((opts.aggregate, opts.block)) / np.sqrt(opts.block)
    p = rng.uniform(-opts.scale_p, opts.scale_p, opts.block)
    b = rng.uniform(-1.0, 1.0, opts.aggregate)
    return A, p, b


def quadratic_initial_block(opts: QuadraticOptions, seed: int, agent: int) -> np.ndarray:
    """x_j^0 of agent ``agent`` (public: it depends on the seed and the index only)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, _TAG, _INIT_STREAM, agent]))
    return rng.uniform(-opts.init, opts.init, opts.block)


def quadratic_optimum(shares: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
                      kappa: float) -> np.ndarray:
    """x* from every agent's (A_i, p_i, b_i), in agent order (the stacked n-vector)."""
    m = len(shares)
    A = np.hstack([s[0] for s in shares])
    p = np.concatenate([s[1] for s in shares])
    b_bar = np.mean([s[2] for s in shares], axis=0)
    matrix = np.eye(A.shape[1]) + (kappa / m) * (A.T @ A)
    return np.linalg.solve(matrix, p + kappa * (A.T @ b_bar))


class QuadraticAggregative:
    """Agent i's side of the quadratic instance (the AggregativeObjective contract).

    Parameters
    ----------
    opts : QuadraticOptions
    agent, n_agents, seed : int
        Which agent, of how many, under which run seed.
    """

    def __init__(self, opts: QuadraticOptions, agent: int, n_agents: int, seed: int) -> None:
        self.opts = opts
        self.agent, self.n_agents, self.seed = agent, n_agents, seed
        self.block_size = opts.block
        self.aggregate_size = opts.aggregate
        self.A, self.p, self.b = quadratic_parameters(opts, seed, agent)
        self.rng = sampling_rng(seed, agent)
        self.count = 0
        self.sum_xi = np.zeros(opts.aggregate)
        self.sum_phi = np.zeros(opts.block)
        #: the closed-form optimum x* (stacked), once the reference is known
        self.x_star: np.ndarray | None = None
        #: the method's last estimates (x_i^t, ytilde_i^t, ztilde_i^t), for the diagnostics
        self.trackers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- the sampling oracle ----------------------------------------------------------------
    def _radii(self) -> tuple[float, float]:
        """The record domain: the l2 radii (c_g, c_f) of xi and phi."""
        o = self.opts
        return (o.clip * o.noise_g * np.sqrt(self.aggregate_size),
                o.clip * o.noise_f * np.sqrt(self.block_size))

    def observe(self, count: int = 1, *, fresh: bool = False) -> None:
        xi = self.opts.noise_g * self.rng.standard_normal((count, self.aggregate_size))
        phi = self.opts.noise_f * self.rng.standard_normal((count, self.block_size))
        c_g, c_f = self._radii()
        xi, phi = _clip_rows(xi, c_g), _clip_rows(phi, c_f)
        if fresh:
            self.count = 0
            self.sum_xi[:] = 0.0
            self.sum_phi[:] = 0.0
        self.count += count
        self.sum_xi += xi.sum(axis=0)
        self.sum_phi += phi.sum(axis=0)

    def _mean(self, total: np.ndarray) -> np.ndarray:
        if self.count == 0:
            raise RuntimeError("no sample drawn yet: call observe() first")
        return total / self.count

    # -- the empirical functions ------------------------------------------------------------
    def aggregate(self, x_i: np.ndarray) -> np.ndarray:
        return self.A @ x_i + self._mean(self.sum_xi)

    def aggregate_vjp(self, x_i: np.ndarray, z: np.ndarray) -> np.ndarray:
        return self.A.T @ z

    def grad_x(self, x_i: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x_i - self.p - self._mean(self.sum_phi)

    def grad_y(self, x_i: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self.opts.kappa * (y - self.b)

    def initial_block(self) -> np.ndarray:
        return quadratic_initial_block(self.opts, self.seed, self.agent)

    def record_bounds(self, box: float):
        """The exact constants of Assumption 5 on the record domain (any box: none of
        them depends on x): ``l(x; xi) = A_i x + xi`` changes by ``xi - xi'`` (l1 at most
        ``2 sqrt(r) c_g``), ``nabla_x h = x - p_i - phi`` by ``phi' - phi`` (at most
        ``2 c_f``), ``nabla_y h = kappa (y - b_i)`` not at all; ``nabla l = A_i^T``."""
        c_g, c_f = self._radii()
        return RecordBounds(
            L_h=float(c_f), Lbar_h=max(1.0, self.opts.kappa),
            L_l=float(np.linalg.norm(self.A, 2)), Lbar_l=0.0,
            d_l=float(np.sqrt(self.aggregate_size) * c_g),
            domain=f"xi clipped to ||xi||_2 <= {c_g:.4g}, phi to ||phi||_2 <= {c_f:.4g}")

    def record_trackers(self, x_i: np.ndarray, ytilde: np.ndarray, ztilde: np.ndarray) -> None:
        """Keep the method's estimates of g(x^t) and (1/m) sum_j grad_y f_j at x_i^t (the
        evaluator's tracking diagnostics; nothing leaves the agent but its scalars)."""
        self.trackers = (x_i, ytilde, ztilde)

    def initial_blocks(self, n_agents: int) -> list[np.ndarray]:
        """Every agent's x_j^0 (public and seeded by (seed, j))."""
        return [quadratic_initial_block(self.opts, self.seed, j) for j in range(n_agents)]

    # -- the expected functions (evaluation) ---------------------------------------------------
    def expected_cost(self, x_i: np.ndarray, g: np.ndarray) -> float:
        """f_i(x_i, g) without the samples' constant variance terms."""
        return float(0.5 * np.sum((x_i - self.p) ** 2)
                     + 0.5 * self.opts.kappa * np.sum((g - self.b) ** 2))

    # -- reference (simulation only) -------------------------------------------------------
    def reference_share(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.A, self.p, self.b

    def use_reference(self, shares: list) -> None:
        self.x_star = quadratic_optimum(shares, self.opts.kappa)
        A = np.hstack([s[0] for s in shares])
        g = A @ self.x_star / len(shares)
        blocks = np.split(self.x_star, len(shares))
        self.optimum_value = sum(
            float(0.5 * np.sum((xj - s[1]) ** 2) + 0.5 * self.opts.kappa * np.sum((g - s[2]) ** 2))
            for xj, s in zip(blocks, shares))
        matrix = np.eye(A.shape[1]) + (self.opts.kappa / len(shares)) * (A.T @ A)
        residual = matrix @ self.x_star - (np.concatenate([s[1] for s in shares])
                                           + self.opts.kappa * A.T @ np.mean([s[2] for s in shares], axis=0))
        #: the centralised optimum in the engine's form (models.npz stores it beside the models)
        self.reference = ReferenceSolution(self.x_star, self.optimum_value,
                                           "closed form (linear system of "
                                           "docs/methods/chen2025.md)", True,
                                           float(np.max(np.abs(residual))))

    def evaluator(self, mode: str) -> Evaluator | None:
        """``reference``: distances to x*, the cost and consensus; ``local``: the cost when
        r = 1 (a scalar aggregate), else the separable part; ``none``: None."""
        if mode == REFERENCE:
            if self.x_star is None:
                raise RuntimeError("the reference x* is not known: use_reference() first")
            return QuadraticToOptimum(self)
        if mode == LOCAL:
            block = slice(self.agent * self.block_size, (self.agent + 1) * self.block_size)

            def own(w: np.ndarray) -> np.ndarray:
                # a stacked estimate x_i (length n), or only the own block x_i (length n_i:
                # the tracking baselines [6], [36]), as in QuadraticToOptimum
                return w if w.size == self.block_size else w[block]
            if self.aggregate_size == 1:
                return AgentMetrics([Metric("cost", "sum")],
                                    lambda w, g: (self.expected_cost(own(w), g),),
                                    aggregate=lambda w: self.A @ own(w), aggregate_size=1)
            return AgentMetrics([Metric("separable_cost", "sum")],
                                lambda w, _: (0.5 * float(np.sum((own(w) - self.p) ** 2)),))
        return None


class QuadraticToOptimum:
    """Metrics of the quadratic instance against x* (``reference`` mode).

    The model w an agent hands in is its stacked estimate **x**_i (length n); x_i = R_i **x**_i.
    A method that keeps only its own block (the tracking baselines [6], [36]) hands in x_i
    (length n_i): its "stacked" distance is then its block distance and its consensus gap 0.

    Columns
    -------
    error
        ``sum_i ||**x**_i - x*||^2 / ||x*||^2`` (Theorem 1's quantity, normalised).
    distance
        ``(1/m) sum_i ||**x**_i - x*||^2``, the mean squared distance (unnormalised).
    block_distance
        ``sum_i ||x_i - x_i*||^2``, the agents' own blocks.
    cost, objective_gap
        F(x) at x = (x_1, ..., x_m) (expected functions) and F(x) - F(x*).
    consensus_gap
        ``(1/m) sum_i ||**x**_i - xbar||^2``, xbar the average stacked estimate.
    tracking_error, gradient_tracking_error
        ``(1/m) sum_i ||ytilde_i^t - g(x^t)||`` and ``(1/m) sum_i ||ztilde_i^t - (1/m) sum_j
        grad_y f_j(x_j^t, g(x^t))||`` at the iterate x^t the method's last estimates were
        made at (0 before the first iteration or for a method that records none).
    """

    columns = ("error", "distance", "block_distance", "cost", "objective_gap", "consensus_gap",
               "tracking_error", "gradient_tracking_error")

    def __init__(self, objective: QuadraticAggregative) -> None:
        self.objective = objective
        self.x_star = objective.x_star
        self.n = self.x_star.size
        r = objective.aggregate_size
        # [average stacked estimate, g(x) now, g(x^t) and mean b at the trackers' iterate]
        self.aggregate_size = self.n + 3 * r
        k, size = objective.agent, objective.block_size
        self.own = slice(k * size, (k + 1) * size)

    def _block(self, w: np.ndarray) -> np.ndarray:
        return w if w.size != self.n else w[self.own]

    def aggregate_share(self, w: np.ndarray) -> np.ndarray:
        # the average stacked estimate (0 without one), and g(x) = (1/m) sum_i A_i x_i
        stacked = w if w.size == self.n else np.zeros(self.n)
        objective = self.objective
        recorded = objective.trackers
        at_t = (objective.A @ recorded[0] if recorded is not None
                else np.zeros(objective.aggregate_size))
        return np.concatenate([stacked, objective.A @ self._block(w), at_t, objective.b])

    def terms(self, w: np.ndarray, aggregate: np.ndarray | None) -> np.ndarray:
        # one scalar per column (the monitor gathers as many); combine scales them
        r = self.objective.aggregate_size
        x_bar = aggregate[:self.n]
        g, g_t, b_bar = (aggregate[self.n + k * r:self.n + (k + 1) * r] for k in range(3))
        x_i = self._block(w)
        block = float(np.sum((x_i - self.x_star[self.own]) ** 2))
        cost = self.objective.expected_cost(x_i, g)
        tracking = [0.0, 0.0]
        recorded = self.objective.trackers
        if recorded is not None:
            _, ytilde, ztilde = recorded
            grad_y_mean = self.objective.opts.kappa * (g_t - b_bar)
            tracking = [float(np.linalg.norm(ytilde - g_t)),
                        float(np.linalg.norm(ztilde - grad_y_mean))]
        if w.size != self.n:
            return np.array([block, block, block, cost, cost, 0.0, *tracking])
        distance = float(np.sum((w - self.x_star) ** 2))
        return np.array([distance, distance, block, cost, cost, float(np.sum((w - x_bar) ** 2)),
                         *tracking])

    def combine(self, terms: np.ndarray) -> dict[str, float]:
        total = REDUCTIONS["sum"]
        scale = float(self.x_star @ self.x_star)
        distance = total(terms[:, 0])
        cost = total(terms[:, 3])
        return {"error": distance / scale if scale > 0 else distance,
                "distance": distance / len(terms),
                "block_distance": total(terms[:, 2]),
                "cost": cost,
                "objective_gap": cost - self.objective.optimum_value,
                "consensus_gap": float(np.mean(terms[:, 5])),
                "tracking_error": float(np.mean(terms[:, 6])),
                "gradient_tracking_error": float(np.mean(terms[:, 7]))}


def _clip_rows(samples: np.ndarray, radius: float) -> np.ndarray:
    """Each row scaled into the l2 ball of ``radius`` (rows inside are left bitwise as
    they are)."""
    norms = np.linalg.norm(samples, axis=1)
    outside = norms > radius
    if outside.any():
        samples[outside] *= (radius / norms[outside])[:, None]
    return samples


def build_quadratic(options: Mapping[str, object], rank: int, n_agents: int,
                    seed: int) -> QuadraticAggregative:
    """The ``aggregative-quadratic`` builder (the AGGREGATIVE_PROBLEMS signature)."""
    return QuadraticAggregative(QuadraticOptions.of(options), rank, n_agents, seed)
