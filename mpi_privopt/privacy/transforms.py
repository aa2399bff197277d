"""Event transforms: the extension point for amplification.

A transform turns a *wrapped* event into the event an accountant counts. The wrapper says
what happened to a release after it was made; the transform knows what that is worth. For
example, amplification by iteration (Chan, Xie & Zhao 2023) will wrap the Gaussian event of
the iteration that used a record together with the number of noisy iterations an observer
saw after it, and its transform will return a zCDP event of the smaller, amplified cost;
amplification by subsampling would wrap an event with its sampling rate. This mirrors
dp-accounting's ``PoissonSampledDpEvent``: the transform wraps an event instead of editing
the ledger.

Adding a transform is a new module::

    @dataclass(frozen=True)
    class ObservedAfter(PrivacyEvent):       # the wrapper, made where the release is made
        base: GaussianEvent
        iterations: int

    @register_transform(ObservedAfter)
    def amplify(event: ObservedAfter) -> PrivacyEvent:
        return ZCDPEvent(min(event.base.rho, amplified_rho(...)), owner=event.owner, ...)

The ledger resolves every event it books through :func:`resolve` and knows nothing of the
wrapper types. A transform may return another wrapped event; resolution repeats until an
event without a transform remains.
"""
from __future__ import annotations

from collections.abc import Callable

from .events import PrivacyEvent

__all__ = ["TRANSFORMS", "register_transform", "resolve"]

#: wrapper event type -> the function that turns it into the event it is worth
TRANSFORMS: dict[type, Callable[[PrivacyEvent], PrivacyEvent]] = {}

#: resolution stops after this many steps: a cycle of transforms is a programming error
_MAX_DEPTH = 32


def register_transform(event_type: type) -> Callable:
    """Class decorator's sibling for functions: ``@register_transform(Wrapper)``."""
    def decorate(function: Callable[[PrivacyEvent], PrivacyEvent]):
        if event_type in TRANSFORMS and TRANSFORMS[event_type] is not function:
            raise ValueError(f"a transform for {event_type.__name__} is already registered")
        TRANSFORMS[event_type] = function
        return function
    return decorate


def resolve(event: PrivacyEvent) -> PrivacyEvent:
    """The event an accountant counts for ``event`` (``event`` itself if it wraps nothing)."""
    for _ in range(_MAX_DEPTH):
        transform = TRANSFORMS.get(event.__class__)
        if transform is None:
            return event
        event = transform(event)
    raise RuntimeError(f"event transforms did not end after {_MAX_DEPTH} steps "
                       f"(last: {event!r}): a transform returns a wrapper that wraps back")
