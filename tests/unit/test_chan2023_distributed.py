"""The computations of ``reproduce chan2023 --distributed`` that need no MPI: the noise of a
target local epsilon, the closed form of a ring run's observer matrix, the CSV rows."""
import math

import numpy as np
import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.amplification import convex_constant, local_rho
from mpi_privopt.privacy.calibration import calibrate_zcdp_total
from mpi_privopt.privacy.conversions import zcdp_to_eps_tight
from mpi_privopt.methods.chan2023 import reproduce as chan2023
from mpi_privopt.methods.chan2023.reproduce import distributed, observer_figures


@pytest.mark.parametrize("epsilon", distributed.TARGET_EPSILONS)
def test_sigma_for_epsilon_inverts_local_rho_and_the_conversion(epsilon):
    sigma = distributed.sigma_for_epsilon(epsilon)
    rho = local_rho(1.753086, 8.0, sigma)  # the experiment's eta, Delta = 2 x clip 4
    assert rho == pytest.approx(calibrate_zcdp_total(epsilon, 1e-5, "tight"), rel=1e-12)
    assert zcdp_to_eps_tight(rho, 1e-5) == pytest.approx(epsilon, rel=1e-6)
    assert distributed.paper_local(sigma) == pytest.approx(rho, rel=1e-14)
    # the runs book (eta Delta / (1 + eta beta))^2 / (2 sigma^2): eq. (7)'s 1 + eta beta
    assert distributed.local(sigma) == pytest.approx(rho / (1 + 1.753086 * 0.9) ** 2,
                                                     rel=1e-14)


def test_sigma_for_epsilon_matches_the_privacy_doc_and_decreases():
    # docs/privacy.md: sigma = 56.7 gives local epsilon 1.00 (tight conversion)
    assert distributed.sigma_for_epsilon(1.0) == pytest.approx(56.7, abs=0.05)
    sigmas = [distributed.sigma_for_epsilon(e) for e in distributed.TARGET_EPSILONS]
    assert all(a > b for a, b in zip(sigmas, sigmas[1:]))


def test_the_experiment_constants_are_the_papers_r05_case():
    amp = distributed.constants()
    assert (amp.eta, amp.beta, amp.nu, amp.bound) == (1.753086, 0.9, 0.5, "convex")
    assert distributed.radius() == 8.0


def test_ring_closed_form_by_hand():
    amp = distributed.constants()
    C = convex_constant(amp.eta, amp.beta)
    ratio = distributed.ring_ratio_matrix(24, 72, amp)
    assert np.isnan(np.diag(ratio)).all()
    # observer 0 about agent 1: 23 hops downstream, k = 22, T = 11; the last pass is seen
    # in the final release after 71 - 49 = 22 iterations as well
    assert ratio[0, 1] == pytest.approx(C / 11)
    # observer 5 about agent 10: k = 18 (T = 9) mid-run, but agent 10's last-pass record
    # (iteration 58) reaches observer 5 only in the release, k = 71 - 58 = 13 (T = 6)
    assert ratio[5, 10] == pytest.approx(C / 6)
    # the 12 nearest downstream observers (k <= 11 < 12) get local privacy only
    for j in range(24):
        for d in range(1, 13):
            assert ratio[(j + d) % 24, j] == 1.0
    # a ring shorter than one pass leaves the unvisited owners unobserved
    short = distributed.ring_ratio_matrix(6, 4, amp)
    assert np.isnan(short[:, 4:]).all() and not np.isnan(short[1:4, 0]).any()


def test_matrix_rows_skip_unobserved_entries_and_give_the_ratio():
    obs = {"epsilon": np.array([[np.nan, 2.0], [1.0, np.nan]]),
           "rho": np.array([[np.nan, 0.5], [0.25, np.nan]]),
           "releases": np.array([[np.nan, 1], [2, np.nan]])}
    rows = observer_figures.matrix_rows(obs, 0.5, np.array([[np.nan, 1.0], [0.5, np.nan]]))
    assert rows == [
        {"observer": 0, "owner": 1, "epsilon": 2.0, "rho": 0.5, "releases": 1,
         "ratio_to_local": 1.0, "closed_form_ratio": 1.0},
        {"observer": 1, "owner": 0, "epsilon": 1.0, "rho": 0.25, "releases": 2,
         "ratio_to_local": 0.5, "closed_form_ratio": 0.5}]
    summary = observer_figures.matrix_summary(obs, 0.5)
    assert summary["amplified_entries"] == 1 and summary["smallest_at"] == [1, 0]
    assert summary["worst_at"] == [0, 1]


def test_utility_rows_aggregate_runs_per_epsilon():
    def run(eps, gap, worst):
        obs = {"epsilon": np.array([[np.nan, worst], [eps, np.nan]]),
               "rho": np.array([[np.nan, 2.0], [1.0, np.nan]])}
        return {"epsilon": eps, "sigma": 3.0, "local_rho": 1.0, "gap": gap, "observers": obs}

    rows = observer_figures.utility_rows([run(1.0, 10.0, 1.5), run(1.0, 20.0, 2.5),
                                          run(2.0, 5.0, 3.0)])
    assert [r["target_local_epsilon"] for r in rows] == [1.0, 2.0]
    assert rows[0]["mean_gap"] == 15.0 and rows[0]["std_gap"] == pytest.approx(math.sqrt(50))
    assert rows[0]["worst_entry_epsilon_max"] == 2.5
    assert rows[0]["worst_entry_epsilon_median"] == 2.0
    assert rows[0]["amplified_entry_fraction"] == 0.0
    assert math.isnan(rows[1]["std_gap"])


@pytest.mark.parametrize("argv, match", [(["--matrix-ranks", "2"], "a ring needs 3"),
                                         (["--utility-runs", "0"], "must be 1 or more")])
def test_bad_distributed_options_are_refused_before_anything_runs(tmp_path, argv, match):
    with pytest.raises(ConfigError, match=match):
        chan2023.main(["--distributed", "--out", str(tmp_path / "x"), *argv])
    assert not (tmp_path / "x").exists()
