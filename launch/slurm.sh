#!/usr/bin/env bash
# Slurm batch script: one MPI rank per agent, using the site's MPI through mpi4py.
#   sbatch --ntasks=50 launch/slurm.sh gauthier2024-elastic-net
#   sbatch --ntasks=8 --time=00:10:00 launch/slurm.sh default --set run.iterations=500
#   sbatch --ntasks=4 --overcommit launch/slurm.sh      # more tasks than CPUs (a test)
# Install once on the login node, without the mpich extra so mpi4py uses the site's MPI
# (load its module first; docs/install.md):
#   module load openmpi            # or mpich / intel-mpi: whatever the site provides
#   python3 -m venv ~/venvs/mpi_privopt && ~/venvs/mpi_privopt/bin/pip install -e .
# The arguments are those of `mpi_privopt run`, passed on as given (quoting kept).
# srun's PMI plugin follows the MPI mpi4py loads: --mpi=pmi2 for MPICH (and Intel MPI),
# --mpi=pmix for Open MPI; SRUN_MPI=NAME overrides it (SRUN_MPI= leaves srun's default).
#SBATCH --job-name=mpi_privopt
#SBATCH --ntasks=8
#SBATCH --time=01:00:00
#SBATCH --output=mpi_privopt-%j.out
set -euo pipefail
venv=${MPI_PRIVOPT_VENV:-$HOME/venvs/mpi_privopt}
if [ ! -r "$venv/bin/activate" ]; then
  echo "mpi_privopt: error: no virtual environment at $venv (MPI_PRIVOPT_VENV)" >&2
  echo "  fix: install once on the login node (the lines at the top of launch/slurm.sh), or set" \
       "MPI_PRIVOPT_VENV to the environment that has mpi_privopt" >&2
  exit 2
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"
cd "${SLURM_SUBMIT_DIR:-.}"
tasks=${SLURM_NTASKS:-1}
if [ "$tasks" -lt 2 ]; then
  echo "mpi_privopt: error: this Slurm job has $tasks task, so the run would have one agent" >&2
  echo "  fix: submit one task per agent, e.g. sbatch --ntasks=8 launch/slurm.sh ..." >&2
  exit 2
fi
plugin=${SRUN_MPI-$(python -m mpi_privopt.commands.launch_line srun-mpi)}
if [ -n "$plugin" ] && ! srun --mpi=list 2>&1 | grep -qw "$plugin"; then
  echo "mpi_privopt: warning: srun --mpi=list does not offer '$plugin' (the plugin for" \
       "the MPI mpi4py loads); trying it anyway (set SRUN_MPI to choose)" >&2
fi
echo "mpi_privopt: $tasks tasks, srun ${plugin:+--mpi=$plugin}, MPI library" \
     "$(python -m mpi4py --mpi-library 2>/dev/null || echo unknown)"
srun ${plugin:+--mpi="$plugin"} python -m mpi4py -m mpi_privopt run "$@"
