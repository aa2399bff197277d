"""Where privacy mechanisms draw their noise: ``fast`` (seeded numpy) or ``secure`` (exact, OS entropy).

Two noise modes (``NOISE_MODES``); every privacy report says which one produced it.

``fast``
    A numpy ``Generator`` (PCG64) per agent and per directed link, all derived from the run's
    one ``np.random.SeedSequence(seed)``. Reproducible and vectorised (a draw of any size is a
    single numpy call), so it is the mode for experiments. It is **not** safe to publish:
    textbook floating-point Laplace/Gaussian sampling leaks through the low-order bits of
    the released value (Mironov 2012), and PCG64 is not a cryptographic generator. The
    privacy accounting of a fast run is the nominal one of the continuous mechanism.

``secure``
    Fresh randomness from OS entropy (a ChaCha20 stream keyed with 32 bytes of
    ``os.urandom`` for every draw, through the ``cryptography`` package) and an exact
    sampler: the discrete Gaussian and discrete Laplace of Canonne, Kamath and Steinke (2020)
    on the lattice ``g * Z`` with a fine granularity ``g`` (a power of two, default
    ``2**-30``), vectorised with integer arithmetic in
    :mod:`mpi_privopt.privacy.exact_sampling` (every acceptance test is an exact integer
    comparison; no floating-point number enters a decision). A draw of scale ``s`` is
    ``g * Z`` with ``Z`` a discrete Gaussian (resp. discrete Laplace) of scale ``s / g`` on the
    integers, so no floating-point artefact depends on anything. Secure draws are **not
    reproducible**, by design: ``seed``, ``agent``, ``sender`` and ``receiver`` are ignored.
    Needs the optional extra: ``pip install 'mpi_privopt[secure]'``.

Stream derivation (fast mode)
-----------------------------
Every fast stream is ``np.random.SeedSequence(seed, spawn_key=KEY)``:

====================  ==========================================
stream                spawn key
====================  ==========================================
agent ``a``'s noise   ``(AGENT_NOISE_TAG, a)``, tag ``0x4E010001``
link ``s -> r``       ``(LINK_NOISE_TAG, s, r)``, tag ``0x4E010002``
agent ``a``, chain c  ``(CHAIN_NOISE_TAG, a, c)``, tag ``0x4E010003`` (a token method's
                      independent chains, :func:`chain_noise`)
====================  ==========================================

The engine's algorithm stream of agent ``k`` is ``SeedSequence(seed).spawn(K)[k]``, i.e.
spawn key ``(k,)`` (and its descendants ``(k, ...)``); the tags are far above any agent
index (they would need more than 1.3e9 agents to meet one), so a noise stream never shares
a spawn key with an algorithm stream, nor an agent stream with a link stream (different
tags) nor a link with another link (``(s, r)`` is ordered: ``s -> r`` and ``r -> s`` are two
streams). The keys depend on the seed and the indices only, never on the rank, the host or
the order of creation, so the draws do not depend on process placement. Distinct keys give
streams that are independent for all practical purposes (SeedSequence hashes the seed and
the key into the generator state).

Secure mode: rounding and the privacy accounting
------------------------------------------------
The discrete Gaussian with scale ``sigma/g`` on ``Z`` satisfies exactly the zCDP bound of the
continuous one, ``rho = ||D||_2^2 / (2 sigma^2)``, and the discrete Laplace with scale ``b/g``
is ``||D||_1 / b``-DP, **when the sensitivity ``D`` is measured between lattice-valued
inputs** (CKS20, Thms. 4 and 14 via the scaling ``g * Z``). So a mechanism must release
``round_to_grid(value) + noise`` (never ``value + noise``):

* ``round_to_grid`` rounds each coordinate to the nearest multiple of ``g``; since ``g`` is a
  power of two, it is exact in float64. The rounded sum is exactly ``g * (m + Z)``, and the
  float64 addition returns the correctly rounded value of that exact lattice point, i.e. a
  post-processing of the discrete mechanism's output.
* Rounding may move each coordinate of two neighbouring inputs apart by up to one grid step,
  so the sensitivity grows by at most ``g * sqrt(d)`` in L2 (Gaussian) and ``g * d`` in L1
  (Laplace) for ``d`` coordinates: :meth:`SecureNoise.effective_sensitivity` returns it, and
  the accountant should use it (OpenDP's own privacy map adds exactly that). With the
  default ``g = 2**-30`` this is ``9.3e-10 * sqrt(d)``, e.g. ``9.3e-7`` for ``d = 10**6``.
* The noise itself is exact on the lattice as long as ``|Z| < 2**53``; the scale must
  therefore lie in ``[2**10 g, 2**45 g]``, which for the default grid is
  ``[9.5e-7, 32768]``; outside it a :class:`~mpi_privopt.errors.ConfigError` asks for another
  ``granularity``. Inside it the sampler's int64 arithmetic keeps ``|Z| < 256 * 2**45``, and a
  draw that would pass it (256 scales: probability ``e^-256`` per coordinate) raises
  ``OverflowError`` instead of returning an inexact value.
* The released law is a lattice law of step ``g``: its Kolmogorov distance to the continuous
  law is about ``g / (s sqrt(2 pi))`` (at most ``4e-4`` at the lower limit of the scale,
  ``4e-10`` at ``s = 1``), and the discrete Gaussian's variance is ``sigma^2`` up to an
  exponentially small term for ``sigma/g >= 1``.

Fast mode has ``granularity = None``: its ``round_to_grid`` returns the value unchanged and
its ``effective_sensitivity`` the sensitivity unchanged.
"""
from __future__ import annotations

