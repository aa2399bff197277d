"""Every private method's releases move by at most their booked sensitivity, under mpiexec.

For every private method (``ALGORITHMS[name].private``; a new one fails until
``contract_cases.py`` has its SensitivityCase), a short noisy run with a white-box probe on
every agent (``sensitivity_probes.py``): at every release, the realised change of the
released clean value between the two worlds of the audit's replace-one canary, worst over
a few directions (the audit's among them), over the sensitivity the release was booked
with, must be at most 1 (the audit's formula, :func:`mpi_privopt.audit.shift.shift_ratio`).
The probe's midpoint world must be what the method really released, and the canary must
move something (else the check could not fail).

Chen & Wang's methods under their nominal constants (C_v = 1) are not bounded: those cases
are expected to fail (strict, so the day they book a bound the marker has to go), and the
check runs them with covering constants (contract_cases.AGGREGATIVE_CONSTANTS), both under
``privacy.accounting = "nominal"``; the default, derived sensitivities of ldp-aggregative,
pdop-aggregative and tvs-aggregative are checked as they are. Planted
bugs (this test process only): a halved booked sensitivity is caught for an iterate method
and for token-admm.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mpi4py import MPI

from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.methods import ALGORITHMS

sys.path.insert(0, str(Path(__file__).parent))
from contract_cases import (BASE, LDP, NOMINAL_SENSITIVITY, PDOP, SENSITIVITY, TVS,  # noqa: E402
                            SENSITIVITY_ITERATIONS, SensitivityCase, sensitivity_case_for)
from sensitivity_probes import PROBES  # noqa: E402

PRIVATE = sorted(name for name in ALGORITHMS if ALGORITHMS[name].private)
#: a ratio above 1 by more than this (relative) is a release moved beyond its booking; the
#: linearised methods and token-admm attain 1 up to rounding
TOLERANCE = 1e-9
#: the largest |midpoint world - released clean value| a probe may see
MISMATCH = 1e-9


class SensitivityExceeded(AssertionError):
    """A release moved by more than its booked sensitivity."""


def worst_shift(comm, out: Path, name: str, case: SensitivityCase,
                derived: bool = False) -> dict:
    """Run ``case`` with its probe on every agent; the worst ratio, the releases checked and
    the worst mismatch over every rank. Chen & Wang's cases run the nominal accounting
    (their constants are its C_v) unless ``derived``: then ldp-aggregative's default,
    derived one (docs/methods/chen2025.md, "Derived accounting")."""
    nominal = (["privacy.accounting=nominal"] if name in NOMINAL_SENSITIVITY and not derived
               else [])
    cfg = load_config(None, BASE + case.overrides + nominal + [
        f"run.iterations={SENSITIVITY_ITERATIONS}", f"run.eval_every={SENSITIVITY_ITERATIONS}"])
    assert cfg.algorithm.name == name
    probes = []
    run(cfg, out=str(out), comm=comm, stream=None,
        on_setup=lambda agent, algorithm: probes.append(PROBES[case.probe](agent, algorithm)))
    probe, = probes
    blocks = {}
    for part in comm.allgather(getattr(probe, "by_block", {})):
        for block, ratio in part.items():
            blocks[block] = max(blocks.get(block, 0.0), ratio)
    return {"worst": comm.allreduce(probe.worst, op=MPI.MAX),
            "releases": comm.allreduce(probe.releases),
            "mismatch": comm.allreduce(probe.mismatch, op=MPI.MAX), "by_block": blocks}


def check(comm, out: Path, name: str, case: SensitivityCase, derived: bool = False) -> float:
    result = worst_shift(comm, out, name, case, derived)
    assert result["releases"] > 0, f"{name}: no release was probed"
    assert result["mismatch"] <= MISMATCH, (
        f"{name}: the probe's midpoint world is {result['mismatch']:.3g} from what the method "
        "released: its counterfactual no longer follows the method")
    assert result["worst"] > 0, f"{name}: the canary moved no release: the check cannot fail"
    if not result["worst"] <= 1.0 + TOLERANCE:
        raise SensitivityExceeded(
            f"{name}: the canary moves a release by {result['worst']:.6g} times its booked "
            f"sensitivity ({result['releases']} releases probed"
            + "".join(f"; block {b} {r:.4g}" for b, r in sorted(result["by_block"].items()))
            + ")")
    return result["worst"]


@pytest.fixture
def out(shared_dir, request) -> Path:
    return Path(shared_dir) / request.node.name.replace("[", "-").replace("]", "")


def test_every_private_method_has_a_sensitivity_case():
    missing = [name for name in PRIVATE if name not in SENSITIVITY]
    for name in missing:
        with pytest.raises(LookupError, match="no sensitivity case"):
            sensitivity_case_for(name)
    assert not missing, (f"private methods without a sensitivity case: {missing}; add them "
                         "to tests/mpi/contract_cases.py (SENSITIVITY)")
    assert sorted(SENSITIVITY) == PRIVATE, "sensitivity cases of non-private methods"
    assert set(NOMINAL_SENSITIVITY) <= set(SENSITIVITY)


def test_a_private_method_without_a_case_is_refused_with_what_to_add():
    with pytest.raises(LookupError, match="add one to tests/mpi/contract_cases.py"):
        sensitivity_case_for("a-new-private-method")


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", PRIVATE)
def test_every_release_moves_by_at_most_its_booked_sensitivity(comm, out, name):
    check(comm, out, name, sensitivity_case_for(name))


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", sorted(NOMINAL_SENSITIVITY))
@pytest.mark.xfail(strict=True, raises=SensitivityExceeded,
                   reason="nominal constants are not a bound")
def test_nominal_constants_are_a_bound(comm, out, name):
    check(comm, out, name, NOMINAL_SENSITIVITY[name])


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name, case", [("ldp-aggregative", SensitivityCase(LDP, "core")),
                                        ("pdop-aggregative", SensitivityCase(PDOP, "core")),
                                        ("tvs-aggregative", SensitivityCase(TVS, "core-fresh"))])
def test_the_derived_sensitivities_are_a_bound(comm, out, name, case):
    # the methods as they run by default: no stated constants, the proof's recursion for
    # each one's own schedule with the problem's record bounds and the enforced clips
    check(comm, out, name, case, derived=True)


# -- the check catches what it is for (planted in this test process only) ---------------------

@pytest.fixture
def token_sensitivity_halved(monkeypatch):
    from mpi_privopt.methods.chan2023 import token_admm
    sensitivity = token_admm.x_sensitivity
    monkeypatch.setattr(token_admm, "x_sensitivity",
                        lambda eta, beta, radius: 0.5 * sensitivity(eta, beta, radius))


@pytest.mark.mpi(min_size=2)
def test_a_halved_iterate_sensitivity_is_caught(comm, out, iterate_sensitivity_halved):
    with pytest.raises(SensitivityExceeded, match="2 times"):
        check(comm, out, "zcdp-nfl", sensitivity_case_for("zcdp-nfl"))


@pytest.mark.mpi(min_size=2)
def test_a_halved_token_sensitivity_is_caught(comm, out, token_sensitivity_halved):
    with pytest.raises(SensitivityExceeded, match="2 times"):
        check(comm, out, "token-admm", sensitivity_case_for("token-admm"))
