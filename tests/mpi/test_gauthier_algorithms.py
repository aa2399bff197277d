"""zCDP-NFL and its baselines (Gauthier et al. 2024) under mpiexec.

The matrix-form checks recompute every iterate in one process with their own gradient,
sensitivity and calibration code (paper eq. 16 for the ADMM methods), fed the same noise
draws: agent k's mechanism draws ``gaussian(sigma_k(n), (P,))`` once per iteration from
``agent_noise("fast", seed, k)``.
"""
import json
import math

import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt import topology
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.privacy.noise import agent_noise
from mpi_privopt.problems import load_agent_data

DELTA = 1e-5


def run_case(comm, shared_dir, name, overrides, keep=None):
    cfg = load_config(None, overrides)
    holder = {}
    result = run(cfg, out=f"{shared_dir}/{name}", comm=comm, stream=None,
                 on_setup=lambda agent, algorithm: holder.setdefault("algorithm", algorithm))
    result = comm.bcast(result)
    report = (json.loads(open(f"{shared_dir}/{name}/privacy.json").read())
              if comm.rank == 0 else None)
    return cfg, result, comm.bcast(report), holder["algorithm"]


def shards_and_graph(comm, cfg):
    graph = topology.build_graph(cfg.topology.kind, comm.size, seed=cfg.run.seed,
                                 params={"degree": cfg.topology.degree})
    shards = [load_agent_data(cfg.problem, k, comm.size, cfg.run.seed) for k in range(comm.size)]
    return graph, shards


# -- the test's own objective code (independent of mpi_privopt.problems) ---------------------

def clipped_gradient(X, y, w, loss, clip, l1, l2, K):
    z = X @ w
    d = 2.0 * (z - y) if loss == "squared" else np.sign(z - y)
    if clip:
        norms = np.linalg.norm(X, axis=1)
        with np.errstate(divide="ignore"):
            d = d * np.minimum(1.0, clip / (np.abs(d) * norms))
    return X.T @ d / len(y) + (l1 * np.sign(w) + 2.0 * l2 * w) / K


def standard_phi1(eps, delta, T, tau):
    L = math.log(1.0 / delta)
    Phi = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    return Phi * (tau ** (T - 1) - tau ** T) / (1.0 - tau ** T)


def elastic_net_l1(shards):
    X = np.vstack([s[0] for s in shards])
    y = np.concatenate([s[1] for s in shards])
    return 1e-3 * np.abs(X.T @ y).max()


# -- noise-free convergence -----------------------------------------------------------------

# Documented iteration budgets (docs/algorithms/zcdp-nfl.md): rho = 1, eta^(n) = eta/sqrt(n).
CONVERGENCE = [("elastic-net", 1.0, 150), ("lad", 0.3, 400)]


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("problem,eta,iterations", CONVERGENCE)
def test_noise_free_zcdp_nfl_reaches_the_optimum(comm, shared_dir, problem, eta, iterations):
    _, result, _, _ = run_case(comm, shared_dir, f"conv-{problem}",
                               [f"problem.name={problem}", "algorithm.name=zcdp-nfl",
                                "algorithm.noiseless=true", "algorithm.rho=1.0",
                                f"algorithm.eta={eta}", "algorithm.schedule=sqrt",
                                f"run.iterations={iterations}", "run.eval_every=10"])
    assert result.metrics[0].error == pytest.approx(comm.size)  # NE(0) = K
    assert result.summary["final_error"] < 1e-3


@pytest.mark.mpi(min_size=2)
def test_noise_free_p_admm_is_exact_admm_and_reaches_the_optimum(comm, shared_dir):
    cfg, result, _, _ = run_case(comm, shared_dir, "exact-admm",
                                 ["problem.name=ridge", "algorithm.name=p-admm",
                                  "algorithm.noiseless=true", "algorithm.rho=0.8",
                                  "run.iterations=120", "run.eval_every=20"])
    assert result.summary["final_error"] < 1e-12
    # Eq. (3) in matrix form, solved by the test: the same iterates.
    graph, shards = shards_and_graph(comm, cfg)
    K, P, rho, l2 = comm.size, shards[0][0].shape[1], 0.8, 1.0
    A = topology.adjacency(graph)
    d = A.sum(axis=1)
    wt, gamma = np.zeros((K, P)), np.zeros((K, P))
    for _ in range(7):
        w = np.array([np.linalg.solve(2 * X.T @ X / len(y) + (2 * l2 / K + 2 * rho * d[k]) * np.eye(P),
                                      2 * X.T @ y / len(y) - gamma[k]
                                      + rho * (d[k] * wt[k] + A[k] @ wt))
                      for k, (X, y) in enumerate(shards)])
        wt = w
        gamma = gamma + rho * (d[:, None] * wt - A @ wt)
    _, short, _, _ = run_case(comm, shared_dir, "exact-admm-7",
                              ["problem.name=ridge", "algorithm.name=p-admm",
                               "algorithm.noiseless=true", "algorithm.rho=0.8",
                               "run.iterations=7"])
    np.testing.assert_allclose(short.models, w, rtol=0, atol=1e-10)


