#!/usr/bin/env bash
# Install the test extras and run the whole suite: unit tests in one process, then the MPI
# tests under mpiexec at several rank counts. `.ci/run` calls exactly this script.
# Every stage runs even when an earlier one fails (one red test must not hide the others);
# a summary of the stages comes last and the exit status is non-zero if any failed.
set -uo pipefail
EXTRAS=${EXTRAS:-mpich,test}
source "$(dirname "$0")/_env.sh" || exit 2
source "$here/launch/_mpi.sh" || exit 2
cd "$here"
# Open MPI (a site's, tests/site_mpi/run_suite.sh): 8 ranks on a 2-core machine need
# --oversubscribe. The wheel's MPICH needs no flag.
set_mpiexec_flags "$(command -v mpiexec)" oversubscribe

summary=()
failed=0
record() {  # record STAGE STATUS SECONDS
  local verdict=passed
  [ "$2" = 0 ] || { verdict="FAILED (exit $2)"; failed=1; }
  summary+=("$(printf '%-58s %-16s %5d s' "$1" "$verdict" "$3")")
}

# tests/cluster brings up a single-node Slurm (about a minute; it skips with the reason
# without root or apt-get); -m "not cluster" leaves it out.
stage="unit, end-to-end and cluster tests (one process)"
echo "== $stage; they launch mpiexec themselves"
start=$SECONDS
# -rfE lists the failed tests by name at the end of the stage's output
python -m pytest -q -rfE -p no:cacheprovider tests/unit tests/e2e tests/cluster "$@"
record "$stage" $? $((SECONDS - start))

logs=$(mktemp -d)
for ranks in ${MPI_TEST_RANKS:-2 3 5 8}; do
  stage="MPI tests on $ranks ranks"
  echo "== $stage"
  start=$SECONDS
  # Rank 0 reports; the other ranks log to files shown only if the run fails.
  # A hung MPI test would otherwise wait forever: bound each rank count's run.
  timeout "${MPI_TEST_TIMEOUT:-900}" mpiexec -n "$ranks" "${MPIEXEC_FLAGS[@]}" bash -c '
      rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
      if [ "$rank" = 0 ]; then
        exec python -m pytest -q -rfE -p no:cacheprovider --with-mpi tests/mpi
      else
        exec python -m pytest -q -p no:cacheprovider --with-mpi tests/mpi > "'"$logs"'/rank-$ranks-$rank.log" 2>&1
      fi'
  status=$?
  if [ "$status" != 0 ]; then
    [ "$status" = 124 ] && echo "MPI tests on $ranks ranks did not end within ${MPI_TEST_TIMEOUT:-900} s" >&2
    echo "MPI tests failed on $ranks ranks; other ranks' output:" >&2
    tail -n 40 "$logs"/rank-"$ranks"-*.log >&2 || true
  fi
  record "$stage" "$status" $((SECONDS - start))
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
if [ "$failed" != 0 ]; then
  echo "some stages failed: their failed tests are listed at the end of each stage's output" >&2
  exit 1
fi
echo "every stage passed"
