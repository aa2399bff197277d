"""Derived sensitivities of Chen & Wang's Algorithm 1 (mpi_privopt/methods/chen2025/sensitivity.py):
the recursions (8), (12), (13) against the closed forms (16)-(20), and against the realised
change of ldp-aggregative's own update (RobustTracking.update) on two adjacent sample
streams (Definition 1) with the received messages held fixed (Definition 3)."""
import dataclasses
import math
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

from mpi_privopt.config import load_config
from mpi_privopt.methods.chen2025.aggregative_parts import RobustTracking, step_sizes
from mpi_privopt.methods.chen2025.ldp_aggregative import resolve_schedules
from mpi_privopt.methods.chen2025.ldp_budget import BlockBudget, sensitivity_exponents
from mpi_privopt.methods.chen2025.sensitivity import (ProofConstants, closed_form_bounds,
                                                      closed_form_conditions,
                                                      closed_form_constants,
                                                      recursion_bounds)

BLOCKS = ("y", "z", "x")


def packaged_schedule(name: str) -> tuple[dict, dict]:
    """(lam0, v) of a packaged experiment, as the method resolves them."""
    cfg = load_config(name)
    schedules = resolve_schedules(cfg.algorithm.params, 5)
    return schedules.lam0, schedules.v


# -- the recursion against the closed forms ----------------------------------------------------

# the packaged experiments' schedules with a_ii = 0.4 (the 5-ring, w_ij = 0.3) and their
# sizes (quadratic: n_i = r = 2; digits: softmax on 8x8 images, n_i = 64 * 10 + 10, r = 1);
# Lipschitz constants small enough for the paper's step conditions (15), (18)
CLOSED_FORM_CASES = [
    ("ldp-aggregative-quadratic", ProofConstants(1.0, 0.02, 0.05, 0.02, 2.0, 1.0, 0.4, 2, 2),
     2000),
    ("ldp-aggregative-digits", ProofConstants(1.0, 0.001, 0.002, 0.001, 1.0, 1.0, 0.4, 650, 1),
     300),
    ({"x": 0.1, "y": 0.5, "z": 0.8}, ProofConstants(0.5, 0.01, 0.05, 0.01, 1.0, 2.0, 0.6, 3, 2),
     3000),
    ({"x": 0.2, "y": 1.0, "z": 1.0}, ProofConstants(2.0, 0.01, 0.02, 0.05, 3.0, 0.5, 0.2, 4, 1),
     3000),
]


def _schedule(case) -> tuple[dict, dict]:
    if isinstance(case, str):
        return packaged_schedule(case)
    delta = 0.05  # Corollary 1(i)'s steps with delta = 0.05
    return case, {"x": 0.5 + 7 * delta, "y": 2 * delta, "z": 3 * delta}


@pytest.mark.parametrize("case, constants, T", CLOSED_FORM_CASES)
def test_recursion_is_below_the_closed_forms_at_every_t(case, constants, T):
    lam0, v = _schedule(case)
    assert closed_form_conditions(constants, lam0, v) == []
    rec = recursion_bounds(constants, lam0, v, T)
    closed = closed_form_bounds(constants, lam0, v, T)
    for b in BLOCKS:
        assert rec[b][0] == closed[b][0] == 0.0
        assert np.all(rec[b][1:] > 0)
        assert np.all(rec[b] <= closed[b]), b  # (17), (19), (20)
    assert np.all(rec["x"] + rec["y"] + rec["z"] <= closed["sum"])  # (16)


def test_sum_bound_16_fails_where_the_step_condition_15_fails():
    # the quadratic's schedule with L_l = 1: (14)'s coefficient of Delta_x (through
    # sqrt(r) L_l lam_y) is far above 1 - |w_ii|/2, and eq. (16) is exceeded
    lam0, v = packaged_schedule("ldp-aggregative-quadratic")
    constants = ProofConstants(1.0, 0.1, 1.0, 0.1, 2.0, 1.0, 0.4, 2, 2)
    failures = closed_form_conditions(constants, lam0, v)
    assert len(failures) == 1 and failures[0].startswith("(15)")
    rec = recursion_bounds(constants, lam0, v, 100)
    closed = closed_form_bounds(constants, lam0, v, 100)
    assert np.any(rec["x"] + rec["y"] + rec["z"] > closed["sum"])
    for b in BLOCKS:  # the per-block forms, far looser, still hold here
        assert np.all(rec[b] <= closed[b])