# -- matrix form with noise -----------------------------------------------------------------

def noisy_admm_matrix_form(graph, shards, seed, T, rho, eta0, clip, eps, tau, loss, l1, l2):
    """Paper eq. (16), with the noise of (8) drawn as the agents draw it."""
    K, P = len(shards), shards[0][0].shape[1]
    A = topology.adjacency(graph)
    D = np.diag(A.sum(axis=1))
    I = np.eye(P)
    L_plus, L_minus, M = np.kron(D + A, I), np.kron(D - A, I), np.kron(D, I)
    sources = [agent_noise("fast", seed, k) for k in range(K)]
    phi1 = standard_phi1(eps, DELTA, T, tau)
    wt, alpha = np.zeros(K * P), np.zeros(K * P)
    for n in range(1, T + 1):
        eta = eta0 / math.sqrt(n)
        f = np.concatenate([clipped_gradient(X, y, wt[k * P:(k + 1) * P], loss, clip, l1, l2, K)
                            for k, (X, y) in enumerate(shards)])
        w = np.linalg.solve(np.eye(K * P) / eta + 2 * rho * M,
                            wt / eta - f - alpha + rho * L_plus @ wt)
        xi = []
        for k, (X, y) in enumerate(shards):
            sensitivity = 2 * clip / (len(y) * (2 * rho * D[k, k] + 1 / eta))
            sigma = sensitivity / math.sqrt(2 * phi1 * tau ** (-(n - 1)))
            xi.append(sources[k].gaussian(sigma, (P,)))
        wt = w + np.concatenate(xi)
        alpha = alpha + rho * L_minus @ wt
    return w.reshape(K, P), alpha.reshape(K, P)


@pytest.mark.mpi(min_size=2)
def test_zcdp_nfl_run_equals_the_matrix_form_fed_the_same_noise(comm, shared_dir):
    T, rho, eta, clip, eps, tau = 25, 0.9, 0.7, 3.0, 5.0, 0.98
    cfg, result, _, algorithm = run_case(
        comm, shared_dir, "mf-noise",
        ["problem.name=elastic-net", "algorithm.name=zcdp-nfl", f"algorithm.rho={rho}",
         f"algorithm.eta={eta}", "algorithm.schedule=sqrt", f"algorithm.tau={tau}",
         f"problem.clip={clip}", f"privacy.epsilon={eps}", f"privacy.delta={DELTA}",
         f"run.iterations={T}", "run.seed=3"])
    graph, shards = shards_and_graph(comm, cfg)
    w, alpha = noisy_admm_matrix_form(graph, shards, 3, T, rho, eta, clip, eps, tau,
                                      "squared", elastic_net_l1(shards), 1.0)
    np.testing.assert_allclose(result.models, w, rtol=0, atol=1e-10)
    np.testing.assert_allclose(algorithm.state.gamma, alpha[comm.rank], rtol=0, atol=1e-10)
    # The noise was really there: the run is not the noise-free one.
    assert np.abs(algorithm.state.wt - algorithm.w).max() > 1e-6


@pytest.mark.mpi(min_size=2)
def test_zcdp_grad_nfl_run_equals_its_own_recursion(comm, shared_dir):
    T, step, clip, eps, tau = 20, 0.12, 2.0, 4.0, 0.99
    cfg, result, _, _ = run_case(
        comm, shared_dir, "grad-noise",
        ["problem.name=lad", "algorithm.name=zcdp-grad-nfl", f"algorithm.step={step}",
         f"algorithm.tau={tau}", f"problem.clip={clip}", f"privacy.epsilon={eps}",
         f"privacy.delta={DELTA}", f"run.iterations={T}", "run.seed=5"])
    graph, shards = shards_and_graph(comm, cfg)
    K, P = comm.size, shards[0][0].shape[1]
    A = topology.adjacency(graph)
    deg = A.sum(axis=1)
    W = np.where(A > 0, 1.0 / (1.0 + np.maximum.outer(deg, deg)), 0.0)
    W += np.diag(1.0 - W.sum(axis=1))
    sources = [agent_noise("fast", 5, k) for k in range(K)]
    phi1 = standard_phi1(eps, DELTA, T, tau)
    wt = np.zeros((K, P))
    for n in range(1, T + 1):
        g = np.array([clipped_gradient(X, y, wt[k], "absolute", clip, 0.0, 0.0, K)
                      for k, (X, y) in enumerate(shards)])
        w = W @ wt - step * g
        sigma = (2 * clip * step / 50) / math.sqrt(2 * phi1 * tau ** (-(n - 1)))
        wt = w + np.array([sources[k].gaussian(sigma, (P,)) for k in range(K)])
    np.testing.assert_allclose(result.models, w, rtol=0, atol=1e-10)


