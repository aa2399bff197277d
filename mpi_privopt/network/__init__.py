"""One agent's view of the network: neighbour-only messaging on an MPI dist-graph.

The communicator is built with ``Create_dist_graph_adjacent`` from the agent's in- and
out-neighbours, with rank == agent id (no reordering). Every way to send goes to
out-neighbours only: the neighbour collectives address exactly the graph's links, and the
point-to-point calls refuse a rank that is not a neighbour. So a message to a non-neighbour
cannot be expressed through this API.

Everything sent is a :class:`~mpi_privopt.privacy.release.Release`. The network reads only
its payload, meters the bytes and the time on each link, and hands the release to its
listeners (the privacy ledger), so traffic and privacy are booked by the same send path.
Receive listeners see every block that arrives (used to model a curious neighbour).

Hot-path rules: payloads are contiguous numpy buffers handed to the upper-case
(buffer-based) mpi4py calls, never pickled; receive buffers can be passed in (``out=``) and
reused. Every wait goes through :func:`wait_request`: an exchange tests its request for
the first milliseconds, then sleeps between tests (:func:`wait_exchange`), so a rank whose
neighbour is stopped or slow does not keep a core busy; a token receive sleeps from the
start (:func:`wait_sleeping`). A broadcast repeated
every iteration can go through a :class:`BroadcastChannel` (:meth:`Network.broadcast_channel`):
fixed buffers and an MPI-4 persistent neighbour collective set up once, which is cheaper
per exchange than the one-off call; it offers what a method asks for (an exchange, a
weighted neighbour average ``mix``) and keeps its double buffering to itself.

The package, one job per module: :mod:`.dist_graph` (the :class:`Network`), :mod:`.channels`
(:class:`PendingExchange`, :class:`BroadcastChannel`), :mod:`.wait` (how every wait
spins, then sleeps), :mod:`.protocols` (listeners, guards, the one error), :mod:`.tags`
(point-to-point tags), :mod:`.traffic` (the meter), :mod:`.link_time` (the time each
link cost its receiver, sampled), :mod:`.token_channel` (one token on a schedule) and
:mod:`.walks` (the schedules).
"""
from __future__ import annotations

import importlib

# The names below load their module on first use (PEP 562), so that importing a part
# that needs no MPI (``walks`` for the token plans of algorithms/, ``traffic`` for the
# report) does not import mpi4py, which starts MPI: the algorithms layer stays free of
# it (docs/architecture.md, tests/unit/test_import_rules.py).
_EXPORTS = {
    "Network": "dist_graph",
    "BroadcastChannel": "channels", "PendingExchange": "channels",
    "NotANeighbourError": "protocols", "ReceiveListener": "protocols",
    "ReleaseListener": "protocols", "SendGuard": "protocols",
    "max_chain": "tags",
    "set_sample_every": "traffic", "sample_every": "traffic",
    **{name: "wait" for name in (
        "BACKOFF_CAP", "EXCHANGE_SPIN", "EXCHANGE_WAITS", "ONE_OFF_CAP", "Backoff",
        "exchange_wait", "set_exchange_wait", "sleep_until", "sleeping_barrier",
        "wait_exchange", "wait_request", "wait_sleeping", "while_sleeping")},
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
