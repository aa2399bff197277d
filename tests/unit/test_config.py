"""Config: defaults, TOML, --set overrides, and messages for bad input."""
import math

import pytest

from mpi_privopt.config import (
    apply_overrides, config_from_dict, load_config, packaged_experiments, parse_override)
from mpi_privopt.errors import ConfigError


def test_built_in_defaults_and_the_default_experiment():
    base = load_config()
    assert base.algorithm.name == "admm" and math.isinf(base.privacy.epsilon)
    assert set(base.to_dict()) == {"problem", "topology", "algorithm", "privacy", "run"}
    default = load_config("default")        # what `mpi_privopt run` runs without a config
    assert default.algorithm.name == "zcdp-nfl" and default.problem.name == "elastic-net"
    assert default.privacy.epsilon == 10.0 and default.problem.clip > 0
    assert {"default", "admm-ridge", "dgd-ridge"} <= set(packaged_experiments())


@pytest.mark.parametrize("name", packaged_experiments())
def test_every_packaged_experiment_is_valid(name):
    assert load_config(name).run.iterations >= 1


def test_overrides_are_typed_from_toml():
    cfg = load_config(None, ["run.iterations=17", "problem.name=lad", "topology.kind=ring",
                             "algorithm.name=dgd", "algorithm.step=0.5", "run.seed=4"])
    assert cfg.run.iterations == 17 and cfg.run.seed == 4
    assert cfg.problem.name == "lad" and cfg.topology.kind == "ring"
    assert cfg.algorithm.name == "dgd" and cfg.algorithm.params.step == 0.5


def test_an_int_is_accepted_for_a_float_key():
    cfg = load_config(None, ["algorithm.rho=2"])
    assert isinstance(cfg.algorithm.params.rho, float) and cfg.algorithm.params.rho == 2.0


def test_resolved_config_round_trips_through_toml(tmp_path):
    cfg = load_config(None, ["run.iterations=9", "algorithm.eta=0.25"])
    path = tmp_path / "c.toml"
    path.write_text(cfg.to_toml())
    again = load_config(str(path))
    assert again.to_dict() == cfg.to_dict()
    assert math.isinf(again.privacy.epsilon)


def test_bare_string_override_without_quotes():
    assert parse_override("problem.name=elastic-net") == ("problem", "name", "elastic-net")


@pytest.mark.parametrize("overrides,words", [
    (["run.iterations=0"], ["run.iterations", "positive"]),
    (["run.iterations=-3"], ["run.iterations"]),
    (["algorithm.eta=0"], ["algorithm.eta", "positive"]),
    (["algorithm.name=dgd", "algorithm.step=-1"], ["algorithm.step"]),
    (["algorithm.name=nope"], ["nope", "admm", "dgd"]),
    (["topology.kind=torus"], ["torus", "ring", "erdos-renyi"]),
    (["problem.name=unicorn"], ["unicorn", "ridge"]),
    (["run.iterationz=3"], ["run.iterationz", "iterations"]),
    (["algorithm.step=0.1"], ["algorithm.step", "rho"]),   # admm has no 'step'
    (["run.iterations=ten"], ["run.iterations", "int"]),
    (["nosuch.key=1"], ["nosuch"]),
    (["privacy.epsilon=1.0"], ["not private", "privacy.epsilon"]),
    (["privacy.delta=2"], ["privacy.delta"]),
    (["topology.directed=true"], ["undirected"]),
    (["topology.kind=file"], ["topology.file"]),
    (["algorithm.schedule=fast"], ["schedule", "constant"]),
    (["run.evaluate=remote"], ["run.evaluate", "reference", "local", "none"]),
    # l1 = "auto" (elastic net's default) needs every agent's data together
    (["problem.name=elastic-net", "run.evaluate=local"], ["auto", "local", "problem] l1"]),
    (["problem.name=lasso", "problem.l1='auto'", "run.evaluate=none"], ["auto", "none"]),
])
def test_bad_values_name_the_key_and_the_fix(overrides, words):
    with pytest.raises(ConfigError) as info:
        load_config(None, overrides)
    message = str(info.value)
    for word in words:
        assert word in message
    assert "how to fix" in message


