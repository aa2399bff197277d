#!/usr/bin/env bash
# Reproduce a paper's experiments on this machine: adds the reproduce extra (matplotlib,
# scikit-learn) to the environment launch/local.sh and launch/test.sh share (.venv), then
# runs `python -m mpi_privopt reproduce` with the arguments given; each reproduction
# launches its own mpiexec jobs.
#   ./launch/reproduce.sh --help                 # the reproductions
#   ./launch/reproduce.sh gade2017 --quick       # a short version, a minute or less
# `./launch/local.sh reproduce NAME ...` does the same.
set -euo pipefail
EXTRAS=${EXTRAS:-mpich,reproduce}
source "$(dirname "$0")/_env.sh"
cd "$here"
exec python -m mpi_privopt reproduce "$@"
