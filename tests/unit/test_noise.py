"""Tests of the noise sources (``mpi_privopt.privacy.noise``).

Statistical checks compare a sample with the nominal law at thresholds fixed in advance,
never tuned to the sample:

* the sample mean within 5 standard errors of 0 (SE = sd / sqrt(n));
* the sample variance within 5 SE of the nominal variance, with the exact SE of the unbiased
  variance estimator, Var(s^2) = mu4/n - sigma^4 (n - 3) / (n (n - 1)), where
  mu4 = 3 sigma^4 for N(0, sigma^2) and mu4 = 24 b^4 for Laplace(0, b) (variance 2 b^2);
* P(|X| > t * scale) for t = 1, 2, 3 within 5 binomial SEs sqrt(p (1 - p) / n) of the
  nominal 2 (1 - Phi(t)) (Gaussian) or exp(-t) (Laplace);
* a Kolmogorov-Smirnov test against the nominal CDF with p > 1e-3.

Fast mode uses fixed seeds, so its checks are deterministic. Secure mode draws from OS
entropy and cannot be seeded: a 5-SE check then fails by chance with probability ~6e-7,
and the KS test is declared failed only if two independent samples both give p <= 1e-3
(chance 1e-6), while a wrong law fails both. The secure samples (50 000 draws per law)
take a few milliseconds; tests/unit/test_exact_sampling.py checks the exact laws.
"""
from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest
from scipy import stats

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import exact_sampling
from mpi_privopt.privacy import noise as noise_mod
from mpi_privopt.privacy.noise import (
    NOISE_MODES,
    FastNoise,
    SecureNoise,
    agent_noise,
    link_noise,
)

#: why the secure-noise tests skip without the 'secure' extra (CI installs it)
NEEDS_SECURE = "secure noise needs cryptography (pip install 'mpi_privopt[secure]')"

Z = 5.0  # standard errors allowed
KS_P = 1e-3
SIGMA = 1.7  # Gaussian standard deviation under test
B = 0.6  # Laplace scale under test
N_FAST = 200_000
N_SECURE = 50_000


# ---- the nominal laws ------------------------------------------------------------------
def _nominal(law: str, scale: float) -> dict:
    if law == "gaussian":
        return {"var": scale ** 2, "mu4": 3 * scale ** 4,
                "tail": lambda t: 2 * stats.norm.sf(t), "ks": ("norm", (0.0, scale))}
    return {"var": 2 * scale ** 2, "mu4": 24 * scale ** 4,
            "tail": lambda t: math.exp(-t), "ks": ("laplace", (0.0, scale))}


def _check_moments_and_tails(x: np.ndarray, law: str, scale: float) -> None:
    n = x.size
    nom = _nominal(law, scale)
    var = nom["var"]
    mean_se = math.sqrt(var / n)
    assert abs(x.mean()) < Z * mean_se, (law, x.mean(), mean_se)
    var_se = math.sqrt(nom["mu4"] / n - var ** 2 * (n - 3) / (n * (n - 1)))
    assert abs(x.var(ddof=1) - var) < Z * var_se, (law, x.var(ddof=1), var, var_se)
    for t in (1, 2, 3):
        p = nom["tail"](t)
        se = math.sqrt(p * (1 - p) / n)
        got = np.mean(np.abs(x) > t * scale)
        assert abs(got - p) < Z * se, (law, t, got, p, se)


def _ks_p(x: np.ndarray, law: str, scale: float) -> float:
    name, args = _nominal(law, scale)["ks"]
    return stats.kstest(x, name, args=args).pvalue


def _draw(src, law: str, scale: float, n: int) -> np.ndarray:
    return getattr(src, law)(scale, n)


SCALES = {"gaussian": SIGMA, "laplace": B}


# ---- fast mode: the laws ------------------------------------------------------------------
@pytest.mark.parametrize("law", ["gaussian", "laplace"])
def test_fast_law(law):
    scale = SCALES[law]
    x = _draw(agent_noise("fast", 20240611, 3), law, scale, N_FAST)
    assert x.dtype == np.float64 and x.shape == (N_FAST,)
    _check_moments_and_tails(x, law, scale)
    assert _ks_p(x, law, scale) > KS_P