def test_malformed_toml_names_the_file_and_position(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[run]\niterations = = 3\n")
    with pytest.raises(ConfigError, match=r"bad.toml is not valid TOML.*line 2"):
        load_config(str(path))


def test_unknown_section_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"\[extra\]"):
        config_from_dict({"extra": {"a": 1}})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="packaged experiments"):
        load_config("no-such-experiment")


def test_a_directory_given_as_config_is_named_as_one(tmp_path):
    with pytest.raises(ConfigError, match="is a directory, not a file"):
        load_config(str(tmp_path))
    binary = tmp_path / "program"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe")
    with pytest.raises(ConfigError, match="is not a text file"):
        load_config(str(binary))


@pytest.mark.parametrize("override,message,fix", [
    ("run.iterations='abc'", "run.iterations = 'abc' has the wrong type", "give an integer"),
    ("run.seed=-1", "run.seed = -1 must be an integer >= 0", "set run.seed"),
    ("run.name='../escape/sub'", "run.name = '../escape/sub' is not a plain name",
     "give --out DIR"),
    (f"run.name='{'x' * 300}'", "is not a plain name of at most 200 characters",
     "give --out DIR"),
])
def test_a_bad_run_value_is_named_in_words(override, message, fix):
    with pytest.raises(ConfigError) as err:
        load_config("default", [override])
    assert message in str(err.value)
    assert fix in err.value.fix


def test_override_needs_section_dot_key():
    with pytest.raises(ConfigError, match="section.key=value"):
        apply_overrides({}, ["iterations=3"])


@pytest.mark.parametrize("overrides,words", [
    (["algorithm.name=zcdp-nfl", "problem.clip=1.0"], ["privacy.epsilon is inf"]),
    (["algorithm.name=zcdp-nfl", "privacy.epsilon=1.0"], ["problem.clip"]),
    (["algorithm.name=zcdp-nfl", "algorithm.noiseless=true", "privacy.epsilon=1.0"],
     ["noiseless"]),
    (["algorithm.name=zcdp-nfl", "problem.clip=1.0", "privacy.epsilon=1.0",
      "algorithm.tau=1.5"], ["algorithm.tau"]),
    (["algorithm.name=zcdp-nfl", "problem.clip=1.0", "privacy.epsilon=1.0",
      "algorithm.conversion=magic"], ["algorithm.conversion", "tight"]),
    (["privacy.noise=loud"], ["privacy.noise", "secure"]),
])
def test_private_algorithm_needs_a_budget_and_a_clip(overrides, words):
    with pytest.raises(ConfigError) as info:
        load_config(None, overrides)
    for word in words:
        assert word in str(info.value)


def test_a_valid_private_config_loads():
    cfg = load_config(None, ["algorithm.name=zcdp-nfl", "problem.clip=1.0",
                             "privacy.epsilon=2.0", "privacy.noise=secure"])
    assert cfg.algorithm.params.tau == 0.99 and cfg.privacy.noise == "secure"


def _choice_fields():
    import dataclasses
    from mpi_privopt.methods import ALGORITHMS
    for name, cls in sorted(ALGORITHMS.items()):
        fields = {f.name for f in dataclasses.fields(cls.Params)}
        for key in sorted(set(cls.choices) & fields):
            yield name, key


@pytest.mark.parametrize("name,key", list(_choice_fields()))
def test_every_option_field_is_checked(name, key):
    from mpi_privopt.methods import ALGORITHMS
    cls = ALGORITHMS[name]
    params = cls.Params(**{key: "no-such-option"})
    with pytest.raises(ConfigError, match=f"algorithm.{key} = 'no-such-option' is unknown"):
        cls.validate(params)


def test_evaluate_defaults_to_reference_and_accepts_the_deployment_modes():
    assert load_config(None).run.evaluate == "reference"
    for mode in ("reference", "local", "none"):
        assert load_config(None, [f"run.evaluate={mode}"]).run.evaluate == mode
    # an explicit l1 needs no one's data: fine in a deployment
    cfg = load_config(None, ["problem.name=elastic-net", "problem.l1=0.01", "run.evaluate=none"])
    assert cfg.problem.l1 == 0.01
    # l1 = "auto" is resolved from the gathered data in a simulation
    assert load_config(None, ["problem.name=elastic-net"]).run.evaluate == "reference"
