"""A token that travels the graph: one holder at a time, on a public schedule.

Methods such as Chan, Xie & Zhao's noisy gradient ADMM pass one state from agent to agent:
step ``t`` is done by ``holder(t)``, which hands the token to ``holder(t + 1)`` over a graph
link. A :class:`TokenChannel` carries one such token (one *chain*) for an algorithm that
never touches MPI::

    channel = TokenChannel(net, walks.ring(graph, T), shape=(n + m,), phase="token",
                           tree=walks.spanning_tree(graph, walks.ring(graph, T)[-1]))
    for t in range(T):
        if channel.holds(t):
            state = initial_state if t == 0 else channel.receive(t)
            ...                                   # one iteration on this agent's data
            if t < T - 1:
                channel.pass_on(mechanism.release(new_state), t)
    final = channel.finish(release_of_final_state if channel.holds(T - 1) else None)

How the bytes move (see docs/token.md):

* ``pass_on`` copies the payload into the channel's own send buffer and starts a
  nonblocking send through :meth:`Network.isend`, so the send is metered on its link,
  admitted by the guards and booked by the listeners (the ledger) like every other send,
  and the algorithm may reuse its arrays at once. A step whose next holder is the same
  agent sends nothing.
* ``receive`` waits for the token with :meth:`Network.recv_any`, which sleeps between tests
  (:func:`~mpi_privopt.network.wait_sleeping`): the K - 1 ranks that wait do not keep a
  core busy. The sender must be the previous holder.
* Messages match only within the channel's phase and chain, so several chains (one
  channel each, e.g. independent Monte-Carlo runs) can travel at once in one program.
  Driving them step by step in one fixed order on every rank (for t: for chain: ...)
  cannot deadlock, because no send waits for its receiver.
* ``finish`` releases the last token to every agent along a public spanning tree
  (:func:`~mpi_privopt.network.walks.spanning_tree` rooted at the last holder), under the phase
  ``phase + ".final"``: each tree link carries one message, metered and booked on the
  agent that sends it, and every agent's receive listeners see what arrived.

Construction is collective (every rank makes the same channels in the same order): each
rank checks the hops it sends and its place in the tree, and all ranks agree on a digest
of the schedule, so a schedule off the graph's links or computed differently on two ranks
is refused on every rank with one message instead of a hang.
"""
from __future__ import annotations

import copy
import zlib
from collections.abc import Callable, Mapping, Sequence
from time import perf_counter

import numpy as np
from mpi4py import MPI

from .link_time import complete_stamps

from ..privacy.release import Release
from .channels import PendingExchange
from .dist_graph import Network
from .protocols import NotANeighbourError, payload_of