def test_first_step_is_the_changed_samples_terms():
    # t = 0 -> 1 from Delta^0 = 0: only the 1/(t+1) terms and the couplings through the
    # t+1 values remain (eqs. 8, 13, 12 at t = 0)
    c = ProofConstants(1.5, 0.2, 0.7, 0.3, 2.0, 0.8, 0.4, 3, 2)
    lam0, v = {"x": 0.3, "y": 0.9, "z": 0.6}, {"x": 0.6, "y": 0.1, "z": 0.2}
    rec = recursion_bounds(c, lam0, v, 1)
    sn, sr = math.sqrt(3), math.sqrt(2)
    y1 = 2 * c.d_l * 0.9
    z1 = sr * c.Lbar_h * 0.6 / 0.9 * y1 + 2 * sr * c.L_h * 0.6
    x1 = (sn * c.Lbar_h * 0.3 / 0.9 * y1 + sn * c.L_l * 0.3 / 0.6 * z1
          + 2 * sn * c.L_h * 0.3 + 2 * sn * c.d_z * c.L_l * 0.3 / 0.6)
    assert rec["y"][1] == pytest.approx(y1)
    assert rec["z"][1] == pytest.approx(z1)
    assert rec["x"][1] == pytest.approx(x1)


def test_closed_form_constants_scale_like_one_over_the_degree():
    lam0, v = packaged_schedule("ldp-aggregative-quadratic")
    base = ProofConstants(1.0, 0.02, 0.05, 0.02, 2.0, 1.0, 0.4, 2, 2)
    k1 = closed_form_constants(base, lam0, v)
    k2 = closed_form_constants(dataclasses.replace(base, self_weight=0.7), lam0, v)
    assert k1["mu0"] == pytest.approx(1 + v["y"])
    for b in BLOCKS:  # a smaller |w_ii| needs larger constants (the paper's remark)
        assert k2[b] > k1[b]


def test_bad_constants_are_refused():
    with pytest.raises(ValueError, match="self_weight"):
        ProofConstants(1, 1, 1, 1, 1, 1, 1.0, 2, 2)
    with pytest.raises(ValueError, match="L_h"):
        ProofConstants(-1, 1, 1, 1, 1, 1, 0.4, 2, 2)


# -- brute force: the method's own update on two adjacent streams ------------------------------

class BoundedInstance:
    """A tiny aggregative instance whose Assumption 5 constants are known in closed form.

    l(x; xi) = xi + c_l sin(A x),  xi in [-B, B]^r;
    h(x, y; phi) = c_h (sum log cosh(x - phi_x) + sum log cosh(y - phi_y)) + c_c sin(1^T x + 1^T y)

    so d_l = r (B + c_l), L_l = c_l ||A||, Lbar_l = c_l ||A||^2, L_h = (c_h + c_c) sqrt(max(n_i, r)),
    Lbar_h = c_h + c_c max(n_i, r). ztilde is clipped to l2 <= d_z where it enters the
    x-update (aggregate_vjp), as docs/methods/chen2025.md, "Derived sensitivities" requires.
    The empirical functions average the history 0..t (eq. 3).
    """

    def __init__(self, A, c_l, c_h, c_c, B, d_z, blocks, xi, phi_x, phi_y):
        self.A, self.c_l, self.c_h, self.c_c, self.B, self.d_z = A, c_l, c_h, c_c, B, d_z
        self.aggregate_size, self.block_size = A.shape
        self._blocks = blocks
        self.xi, self.phi_x, self.phi_y = xi, phi_x, phi_y
        self.count = 0

    def initial_blocks(self, n_agents):
        return self._blocks

    def constants(self, self_weight: float) -> ProofConstants:
        n, r = self.block_size, self.aggregate_size
        norm = np.linalg.norm(self.A, 2)
        return ProofConstants(L_h=(self.c_h + self.c_c) * math.sqrt(max(n, r)),
                              Lbar_h=self.c_h + self.c_c * max(n, r),
                              L_l=self.c_l * norm, Lbar_l=self.c_l * norm ** 2,
                              d_l=r * (self.B + self.c_l), d_z=self.d_z,
                              self_weight=self_weight, n_i=n, r=r)

    def aggregate(self, x):
        return self.xi[:self.count].mean(axis=0) + self.c_l * np.sin(self.A @ x)

    def aggregate_vjp(self, x, z):
        norm = np.linalg.norm(z)
        z = z if norm <= self.d_z else z * (self.d_z / norm)
        return self.A.T @ (self.c_l * np.cos(self.A @ x) * z)

    def grad_x(self, x, y):
        s = x.sum() + y.sum()
        return (self.c_h * np.tanh(x - self.phi_x[:self.count]).mean(axis=0)
                + self.c_c * math.cos(s))

    def grad_y(self, x, y):
        s = x.sum() + y.sum()
        return (self.c_h * np.tanh(y - self.phi_y[:self.count]).mean(axis=0)
                + self.c_c * math.cos(s))


