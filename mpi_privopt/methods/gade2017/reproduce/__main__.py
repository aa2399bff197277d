"""``python -m mpi_privopt.methods.gade2017.reproduce``: the reproduction's command (its
batch workers are started this way under mpiexec)."""
import sys

from . import main

sys.exit(main(sys.argv[1:]))
