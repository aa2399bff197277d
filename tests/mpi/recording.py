"""A communicator wrapper that records every payload a run hands to MPI (tests only).

``RecordingComm(MPI.COMM_WORLD, log)`` behaves as the communicator it wraps; every
communicator it creates (``Dup``, ``Create_dist_graph_adjacent``, ...) is wrapped too, and so
is every persistent request (its send buffer is recorded at each ``Start``). mpi4py's
communicator classes cannot be monkeypatched, hence a wrapper passed as ``engine.run(comm=)``.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import numpy as np
from mpi4py import MPI

from mpi_privopt.network.link_time import HOP_TAG, MARKER_TAG

#: calls whose first argument is what leaves this rank
SEND_FIRST = {"Send", "Isend", "Ssend", "Bsend", "Rsend", "Gather", "Igather", "Allgather",
              "Iallgather", "Allreduce", "Iallreduce", "Reduce", "Ireduce", "Alltoall",
              "Scatter", "Bcast", "Ibcast", "Neighbor_allgather", "Ineighbor_allgather",
              "Neighbor_alltoall", "Ineighbor_alltoall", "Neighbor_allgatherv",
              "Neighbor_alltoallv", "Sendrecv", "send", "isend", "ssend", "bcast", "gather",
              "allgather", "allreduce", "reduce", "scatter", "alltoall", "sendrecv",
              "neighbor_allgather", "neighbor_alltoall"}
#: calls that set up a persistent request: the first argument leaves at each Start
PERSISTENT = {"Neighbor_allgather_init", "Neighbor_alltoall_init", "Send_init",
              "Allgather_init", "Bcast_init"}
#: calls that carry no payload
SILENT = {"Get_rank", "Get_size", "Barrier", "Ibarrier", "Free", "Dup", "Create_dist_graph_adjacent",
          "Get_topology", "Get_dist_neighbors", "Get_dist_neighbors_count", "Recv", "Irecv",
          "Recv_init", "recv", "irecv", "Probe", "Iprobe", "Get_name", "Set_name", "Is_inter"}
#: the tags of the link-time markers and token hop stamps (network/link_time.py): a call
#: under one of them is recorded with TIMING appended to its name
TIMING_TAGS = {MARKER_TAG, HOP_TAG}
TIMING = "[timing]"


def _payload_bytes(value) -> bytes:
    """The bytes of what a call sends: a buffer's raw bytes, or the object's pickle."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).tobytes()
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], np.ndarray):
        return np.ascontiguousarray(value[0]).tobytes()  # [buffer, datatype] spec
    try:  # another buffer (array.array, bytearray): its raw bytes, as MPI sends them
        return memoryview(value).tobytes()
    except TypeError:
        return pickle.dumps(value)


@dataclass
class Record:
    comm: str
    call: str
    payload: bytes | None


@dataclass
class CallLog:
    records: list[Record] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)

    def on(self, comm: str) -> list[Record]:
        return [r for r in self.records if r.comm == comm]

    def payloads(self, comm: str | None = None) -> list[bytes]:
        return [r.payload for r in self.records
                if r.payload is not None and (comm is None or r.comm == comm)]


class RecordingRequest:
    """A persistent request whose send buffer is recorded at every Start."""

    def __init__(self, request, send: np.ndarray, log: CallLog, comm: str, call: str) -> None:
        self._request, self._send, self._log, self._comm, self._call = (
            request, send, log, comm, call)

    def Start(self):  # noqa: N802
        self._log.records.append(Record(self._comm, self._call + ".Start",
                                        _payload_bytes(self._send)))
        return self._request.Start()

    def __getattr__(self, name):
        return getattr(self._request, name)


class RecordingComm:
    """``comm`` with every call recorded in ``log`` under the label ``name``."""

    def __init__(self, comm, log: CallLog, name: str = "world") -> None:
        self._comm, self._log, self._name = comm, log, name
        self._children = 0

    def __getattr__(self, attr):
        value = getattr(self._comm, attr)
        if not callable(value):
            return value

        def call(*args, **kwargs):
            payload = None
            if attr in SEND_FIRST:
                payload = _payload_bytes(args[0] if args else next(iter(kwargs.values())))
            elif attr not in SILENT and attr not in PERSISTENT:
                self._log.unknown.add(attr)
                payload = pickle.dumps(
                    [_payload_bytes(a) if isinstance(a, np.ndarray) else repr(a) for a in args])
            name = attr + (TIMING if kwargs.get("tag") in TIMING_TAGS else "")
            self._log.records.append(Record(self._name, name, payload))
            result = value(*args, **kwargs)
            if isinstance(result, MPI.Comm) and result != MPI.COMM_NULL:
                self._children += 1
                return RecordingComm(result, self._log, f"{self._name}/{attr}")
            if attr in PERSISTENT:
                return RecordingRequest(result, args[0], self._log, self._name, name)
            return result

        return call

    def __eq__(self, other):
        return self._comm == (other._comm if isinstance(other, RecordingComm) else other)

    def __ne__(self, other):
        return not self == other

    def __bool__(self):
        return bool(self._comm)

    __hash__ = None
