"""The exact discrete samplers (``mpi_privopt.privacy.exact_sampling``) against their laws.

Every statistical check draws from a ChaCha20 stream with a fixed key (the samplers take
any word source; only tests pass a key), so each check is deterministic; the thresholds
were fixed before the first run: a chi-square test of the sample's histogram against the
exact pmf with p > 1e-3, bins merged until each expects at least 20 draws. The check has
power at these sizes: a Gaussian scale 1% off, or a Laplace scale 3% off, fails it
(``test_a_wrong_scale_fails_the_check``; a 1% Laplace error gives p = 0.013 there).

The rare exact paths (an undecided lazy comparison, an exponent too large for the int64
enclosure, a uniform prefix equal to a table entry) have probabilities of 1e-7 to 2^-64 in
normal use; the tests make them frequent by lowering the module's precision knobs, or call
them directly with the undecided prefix, and check the law again.
"""
from __future__ import annotations

import ast
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from mpi_privopt.privacy import exact_sampling as es

pytest.importorskip("cryptography", reason="the samplers' ChaCha20 stream needs "
                                           "cryptography (pip install 'mpi_privopt[secure]')")

P_MIN = 1e-3
MIN_EXPECTED = 20


def _words(tag: int) -> es.CipherWords:
    return es.CipherWords(bytes([tag]) * 32)


