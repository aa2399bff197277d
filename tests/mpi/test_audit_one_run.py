"""The one-run audit under mpiexec (issue 16, part 3): 1000 canaries in one zCDP-NFL run on a
1000-feature problem (20 iterations, privacy.epsilon = 4) give an epsilon lower bound below
the ledger's and above anything 8 canaries could show; with the noise planted at a tenth of
its booked scale (privacy.epsilon = 2) the bound exceeds the ledger's."""
import pytest

from mpi_privopt.audit.one_run import best_possible_bound
from mpi_privopt.audit.one_run_runner import run_one_run_audit
from mpi_privopt.config import load_config
from mpi_privopt.privacy.mechanisms import GaussianMechanism

BASE = ["problem.name=ridge", "problem.samples=1000", "problem.features=1000",
        "problem.clip=5.0", "topology.kind=ring",
        "privacy.delta=1e-5", "algorithm.name=zcdp-nfl", "algorithm.eta=1.0",
        "algorithm.schedule=sqrt", "run.iterations=20", "run.evaluate=none", "run.seed=0"]


def one_run(comm, shared_dir, name, epsilon):
    cfg = load_config(None, BASE + [f"privacy.epsilon={epsilon}"])
    return comm.bcast(run_one_run_audit(cfg, target=0, out=f"{shared_dir}/{name}",
                                        comm=comm))


@pytest.mark.mpi(min_size=2)
def test_a_thousand_canaries_in_one_run_bound_epsilon_below_the_ledger(comm, shared_dir):
    report = one_run(comm, shared_dir, "ok", 4.0)
    assert report["canaries"] == 1000 and report["releases"] == 20
    assert report["worst_nonlinearity"] < 1e-9  # the release is affine in the canary term
    assert report["canary_mu"] == pytest.approx(report["ledger_mu"], rel=1e-9)
    assert report["passed"] and report["epsilon_lower"] <= report["ledger_epsilon"]
    # a PASS that could have failed: every guess right would refute more than the ledger
    assert report["verdict"] == "PASS" and report["best_possible"] > report["ledger_epsilon"]
    # worth showing: more than the papers' 8-dimensional models could ever certify
    assert report["epsilon_lower"] > best_possible_bound(8, 8, 1e-5)


@pytest.mark.mpi(min_size=2)
def test_noise_at_a_tenth_of_its_booked_scale_is_caught_in_one_run(comm, shared_dir,
                                                                  monkeypatch):
    draw = GaussianMechanism.draw
    monkeypatch.setattr(GaussianMechanism, "draw",
                        lambda self, event, shape: 0.1 * draw(self, event, shape))
    # one run cannot refute more than about log(guesses / 0.05): a budget below that
    report = one_run(comm, shared_dir, "bug", 2.0)
    assert report["ledger_epsilon"] < report["best_possible"]
    assert not report["passed"]
    assert report["epsilon_lower"] > report["ledger_epsilon"]
