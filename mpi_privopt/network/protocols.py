"""What the network tells and asks: its listeners, its guards, and its one error.

Everything sent is a :class:`~mpi_privopt.privacy.release.Release`; :func:`payload_of`
refuses anything else, so a raw array cannot leave an agent unbooked.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..privacy.release import Release


class ReleaseListener(Protocol):
    """Something told about every release that leaves the agent (the privacy ledger)."""

    def on_release(self, release: Release, receivers: Sequence[int], phase: str, round: int) -> None:
        ...


class ReceiveListener(Protocol):
    """Something told about every block an agent receives (an honest-but-curious observer)."""

    def on_receive(self, data: np.ndarray, sources: Sequence[int], phase: str, round: int) -> None:
        ...


class SendGuard(Protocol):
    """Something that may refuse a send before anything leaves the agent (a budget)."""

    def admit(self, outgoing: Sequence[tuple[Release, Sequence[int]]], phase: str) -> None:
        ...


class NotANeighbourError(ValueError):
    """Raised when a point-to-point message names a rank that is not a neighbour."""


def payload_of(release: Release) -> np.ndarray:
    """The array a release sends; TypeError for anything that is not a Release."""
    if not isinstance(release, Release):
        raise TypeError(
            "the network sends only Release objects; wrap the array with a mechanism, "
            "Release.public(...) or Release.nonprivate(...)")
    return release.payload
