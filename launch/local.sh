#!/usr/bin/env bash
# Run an experiment on this machine: 8 ranks of the default experiment unless told otherwise.
#   ./launch/local.sh                                  # default experiment, 8 ranks
#   RANKS=4 ./launch/local.sh dgd-ridge --set run.iterations=500
# Everything after the script name is passed to `mpi_privopt run`.
set -euo pipefail
EXTRAS=${EXTRAS:-mpich}
source "$(dirname "$0")/_env.sh"
ranks=${RANKS:-8}
cd "$here"
# Oversubscribing the cores is fine: MPI waits without spinning in our code.
exec mpiexec -n "$ranks" python -m mpi4py -m mpi_privopt run "$@"
