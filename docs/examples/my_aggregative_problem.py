r"""Your own aggregative problem in 60 lines: a swarm that keeps its centroid at a rally
point (docs/architecture.md, "Your own aggregative problem").

Robot i (agent i of m) wants to stay at its own station p_i (private) while the swarm's
centroid g(x) = (1/m) sum_i x_i stays at the public rally point b::

    f_i(x_i, y) = 0.5 ||x_i - p_i||^2 + 0.5 kappa ||y - b||^2,        g_i(x_i) = x_i

It knows p_i only through noisy sightings p_i + phi, phi ~ N(0, noise^2 I). The optimum is
closed form: g* = (mean_j p_j + kappa b) / (1 + kappa), x_i* = p_i - kappa (g* - b).

    mpiexec -n 4 python -m mpi4py -m mpi_privopt run docs/examples/my_aggregative_problem.toml
"""
import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.metrics import REFERENCE, AgentMetrics, Metric
from mpi_privopt.problems.sampling import sampling_rng

OPTIONS = {"dim": 2, "kappa": 1.0, "noise": 0.1}  # [problem.options] and their defaults


class Swarm:
    def __init__(self, options, rank, n_agents, seed):
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:  # a ConfigError ends the run with this message, before MPI starts
            raise ConfigError(f"unknown [problem.options] {', '.join(unknown)} for swarm",
                              f"valid options: {', '.join(OPTIONS)}")
        opts = {**OPTIONS, **options}
        self.dim, self.kappa, self.noise = int(opts["dim"]), opts["kappa"], opts["noise"]
        self.block_size = self.aggregate_size = self.dim      # n_i and r (public)
        self.rank, self.b = rank, np.full(self.dim, 0.5)
        self.p = np.random.default_rng([seed, 0x5A, rank]).uniform(-1, 1, self.dim)
        self.rng = sampling_rng(seed, rank)                   # the agent's own samples
        self.count, self.total, self.x_star = 0, np.zeros(self.dim), None

    def observe(self, count=1, *, fresh=False):               # draw, keep the history
        if fresh:
            self.count, self.total = 0, np.zeros(self.dim)
        sightings = self.p + self.noise * self.rng.standard_normal((count, self.dim))
        self.count, self.total = self.count + count, self.total + sightings.sum(axis=0)

    def aggregate(self, x_i):                                  # g_i(x_i)
        return x_i

    def aggregate_vjp(self, x_i, z):                           # grad g_i(x_i) z
        return z

    def grad_x(self, x_i, y):                                  # grad_x f_i^t(x_i, y)
        return x_i - self.total / self.count

    def grad_y(self, x_i, y):                                  # grad_y f_i^t(x_i, y)
        return self.kappa * (y - self.b)

    def initial_block(self):
        return np.zeros(self.dim)

    def reference_share(self):                    # simulation only: gathered once
        return self.p

    def use_reference(self, shares):
        p = np.array(shares)
        g = (p.mean(axis=0) + self.kappa * self.b) / (1 + self.kappa)
        self.x_star = p - self.kappa * (g - self.b)            # row j: x_j*

    def own(self, w):  # a stacked estimate (ldp-aggregative) or the own block only
        return w if w.size == self.dim else w[self.rank * self.dim:(self.rank + 1) * self.dim]

    def cost(self, w, g):                        # f_i(x_i, g(x)), the expected function
        x_i = self.own(w)
        return 0.5 * np.sum((x_i - self.p) ** 2) + 0.5 * self.kappa * np.sum((g - self.b) ** 2)

    def evaluator(self, mode):                   # metrics: problems/metrics.py
        if mode == REFERENCE:                    # the aggregate is the centroid g(x)
            return AgentMetrics(
                [Metric("block_distance", "sum"), Metric("cost", "sum")],
                lambda w, g: (np.sum((self.own(w) - self.x_star[self.rank]) ** 2), self.cost(w, g)),
                aggregate=self.own, aggregate_size=self.dim)
        if mode == "local":                      # scalars only: the station term
            return AgentMetrics([Metric("station_cost", "sum")],
                                lambda w, _: (0.5 * np.sum((self.own(w) - self.p) ** 2),))
        return None


def build(options, rank, n_agents, seed):
    """problem.module = "my_aggregative_problem:build": agent ``rank``'s objective."""
    return Swarm(options, rank, n_agents, seed)
