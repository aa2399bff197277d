"""Your own problem or method (``problem.module``, ``algorithm.module``): every misuse is
refused with one message naming the key, the value and the fix; the examples load.

Each test writes its module next to its config in a fresh folder under a name of its own
(imports are cached per name), and the registries and ``sys.path`` are restored after it.
"""
from __future__ import annotations

import itertools
import sys
import textwrap
from pathlib import Path

import pytest

from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.prelaunch import check_run_input
from mpi_privopt.problems.registry import AGGREGATIVE_PROBLEMS
from mpi_privopt.user_modules import METHOD_MEMBERS, OBJECTIVE_MEMBERS

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
_names = itertools.count()

#: a method that meets the contract (the tests break one thing at a time)
METHOD = '''
import dataclasses
import numpy as np
from mpi_privopt.methods import Algorithm

class Mine(Algorithm):
    name = "{name}"
    summary = "a test method"

    @dataclasses.dataclass
    class Params:
        step: float = 0.1

    def step(self, n):
        pass

    @property
    def estimate(self):
        return np.zeros(1)
'''

#: a factory whose objective meets the aggregative contract
PROBLEM = '''
import numpy as np

class Objective:
    block_size = aggregate_size = 1
    def observe(self, count=1, *, fresh=False): pass
    def aggregate(self, x): return x
    def aggregate_vjp(self, x, z): return z
    def grad_x(self, x, y): return x
    def grad_y(self, x, y): return y
    def initial_block(self): return np.zeros(1)
    def evaluator(self, mode): return None

def build(options, rank, n_agents, seed):
    return Objective()
'''


@pytest.fixture(autouse=True)
def restored_registries():
    methods, problems, path = set(ALGORITHMS), dict(AGGREGATIVE_PROBLEMS), list(sys.path)
    yield
    for name in set(ALGORITHMS) - methods:  # a packaged method imported meanwhile stays
        del ALGORITHMS[name]
    AGGREGATIVE_PROBLEMS.clear()
    AGGREGATIVE_PROBLEMS.update(problems)
    sys.path[:] = path


def write(tmp_path: Path, source: str, config: str) -> tuple[str, str]:
    """Write a module of a fresh name (``{module}`` in ``config``) and its config beside it;
    return (config path, module name)."""
    module = f"user_module_{next(_names)}_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    path = tmp_path / "run.toml"
    path.write_text(textwrap.dedent(config).replace("{module}", module))
    return str(path), module


def method_config(tmp_path, source, extra="", problem='name = "ridge"'):
    return write(tmp_path, source,
                 f'[problem]\n{problem}\n[algorithm]\nmodule = "{{module}}:Mine"\n{extra}')


def problem_config(tmp_path, source, problem_keys='name = "mine"', attribute="build"):
    return write(tmp_path, source,
                 f'[problem]\n{problem_keys}\nmodule = "{{module}}:{attribute}"\n'
                 '[algorithm]\nname = "ldp-aggregative"\n')


def refused(path: str, overrides=(), ranks: int | None = None) -> str:
    with pytest.raises(ConfigError) as err:
        if ranks is None:
            load_config(path, list(overrides))
        else:
            check_run_input(path, list(overrides), ranks)
    return str(err.value)


# -- methods ----------------------------------------------------------------------------

def test_a_method_of_ones_own_loads_registers_and_round_trips(tmp_path):
    path, module = method_config(tmp_path, METHOD.format(name="my-own"), "step = 0.3")
    cfg = load_config(path)
    assert cfg.algorithm.name == "my-own" and cfg.algorithm.params.step == 0.3
    assert ALGORITHMS["my-own"].__module__ == module
    written = cfg.to_dict()["algorithm"]
    assert written["module"] == f"{module}:Mine" and written["name"] == "my-own"
    again = tmp_path / "again.toml"
    again.write_text(cfg.to_toml())
    assert load_config(str(again)).to_dict() == cfg.to_dict()  # a resume's config.toml


def test_a_packaged_config_writes_no_module_key():
    written = load_config("default").to_dict()
    assert "module" not in written["algorithm"] and "module" not in written["problem"]


@pytest.mark.parametrize("value", ["no_colon", "a:b:c", "a b:C", ":Mine", "mod:"])
def test_a_value_not_of_the_form_module_colon_class(tmp_path, value):
    path, _ = write(tmp_path, "", f'[algorithm]\nmodule = "{value}"\n')
    message = refused(path)
    assert f"algorithm.module = {value!r} is not of the form 'package.module:ClassName'" \
        in message and "how to fix" in message


def test_a_value_that_is_not_a_string(tmp_path):
    path, _ = write(tmp_path, "", "[algorithm]\nmodule = 5\n")
    assert "algorithm.module = 5 is not of the form" in refused(path)


