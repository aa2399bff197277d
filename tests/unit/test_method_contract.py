"""Every registered method against the Method contract (docs/architecture.md, "The Method
contract"): each hook is declared once, on ``Algorithm``, with its default; a method
overrides a hook with the same kind and arity; no method defines a near-miss of a hook's
name (``setup_notes`` would silently never be called); and nothing outside the registry
probes a method with ``getattr``, and no module outside the families (``methods/``)
compares a method's name.
"""
from __future__ import annotations

import ast
import difflib
import inspect
import re
from pathlib import Path

import pytest

import mpi_privopt
from mpi_privopt.methods import ALGORITHMS, Algorithm
from mpi_privopt.problems.registry import PROBLEM_KINDS, problem_kind, problems_of_kind

PACKAGE = Path(mpi_privopt.__file__).parent
METHODS = sorted(ALGORITHMS)

#: what the base declares that is not a hook (the registry's and Python's own)
NOT_HOOKS = {"Params"}


def _kind(value) -> str:
    """How a class attribute is declared: classmethod, property, method or attribute."""
    if isinstance(value, classmethod):
        return "classmethod"
    if isinstance(value, staticmethod):
        return "staticmethod"
    if isinstance(value, property):
        return "property"
    if inspect.isfunction(value):
        return "method"
    return "attribute"


def _hooks() -> dict[str, str]:
    """Every public name the base declares (its class body and its annotations), with
    its kind."""
    names = {n for n in vars(Algorithm) if not n.startswith("_")}
    names |= {n for n in Algorithm.__annotations__ if not n.startswith("_")}
    return {n: _kind(inspect.getattr_static(Algorithm, n, None)) for n in names - NOT_HOOKS}


HOOKS = _hooks()


def _arity(value) -> int:
    func = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
    if isinstance(func, property):
        func = func.fget
    return len(inspect.signature(func).parameters)


def test_the_base_declares_every_hook_the_package_uses():
    # the hooks this contract was written for; a hook dropped from the base fails here
    expected = {"name", "summary", "private", "requires_undirected", "problem_kind",
                "uses_records", "pure_headline", "min_agents", "no_checkpoint", "blocks",
                "positive", "non_negative", "choices", "param_checks", "config_checks",
                "release", "setup_note", "check_agent_count", "validate", "noise_schedule",
                "validate_config", "check_graph", "check_setup", "audit", "share_basis",
                "block_budgets", "released_after", "step", "estimate", "planned_events",
                "extend", "report"}
    assert expected <= set(HOOKS), sorted(expected - set(HOOKS))


def test_every_hook_has_a_docstring_or_a_comment_on_the_base():
    source = inspect.getsource(Algorithm)
    for name, kind in HOOKS.items():
        if kind == "attribute":
            # an attribute is documented in the class docstring or by a #: comment
            assert (f"{name} :" in Algorithm.__doc__
                    or re.search(rf"#:.*\n(\s*#:.*\n)*\s*{name}\s*[:=]", source)), name
        else:
            assert inspect.getdoc(getattr(Algorithm, name)), name


@pytest.mark.parametrize("name", METHODS)
def test_method_meets_the_contract(name):
    cls = ALGORITHMS[name]
    assert issubclass(cls, Algorithm) and cls.name == name
    assert isinstance(cls.summary, str) and cls.summary
    for hook, kind in HOOKS.items():
        value = inspect.getattr_static(cls, hook, None)
        base = inspect.getattr_static(Algorithm, hook, None)
        if kind == "attribute":
            if base is not None:  # the default's type, e.g. a bool stays a bool
                assert isinstance(value, type(base)), (name, hook, value)
            continue
        # a method given as a shared function (planned_events = planned_iterate_events)
        # is still a method; a classmethod stays a classmethod, a property a property
        assert _kind(value) == kind, (name, hook, _kind(value), kind)
        assert _arity(value) == _arity(base), (name, hook)
    assert not inspect.isabstract(cls), name
    assert dataclasses_fields_have_defaults(cls.Params), name


def dataclasses_fields_have_defaults(params) -> bool:
    import dataclasses
    return all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
               for f in dataclasses.fields(params))


