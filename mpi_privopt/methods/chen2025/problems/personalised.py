r"""Personalised learning, Chen & Wang 2025 eq. (22): an aggregative problem on image data.

Agent i owns a classifier x_i (its block, n_i = the model's parameter count), a local data
partition D_i (N_i points) and a history of samples drawn from it. With L(x_i; xi) the
cross-entropy of x_i on sample xi and weights w_p = c_p / |D_i^t| over the distinct points
drawn so far (count weights, :mod:`~mpi_privopt.problems.aggregative.sample_history`; phi = xi;
docs/methods/chen2025.md, "Personalised-learning task")::

    g_i^t(x_i)      = sum_p w_p L_p(x_i)                                   (r = 1; G_i^t)
    f_i^t(x_i, y)   = sum_p w_p [ L_p(x_i) + lambda_pen (L_p(x_i) - y)^2 ]  (F_i^t, h of (22))
    G^t(x)          = (1/m) sum_i g_i^t(x_i),   problem: min_x sum_i f_i^t(x_i, G^t(x))

and the closed forms (each one backward pass through the model)::

    nabla g_i^t(x) z   = sum_p w_p z nabla L_p(x)
    nabla_x f_i^t(x,y) = sum_p w_p (1 + 2 lambda_pen (L_p(x) - y)) nabla L_p(x)
    nabla_y f_i^t(x,y) = -2 lambda_pen (g_i^t(x) - y)

so ``(1/m) sum_j nabla_y f_j(x_j, G) = 0`` at the exact aggregate: the y-gradient tracker
only carries tracking error and noise in this task (docs/methods/chen2025.md,
"Personalised-learning task").

Each call to :meth:`PersonalisedLearning.observe` draws ``count * batch`` samples i.i.d.
with replacement from the agent's sampling stream (:func:`sampling_rng`, keyed by
``(seed, agent)``); ``batch`` is the task's B, so an algorithm calls ``observe()`` once per
iteration. The per-sample losses of the history are computed once per (x, history) pair.

Metrics (:meth:`PersonalisedLearning.evaluator`; docs/methods/chen2025.md, "Training loss"),
on the *full*
local partitions (uniform weights, not the history), with G computed exactly:

``objective``            (1/m) sum_i F_i(x_i, G(x)), G = mean over agents of G_i(x_i)
``cross_entropy``        (1/m) sum_i G_i(x_i), the plain training cross-entropy
``union_cross_entropy``  (1/m) sum_i CE of x_i on the union of every agent's training data
                         (``reference`` mode only: it reads every agent's data)
``test_accuracy``        (1/m) sum_i accuracy of x_i on agent i's test partition (the test
                         set split among the agents by the same rule as the training set)

The aggregate share is this agent's exact mean training loss G_i(x_i), a scalar, so the
``local`` mode has the objective too. The model ``w`` handed to the evaluator is the
agent's stacked estimate **x**_i (what ``ldp-aggregative`` hands the monitor; x_i = R_i
**x**_i, docs/methods/chen2025.md, "Which iterate") or its block x_i alone.

Randomness: the split of the data among agents uses ``SeedSequence(seed, spawn_key=
(SPLIT_TAG, 0))`` (training set) and ``(SPLIT_TAG, 1)`` (test set), the same on every agent;
agent i's initial block uses ``(INIT_TAG, i)``; its samples, the sampling stream. So an
agent's data and draws depend on ``(seed, i)`` only, never on process placement.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.datasets.class_split import SPLITS, split_by_class
from mpi_privopt.problems.datasets.images import ImageData
from mpi_privopt.problems.datasets.image_files import DATASETS, load_image_data
from mpi_privopt.problems.metrics import LOCAL, NONE, REFERENCE, AgentMetrics, Evaluator, Metric
from mpi_privopt.problems.models.classifiers import (MODELS, Classifier, SoftmaxRegression,
                                                     make_model)
from mpi_privopt.problems.aggregative.objective import RecordBounds
from mpi_privopt.problems.aggregative.sample_history import SampleHistory
from mpi_privopt.problems.options import refuse_unknown_options
from mpi_privopt.problems.sampling import sampling_rng

__all__ = ["PersonalisedLearning", "build_personalised", "personalised_options",
           "PERSONALISED_DEFAULTS", "SPLIT_TAG", "INIT_TAG", "penalised_value",
           "x_coefficients", "y_gradient"]

#: spawn-key tags of the task's streams (far above any agent index, apart from other tags)
SPLIT_TAG = 0x53504C54
INIT_TAG = 0x494E4954
_TRAIN, _TEST = 0, 1
# rows per forward pass when evaluating on the union of the training data
_CHUNK = 4096

# how messages name the options (the configuration's table for them)
_KEY = "[problem.options] "

#: the task's options and their defaults
PERSONALISED_DEFAULTS: dict[str, object] = {
    "dataset": "digits", "lambda_pen": 0.5, "batch": 1, "split": "heterogeneous",
    "data_dir": "", "model": "softmax",
}


# --- eq. (22), each formula once: per-sample losses L (N,), weights w (N,), sum w = 1 ---

def penalised_value(losses: np.ndarray, weights: np.ndarray, lambda_pen: float,
                    y: float) -> float:
    """f(x, y) = sum_p w_p [L_p + lambda_pen (L_p - y)^2]."""
    return float(weights @ (losses + lambda_pen * (losses - y) ** 2))


def x_coefficients(losses: np.ndarray, weights: np.ndarray, lambda_pen: float,
                   y: float) -> np.ndarray:
    """c_p with nabla_x f(x, y) = sum_p c_p nabla L_p(x): w_p (1 + 2 lambda_pen (L_p - y))."""
    return weights * (1.0 + 2.0 * lambda_pen * (losses - y))


def y_gradient(mean_loss: float, lambda_pen: float, y: float) -> float:
    """nabla_y f(x, y) = -2 lambda_pen (g(x) - y), with g(x) = sum_p w_p L_p."""
    return -2.0 * lambda_pen * (mean_loss - y)


def _scalar(v: np.ndarray | float, what: str) -> float:
    arr = np.asarray(v, dtype=np.float64)
    if arr.size != 1:
        raise ValueError(f"{what} has r = 1 coordinate in this task, got shape {arr.shape}")
    return float(arr.reshape(()))


class _LossCache:
    """Per-sample losses of the last x seen (x compared by value; a key says the data)."""

    def __init__(self) -> None:
        self._x: np.ndarray | None = None
        self._key: object = None
        self._losses: np.ndarray | None = None

    def get(self, x: np.ndarray, key: object, compute) -> np.ndarray:
        if self._key != key or self._x is None or not np.array_equal(self._x, x):
            self._losses = compute()
            self._x, self._key = x.copy(), key
        return self._losses


class PersonalisedLearning:
    """Agent i's part of eq. (22) (see the module docstring); an ``AggregativeObjective``.

    Parameters
    ----------
    model : Classifier
    data : ImageData
        The whole data set (its training set is the union used in ``reference`` metrics).
    train_rows, test_rows : ndarray of int
        This agent's partition of the training and test sets (non-empty).
    lambda_pen : float
        The penalty weight lambda of eq. (22), >= 0.
    batch : int
        B, the samples drawn per :meth:`observe` (per iteration).
    sampling : numpy.random.Generator
        The agent's sampling stream.
    seed : int
        The run's seed (the initial blocks' streams, :meth:`initial_blocks`).
    agent : int
        This agent's index i.
    n_agents : int
        m (for the layout of a stacked estimate handed to the evaluator).
    """

    aggregate_size = 1

    def __init__(self, model: Classifier, data: ImageData, train_rows: np.ndarray,
                 test_rows: np.ndarray, *, lambda_pen: float, batch: int,
                 sampling: np.random.Generator, seed: int, agent: int,
                 n_agents: int) -> None:
        self.model = model
        self.data = data
        self.lambda_pen = float(lambda_pen)
        self.batch = int(batch)
        self.block_size = int(model.n_params)
        # the record domain: pixels in [0, 1] (as_float's range; the clip enforces it)
        self.images = np.clip(data.as_float(data.train_images[train_rows]), 0.0, 1.0)
        self.labels = data.train_labels[train_rows]
        self.test_images = data.as_float(data.test_images[test_rows])
        self.test_labels = data.test_labels[test_rows]
        self.history = SampleHistory((self.images, self.labels), sampling)
        self.seed, self.agent, self.n_agents = int(seed), int(agent), int(n_agents)
        self._history_losses = _LossCache()
        self._local_losses = _LossCache()

    # --- the sampling oracle ---------------------------------------------------------------
    def observe(self, count: int = 1, *, fresh: bool = False) -> None:
        """Draw ``count * batch`` samples and add them to the history (``fresh``: replace it)."""
        self.history.draw(int(count) * self.batch, fresh=fresh)

    def _losses(self, x: np.ndarray) -> np.ndarray:
        # L_p(x) for the history's distinct points (in SampleHistory.points order)
        images, labels = self.history.rows
        return self._history_losses.get(x, self.history.version,
                                        lambda: self.model.losses(x, images, labels))

    def _backward(self, x: np.ndarray, coef: np.ndarray) -> np.ndarray:
        images, labels = self.history.rows
        return self.model.weighted_gradient(x, images, labels, coef)

    # --- the empirical functions of the history --------------------------------------------
    def aggregate(self, x_i: np.ndarray) -> np.ndarray:
        """g_i^t(x_i) = G_i^t(x_i), the history's mean loss, shape (1,)."""
        return np.array([float(self.history.weights @ self._losses(x_i))])

    def aggregate_vjp(self, x_i: np.ndarray, z: np.ndarray) -> np.ndarray:
        """nabla g_i^t(x_i) z, shape (n_i,)."""
        return self._backward(x_i, self.history.weights * _scalar(z, "z"))

    def grad_x(self, x_i: np.ndarray, y: np.ndarray) -> np.ndarray:
        """nabla_x f_i^t(x_i, y), shape (n_i,)."""
        coef = x_coefficients(self._losses(x_i), self.history.weights, self.lambda_pen,
                              _scalar(y, "y"))
        return self._backward(x_i, coef)

    def grad_y(self, x_i: np.ndarray, y: np.ndarray) -> np.ndarray:
        """nabla_y f_i^t(x_i, y), shape (1,)."""
        return np.array([y_gradient(float(self.aggregate(x_i)[0]), self.lambda_pen,
                                    _scalar(y, "y"))])

    def value(self, x_i: np.ndarray, y: np.ndarray) -> float:
        """f_i^t(x_i, y) (not used by the algorithm; for tests and checks)."""
        return penalised_value(self._losses(x_i), self.history.weights, self.lambda_pen,
                               _scalar(y, "y"))

    def direction(self, x_i: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """nabla_x f_i^t(x_i, y) + nabla g_i^t(x_i) z in one backward pass (u_i)."""
        weights = self.history.weights
        coef = x_coefficients(self._losses(x_i), weights, self.lambda_pen, _scalar(y, "y"))
        return self._backward(x_i, coef + weights * _scalar(z, "z"))

    def record_bounds(self, box: float):
        """Assumption 5's constants for softmax regression on pixels in [0, 1] and x in
        ``[-box, box]^{n_i}`` (docs/methods/chen2025.md, "Derived accounting"); None for
        another model (no bound is derived for it)."""
        if not isinstance(self.model, SoftmaxRegression):
            return None
        return softmax_record_bounds(self.model.features, self.model.classes, box,
                                     self.lambda_pen)

    def _initial(self, agent: int) -> np.ndarray:
        stream = np.random.SeedSequence(self.seed, spawn_key=(INIT_TAG, int(agent)))
        return self.model.initial(np.random.default_rng(stream))

    def initial_block(self) -> np.ndarray:
        """x_i^0: the model's default initialisation drawn from the agent's init stream."""
        return self._initial(self.agent)

    def initial_blocks(self, n_agents: int) -> list[np.ndarray]:
        """Every agent's x_j^0 (public: the same model for all, streams keyed by (seed, j)),
        so every stacked estimate can start at the same **x**^0
        (docs/methods/chen2025.md, "Initialisation")."""
        return [self._initial(j) for j in range(int(n_agents))]

    # --- metrics on the full partitions -----------------------------------------------------
    def local_losses(self, x_i: np.ndarray) -> np.ndarray:
        """L_p(x_i) for every point of the agent's training partition."""
        return self._local_losses.get(x_i, None,
                                      lambda: self.model.losses(x_i, self.images, self.labels))

    def local_mean_loss(self, x_i: np.ndarray) -> float:
        """G_i(x_i): the exact mean loss on the whole local training partition."""
        return float(np.mean(self.local_losses(x_i)))

    def local_objective(self, x_i: np.ndarray, aggregate: float) -> float:
        """F_i(x_i, G) on the whole local training partition."""
        losses = self.local_losses(x_i)
        return penalised_value(losses, np.full(losses.size, 1.0 / losses.size),
                               self.lambda_pen, aggregate)

    def union_cross_entropy(self, x_i: np.ndarray) -> float:
        """Mean cross-entropy of x_i on the whole training set (every agent's data)."""
        data, total = self.data, 0.0
        for start in range(0, data.train_labels.size, _CHUNK):
            part = slice(start, start + _CHUNK)
            total += float(np.sum(self.model.losses(x_i, data.as_float(data.train_images[part]),
                                                    data.train_labels[part])))
        return total / data.train_labels.size

    def test_accuracy(self, x_i: np.ndarray) -> float:
        """Accuracy of x_i on the agent's test partition."""
        return float(np.mean(self.model.predict(x_i, self.test_images) == self.test_labels))

    def own_block(self, w: np.ndarray) -> np.ndarray:
        """x_i from what a method hands the monitor: the stacked estimate **x**_i (length
        m n_i; x_i = R_i **x**_i) or the block x_i itself (length n_i)."""
        w = np.asarray(w, dtype=np.float64)
        if w.size == self.block_size:
            return w
        if w.size == self.n_agents * self.block_size:
            return w[self.agent * self.block_size:(self.agent + 1) * self.block_size]
        raise ValueError(f"agent {self.agent}: a model of {w.size} numbers is neither its "
                         f"block ({self.block_size}) nor a stacked estimate "
                         f"({self.n_agents} x {self.block_size})")

    def evaluator(self, mode: str) -> Evaluator | None:
        """The metrics of ``mode`` (``reference``, ``local``; ``none`` has none).

        The model ``w`` handed to the evaluator is the agent's stacked estimate or its own
        block (:meth:`own_block`); the metrics are those of x_i."""
        if mode == NONE:
            return None
        if mode not in (REFERENCE, LOCAL):
            raise ValueError(f"unknown evaluation mode {mode!r}")
        with_union = mode == REFERENCE
        names = ["objective", "cross_entropy"] + (["union_cross_entropy"] if with_union
                                                  else []) + ["test_accuracy"]

        def terms(w: np.ndarray, aggregate: np.ndarray | None) -> list[float]:
            x_i = self.own_block(w)
            values = [self.local_objective(x_i, _scalar(aggregate, "the aggregate")),
                      self.local_mean_loss(x_i)]
            if with_union:
                values.append(self.union_cross_entropy(x_i))
            return values + [self.test_accuracy(x_i)]

        return AgentMetrics([Metric(name, "mean") for name in names], terms,
                            aggregate=lambda w: [self.local_mean_loss(self.own_block(w))],
                            aggregate_size=1)


def softmax_record_bounds(features: int, classes: int, box: float,
                          lambda_pen: float) -> RecordBounds:
    r"""Assumption 5's constants of eq. (22) with softmax regression, every record a pixel
    vector a in [0, 1]^d (d = ``features``, K = ``classes``) and x in [-B, B]^n_i, B = ``box``.

    With u = (a, 1), ``||u||_2^2 <= d + 1`` and ``||u||_1 <= d + 1``: every logit is at most
    ``S = B (d + 1)`` in magnitude, so the cross-entropy L lies in ``[0, L_max]``,
    ``L_max = 2 S + ln K``; ``||nabla L|| = ||softmax - e_y|| ||u|| <= G = sqrt(2 (d + 1))``;
    the Hessian is ``(diag p - p p^T) (x) u u^T``, so nabla L is ``Lbar = (d + 1)/2``-Lipschitz.
    With ytilde clipped to ``[0, L_max]`` (the aggregate's range), ``c = 1 + 2 lam (L - y)``
    obeys ``|c| <= 1 + 2 lam L_max`` and::

        l = L:        L_l = G, Lbar_l = Lbar, d_l = L_max / 2
        nabla_x h = c nabla L:       half its change over records <= (1 + 2 lam L_max) G,
                                     Lipschitz (1 + 2 lam L_max) Lbar + 2 lam G^2 in x, 2 lam G in y
        nabla_y h = -2 lam (L - y):  half its change <= lam L_max, Lipschitz 2 lam G, 2 lam
    """
    d1 = features + 1.0
    L_max = 2.0 * box * d1 + math.log(classes)
    G = math.sqrt(2.0 * d1)
    Lbar = d1 / 2.0
    c = 1.0 + 2.0 * lambda_pen * L_max
    return RecordBounds(
        L_h=max(c * G, lambda_pen * L_max),
        Lbar_h=max(c * Lbar + 2.0 * lambda_pen * G * G, 2.0 * lambda_pen * G,
                   2.0 * lambda_pen),
        L_l=G, Lbar_l=Lbar, d_l=L_max / 2.0, y_range=(0.0, L_max),
        domain=f"pixels in [0, 1], x in [-{box:g}, {box:g}]^n_i, ytilde clipped to "
               f"[0, {L_max:.4g}]")


# --- the builder ---------------------------------------------------------------------------

def _choice(options: Mapping[str, object], key: str, allowed) -> str:
    value = options.get(key, PERSONALISED_DEFAULTS[key])
    if value not in allowed:
        raise ConfigError(f"{_KEY}{key} = {value!r} is not known",
                          f"use one of {list(allowed)}")
    return str(value)


def personalised_options(options: Mapping[str, object]) -> dict[str, object]:
    """The task's options with defaults filled in, checked (ConfigError names the key).

    An unknown key is refused (a misspelt option would otherwise be silently ignored).
    """
    refuse_unknown_options(options, PERSONALISED_DEFAULTS, "the personalised-learning task")
    lam = options.get("lambda_pen", PERSONALISED_DEFAULTS["lambda_pen"])
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not math.isfinite(lam) \
            or lam < 0:
        raise ConfigError(f"{_KEY}lambda_pen = {lam!r} must be a finite number >= 0",
                          "e.g. lambda_pen = 0.5 (the paper's MNIST value; 0 = purely local "
                          "training)")
    batch = options.get("batch", PERSONALISED_DEFAULTS["batch"])
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"{_KEY}batch = {batch!r} must be an integer >= 1 (samples drawn per "
                          f"iteration)", "e.g. batch = 1 (the paper's one sample per iteration)")
    data_dir = options.get("data_dir", PERSONALISED_DEFAULTS["data_dir"])
    if not isinstance(data_dir, str):
        raise ConfigError(f"{_KEY}data_dir = {data_dir!r} must be a path (a string)",
                          "e.g. data_dir = \"/data/mnist\"")
    return {"dataset": _choice(options, "dataset", DATASETS), "lambda_pen": float(lam),
            "batch": int(batch), "split": _choice(options, "split", SPLITS),
            "data_dir": data_dir, "model": _choice(options, "model", MODELS)}