def test_a_module_that_is_not_importable(tmp_path):
    path, _ = write(tmp_path, "", '[algorithm]\nmodule = "nowhere_to_be_found:Mine"\n')
    message = refused(path)
    assert "no module nowhere_to_be_found is importable" in message
    assert str(tmp_path) in message and "PYTHONPATH" in message


def test_a_module_whose_import_fails(tmp_path):
    path, module = method_config(tmp_path, "x = 1 +\n")
    message = refused(path)
    assert f"importing {module} raised SyntaxError" in message and "line 1" in message
    assert f"python -c 'import {module}'" in message


def test_a_module_that_raises_when_imported(tmp_path):
    path, module = method_config(tmp_path, "raise RuntimeError('no licence')\n")
    assert f"importing {module} raised RuntimeError: no licence" in refused(path)


def test_a_module_that_needs_a_missing_package(tmp_path):
    path, module = method_config(tmp_path, "import not_installed_anywhere\n")
    message = refused(path)
    assert "install not_installed_anywhere, which " + module + " imports" in message


def test_no_such_attribute(tmp_path):
    path, module = write(tmp_path, "import math\ndef helper(): pass\n",
                         '[algorithm]\nmodule = "{module}:Missing"\n')
    message = refused(path)
    assert f"module {module}" in message and "has no 'Missing'" in message
    assert "name the ClassName (the module defines: helper)" in message  # not math


@pytest.mark.parametrize("source", ["Mine = 3\n", "def Mine(): pass\n", "class Mine: pass\n"])
def test_not_an_algorithm_subclass(tmp_path, source):
    path, _ = method_config(tmp_path, source)
    message = refused(path)
    assert "is not a subclass of mpi_privopt's Algorithm" in message
    assert "class MyMethod(Algorithm)" in message


@pytest.mark.parametrize("remove, fault", [
    ('    name = "{name}"\n', "no name"),
    ('    summary = "a test method"\n', "no summary"),
    ("    def step(self, n):\n        pass\n", "no step"),
    ("    @property\n    def estimate(self):\n        return np.zeros(1)\n", "no estimate"),
    ("    @dataclasses.dataclass\n", "Params is not a @dataclasses.dataclass"),
])
def test_a_member_missing(tmp_path, remove, fault):
    source = METHOD.replace(remove, "").format(name="my-own")
    path, module = method_config(tmp_path, source)
    message = refused(path)
    assert f"algorithm.module = '{module}:Mine': class Mine does not meet the method " \
        f"contract: {fault}" in message
    assert set(METHOD_MEMBERS) <= {"name", "summary"}


def test_an_empty_name(tmp_path):
    path, _ = method_config(tmp_path, METHOD.format(name=""))
    assert "name = '' is not a non-empty string" in refused(path)


def test_an_unknown_problem_kind(tmp_path):
    source = METHOD.format(name="my-own").replace(
        '    summary = "a test method"\n', '    summary = "a test method"\n    problem_kind = "aggregativ"\n')
    path, _ = method_config(tmp_path, source)
    assert "problem_kind = 'aggregativ' is not one of 'consensus', 'aggregative'" in refused(path)


def test_a_parameter_named_like_an_algorithm_key(tmp_path):
    source = METHOD.format(name="my-own").replace("step: float = 0.1", "module: str = 'x'")
    path, _ = method_config(tmp_path, source)
    assert "Params has a field 'module', a key of [algorithm] itself" in refused(path)


def test_a_name_given_that_is_not_the_classes(tmp_path):
    path, module = method_config(tmp_path, METHOD.format(name="my-own"), 'name = "other"')
    message = refused(path)
    assert f"algorithm.name = 'other', but algorithm.module = '{module}:Mine' names the " \
           "method 'my-own'" in message


@pytest.mark.parametrize("name", ["dgd", "ldp-aggregative"])
def test_a_packaged_methods_name(tmp_path, name):
    path, _ = method_config(tmp_path, METHOD.format(name=name))
    message = refused(path)
    assert f"its name {name!r} is taken by a packaged method" in message
    assert "a name of its own" in message


def test_another_user_method_of_the_same_name(tmp_path):
    (tmp_path / "a").mkdir()
    load_config(method_config(tmp_path / "a", METHOD.format(name="my-own"))[0])
    second, _ = method_config(tmp_path, METHOD.format(name="my-own"))
    assert "its name 'my-own' is taken by another method" in refused(second)


