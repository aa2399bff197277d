"""Per-hop latency and CPU of a token going round a ring: TokenChannel against MPICH's Recv.

    mpiexec -n K python docs/bench/token_hop.py [HOPS] [WIDTH]

Both variants pass a WIDTH-float64 token HOPS times around the ring topology with no work
per step. "token" is TokenChannel (nonblocking send, sleeping receive); "blocking" is
Network.send / Network.recv (MPI_Send / MPI_Recv, which poll). Rank 0 prints the wall time
per hop and, per variant, the ranks' CPU time over wall time (1.0 = one busy core each).
"""
import sys
import time

import numpy as np
from mpi4py import MPI

from mpi_privopt import topology
from mpi_privopt.network import walks
from mpi_privopt.network import Network
from mpi_privopt.privacy.release import Release
from mpi_privopt.network.token_channel import TokenChannel

comm = MPI.COMM_WORLD
hops = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
width = int(sys.argv[2]) if len(sys.argv) > 2 else 128
graph = topology.build_graph("ring", comm.size, seed=0)
net = Network(comm, *topology.neighbors(graph, comm.rank))
token = np.zeros(width)


def timed(run):
    comm.Barrier()
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    comm.Barrier()
    return time.perf_counter() - wall, time.process_time() - cpu


def with_channel():
    channel = TokenChannel(net, walks.ring(graph, hops + 1), width)
    for t in range(hops + 1):
        if channel.holds(t):
            state = token if t == 0 else channel.receive(t)
            if t < hops:
                channel.pass_on(Release.public(state), t)
    channel.complete()


def blocking():
    nxt, prev = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    for t in range(hops + 1):
        if t % comm.size == comm.rank:
            if t > 0:
                net.recv(prev, token, "spin")
            if t < hops:
                net.send(nxt, Release.public(token), "spin")


for name, run in (("token", with_channel), ("blocking", blocking)):
    wall, cpu = timed(run)
    shares = comm.gather(cpu / wall)
    if comm.rank == 0:
        print(f"{name:8s} K={comm.size} hops={hops} width={width}: "
              f"{1e6 * wall / hops:8.1f} us per hop, CPU/wall per rank "
              f"{np.round(shares, 2).tolist()}")
net.free()