@lru_cache(maxsize=2)
def _dataset(name: str, data_dir: str) -> ImageData:
    # every agent of a process (tests build several) reads a data set once
    return load_image_data(name, data_dir or None)


def _split(data: ImageData, labels: np.ndarray, n_agents: int, split: str, seed: int,
           which: int) -> list[np.ndarray]:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SPLIT_TAG, which)))
    return split_by_class(labels, n_agents, split, rng, data.classes)


def _sets(data: ImageData):
    return ((_TRAIN, data.train_labels, "training"), (_TEST, data.test_labels, "test"))


def _first_empty(data: ImageData, n_agents: int, split: str, seed: int):
    """(role, agents without samples) for the first of the training/test sets that leaves
    an agent empty, or None."""
    for which, labels, role in _sets(data):
        parts = _split(data, labels, n_agents, split, seed, which)
        empty = [a for a, p in enumerate(parts) if p.size == 0]
        if empty:
            return role, empty
    return None


def _agents_that_fit(data: ImageData, n_agents: int, split: str, seed: int) -> int:
    """A number of agents below ``n_agents`` that leaves none empty (bisection: the largest
    when emptiness grows with the count, as it does in practice; one agent always fits)."""
    lo, hi = 1, n_agents - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _first_empty(data, mid, split, seed) is None:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _agent_rows(data: ImageData, rank: int, n_agents: int, split: str,
                seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Agent ``rank``'s (training, test) rows; refuses a split that leaves an agent empty."""
    found = _first_empty(data, n_agents, split, seed)
    if found is not None:
        role, empty = found
        fits = _agents_that_fit(data, n_agents, split, seed)
        more = " ..." if len(empty) > 10 else ""
        size = data.train_labels.size if role == "training" else data.test_labels.size
        raise ConfigError(
            f"split {split!r} of dataset {data.name!r} ({size} {role} samples) over "
            f"{n_agents} agents leaves agent(s) {empty[:10]}{more} without {role} samples",
            f"use fewer agents (with {fits} agents every agent has samples), or a larger "
            f"dataset")
    train, test = (_split(data, labels, n_agents, split, seed, which)[rank]
                   for which, labels, _ in _sets(data))
    return train, test


def build_personalised(options: Mapping[str, object], rank: int, n_agents: int,
                       seed: int) -> PersonalisedLearning:
    """Agent ``rank``'s personalised-learning problem (options: :data:`PERSONALISED_DEFAULTS`).

    Raises
    ------
    ConfigError
        A bad option, or a split that leaves some agent without training or test samples
        (naming the agents and how many agents fit).
    DataError
        A real data set's files missing or malformed (naming the path expected).
    """
    opts = personalised_options(options)
    data = _dataset(opts["dataset"], opts["data_dir"])
    train, test = _agent_rows(data, rank, n_agents, opts["split"], seed)
    model = make_model(opts["model"], data.image_shape, data.classes)
    return PersonalisedLearning(
        model, data, train, test, lambda_pen=opts["lambda_pen"], batch=opts["batch"],
        sampling=sampling_rng(seed, rank), seed=seed, agent=rank, n_agents=n_agents)
