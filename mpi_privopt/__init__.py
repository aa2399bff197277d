"""mpi_privopt: private decentralized optimization on MPI, one rank per agent.

Run ``mpiexec -n 8 python -m mpi4py -m mpi_privopt run`` for the default experiment and
``python -m mpi_privopt list`` for what is available.
"""
__version__ = "0.1.0"
