# Sourced by the launch scripts: make (once) and activate a virtual environment with
# mpi_privopt and the extras named in $EXTRAS installed. The MPI comes from PyPI (the
# `mpich` wheel) unless EXTRAS leaves it out to use the site's MPI.
#   MPI_PRIVOPT_VENV  where the environment lives (default: .venv in the repository)
#   PYTHON            the interpreter to build it from (default: python3, needs 3.11+)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${MPI_PRIVOPT_VENV:-$here/.venv}
python=${PYTHON:-python3}
extras=${EXTRAS:-mpich}

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "mpi_privopt needs Python 3.11 or newer; '$python' is $("$python" --version 2>&1)." >&2
  echo "Set PYTHON=/path/to/python3.11 and try again." >&2
  exit 2
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "creating virtual environment $venv"
  "$python" -m venv "$venv"
fi
# Reinstall only when the project's requirements or the extras change.
stamp="$venv/.mpi_privopt-$(cat "$here/pyproject.toml" | sha256sum | cut -c1-16)-${extras//,/_}"
if [ ! -f "$stamp" ]; then
  echo "installing mpi_privopt[$extras] into $venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e "$here[$extras]"
  rm -f "$venv"/.mpi_privopt-*
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