@pytest.mark.parametrize("name", METHODS)
def test_problem_kind_is_known_to_the_problem_registry(name):
    kind = ALGORITHMS[name].problem_kind
    assert kind in PROBLEM_KINDS
    assert problems_of_kind(kind), kind  # some problem of that kind exists
    if ALGORITHMS[name].uses_records:
        assert kind == "consensus"  # records are of one mean objective


def test_every_problem_has_a_kind_some_method_solves():
    solved = {ALGORITHMS[n].problem_kind for n in METHODS}
    assert set(PROBLEM_KINDS) == solved
    assert problem_kind("aggregative-quadratic") == "aggregative"
    assert problem_kind("ridge") == problem_kind("polynomial") == "consensus"


@pytest.mark.parametrize("name", METHODS)
def test_audit_hook_returns_a_method_audit_or_none(name):
    from mpi_privopt.audit.method_audit import MethodAudit
    audit = ALGORITHMS[name].audit()
    assert audit is None or isinstance(audit, MethodAudit)
    if audit is not None:
        # only a private method has a bound to audit
        assert ALGORITHMS[name].private


def _near_misses(names, where: str) -> list[str]:
    return [f"{where}: {n!r} looks like the hook {close[0]!r}"
            for n in sorted(set(names) - set(HOOKS))
            if (close := difflib.get_close_matches(n, HOOKS, n=1, cutoff=0.85))]


def test_no_method_defines_a_near_miss_of_a_hook_name():
    # what a method class declares, and what its module's methods assign on self
    problems = []
    for name in METHODS:
        cls = ALGORITHMS[name]
        for klass in cls.__mro__[:cls.__mro__.index(Algorithm)]:
            problems += _near_misses([n for n in vars(klass) if not n.startswith("_")],
                                     f"{klass.__name__} ({name})")
        source = Path(inspect.getfile(cls)).read_text()
        problems += _near_misses(re.findall(r"\bself\.(\w+)\s*=[^=]", source),
                                 f"{Path(inspect.getfile(cls)).name} ({name})")
    assert not problems, problems


def test_the_near_miss_check_catches_a_typo():
    assert _near_misses(["setup_notes", "planned_event", "estimates"], "x")
    assert not _near_misses(["setup_note", "release_sensitivity", "plans_for"], "x")


# --- the guard: no probing of methods outside the registry --------------------------------

#: files that may call getattr, each on what (never a method: the contract declares hooks)
GETATTR_ALLOWED = {
    "methods/contract.py": "Params fields named by positive/non_negative/choices",
    "methods/chen2025/aggregative_frameworks.py": "per-block Params fields (sigma_x, ...)",
    "methods/chen2025/aggregative_gt.py": "per-block Params fields (sensitivity_y, ...)",
    "methods/chen2025/ldp_aggregative.py": "per-block Params fields",
    "methods/chen2025/derived.py": "per-block Params fields (sensitivity_y, ...)",
    "methods/chen2025/sensitivity.py": "the constants' own fields, checked by name",
    "methods/perturbed.py": "the agent's optional once (a test's agent has none)",
    "methods/steps.py": "a problem's optional smoothness (a polynomial has none)",
    "methods/gade2017/attacks/runner.py": "Params fields of the attacked protocols; the "
                                          "problem's polynomial",
    "methods/chen2025/audit.py": "per-block Params fields; a planned event's epsilon",
    "audit/canary.py": "the problem's design matrix (none for polynomial objectives)",
    "audit/harness.py": "a release event's sigma (not every event has one)",
    "audit/runner.py": "the noiseless key of a method's Params",
    "bench.py": "argparse namespace",
    "commands/noise_bench.py": "a noise source's draw by law name",
    "commands/privacy.py": "argparse namespace",
    "config.py": "a config section's keys; a type annotation's name",
    "services/divergence.py": "a release event's sigma or scale",
    "services/stop_signal.py": "an exception's collective flag",
    "entrypoint.py": "an exception's flags",
    "network/__init__.py": "a lazily loaded name from its module",
    "lazy_table.py": "a registry entry's attribute named in its table",
    "services/state_codec.py": "a method's checkpoint_fields; the bound method a state holds",
    "services/state_decoder.py": "an allow-listed class, bound method or hook a state names",
    "services/state_rules.py": "the config's optional problem.module and algorithm.module",
    "network/channels.py": "the counters' slots",
    "privacy/amplification.py": "the constants' fields",
    "privacy/notions.py": "a release event's sigma",
    "problem_setup.py": "a local objective's optional reference",
    "problems/aggregative/objective.py": "the objective's optional members (its docstring)",
    "problems/config.py": "the problem section's keys",
    "problems/consensus/global_problem.py": "the local problems' fields",
    "problems/models/torch_cnn.py": "a torch layer's weight",
    "reproduce/_style.py": "a plotted line's marker offset",
    "run_lock.py": "sys.orig_argv (Python 3.10 and later)",
    "methods/chen2025/reproduce/__init__.py": "argparse namespace",
    "summary.py": "the summary's fields",
    "topology/__init__.py": "a builder by name from its module",
    "network/traffic.py": "the counters' fields",
}

