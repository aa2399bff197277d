#!/usr/bin/env bash
# Run an experiment on this machine: 8 ranks of the default experiment unless told otherwise.
#   ./launch/local.sh                                  # default experiment, 8 ranks
#   RANKS=4 ./launch/local.sh dgd-ridge --set run.iterations=500
#   ./launch/local.sh reproduce gade2017 --quick      # = ./launch/reproduce.sh gade2017 --quick
# Everything after the script name is passed to `mpi_privopt run`.
set -euo pipefail
# a reproduction needs the reproduce extra and starts mpiexec itself
if [ "${1:-}" = reproduce ]; then shift; exec "$(dirname "$0")/reproduce.sh" "$@"; fi
EXTRAS=${EXTRAS:-mpich}
source "$(dirname "$0")/_env.sh"
source "$here/launch/_mpi.sh"
ranks=${RANKS:-8}
cd "$here"
# More ranks than cores is allowed (Open MPI needs --oversubscribe for that), and Open MPI
# gives the ranks time to stop cleanly on Ctrl-C (launch/_mpi.sh). Oversubscribing costs
# time: MPI polls inside a neighbour exchange, so a rank waiting there keeps a core busy;
# only the long waits (a token, the end of the run) sleep (docs/performance.md, "Waiting").
# A person at this terminal sees rank 0's progress line although rank 0's stderr is a pipe
# to mpiexec (mpi_privopt/watching.py); Open MPI's ranks get the variable through -x.
if [ -t 2 ]; then export MPI_PRIVOPT_TERMINAL=1; fi
set_mpiexec_flags "$(command -v mpiexec)" oversubscribe --export MPI_PRIVOPT_TERMINAL
exec mpiexec -n "$ranks" "${MPIEXEC_FLAGS[@]}" python -m mpi4py -m mpi_privopt run "$@"
