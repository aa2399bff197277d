"""Every named problem (``[problem] name``), in one registry.

:data:`PROBLEMS`
    The consensus (finite-sum) problems: a loss and default regulariser coefficients each.
:data:`POLYNOMIAL`
    The polynomial objectives of Gade & Vaidya (2017) (presets in
    :mod:`mpi_privopt.problems.consensus.polynomial_presets`).
:data:`AGGREGATIVE_PROBLEMS`
    The aggregative problems, each a builder
    ``builder(options, rank, n_agents, seed) -> AggregativeObjective``: those of the method
    families (each family's ``AGGREGATIVE_PROBLEMS`` table, :mod:`mpi_privopt.families`)
    and a user's own (``problem.module``). A builder's module is imported when the name is
    first looked up, so naming the problems loads neither their data nor torch.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mpi_privopt.families import family_table
from mpi_privopt.lazy_table import LazyTable
from mpi_privopt.problems.consensus.losses import LOSSES, Loss

__all__ = ["ProblemSpec", "PROBLEMS", "AUTO", "POLYNOMIAL", "AGGREGATIVE_PROBLEMS",
           "PROBLEM_KINDS", "is_aggregative", "problem_kind", "problems_of_kind"]

#: Sentinel for ``l1``: ``AUTO_L1_FACTOR * ||X^T y||_inf`` on the globally stacked data.
AUTO = "auto"


@dataclass(frozen=True)
class ProblemSpec:
    """A named problem.

    Attributes
    ----------
    name : str
        Registry name.
    loss : Loss
        Per-sample loss.
    l1 : float or "auto"
        Default l1 coefficient.
    l2 : float
        Default l2 coefficient (of ``||w||_2^2``, no factor 1/2).
    task : {"regression", "classification"}
        What the labels are.
    synthetic : callable, optional
        ``synthetic(cfg, agent, n_agents) -> (X, y)``: agent ``agent``'s records when
        ``[problem] data`` is empty (a paper's own generator); None for the generic
        synthetic data (:mod:`mpi_privopt.problems.datasets.synthetic`).
    """

    name: str
    loss: Loss
    l1: float | str
    l2: float
    task: str
    synthetic: Callable[..., tuple] | None = None


def _spec(name: str, loss: str, l1: float | str, l2: float) -> ProblemSpec:
    return ProblemSpec(name, LOSSES[loss], l1, l2, LOSSES[loss].task)


def _is_spec_of(name: str, spec: object, where: str) -> None:
    if not (isinstance(spec, ProblemSpec) and spec.name == name):
        raise KeyError(f"{where} is not the ProblemSpec of problem {name!r}")


#: the consensus problems: the core's own and the families' (each family's
#: ``CONSENSUS_PROBLEMS`` table, read at first use: a family imports this module)
PROBLEMS: LazyTable = LazyTable(
    objects={s.name: s for s in (
        _spec("ridge", "squared", 0.0, 1.0),
        _spec("lasso", "squared", AUTO, 0.0),
        _spec("elastic-net", "squared", AUTO, 1.0),
        _spec("lad", "absolute", 0.0, 0.0),
        _spec("svm", "hinge", 0.0, 0.01),
        _spec("logistic", "logistic", 0.0, 0.01),
        _spec("huber", "huber", 0.0, 0.01),
    )},
    verify=_is_spec_of, fill=lambda: family_table("CONSENSUS_PROBLEMS"))

#: ``[problem] name`` of the polynomial objectives (Gade & Vaidya 2017)
POLYNOMIAL = "polynomial"


#: the named aggregative problems (``[problem] name``), each a builder; the families'
#: tables are read at first use (a family imports this module)
AGGREGATIVE_PROBLEMS: LazyTable = LazyTable(fill=lambda: family_table("AGGREGATIVE_PROBLEMS"))


#: the kinds of problem, each a method's ``problem_kind``
#: (:class:`~mpi_privopt.methods.contract.Algorithm`): ``consensus`` (:data:`PROBLEMS` and
#: :data:`POLYNOMIAL`: one mean objective, each agent a local f_k or its records),
#: ``aggregative`` (:data:`AGGREGATIVE_PROBLEMS`)
PROBLEM_KINDS = ("consensus", "aggregative")


def problem_kind(name: str) -> str:
    """The kind (:data:`PROBLEM_KINDS`) of ``[problem] name``."""
    return "aggregative" if name in AGGREGATIVE_PROBLEMS else "consensus"


def problems_of_kind(kind: str) -> list[str]:
    """The named problems of one kind (:data:`PROBLEM_KINDS`), in registry order."""
    named = [*PROBLEMS, POLYNOMIAL, *AGGREGATIVE_PROBLEMS]
    return [name for name in named if problem_kind(name) == kind]


def is_aggregative(name: str) -> bool:
    """Whether ``[problem] name`` is an aggregative problem."""
    return problem_kind(name) == "aggregative"
