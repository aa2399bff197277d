"""The privacy audit under mpiexec: it passes on the correct build of every audited method,
and it catches each planted bug (docs/privacy-audit.md); the membership attack stays within
the Gaussian-DP bound and, for token-admm, exceeds it under the noise bug.

The planted bugs are deliberately broken builds made by monkeypatching the release and
noise path in this test process only (every rank patches itself; nothing outside these
tests ever sees them):

* ``noise-0.1``: the Gaussian mechanism draws 0.1 times the booked noise;
* ``half-sensitivity``: the iterate release calibrates (and books) half the sensitivity;
* ``reused-noise``: every noise source returns its first draw again at each call;
* ``unnoised-link``: agent 0's clean value crosses one of its links in place of its noisy
  release (the ledger still books the noisy one).

Fixed seeds everywhere: the verdicts do not change from run to run.
"""
import math
from statistics import NormalDist

import numpy as np
import pytest

from mpi_privopt.audit.runner import run_audit
from mpi_privopt.config import load_config
from mpi_privopt.network import Network
from mpi_privopt.prelaunch import build_graph
from mpi_privopt.privacy.mechanisms import GaussianMechanism
from mpi_privopt.privacy.noise import FastNoise

BASE = ["problem.name=ridge", "problem.samples=50", "problem.features=8", "problem.clip=5.0",
        "topology.kind=erdos-renyi", "topology.degree=3.0", "privacy.epsilon=10.0",
        "privacy.delta=1e-5", "run.iterations=30", "run.eval_every=30", "run.seed=0"]
METHODS = {
    "zcdp-nfl": ["algorithm.name=zcdp-nfl", "algorithm.eta=1.0", "algorithm.schedule=sqrt"],
    "eps-delta-nfl": ["algorithm.name=eps-delta-nfl", "algorithm.mechanism=analytic"],
    "zcdp-grad-nfl": ["algorithm.name=zcdp-grad-nfl", "algorithm.step=0.1"],
    "p-admm": ["algorithm.name=p-admm"],
}
#: enough trials for every method's bound to reach half its ledger mu (eps-delta-nfl's
#: basic composition leaves it mu ~ 0.18 and needs ~6200)
TRIALS = {"eps-delta-nfl": 8000}


def audit(comm, shared_dir, name, method="zcdp-nfl", **kwargs):
    cfg = load_config(None, BASE + METHODS[method])
    kwargs.setdefault("trials", TRIALS.get(method, 4000))
    report = run_audit(cfg, target=0, out=f"{shared_dir}/{name}", comm=comm, **kwargs)
    return comm.bcast(report)


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_correct_build_passes_and_the_bound_stays_below_the_ledger(comm, shared_dir,
                                                                       method):
    report = audit(comm, shared_dir, f"ok-{method}", method, all_links=True)
    assert report["passed"], report["flags"]
    bound, ledger = report["bound"]["mu_lower"], report["ledger_mu"]
    # a PASS that could have failed: with no trial wrong the bound exceeds the ledger's
    assert report["verdict"] == "PASS" and report["best_possible_mu"] > ledger
    assert bound <= ledger
    # a bound worth having: the test is powerful enough to reach half the ledger's mu
    assert bound >= 0.5 * ledger
    # the ledger's mu is that of the exact Gaussian composition of what it booked
    assert report["ledger_mu"] == pytest.approx(report["ledger_mu_from_rho"], rel=1e-9)
    assert report["booked_mu"] == pytest.approx(ledger, rel=1e-9)
    # the canary moves the release by at most the booked sensitivity: the linearised
    # methods exactly (the step's real response equals Lemma I's bound), P-ADMM less
    # (through the data's curvature)
    if method == "p-admm":
        assert 0.5 < report["worst_shift_ratio"] < 1.0
    else:
        assert report["worst_shift_ratio"] == pytest.approx(1.0, rel=1e-9)
    # the method's counterfactual entry reproduces the value the method released
    assert report["worst_mismatch"] < 1e-9
    # the membership attack stays within the Gaussian-DP bound, which is far below the
    # (epsilon, delta) one
    attack = report["membership"]
    assert attack["advantage_lower"] <= attack["gdp_bound"]
    assert attack["gdp_bound"] < attack["eps_delta_bound"]


# -- planted bugs ---------------------------------------------------------------------------

