"""token-admm without MPI: the records problem, the public plan, and the bad-input refusals."""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from mpi_privopt.methods.chan2023.token_admm import TokenADMMParams, replace_one_radius
from mpi_privopt.methods.chan2023.token_plan import plan_chain
from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.problems import ProblemConfig, load_agent_data
from mpi_privopt.problems.consensus.local import LocalProblem
from mpi_privopt.problems.consensus.losses import LOSSES
from mpi_privopt.problems.consensus.records import Records, pooled_problem
from mpi_privopt.methods.chan2023.problems import make_singular, singular_counts

TOKEN = ["algorithm.name=token-admm", "problem.name=singular", "problem.samples=40"]


def records(K=3, N=10, P=5, loss="squared"):
    A, b, _ = make_singular(N, P, 18, 0.01, 0.5)
    counts = singular_counts(N, K)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return [Records(LocalProblem(A[offsets[k]:offsets[k + 1]], b[offsets[k]:offsets[k + 1]],
                                 loss, 0.01, 0.1, K), counts, k) for k in range(K)], A, b


def test_singular_blocks_are_contiguous_and_cover_the_records():
    cfg = ProblemConfig(name="singular", samples=10, features=5, noise=0.01, radius=0.5)
    A, b, _ = make_singular(10, 5, 18, 0.01, 0.5)
    blocks = [load_agent_data(cfg, k, 3, 0) for k in range(3)]
    assert [len(y) for _, y in blocks] == [4, 3, 3]
    np.testing.assert_array_equal(np.vstack([X for X, _ in blocks]), A)
    np.testing.assert_array_equal(np.concatenate([y for _, y in blocks]), b)


def test_record_gradient_is_the_papers_and_clips():
    parts, A, b = records()
    x = np.linspace(-1, 1, 5)
    r = parts[1]
    for j in range(r.n_samples):
        i = r.record_id(j)
        assert r.owner(i) == 1
        np.testing.assert_allclose(r.gradient(j, x), 2 * (A[i] @ x - b[i]) * A[i], rtol=1e-13)
        g = r.gradient(j, 10 * x, clip=0.1)
        assert np.linalg.norm(g) <= 0.1 * (1 + 1e-12)
        np.testing.assert_allclose(g / np.linalg.norm(g),
                                   r.gradient(j, 10 * x) / np.linalg.norm(r.gradient(j, 10 * x)))


def test_shares_sum_to_the_mean_objective():
    parts, A, b = records()
    x = np.linspace(-1, 1, 5)
    F = np.mean((A @ x - b) ** 2) + 0.01 * np.abs(x).sum() + 0.1 * x @ x
    assert sum(p.value(x) for p in parts) == pytest.approx(F, rel=1e-13)
    pooled = pooled_problem(parts[0].local, [(p.X, p.y) for p in parts])
    assert pooled.value(x) == pytest.approx(F, rel=1e-13)


def test_a_nonsmooth_loss_is_refused():
    A, b, _ = make_singular(4, 3, 18, 0.01, 0.5)
    with pytest.raises(ConfigError, match="smooth per-record loss"):
        Records(LocalProblem(A, b, "absolute", 0.0, 0.1, 1), [4], 0)


def test_ring_plan_uses_each_holders_next_record():
    plan = plan_chain("ring", nx.cycle_graph(4), 8, [2, 2, 2, 2], 0)
    assert plan.holders.tolist() == [0, 1, 2, 3] * 2
    assert plan.records.tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert plan.seen(2, 1) == [(0, 1), (1, 0)]
    assert plan.seen(0, 3) == [(1, 2), (2, 1), (3, 0)]


