"""Unit tests for mpi_privopt.problems: losses, clipping, data, reference solutions."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
from scipy.optimize import linprog, minimize

from mpi_privopt.errors import ConfigError, DataError
from mpi_privopt.problems import (
    LOSSES,
    PROBLEMS,
    GlobalProblem,
    LocalProblem,
    ProblemConfig,
    load_agent_data,
    make_local_problem,
    resolve_l1,
    solve_reference,
    true_parameter,
    validate_problem_config,
)
from mpi_privopt.problems.consensus.losses import Huber
from mpi_privopt.problems.consensus.regularizers import penalty_subgradient

SMOOTH = ["squared", "huber", "logistic"]
NONSMOOTH = ["absolute", "hinge"]


def _labels(loss: str, z: np.ndarray, rng) -> np.ndarray:
    if LOSSES[loss].task == "classification":
        return np.where(z + 0.3 * rng.standard_normal(z.size) < 0, -1.0, 1.0)
    return z + 0.3 * rng.standard_normal(z.size)


def _local(loss="squared", M=40, P=6, l1=0.0, l2=0.0, K=3, clip=0.0, seed=0, scale=1.0, **kw):
    rng = np.random.default_rng(seed)
    X = scale * rng.standard_normal((M, P))
    y = _labels(loss, X @ rng.standard_normal(P), rng)
    return LocalProblem(X, y, loss, l1, l2, K, clip=clip, **kw)


def _global(name, K=3, M=20, P=4, seed=3, **overrides):
    cfg = ProblemConfig(name=name, samples=M, features=P, **overrides)
    validate_problem_config(cfg)
    data = [load_agent_data(cfg, k, K, seed) for k in range(K)]
    X_all = np.vstack([X for X, _ in data])
    y_all = np.concatenate([y for _, y in data])
    l1 = resolve_l1(cfg, X_all, y_all)
    return GlobalProblem([make_local_problem(cfg, X, y, K, l1) for X, y in data])


# --------------------------------------------------------------------------- losses


@pytest.mark.parametrize("loss", SMOOTH + ["huber-narrow"])
def test_smooth_gradients_match_finite_differences(loss):
    kw = {"huber_delta": 0.3} if loss == "huber-narrow" else {}
    lp = _local(loss.split("-")[0], l2=0.7, **kw)
    rng = np.random.default_rng(1)
    h = 1e-6
    for _ in range(5):
        w = rng.standard_normal(lp.n_features)
        g = lp.subgradient(w)
        fd = np.array([(lp.value(w + h * e) - lp.value(w - h * e)) / (2 * h)
                       for e in np.eye(lp.n_features)])
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("loss", SMOOTH)
def test_hessian_matches_finite_differences_of_gradient(loss):
    gp = GlobalProblem([_local(loss, l2=0.2, K=2, seed=s) for s in (0, 1)])
    w = np.random.default_rng(2).standard_normal(gp.n_features)
    h = 1e-6
    fd = np.array([(gp.smooth_gradient(w + h * e) - gp.smooth_gradient(w - h * e)) / (2 * h)
                   for e in np.eye(gp.n_features)])
    np.testing.assert_allclose(gp.hessian(w), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss", NONSMOOTH)
def test_nonsmooth_subgradient_is_one_sided_directional_derivative(loss):
    lp = _local(loss, l1=0.3, l2=0.1)
    rng = np.random.default_rng(4)
    s, c, _, _ = lp.loss.pieces(lp.y)
    checked = 0
    for _ in range(50):
        w = rng.standard_normal(lp.n_features)
        t = s * (lp.X @ w) + c
        if np.min(np.abs(t)) < 1e-3 or np.min(np.abs(w)) < 1e-3:
            continue  # at a kink the directional derivative is not linear in d
        g = lp.subgradient(w)
        for d in rng.standard_normal((5, lp.n_features)):
            h = 1e-8
            one_sided = (lp.value(w + h * d) - lp.value(w)) / h
            assert one_sided == pytest.approx(g @ d, rel=1e-5, abs=1e-6)
        checked += 1
    assert checked >= 10


def test_sign_of_zero_is_zero():
    y = np.array([1.0, -1.0, 2.0])
    assert np.all(LOSSES["absolute"].derivative(y.copy(), y) == 0.0)
    # hinge at margin exactly 1: no push
    assert np.all(LOSSES["hinge"].derivative(1.0 / np.array([1.0, -1.0]), np.array([1.0, -1.0])) == 0.0)
    np.testing.assert_array_equal(penalty_subgradient(np.zeros(3), 2.0, 5.0), np.zeros(3))
    lp = LocalProblem(np.eye(2), np.zeros(2), "absolute", 1.0, 0.0, 2)
    np.testing.assert_array_equal(lp.subgradient(np.zeros(2)), np.zeros(2))


def test_losses_have_no_half_and_logistic_is_stable():
    z, y = np.array([3.0]), np.array([1.0])
    assert LOSSES["squared"].value(z, y)[0] == 4.0
    assert LOSSES["squared"].derivative(z, y)[0] == 4.0
    assert LOSSES["absolute"].value(z, y)[0] == 2.0
    hub = Huber(delta=1.0)
    assert hub.value(np.array([0.5]), np.zeros(1))[0] == 0.125
    assert hub.value(z, y)[0] == pytest.approx(1.5)  # delta (|r| - delta/2)
    assert LOSSES["hinge"].value(np.array([0.25]), y)[0] == 0.75
    big = np.array([1000.0, -1000.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        v = LOSSES["logistic"].value(big, np.ones(2))
        d = LOSSES["logistic"].derivative(big, np.ones(2))
    np.testing.assert_allclose(v, [0.0, 1000.0], atol=1e-300)
    np.testing.assert_allclose(d, [0.0, -1.0])
    assert LOSSES["logistic"].value(np.zeros(1), y)[0] == pytest.approx(np.log(2.0))


def test_huber_delta_must_be_positive():
    with pytest.raises(ConfigError, match="huber_delta"):
        Huber(delta=0.0)


# ------------------------------------------------------------------------- clipping


@pytest.mark.parametrize("loss", SMOOTH + NONSMOOTH)
def test_clipping_bounds_norms_and_keeps_small_gradients(loss):
    base = _local(loss, M=200, l1=0.2, l2=0.5, scale=2.0)
    w = np.random.default_rng(5).standard_normal(base.n_features)
    G = base.per_sample_gradients(w)
    norms = np.linalg.norm(G, axis=1)
    clip = float(np.median(norms[norms > 0]))  # half the samples get clipped
    lp = LocalProblem(base.X, base.y, loss, 0.2, 0.5, base.n_agents, clip=clip)
    np.testing.assert_array_equal(lp.per_sample_gradients(w), G)  # stays unclipped
    factors = lp.clip_factors(lp.loss.derivative(lp.X @ w, lp.y))
    clipped = G * factors[:, None]
    assert np.all(np.linalg.norm(clipped, axis=1) <= clip * (1 + 1e-12))
    small, large = norms <= clip, norms > clip
    assert small.any() and large.any()
    np.testing.assert_array_equal(clipped[small], G[small])
    np.testing.assert_allclose(np.linalg.norm(clipped[large], axis=1), clip, rtol=1e-12)
    np.testing.assert_allclose(lp.loss_gradient(w), clipped.mean(axis=0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lp.loss_gradient(w, clipped=False), G.mean(axis=0), rtol=1e-12,
                               atol=1e-14)
    # the regulariser is not clipped
    np.testing.assert_allclose(lp.subgradient(w) - lp.loss_gradient(w),
                               (0.2 * np.sign(w) + 1.0 * w) / lp.n_agents)


@pytest.mark.parametrize("clip", [0.0, None, -1.0])
def test_clipping_off(clip):
    lp = _local("squared", clip=clip, scale=3.0)
    w = np.ones(lp.n_features)
    np.testing.assert_allclose(lp.loss_gradient(w), lp.per_sample_gradients(w).mean(axis=0))
    assert lp.clip == 0.0


# ------------------------------------------------------------------ bounds, smoothness


@pytest.mark.parametrize("loss", SMOOTH + NONSMOOTH)
def test_gradient_bound_bounds_per_sample_norms_in_ball(loss):
    lp = _local(loss, M=100)
    rng = np.random.default_rng(6)
    for radius in (0.0, 0.5, 3.0):
        bound = lp.gradient_bound(radius)
        for _ in range(50):
            w = rng.standard_normal(lp.n_features)
            w *= radius * rng.uniform(0.5, 1.0) ** (1 / lp.n_features) / np.linalg.norm(w)
            assert np.linalg.norm(lp.per_sample_gradients(w), axis=1).max() <= bound * (1 + 1e-12)
        # adversarial point on the sphere, along the largest-norm sample
        j = int(np.argmax(lp.row_norms))
        for sgn in (1.0, -1.0):
            w = sgn * radius * lp.X[j] / lp.row_norms[j]
            assert np.linalg.norm(lp.per_sample_gradients(w), axis=1).max() <= bound * (1 + 1e-12)


def test_squared_gradient_bound_formula():
    lp = _local("squared", M=30)
    r = 2.0
    expected = np.max(2 * lp.row_norms * (lp.row_norms * r + np.abs(lp.y)))
    assert lp.gradient_bound(r) == pytest.approx(expected)


@pytest.mark.parametrize("loss,curv", [("squared", 2.0), ("huber", 1.0), ("logistic", 0.25)])
def test_smoothness_is_a_lipschitz_constant(loss, curv):
    lp = _local(loss, l2=0.3, K=4)
    lam = np.linalg.eigvalsh(lp.X.T @ lp.X).max()
    L = lp.smoothness()
    assert L == pytest.approx(curv * lam / lp.n_samples + 2 * 0.3 / 4)
    rng = np.random.default_rng(7)
    for _ in range(30):
        a, b = rng.standard_normal((2, lp.n_features))
        diff = np.linalg.norm(lp.subgradient(a) - lp.subgradient(b))
        assert diff <= L * np.linalg.norm(a - b) * (1 + 1e-10)


@pytest.mark.parametrize("loss", NONSMOOTH)
def test_nonsmooth_losses_have_no_smoothness(loss):
    assert _local(loss).smoothness() is None


# ---------------------------------------------------------------------- synthetic


def test_synthetic_data_deterministic_and_order_independent():
    cfg = ProblemConfig(samples=7, features=3)
    forward = [load_agent_data(cfg, k, 5, 11) for k in range(5)]
    backward = [load_agent_data(cfg, k, 5, 11) for k in reversed(range(5))][::-1]
    only3 = load_agent_data(cfg, 3, 5, 11)
    for (Xa, ya), (Xb, yb) in zip(forward, backward):
        np.testing.assert_array_equal(Xa, Xb)
        np.testing.assert_array_equal(ya, yb)
    np.testing.assert_array_equal(only3[0], forward[3][0])
    # independent of K as well: agent 3 of a 4-agent job has the same data
    np.testing.assert_array_equal(load_agent_data(cfg, 3, 4, 11)[0], forward[3][0])
    assert forward[0][0].shape == (7, 3) and forward[0][1].shape == (7,)
    assert not np.allclose(forward[0][0], forward[1][0])
    assert not np.allclose(load_agent_data(cfg, 0, 5, 12)[0], forward[0][0])


def test_synthetic_labels_follow_shared_parameter():
    cfg = ProblemConfig(samples=10, features=4, noise=0.0)
    w0 = true_parameter(5, 4)
    for k in range(3):
        X, y = load_agent_data(cfg, k, 3, 5)
        np.testing.assert_allclose(y, X @ w0)
    Xc, yc = load_agent_data(ProblemConfig(name="svm", samples=50, features=4, noise=0.0), 1, 3, 5)
    assert set(np.unique(yc)) <= {-1.0, 1.0} and yc.dtype == np.float64
    np.testing.assert_array_equal(yc, np.where(Xc @ w0 < 0, -1.0, 1.0))


# ----------------------------------------------------------------------- files


def _dataset(K=3, per=4, P=2, seed=0):
    rng = np.random.default_rng(seed)
    agent = np.repeat(np.arange(K), per)
    rng.shuffle(agent)
    X = rng.standard_normal((K * per, P))
    y = rng.standard_normal(K * per)
    return X, y, agent


def _write_csv(path, header, rows):
    with open(path, "w") as fh:
        fh.write(",".join(header) + "\n")
        for row in rows:
            fh.write(",".join(str(v) for v in row) + "\n")


def test_single_npz(tmp_path):
    X, y, agent = _dataset()
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y, agent=agent)
    cfg = ProblemConfig(data=str(path))
    for k in range(3):
        Xk, yk = load_agent_data(cfg, k, 3, 0)
        np.testing.assert_array_equal(Xk, X[agent == k])
        np.testing.assert_array_equal(yk, y[agent == k])


def test_single_csv_with_target_column(tmp_path):
    X, y, agent = _dataset()
    path = tmp_path / "d.csv"
    _write_csv(path, ["f1", "target", "Agent", "f2"],
               [(X[i, 0], repr(float(y[i])), agent[i], X[i, 1]) for i in range(len(y))])
    Xk, yk = load_agent_data(ProblemConfig(data=str(path)), 2, 3, 0)
    np.testing.assert_allclose(Xk, X[agent == 2])
    np.testing.assert_array_equal(yk, y[agent == 2])


@pytest.mark.parametrize("ext", ["npz", "csv"])
def test_per_agent_files(tmp_path, ext):
    X, y, agent = _dataset()
    for k in range(3):
        if ext == "npz":
            np.savez(tmp_path / f"agent_{k}.npz", X=X[agent == k], y=y[agent == k])
        else:
            _write_csv(tmp_path / f"agent_{k}.csv", ["y", "a", "b"],
                       [(repr(float(v)), repr(float(r[0])), repr(float(r[1])))
                        for r, v in zip(X[agent == k], y[agent == k])])
    cfg = ProblemConfig(data=str(tmp_path / ("agent_{agent}." + ext)))
    Xk, yk = load_agent_data(cfg, 1, 3, 0)
    np.testing.assert_array_equal(Xk, X[agent == 1])
    np.testing.assert_array_equal(yk, y[agent == 1])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_values_rejected_npz(tmp_path, bad):
    X, y, agent = _dataset()
    X[5, 1] = bad
    X[7, 0] = bad
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y, agent=agent)
    with pytest.raises(DataError, match=r"d\.npz.*2 non-finite.*data row 6"):
        load_agent_data(ProblemConfig(data=str(path)), 0, 3, 0)


def test_nan_and_empty_field_rejected_csv(tmp_path):
    path = tmp_path / "d.csv"
    _write_csv(path, ["agent", "y", "x"], [(0, 1.0, 2.0), (1, "nan", 1.0), (1, 2.0, "")])
    with pytest.raises(DataError, match=r"d\.csv: 2 non-finite.*in 2 row\(s\), first at data row 2"):
        load_agent_data(ProblemConfig(data=str(path)), 0, 2, 0)


def test_agent_column_missing_agents_named(tmp_path):
    X, y, agent = _dataset(K=3)
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y, agent=agent)
    with pytest.raises(DataError) as err:
        load_agent_data(ProblemConfig(data=str(path)), 0, 5, 0)
    msg = str(err.value)
    assert "[3, 4]" in msg and "5 ranks" in msg and "d.npz" in msg
    assert "how to fix" in msg


def test_agent_column_out_of_range_named(tmp_path):
    X, y, agent = _dataset(K=4)
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y, agent=agent)
    with pytest.raises(DataError, match=r"values \[3\] are out of range 0\.\.2"):
        load_agent_data(ProblemConfig(data=str(path)), 0, 3, 0)


def test_single_file_without_agent_column(tmp_path):
    path = tmp_path / "d.csv"
    _write_csv(path, ["y", "x"], [(1.0, 2.0)])
    with pytest.raises(DataError, match="no 'agent' column"):
        load_agent_data(ProblemConfig(data=str(path)), 0, 1, 0)


def test_missing_files(tmp_path):
    with pytest.raises(DataError, match="nope.npz.*does not exist"):
        load_agent_data(ProblemConfig(data=str(tmp_path / "nope.npz")), 0, 2, 0)
    with pytest.raises(DataError, match="is a directory, not a file"):
        load_agent_data(ProblemConfig(data=str(tmp_path)), 0, 2, 0)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(bytes(range(256)) * 2)
    with pytest.raises(DataError, match="not a numpy.savez archive") as err:
        load_agent_data(ProblemConfig(data=str(garbage)), 0, 2, 0)
    assert "pickle" not in str(err.value)   # numpy's hint to load it unsafely is not passed on
    # a zip whose members are not .npy arrays: numpy hands back their bytes (before: an
    # AttributeError traceback from every rank)
    with zipfile.ZipFile(garbage, "w") as archive:
        for name in ("X", "y", "agent"):
            archive.writestr(f"{name}.npy", b"garbage")
    with pytest.raises(DataError, match=r"not a numpy.savez archive of arrays: \[X, agent, y\] "
                                        "are not .npy arrays"):
        load_agent_data(ProblemConfig(data=str(garbage)), 0, 2, 0)
    np.savez(tmp_path / "a_0.npz", X=np.ones((2, 2)), y=np.ones(2))
    with pytest.raises(DataError, match=r"a_1\.npz.*agent 1"):
        load_agent_data(ProblemConfig(data=str(tmp_path / "a_{agent}.npz")), 1, 2, 0)


def test_per_agent_zero_rows_and_feature_mismatch(tmp_path):
    _write_csv(tmp_path / "a_0.csv", ["y", "x1", "x2"], [(1.0, 2.0, 3.0)])
    _write_csv(tmp_path / "a_1.csv", ["y", "x1", "x2"], [])
    _write_csv(tmp_path / "a_2.csv", ["y", "x1"], [(1.0, 2.0)])
    cfg = ProblemConfig(data=str(tmp_path / "a_{agent}.csv"))
    with pytest.raises(DataError, match=r"a_1\.csv.*agent 1 has zero rows"):
        load_agent_data(cfg, 1, 3, 0)
    with pytest.raises(DataError, match=r"agent 2 has 1 features but .*a_0\.csv \(agent 0\) has 2"):
        load_agent_data(cfg, 2, 3, 0)
    np.savez(tmp_path / "b_0.npz", X=np.ones((2, 3)), y=np.ones(2))
    np.savez(tmp_path / "b_1.npz", X=np.ones((2, 2)), y=np.ones(2))
    with pytest.raises(DataError, match="has 2 features but"):
        load_agent_data(ProblemConfig(data=str(tmp_path / "b_{agent}.npz")), 1, 2, 0)


def test_classification_labels(tmp_path):
    X, _, agent = _dataset()
    y01 = (np.arange(len(agent)) % 2).astype(float)
    path = tmp_path / "c.npz"
    np.savez(path, X=X, y=y01, agent=agent)
    _, yk = load_agent_data(ProblemConfig(name="logistic", data=str(path)), 0, 3, 0)
    np.testing.assert_array_equal(yk, np.where(y01[agent == 0] == 0, -1.0, 1.0))
    np.savez(path, X=X, y=y01 * 3 - 1, agent=agent)  # {-1, 2}
    with pytest.raises(DataError, match=r"c\.npz.*\{-1, \+1\}.*\[2\.0\]"):
        load_agent_data(ProblemConfig(name="svm", data=str(path)), 0, 3, 0)
    # regression problems take any finite labels
    load_agent_data(ProblemConfig(name="ridge", data=str(path)), 0, 3, 0)


# ---------------------------------------------------------------------- config


def test_unknown_problem_lists_valid_names():
    with pytest.raises(ConfigError) as err:
        validate_problem_config(ProblemConfig(name="rigde"))
    for name in PROBLEMS:
        assert name in str(err.value)


@pytest.mark.parametrize("field,value", [
    ("samples", 0), ("features", -1), ("samples", 2.5), ("noise", -0.1), ("clip", -1.0),
    ("l2", -1.0), ("l1", -0.5), ("l1", "automatic"), ("huber_delta", 0.0), ("noise", float("nan")),
])
def test_invalid_config_values(field, value):
    with pytest.raises(ConfigError, match=field):
        validate_problem_config(ProblemConfig(**{field: value}))


def test_unknown_loss_lists_losses():
    with pytest.raises(ConfigError) as err:
        validate_problem_config(ProblemConfig(loss="sqaured"))
    for name in LOSSES:
        assert name in str(err.value)


def test_valid_configs_pass():
    for name in PROBLEMS:
        validate_problem_config(ProblemConfig(name=name))
    validate_problem_config(ProblemConfig(l1="auto", l2=0.0, clip=1.0, loss="huber"))


def test_l1_auto_and_overrides():
    rng = np.random.default_rng(8)
    X, y = rng.standard_normal((30, 4)), rng.standard_normal(30)
    auto = 0.001 * np.max(np.abs(X.T @ y))
    assert resolve_l1(ProblemConfig(name="lasso"), X, y) == pytest.approx(auto, rel=1e-14)
    assert resolve_l1(ProblemConfig(name="ridge", l1="auto"), X, y) == pytest.approx(auto)
    assert resolve_l1(ProblemConfig(name="lasso", l1=0.25), X, y) == 0.25
    assert resolve_l1(ProblemConfig(name="ridge"), X, y) == 0.0


def test_make_local_problem_uses_config():
    cfg = ProblemConfig(name="huber", loss="huber", huber_delta=0.5, clip=2.0, l2=0.3)
    X, y = load_agent_data(cfg, 1, 4, 0)
    lp = make_local_problem(cfg, X, y, 4, 0.1)
    assert (lp.n_samples, lp.n_features, lp.n_agents) == (50, 8, 4)
    assert (lp.l1, lp.l2, lp.clip) == (0.1, 0.3, 2.0)
    assert lp.loss == Huber(delta=0.5)
    assert make_local_problem(ProblemConfig(name="svm"), X, np.sign(y), 4, 0.0).l2 == 0.01
    assert make_local_problem(ProblemConfig(name="ridge", loss="absolute"), X, y, 4, 0.0).loss.name == "absolute"


# ---------------------------------------------------------------- global problem


def test_global_value_is_sum_of_locals():
    gp = _global("elastic-net", K=3)
    rng = np.random.default_rng(9)
    w = rng.standard_normal(gp.n_features)
    assert gp.value(w) == pytest.approx(sum(lp.value(w) for lp in gp.locals), rel=1e-13)
    W = rng.standard_normal((3, gp.n_features))
    assert gp.value_at(W) == pytest.approx(sum(lp.value(W[k]) for k, lp in enumerate(gp.locals)))
    np.testing.assert_allclose(gp.subgradient(w),
                               sum(lp.subgradient(w) for lp in gp.locals), rtol=1e-12)


def test_global_rejects_inconsistent_locals():
    a = _local("squared", K=2)
    with pytest.raises(ConfigError, match="differs"):
        GlobalProblem([a, _local("absolute", K=2)])
    with pytest.raises(ConfigError, match="K = 2"):
        GlobalProblem([a])


# -------------------------------------------------------------------- reference


def _rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def _assert_beats_perturbations(gp, w, n=300):
    rng = np.random.default_rng(10)
    f = gp.value(w)
    for scale in (1e-6, 1e-3, 1e-1):
        for d in rng.standard_normal((n // 3, gp.n_features)):
            assert f <= gp.value(w + scale * d) + 1e-13 * max(1.0, abs(f))


def _certificate_residual(gp, w):
    """Independent optimality check for piecewise-linear losses: smallest inf-norm of
    an element of dF(w), with kink multipliers and l1 subgradients chosen by an LP."""
    s, c, lo, hi = gp.loss.pieces(gp.y)
    A = s[:, None] * gp.X
    t = A @ w + c
    kink = np.abs(t) <= 1e-9 * (1 + np.abs(A) @ np.abs(w) + np.abs(c))
    base = A[~kink].T @ (gp.weights * np.where(t > 0, hi, lo))[~kink] + 2 * gp.l2 * w
    zero = (np.abs(w) <= 1e-12) if gp.l1 else np.zeros(gp.n_features, bool)
    base += gp.l1 * np.sign(w)
    M = A[kink].T * gp.weights[kink]
    E = np.zeros((gp.n_features, zero.sum()))
    E[np.flatnonzero(zero), np.arange(zero.sum())] = gp.l1
    ones = np.ones((gp.n_features, 1))
    A_ub = np.vstack([np.hstack([M, E, -ones]), np.hstack([-M, -E, -ones])])
    cost = np.zeros(A_ub.shape[1])
    cost[-1] = 1
    res = linprog(cost, A_ub=A_ub, b_ub=np.concatenate([-base, base]),
                  bounds=[(lo, hi)] * M.shape[1] + [(-1, 1)] * E.shape[1] + [(0, None)],
                  method="highs")
    assert res.status == 0
    return res.fun


def _smooth_optimality(gp, w):
    g = gp.smooth_gradient(w)
    on = w != 0
    viol_on = np.abs(g[on] + gp.l1 * np.sign(w[on]))
    viol_off = np.maximum(np.abs(g[~on]) - gp.l1, 0)
    return max(viol_on.max(initial=0), viol_off.max(initial=0))


def test_ridge_closed_form_equals_newton_and_lbfgs():
    gp = _global("ridge", K=4, M=15, P=6)
    ref = solve_reference(gp)
    assert ref.method.startswith("closed-form") and ref.converged
    other = solve_reference(gp, method="newton")
    assert _rel(other.w, ref.w) <= 1e-10
    lb = minimize(gp.value, np.zeros(gp.n_features), jac=gp.subgradient, method="L-BFGS-B",
                  options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
    assert _rel(lb.x, ref.w) <= 1e-6
    # normal equations with the 1/M_k weights
    H = sum(2 / lp.n_samples * lp.X.T @ lp.X for lp in gp.locals) + 2 * gp.l2 * np.eye(gp.n_features)
    b = sum(2 / lp.n_samples * lp.X.T @ lp.y for lp in gp.locals)
    assert _rel(np.linalg.solve(H, b), ref.w) <= 1e-10
    assert ref.value == pytest.approx(gp.value(ref.w))


@pytest.mark.parametrize("name,extra", [("elastic-net", {}), ("lasso", {}),
                                        ("lasso", {"l1": 3.0}), ("elastic-net", {"features": 12})])
def test_l1_problems_satisfy_subgradient_optimality(name, extra):
    P = extra.pop("features", 6)
    gp = _global(name, K=3, M=10, P=P, **extra)
    ref = solve_reference(gp)
    assert ref.converged and gp.l1 > 0
    assert _smooth_optimality(gp, ref.w) <= 1e-8
    if name == "lasso" and gp.l1 == 3.0:
        assert np.count_nonzero(ref.w) < P  # the test must exercise zeros
    _assert_beats_perturbations(gp, ref.w)


@pytest.mark.parametrize("name,extra", [("logistic", {}), ("huber", {}), ("huber", {"l1": 0.05}),
                                        ("logistic", {"l1": 0.02})])
def test_smooth_references_are_stationary(name, extra):
    gp = _global(name, K=3, M=20, P=5, noise=0.5, **extra)
    ref = solve_reference(gp)
    assert ref.converged
    assert _smooth_optimality(gp, ref.w) <= 1e-10
    bf = minimize(gp.value, np.zeros(gp.n_features), method="Powell",
                  options={"xtol": 1e-10, "ftol": 1e-15, "maxiter": 100000})
    assert ref.value <= bf.fun + 1e-12
    assert _rel(bf.x, ref.w) <= 1e-4


@pytest.mark.parametrize("name,extra", [
    ("lad", {}), ("lad", {"l1": 0.05}), ("lad", {"l2": 0.1}), ("lad", {"l1": 0.05, "l2": 0.1}),
    ("svm", {}), ("svm", {"l1": 0.02}), ("svm", {"l2": 0.0, "l1": 0.02}), ("lad", {"noise": 0.0}),
])
def test_piecewise_references_are_certified_optimal(name, extra):
    gp = _global(name, K=3, M=15, P=4, **extra)
    ref = solve_reference(gp)
    assert ref.converged and "polish" in ref.method
    assert _certificate_residual(gp, ref.w) <= 1e-10
    _assert_beats_perturbations(gp, ref.w)


@pytest.mark.parametrize("name,extra", [("lad", {}), ("svm", {}), ("lad", {"l2": 0.05}),
                                        ("svm", {"l1": 0.03})])
def test_piecewise_references_match_brute_force_on_tiny_problems(name, extra):
    gp = _global(name, K=2, M=6, P=2, noise=0.5, **extra)
    ref = solve_reference(gp)
    best = None
    for start in np.random.default_rng(11).standard_normal((8, 2)):
        r = minimize(gp.value, start, method="Nelder-Mead",
                     options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000})
        best = r if best is None or r.fun < best.fun else best
    assert ref.value <= best.fun + 1e-12
    if gp.l2 > 0:  # strongly convex: unique minimiser
        assert np.linalg.norm(best.x - ref.w) <= 1e-5


def test_lp_vertex_is_exact():
    gp = _global("lad", K=3, M=15, P=4)
    ref = solve_reference(gp)
    # at an LP vertex P residuals vanish; w solves that square system exactly
    r = gp.X @ ref.w - gp.y
    kinks = np.argsort(np.abs(r))[: gp.n_features]
    exact = np.linalg.solve(gp.X[kinks], gp.y[kinks])
    assert np.max(np.abs(r[kinks])) <= 1e-12 * (1 + np.abs(gp.y).max())
    assert _rel(ref.w, exact) <= 1e-12


def test_reference_ignores_clipping_and_rejects_wrong_method():
    gp = _global("ridge", K=2)
    gp_clip = _global("ridge", K=2, clip=0.1)
    np.testing.assert_allclose(solve_reference(gp_clip).w, solve_reference(gp).w, rtol=1e-13)
    with pytest.raises(ConfigError, match="does not apply"):
        solve_reference(gp, method="lp")


def test_separable_unregularised_logistic_is_not_converged():
    gp = _global("logistic", K=2, M=5, P=4, noise=0.0, l2=0.0)
    ref = solve_reference(gp)
    assert np.all(gp.y * (gp.X @ ref.w) > 0) and not ref.converged


# --------------------------------------------------------------------------- sampling oracle


def _sampled(seed=4, agent=1, M=30, **kw):
    from mpi_privopt.problems import sampling_rng
    return _local(M=M, rng=sampling_rng(seed, agent), **kw)


def test_minibatches_are_reproducible_per_seed_and_agent():
    from mpi_privopt.problems import sampling_rng
    a, b = _sampled(), _sampled()
    batches_a = [a.minibatch(size) for size in (3, 7, 30, 1)]
    batches_b = [b.minibatch(size) for size in (3, 7, 30, 1)]
    for x, y in zip(batches_a, batches_b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(batches_a[0], a.minibatch(3))  # successive batches differ
    # another agent or another seed draws other rows
    assert not np.array_equal(_sampled(agent=2).minibatch(10), _sampled().minibatch(10))
    assert not np.array_equal(_sampled(seed=5).minibatch(10), _sampled().minibatch(10))
    # the stream is the agent's own: it does not depend on the number of agents, nor
    # on the agent's general stream SeedSequence(seed).spawn(K)[k]
    general = np.random.default_rng(np.random.SeedSequence(4).spawn(3)[1]).random(4)
    assert not np.array_equal(sampling_rng(4, 1).random(4), general)


def test_minibatches_come_only_from_the_agents_own_rows():
    lp = _sampled(M=30)
    seen = set()
    for _ in range(50):
        rows = lp.minibatch(8)
        assert rows.size == 8 and np.unique(rows).size == 8  # without replacement
        assert rows.min() >= 0 and rows.max() < lp.n_samples
        seen.update(rows.tolist())
    assert seen == set(range(30))  # every own row can be drawn, none other exists
    with pytest.raises(ValueError, match="1 <= size <= 30"):
        lp.minibatch(31)
    with pytest.raises(ValueError, match="sampling generator"):
        _local().minibatch(3)


@pytest.mark.parametrize("clip", [0.0, 0.5])
def test_stochastic_subgradient_is_the_subgradient_on_the_batch(clip):
    lp = _sampled(loss="huber", l1=0.3, l2=0.2, clip=clip)
    w = np.random.default_rng(0).standard_normal(lp.n_features)
    rows = lp.minibatch(9)
    on_batch = LocalProblem(lp.X[rows], lp.y[rows], lp.loss, lp.l1, lp.l2, lp.n_agents, clip=clip)
    np.testing.assert_allclose(lp.batch_loss_gradient(w, rows), on_batch.loss_gradient(w),
                               rtol=1e-14, atol=0)
    # the whole data set as a batch is the full gradient, bit for bit
    np.testing.assert_array_equal(lp.batch_loss_gradient(w, np.arange(lp.n_samples)),
                                  lp.loss_gradient(w))
    # a fresh oracle with the same seed draws the same first batch
    replay = _sampled(loss="huber", l1=0.3, l2=0.2, clip=clip)
    np.testing.assert_allclose(replay.stochastic_subgradient(w, 9), on_batch.subgradient(w),
                               rtol=1e-14, atol=1e-15)


# --------------------------------------------------------------------------- metrics


def test_reference_metrics_are_the_consensus_distances():
    from mpi_privopt.problems.metrics import ConsensusToReference
    locals_ = [_local(K=3, seed=s, l2=0.5) for s in range(3)]
    W = np.random.default_rng(7).standard_normal((3, locals_[0].n_features))
    w_c, optimum = np.full(W.shape[1], 0.3), 1.25
    evaluators = [lp.evaluator("reference", ReferenceStub(w_c, optimum)) for lp in locals_]
    assert all(isinstance(e, ConsensusToReference) for e in evaluators)
    w_bar = np.mean([e.aggregate_share(w) for e, w in zip(evaluators, W)], axis=0)
    terms = np.array([e.terms(w, w_bar) for e, w in zip(evaluators, W)])
    values = evaluators[0].combine(terms)
    assert values["error"] == pytest.approx(np.sum((W - w_c) ** 2) / (w_c @ w_c), rel=1e-14)
    assert values["objective_gap"] == sum(lp.value(w) for lp, w in zip(locals_, W)) - optimum
    assert values["consensus_gap"] == pytest.approx(
        np.mean(np.sum((W - W.mean(axis=0)) ** 2, axis=1)), rel=1e-14)


class ReferenceStub:
    def __init__(self, w, value):
        self.w, self.value = w, value


@pytest.mark.parametrize("loss,columns", [
    ("squared", ("objective", "training_loss")),
    ("logistic", ("objective", "training_loss", "training_accuracy")),
])
def test_local_metrics_are_reductions_of_each_agents_scalars(loss, columns):
    locals_ = [_local(loss, K=2, seed=s, l2=0.1) for s in range(2)]
    evaluators = [lp.evaluator("local") for lp in locals_]
    assert evaluators[0].columns == columns and evaluators[0].aggregate_size == 0
    W = np.random.default_rng(3).standard_normal((2, locals_[0].n_features))
    values = evaluators[0].combine(np.array([e.terms(w, None) for e, w in zip(evaluators, W)]))
    assert values["objective"] == locals_[0].value(W[0]) + locals_[1].value(W[1])
    assert values["training_loss"] == pytest.approx(
        np.mean([lp.data_value(w) for lp, w in zip(locals_, W)]), rel=1e-15)
    if "training_accuracy" in columns:
        correct = [np.mean(np.sign(lp.X @ w) == lp.y) for lp, w in zip(locals_, W)]
        assert values["training_accuracy"] == pytest.approx(np.mean(correct))
    assert locals_[0].evaluator("none") is None


def test_an_aggregate_is_averaged_before_the_per_agent_terms():
    from mpi_privopt.problems.metrics import AgentMetrics, Metric
    # F(x) = sum_i ||x_i - g||^2 with g = mean_i x_i: an aggregative cost
    metrics = AgentMetrics([Metric("cost", "sum")], lambda x, g: (float(np.sum((x - g) ** 2)),),
                           aggregate=lambda x: x, aggregate_size=2)
    X = np.array([[1.0, 0.0], [3.0, 2.0]])
    g = np.mean([metrics.aggregate_share(x) for x in X], axis=0)
    assert metrics.combine(np.array([metrics.terms(x, g) for x in X])) == {"cost": 4.0}
    with pytest.raises(ValueError, match="aggregate"):
        AgentMetrics([Metric("cost", "sum")], lambda x, g: (0.0,), aggregate_size=2)
    with pytest.raises(ValueError, match="reductions"):
        AgentMetrics([Metric("cost", "median")], lambda x, g: (0.0,))


def test_auto_l1_is_refused_where_no_data_may_be_gathered():
    from mpi_privopt.problems.config import local_l1
    cfg = ProblemConfig(name="elastic-net")
    assert local_l1(cfg, "reference") is None  # resolved from the gathered data
    for mode in ("local", "none"):
        with pytest.raises(ConfigError, match="auto"):
            local_l1(cfg, mode)
    assert local_l1(ProblemConfig(name="elastic-net", l1=0.02), "none") == 0.02
    assert local_l1(ProblemConfig(name="ridge"), "local") == 0.0
    assert local_l1(ProblemConfig(name="polynomial", features=2), "none") is None