# ---- secure mode: the laws ------------------------------------------------------------------
@pytest.fixture(scope="module")
def secure():
    pytest.importorskip("cryptography", reason=NEEDS_SECURE)
    return SecureNoise()


@pytest.mark.parametrize("law", ["gaussian", "laplace"])
def test_secure_law(secure, law):
    scale = SCALES[law]
    x = _draw(secure, law, scale, N_SECURE)
    assert x.dtype == np.float64 and x.shape == (N_SECURE,)
    _check_moments_and_tails(x, law, scale)
    p = _ks_p(x, law, scale)
    if p <= KS_P:  # see the module docstring: a second, independent sample must fail too
        p2 = _ks_p(_draw(secure, law, scale, N_SECURE), law, scale)
        assert p2 > KS_P, (law, p, p2)


@pytest.mark.parametrize("law", ["gaussian", "laplace"])
def test_secure_draws_lie_on_the_lattice(secure, law):
    g = secure.granularity
    assert g == 2.0 ** -30
    x = _draw(secure, law, 1.0, 5000)
    assert np.array_equal(np.round(x / g) * g, x)
    assert np.all(np.abs(x / g) < 2.0 ** 53)
    coarse = SecureNoise(granularity=2.0 ** -12)
    y = _draw(coarse, law, 1.0, 5000)
    assert np.array_equal(np.round(y * 2.0 ** 12), y * 2.0 ** 12)
    assert len(np.unique(y)) > 1000  # 4096 lattice points per unit: still a fine law


def test_secure_source_survives_a_checkpoint(secure):
    # a run's final state saves its noise source (services/state_codec.py): the sampler
    # module is not saved but imported again, and the restored source draws on the same
    # lattice
    import json
    from mpi_privopt.services.state_codec import decode_state, encode_state
    tree, arrays = encode_state({"noise": secure}, {})
    assert "exact_sampling" not in json.dumps(tree)
    restored = decode_state(tree, arrays, {})["noise"]
    assert restored.granularity == secure.granularity
    x = restored.gaussian(1.0, 1000)
    g = restored.granularity
    assert np.array_equal(np.round(x / g) * g, x) and len(np.unique(x)) > 900


def test_secure_shapes_chunks_and_zero_scale(secure, monkeypatch):
    monkeypatch.setattr(exact_sampling, "_CHUNK", 1000)
    n = 3 * 1000 + 17  # four vectorised chunks, two sizes
    x = secure.gaussian(1.0, (n,))
    assert x.shape == (n,) and np.all(np.isfinite(x))
    # ~2**32 likely lattice points: a tie is rare, and no chunk repeats another
    assert len(np.unique(x)) > n - 5
    assert not np.array_equal(x[:17], x[-17:])
    assert not np.array_equal(x[:1000], x[1000:2000])
    assert secure.laplace(1.0, (3, 4)).shape == (3, 4)
    assert secure.gaussian(1.0, ()).shape == ()
    assert secure.gaussian(1.0, 0).shape == (0,)
    assert np.array_equal(secure.gaussian(0.0, 5), np.zeros(5))
    assert np.array_equal(secure.laplace(0.0, (2, 2)), np.zeros((2, 2)))


def test_secure_is_not_reproducible():
    pytest.importorskip("cryptography", reason=NEEDS_SECURE)
    a = agent_noise("secure", 1, 0).gaussian(1.0, 100)
    b = agent_noise("secure", 1, 0).gaussian(1.0, 100)
    assert not np.array_equal(a, b)


def test_secure_round_to_grid_and_sensitivity(secure):
    g = secure.granularity
    rng = np.random.default_rng(5)
    v = rng.normal(0, 10, size=1000)
    r = secure.round_to_grid(v)
    assert r.dtype == np.float64
    assert np.all(np.abs(r - v) <= g / 2)
    assert np.array_equal(np.round(r / g) * g, r)  # on the lattice
    assert np.array_equal(secure.round_to_grid(r), r)  # idempotent
    # a lattice value plus lattice noise is exactly a lattice point
    s = r + secure.gaussian(1.0, 1000)
    assert np.array_equal(np.round(s / g) * g, s)
    assert secure.effective_sensitivity(1.0, 100, "l2") == 1.0 + g * 10
    assert secure.effective_sensitivity(1.0, 100, "l1") == 1.0 + g * 100
    with pytest.raises(ConfigError):
        secure.effective_sensitivity(1.0, 100, "linf")


