#!/usr/bin/env bash
# A real single-node Slurm, then the default experiment on 4 tasks through launch/slurm.sh.
#   tests/cluster/slurm_single_node.sh [RUN_ARGS...]     (root; Debian/Ubuntu packages)
# 1. installs munge, slurmctld, slurmd and slurm-client with apt-get when missing;
# 2. starts munged (as the munge user), slurmctld and slurmd as root without systemd,
#    from a slurm.conf written here with this machine's name and CPU count (its own
#    ports, state and logs under $SLURM_TEST_DIR: /etc/slurm is left alone);
# 3. submits `sbatch --ntasks=4 --overcommit --wait launch/slurm.sh default ...` (4 tasks
#    on a 2-CPU machine stay pending without --overcommit) with the virtual environment
#    $MPI_PRIVOPT_VENV (default: the python3 on PATH's environment);
# 4. checks the summary: 4 ranks, one host record per rank; prints the job's output;
# 5. submits the same with SRUN_MPI=none (srun without the PMI plugin: 4 one-rank
#    copies) and checks that it is refused with one message and writes nothing;
# 6. stops the daemons it started (never others).
# Exit: 0 passed, 1 failed, 77 skipped (the reason on the last line: "SKIPPED: ...").
# Environment: SLURM_TEST_DIR (default /tmp/mpi_privopt-slurm), SLURM_TEST_TIMEOUT
# (seconds for the job, default 600), SLURM_TEST_PORT (slurmctld's, default 16817; slurmd
# uses the next one).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${SLURM_TEST_DIR:-/tmp/mpi_privopt-slurm}
port=${SLURM_TEST_PORT:-16817}
venv=${MPI_PRIVOPT_VENV:-$(python3 -c 'import sys; print(sys.prefix)')}
started=()                               # pid files of the daemons this script started

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*"; show_logs; exit 1; }
show_logs() {
  for log in "$work"/slurmctld.log "$work"/slurmd.log; do
    [ -f "$log" ] && { echo "--- last lines of $log"; tail -n 15 "$log"; }
  done
}
stop_daemons() {
  local pidfile pid
  for pidfile in "${started[@]}"; do
    pid=$(cat "$pidfile" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null && echo "stopped $(basename "$pidfile" .pid) (pid $pid)"
  done
}
trap stop_daemons EXIT

[ "$(id -u)" = 0 ] || skip "needs root to run slurmd and slurmctld (and to install them)"
[ -x "$venv/bin/python" ] || skip "no virtual environment at $venv (set MPI_PRIVOPT_VENV)"
"$venv/bin/python" -c 'import mpi_privopt, mpi4py' 2>/dev/null ||
  skip "mpi_privopt or mpi4py is not installed in $venv"

# -- 1. packages ---------------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
   ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "Slurm is not installed and there is no apt-get"
  echo "installing munge slurmctld slurmd slurm-client with apt-get"
  tick=$SECONDS
  # No daemon may start from a package's install script: there is no init system.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      munge slurmctld slurmd slurm-client; } > "/tmp/mpi_privopt-slurm-apt.log" 2>&1
  status=$?
  [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ $status = 0 ] || skip "apt-get install of Slurm failed (see /tmp/mpi_privopt-slurm-apt.log)"
  echo "installed in $((SECONDS - tick)) s"
fi
echo "$(slurmctld -V) with $(munged --version 2>&1 | head -n1)"

# -- 2. daemons ----------------------------------------------------------------------------
rm -rf "$work" && mkdir -p "$work/state" "$work/spool"
host=$(hostname -s)
cpus=$(nproc)
cat > "$work/slurm.conf" <<EOF
# single-node test cluster of tests/cluster/slurm_single_node.sh
ClusterName=mpiprivopt
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf

if ! munge -n </dev/null >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || { mungekey --create >/dev/null 2>&1 ||
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key 2>/dev/null; chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- munged --pid-file=/run/munge/mpi_privopt-test.pid ||
    skip "munged did not start"
  started+=(/run/munge/mpi_privopt-test.pid)
  for _ in $(seq 20); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.5; done
  munge -n </dev/null >/dev/null 2>&1 || skip "munged does not answer"
fi
slurmctld -i || skip "slurmctld did not start"
started+=("$work/slurmctld.pid")
slurmd || skip "slurmd did not start (see $work/slurmd.log)"
started+=("$work/slurmd.pid")
state=""
for _ in $(seq 60); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || { show_logs; skip "the node did not come up (state '${state:-none}')"; }
echo "node $host up: $cpus CPUs, $(srun --mpi=list 2>&1 | tr -s ' \t\n' ' ')"

# -- 3. the job ----------------------------------------------------------------------------
out=$work/run
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(default --set run.iterations=50)
tick=$SECONDS
job=$(cd "$work" && timeout "${SLURM_TEST_TIMEOUT:-600}" env MPI_PRIVOPT_VENV="$venv" \
      sbatch --parsable --wait --ntasks=4 --overcommit --time=00:10:00 \
             --output="$work/job-%j.out" "$here/launch/slurm.sh" "${args[@]}" --out "$out")
status=$?
echo "sbatch --ntasks=4 --overcommit launch/slurm.sh ${args[*]}: job ${job:-?}," \
     "exit $status, $((SECONDS - tick)) s"
echo "--- job output"
cat "$work"/job-*.out 2>/dev/null
[ $status = 0 ] || fail "the job failed (exit $status)"

# -- 4. the check --------------------------------------------------------------------------
"$venv/bin/python" - "$out/summary.json" <<'EOF' || fail "the summary does not show 4 ranks"
import json, sys
summary = json.load(open(sys.argv[1]))
hosts = summary.get("hosts") or []
print(f"summary.json: ranks {summary['ranks']}, hosts {hosts}, "
      f"collective path {summary.get('collective_path')!r}")
assert summary["ranks"] == 4, "expected 4 ranks"
assert len(hosts) == 4 and all(hosts), "expected one host per rank"
EOF

# -- 5. the same without the PMI plugin: 4 one-rank copies, refused before anything runs ---
lone=$work/lone
status=0
(cd "$work" && timeout "${SLURM_TEST_TIMEOUT:-600}" env MPI_PRIVOPT_VENV="$venv" SRUN_MPI=none \
   sbatch --parsable --wait --ntasks=4 --overcommit --time=00:10:00 \
          --output="$work/lone-%j.out" "$here/launch/slurm.sh" "${args[@]}" --out "$lone" \
          >/dev/null) || status=$?
echo "SRUN_MPI=none (srun --mpi=none): exit $status; the job says:"
grep -h "error\|fix" "$work"/lone-*.out | sort | uniq -c | sed 's/^ *1 //'
[ $status != 0 ] || fail "4 one-rank copies ran instead of being refused"
[ ! -e "$lone/summary.json" ] || fail "a one-rank copy wrote a summary"
# MPICH starts 4 one-rank worlds, which mpi_privopt refuses with one message; Open MPI
# under Slurm refuses to start without PMI (MPI_Init fails in every task).
ours=$(grep -hc "mpi_privopt: error" "$work"/lone-*.out)
if [ "$ours" = 1 ]; then
  echo "refused by mpi_privopt: one message for the 4 one-rank copies"
elif [ "$ours" = 0 ] && grep -q "MPI_Init" "$work"/lone-*.out; then
  echo "refused by the MPI library itself (MPI_Init failed without PMI): nothing ran"
else
  fail "expected one message from the copies, or MPI_Init refusing"
fi
echo "PASSED: 4 distinct ranks under Slurm; srun without the PMI plugin refused"