# -- duals and ledgers ----------------------------------------------------------------------

@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("method,problem", [("zcdp-nfl", "lad"), ("eps-delta-nfl", "elastic-net"),
                                            ("p-admm", "ridge")])
def test_network_sum_of_the_duals_stays_zero(comm, shared_dir, method, problem):
    _, _, _, algorithm = run_case(comm, shared_dir, f"duals-{method}",
                                  [f"problem.name={problem}", f"algorithm.name={method}",
                                   "problem.clip=3.0", "privacy.epsilon=1.0",
                                   "run.iterations=30", "run.eval_every=30"])
    total = comm.allreduce(algorithm.state.gamma)
    scale = comm.allreduce(np.abs(algorithm.state.gamma).max(), op=MPI.MAX)
    assert scale > 0
    np.testing.assert_allclose(total, 0.0, rtol=0, atol=1e-12 * max(1.0, scale) * comm.size)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("method,problem", [("zcdp-grad-nfl", "lad"), ("p-admm", "ridge")])
def test_zcdp_baselines_ledger_equals_the_corollary(comm, shared_dir, method, problem):
    T, eps, tau = 24, 3.0, 0.97
    _, result, report, _ = run_case(comm, shared_dir, f"ledger-{method}",
                                    [f"problem.name={problem}", f"algorithm.name={method}",
                                     "problem.clip=2.5", f"privacy.epsilon={eps}",
                                     f"privacy.delta={DELTA}", f"algorithm.tau={tau}",
                                     f"run.iterations={T}", f"run.eval_every={T}"])
    Phi = standard_phi1(eps, DELTA, T, tau) * sum(tau ** (-(n - 1)) for n in range(1, T + 1))
    for row in report["links"]["rho"]:
        for rho in row:
            if rho is not None:
                assert rho == pytest.approx(Phi, rel=1e-10)
    assert max(v for row in report["links"]["epsilon_standard"] for v in row
               if v is not None) == pytest.approx(eps, rel=1e-9)
    assert result.summary["worst_link_epsilon"] <= eps


@pytest.mark.mpi(min_size=2)
def test_eps_delta_nfl_ledger_books_the_classical_gaussian_releases(comm, shared_dir):
    T, eps, tau = 30, 2.0, 0.99
    _, result, report, algorithm = run_case(
        comm, shared_dir, "ledger-eps-delta",
        ["problem.name=elastic-net", "algorithm.name=eps-delta-nfl", "problem.clip=3.0",
         f"privacy.epsilon={eps}", f"privacy.delta={DELTA}", f"algorithm.tau={tau}",
         f"run.iterations={T}", f"run.eval_every={T}"])
    # Basic composition: eps_n geometric with ratio 1/sqrt(tau), summing to eps; delta/T each.
    s = math.sqrt(tau)
    eps_n = [eps * (s ** (T - 1) - s ** T) / (1 - s ** T) * s ** (-(n - 1)) for n in range(1, T + 1)]
    assert sum(eps_n) == pytest.approx(eps, rel=1e-12)
    # sigma_n = Delta_n sqrt(2 ln(1.25/delta_n)) / eps_n, so each release costs
    # rho_n = Delta_n^2 / (2 sigma_n^2) = eps_n^2 / (4 ln(1.25 / delta_n)), whatever Delta_n.
    rho = sum(e * e / (4 * math.log(1.25 * T / DELTA)) for e in eps_n)
    for row in report["links"]["rho"]:
        for value in row:
            if value is not None:
                assert value == pytest.approx(rho, rel=1e-10)
    ratios = np.array(algorithm.release.sigmas) / np.array(algorithm.release.sensitivities)
    expected = [math.sqrt(2 * math.log(1.25 * T / DELTA)) / e for e in eps_n]
    np.testing.assert_allclose(ratios, expected, rtol=1e-12)
    # The same releases, accounted by zCDP: far below the nominal (eps, delta).
    assert result.summary["worst_link_epsilon"] < eps / 3
