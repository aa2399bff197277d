"""The golden comparison's rule (tests/golden/compare.py): a BLAS kernel's rounding passes,
a real change of result fails, and everything discrete is exact."""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

GOLDEN = Path(__file__).parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))
from compare import RTOL, differences, json_difference, normwise_difference  # noqa: E402

CASE = GOLDEN / "data" / "default"


def test_rounding_of_another_kernel_passes():
    a = np.array([[1.0, -2.0], [1e-17, 3.0]])
    assert normwise_difference(a, a + 3.3e-16) is None


def test_normwise_not_elementwise_near_zero():
    # relative to the entry itself this is 100%, relative to the array it is rounding
    a = np.array([1.0, 1e-18])
    assert normwise_difference(a, np.array([1.0, 2e-18])) is None


def test_a_change_of_1e_9_relative_fails_and_names_the_worst_difference():
    a = np.linspace(-3.0, 5.0, 7)
    why = normwise_difference(a, a * (1 + 1e-9))
    assert why is not None and "5e-09" in why and "relative" in why


def test_integers_shapes_and_non_finite_entries_are_exact():
    assert normwise_difference(np.arange(3), np.arange(3) + np.array([0, 0, 1])) is not None
    assert normwise_difference(np.zeros(3), np.zeros(4)) is not None
    assert normwise_difference(np.array([np.inf, 1.0]), np.array([1e308, 1.0])) is not None
    assert normwise_difference(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) is None


def test_json_counts_and_names_exact_floats_normwise():
    assert json_difference([[None, "exact"], ["exact", None]],
                           [[None, "exact"], ["rdp", None]]) is not None
    assert json_difference([[None, 20], [20, None]], [[None, 21], [20, None]]) is not None
    assert json_difference([[None, 8.5552009], [float("inf"), None]],
                           [[None, 8.5552009 * (1 + 1e-15)], [float("inf"), None]]) is None
    assert json_difference(8.5552009, 8.5552009 * (1 + 1e-9)) is not None
    assert json_difference([0, 1], [1, 0]) is not None


@pytest.fixture
def copy_of_a_record(tmp_path):
    return Path(shutil.copytree(CASE, tmp_path / "run"))


def test_a_record_equals_itself(copy_of_a_record):
    assert differences(CASE, copy_of_a_record) == []


def test_a_model_moved_by_rounding_passes_and_by_1e_9_fails(copy_of_a_record):
    models = dict(np.load(CASE / "models.npz"))
    key = next(k for k in models if np.issubdtype(models[k].dtype, np.floating))
    for factor, expect_equal in ((1 + 4 * np.finfo(float).eps, True), (1 + 1e-9, False)):
        moved = dict(models, **{key: models[key] * factor})
        np.savez(copy_of_a_record / "models.npz", **moved)
        found = differences(CASE, copy_of_a_record)
        assert (found == []) is expect_equal, found


def test_a_traffic_count_off_by_one_fails(copy_of_a_record):
    traffic = json.loads((copy_of_a_record / "traffic.json").read_text())
    traffic["total"]["bytes"][0][1] += 1
    (copy_of_a_record / "traffic.json").write_text(json.dumps(traffic))
    assert differences(CASE, copy_of_a_record) == ["traffic bytes matrix differs"]


def test_a_ledger_epsilon_moved_beyond_the_rule_fails(copy_of_a_record):
    privacy = json.loads((copy_of_a_record / "privacy.json").read_text())
    privacy["worst_link_epsilon"] *= 1 + 100 * RTOL
    (copy_of_a_record / "privacy.json").write_text(json.dumps(privacy))
    assert any("worst_link_epsilon" in p for p in differences(CASE, copy_of_a_record))


def test_only_the_golden_comparison_reads_the_records_kept_in_the_repository():
    """Records written on another machine are compared only under the rule above; every
    other bitwise assertion in the suite compares two runs made on this machine."""
    tests = Path(__file__).parents[1]
    allowed = {GOLDEN / "compare.py", GOLDEN / "record.py", GOLDEN / "run_cases.py",
               GOLDEN / "cases.py", tests / "e2e" / "test_golden.py", Path(__file__),
               # names the records only to leave them out of its scan of prose
               tests / "unit" / "test_self_contained.py"}
    readers = [p.relative_to(tests) for p in tests.rglob("*.py")
               if p not in allowed and ("golden" / Path("data")).as_posix() in p.read_text()]
    assert readers == []