def test_switching_the_module_drops_the_files_method_keys(tmp_path):
    path, module = write(tmp_path, METHOD.format(name="my-own"),
                         '[algorithm]\nname = "dgd"\nstep = 0.2\n')
    cfg = load_config(path, [f"algorithm.module={module}:Mine"])
    assert cfg.algorithm.name == "my-own" and cfg.algorithm.params.step == 0.1


# -- problems ---------------------------------------------------------------------------

def test_a_problem_of_ones_own_loads_and_is_aggregative(tmp_path):
    path, module = problem_config(tmp_path, PROBLEM)
    cfg, _ = check_run_input(path, [], 3)
    assert AGGREGATIVE_PROBLEMS["mine"].__module__ == module
    assert cfg.to_dict()["problem"]["module"] == f"{module}:build"


def test_a_problem_needs_its_own_name(tmp_path):
    path, module = problem_config(tmp_path, PROBLEM, problem_keys="")
    message = refused(path)
    assert f"problem.module = '{module}:build' is set, but problem.name is not" in message
    assert '[problem] name = "my-problem"' in message


@pytest.mark.parametrize("name", ["ridge", "polynomial", "aggregative-quadratic"])
def test_a_packaged_problems_name(tmp_path, name):
    path, _ = problem_config(tmp_path, PROBLEM, problem_keys=f'name = "{name}"')
    message = refused(path)
    assert f"problem.name = {name!r} is taken by a packaged problem" in message
    assert "a name of its own" in message


def test_another_user_problem_of_the_same_name(tmp_path):
    (tmp_path / "a").mkdir()
    load_config(problem_config(tmp_path / "a", PROBLEM)[0])
    second, _ = problem_config(tmp_path, PROBLEM)
    assert "problem.name = 'mine' is taken by another problem" in refused(second)


def test_a_problem_module_not_importable(tmp_path):
    path, _ = write(tmp_path, "", '[problem]\nname = "mine"\nmodule = "absent_mod:build"\n')
    assert "problem.module = 'absent_mod:build': no module absent_mod is importable" \
        in refused(path)


def test_a_problem_value_not_of_the_form(tmp_path):
    path, _ = write(tmp_path, "", '[problem]\nname = "mine"\nmodule = "build"\n')
    assert "problem.module = 'build' is not of the form 'package.module:factory'" \
        in refused(path)


def test_a_problem_value_that_is_not_a_string(tmp_path):
    path, _ = write(tmp_path, "", '[problem]\nname = "mine"\nmodule = 5\n')
    assert "problem.module = 5 has the wrong type" in refused(path)


def test_a_factory_that_is_not_callable(tmp_path):
    path, module = problem_config(tmp_path, "build = [1, 2]\n")
    message = refused(path)
    assert f"problem.module = '{module}:build' is a list, not a problem factory" in message


def test_a_factory_with_the_wrong_signature(tmp_path):
    path, _ = problem_config(tmp_path, "def build(options, rank):\n    pass\n")
    message = refused(path)
    assert "cannot be called as factory(options, rank, n_agents, seed)" in message
    assert "(options, rank)" in message


@pytest.mark.parametrize("member", [*OBJECTIVE_MEMBERS, "block_size"])
def test_an_objective_missing_a_member(tmp_path, member):
    if member == "block_size":
        source = PROBLEM.replace("block_size = aggregate_size = 1", "aggregate_size = 1")
    else:
        source = PROBLEM.replace(f"    def {member}(", "    def renamed_away(", 1)
    path, module = problem_config(tmp_path, source)
    load_config(path)  # the static checks pass: the members exist only once built
    message = refused(path, ranks=3)
    assert f"problem.module = '{module}:build' builds an objective (Objective) without {member}" in message


def test_a_size_that_is_not_a_positive_integer(tmp_path):
    path, _ = problem_config(tmp_path, PROBLEM.replace("block_size = aggregate_size = 1",
                                                       "block_size, aggregate_size = 1, 0.5"))
    assert "without aggregate_size" in refused(path, ranks=3)


def test_a_factory_that_raises(tmp_path):
    source = PROBLEM.replace("    return Objective()", "    return Objective(options)")
    path, module = problem_config(tmp_path, source)
    message = refused(path, ranks=3)
    assert f"problem.module = '{module}:build': building agent 0's objective raised " \
           "TypeError" in message


def test_a_factorys_own_message_passes_through(tmp_path):
    source = "from mpi_privopt.errors import ConfigError\n" + PROBLEM.replace(
        "    return Objective()",
        "    raise ConfigError('[problem.options] size = -1 must be >= 1', 'set it to 1')")
    path, _ = problem_config(tmp_path, source)
    message = refused(path, ranks=3)
    assert message.startswith("[problem.options] size = -1 must be >= 1")


