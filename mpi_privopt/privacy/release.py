"""What an agent may put on a link: a :class:`Release`.

A release is a payload plus how it was made private. The network refuses anything
else, so an algorithm cannot send a raw array by accident: it must say whether the
message went through a mechanism (``private``, carrying the mechanism's privacy event),
is independent of the data (``public``), or is sent in the clear by a non-private
baseline (``nonprivate``, whose privacy loss is unbounded and is reported as such).
"""
from __future__ import annotations

from typing import Any

import numpy as np

PRIVATE = "private"
PUBLIC = "public"
NONPRIVATE = "nonprivate"
KINDS = (PRIVATE, PUBLIC, NONPRIVATE)


class Release:
    """A payload ready to leave an agent.

    Parameters
    ----------
    payload : numpy.ndarray
        The values to send. Made C-contiguous so the network can hand the buffer to
        MPI without a copy or pickle.
    kind : {"private", "public", "nonprivate"}
        How the payload relates to the agent's private data.
    note : str, optional
        For ``nonprivate`` releases, what protection (not DP) the message has, if any.
    event : object, optional
        For ``private`` releases, the privacy event of the mechanism that produced the
        payload (for example a Gaussian mechanism's sensitivity and noise scale). The
        per-link ledger books it on every link the release travels.
    """

    __slots__ = ("payload", "kind", "event", "note")

    def __init__(self, payload: np.ndarray, kind: str, event: Any = None, note: str = "") -> None:
        if kind not in KINDS:
            raise ValueError(f"release kind {kind!r} is not one of {KINDS}")
        if kind == PRIVATE and event is None:
            raise ValueError("a private release must carry the privacy event of its mechanism")
        self.payload = np.ascontiguousarray(payload)
        self.kind = kind
        self.event = event
        self.note = note

    @classmethod
    def nonprivate(cls, payload: np.ndarray, note: str = "") -> "Release":
        """Mark a message without a differential-privacy guarantee.

        ``note`` says why, when there is more to say than "sent in the clear" (for example
        structured randomization, whose protection is not differential privacy).
        """
        return cls(payload, NONPRIVATE, note=note)

    @classmethod
    def public(cls, payload: np.ndarray) -> "Release":
        """Mark a message that does not depend on any private data."""
        return cls(payload, PUBLIC)

    def __repr__(self) -> str:
        return f"Release(kind={self.kind!r}, shape={self.payload.shape}, event={self.event!r})"