def _chi2_p(sample: np.ndarray, edges: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square p-value of ``sample`` against bin probabilities ``probs`` of the integer
    bins ``[edges[i], edges[i+1])`` (first and last bins open-ended), merging small bins."""
    counts = np.bincount(np.searchsorted(edges[1:-1], sample, side="right"),
                         minlength=probs.size)
    n = sample.size
    obs, exp, acc_o, acc_e = [], [], 0, 0.0
    for o, p in zip(counts, probs):
        acc_o, acc_e = acc_o + o, acc_e + n * p
        if acc_e >= MIN_EXPECTED:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o, acc_e = 0, 0.0
    obs[-1] += acc_o
    exp[-1] += acc_e
    exp = np.array(exp) * n / np.sum(exp)
    assert len(obs) >= 5, "too few bins for a meaningful test"
    return stats.chisquare(obs, exp).pvalue


def _gaussian_bins(sigma: float):
    """Integer bins and their discrete-Gaussian probabilities. For ``sigma <= 2^15`` the pmf
    is summed exactly over ``|y| <= 14 sigma``; above, bins of ``sigma / 8`` with the
    continuous CDF at half-integers, which differs from the discrete law's by less than
    ``1e-12`` there (Poisson summation; far below the test's resolution)."""
    if sigma <= 2 ** 15:
        half = int(14 * sigma) + 2
        ys = np.arange(-half, half + 1)
        logp = -(ys.astype(float) ** 2) / (2 * sigma ** 2)
        p = np.exp(logp - logp.max())
        p /= p.sum()
        step = max(1, int(sigma // 8))
        edges = np.append(ys[::step], half + 1)
        probs = np.add.reduceat(p, np.arange(0, ys.size, step))
        return edges, probs
    k = np.arange(-40, 41)
    edges = np.round(k * sigma / 8).astype(np.int64)
    cdf = stats.norm.cdf((edges - 0.5) / sigma)
    probs = np.diff(np.concatenate([[0.0], cdf[1:-1], [1.0]]))
    return edges, probs


def _laplace_bins(b: float):
    """Integer bins ``[e_i, e_{i+1})`` and their exact discrete-Laplace probabilities, from
    ``P(Y >= k) = q^k / (1 + q)`` for ``k >= 1``, ``q = e^(-1/b)``."""
    q = math.exp(-1 / b)
    step = max(1, int(b // 6))
    top = int(12 * b) + 2
    pos = np.arange(step, top, step)
    edges = np.concatenate([-pos[::-1], [0, 1], pos + 1, [top + 1]])
    edges = np.unique(edges)

    def upper(k):  # P(Y >= k)
        k = np.asarray(k, dtype=float)
        return np.where(k >= 1, q ** np.maximum(k, 1) / (1 + q), 1 - q ** np.maximum(1 - k, 0) / (1 + q))

    tail = upper(edges)  # bins: (-inf, e_1), [e_1, e_2), ..., [e_-2, inf)
    probs = np.concatenate([[1 - tail[1]], tail[1:-2] - tail[2:-1], [tail[-2]]])
    return edges, probs


# ---- the laws ---------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [1.0, 1.5, 3.7, 1234.567, 2.0 ** 30 * 1.3])
def test_discrete_gaussian_law(sigma):
    x = es.discrete_gaussian(sigma, 300_000, _words(1))
    assert x.dtype == np.int64 and x.shape == (300_000,)
    edges, probs = _gaussian_bins(sigma)
    assert _chi2_p(x, edges, probs) > P_MIN


@pytest.mark.parametrize("b", [0.7, 5.3, 1234.567, 2.0 ** 30 * 1.3])
def test_discrete_laplace_law(b):
    x = es.discrete_laplace(*es.laplace_parameters(b), 300_000, _words(2))
    assert x.dtype == np.int64
    edges, probs = _laplace_bins(b)
    assert _chi2_p(x, edges, probs) > P_MIN


def test_a_wrong_scale_fails_the_check():
    """The check has power: a 1% larger sigma, a 3% larger Laplace scale, are rejected."""
    x = es.discrete_gaussian(3.7 * 1.01, 300_000, _words(1))
    assert _chi2_p(x, *_gaussian_bins(3.7)) < P_MIN
    y = es.discrete_laplace(*es.laplace_parameters(5.3 * 1.03), 300_000, _words(2))
    assert _chi2_p(y, *_laplace_bins(5.3)) < P_MIN


# ---- the rare exact paths, made frequent -------------------------------------------------
def _count_calls(monkeypatch, name):
    calls = []
    real = getattr(es, name)

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(es, name, counted)
    return calls


@pytest.mark.parametrize("sigma", [1.5, 40.2])
def test_gaussian_law_with_a_coarse_enclosure(monkeypatch, sigma):
    """6 fractional bits on z instead of 26: about 1% of the lazy trials are undecided and
    finished exactly; the law is unchanged."""
    monkeypatch.setattr(es, "_Z_BITS", 6)
    monkeypatch.setattr(es, "_G_BITS", 13)
    calls = _count_calls(monkeypatch, "bernoulli")
    x = es.discrete_gaussian(sigma, 100_000, _words(3))
    assert len(calls) > 100
    assert _chi2_p(x, *_gaussian_bins(sigma)) > P_MIN


def test_gaussian_law_with_the_exact_path_for_large_exponents(monkeypatch):
    """``|z| >= 2`` drawn wholly by the exact Python path (about 10% of the proposals)."""
    monkeypatch.setattr(es, "_A_LIMIT_BITS", es._Z_BITS + 1)
    calls = _count_calls(monkeypatch, "bernoulli_exp")
    x = es.discrete_gaussian(1.5, 40_000, _words(4))
    assert len(calls) > 1000
    assert _chi2_p(x, *_gaussian_bins(1.5)) > P_MIN


def test_scalar_bernoulli_exp_is_exact_in_law():
    words = _words(5)
    for gamma in (Fraction(3, 10), Fraction(17, 10)):
        n = 20_000
        hits = sum(es.bernoulli_exp(gamma, words) for _ in range(n))
        p = math.exp(-gamma)
        assert abs(hits / n - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_an_undecided_table_comparison_is_finished_with_the_exact_fraction():
    """With ``W``'s 64-bit prefix equal to floor(e^-x 2^64), ``P(W < e^-x)`` is the
    fractional part of ``e^-x 2^64``: check it for a whole and a fractional ``x``."""
    words = _words(6)
    n = 4000
    for x in (Fraction(1), Fraction(3), Fraction(77, 1024)):
        prefix = es.exp_neg_bounds(x, 64)[0]
        frac = Fraction(es.exp_neg_bounds(x, 128)[0] - (prefix << 64), 1 << 64)
        p = float(frac)
        hits = sum(es.below_exp_neg(prefix, x, words) for _ in range(n))
        assert abs(hits / n - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-9
        assert es.below_exp_neg(prefix - 1, x, words) and not es.below_exp_neg(prefix + 1, x, words)


def test_an_undecided_geometric_prefix_is_finished_exactly():
    words = _words(7)
    prefix = es.exp_neg_bounds(Fraction(3), 64)[0]
    frac = float(Fraction(es.exp_neg_bounds(Fraction(3), 128)[0] - (prefix << 64), 1 << 64))
    n = 4000
    v = [es.geometric_exact(prefix, words) for _ in range(n)]
    assert set(v) <= {2, 3}
    got = v.count(3) / n
    assert abs(got - frac) < 5 * math.sqrt(frac * (1 - frac) / n)
    # vectorised and exact geometric agree where both decide
    r = np.array([prefix + 1, prefix - 1, 1 << 63, 5], dtype=np.uint64)
    exact = [es.geometric_exact(int(w), words) for w in r]
    assert exact[:3] == [2, 3, 0]
    assert es.geometric_exp1(4, lambda m: r[:m].copy()).tolist() == exact


def test_geometric_law():
    v = es.geometric_exp1(200_000, _words(8))
    probs = np.exp(-np.arange(12.0)) * (1 - math.exp(-1))
    probs[-1] = math.exp(-11)
    assert _chi2_p(np.minimum(v, 11), np.arange(13), probs) > P_MIN


# ---- exact arithmetic -------------------------------------------------------------------
def test_exp_neg_bounds_and_tables():
    for x in (Fraction(1), Fraction(1, 1024), Fraction(1023, 1024), Fraction(44), Fraction(5, 3)):
        lo, hi = es.exp_neg_bounds(x, 64)
        assert hi == lo + 1
        assert abs(lo / 2 ** 64 - math.exp(-x)) <= 2 ** -52 * math.exp(-x) + 2 ** -64
        lo128, _ = es.exp_neg_bounds(x, 128)
        assert lo128 >> 64 == lo  # the same floor, more bits
    for v in (1, 2, 30, 44, 45, 300):
        assert int(es._EXP_NEG_WHOLE[v]) == es.exp_neg_bounds(Fraction(v), 64)[0]
    for i in (1, 2, 511, 1023):
        assert int(es._EXP_NEG_FRAC[i]) == es.exp_neg_bounds(Fraction(i, 1024), 64)[0]


def test_uniform_below_rejects_the_partial_block():
    feed = iter([np.array([2 ** 64 - 1, 7], dtype=np.uint64), np.array([5], dtype=np.uint64)])
    out = es.uniform_below(3, 2, lambda m: next(feed)[:m])
    # 2^64 mod 3 = 1: the word 2^64 - 1 lies in the partial block and is redrawn as 5
    assert out.tolist() == [5 % 3, 7 % 3]
    words = _words(9)
    for b in (1, 2, 3, 1 << 40, (1 << 53) + 1):
        u = es.uniform_below(b, 50_000, words)
        assert u.min() >= 0 and u.max() < b
    u = es.uniform_below(6, 60_000, words)
    assert stats.chisquare(np.bincount(u, minlength=6)).pvalue > P_MIN
    assert es.uniform_int(10 ** 30, words) < 10 ** 30


def test_cipher_words():
    a, b = _words(1)(1000), _words(1)(1000)
    assert a.dtype == np.uint64 and np.array_equal(a, b)  # a fixed key is reproducible
    assert not np.array_equal(a, _words(2)(1000))
    assert not np.array_equal(es.CipherWords()(100), es.CipherWords()(100))  # OS entropy
    bits = np.unpackbits(es.CipherWords()(20_000).view(np.uint8))
    assert abs(bits.mean() - 0.5) < 5 * 0.5 / math.sqrt(bits.size)
    w = _words(1)
    assert np.array_equal(np.concatenate([w(3), w(997)]), a)  # a stream, whatever the calls


def test_a_huge_geometric_draw_raises_instead_of_overflowing(monkeypatch):
    monkeypatch.setattr(es, "_V_LIMIT", 3)
    with pytest.raises(OverflowError, match="scales"):
        es.geometric_exp1(10_000, _words(10))


def test_bad_parameters():
    with pytest.raises(ValueError, match="sigma >= 1"):
        es.discrete_gaussian(0.5, 10, _words(1))
    with pytest.raises(ValueError, match="t <= 2"):
        es.discrete_laplace(0, 0, 10, _words(1))
    assert es.laplace_parameters(0.75) == (3, 2)
    assert es.laplace_parameters(2.0 ** 30) == (2 ** 30, 0)


def test_no_floating_point_in_the_samplers():
    """No float literal and no floating-point function in the module: every decision is
    integer (or Fraction) arithmetic."""
    tree = ast.parse(Path(es.__file__).read_text())
    banned = {"exp", "log", "log2", "log1p", "sqrt", "float", "float64", "float32",
              "random", "normal", "uniform", "laplace", "power", "divide", "true_divide"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            assert not isinstance(node.value, float), f"float literal at line {node.lineno}"
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            assert name not in banned, f"{name}() at line {node.lineno}"
