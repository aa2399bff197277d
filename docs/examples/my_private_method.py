r"""Your own private method, outside the package: a noisy DGD (docs/architecture.md,
"Your own private method").

Agent k, for n = 1, 2, ...::

    v_k      = a_kk xt_k^(n-1) + sum_l a_kl xt_l^(n-1)      (what arrived last time)
    x_k^(n)  = v_k - alpha grad f_k(xt_k^(n-1))
    xt_k^(n) = x_k^(n) + N(0, sigma^2 I)                    phase "x": broadcast xt_k^(n)

Replacing one record moves x_k^(n) by at most D = 2 alpha c1 / M_k (c1 = problem.clip),
so each release is rho-zCDP with rho = D^2 / (2 sigma^2). x_k^(n) never leaves the agent:
the mechanism perturbs it and hands the network a Release (payload and event), which the
ledger books on every link it crosses.

Run it from the repository's root (the module is found next to its config file)::

    mpiexec -n 4 python -m mpi4py -m mpi_privopt run docs/examples/my_private_method.toml
"""
import dataclasses

import numpy as np

from mpi_privopt.methods import Algorithm
from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.mechanisms import GaussianMechanism
from mpi_privopt.privacy.schedules import ConstantSchedule


def needs_clipping(name, cfg):
    """The sensitivity needs a per-sample gradient bound (checked before MPI starts)."""
    if not cfg.problem.clip > 0:
        raise ConfigError(f"{name!r} needs problem.clip > 0 (its sensitivity is "
                          "2 step clip / M_k)", "set problem.clip, e.g. 1.0")


class NoisyDGD(Algorithm):
    __doc__ = __doc__

    name = "my-noisy-dgd"
    summary = "DGD with constant Gaussian noise (docs/examples/my_private_method.py)"
    private = True

    @dataclasses.dataclass
    class Params:
        step: float = 0.05
        sigma: float = 1.0

    positive = ("step", "sigma")
    config_checks = (needs_clipping,)

    def __init__(self, agent, params):
        super().__init__(agent, params)
        problem = agent.problem
        self.a_kk, self.a_k = agent.mixing_row()
        self.channel = agent.net.broadcast_channel("x", problem.n_features, buffers=2)
        self.mechanism = GaussianMechanism(agent.noise, owner=agent.id, unit="record")
        self.schedule = ConstantSchedule(params.sigma)
        self.sensitivity = 2 * params.step * problem.clip / problem.n_samples
        self.x = np.zeros(problem.n_features)

    def step(self, n):
        ch, D = self.channel, self.sensitivity
        v = ch.average(self.a_kk, self.a_k)
        self.x = v - self.params.step * self.agent.problem.subgradient(ch.last_sent)
        ch.exchange(self.mechanism.release(self.x, D, self.schedule.scale(n, D),
                                           out=ch.outgoing))

    @property
    def estimate(self):
        return self.x

    def planned_events(self, first, last):
        # the schedule is public: a resume past privacy.epsilon is refused before releasing
        D = self.sensitivity
        return [self.mechanism.event(D, self.schedule.scale(n, D))
                for n in range(first, last + 1)]
