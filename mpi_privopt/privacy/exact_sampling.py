"""Exact discrete Laplace and discrete Gaussian samplers, vectorised over numpy integers.

The samplers of Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential
Privacy" (CKS20), drawn for a whole vector at once: every step of Algorithms 1-3 runs on the
array of the draws still undecided, with int64 arithmetic, in cache-sized chunks. No
floating-point number enters any decision: every Bernoulli trial is an exact comparison of
uniform integers with integers, or with exact integer bounds of an irrational threshold
(then the rare undecided comparison is finished with Python integers), so the output law is
exactly the discrete law.

Algorithm 1 (``Bernoulli(exp(-gamma))`` for ``gamma`` in [0, 1])
    ``K = 1``; repeat ``A ~ Bernoulli(gamma / K)``, ``K += 1`` while ``A = 1``; return
    ``[K odd]``. A trial ``Bernoulli(gamma / K)`` is drawn as ``Bernoulli(gamma) AND
    Bernoulli(1 / K)`` (independent; their product has probability ``gamma / K``), and
    ``Bernoulli(a / b)`` as ``[uniform integer in [0, b) < a]``. For ``gamma > 1``,
    ``exp(-gamma) = exp(-1)^floor(gamma) exp(-frac(gamma))`` (:func:`bernoulli_exp`).

Algorithm 2 (discrete Laplace ``DLap(t / 2^h)``, ``P(y) ~ exp(-|y| 2^h / t)``)
    ``U`` uniform in ``[0, t)``, kept with probability ``exp(-U / t)`` (Algorithm 1);
    ``V ~ Geometric``, ``P(V >= v) = e^-v``; ``Y = (U + t V) >> h``; a random sign, rejecting
    ``-0``. ``V`` is drawn by inversion: with ``W`` uniform in [0, 1),
    ``V = #{v >= 1 : W < e^-v}``; the 64-bit prefix ``R`` of ``W`` decides every comparison
    with the exact integer ``floor(e^-v 2^64)`` except ``R = floor(e^-v 2^64)`` (probability
    ``2^-64``), which extends ``W`` by further words against ever tighter exact bounds of
    ``e^-v`` (:func:`exp_neg_bounds`, :func:`geometric_exact`).

Algorithm 3 (discrete Gaussian ``N_Z(0, sigma^2)``, ``P(y) ~ exp(-y^2 / (2 sigma^2))``)
    A proposal ``Y ~ DLap(t)`` with ``t = 2^j``, ``j = max(0, round(log2 sigma))`` (any
    ``t > 0`` is exact; this one keeps the acceptance rate high and makes ``U`` a plain
    ``j``-bit word), accepted with probability ``exp(-gamma)``,
    ``gamma = (|Y| - sigma^2/t)^2 / (2 sigma^2)``. Algorithm 2's own test on ``U`` is merged
    into this one: ``Bernoulli(exp(-U/t)) AND Bernoulli(exp(-gamma)) =
    Bernoulli(exp(-E))`` with ``E = U/t + gamma``.

The Gaussian's exponent ``E`` is rational, but its exact value needs about 200 bits, so its
test is decided lazily, as exact samplers do (e.g. Karney 2016). ``E`` is enclosed in an
integer interval ``[E_lo, E_hi] * 2^-53`` computed with int64 arithmetic and exact rational
constants (``_Z_BITS`` fractional bits on ``z = (|Y| - sigma^2/t) / sigma``;
``gamma = z^2 / 2``). With ``F = floor(E_lo 2^10)``, so that ``F / 2^10 <= E``,
``exp(-E) = e^-(F >> 10) * e^-((F mod 2^10) / 2^10) * exp(-delta)`` with
``delta = E - F / 2^10`` in ``[0, 2^-10 + width)``: three independent trials. The first two
compare a uniform ``W``'s 64-bit prefix with exact tables of ``floor(e^-x 2^64)`` (equality,
probability ``2^-64``, is finished by :func:`below_exp_neg`). The third is Algorithm 1 on
``delta``, whose trials ``Bernoulli(delta)`` draw a 53-bit prefix ``R`` of a uniform and are
decided when ``R + 1 <= delta_lo`` or ``R >= delta_hi`` (enclosure ends, in units of
``2^-53``); otherwise (probability about ``1e-7`` per trial) exactly with Python fractions,
``Bernoulli(clamp(delta 2^53 - R, 0, 1))`` (the uniform's remaining bits are a fresh
uniform). Draws whose ``|z|`` would overflow the enclosure (``|z| >= 2^(31 - _Z_BITS)``,
probability below ``1e-9``) get their whole test exactly in Python (:func:`bernoulli_exp`).
Every decision therefore equals the exact one.

Uniform words come from a :class:`~mpi_privopt.privacy.cipher_words.CipherWords`
stream (ChaCha20 keyed by OS entropy; a test may pass a fixed key).
``uniform in [0, b)`` is exact by rejection (``w >= 2^64 - (2^64 mod b)`` is redrawn).

``V >= 256`` would overflow the int64 arithmetic (``|Y| >= 256 t``): it has probability
``e^-256 = 1e-111`` per draw and raises ``OverflowError`` instead of returning a wrong value.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

# the uniform words every sampler draws (re-exported: a sampler's caller makes its stream)
from .cipher_words import CipherWords, Words  # noqa: F401

#: Fractional bits of the int64 enclosure of ``z`` in the Gaussian's test (module
#: docstring); tests lower it to exercise the exact fallback often.
_Z_BITS = 26
#: ``(z 2^Z)^2 = 2 gamma 2^(2Z)``: squaring the enclosure of ``|z| 2^Z`` encloses ``gamma``
#: in units of ``2^-(2Z+1)``; the uniform compared with ``E / n`` has as many bits.
_G_BITS = 2 * _Z_BITS + 1
#: ``|z| 2^Z`` at or above ``2^_A_LIMIT_BITS`` is decided exactly in Python (its square must
#: stay inside int64); tests lower it to exercise that path.
_A_LIMIT_BITS = 31
#: ``V`` (the geometric part of a discrete Laplace) at which int64 would overflow.
_V_LIMIT = 256
#: Draws per vectorised pass: the working arrays stay in the CPU cache.
_CHUNK = 1 << 14
_TWO64 = 1 << 64


# ---- exact scalar helpers (Python integers: the rare paths and the reference) -------------
def uniform_int(b: int, words: Words) -> int:
    """A uniform integer in ``[0, b)``, exactly (rejection on the bit length of ``b``)."""
    if b <= 1:
        return 0
    bits = (b - 1).bit_length()
    n_words = -(-bits // 64)
    while True:
        r = 0
        for w in words(n_words).tolist():
            r = (r << 64) | w
        r >>= 64 * n_words - bits
        if r < b:
            return r


def bernoulli(p: Fraction, words: Words) -> bool:
    """``Bernoulli(p)`` for a rational ``p`` (clamped to [0, 1]), exactly."""
    if p <= 0:
        return False
    if p >= 1:
        return True
    return uniform_int(p.denominator, words) < p.numerator


def bernoulli_exp(gamma: Fraction, words: Words) -> bool:
    """``Bernoulli(exp(-gamma))`` for a rational ``gamma >= 0`` (CKS20 Algorithm 1):
    ``exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma))``."""
    gamma = Fraction(gamma)
    while gamma > 1:
        if not _bernoulli_exp_unit(Fraction(1), words):
            return False
        gamma -= 1
    return _bernoulli_exp_unit(gamma, words)


def _bernoulli_exp_unit(gamma: Fraction, words: Words) -> bool:
    """Algorithm 1 proper, for ``0 <= gamma <= 1``."""
    k = 1
    while bernoulli(gamma / k, words):
        k += 1
    return k % 2 == 1


@functools.lru_cache(maxsize=1024)
def exp_neg_bounds(x: Fraction, bits: int) -> tuple[int, int]:
    """``(lo, lo + 1)`` with ``lo < e^-x 2^bits < lo + 1``, i.e. ``lo = floor(e^-x 2^bits)``,
    for a rational ``x > 0`` (``e^-x`` is then irrational, never a multiple of ``2^-bits``).

    From the Taylor series of ``e^x``: ``S_N <= e^x <= S_N + T_N`` with the tail bound
    ``T_N = x^(N+1) / (N+1)! / (1 - x / (N+2))`` (``N + 2 > x``), adding terms until the
    two bounds of ``2^bits / e^x`` have the same integer part.
    """
    x = Fraction(x)
    if x <= 0:
        raise ValueError(f"exp_neg_bounds needs x > 0, got {x}")
    s, term, k = Fraction(1), Fraction(1), 0
    while True:
        k += 1
        term = term * x / k
        s += term
        if k + 2 > 2 * x:
            tail = term * x / (k + 1) / (1 - x / (k + 2))
            lo = math.floor((1 << bits) / (s + tail))
            hi = math.ceil((1 << bits) / s)
            if hi - lo <= 1:
                return lo, lo + 1


def below_exp_neg(prefix: int, x: Fraction, words: Words) -> bool:
    """Is ``W < e^-x``, for the uniform ``W`` in [0, 1) whose first 64 bits are ``prefix``?

    Extends ``W`` with fresh words until exact bounds of ``e^-x`` decide (``x >= 0``).
    """
    if x == 0:
        return True
    bits = 64
    while True:
        lo, hi = exp_neg_bounds(Fraction(x), bits)
        if prefix + 1 <= lo:
            return True
        if prefix >= hi:
            return False
        prefix = (prefix << 64) | int(words(1)[0])
        bits += 64


def _overflow():
    raise OverflowError(f"a discrete Laplace draw reached {_V_LIMIT} scales "
                        f"(probability e^-{_V_LIMIT} per draw)")


def geometric_exact(prefix: int, words: Words) -> int:
    """``V = #{v >= 1 : W < e^-v}`` for the uniform ``W`` whose first 64 bits are ``prefix``:
    each comparison extends ``W`` with fresh words until exact bounds of ``e^-v`` decide."""
    bits, v = 64, 0
    while True:
        lo, hi = exp_neg_bounds(Fraction(v + 1), bits)
        if prefix + 1 <= lo:  # W < e^-(v+1)
            v += 1
            if v >= _V_LIMIT:
                _overflow()
        elif prefix >= hi:
            return v
        else:
            prefix = (prefix << 64) | int(words(1)[0])
            bits += 64


def _exp_neg_table(step: Fraction, count: int) -> np.ndarray:
    """``floor(e^-(i step) 2^64)`` for ``i = 0 .. count - 1`` (uint64; ``2^64 - 1`` for
    ``i = 0``, where ``W < e^0`` always holds: the comparison ``R < 2^64 - 1`` then errs only on
    ``R = 2^64 - 1``, which :func:`below_exp_neg` decides).

    Interval powers of exact 256-bit bounds of ``e^-step`` with Python integers; each entry
    is checked to be decided by its bounds.
    """
    prec = 256
    lo1, _ = exp_neg_bounds(step, prec)
    hi1 = lo1 + 1
    out = [(1 << 64) - 1]
    lo, hi = lo1, hi1
    for _ in range(1, count):
        a, b = lo >> (prec - 64), hi >> (prec - 64)
        if a != b:
            raise ArithmeticError(f"e^-x 2^64 at {prec} bits is not decided")  # never at 256
        out.append(a)
        lo, hi = (lo * lo1) >> prec, -((-hi * hi1) >> prec)
    return np.array(out, dtype=np.uint64)


#: floor(e^-v 2^64) for v = 0 .. 2^10 (0 from v = 45 on: e^-45 2^64 < 1)
_EXP_NEG_WHOLE = _exp_neg_table(Fraction(1), 1 << 10)
#: Bits of the fractional part of the Gaussian exponent looked up in a table.
_FRAC_BITS = 10
#: floor(e^-(i / 2^10) 2^64) for i = 0 .. 2^10 - 1
_EXP_NEG_FRAC = _exp_neg_table(Fraction(1, 1 << _FRAC_BITS), 1 << _FRAC_BITS)


# ---- vectorised exact primitives ---------------------------------------------------------
def uniform_below(b: int, m: int, words: Words) -> np.ndarray:
    """``m`` uniform integers in ``[0, b)`` (int64), ``1 <= b <= 2^62``, exactly."""
    if b == 1:
        return np.zeros(m, dtype=np.int64)
    if b & (b - 1) == 0:  # a power of two: the leading bits of a word
        return (words(m) >> np.uint64(65 - b.bit_length())).view(np.int64)
    limit = np.uint64(_TWO64 - _TWO64 % b)  # the largest multiple of b not above 2^64
    w = words(m)
    bad = np.flatnonzero(w >= limit)
    while bad.size:  # probability b / 2^64 per word
        w[bad] = words(bad.size)
        bad = bad[w[bad] >= limit]
    return (w % np.uint64(b)).view(np.int64)


def _one_over(k: int, m: int, words: Words) -> np.ndarray:
    """``m`` exact ``Bernoulli(1 / k)`` trials."""
    return uniform_below(k, m, words) == 0


def bernoulli_exp_ratio(u: np.ndarray, t: int, words: Words) -> np.ndarray:
    """Exact ``Bernoulli(exp(-u / t))`` for each integer ``0 <= u < t`` (Algorithm 1)."""
    out = np.empty(u.size, dtype=bool)
    idx = np.arange(u.size)
    cur = u
    k = 1
    while idx.size:
        if k > 1:  # Bernoulli(1 / k) first: it fails more often, and then u is not needed
            a = _one_over(k, idx.size, words)
            out[idx[~a]] = k % 2 == 1
            idx, cur = idx[a], cur[a]
        a = uniform_below(t, idx.size, words) < cur  # Bernoulli(u / t)
        out[idx[~a]] = k % 2 == 1
        idx, cur = idx[a], cur[a]
        k += 1
    return out


def geometric_exp1(m: int, words: Words) -> np.ndarray:
    """``m`` draws of ``V``, ``P(V >= v) = e^-v``, by inversion of one word each."""
    r = words(m)
    v = np.zeros(m, dtype=np.int64)
    for k in range(1, 46):
        below = r < _EXP_NEG_WHOLE[k]
        if not below.any():
            break
        v += below
    for i in np.flatnonzero(r == _EXP_NEG_WHOLE[v + 1]):  # undecided at 64 bits
        v[i] = geometric_exact(int(r[i]), words)
    if v.size and v.max() >= _V_LIMIT:
        _overflow()
    return v


def _chunks(m: int, draw) -> np.ndarray:
    out = np.empty(m, dtype=np.int64)
    for start in range(0, m, _CHUNK):
        stop = min(m, start + _CHUNK)
        out[start:stop] = draw(stop - start)
    return out


def _signed(y: np.ndarray, words: Words) -> np.ndarray:
    """``y`` with random signs, and False where the draw is ``-0`` (Algorithm 2 rejects it)."""
    negative = (words(y.size) >> np.uint64(63)).astype(bool)
    return np.where(negative, -y, y), ~(negative & (y == 0))


def discrete_laplace(t: int, shift: int, m: int, words: Words) -> np.ndarray:
    """``m`` exact draws of ``DLap(t / 2^shift)`` (int64; CKS20 Algorithm 2).

    ``P(y) = (1 - e^-1/b) / (1 + e^-1/b) * exp(-|y| / b)`` with ``b = t / 2^shift``;
    ``t`` an integer in ``[1, 2^54]``.
    """
    if not (isinstance(t, int) and 1 <= t <= 1 << 54 and isinstance(shift, int) and shift >= 0):
        raise ValueError(f"discrete_laplace needs an integer 1 <= t <= 2^54 and shift >= 0, "
                         f"got t={t!r}, shift={shift!r}")

    def draw(m: int) -> np.ndarray:
        got, need = [], m
        while need:
            u = uniform_below(t, need * 8 // 5 + 16, words)  # ~1.6 trials per draw
            u = u[bernoulli_exp_ratio(u, t, words)]
            y, ok = _signed((u + t * geometric_exp1(u.size, words)) >> shift, words)
            y = y[ok][:need]
            got.append(y)
            need -= y.size
        return np.concatenate(got)

    return _chunks(m, draw)


def laplace_parameters(scale: float) -> tuple[int, int]:
    """``(t, shift)`` with ``t / 2^shift == scale`` exactly, for :func:`discrete_laplace`."""
    num, den = Fraction(scale).as_integer_ratio()  # den is a power of two for a float
    return num, den.bit_length() - 1


def _floor_log2(r: Fraction) -> int:
    """``floor(log2 r)`` for a rational ``r > 0``, exactly."""
    k = r.numerator.bit_length() - r.denominator.bit_length()
    return k if r >= Fraction(2) ** k else k - 1


class _GaussianConstants:
    """Exact constants of the Gaussian's test for one ``sigma`` (module docstring)."""

    def __init__(self, sigma: float) -> None:
        s = Fraction(sigma)
        if not s >= 1:
            raise ValueError(f"discrete_gaussian needs sigma >= 1, got {sigma!r}")
        self.sigma = s
        self.j = max(0, (_floor_log2(s * s) + 1) // 2)  # round(log2 sigma), exactly
        self.t = 1 << self.j
        self.mu = s * s / self.t  # sigma^2 / t
        zb = _Z_BITS
        # z 2^(2Z) = (y 2^(Z-j)) (2^(j+Z) / sigma) - (sigma / t) 2^(2Z)
        lam = Fraction(1 << (self.j + zb)) / s
        self.lam_lo, self.lam_hi = math.floor(lam), math.ceil(lam)
        c = s / self.t * (1 << 2 * zb)
        self.c_lo, self.c_hi = math.floor(c), math.ceil(c)

    def exponent(self, u: int, y: int) -> Fraction:
        """The exact ``E = u/t + (y - sigma^2/t)^2 / (2 sigma^2)`` for ``y = |Y|``."""
        return Fraction(u, self.t) + (y - self.mu) ** 2 / (2 * self.sigma ** 2)


def _exponent_bounds(u: np.ndarray, y: np.ndarray, c: _GaussianConstants):
    """``(g_lo, g_hi, exact)``: ``E 2^_G_BITS`` lies in ``[g_lo, g_hi]`` where ``exact`` is
    False; where True the enclosure would overflow and the test must be exact."""
    zb = _Z_BITS
    if c.j >= zb:  # y < 2^(j + 8) (V < 256), so y_hi < 2^(Z + 8) and y_hi * lam < 2^62
        y_lo = y >> (c.j - zb)
        y_hi = y_lo + ((y & ((1 << (c.j - zb)) - 1)) != 0)
    else:
        y_lo = y_hi = y << (zb - c.j)
    z_lo = (y_lo * c.lam_lo - c.c_hi) >> zb  # floor: z 2^Z >= z_lo
    z_hi = -((c.c_lo - y_hi * c.lam_hi) >> zb)  # ceil: z 2^Z <= z_hi
    a_lo = np.maximum(np.maximum(z_lo, -z_hi), 0)  # |z| 2^Z in [a_lo, a_hi]
    a_hi = np.maximum(-z_lo, z_hi)
    exact = a_hi >= 1 << _A_LIMIT_BITS  # a_hi^2 must stay below 2^62
    a_hi = np.minimum(a_hi, 1 << _A_LIMIT_BITS)
    a_lo = np.minimum(a_lo, a_hi)
    ut = u << (_G_BITS - c.j)  # u / t, exactly
    return a_lo * a_lo + ut, a_hi * a_hi + ut, exact  # (z 2^Z)^2 = gamma 2^(2Z + 1)


def _bernoulli_exp_lazy(d_lo, d_hi, exact_d, words) -> np.ndarray:
    """Algorithm 1 for ``delta`` in [0, 1] enclosed in ``[d_lo, d_hi] 2^-_G_BITS``: each
    ``Bernoulli(delta)`` is decided from the enclosure, or exactly (``exact_d(i)``, a Fraction)
    when it cannot."""
    out = np.empty(d_lo.size, dtype=bool)
    idx = np.arange(d_lo.size)
    k = 1
    while idx.size:
        if k > 1:
            a = _one_over(k, idx.size, words)
            out[idx[~a]] = k % 2 == 1
            idx = idx[a]
        r = (words(idx.size) >> np.uint64(64 - _G_BITS)).view(np.int64)
        lo = d_lo[idx]
        a = r < lo  # r + 1 <= d_lo: W < delta whatever W's further bits
        for q in np.flatnonzero(~a & (r < d_hi[idx])):  # undecided: finish exactly
            a[q] = bernoulli(exact_d(idx[q]) * (1 << _G_BITS) - int(r[q]), words)
        out[idx[~a]] = k % 2 == 1
        idx = idx[a]
        k += 1
    return out


def _below_table(r: np.ndarray, table: np.ndarray, i: np.ndarray, x, words) -> np.ndarray:
    """``W < e^-x_i`` for uniforms with 64-bit prefixes ``r`` and ``table[i] =
    floor(e^-x_i 2^64)``; a prefix equal to the table entry is decided by
    :func:`below_exp_neg` (``x(q)`` gives the exact ``x`` of entry ``q``)."""
    th = table[i]
    out = r < th
    for q in np.flatnonzero(r == th):
        out[q] = below_exp_neg(int(r[q]), x(q), words)
    return out


def _accept_gaussian(u: np.ndarray, y: np.ndarray, c: _GaussianConstants,
                     words: Words) -> np.ndarray:
    """Exact ``Bernoulli(exp(-E))``, ``E = u/t + gamma(y)``, for each proposal (``y >= 0``).

    With ``F = floor(E_lo 2^10)`` (``E_lo`` the enclosure's lower end, so ``F / 2^10 <= E``):
    ``exp(-E) = e^-(F >> 10) * e^-((F & 1023) / 2^10) * exp(-delta)``, three independent
    trials: two uniforms against exact tables of ``e^-v`` and ``e^-(i / 2^10)``, and
    ``delta = E - F / 2^10`` (below ``2^-10`` plus the enclosure's width) by Algorithm 1.
    """
    e_lo, e_hi, exact = _exponent_bounds(u, y, c)
    shift = _G_BITS - _FRAC_BITS
    f = e_lo >> shift
    f[exact] = 0
    whole = np.minimum(f >> _FRAC_BITS, _EXP_NEG_WHOLE.size - 1)  # E < 2^9 + 1 anyway
    frac = f & ((1 << _FRAC_BITS) - 1)
    acc = _below_table(words(y.size), _EXP_NEG_WHOLE, whole,
                       lambda q: Fraction(int(whole[q])), words)
    sel = np.flatnonzero(acc)
    acc[sel] = _below_table(words(sel.size), _EXP_NEG_FRAC, frac[sel],
                            lambda q: Fraction(int(frac[sel[q]]), 1 << _FRAC_BITS), words)
    sel = np.flatnonzero(acc)
    base = f[sel] << shift

    def exact_delta(q: int) -> Fraction:
        i = sel[q]
        return c.exponent(int(u[i]), int(y[i])) - Fraction(int(f[i]), 1 << _FRAC_BITS)

    acc[sel] = _bernoulli_exp_lazy(e_lo[sel] - base, e_hi[sel] - base, exact_delta, words)
    for i in np.flatnonzero(exact):
        acc[i] = bernoulli_exp(c.exponent(int(u[i]), int(y[i])), words)
    return acc


def discrete_gaussian(sigma: float, m: int, words: Words) -> np.ndarray:
    """``m`` exact draws of the discrete Gaussian ``N_Z(0, sigma^2)`` (int64), ``sigma >= 1``
    (CKS20 Algorithm 3): ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers."""
    c = _GaussianConstants(sigma)

    def draw(m: int) -> np.ndarray:
        got, need = [], m
        while need:
            size = need * 9 // 4 + 16  # ~2.2 proposals per draw
            u = uniform_below(c.t, size, words)
            y = u + c.t * geometric_exp1(size, words)
            acc = _accept_gaussian(u, y, c, words)
            y, ok = _signed(y[acc], words)
            y = y[ok][:need]
            got.append(y)
            need -= y.size
        return np.concatenate(got)

    return _chunks(m, draw)
