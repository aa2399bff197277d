#!/usr/bin/env bash
# The whole test suite under the distribution's own MPI (not the `mpich` wheel CI uses):
#   tests/site_mpi/run_suite.sh                # Open MPI, then MPICH
#   tests/site_mpi/run_suite.sh openmpi        # one of them
#   tests/site_mpi/run_suite.sh mpich -m "not slow"   # arguments after the family go to pytest
# For each family it installs the distribution's packages when they are missing and this
# is a Debian/Ubuntu machine where we are root (apt-get), builds a virtual environment
# whose mpi4py is compiled against that library (pip install --no-binary=mpi4py with the
# family's mpicc), puts that family's launcher first on PATH as `mpiexec` (Open MPI and
# MPICH both ship one: the explicit mpiexec.openmpi / mpiexec.mpich is used), and runs
# launch/test.sh with EXTRAS=test (no mpich extra). A family that cannot be installed is
# skipped with the reason. It leaves the CI default (.venv, the wheel's mpiexec) alone.
#
# Environment:
#   SITE_MPI_DIR      where the venvs and logs go (default: /tmp/mpi_privopt-site-mpi)
#   SITE_MPI_INSTALL  0: never apt-get install (skip instead); default 1
#   SITE_MPI_MPI4PY   source (default): build mpi4py against the library;
#                     wheel: mpi4py's binary wheel, told which libmpi to load (MPI4PY_LIBMPI)
#   MPI_TEST_RANKS, MPI_TEST_TIMEOUT: passed on to launch/test.sh
# Output: one log per family, $SITE_MPI_DIR/<family>.log, and a closing line per family:
#   site-mpi openmpi: PASSED (...)   |   FAILED (exit N)   |   SKIPPED (reason)
# Exit status: 0 when every family that ran passed (skips count as success), 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=${SITE_MPI_DIR:-/tmp/mpi_privopt-site-mpi}
mkdir -p "$dir"

families=()
while [ $# -gt 0 ] && [[ "$1" =~ ^(openmpi|mpich)$ ]]; do families+=("$1"); shift; done
[ ${#families[@]} -gt 0 ] || families=(openmpi mpich)

packages_for() {
  case "$1" in
    openmpi) echo "openmpi-bin libopenmpi-dev" ;;
    mpich) echo "mpich libmpich-dev" ;;
  esac
}

# Installs the family's packages if needed; prints the reason and fails if it cannot.
ensure_packages() {
  local family=$1
  if command -v "mpiexec.$family" >/dev/null && command -v "mpicc.$family" >/dev/null; then
    return 0
  fi
  if [ "${SITE_MPI_INSTALL:-1}" = 0 ]; then
    echo "mpiexec.$family or mpicc.$family missing and SITE_MPI_INSTALL=0"; return 1
  fi
  if ! command -v apt-get >/dev/null; then
    echo "mpiexec.$family missing and no apt-get to install $(packages_for "$family")"; return 1
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "mpiexec.$family missing; installing $(packages_for "$family") needs root"; return 1
  fi
  # shellcheck disable=SC2046
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq $(packages_for "$family"); } >"$dir/apt-$family.log" 2>&1; then
    echo "apt-get install $(packages_for "$family") failed (see $dir/apt-$family.log)"; return 1
  fi
  command -v "mpiexec.$family" >/dev/null || { echo "no mpiexec.$family after install"; return 1; }
}

# The family's venv with mpi4py built against (or loading) its library.
make_venv() {
  local family=$1 venv=$2
  local python=${PYTHON:-python3}
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv" || return 1
  "$venv/bin/python" -m pip install --quiet --upgrade pip || return 1
  if [ "${SITE_MPI_MPI4PY:-source}" = wheel ]; then
    "$venv/bin/python" -m pip install --quiet "mpi4py>=4.1" || return 1
  elif ! "$venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
    echo "building mpi4py against $("mpicc.$family" -show 2>/dev/null | cut -c1-60)..."
    MPICC="mpicc.$family" "$venv/bin/python" -m pip install --quiet --no-cache-dir \
      --no-binary=mpi4py "mpi4py>=4" || return 1
  fi
}

run_family() {
  local family=$1; shift
  local venv="$dir/venv-$family" bin="$dir/bin-$family" reason
  echo "== site MPI: $family ($(date -u +%FT%TZ))"
  if ! reason=$(ensure_packages "$family"); then
    echo "site-mpi $family: SKIPPED ($reason)"; return 0
  fi
  "mpiexec.$family" --version 2>&1 | grep -m1 -iE "version|open mpi|openrte" || true
  if ! make_venv "$family" "$venv"; then
    echo "site-mpi $family: FAILED (could not build the venv $venv)"; return 1
  fi
  # `mpiexec` on PATH is this family's launcher, whatever /usr/bin/mpiexec points to: a
  # wrapper, not a link (hydra looks for its proxy beside the path it was started as).
  mkdir -p "$bin"
  rm -f "$bin/mpiexec"                   # never write through an older link
  printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v "mpiexec.$family")" > "$bin/mpiexec"
  chmod +x "$bin/mpiexec"
  local -a env=(PATH="$bin:$PATH" MPI_PRIVOPT_VENV="$venv" EXTRAS=test)
  if [ "${SITE_MPI_MPI4PY:-source}" = wheel ]; then
    env+=(MPI4PY_LIBMPI="$([ "$family" = openmpi ] && echo libmpi.so.40 || echo libmpi.so.12)")
  fi
  if [ "$family" = openmpi ] && [ "$(id -u)" = 0 ]; then
    # Open MPI refuses to start as root unless told; CI runs as root.
    env+=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
  fi
  env "${env[@]}" "$venv/bin/python" -m mpi4py --mpi-library | sed 's/^/mpi4py loads: /'
  env "${env[@]}" "$venv/bin/python" -c 'from mpi4py import MPI
print("mpi4py vendor:", *MPI.get_vendor(), "| MPI standard", *MPI.Get_version())'
  local start=$SECONDS status
  env "${env[@]}" bash "$here/launch/test.sh" "$@"
  status=$?
  local took="$(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
  if [ $status = 0 ]; then
    echo "site-mpi $family: PASSED (launch/test.sh in $took)"
  else
    echo "site-mpi $family: FAILED (launch/test.sh exit $status after $took)"
  fi
  return $status
}

overall=0
for family in "${families[@]}"; do
  run_family "$family" "$@" 2>&1 | tee "$dir/$family.log"
  [ "${PIPESTATUS[0]}" = 0 ] || overall=1
done
for family in "${families[@]}"; do echo "== log: $dir/$family.log"; done
exit $overall