def test_secure_scale_out_of_lattice_range(secure):
    with pytest.raises(ConfigError, match="granularity"):
        secure.gaussian(1e-9, 10)  # ~1 grid step
    with pytest.raises(ConfigError, match="granularity"):
        secure.laplace(1e6, 10)  # > 2**45 grid steps
    fine = SecureNoise(granularity=2.0 ** -60)
    assert fine.gaussian(1e-9, 10).shape == (10,)


@pytest.mark.parametrize("g", [0.0, -2.0 ** -30, 3e-9, math.inf, math.nan, "x"])
def test_secure_bad_granularity(g):
    with pytest.raises(ConfigError, match="power of two"):
        SecureNoise(granularity=g)


def test_secure_without_cryptography_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cryptography", None)  # makes the import fail
    for make in (lambda: agent_noise("secure", 0, 0), lambda: link_noise("secure", 0, 0, 1),
                 SecureNoise):
        with pytest.raises(ConfigError) as err:
            make()
        assert "cryptography" in err.value.what
        assert err.value.fix == "pip install 'mpi_privopt[secure]'"
        assert "pip install 'mpi_privopt[secure]'" in str(err.value)
    # fast mode never needs it
    assert agent_noise("fast", 0, 0).gaussian(1.0, 3).shape == (3,)


# ---- fast mode: streams ------------------------------------------------------------------
def _sequence(src) -> list[np.ndarray]:
    return [src.gaussian(1.0, 500), src.laplace(2.0, (10, 10)), src.gaussian(0.3, ())]


def test_fast_is_reproducible():
    for make in (lambda: agent_noise("fast", 7, 2), lambda: link_noise("fast", 7, 2, 5)):
        a, b = _sequence(make()), _sequence(make())
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_fast_does_not_depend_on_creation_order_or_global_state():
    first = agent_noise("fast", 11, 4).gaussian(1.0, 100)
    others = [agent_noise("fast", 11, a) for a in range(8)]
    for o in others:
        o.gaussian(1.0, 1000)
    np.random.seed(0)
    np.random.standard_normal(10)
    assert np.array_equal(agent_noise("fast", 11, 4).gaussian(1.0, 100), first)


def test_fast_seed_matters():
    a = agent_noise("fast", 1, 0).gaussian(1.0, 100)
    b = agent_noise("fast", 2, 0).gaussian(1.0, 100)
    assert not np.array_equal(a, b)


def test_fast_streams_are_distinct_and_uncorrelated():
    seed, k_agents, n = 42, 4, 20_000
    streams = {}
    for a in range(k_agents):
        streams[("agent", a)] = agent_noise("fast", seed, a)
    for s, r in itertools.permutations(range(k_agents), 2):
        streams[("link", s, r)] = link_noise("fast", seed, s, r)
    for k, child in enumerate(np.random.SeedSequence(seed).spawn(k_agents)):
        streams[("engine", k)] = FastNoise(child)  # the engine's algorithm rng streams
    # distinct generator states ...
    states = {name: tuple(src.seed_seq.generate_state(4)) for name, src in streams.items()}
    assert len(set(states.values())) == len(states)
    # ... and draws that are uncorrelated (|r| < 5 / sqrt(n) for independent streams)
    draws = {name: src.gaussian(1.0, n) for name, src in streams.items()}
    names = list(draws)
    corr = np.corrcoef(np.stack([draws[m] for m in names]))
    bound = Z / math.sqrt(n)
    for i, j in itertools.combinations(range(len(names)), 2):
        assert abs(corr[i, j]) < bound, (names[i], names[j], corr[i, j])


def test_fast_engine_rng_is_untouched_by_noise():
    """The engine's rng is ``default_rng(SeedSequence(seed).spawn(K)[k])``: noise streams
    must neither equal it nor share its spawn keys."""
    seed, k_agents = 3, 5
    engine = np.random.SeedSequence(seed).spawn(k_agents)
    engine_keys = {tuple(c.spawn_key) for c in engine}
    for a in range(k_agents):
        src = agent_noise("fast", seed, a)
        assert tuple(src.seed_seq.spawn_key) not in engine_keys
        assert src.seed_seq.spawn_key[0] not in range(k_agents)
        ref = np.random.default_rng(engine[a]).normal(0.0, 1.0, 100)
        assert not np.array_equal(src.gaussian(1.0, 100), ref)
    assert agent_noise("fast", seed, 0).seed_seq.spawn_key == (noise_mod.AGENT_NOISE_TAG, 0)
    assert link_noise("fast", seed, 1, 2).seed_seq.spawn_key == (noise_mod.LINK_NOISE_TAG, 1, 2)