def test_sample_plan_relays_to_each_owner():
    g = nx.path_graph(4)
    plan = plan_chain("sample", g, 6, [2, 2, 2, 2], 5)
    assert plan.holders[plan.steps].tolist() == plan.owners.tolist()
    assert plan.owners.tolist() == (plan.records // 2).tolist()
    for a, b in zip(plan.holders[:-1], plan.holders[1:]):
        assert a == b or g.has_edge(a, b)


def test_too_few_records_without_reuse_says_how_many():
    with pytest.raises(ConfigError, match="agent 0 needs 3 and holds 2"):
        plan_chain("ring", nx.cycle_graph(4), 9, [2, 2, 2, 2], 0)
    plan = plan_chain("ring", nx.cycle_graph(4), 9, [2, 2, 2, 2], 0, reuse=True)
    assert plan.records.tolist()[-1] == 0


def test_ring_without_hamiltonian_cycle_and_disconnected_walk_are_refused():
    with pytest.raises(ConfigError, match="Hamiltonian cycle"):
        plan_chain("ring", nx.star_graph(3), 4, [5] * 4, 0)
    g = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(ConfigError, match="connected"):
        plan_chain("walk", g, 4, [5] * 4, 0)


@pytest.mark.parametrize("override,match", [
    ("algorithm.clip=0", "algorithm.clip = 0"),
    ("algorithm.clip=-1", "algorithm.clip = -1"),
    ("algorithm.sigma=-0.1", "algorithm.sigma = -0.1"),
    ("algorithm.chains=0", "algorithm.chains"),
    ("algorithm.schedule=star", "algorithm.schedule"),
    ("algorithm.bound=tight", "algorithm.bound"),
    ("problem.clip=1", "problem\\] clip"),
    ("problem.name=polynomial", "samples records, and problem 'polynomial' has none"),
])
def test_bad_parameters_are_refused(override, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, TOKEN + ["algorithm.feature_bound=0.5", override])


def test_an_amplified_bound_needs_nu():
    with pytest.raises(ConfigError, match="needs the smoothness nu"):
        load_config(None, TOKEN)
    load_config(None, TOKEN + ["algorithm.bound=local"])


def test_delta_from_clip_or_a_declared_domain():
    squared = LOSSES["squared"]
    assert replace_one_radius(TokenADMMParams(clip=4.0), squared) == 8.0
    p = TokenADMMParams(domain=10.0, feature_bound=0.5, label_bound=2.0)
    assert replace_one_radius(p, squared) == pytest.approx(2 * 2 * (0.5 * 10 + 2) * 0.5)
    assert math.isinf(replace_one_radius(TokenADMMParams(), squared))


def test_a_release_of_several_records_is_booked_per_owner_and_record():
    from mpi_privopt.privacy.events import ZCDPEvent
    from mpi_privopt.privacy.ledger import Ledger
    from mpi_privopt.privacy.release import Release
    from mpi_privopt.privacy.report import privacy_report

    ledgers = [Ledger(k, [(k + 1) % 3], 1e-5) for k in range(3)]
    # agent 0 passes a token to 1 carrying records of agents 2 (two of them) and 0
    token = Release(np.zeros(2), ZCDPEvent(0.5, owner=2, record=4),
                    (ZCDPEvent(0.25, owner=2, record=5), ZCDPEvent(1.0, owner=0, record=0)))
    ledgers[0].on_release(token, [1], "token", 1)
    # and later agent 2's record 4 again (a reuse): it composes with the first use
    ledgers[0].on_release(Release(np.zeros(2), ZCDPEvent(0.5, owner=2, record=4)), [1],
                          "token", 2)
    report = privacy_report([l.to_dict() for l in ledgers], 1e-5, "fast")
    obs = report["observers"]
    assert obs["rho"][1][2] == pytest.approx(1.0)   # record 4: 0.5 + 0.5 (worst record)
    assert obs["rho"][1][0] == pytest.approx(1.0)
    assert obs["releases"][1][2] == 2               # the worst record's two uses
    assert obs["rho"][2][0] is None                 # observer 2 saw nothing of agent 0
    assert obs["worst"]["observer"] == 1 and obs["worst"]["owner"] in (0, 2)
    assert report["links"]["rho"][2][1] == obs["rho"][1][2]  # the same figure, transposed


@pytest.mark.parametrize("sets,message", [
    (["topology.kind=star", "algorithm.schedule=ring"], "needs a Hamiltonian cycle"),
    (["algorithm.schedule=walk", "run.iterations=1100"], "agent 0 needs"),
    (["algorithm.start=9"], "algorithm.start = 9 is not an agent"),
])
def test_check_refuses_a_schedule_that_cannot_run_before_launch(sets, message):
    import subprocess
    import sys
    args = [sys.executable, "-m", "mpi_privopt", "check", "token-admm-elastic-net",
            "--ranks", "4"] + [w for s in sets for w in ("--set", s)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert message in proc.stderr and "how to fix" in proc.stderr
    assert "Traceback" not in proc.stderr
