# Sourced by the launch scripts: make (once) and activate a virtual environment with
# mpi_privopt and the extras named in $EXTRAS installed. The MPI comes from PyPI (the
# `mpich` wheel) unless EXTRAS leaves it out to use the site's MPI.
#   MPI_PRIVOPT_VENV  where the environment lives (default: .venv in the repository)
#   PYTHON            the interpreter to build it from (default: python3, needs 3.11+)
# One environment serves every script: it holds the union of the extras they asked for.
# $venv/.mpi_privopt-extras records them (first line: the hash of pyproject.toml they were
# installed from; then one extra a line). Only a missing extra triggers pip, nothing is
# ever uninstalled, and a changed pyproject.toml reinstalls the whole recorded union.
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

env_record="$venv/.mpi_privopt-extras"
env_hash=$(sha256sum < "$here/pyproject.toml" | cut -c1-16)
env_current=no      # the record is of this pyproject.toml
env_have=()         # extras recorded (of this or an older pyproject.toml)
if [ -f "$env_record" ]; then
  [ "$(head -n 1 "$env_record")" = "$env_hash" ] && env_current=yes
  mapfile -t env_have < <(tail -n +2 "$env_record")
fi
# The stamps of older versions of this script (.mpi_privopt-HASH-EXTRA_EXTRA) say the same.
for env_stamp in "$venv"/.mpi_privopt-*-*; do
  [ -f "$env_stamp" ] || continue
  env_name=${env_stamp##*/.mpi_privopt-}
  [ "${env_name%%-*}" = "$env_hash" ] && env_current=yes
  IFS=_ read -ra env_old <<< "${env_name#*-}"
  env_have+=("${env_old[@]}")
done

# The union, recorded extras first; an extra not recorded yet is missing.
env_union=()
env_missing=()
IFS=, read -ra env_wanted <<< "$extras"
for env_extra in "${env_have[@]}" "${env_wanted[@]}"; do
  env_extra=${env_extra// /}
  [ -n "$env_extra" ] || continue
  case " ${env_union[*]} " in *" $env_extra "*) continue ;; esac
  env_union+=("$env_extra")
  case " ${env_have[*]} " in *" $env_extra "*) ;; *) env_missing+=("$env_extra") ;; esac
done

if [ "$env_current" != yes ] || [ "${#env_missing[@]}" -gt 0 ]; then
  env_list=$(IFS=,; echo "${env_union[*]}")
  if [ "$env_current" != yes ]; then
    echo "installing mpi_privopt[$env_list] into $venv"
  else
    echo "installing mpi_privopt[$env_list] into $venv (new: $(IFS=,; echo "${env_missing[*]}"))"
  fi
  if ! "$venv/bin/python" -m pip install --quiet --upgrade pip \
      || ! "$venv/bin/python" -m pip install --quiet -e "$here${env_list:+[$env_list]}"; then
    echo "mpi_privopt: error: installing mpi_privopt[$env_list] into $venv failed (pip's" \
         "output above); nothing was recorded, the next run tries again" >&2
    exit 2
  fi
  rm -f "$venv"/.mpi_privopt-*-*
  printf '%s\n' "$env_hash" "${env_union[@]}" > "$env_record"
fi
export PATH="$venv/bin:$PATH"
# The package's bytecode, written here (when nothing changed, a look at each file's time:
# about 0.05 s). Where PYTHONDONTWRITEBYTECODE is set Python never writes it itself, and
# every rank of every job compiled the package from source again: 0.12 s of CPU a rank,
# about 3 s of a 50-rank job on 2 cores (docs/performance.md, "Bytecode").
"$venv/bin/python" -m compileall -q "$here/mpi_privopt" >/dev/null 2>&1 || true