class TokenChannel:
    """One token travelling along a public schedule of holders.

    Parameters
    ----------
    net : Network
        This agent's network.
    schedule : sequence of int
        ``schedule[t]`` holds the token during step ``t`` (see :mod:`mpi_privopt.network.walks`);
        consecutive holders must be linked (or equal: no message). The same on every rank.
    shape : int or tuple of int
        The token's shape.
    phase : str
        The phase its hops are metered and booked under (the final release uses
        ``phase + ".final"``).
    chain : int
        Which chain: tokens of different chains never receive each other's messages.
    tree : mapping, optional
        ``parent[v]`` of every agent but the root, the tree :meth:`finish` releases the
        last token along; its root must be the last holder. Needed only for
        :meth:`finish`.
    dtype : numpy dtype
        The token's element type.

    Raises
    ------
    NotANeighbourError
        On every rank, when a hop of the schedule or a link of the tree is not a graph link.
    ValueError
        On every rank, when the ranks' schedules or trees differ.
    """

    def __init__(self, net: Network, schedule: Sequence[int], shape: int | tuple[int, ...],
                 phase: str = "token", chain: int = 0, *,
                 tree: Mapping[int, int] | None = None,
                 dtype: np.dtype | type = np.float64) -> None:
        self._net = net
        self.phase = phase
        self.final_phase = phase + ".final"
        self.chain = int(chain)
        holders = np.array(schedule, dtype=np.int64).reshape(-1)
        holders.setflags(write=False)
        #: the schedule: ``holders[t]`` does step t
        self.holders = holders
        if holders.size == 0:
            raise ValueError("a token schedule needs at least one step")
        if holders.min() < 0 or holders.max() >= net.size:
            raise ValueError(f"a token schedule names agent {int(holders.max())} or "
                             f"{int(holders.min())}; agents are 0..{net.size - 1}")
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
        # _token: the token as this agent last held it (what receive and finish return);
        # _send: what is in flight from this agent, so the algorithm's arrays are free.
        self._token = np.zeros(shape, dtype=dtype)
        self._send = np.zeros(shape, dtype=dtype)
        self._pending: list[PendingExchange] = []
        self._stamps: list = []  # the hops' time stamps in flight (link_time.py)
        self._tree = None if tree is None else {int(v): int(p) for v, p in tree.items()}
        for used in (phase, self.final_phase):  # refuse a bad chain or a tag clash now
            net.message_tag(used, self.chain)
        self._agree(self._own_problem())

    # -- set-up ---------------------------------------------------------------------------

    def _own_problem(self) -> str:
        """What is wrong with this rank's part of the schedule and tree ("" if nothing)."""
        net, h, me = self._net, self.holders, self._net.rank
        sends = np.nonzero((h[:-1] == me) & (h[1:] != me))[0]
        off = sends[~np.isin(h[sends + 1], net.out_neighbors)]
        if off.size:
            t = int(off[0])
            return (f"token {self.phase!r} chain {self.chain}: at step {t} agent {me} would "
                    f"pass the token to agent {int(h[t + 1])}, which is not its "
                    f"out-neighbour (out-neighbours: {net.out_neighbors}); a schedule must "
                    "follow the graph's links (use mpi_privopt.network.walks)")
        if self._tree is None:
            return ""
        tree, root = self._tree, int(h[-1])
        if me == root:
            if me in tree:
                return f"the final-release tree gives the root, agent {me}, a parent"
        else:
            up, seen = me, set()
            while up != root:
                if up in seen or up not in tree:
                    return (f"the final-release tree does not lead from agent {me} to the "
                            f"last holder, agent {root}")
                seen.add(up)
                up = tree[up]
            if tree[me] not in net.in_neighbors:
                return (f"the final-release tree makes agent {tree[me]} the parent of agent "
                        f"{me}, which is not its in-neighbour")
        bad = [v for v in self._children() if v not in net.out_neighbors]
        if bad:
            return (f"the final-release tree makes agent {bad[0]} a child of agent {me}, "
                    "which is not its out-neighbour")
        return ""

    def _children(self) -> list[int]:
        me = self._net.rank
        return sorted(v for v, p in self._tree.items() if p == me)

    def _agree(self, problem: str) -> None:
        """Refuse on every rank what any rank found wrong, or a schedule not all share."""
        net = self._net
        digest = zlib.crc32(self.holders.tobytes())
        if self._tree is not None:
            digest = zlib.crc32(repr(sorted(self._tree.items())).encode(), digest)
        mine = np.array([net.rank if problem else net.size, digest, -digest], dtype=np.int64)
        least = np.empty_like(mine)
        net.comm.Allreduce(mine, least, op=MPI.MIN)
        first_bad, lowest, highest = int(least[0]), int(least[1]), -int(least[2])
        if first_bad < net.size:
            raise NotANeighbourError(net.comm.bcast(problem, root=first_bad))
        if lowest != highest:
            raise ValueError(f"token {self.phase!r} chain {self.chain}: the ranks computed "
                             "different schedules or trees; a schedule must be a function of "
                             "the public graph and seed only (use mpi_privopt.network.walks)")

    # -- the token ------------------------------------------------------------------------

    @property
    def steps(self) -> int:
        """Number of steps in the schedule."""
        return int(self.holders.size)

    def holder(self, t: int) -> int:
        """The agent that does step ``t``."""
        return int(self.holders[t])

    def holds(self, t: int) -> bool:
        """Whether this agent does step ``t``."""
        return int(self.holders[t]) == self._net.rank

    def _check_holder(self, t: int, what: str) -> None:
        if not 0 <= t < self.holders.size or self.holders[t] != self._net.rank:
            raise ValueError(f"agent {self._net.rank} cannot {what} token {self.phase!r} at "
                             f"step {t}: the schedule gives that step to "
                             f"{'nobody' if not 0 <= t < self.holders.size else self.holder(t)}")

    def receive(self, t: int) -> np.ndarray:
        """Wait (without spinning) for the token of step ``t`` and return it.

        Called by ``holder(t)``, ``t >= 1`` (step 0 starts from the public initial token).
        The returned array is the channel's: it stays valid until the next receive, and
        the algorithm may compute in it.
        """
        self._check_holder(t, "receive")
        if t == 0:
            raise ValueError("step 0 has no previous holder: its holder starts from the "
                             "initial token")
        previous = int(self.holders[t - 1])
        if previous != self._net.rank:
            source = self._net.recv_any(self._token, self.phase, self.chain)
            self._hop_arrived(source, self.phase)
            if source != previous:  # cannot happen once the ranks agreed on the schedule
                raise RuntimeError(f"token {self.phase!r} chain {self.chain} step {t} came "
                                   f"from agent {source}, the schedule says {previous}")
        return self._token

    def pass_on(self, release: Release, t: int) -> None:
        """Hand the token after step ``t`` to ``holder(t + 1)`` (no message if that is us).

        The payload is copied, so the algorithm's arrays are free again on return.
        """
        self._check_holder(t, "pass on")
        if t + 1 >= self.holders.size:
            raise ValueError(f"step {t} is the last of token {self.phase!r}: release the "
                             "final token with finish()")
        payload = payload_of(release)
        if payload.shape != self._token.shape or payload.dtype != self._token.dtype:
            raise ValueError(f"token {self.phase!r} carries {self._token.dtype} arrays of shape "
                             f"{self._token.shape}, got {payload.dtype} {payload.shape}")
        following = int(self.holders[t + 1])
        if following == self._net.rank:
            np.copyto(self._token, payload)
            return
        self._send_copy(release, [following], self.phase)

    def _send_copy(self, release: Release, receivers: Sequence[int], phase: str) -> None:
        self.complete()  # the send buffer is free once the previous sends are done
        np.copyto(self._send, release.payload)
        # The same release (kind, event) with the channel's buffer as its payload.
        outgoing = _with_payload(release, self._send)
        net = self._net
        sent_at = perf_counter()  # before the token leaves: its hop's start
        self._pending = [net.isend(v, outgoing, phase, self.chain) for v in receivers]
        self._stamps = net.link_timer.stamp_hops(net.comm, receivers, sent_at)

    def _hop_arrived(self, source: int, phase: str) -> None:
        """Book the hop's transit (its stamp follows every token message)."""
        net = self._net
        net.link_timer.hop_arrived(net.comm, source, phase, net.arrived)

    def complete(self) -> None:
        """Wait (without spinning) until the token messages this agent sent have left."""
        for pending in self._pending:
            pending.wait(sleeping=True)
        self._pending = []
        complete_stamps(self._stamps)
        self._stamps = []

    def finish(self, release: Release | None,
               relay: Callable[[np.ndarray], Release] = Release.public, *,
               for_child: Callable[[np.ndarray, int], Release] | None = None) -> np.ndarray:
        """Release the last token to every agent along the public tree; return it.

        Called on every rank. The last holder passes ``release`` (its final token);
        every other agent passes ``None``, receives the token from its tree parent and
        forwards ``relay(token)`` to its tree children. By default a relay's forward is a
        public release: it does not depend on the relay's own data (what the token reveals
        of its owners' data is theirs to account, seen through the receive listeners).
        ``for_child``: instead, every sender (the last holder and the relays) sends child
        ``v`` the release ``for_child(token, v)``, so each observer's message carries the
        events of what it sees (the root's payload is still ``release``'s).
        """
        if self._tree is None:
            raise ValueError(f"token {self.phase!r} has no tree to release the final token "
                             "along: pass tree=walks.spanning_tree(graph, last holder)")
        net, last = self._net, int(self.holders[-1])
        if net.rank == last:
            if release is None:
                raise ValueError(f"agent {last} holds the last token of {self.phase!r}: "
                                 "finish() needs its release")
            np.copyto(self._token, payload_of(release))
            outgoing = release
        else:
            source = net.recv_any(self._token, self.final_phase, self.chain)
            self._hop_arrived(source, self.final_phase)
            if source != self._tree[net.rank]:
                raise RuntimeError(f"the final token came from agent {source}, the tree "
                                   f"says {self._tree[net.rank]}")
            outgoing = relay(self._token)
        children = self._children()
        if children and for_child is not None:
            self.complete()
            np.copyto(self._send, self._token)
            releases = [_with_payload(for_child(self._token, v), self._send)
                        for v in children]
            sent_at = perf_counter()
            self._pending = [self._net.isend(v, release, self.final_phase, self.chain)
                             for v, release in zip(children, releases)]
            self._stamps = net.link_timer.stamp_hops(net.comm, children, sent_at)
        elif children:
            self._send_copy(outgoing, children, self.final_phase)
        self.complete()
        return self._token


def _with_payload(release: Release, payload: np.ndarray) -> Release:
    """``release`` (its kind and events) with ``payload`` as what it sends."""
    outgoing = copy.copy(release)
    outgoing.payload = payload
    return outgoing
