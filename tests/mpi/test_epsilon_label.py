"""A method's ``epsilon_label`` is the label its summary carries, under mpiexec.

The label a run shows while it runs (the progress line, budget messages, metrics.csv: the
method's ``epsilon_label``, read at set-up) must be the one summary.json and privacy.json
carry at its end (its report's): Chen & Wang's methods under the nominal accounting have
"nominal (C = 1): not a privacy guarantee", under the derived one none, and every other
method none (docs/privacy.md, "Nominal numbers and unbounded losses").
"""
import sys
from pathlib import Path

import pytest

from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.methods.chen2025.ldp_budget import NOMINAL_EPSILON
from mpi_privopt.privacy.ledger import Ledger

sys.path.insert(0, str(Path(__file__).parent))
from contract_cases import BASE, GT, LDP, PAT, PDOP, TVS  # noqa: E402

NOMINAL = ["privacy.accounting=nominal"]
CASES = {
    "ldp-aggregative nominal": (LDP + NOMINAL, NOMINAL_EPSILON),
    "aggregative-gt nominal": (GT + NOMINAL, NOMINAL_EPSILON),
    "aggregative-pat nominal": (PAT + NOMINAL, NOMINAL_EPSILON),
    "pdop-aggregative nominal": (PDOP + NOMINAL, NOMINAL_EPSILON),
    "tvs-aggregative nominal": (TVS + NOMINAL, NOMINAL_EPSILON),
    "ldp-aggregative derived": (LDP, None),
    "tvs-aggregative derived": (TVS, None),
    # user-set constants are the user's claim, not the nominal C = 1
    "ldp-aggregative stated": (LDP + NOMINAL + ["algorithm.sensitivity_x=2.0"], None),
}
# every other method keeps the contract's default, None (the last test here)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_label_shown_while_running_is_the_summarys(comm, shared_dir, name):
    overrides, label = CASES[name]
    cfg = load_config(None, BASE + overrides + ["run.iterations=2", "run.eval_every=1"])
    seen = {}

    def attach(agent, algorithm):
        seen["label"] = algorithm.epsilon_label
        seen["ledger"] = next(l for l in agent.net.listeners if isinstance(l, Ledger))

    result = run(cfg, out=f"{shared_dir}/{name.replace(' ', '-')}", comm=comm, stream=None,
                 on_setup=attach)
    assert seen["label"] == label
    assert seen["ledger"].epsilon_label == label
    assert seen["ledger"].to_dict().get("epsilon_label") == label
    if comm.rank == 0:
        assert result.summary.epsilon_label == label
        assert (result.summary.algorithm_report or {}).get("epsilon_label") == label


def test_only_methods_with_a_nominal_accounting_have_a_label():
    # the contract's default: a method's epsilons are proven bounds unless it says not
    labelled = sorted(name for name, method in ALGORITHMS.items()
                      if isinstance(method.__dict__.get("epsilon_label"), property))
    assert labelled == sorted(["ldp-aggregative", "aggregative-gt", "aggregative-pat",
                               "pdop-aggregative", "tvs-aggregative"])