import math
import operator
from typing import Protocol

import numpy as np

from ..errors import ConfigError

NOISE_MODES = ("fast", "secure")

#: Spawn-key tags of the fast streams (see the module docstring).
AGENT_NOISE_TAG = 0x4E010001
LINK_NOISE_TAG = 0x4E010002
CHAIN_NOISE_TAG = 0x4E010003

#: Secure mode's default lattice step ``g``.
DEFAULT_GRANULARITY = 2.0 ** -30
#: Secure mode's allowed range of ``scale / g`` (``log2``): the lattice must be fine
#: relative to the scale, and the integer noise must stay exactly representable in float64.
MIN_SCALE_STEPS_LOG2 = 10
MAX_SCALE_STEPS_LOG2 = 45

SECURE_FIX = "pip install 'mpi_privopt[secure]'"



class NoiseSource(Protocol):
    """What privacy mechanisms draw noise from (:class:`FastNoise`, :class:`SecureNoise`).

    Both implementations also have ``granularity``, ``round_to_grid(value)``,
    ``effective_sensitivity(...)`` and ``describe()``: see the module docstring.
    """

    mode: str  # "fast" or "secure"; every privacy report says which

    def gaussian(self, sigma: float, shape) -> np.ndarray:
        """float64 array of the given shape, i.i.d. N(0, sigma^2)."""
        ...

    def laplace(self, scale: float, shape) -> np.ndarray:
        """float64 array of the given shape, i.i.d. Laplace(0, scale)."""
        ...


def _check_scale(name: str, value) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x) or x < 0:
        raise ConfigError(f"noise {name} = {value!r} must be a finite number >= 0",
                          f"check the calibration that produced the {name}")
    return x


def _check_index(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"noise stream {name} = {value!r} must be an integer >= 0",
                          f"pass the {name} as a non-negative integer")
    return int(value)


def _shape(shape) -> tuple[int, ...]:
    try:
        out = ((operator.index(shape),) if np.ndim(shape) == 0
               else tuple(operator.index(n) for n in shape))
    except (TypeError, ValueError):
        out = None
    if out is None or any(n < 0 for n in out):
        raise ConfigError(f"noise shape {shape!r} is not a shape",
                          "pass an int or a tuple of non-negative ints")
    return out


class FastNoise:
    """Reproducible noise from a numpy ``Generator`` (PCG64) seeded by ``seed_seq``.

    Not safe to publish (floating-point sampling, non-cryptographic generator): for
    experiments. Each draw is a single vectorised numpy call.
    """

    mode = "fast"
    granularity = None

    def __init__(self, seed_seq: np.random.SeedSequence) -> None:
        if not isinstance(seed_seq, np.random.SeedSequence):
            raise ConfigError(f"FastNoise needs a numpy SeedSequence, got {type(seed_seq).__name__}",
                              "use agent_noise() / link_noise(), or pass np.random.SeedSequence(...)")
        self.seed_seq = seed_seq
        self._rng = np.random.Generator(np.random.PCG64(seed_seq))

    def gaussian(self, sigma: float, shape) -> np.ndarray:
        """i.i.d. ``N(0, sigma^2)`` draws (float64) of the given shape."""
        sigma = _check_scale("sigma", sigma)
        return np.asarray(self._rng.normal(0.0, sigma, size=_shape(shape)), dtype=np.float64)

    def laplace(self, scale: float, shape) -> np.ndarray:
        """i.i.d. ``Laplace(0, scale)`` draws (float64) of the given shape."""
        scale = _check_scale("scale", scale)
        return np.asarray(self._rng.laplace(0.0, scale, size=_shape(shape)), dtype=np.float64)

    def round_to_grid(self, value) -> np.ndarray:
        """The value as float64, unchanged (fast mode has no lattice); callers only read it."""
        return np.asarray(value, dtype=np.float64)

    def effective_sensitivity(self, sensitivity: float, dim: int, norm: str = "l2") -> float:
        """The sensitivity unchanged (no rounding in fast mode)."""
        return float(sensitivity)

    def describe(self) -> dict:
        """For reports: the mode and how the stream was derived."""
        return {"mode": self.mode, "generator": "numpy PCG64", "reproducible": True,
                "entropy": str(self.seed_seq.entropy),
                "spawn_key": [int(k) for k in self.seed_seq.spawn_key],
                "floating_point_safe": False}

    def __repr__(self) -> str:
        return (f"FastNoise(entropy={self.seed_seq.entropy}, "
                f"spawn_key={tuple(self.seed_seq.spawn_key)})")