def test_a_problem_of_ones_own_needs_an_aggregative_method(tmp_path):
    path, _ = write(tmp_path, PROBLEM,
                    '[problem]\nname = "mine"\nmodule = "{module}:build"\n'
                    '[algorithm]\nname = "dgd"\n')
    assert "algorithm 'dgd' cannot solve the aggregative problem 'mine'" in refused(path)


# -- the worked examples ----------------------------------------------------------------

def test_the_examples_load_and_check():
    cfg, _ = check_run_input(str(EXAMPLES / "my_aggregative_problem.toml"), [], 4)
    assert cfg.problem.name == "swarm" and cfg.algorithm.name == "ldp-aggregative"
    cfg, _ = check_run_input(str(EXAMPLES / "my_private_method.toml"), [], 4)
    assert cfg.algorithm.name == "my-noisy-dgd" and ALGORITHMS["my-noisy-dgd"].private


def test_the_example_method_refuses_a_problem_without_clipping():
    message = refused(str(EXAMPLES / "my_private_method.toml"), ["problem.clip=0"])
    assert "'my-noisy-dgd' needs problem.clip > 0" in message


def test_the_example_problem_refuses_an_unknown_option():
    message = refused(str(EXAMPLES / "my_aggregative_problem.toml"),
                      ["problem.options.radius=2"], ranks=4)
    assert "unknown [problem.options] radius for swarm" in message


def test_check_accepts_the_problem_example_and_names_its_module(capsys):
    from mpi_privopt.cli import main
    with pytest.raises(SystemExit) as stop:
        main(["check", str(EXAMPLES / "my_aggregative_problem.toml"), "--ranks", "4"])
    out = capsys.readouterr().out
    assert stop.value.code == 0, out
    assert "OK for 4 ranks" in out and "swarm  (module my_aggregative_problem:build)" in out


@pytest.mark.parametrize("example, start", [("my_aggregative_problem", "import numpy as np"),
                                            ("my_private_method", "import dataclasses")])
def test_the_architecture_page_shows_the_examples_code(example, start):
    page = (EXAMPLES.parent / "architecture.md").read_text()
    code = (EXAMPLES / f"{example}.py").read_text()
    shown = page[page.index("## Your own problem or method"):]
    assert "```python\n" + code[code.index(start):] + "```" in shown
    toml = (EXAMPLES / f"{example}.toml").read_text()
    assert "```toml\n" + toml[toml.index("["):] + "```" in shown
    assert f"mpiexec -n 4 python -m mpi4py -m mpi_privopt run docs/examples/{example}.toml" \
        in shown


def test_the_example_method_meets_the_method_contract():
    # the contract test iterates the methods registered when it is collected, which a
    # user's method is not: run its per-method checks on the example, once loaded
    contract = Path(__file__).with_name("test_method_contract.py")
    if not contract.exists():
        pytest.skip("tests/unit/test_method_contract.py is not on this branch yet")
    import importlib.util
    spec = importlib.util.spec_from_file_location("method_contract_checks", contract)
    checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checks)
    load_config(str(EXAMPLES / "my_private_method.toml"))
    checks.test_method_meets_the_contract("my-noisy-dgd")
    if hasattr(checks, "test_problem_kind_is_known_to_the_problem_registry"):
        checks.test_problem_kind_is_known_to_the_problem_registry("my-noisy-dgd")


# -- a run directory's own config.toml ------------------------------------------------------

@pytest.mark.parametrize("mark", ["checkpoint", "summary.json"])
def test_a_module_inside_a_run_directory_is_not_imported(tmp_path, monkeypatch, mark):
    # run --resume DIR reads DIR/config.toml; a module put into DIR (a run directory may
    # come from someone else) must not run on every rank
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ran = tmp_path / "it-ran"
    path, module = method_config(
        run_dir, f"open({str(ran)!r}, 'w').close()\n" + METHOD.format(name="planted"))
    (run_dir / mark).mkdir() if mark == "checkpoint" else (run_dir / mark).write_text("{}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    message = refused(path)
    assert f"{module} is in the run directory {run_dir}" in message
    assert "not searched for modules" in message and "if you trust this module" in message
    assert not ran.exists() and "planted" not in ALGORITHMS
    # the same module in the current directory (the user's own) loads
    (elsewhere / f"{module}.py").write_text((run_dir / f"{module}.py").read_text())
    assert load_config(path).algorithm.name == "planted" and ran.exists()


def test_a_config_beside_its_module_outside_a_run_directory_still_finds_it(tmp_path,
                                                                          monkeypatch):
    path, module = method_config(tmp_path, METHOD.format(name="beside"))
    monkeypatch.chdir(tmp_path.parent)
    assert load_config(path).algorithm.name == "beside"