@pytest.fixture
def noise_scaled_down(monkeypatch):
    draw = GaussianMechanism.draw
    monkeypatch.setattr(GaussianMechanism, "draw",
                        lambda self, event, shape: 0.1 * draw(self, event, shape))


@pytest.fixture
def noise_reused(monkeypatch):
    gaussian = FastNoise.gaussian
    first: dict = {}

    def same_draw(self, sigma, shape):
        key = (id(self), np.shape(np.empty(shape)))
        if key not in first:
            first[key] = gaussian(self, 1.0, shape)
        return sigma * first[key]
    monkeypatch.setattr(FastNoise, "gaussian", same_draw)


@pytest.fixture
def link_unnoised(monkeypatch, comm):
    """Agent 0's clean value replaces its noisy one on its link to its smallest neighbour
    only."""
    graph = build_graph(load_config(None, BASE + METHODS["zcdp-nfl"]), comm.size)
    sender, tag = 0, 4242
    receiver = min(graph.neighbors(sender))
    release = GaussianMechanism.release
    clean = {}

    def keep_clean(self, value, sensitivity, scale, out=None, record=None):
        if out is not None:  # a wire release (the audit's trials have no send buffer)
            clean["value"] = np.array(value, dtype=float, copy=True)
        return release(self, value, sensitivity, scale, out=out, record=record)

    account = Network._completed_broadcast

    def deliver_clean(self, out, phase, counters, elapsed):
        if self.rank == sender and receiver in self.out_neighbors:
            comm.Send(clean["value"], dest=receiver, tag=tag)
        if self.rank == receiver and sender in self.in_neighbors:
            row = list(self.in_neighbors).index(sender)
            got = np.empty_like(out[row])
            comm.Recv(got, source=sender, tag=tag)
            out[row] = got
        return account(self, out, phase, counters, elapsed)

    monkeypatch.setattr(GaussianMechanism, "release", keep_clean)
    monkeypatch.setattr(Network, "_completed_broadcast", deliver_clean)
    return sender, receiver


@pytest.mark.mpi(min_size=3)
def test_noise_scaled_by_a_tenth_is_caught_by_the_mu_bound(comm, shared_dir, noise_scaled_down):
    report = audit(comm, shared_dir, "bug-noise")
    assert not report["passed"]
    assert report["bound"]["mu_lower"] > report["ledger_mu"]
    assert any(f.startswith("mu:") for f in report["flags"])


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("method", ["zcdp-nfl", "p-admm"])
def test_halved_sensitivity_is_caught_by_the_mu_bound(comm, shared_dir, method,
                                                      iterate_sensitivity_halved):
    report = audit(comm, shared_dir, f"bug-half-{method}", method)
    assert report["bound"]["mu_lower"] > report["ledger_mu"]
    assert [f for f in report["flags"] if f.startswith("mu:")]
    # the noise itself is what was booked: only the shift gives the bug away
    assert not [f for f in report["flags"] if f.startswith("trial-")]
    assert report["worst_shift_ratio"] > 1.5


@pytest.mark.mpi(min_size=3)
def test_reused_noise_fails_the_independence_test(comm, shared_dir, noise_reused):
    report = audit(comm, shared_dir, "bug-reuse")
    assert not report["passed"]
    assert report["trial_noise"]["independence"]["p_value"] < 1e-6
    assert report["trial_noise"]["independence"]["correlation"] > 0.9
    assert any(f.startswith("trial-independence") for f in report["flags"])


@pytest.mark.mpi(min_size=3)
def test_an_unnoised_link_fails_the_residual_variance_test(comm, shared_dir, link_unnoised):
    sender, receiver = link_unnoised
    report = audit(comm, shared_dir, "bug-link", all_links=True)
    assert not report["passed"]
    bad = report["wire"][f"{sender}->{receiver}"]["variance"]
    assert bad["variance_ratio"] < 1e-12 and bad["p_value"] < 1e-6
    flagged = [f for f in report["flags"] if f.startswith("wire-variance")]
    assert flagged == [f"wire-variance on link {sender}->{receiver}: p = {bad['p_value']:.3g}"]
    # the trials see the release path, which is intact: only the wire gives the bug away
    assert report["bound"]["mu_lower"] <= report["ledger_mu"]


# -- token-admm: the canary record, seen by the next holder on the ring ----------------------