K, N_I, R, BOX = 3, 2, 2, 2.0


def tracking(problem) -> RobustTracking:
    """Agent 0 of a 3-ring (w_ij = 0.3, a_ii = 0.4) running Algorithm 1's state, on stubs of
    the network (its received messages are set by hand)."""
    graph = nx.cycle_graph(K)
    neighbours = sorted(graph.neighbors(0))

    def channel(phase, size, buffers=1):
        return SimpleNamespace(received=np.zeros((len(neighbours), size)),
                               outgoing=np.zeros(size))

    net = SimpleNamespace(in_neighbors=neighbours, broadcast_channel=channel)
    agent = SimpleNamespace(n_agents=K, id=0, problem=problem, graph=graph, weights="metropolis",
                            net=net, noise=None)
    return RobustTracking(agent, 0.3, BOX, "ldp-aggregative")


def realised_changes(rng, lam0, v, T, k, base) -> dict[str, np.ndarray]:
    """||v_i^t - v_i'^t||_1 for t = 0..T between streams that differ at index k only (in xi
    and phi, the changed sample at the opposite corner), the received messages (random, the
    same in both worlds) and everything else fixed."""
    xi = base["B"] * rng.choice([-1.0, 1.0], size=(T, R))
    phi_x = rng.uniform(-1, 1, size=(T, N_I))
    phi_y = rng.uniform(-1, 1, size=(T, R))
    xi2, phi_x2, phi_y2 = xi.copy(), phi_x.copy(), phi_y.copy()
    xi2[k], phi_x2[k], phi_y2[k] = -xi[k], -np.sign(phi_x[k]), -np.sign(phi_y[k])
    blocks = [rng.uniform(-1, 1, N_I) for _ in range(K)]
    worlds = []
    for streams in ((xi, phi_x, phi_y), (xi2, phi_x2, phi_y2)):
        problem = BoundedInstance(base["A"], base["c_l"], base["c_h"], base["c_c"], base["B"],
                                  base["d_z"], blocks, *streams)
        worlds.append((problem, tracking(problem)))
    size = worlds[0][1].channel.received.shape
    received = rng.normal(0.0, 0.5, size=(T,) + size)
    out = {b: np.zeros(T + 1) for b in BLOCKS}
    for t in range(T):
        for problem, core in worlds:
            problem.count = t + 1  # line 3: the samples 0..t
            core.channel.received[...] = received[t]
            core.update(step_sizes(lam0, v, t))
        (_, a), (_, b) = worlds
        out["y"][t + 1] = np.abs(a.y - b.y).sum()
        out["z"][t + 1] = np.abs(a.z - b.z).sum()
        out["x"][t + 1] = np.abs(a.X - b.X).sum()
    return out


BASE = {"A": np.array([[0.8, -0.5], [0.3, 0.9]]), "c_l": 0.3, "c_h": 0.4, "c_c": 0.1,
        "B": 1.0, "d_z": 1.5}
