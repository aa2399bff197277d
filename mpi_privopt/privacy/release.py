"""What an agent may put on a link: a :class:`Release`, a payload and its privacy event.

The network refuses anything else, so an algorithm cannot send a raw array by accident: the
event says what the message is. A mechanism's event (Gaussian, Laplace, ...) carries its
sensitivity and noise; a :class:`~mpi_privopt.privacy.events.PublicEvent` marks a message
independent of the data (free); a :class:`~mpi_privopt.privacy.events.NonPrivateEvent`, one
sent in the clear by a non-private baseline, whose privacy loss is unbounded and reported as
such.
"""
from __future__ import annotations

import numpy as np

from .events import NonPrivateEvent, PrivacyEvent, PublicEvent

PRIVATE = "private"
PUBLIC = "public"
NONPRIVATE = "nonprivate"
KINDS = (PRIVATE, PUBLIC, NONPRIVATE)

#: one event per note: non-private releases made every iteration need not make a new one
_NONPRIVATE_EVENTS: dict[str, NonPrivateEvent] = {}
_PUBLIC_EVENT = PublicEvent()


class Release:
    """A payload ready to leave an agent, with the privacy event that describes it.

    Parameters
    ----------
    payload : numpy.ndarray
        The values to send. Made C-contiguous so the network can hand the buffer to
        MPI without a copy or pickle.
    event : PrivacyEvent
        What was released: the mechanism's event for a private release, a
        :class:`PublicEvent` or a :class:`NonPrivateEvent`. The per-link ledger books it on
        every link the release travels.
    more : tuple of PrivacyEvent, optional
        Further events the same payload releases, booked like ``event`` (a token carries
        the contributions of several records, each its own event).
    """

    __slots__ = ("payload", "event", "more")

    def __init__(self, payload: np.ndarray, event: PrivacyEvent,
                 more: tuple[PrivacyEvent, ...] = ()) -> None:
        if not isinstance(event, PrivacyEvent) or not all(
                isinstance(e, PrivacyEvent) for e in more):
            raise TypeError("a release carries the privacy event that describes it: a "
                            "mechanism's event, PublicEvent() or NonPrivateEvent(note)")
        self.payload = np.ascontiguousarray(payload)
        self.event = event
        self.more = tuple(more)

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """Every event of the release: ``event`` and then ``more``."""
        return (self.event, *self.more)

    @property
    def kind(self) -> str:
        """``private``, ``public`` or ``nonprivate``, from the event."""
        cls = self.event.__class__
        return PUBLIC if cls is PublicEvent else NONPRIVATE if cls is NonPrivateEvent else PRIVATE

    @classmethod
    def nonprivate(cls, payload: np.ndarray, note: str = "") -> "Release":
        """Mark a message without a differential-privacy guarantee.

        ``note`` says why, when there is more to say than "sent in the clear" (for example
        structured randomization, whose protection is not differential privacy).
        """
        event = _NONPRIVATE_EVENTS.get(note)
        if event is None:
            event = _NONPRIVATE_EVENTS[note] = NonPrivateEvent(note)
        return cls(payload, event)

    @classmethod
    def public(cls, payload: np.ndarray) -> "Release":
        """Mark a message that does not depend on any private data."""
        return cls(payload, _PUBLIC_EVENT)

    def __repr__(self) -> str:
        more = f", more={len(self.more)}" if self.more else ""
        return f"Release(shape={self.payload.shape}, event={self.event!r}{more})"
