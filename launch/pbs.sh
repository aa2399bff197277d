#!/usr/bin/env bash
# PBS/Torque batch script: one MPI rank per agent, using the site's MPI through mpi4py.
#   qsub -l select=1:ncpus=8:mpiprocs=8 -v ARGS="default" launch/pbs.sh
# Install once without the mpich extra (see launch/slurm.sh).
#PBS -N mpi_privopt
#PBS -l walltime=01:00:00
#PBS -j oe
set -euo pipefail
venv=${MPI_PRIVOPT_VENV:-$HOME/venvs/mpi_privopt}
# shellcheck disable=SC1091
source "$venv/bin/activate"
cd "${PBS_O_WORKDIR:-.}"
ranks=$(wc -l < "$PBS_NODEFILE")
# ARGS is word-split on purpose: it carries the config name and --set overrides.
# shellcheck disable=SC2086
mpiexec -n "$ranks" -hostfile "$PBS_NODEFILE" python -m mpi4py -m mpi_privopt run ${ARGS:-}
