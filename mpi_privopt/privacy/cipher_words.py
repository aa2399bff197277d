"""Uniform 64-bit words for the exact samplers: ChaCha20 keyed by OS entropy.

ChaCha20 comes from the ``cryptography`` package (i.e. OpenSSL), keyed with 32 bytes of
``os.urandom``; the stream is the cipher's keystream (the encryption of zeros). A test may
pass a fixed key to get a reproducible stream;
:class:`~mpi_privopt.privacy.noise.SecureNoise` never does.
"""
from __future__ import annotations

import os
from typing import Callable

import numpy as np

__all__ = ["CipherWords", "Words"]

#: a source of uniform words: ``words(m)`` returns ``m`` fresh uint64
Words = Callable[[int], np.ndarray]

#: the smallest zero buffer kept (the exact samplers draw up to 2^14 words at once)
_BUFFER_BYTES = 8 << 14


class CipherWords:
    """Uniform 64-bit words from ChaCha20 keyed by OS entropy (or by ``key``, for tests).

    Parameters
    ----------
    key : bytes, optional
        32 bytes. ``None`` (the only use outside tests) draws them from ``os.urandom``.
    """

    _MAX_BYTES = 1 << 36  # well under ChaCha20's 2^32 blocks of 64 bytes per key

    def __init__(self, key: bytes | None = None) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        self._make = lambda k: Cipher(algorithms.ChaCha20(k, bytes(16)), mode=None).encryptor()
        self._fixed = key is not None
        self._rekey(key)
        self._zeros = bytes(0)

    def _rekey(self, key: bytes | None) -> None:
        key = os.urandom(32) if key is None else bytes(key)
        if len(key) != 32:
            raise ValueError(f"a ChaCha20 key has 32 bytes, got {len(key)}")
        self._enc = self._make(key)
        self._used = 0

    def __call__(self, m: int) -> np.ndarray:
        """``m`` fresh uniform words (uint64)."""
        nbytes = 8 * m
        if self._used + nbytes > self._MAX_BYTES:
            # a derived key keeps a fixed-key (test) stream reproducible
            self._rekey(self._enc.update(bytes(32)) if self._fixed else None)
        self._used += nbytes
        if len(self._zeros) < nbytes:
            self._zeros = bytes(max(nbytes, _BUFFER_BYTES))
        out = np.empty(m, dtype=np.uint64)
        self._enc.update_into(memoryview(self._zeros)[:nbytes], memoryview(out).cast("B"))
        return out
