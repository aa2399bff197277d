"""A delay line in user space: Ethernet frames relayed between two interfaces, late.

Where the kernel has no ``sch_netem`` (``tc qdisc ... netem delay`` answers "Specified
qdisc kind is unknown"), a link can still be delayed: cut it in two, put both ends in one
network namespace and relay every frame from one end to the other ``d`` later, in each
direction::

    python delay_line.py IF_A IF_B --delay-ms 5      # relay, until SIGTERM/SIGINT
    python delay_line.py --ping 10.0.0.13 --count 20  # ICMP echo RTTs, for a measurement

tests/cluster/multi_host.sh (``MULTIHOST_DELAY``) takes host3's ``port3`` out of the
switch's bridge, adds a veth pair ``relay3``/``bport3`` with ``bport3`` in the bridge, and
runs ``delay_line.py port3 relay3`` in the switch's namespace.

How (why each choice):

* AF_PACKET raw sockets, ``ETH_P_ALL``, one bound to each interface: the frame as it
  crossed the wire, any protocol (ARP, IPv4, IPv6).
* Our own sends show up on the sending interface's socket as ``PACKET_OUTGOING``: they are
  ignored (``PACKET_IGNORE_OUTGOING`` where the kernel has it, and the packet type checked
  anyway), else every frame would circle forever.
* ``PACKET_VNET_HDR`` on both sockets: veth offloads segmentation (TSO/GSO) and checksums,
  so a frame read from it can be a 64 KB TCP super-frame whose checksum is not yet filled
  in. Sent as plain bytes it fails with EMSGSIZE (longer than the MTU) and, short enough,
  arrives with a wrong checksum and is dropped by the receiver (tried: without the header
  ICMP echo passes but no TCP connection is made, the SYN is dropped). The virtio-net
  header that ``PACKET_VNET_HDR`` prepends carries the segmentation and checksum state
  across the relay, and the sending kernel segments or completes it as it would have.
  The other remedies need more: there is no ethtool binary here to turn the offloads
  off, the SIOCETHTOOL ioctl would have to turn them off on every host's interface (not
  only on the relay's), and ``gso_max_size`` leaves the checksums partial.
* Frames wait in one FIFO per direction (the delay is constant, so the due times are in
  order) and a ``select`` sleeps until a frame arrives or the first one is due: no busy
  waiting. The relay runs SCHED_FIFO where it may (root), so that the processes whose
  frames it carries do not delay it. It still adds its own latency (a wake-up and two
  system calls per frame, tens of microseconds, more on a loaded machine); measure the
  delay it adds with ``--ping`` (RTT with minus without, halved); it prints, when
  stopped, how late after their due time it sent the frames.
* A frame the sending interface refuses (a full ``tbf`` queue: ENOBUFS) is dropped and
  counted, as a full switch port would drop it; TCP resends.
"""
from __future__ import annotations

import argparse
import collections
import os
import select
import signal
import socket
import struct
import sys
import time
from typing import Deque, Sequence, Tuple

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_VNET_HDR = 15
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
#: the virtio-net header (10 bytes) and the largest GSO frame (64 KB) with room to spare
FRAME_MAX = 256 * 1024
RCVBUF = 8 * 1024 * 1024


def open_end(ifname: str) -> socket.socket:
    """A raw packet socket bound to ``ifname``: every frame, with its virtio-net header.

    Parameters
    ----------
    ifname : str
        The interface, in this process's network namespace; it is set promiscuous so
        that frames for any address reach the socket.

    Returns
    -------
    socket.socket
        Non-blocking, ``PACKET_VNET_HDR`` on, outgoing frames ignored where the kernel can.
    """
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # before bind: the option cannot change once the socket has a ring or a binding
    sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    try:
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:  # before Linux 4.20: the packet type check below does it
        pass
    try:  # root: past net.core.rmem_max, so a burst waits in the kernel, not dropped
        sock.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)  # SO_RCVBUFFORCE
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    sock.bind((ifname, ETH_P_ALL))
    index = socket.if_nametoindex(ifname)
    # struct packet_mreq: ifindex, type, alen, address[8]
    sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP,
                    struct.pack("iHH8s", index, PACKET_MR_PROMISC, 0, b""))
    sock.setblocking(False)
    return sock


def _on_time() -> str:
    """Ask to run as soon as a frame arrives or is due; say what was granted.

    A wire does not wait for a CPU. Without this the relay competes with the MPI ranks it
    carries (6 of them on 2 cores, spinning while they wait) and wakes up milliseconds
    late. SCHED_FIFO (root) runs it ahead of them whenever it is ready; it sleeps in
    ``select`` otherwise, and the kernel's real-time throttling bounds it anyway. The
    timer slack (50 us by default) would let each sleep end late.
    """
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK, 1 ns
    except (OSError, AttributeError):  # not Linux: the default slack
        pass
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return "SCHED_FIFO priority 10"
    except (OSError, AttributeError):
        return "the default scheduling (no SCHED_FIFO: not root?)"