T_BRUTE, PAIRS = 25, 40


@pytest.fixture(scope="module")
def brute_force():
    """The realised changes of PAIRS random adjacent pairs (k = 0 first, then random k),
    at the quadratic experiment's schedule."""
    lam0, v = packaged_schedule("ldp-aggregative-quadratic")
    rng = np.random.default_rng(2025)
    changes = [realised_changes(rng, lam0, v, T_BRUTE, k, BASE)
               for k in [0, 0] + list(rng.integers(0, T_BRUTE, PAIRS - 2))]
    problem = BoundedInstance(BASE["A"], BASE["c_l"], BASE["c_h"], BASE["c_c"], BASE["B"],
                              BASE["d_z"], None, None, None, None)
    return lam0, v, problem.constants(0.4), changes


def violations(changes, bounds) -> list[tuple[str, int, float, float]]:
    """(block, t, realised, bound) wherever a realised change exceeds its bound."""
    return [(b, t, float(c[b][t]), float(bounds[b][t]))
            for c in changes for b in BLOCKS for t in range(len(c[b]))
            if c[b][t] > bounds[b][t] * (1 + 1e-9) + 1e-15]


def test_realised_change_is_within_the_recursion(brute_force):
    lam0, v, constants, changes = brute_force
    bounds = recursion_bounds(constants, lam0, v, T_BRUTE)
    assert violations(changes, bounds) == []
    for b in BLOCKS:  # the pairs move every block (the check is not vacuous)
        assert max(c[b][1:].min() for c in changes) > 0
    # the first step of a k = 0 pair is the y bound's changed-sample term exactly:
    # lam_y^0 ||xi_0 - xi_0'||_1 = 2 r B against 2 d_l lam_y^0 = 2 r (B + c_l)
    assert changes[0]["y"][1] == pytest.approx(2 * R * BASE["B"] * lam0["y"])


def test_realised_change_exceeds_the_nominal_constant(brute_force):
    # the finding of docs/privacy-audit.md ("the nominal accounting under-books"): the
    # ledger's Delta_v^t = 1 * (t+1)^-e_v is below what one changed sample does
    lam0, v, _, changes = brute_force
    exponents = sensitivity_exponents(v["x"], v["y"], v["z"])
    ratio = {b: max(c[b][t] / BlockBudget(1.0, exponents[b], 1.0, 0.0).sensitivity(t)
                    for c in changes for t in range(1, T_BRUTE + 1)) for b in BLOCKS}
    assert all(r > 1 for r in ratio.values()), ratio


def test_planted_bug_halving_the_2_d_l_term_is_caught(brute_force):
    # d_l enters the recursion only through (8)'s 2 d_l lam_y/(t+1): halving d_l halves it
    lam0, v, constants, changes = brute_force
    planted = recursion_bounds(dataclasses.replace(constants, d_l=constants.d_l / 2),
                               lam0, v, T_BRUTE)
    found = violations(changes, planted)
    assert found and any(block == "y" for block, *_ in found)


def test_method_page_table_of_effective_constants():
    # docs/methods/chen2025.md, "Derived sensitivities": Delta_v^t (t+1)^e_v on the bounded
    # instance at the quadratic experiment's schedule
    lam0, v = packaged_schedule("ldp-aggregative-quadratic")
    problem = BoundedInstance(BASE["A"], BASE["c_l"], BASE["c_h"], BASE["c_c"], BASE["B"],
                              BASE["d_z"], None, None, None, None)
    rec = recursion_bounds(problem.constants(0.4), lam0, v, 2000)
    exponents = sensitivity_exponents(v["x"], v["y"], v["z"])
    table = {"y": (10.7, 421, 10.9, 8.9), "z": (13.4, 1.87e3, 38.9, 28.9),
             "x": (15.9, 2.42e3, 40.2, 24.1)}
    for b, row in table.items():
        for t, value in zip((1, 10, 100, 2000), row):
            assert rec[b][t] * (t + 1) ** exponents[b] == pytest.approx(value, rel=5e-3), (b, t)
