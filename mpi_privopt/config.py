"""Run configuration: TOML file + ``--set section.key=value`` overrides, validated.

A configuration has five sections, each with a default for every key:

``[problem]``   the local objectives and data (see :class:`mpi_privopt.problems.ProblemConfig`)
``[topology]``  the communication graph (:class:`TopologyConfig`)
``[algorithm]`` ``name`` plus that algorithm's own parameters (its ``Params`` dataclass)
``[privacy]``   the per-agent budget and how losses are reported (:class:`PrivacyConfig`)
``[run]``       iterations, evaluation cadence, seed (:class:`RunConfig`)

A config source is a path to a TOML file or the name of a packaged experiment
(``mpi_privopt/experiments/NAME.toml``). Every problem (unknown section or key, wrong type,
bad value) raises :class:`~mpi_privopt.errors.ConfigError` naming the key and the fix.
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from .errors import ConfigError
from .services.watchdog import DEFAULT_STALL_TIMEOUT

EXPERIMENTS_PACKAGE = "mpi_privopt.experiments"
DEFAULT_EXPERIMENT = "default"


@dataclass
class TopologyConfig:
    """The ``[topology]`` section; see :mod:`mpi_privopt.topology` for each kind."""

    kind: str = "erdos-renyi"
    directed: bool = False
    degree: float = 3.0
    radius: float = 0.0
    neighbors: int = 4
    rewire: float = 0.1
    rows: int = 0
    file: str = ""
    weights: str = "standard"
    seed: int = -1  # -1: derive from run.seed


@dataclass
class PrivacyConfig:
    """The ``[privacy]`` section.

    ``epsilon`` is each agent's total budget at ``delta``; ``inf`` sets no budget. A
    finite budget with a non-private algorithm is refused before the run starts.
    ``noise`` is where mechanisms draw noise: ``fast`` (seeded numpy streams, reproducible)
    or ``secure`` (OS entropy and an exact discrete sampler; needs the ``secure`` extra).
    ``accounting`` is how a method that has a nominal accounting books its releases:
    ``derived`` (the default: sensitivities proven from the bounds the run enforces) or
    ``nominal`` (the paper's constants, labelled "not a privacy guarantee"; for comparison
    with a paper's plots). Methods whose accounting is always proven ignore it.
    """

    epsilon: float = math.inf
    delta: float = 1e-5
    noise: str = "fast"
    accounting: str = "derived"


#: the values of ``privacy.accounting``
ACCOUNTINGS = ("derived", "nominal")


@dataclass
class RunConfig:
    """The ``[run]`` section.

    ``evaluate`` says what the monitor may do (see docs/config.md): ``reference``
    (simulation: a centralised reference from every agent's data, distance metrics),
    ``local`` (each agent evaluates itself; only scalars are reduced) or ``none``
    (deployment: nothing but setup agreement and end-of-run counters leaves an agent
    beyond the algorithm's own messages).
    """

    iterations: int = 200
    eval_every: int = 1
    seed: int = 0
    progress_every: int = 0  # 0: about ten progress lines per run
    progress: str = "auto"  # the stderr progress line: auto (a person watches), on, off
    on_divergence: str = "stop"  # or "record": go on, the summary says "diverged"
    name: str = ""
    evaluate: str = "reference"
    stall_timeout: float | str = DEFAULT_STALL_TIMEOUT  # seconds; 0 or "off": no watchdog
    checkpoint_every: int = 0  # 0: only at SIGTERM/SIGINT (mpi_privopt/services/checkpoint.py)
    link_time_every: int = 50  # time every N-th exchange per link; 0: none (network/link_time.py)


@dataclass
class AlgorithmConfig:
    """The ``[algorithm]`` section: a registered name and its validated parameters."""

    name: str = "admm"
    params: Any = None  # the algorithm's Params dataclass instance
    module: str = ""  # your own method, "package.module:ClassName" (mpi_privopt/user_modules.py)


@dataclass
class Config:
    problem: Any
    topology: TopologyConfig = field(default_factory=TopologyConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    run: RunConfig = field(default_factory=RunConfig)
    source: str = ""

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The fully resolved configuration, as it would be written in TOML."""
        own = {"module": self.algorithm.module} if self.algorithm.module else {}
        algorithm = {"name": self.algorithm.name, **own,
                     **dataclasses.asdict(self.algorithm.params)}
        problem = dataclasses.asdict(self.problem)
        if not problem.get("module", True):
            del problem["module"]  # a packaged problem's config reads as it always did
        return {
            "problem": problem,
            "topology": dataclasses.asdict(self.topology),
            "algorithm": algorithm,
            "privacy": dataclasses.asdict(self.privacy),
            "run": dataclasses.asdict(self.run),
        }

    def to_toml(self) -> str:
        """TOML text that loads back into this configuration."""
        return tomli_w.dumps(_toml_safe(self.to_dict()))


SECTIONS = ("problem", "topology", "algorithm", "privacy", "run")


def _toml_safe(value: Any) -> Any:
    # TOML has inf/nan floats but no None; an unset optional is simply left out.
    if isinstance(value, dict):
        return {k: _toml_safe(v) for k, v in value.items() if v is not None}
    return value


# -- typed section building -------------------------------------------------------------

def _type_matches(value: Any, annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_type_matches(value, arg) for arg in typing.get_args(annotation))
    if annotation is Any:
        return True
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if origin in (list, tuple):
        return isinstance(value, (list, tuple))
    if typing.get_origin(annotation) is typing.Literal:
        return value in typing.get_args(annotation)
    return isinstance(value, annotation) if isinstance(annotation, type) else True


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "unset"
    return _TYPE_WORDS.get(annotation, getattr(annotation, "__name__", str(annotation)))


#: what a config value of each type is called in a message ("give an integer", not "a int")
_TYPE_WORDS = {int: "an integer", float: "a number", str: "a string in quotes",
               bool: "true or false"}


def build_section(cls: type, values: dict[str, Any], section: str) -> Any:
    """Build dataclass ``cls`` from ``values``, naming any unknown key or wrong type.

    Integers are accepted where a float is expected and converted.
    """
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(f'{section}.{k}' for k in unknown)}",
            f"valid keys in [{section}] are: {', '.join(names)}")
    kwargs = {}
    for name, value in values.items():
        annotation = hints[name]
        if not _type_matches(value, annotation):
            raise ConfigError(
                f"{section}.{name} = {value!r} has the wrong type",
                f"give {_type_name(annotation)}")
        if annotation is float and isinstance(value, int):
            value = float(value)
        kwargs[name] = value
    return cls(**kwargs)


# -- sources and overrides --------------------------------------------------------------

def packaged_experiments() -> list[str]:
    """Names of the experiments shipped in ``mpi_privopt/experiments``."""
    folder = resources.files(EXPERIMENTS_PACKAGE)
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def read_source(source: str | None) -> tuple[dict[str, Any], str]:
    """Parse a TOML file or a packaged experiment; return (raw dict, description).

    ``None`` gives the built-in defaults of every section (an empty file). The command
    line's ``run`` without a config runs the packaged experiment ``default`` instead.
    """
    if source is None:
        return {}, "built-in defaults"
    path = Path(source)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            what = "is a directory, not a file" if path.is_dir() else "does not exist"
            raise ConfigError(f"config file {source} {what}",
                              "give the path of a TOML file, or a packaged experiment name "
                              f"({', '.join(packaged_experiments())})")
        try:
            text, description = path.read_text(), str(path)
        except UnicodeDecodeError:
            raise ConfigError(f"config file {source} is not a text file (not TOML)",
                              "give the path of a TOML file, or a packaged experiment "
                              "name (python -m mpi_privopt list)") from None
    else:
        names = packaged_experiments()
        if source not in names:
            raise ConfigError(f"{source!r} is neither a TOML file nor a packaged experiment",
                              f"packaged experiments: {', '.join(names)}")
        text = resources.files(EXPERIMENTS_PACKAGE).joinpath(f"{source}.toml").read_text()
        description = f"experiment:{source}"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{description} is not valid TOML: {err}",
                          "fix the syntax at the line and column named") from None
    return raw, description


