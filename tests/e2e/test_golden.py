"""The golden set (tests/golden): every registered algorithm and packaged experiment, short
fixed-seed runs on 4 ranks, against what the code gave before the architecture
renovation (docs/architecture.md).

The records were written on another machine, so they are compared under the rule of
tests/golden/compare.py, which another CPU's BLAS kernel cannot break and a change of result
does: floats normwise to 1e-12 relative (models, ledger), metrics to rtol 1e-12 (timing
excluded), counts and names exact. Bitwise equality is asserted only between two runs on
this machine (resume, placement, concurrent jobs), in the tests that make both runs. A change that is meant to alter a result re-records the set
(``python tests/golden/record.py``) and says why in its commit and in docs/architecture.md.
"""
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))
from cases import RANKS, cases  # noqa: E402
from compare import differences  # noqa: E402
from launch_util import needs_mpiexec, run_mpiexec  # noqa: E402

pytestmark = needs_mpiexec


@pytest.fixture(scope="module")
def new_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("golden")
    proc = run_mpiexec(RANKS, [sys.executable, "-m", "mpi4py", str(GOLDEN / "run_cases.py"),
                               str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_every_case_is_recorded():
    assert sorted(p.name for p in (GOLDEN / "data").iterdir()) == sorted(cases())


@pytest.mark.parametrize("name", sorted(cases()))
def test_run_equals_its_golden_record(new_runs, name):
    assert differences(GOLDEN / "data" / name, new_runs / name) == []
