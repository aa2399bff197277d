"""The MPI tags of point-to-point messages: one per phase and chain, derived on every rank.

Every rank derives the same tag from a phase's name (a CRC), so no agreement round is
needed; chain c of a phase adds ``c * CHAIN_STRIDE``, up to the library's tag range.
"""
from __future__ import annotations

import zlib

from mpi4py import MPI


def phase_tag(phase: str) -> int:
    """The tag of ``phase`` on chain 0 (1 .. 32000)."""
    # Point-to-point messages of different phases must not match each other; every rank
    # derives the same tag from the phase name, so no agreement round is needed.
    return zlib.crc32(phase.encode()) % 32000 + 1


#: tags per chain: chain c of a phase uses tag ``c * CHAIN_STRIDE + phase_tag(phase)``
CHAIN_STRIDE = 32768


_max_chain: int | None = None


def max_chain() -> int:
    """The largest chain number the MPI library's tag range allows (16383 with MPICH)."""
    global _max_chain
    if _max_chain is None:
        _max_chain = (int(MPI.COMM_WORLD.Get_attr(MPI.TAG_UB)) - 32000) // CHAIN_STRIDE
    return _max_chain