def relay(end_a: str, end_b: str, delay: float, ready: str | None = None) -> None:
    """Relay frames between two interfaces, each ``delay`` seconds late, until a signal.

    Parameters
    ----------
    end_a, end_b : str
        The two interfaces (one network namespace).
    delay : float
        The one-way delay added in each direction, seconds (0: relay at once).
    ready : str or None
        A file written once both sockets are bound (a launcher waits for it).
    """
    socks = (open_end(end_a), open_end(end_b))
    scheduling = _on_time()
    # queues[i]: frames read on socks[i], due on the other one, oldest first
    queues: Tuple[Deque[Tuple[float, bytes]], ...] = (collections.deque(),
                                                      collections.deque())
    counts = {"relayed": 0, "dropped": 0, "late_us_max": 0.0, "late_us_sum": 0.0}
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    if ready:
        with open(ready, "w") as f:
            f.write(f"{os.getpid()}\n")
    print(f"delay line {end_a} <-> {end_b}: {delay * 1e3:g} ms each way, {scheduling}",
          flush=True)
    while not stop:
        heads = [q[0][0] for q in queues if q]
        timeout = max(0.0, min(heads) - time.monotonic()) if heads else None
        try:
            readable, _, _ = select.select(socks, [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for i, sock in enumerate(socks):
            if sock not in readable:
                continue
            while True:  # drain: one wake-up for a burst
                try:
                    frame, address = sock.recvfrom(FRAME_MAX)
                except (BlockingIOError, InterruptedError):
                    break
                if address[2] != PACKET_OUTGOING:
                    queues[i].append((now + delay, frame))
        now = time.monotonic()
        for i, queue in enumerate(queues):
            out = socks[1 - i]
            while queue and queue[0][0] <= now:
                due, frame = queue.popleft()
                late = (now - due) * 1e6  # the relay's own latency, beyond the delay
                counts["late_us_max"] = max(counts["late_us_max"], late)
                counts["late_us_sum"] += late
                try:
                    out.send(frame)
                    counts["relayed"] += 1
                except (BlockingIOError, OSError):  # ENOBUFS from a full qdisc: lost
                    counts["dropped"] += 1
    sent = max(counts["relayed"] + counts["dropped"], 1)
    print(f"delay line stopped: {counts['relayed']} frames relayed, {counts['dropped']} "
          f"dropped; sent after their due time by {counts['late_us_sum'] / sent:.0f} us "
          f"on average, {counts['late_us_max']:.0f} us at most", flush=True)


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ping(address: str, count: int = 20, interval: float = 0.05,
         timeout: float = 2.0) -> list[float]:
    """ICMP echo round-trip times to ``address``, seconds (root: a raw ICMP socket).

    Parameters
    ----------
    address : str
        An IPv4 address.
    count : int
        Echo requests, sent one at a time ``interval`` seconds apart.
    interval, timeout : float
        The pause between replies; how long to wait for one reply.

    Returns
    -------
    list of float
        One RTT per reply received (lost requests leave no entry).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    rtts = []
    for seq in range(-1, count):  # -1: a warm-up (ARP, caches), not counted
        body = struct.pack("!d", time.monotonic()) + bytes(48)
        number = seq & 0xFFFF
        header = struct.pack("!BBHHH", 8, 0, 0, ident, number)
        packet = struct.pack("!BBHHH", 8, 0, _checksum(header + body), ident, number) + body
        sent = time.monotonic()
        sock.sendto(packet, (address, 0))
        deadline = sent + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([sock], [], [], left)[0]:
                break
            reply = sock.recv(2048)
            ihl = (reply[0] & 0x0F) * 4
            kind, _, _, r_ident, r_seq = struct.unpack("!BBHHH", reply[ihl:ihl + 8])
            if kind == 0 and r_ident == ident and r_seq == number:
                if seq >= 0:
                    rtts.append(time.monotonic() - sent)
                break
        time.sleep(interval)
    return rtts


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ends", nargs="*", metavar="IF", help="the two interfaces")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--ready", help="a file written once the relay listens")
    parser.add_argument("--ping", metavar="ADDRESS", help="measure RTTs instead")
    parser.add_argument("--count", type=int, default=20)
    args = parser.parse_args(argv)
    if args.ping:
        try:
            rtts = ping(args.ping, args.count)
        except OSError as err:  # not root, or not an IPv4 address
            print(f"delay_line.py: cannot ping {args.ping}: {err}", file=sys.stderr)
            return 1
        if not rtts:
            print(f"ping {args.ping}: no reply to {args.count} requests")
            return 1
        rtts.sort()
        print(f"ping {args.ping}: {len(rtts)}/{args.count} replies, RTT ms "
              f"mean {sum(rtts) / len(rtts) * 1e3:.4f} median "
              f"{rtts[len(rtts) // 2] * 1e3:.4f} min {rtts[0] * 1e3:.4f} "
              f"max {rtts[-1] * 1e3:.4f}")
        return 0
    if len(args.ends) != 2 or args.delay_ms < 0:
        parser.error("give two interfaces and --delay-ms >= 0")
    try:
        relay(args.ends[0], args.ends[1], args.delay_ms * 1e-3, args.ready)
    except OSError as err:  # no such interface, or not root
        print(f"delay_line.py: cannot relay between {args.ends[0]} and {args.ends[1]}: "
              f"{err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