TOKEN = ["algorithm.name=token-admm", "problem.name=singular", "problem.samples=20",
         "problem.features=16", "problem.radius=0.5", "topology.kind=ring",
         "algorithm.schedule=ring", "algorithm.reuse=true", "algorithm.eta=1.753086",
         "algorithm.beta=0.9", "algorithm.clip=4.0", "algorithm.sigma=20.0",
         "algorithm.feature_bound=0.5", "run.iterations=100", "run.eval_every=100",
         "run.seed=0"]


def token_audit(comm, shared_dir, name, overrides=(), trials=4000):
    cfg = load_config(None, TOKEN + list(overrides))
    return comm.bcast(run_audit(cfg, target=0, trials=trials, out=f"{shared_dir}/{name}",
                                comm=comm))


@pytest.mark.mpi(min_size=3)
def test_token_admm_passes_and_books_exactly_the_realised_shift(comm, shared_dir):
    report = token_audit(comm, shared_dir, "token-ok")
    assert report["passed"], report["flags"]
    assert report["link"] == [0, 1]  # the ring hands agent 0's token to agent 1
    ledger = report["ledger_mu"]
    # the canary record (agent 0's first) is used once per lap over agent 0's records:
    # agent 0 holds the token ceil(100 / K) times and has ceil(20 / K) records
    holds, records = -(-100 // comm.size), -(-20 // comm.size)
    uses = -(-holds // records)
    assert report["releases"] == uses
    # the booked sensitivity is eta Delta / (1 + eta beta) (eq. (7) divides the gradient
    # step by 1 + eta beta), Delta = 2 clip = 8, sigma = 20
    shift = 1.753086 * 8.0 / (1 + 1.753086 * 0.9)
    assert ledger == pytest.approx(math.sqrt(uses) * shift / 20.0, rel=1e-9)
    # the canary's records (+-clip u) differ by exactly Delta: the shift attains the bound
    # (it was 1 / (1 + eta beta) = 0.388 while the ledger booked eta Delta)
    assert report["worst_shift_ratio"] == pytest.approx(1.0, rel=1e-9)
    reachable = report["shift_mu"]
    assert reachable == pytest.approx(ledger, rel=1e-9)
    assert report["bound"]["mu_lower"] <= ledger
    assert report["bound"]["mu_lower"] >= 0.5 * ledger
    attack = report["membership"]
    assert attack["advantage_lower"] <= attack["gdp_bound"]


@pytest.mark.mpi(min_size=3)
def test_token_admm_membership_attack_is_real_and_within_the_gdp_bound(comm, shared_dir):
    # sigma = 10: the ledger's bound (mu = 3.1 on 5 ranks) is far from 0 and from 1
    report = token_audit(comm, shared_dir, "token-mia", ["algorithm.sigma=10.0"], 8000)
    assert report["passed"], report["flags"]
    attack = report["membership"]
    assert attack["trials"] == 4000  # half choose the rule, half measure it
    assert attack["gdp_bound"] == pytest.approx(
        2 * NormalDist().cdf(report["ledger_mu"] / 2) - 1, rel=1e-12)
    assert attack["advantage_lower"] <= attack["gdp_bound"]
    assert not attack["exceeds_bound"]
    # "in" adds the canary's gradient, "out" none: half the replace-one shift, so the best
    # test of the realised releases has advantage 2 Phi(shift_mu / 4) - 1 (independently of
    # the ledger); the attack is that test along u, its rule chosen on other trials
    best = 2 * NormalDist().cdf(report["shift_mu"] / 4) - 1
    assert attack["advantage_lower"] <= best
    assert attack["advantage_lower"] > 0.1  # not vacuous
    assert attack["advantage"] == pytest.approx(best, abs=0.05)


@pytest.mark.mpi(min_size=3)
def test_token_admm_noise_scaled_down_at_its_source_is_caught(comm, shared_dir, monkeypatch):
    gaussian = FastNoise.gaussian
    monkeypatch.setattr(FastNoise, "gaussian",
                        lambda self, sigma, shape: 0.1 * gaussian(self, sigma, shape))
    report = token_audit(comm, shared_dir, "token-bug")
    assert report["bound"]["mu_lower"] > report["ledger_mu"]
    assert any(f.startswith("mu:") for f in report["flags"])
    # the observer of the link sees it too: its membership advantage exceeds the bound
    attack = report["membership"]
    assert attack["advantage_lower"] > attack["gdp_bound"]
    assert attack["exceeds_bound"]
