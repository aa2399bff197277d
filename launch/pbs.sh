#!/usr/bin/env bash
# PBS batch script (PBS Pro / OpenPBS and Torque): one MPI rank per agent, using the
# site's MPI through mpi4py. The arguments are those of `mpi_privopt run`:
#   PBS Pro:  qsub -l select=1:ncpus=8:mpiprocs=8 -- launch/pbs.sh default --set run.iterations=500
#   Torque:   qsub -l nodes=1:ppn=8 -F "default --set run.iterations=500" launch/pbs.sh
#   either:   qsub -l ... -v ARGS="default --set 'run.name=two words'" launch/pbs.sh
# Arguments given on the command line are passed on as given; ARGS is split like a shell
# line (quotes respected, nothing expanded). PBS's -v separates variables at commas, so
# an ARGS with a comma needs the command-line form.
# The job gets the submitting shell's environment (-V) and every rank gets it too (Open
# MPI: -x for the variables a run needs; MPICH's hydra passes everything). One rank per
# line of $PBS_NODEFILE (PBS Pro writes one per mpiprocs, Torque one per ppn); a job with
# one line is refused (it would run one agent). Install once without the mpich extra
# (see launch/slurm.sh and docs/install.md).
#PBS -N mpi_privopt
#PBS -l walltime=01:00:00
#PBS -j oe
#PBS -V
set -euo pipefail
venv=${MPI_PRIVOPT_VENV:-$HOME/venvs/mpi_privopt}
if [ ! -r "$venv/bin/activate" ]; then
  echo "mpi_privopt: error: no virtual environment at $venv (MPI_PRIVOPT_VENV)" >&2
  echo "  fix: install once on the login node (the lines at the top of launch/pbs.sh), or set" \
       "MPI_PRIVOPT_VENV to the environment that has mpi_privopt" >&2
  exit 2
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"
cd "${PBS_O_WORKDIR:-.}"
if [ -z "${PBS_NODEFILE:-}" ] || [ ! -r "$PBS_NODEFILE" ]; then
  echo "mpi_privopt: error: no readable \$PBS_NODEFILE: launch/pbs.sh runs inside a PBS job" >&2
  echo "  fix: submit it with qsub (or run launch/local.sh on this machine)" >&2
  exit 2
fi
ranks=$(grep -c . "$PBS_NODEFILE" || true)
if [ "$ranks" -lt 2 ]; then
  echo "mpi_privopt: error: this PBS job has $ranks MPI slot, so the run would have one agent" >&2
  echo "  fix: request one slot per agent: qsub -l select=1:ncpus=8:mpiprocs=8 (PBS Pro)" \
       "or qsub -l nodes=1:ppn=8 (Torque)" >&2
  exit 2
fi
if [ $# -eq 0 ] && [ -n "${ARGS:-}" ]; then
  # Split ARGS as a shell would, without running it (no expansion, no substitution).
  mapfile -d '' -t argv < <(python -c 'import os, shlex, sys
sys.stdout.write("".join(a + "\0" for a in shlex.split(os.environ["ARGS"])))')
  set -- "${argv[@]}"
fi
mpiexec=$(command -v mpiexec)
mapfile -t flags < <(python -m mpi_privopt.commands.launch_line mpiexec-flags "$mpiexec" \
  --export PATH --export LD_LIBRARY_PATH --export VIRTUAL_ENV --export PYTHONPATH \
  --export MPI_PRIVOPT_VENV)
echo "mpi_privopt: $ranks ranks from $PBS_NODEFILE, $mpiexec, MPI library" \
     "$(python -m mpi4py --mpi-library 2>/dev/null || echo unknown)"
"$mpiexec" -n "$ranks" -hostfile "$PBS_NODEFILE" "${flags[@]}" \
  python -m mpi4py -m mpi_privopt run "$@"
