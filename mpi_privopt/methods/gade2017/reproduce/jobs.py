"""The runs of the reproduction, and how they are launched under mpiexec.

A :class:`Job` is one engine run (``mpi_privopt run`` semantics) or one attack run
(:func:`mpi_privopt.methods.gade2017.attacks.run_attack`) of a packaged ``gade2017-*`` configuration with
``--set`` overrides. Jobs are sent in batches of :data:`BATCH_JOBS` to one ``mpiexec -n 5``
job each (:func:`mpi_privopt.reproduce.launch`), in which every rank runs the batch's jobs in
order (:func:`run_job`): starting five Python processes costs more than most of these runs.
A job whose directory already holds its result is not run again, so an interrupted
reproduction resumes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mpi_privopt.reproduce import run_engine

AGENTS = 5
BATCH_JOBS = 60
PROGRESS = "  {runs} runs in {seconds:.0f} s ({launched}/{todo} to do)"
#: Figure 1 noise levels (the paper: "two different values"; docs/methods/gade2017.md)
FIG1_DELTAS = (10.0, 1000.0)
#: FS share scales on the Figure 1 problem (not in the paper)
FIG1_SIGMAS = (0.1, 1.0)
#: (method, noise) of the noisy Figure 1 series: RSS-NB and RSS-LB at each Delta, FS at each sigma
FIG1_LEVELS = tuple((m, d) for m in ("rss-nb", "rss-lb") for d in FIG1_DELTAS) \
    + tuple(("fs", s) for s in FIG1_SIGMAS)
#: Figure 2 stand-in noise (logistic regression)
ML_DELTA = 100.0
ML_SIGMA = 0.1
#: the Figure 1 objectives are attacked on X = [-1, 1]: on [-30, 30] the quartic agents are
#: projected onto the box for the first hundreds of rounds, which tells nothing. One
#: scenario keeps Figure 1's box, where gradients are large next to the noise.
ATTACK_BOX = 1.0
FIG1_BOX = 30.0
#: (label, topology, coalition, target, box) for the attacks on the Figure 1 problem
ATTACK_SCENARIOS = (
    ("K5, one curious neighbour", "complete", (1,), 0, ATTACK_BOX),
    ("K5, one curious neighbour, X = [-30, 30]", "complete", (1,), 0, FIG1_BOX),
    ("C5, one curious neighbour", "ring", (1,), 0, ATTACK_BOX),
    ("C5, both neighbours collude", "ring", (1, 4), 0, ATTACK_BOX),
    ("star, the hub is curious", "star", (0,), 1, ATTACK_BOX),
)
#: the logistic problem has no box
ML_ATTACK_SCENARIOS = ATTACK_SCENARIOS[0][:4] + (None,), ATTACK_SCENARIOS[3][:4] + (None,)


@dataclass(frozen=True)
class Job:
    """One run: a packaged config, overrides, and (for attacks) coalition and target."""

    key: str
    config: str
    overrides: tuple[str, ...] = ()
    coalition: tuple[int, ...] = ()
    target: int = -1
    meta: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def is_attack(self) -> bool:
        return bool(self.coalition)

    @property
    def result_file(self) -> str:
        return "attack.json" if self.is_attack else "summary.json"


def method_overrides(method: str, noise: float | None) -> tuple[str, ...]:
    """The --set values selecting a noise level for a packaged method config."""
    if method in ("rss-nb", "rss-lb"):
        return (f"algorithm.delta={noise}",)
    if method == "fs":
        return (f"algorithm.sigma={noise}",)
    return ()


def series_name(method: str, noise: float | None) -> str:
    """The name of a method's runs at a noise level: ``rss-nb-d10``, ``fs-s0.1``, ``dgd``."""
    if noise is None:
        return method
    return f"{method}-{'d' if method.startswith('rss') else 's'}{noise:g}"


def figure1_jobs(iterations: int, seeds: int) -> list[Job]:
    """DGD once (it has no randomness), the RSS methods and FS at each level and seed."""
    jobs = [Job("fig1/dgd", "gade2017-fig1-dgd", (f"run.iterations={iterations}",),
                meta={"series": "dgd", "seed": 0})]
    for method, noise in FIG1_LEVELS:
        series = series_name(method, noise)
        for seed in range(seeds):
            jobs.append(Job(f"fig1/{series}-seed{seed}", f"gade2017-fig1-{method}",
                            method_overrides(method, noise)
                            + (f"run.iterations={iterations}", f"run.seed={seed}"),
                            meta={"series": series, "seed": seed}))
    return jobs


def figure2_jobs(train: Path, checkpoints: tuple[int, ...]) -> list[Job]:
    """Every method on C5 and K5, one run per checkpoint (same seed: the same trajectory)."""
    jobs = []
    for kind in ("ring", "complete"):
        for method in ("dgd", "rss-nb", "rss-lb", "fs"):
            for T in checkpoints:
                jobs.append(Job(f"fig2/{kind}-{method}-T{T}", f"gade2017-logistic-{method}",
                                (f"problem.data={train}", f"topology.kind={kind}",
                                 f"run.iterations={T}", f"run.eval_every={max(1, T // 100)}"),
                                meta={"topology": kind, "method": method, "T": T}))
    return jobs


def attack_jobs(iterations: int, methods: list[tuple[str, float | None]],
                train: Path | None = None) -> list[Job]:
    """The attacks on the Figure 1 problem, and (with ``train``) on the logistic problem."""
    jobs = []
    problems = [("fig1", "gade2017-fig1", ATTACK_SCENARIOS, methods, ())]
    if train is not None:
        ml_methods = [("dgd", None), ("rss-nb", ML_DELTA), ("rss-lb", ML_DELTA), ("fs", ML_SIGMA)]
        problems.append(("logistic", "gade2017-logistic", ML_ATTACK_SCENARIOS, ml_methods,
                         (f"problem.data={train}",)))
    for problem, prefix, scenarios, chosen, extra in problems:
        for label, kind, coalition, target, box in scenarios:
            where = () if box is None else (f"algorithm.box={box}",)
            suffix = "" if box in (None, ATTACK_BOX) else f"-box{box:g}"
            for method, noise in chosen:
                series = series_name(method, noise)
                key = f"attack/{problem}-{kind}-{'-'.join(map(str, coalition))}{suffix}-{series}"
                jobs.append(Job(key, f"{prefix}-{method}",
                                extra + where + method_overrides(method, noise)
                                + (f"topology.kind={kind}", f"run.iterations={iterations}",
                                   f"run.eval_every={iterations}"),
                                coalition=coalition, target=target,
                                meta={"problem": problem, "scenario": label, "series": series,
                                      "method": method, "noise": noise}))
    return jobs


def run_job(cfg, item: dict, comm) -> None:
    """One job of a batch (a :class:`Job`'s fields with ``out``), inside the MPI job."""
    if item["coalition"]:
        from ..attacks import run_attack

        run_attack(cfg, list(item["coalition"]), item["target"], out=item["out"], comm=comm)
    else:
        run_engine(cfg, item, comm)