#: a getattr whose object is a method (class or instance)
METHOD_GETATTR = re.compile(
    r"getattr\(\s*(algorithm|algorithm_cls|method|s\.algorithm|self\.algorithm|"
    r"ALGORITHMS\[[^\]]*\]|type\(algorithm\))\s*,")

def _package_sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), path.read_text()


def _calls_getattr(source: str) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
               and node.func.id == "getattr" for node in ast.walk(ast.parse(source)))


def test_no_getattr_on_a_method_anywhere():
    found = [f"{rel}:{i}: {line.strip()}" for rel, source in _package_sources()
             for i, line in enumerate(source.splitlines(), 1) if METHOD_GETATTR.search(line)]
    assert not found, "declare the hook on Algorithm instead:\n" + "\n".join(found)


def test_getattr_only_where_allowed():
    calling = {rel for rel, source in _package_sources()
               if "getattr(" in source and _calls_getattr(source)}
    unexpected = sorted(calling - set(GETATTR_ALLOWED))
    assert not unexpected, ("a new getattr: if it probes a method, declare the hook on "
                            f"Algorithm; else add the file and why here: {unexpected}")
    stale = sorted(set(GETATTR_ALLOWED) - calling)
    assert not stale, f"no getattr left in {stale}: drop them from the allow-list"


_NAMES = "|".join(re.escape(n) for n in METHODS)
#: a comparison of a method's name: with ``algorithm.name``, or with a registered name
NAME_COMPARE = re.compile(
    r"algorithm\.name\s*(==|!=|\bin\b|\bnot in\b)"
    rf"|(==|!=)\s*[\"']({_NAMES})[\"']|[\"']({_NAMES})[\"']\s*(==|!=)"
    rf"|\bin\s*\(\s*[\"']({_NAMES})[\"']")


def test_the_guards_catch_the_probes_they_replaced():
    for line in ['check_setup = getattr(ALGORITHMS[cfg.algorithm.name], "check_setup", None)',
                 'extend = getattr(s.algorithm, "extend", None)',
                 'if getattr(algorithm_cls, "pure_headline", False):',
                 'check_graph = getattr(method, "check_graph", None)',
                 'setup_note = getattr(algorithm, "setup_note", "")']:
        assert METHOD_GETATTR.search(line), line
    for line in ['if cfg.algorithm.name == TOKEN:', 'if cfg.algorithm.name == "fs":',
                 'if name == "ldp-aggregative":',
                 'if name in ("aggregative-gt", "aggregative-pat"):']:
        assert NAME_COMPARE.search(line), line
    assert not METHOD_GETATTR.search('getattr(params, "gradient_at", "fused")')
    assert not NAME_COMPARE.search('name = "ldp-aggregative"')


def test_no_method_name_comparison_outside_the_families():
    # a family may name its own methods (its reproduction, its attacks); the core
    # (everything outside methods/) asks the method's class instead
    found = [f"{rel}:{i}: {line.strip()}" for rel, source in _package_sources()
             if not rel.startswith("methods/")
             for i, line in enumerate(source.splitlines(), 1)
             if NAME_COMPARE.search(line) and not line.lstrip().startswith("#")]
    assert not found, "ask the method's class (a hook) instead:\n" + "\n".join(found)
