#!/usr/bin/env bash
# Slurm batch script: one MPI rank per agent, using the site's MPI through mpi4py.
#   sbatch --ntasks=50 launch/slurm.sh gauthier2024-elastic-net
#   sbatch --ntasks=8 --time=00:10:00 launch/slurm.sh default --set run.iterations=500
# Install once on the login node, without the mpich extra so mpi4py builds against the
# site's MPI (load its module first):
#   module load openmpi            # or mpich / intel-mpi: whatever the site provides
#   python3 -m venv ~/venvs/mpi_privopt && ~/venvs/mpi_privopt/bin/pip install -e .
#SBATCH --job-name=mpi_privopt
#SBATCH --ntasks=8
#SBATCH --time=01:00:00
#SBATCH --output=mpi_privopt-%j.out
set -euo pipefail
venv=${MPI_PRIVOPT_VENV:-$HOME/venvs/mpi_privopt}
# shellcheck disable=SC1091
source "$venv/bin/activate"
cd "${SLURM_SUBMIT_DIR:-.}"
# srun starts one task per agent; --mpi=pmix (or pmi2) depends on how the site built MPI.
srun ${SRUN_MPI:+--mpi=$SRUN_MPI} python -m mpi4py -m mpi_privopt run "$@"
