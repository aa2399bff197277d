# Sourced by launch/local.sh and launch/test.sh once the virtual environment is active.
#   set_mpiexec_flags MPIEXEC [oversubscribe] [--export NAME]...   fills the array
#       MPIEXEC_FLAGS with what that launcher needs (mpi_privopt/commands/launch_line.py):
#       for Open MPI, --mca odls_base_sigkill_timeout $MPI_PRIVOPT_SIGKILL_TIMEOUT
#       (default 30 s; Open MPI's own 1 s kills the ranks before they can stop cleanly),
#       --oversubscribe when asked and -x NAME for each exported variable that is set;
#       for MPICH's hydra (4.2+) -memory-alloc-kinds mpi,system, without which more than
#       about 350 ranks on one host never leave MPI_Init (hydra oversubscribes and passes
#       the whole environment by itself).
# (launch/slurm.sh and launch/pbs.sh call the same module directly: a scheduler runs a
# copy of the batch script, away from this file.)

set_mpiexec_flags() {
  MPIEXEC_FLAGS=()
  [ -n "$1" ] || return 0
  local mpiexec=$1 oversubscribe=${2:-}
  shift $(( $# < 2 ? $# : 2 ))
  mapfile -t MPIEXEC_FLAGS < <(python -m mpi_privopt.commands.launch_line mpiexec-flags \
                                 "$mpiexec" ${oversubscribe:+--oversubscribe} "$@")
}