def test_fast_link_direction_matters():
    a = link_noise("fast", 9, 0, 1).gaussian(1.0, 100)
    b = link_noise("fast", 9, 1, 0).gaussian(1.0, 100)
    assert not np.array_equal(a, b)


def test_fast_draw_is_one_vectorised_numpy_call():
    src = agent_noise("fast", 0, 0)
    calls = []

    class Spy:
        def __init__(self, rng):
            self.rng = rng

        def __getattr__(self, name):
            def call(*args, **kwargs):
                calls.append((name, kwargs.get("size")))
                return getattr(self.rng, name)(*args, **kwargs)
            return call

    src._rng = Spy(src._rng)
    assert src.gaussian(1.0, 10 ** 6).shape == (10 ** 6,)
    assert src.laplace(1.0, (1000, 1000)).shape == (1000, 1000)
    assert calls == [("normal", (10 ** 6,)), ("laplace", (1000, 1000))]


def test_fast_shapes_and_zero_scale():
    src = agent_noise("fast", 0, 1)
    assert src.gaussian(1.0, 4).shape == (4,)
    assert src.laplace(1.0, (2, 3)).shape == (2, 3)
    x = src.gaussian(1.0, ())
    assert isinstance(x, np.ndarray) and x.shape == () and x.dtype == np.float64
    assert np.array_equal(src.gaussian(0.0, 3), np.zeros(3))
    assert np.array_equal(src.round_to_grid([0.1, 0.2]), np.array([0.1, 0.2]))
    assert src.effective_sensitivity(2.0, 10) == 2.0
    assert src.granularity is None


# ---- modes and errors ---------------------------------------------------------------------
def test_mode_names_are_reported():
    assert NOISE_MODES == ("fast", "secure")
    f = agent_noise("fast", 0, 0)
    assert f.mode == "fast" and f.describe()["mode"] == "fast"
    assert link_noise("fast", 0, 0, 1).mode == "fast"
    pytest.importorskip("cryptography", reason=NEEDS_SECURE)
    s = agent_noise("secure", 0, 0)
    assert s.mode == "secure" and s.describe()["mode"] == "secure"
    assert s.describe()["floating_point_safe"] is True
    assert link_noise("secure", 0, 0, 1).mode == "secure"


@pytest.mark.parametrize("mode", ["bogus", "Fast", "", None])
def test_unknown_mode_is_a_clear_error(mode):
    with pytest.raises(ConfigError) as err:
        agent_noise(mode, 0, 0)
    assert repr(mode) in err.value.what
    assert "'fast'" in err.value.fix and "'secure'" in err.value.fix
    with pytest.raises(ConfigError):
        link_noise(mode, 0, 0, 1)


@pytest.mark.parametrize("sigma", [-1.0, math.nan, math.inf, "a"])
def test_bad_scale_is_a_clear_error(sigma):
    src = agent_noise("fast", 0, 0)
    with pytest.raises(ConfigError, match="finite number >= 0"):
        src.gaussian(sigma, 3)
    with pytest.raises(ConfigError, match="finite number >= 0"):
        src.laplace(sigma, 3)


@pytest.mark.parametrize("shape", [-1, (2, -1), "ab", 1.5, (2, 0.5)])
def test_bad_shape_is_a_clear_error(shape):
    with pytest.raises(ConfigError, match="shape"):
        agent_noise("fast", 0, 0).gaussian(1.0, shape)


@pytest.mark.parametrize("args", [(-1, 0), (0, -1), (0, 1.5), (True, 0)])
def test_bad_seed_or_agent_is_a_clear_error(args):
    with pytest.raises(ConfigError, match="integer >= 0"):
        agent_noise("fast", *args)
    with pytest.raises(ConfigError, match="integer >= 0"):
        link_noise("fast", args[0], 0, args[1])