def _import_sampler():
    """:mod:`.exact_sampling` and the ``cryptography`` version, or a ConfigError."""
    try:
        import cryptography  # noqa: F401 - the cipher stream of secure draws
    except ImportError as err:
        raise ConfigError(f"privacy.noise = 'secure' needs the cryptography package (its "
                          f"ChaCha20 stream), which is not installed ({err})",
                          SECURE_FIX) from err
    from . import exact_sampling
    from importlib.metadata import version
    return exact_sampling, version("cryptography")


class SecureNoise:
    """Noise safe to publish: OS entropy and exact discrete samplers (CKS20).

    Parameters
    ----------
    granularity : float, optional
        The lattice step ``g``, a power of two (default ``2**-30``). Draws of scale ``s``
        are ``g`` times integer discrete Gaussian/Laplace noise of scale ``s/g``; ``s/g``
        must lie in ``[2**10, 2**45]``. Mechanisms must release
        ``round_to_grid(value) + noise`` and account with :meth:`effective_sensitivity`
        (module docstring). Not reproducible, by design.

    Raises
    ------
    ConfigError
        If ``cryptography`` is not installed (``pip install 'mpi_privopt[secure]'``) or the
        granularity is not a positive power of two.
    """

    mode = "secure"

    def __init__(self, granularity: float | None = None) -> None:
        g = DEFAULT_GRANULARITY if granularity is None else granularity
        try:
            g = float(g)
        except (TypeError, ValueError):
            g = math.nan
        if not (math.isfinite(g) and g > 0 and math.frexp(g)[0] == 0.5):
            raise ConfigError(f"secure noise granularity = {granularity!r} must be a positive "
                              f"power of two", "use e.g. granularity=2**-30 (the default)")
        self._sampler, self.cryptography_version = _import_sampler()
        self.granularity = g
        self._k = math.frexp(g)[1] - 1  # g == 2**k

    # A checkpoint (every run's end saves one) saves the source: the sampler is a
    # module, not data, so a restored source imports it again. No key is kept between
    # draws (each draw keys a fresh cipher stream from OS entropy), so nothing secret is
    # written either.
    def __getstate__(self) -> dict:
        state = dict(vars(self))
        del state["_sampler"]
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self._sampler = _import_sampler()[0]

    # ---- the lattice ------------------------------------------------------------------
    def round_to_grid(self, value) -> np.ndarray:
        """Each coordinate rounded to the nearest multiple of ``granularity`` (float64).

        Exact (``granularity`` is a power of two). Release ``round_to_grid(value) + noise``:
        the privacy guarantee of the discrete samplers holds for lattice-valued inputs, and
        rounding can grow the sensitivity by at most one grid step per coordinate (see
        :meth:`effective_sensitivity`).
        """
        v = np.asarray(value, dtype=np.float64)
        return np.round(v / self.granularity) * self.granularity

    def effective_sensitivity(self, sensitivity: float, dim: int, norm: str = "l2") -> float:
        """Sensitivity after :meth:`round_to_grid` of ``dim`` coordinates.

        ``sensitivity + g * sqrt(dim)`` for ``norm="l2"`` (Gaussian),
        ``sensitivity + g * dim`` for ``norm="l1"`` (Laplace).
        """
        if norm == "l2":
            return float(sensitivity) + self.granularity * math.sqrt(dim)
        if norm == "l1":
            return float(sensitivity) + self.granularity * dim
        raise ConfigError(f"sensitivity norm {norm!r} is unknown", "use 'l2' or 'l1'")

    # ---- draws ----------------------------------------------------------------------
    def gaussian(self, sigma: float, shape) -> np.ndarray:
        """i.i.d. draws (float64) of ``g * DiscreteGaussian(sigma / g)`` on ``g * Z``."""
        return self._draw("gaussian", _check_scale("sigma", sigma), _shape(shape))

    def laplace(self, scale: float, shape) -> np.ndarray:
        """i.i.d. draws (float64) of ``g * DiscreteLaplace(scale / g)`` on ``g * Z``."""
        return self._draw("laplace", _check_scale("scale", scale), _shape(shape))

    def _draw(self, law: str, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        n = math.prod(shape)
        if n == 0 or scale == 0.0:
            return np.zeros(shape, dtype=np.float64)
        steps = scale / self.granularity
        lo, hi = 2.0 ** MIN_SCALE_STEPS_LOG2, 2.0 ** MAX_SCALE_STEPS_LOG2
        if not lo <= steps <= hi:
            g_fit = 2.0 ** (math.floor(math.log2(scale)) - 30)
            raise ConfigError(
                f"secure {law} noise of scale {scale:g} is {steps:.3g} grid steps of "
                f"{self.granularity:g}; it must be between 2**{MIN_SCALE_STEPS_LOG2} and "
                f"2**{MAX_SCALE_STEPS_LOG2} steps",
                f"use SecureNoise(granularity={g_fit:g}) (2**{math.frexp(g_fit)[1] - 1}), "
                f"or pass granularity= to agent_noise()/link_noise()")
        exact, words = self._sampler, self._sampler.CipherWords()  # a fresh OS-entropy key
        if law == "gaussian":
            z = exact.discrete_gaussian(steps, n, words)
        else:
            z = exact.discrete_laplace(*exact.laplace_parameters(steps), n, words)
        # |z| < 2**53 (module docstring), so z * g is the exact lattice point
        return (z * self.granularity).reshape(shape)

    def describe(self) -> dict:
        """For reports: the mode, the sampler and the lattice."""
        return {"mode": self.mode, "reproducible": False,
                "sampler": "discrete Gaussian/Laplace, CKS20, vectorised exact integer "
                           "arithmetic (mpi_privopt.privacy.exact_sampling)",
                "entropy": f"OS (os.urandom key per draw) -> ChaCha20 stream "
                           f"(cryptography {self.cryptography_version})",
                "granularity": self.granularity, "granularity_log2": self._k,
                "floating_point_safe": True}

    def __repr__(self) -> str:
        return f"SecureNoise(granularity=2**{self._k})"


def _check_mode(mode: str) -> str:
    if mode not in NOISE_MODES:
        raise ConfigError(f"noise mode {mode!r} is unknown",
                          f"use one of {', '.join(repr(m) for m in NOISE_MODES)} "
                          f"(privacy.noise in the configuration)")
    return mode


def agent_noise(mode: str, seed: int, agent: int, *,
                granularity: float | None = None) -> NoiseSource:
    """Agent ``agent``'s noise source.

    ``fast``: ``FastNoise(SeedSequence(seed, spawn_key=(AGENT_NOISE_TAG, agent)))``: the same
    (seed, agent) gives the same draws on any rank or host. ``secure``:
    ``SecureNoise(granularity)``, from OS entropy; seed and agent are ignored.
    """
    _check_mode(mode)
    seed, agent = _check_index("seed", seed), _check_index("agent", agent)
    if mode == "secure":
        return SecureNoise(granularity)
    return FastNoise(np.random.SeedSequence(seed, spawn_key=(AGENT_NOISE_TAG, agent)))


def link_noise(mode: str, seed: int, sender: int, receiver: int, *,
               granularity: float | None = None) -> NoiseSource:
    """The noise source of the directed link ``sender -> receiver``.

    ``fast``: ``FastNoise(SeedSequence(seed, spawn_key=(LINK_NOISE_TAG, sender, receiver)))``;
    both endpoints can build the same stream (e.g. for noise that cancels across a link).
    ``secure``: ``SecureNoise(granularity)`` from OS entropy, so the two endpoints do **not**
    get the same draws: a mechanism that needs noise shared by both ends cannot have it from
    secure mode (it would need a secret shared by the two agents).
    """
    _check_mode(mode)
    seed = _check_index("seed", seed)
    sender, receiver = _check_index("sender", sender), _check_index("receiver", receiver)
    if mode == "secure":
        return SecureNoise(granularity)
    return FastNoise(np.random.SeedSequence(seed, spawn_key=(LINK_NOISE_TAG, sender, receiver)))


def chain_noise(mode: str, seed: int, agent: int, chain: int, *,
                granularity: float | None = None) -> NoiseSource:
    """Agent ``agent``'s noise for chain ``chain`` of a token method (one stream per chain).

    ``fast``: ``FastNoise(SeedSequence(seed, spawn_key=(CHAIN_NOISE_TAG, agent, chain)))``.
    ``secure``: ``SecureNoise(granularity)`` from OS entropy.
    """
    _check_mode(mode)
    seed, agent = _check_index("seed", seed), _check_index("agent", agent)
    chain = _check_index("chain", chain)
    if mode == "secure":
        return SecureNoise(granularity)
    return FastNoise(np.random.SeedSequence(seed, spawn_key=(CHAIN_NOISE_TAG, agent, chain)))