def parse_override(text: str) -> tuple[str, str, Any]:
    """Split ``section.key=value``; the value is read as TOML, else taken as a string."""
    if "=" not in text or "." not in text.split("=", 1)[0]:
        raise ConfigError(f"override {text!r} is not of the form section.key=value",
                          "write for example --set run.iterations=100")
    dotted, raw_value = text.split("=", 1)
    section, key = dotted.strip().split(".", 1)
    raw_value = raw_value.strip()
    try:
        value = tomllib.loads(f"v = {raw_value}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw_value
    return section, key, value


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` overrides in order.

    Switching ``algorithm.name`` (or ``algorithm.module``) to another algorithm drops the
    file's other ``[algorithm]`` keys: they were parameters of the algorithm being replaced.
    """
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    parsed = [parse_override(text) for text in overrides]
    file_algorithm = merged.get("algorithm", {})
    for section, key, value in parsed:
        if (section, key) == ("algorithm", "name") and isinstance(file_algorithm, dict) \
                and value != file_algorithm.get("name", AlgorithmConfig.name):
            merged["algorithm"] = {}
        if (section, key) == ("algorithm", "module") and isinstance(file_algorithm, dict) \
                and value != file_algorithm.get("module", ""):
            merged["algorithm"] = {}  # another method of your own: the same rule
    for text, (section, key, value) in zip(overrides, parsed):
        if section not in SECTIONS:
            raise ConfigError(f"override {text!r} names unknown section [{section}]",
                              f"sections are: {', '.join(SECTIONS)}")
        table = merged.setdefault(section, {})
        *tables, last = key.split(".")  # problem.options.KEY=value: a key of a sub-table
        for name in tables:
            inner = table.get(name)
            table[name] = inner = dict(inner) if isinstance(inner, dict) else {}
            table = inner
        table[last] = value
    return merged


def load_config(source: str | None = None, overrides: list[str] | None = None) -> Config:
    """Read, override and validate a configuration.

    Parameters
    ----------
    source : str, optional
        A TOML path or a packaged experiment name; the built-in defaults if None.
    overrides : list of str, optional
        ``section.key=value`` strings, applied in order after the file.
    """
    raw, description = read_source(source)
    return config_from_dict(apply_overrides(raw, overrides or []), description)


def config_from_dict(raw: dict[str, Any], description: str = "") -> Config:
    """Validate a raw ``{section: {key: value}}`` mapping into a :class:`Config`."""
    from .methods import ALGORITHMS
    from .privacy.noise import NOISE_MODES
    from .services.divergence import DIVERGENCE_MODES
    from .problems import EVALUATE_MODES, ProblemConfig, validate_problem_config
    from .problems.config import local_l1
    from .topology import KINDS  # the names only: the builders import networkx
    from .services.watchdog import stall_timeout_seconds
    from .user_modules import load_method, load_problem

    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        raise ConfigError(f"unknown section{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(f'[{s}]' for s in unknown)}",
                          f"sections are: {', '.join(SECTIONS)}")
    for section, values in raw.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{section} must be a [section] table, not a value",
                              f"write [{section}] on its own line, then key = value lines")

    problem = build_section(ProblemConfig, raw.get("problem", {}), "problem")
    load_problem(problem, raw.get("problem", {}), description)  # problem.module: registered
    validate_problem_config(problem)
    topology = build_section(TopologyConfig, raw.get("topology", {}), "topology")
    if topology.kind not in KINDS:
        raise ConfigError(f"unknown topology.kind {topology.kind!r}",
                          f"valid kinds: {', '.join(KINDS)}")
    if topology.kind == "file" and not topology.file:
        raise ConfigError("topology.kind = 'file' needs topology.file",
                          "set topology.file to the path of an edge list (one 'u v' per line)")
    privacy = build_section(PrivacyConfig, raw.get("privacy", {}), "privacy")
    if not privacy.epsilon > 0:
        raise ConfigError(f"privacy.epsilon = {privacy.epsilon} must be positive",
                          "give a positive budget, or inf for none")
    if not 0 < privacy.delta < 1:
        raise ConfigError(f"privacy.delta = {privacy.delta} must be in (0, 1)",
                          "a usual choice is 1e-5, or below 1/(samples per agent)")
    if privacy.noise not in NOISE_MODES:
        raise ConfigError(f"privacy.noise = {privacy.noise!r} is unknown",
                          "use 'fast' (reproducible experiments) or 'secure' (deployment)")
    if privacy.accounting not in ACCOUNTINGS:
        raise ConfigError(f"privacy.accounting = {privacy.accounting!r} is unknown",
                          'use "derived" (proven sensitivity bounds, the default) or "nominal" '
                          "(the paper's constants, not a guarantee: for comparison with its "
                          "plots)")
    run = build_section(RunConfig, raw.get("run", {}), "run")
    for key in ("iterations", "eval_every"):
        if getattr(run, key) < 1:
            raise ConfigError(f"run.{key} = {getattr(run, key)} must be a positive integer",
                              f"set run.{key} to 1 or more")
    if run.link_time_every < 0:
        raise ConfigError(f"run.link_time_every = {run.link_time_every} must be an integer >= 0",
                          "0 times no exchange; N times every N-th exchange of each phase")
    if run.name and (Path(run.name).name != run.name or run.name in (".", "..")
                     or len(run.name) > 200):
        raise ConfigError(f"run.name = {run.name!r} is not a plain name of at most 200 "
                          "characters (it names a directory under runs/)",
                          "use letters, digits, '-' and '_' without '/'; to write elsewhere, "
                          "give --out DIR")
    if run.seed < 0:
        raise ConfigError(f"run.seed = {run.seed} must be an integer >= 0",
                          "set run.seed to a whole number >= 0 (it seeds the data, the "
                          "noise and, unless topology.seed is set, the graph)")
    from .services.progress import PROGRESS_MODES
    if run.progress not in PROGRESS_MODES:
        raise ConfigError(f"run.progress = {run.progress!r} is unknown",
                          'use "auto" (a progress line on stderr when a person watches), '
                          '"on" or "off"')
    if run.progress_every < 0:
        raise ConfigError(f"run.progress_every = {run.progress_every} must be >= 0",
                          "use 0 for about ten progress lines")
    if run.checkpoint_every < 0:
        raise ConfigError(f"run.checkpoint_every = {run.checkpoint_every} must be >= 0",
                          "use 0 to checkpoint only at a signal, N for every N iterations")
    if run.on_divergence not in DIVERGENCE_MODES:
        raise ConfigError(f"run.on_divergence = {run.on_divergence!r} is unknown",
                          'use "stop" (end the run at the first diverged iterate) or "record" '
                          '(finish it; the summary says "diverged" and the exit status is 3)')
    if run.evaluate not in EVALUATE_MODES:
        raise ConfigError(f"run.evaluate = {run.evaluate!r} is unknown",
                          'use "reference" (simulation), "local" (each agent evaluates '
                          'itself) or "none" (deployment)')
    try:
        stall_timeout_seconds(run.stall_timeout)
    except ValueError:
        raise ConfigError(f"run.stall_timeout = {run.stall_timeout!r} is not a timeout",
                          'give the seconds a job may go without progress before the watchdog '
                          'ends it (e.g. 600), or 0 or "off" for no watchdog') from None
    local_l1(problem, run.evaluate)  # l1 = "auto" only where the data may be gathered

    algo_raw = dict(raw.get("algorithm", {}))
    module, name = algo_raw.pop("module", ""), algo_raw.pop("name", None)
    if module != "":  # your own method: imported, checked, registered under its class's name
        name = load_method(module, name, description)
    name = AlgorithmConfig.name if name is None else name
    if name not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm.name {name!r}",
                          f"valid algorithms: {', '.join(sorted(ALGORITHMS))}")
    algorithm_cls = ALGORITHMS[name]
    params = build_section(algorithm_cls.Params, algo_raw, "algorithm")
    algorithm_cls.validate(params)
    if math.isfinite(privacy.epsilon) and not algorithm_cls.private:
        raise ConfigError(
            f"privacy.epsilon = {privacy.epsilon} is set, but algorithm {name!r} is not private "
            "(its privacy loss is unbounded)",
            "choose a private algorithm, or set privacy.epsilon = inf")
    _check_problem_kind(name, algorithm_cls, problem.name)
    if topology.directed and algorithm_cls.requires_undirected:
        raise ConfigError(f"algorithm {name!r} needs an undirected graph",
                          "set topology.directed = false")
    config = Config(problem=problem, topology=topology,
                    algorithm=AlgorithmConfig(name=name, params=params, module=module),
                    privacy=privacy, run=run, source=description)
    algorithm_cls.validate_config(config)
    return config


def _check_problem_kind(name: str, algorithm_cls, problem: str) -> None:
    """Refuse a method whose ``problem_kind`` is not the kind of ``[problem] name``."""
    from .methods import ALGORITHMS
    from .problems.registry import problem_kind, problems_of_kind

    kind, needs = problem_kind(problem), algorithm_cls.problem_kind
    if kind == needs:
        return
    if kind != "consensus":  # a special problem: say which methods solve it
        methods = sorted(n for n, c in ALGORITHMS.items() if c.problem_kind == kind)
        raise ConfigError(f"algorithm {name!r} cannot solve the {kind} problem {problem!r}",
                          f"choose {_a(kind)} method ({', '.join(methods)})")
    raise ConfigError(f"algorithm {name!r} needs {_a(needs)} problem, not {problem!r}",
                      f'set [problem] name = "{problems_of_kind(needs)[0]}" (or another '
                      f"{needs} problem)")


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"
