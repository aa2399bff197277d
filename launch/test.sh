#!/usr/bin/env bash
# Install the test extras and run the whole suite: unit tests in one process, then the MPI
# tests under mpiexec at several rank counts. `.ci/run` calls exactly this script.
set -euo pipefail
EXTRAS=${EXTRAS:-mpich,test}
source "$(dirname "$0")/_env.sh"
source "$here/launch/_mpi.sh"
cd "$here"
# Open MPI (a site's, tests/site_mpi/run_suite.sh): 8 ranks on a 2-core machine need
# --oversubscribe. The wheel's MPICH needs no flag.
set_mpiexec_flags "$(command -v mpiexec)" oversubscribe

# tests/cluster brings up a single-node Slurm (about a minute; it skips with the reason
# without root or apt-get); -m "not cluster" leaves it out.
echo "== unit, end-to-end and cluster tests (one process; they launch mpiexec themselves)"
python -m pytest -q -p no:cacheprovider tests/unit tests/e2e tests/cluster "$@"

logs=$(mktemp -d)
for ranks in ${MPI_TEST_RANKS:-2 3 5 8}; do
  echo "== MPI tests on $ranks ranks"
  # Rank 0 reports; the other ranks log to files shown only if the run fails.
  # A hung MPI test would otherwise wait forever: bound each rank count's run.
  if ! timeout "${MPI_TEST_TIMEOUT:-1500}" mpiexec -n "$ranks" "${MPIEXEC_FLAGS[@]}" bash -c '
      rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
      if [ "$rank" = 0 ]; then
        exec python -m pytest -q -p no:cacheprovider --with-mpi tests/mpi
      else
        exec python -m pytest -q -p no:cacheprovider --with-mpi tests/mpi > "'"$logs"'/rank-$rank.log" 2>&1
      fi'; then
    echo "MPI tests failed on $ranks ranks; other ranks' output:" >&2
    tail -n 40 "$logs"/rank-*.log >&2 || true
    exit 1
  fi
done
