"""Under an MPI-3 library (Open MPI 4.1: no persistent collectives) the package falls back
and says so: the network reports its collective path, and the bench runs without its
persistent variants (before, it crashed on ``Neighbor_allgather_init``).

The MPI-3 library is modelled by a communicator whose ``Neighbor_allgather_init`` raises
NotImplementedError, as mpi4py does when the library lacks it; tests/site_mpi/ runs the
whole suite under a real Open MPI 4.1 too.
"""
import numpy as np
import pytest

from mpi_privopt import bench, topology
from mpi_privopt.network import Network


class MPI3World:
    """COMM_WORLD of an MPI-3 library: its dist-graph communicators have no persistent
    neighbour collectives."""

    def __init__(self, comm):
        self._comm = comm

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def Create_dist_graph_adjacent(self, *args, **kwargs):  # noqa: N802
        return MPI3World(self._comm.Create_dist_graph_adjacent(*args, **kwargs))

    def Neighbor_allgather_init(self, *args, **kwargs):  # noqa: N802
        raise NotImplementedError("MPI_Neighbor_allgather_init")


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("mpi3", [False, True])
def test_the_network_says_which_collective_path_its_channels_took(comm, mpi3):
    world = MPI3World(comm) if mpi3 else comm
    graph = topology.build_graph("ring", comm.size, seed=0)
    net = Network(world, *topology.neighbors(graph, comm.rank))
    assert net.collective_path == "none"
    net.broadcast_channel("x", 2)
    expected = "one-off" if mpi3 or not bench.persistent_collectives(comm) else "persistent"
    assert net.collective_path == expected
    net.free()


@pytest.mark.mpi(min_size=2)
def test_the_bench_runs_without_persistent_collectives(comm):
    world = MPI3World(comm)
    assert not bench.persistent_collectives(world)
    graph = topology.build_graph("ring", comm.size, seed=0)
    net = Network(world, *topology.neighbors(graph, comm.rank))
    rows = bench.bench_exchange(world, net, [8], repeats=3)
    net.free()
    row = rows[0]
    assert row["raw_persistent_us"] is None and row["channel_vs_raw_persistent"] is None
    assert row["raw_us"] > 0 and row["channel_us"] > 0 and row["channel_vs_raw"] > 0
    dgd = bench.bench_dgd(world, graph, iterations=3)
    assert dgd["same_iterates"]         # the registered dgd on the fallback = hand-written
    assert dgd["raw_persistent_it_per_s"] is None and dgd["dgd_vs_raw_persistent"] is None
    assert dgd["dgd_it_per_s"] > 0 and dgd["dgd_vs_raw"] > 0
    assert bench._ratio_cell(dgd, "dgd_vs_raw_persistent", 0) == "n/a"
