#!/usr/bin/env bash
# Run an experiment on this machine: 8 ranks of the default experiment unless told otherwise.
#   ./launch/local.sh                                  # default experiment, 8 ranks
#   RANKS=4 ./launch/local.sh dgd-ridge --set run.iterations=500
#   ./launch/local.sh reproduce gade2017 --quick      # = ./launch/reproduce.sh gade2017 --quick
# Everything after the script name is passed to `mpi_privopt run`.
set -euo pipefail
# a reproduction needs the reproduce extra and starts mpiexec itself
if [ "${1:-}" = reproduce ]; then shift; exec "$(dirname "$0")/reproduce.sh" "$@"; fi
EXTRAS=${EXTRAS:-mpich}
source "$(dirname "$0")/_env.sh"
source "$here/launch/_mpi.sh"
ranks=${RANKS:-8}
if ! [[ $ranks =~ ^[0-9]+$ ]] || (( 10#$ranks < 1 )); then  # mpiexec ran "abc" as 1 rank
  echo "mpi_privopt: error: RANKS=$ranks is not a number of ranks" >&2
  echo "how to fix: give one rank per agent as digits, e.g. RANKS=4 ./launch/local.sh" >&2
  exit 2
fi
cd "$here"
# More ranks than cores is allowed (Open MPI needs --oversubscribe for that); under Open
# MPI this script sends a Ctrl-C to the ranks itself (pass_on, below). Oversubscribing costs
# time: MPI polls inside a neighbour exchange, so a rank waiting there keeps a core busy;
# only the long waits (a token, the end of the run) sleep (docs/performance.md, "Waiting").
# A person at this terminal sees rank 0's progress line although rank 0's stderr is a pipe
# to mpiexec (mpi_privopt/watching.py); Open MPI's ranks get the variable through -x.
if [ -t 2 ]; then export MPI_PRIVOPT_TERMINAL=1; fi
# Open MPI's launcher waits its odls_base_sigkill_timeout twice once a rank has ended
# non-zero (below); the ranks get a stop signal from this script itself, so they need
# no 30 s from it: 3 s (a job of 2 ranks ended 59 s after a Ctrl-C with 30)
MPI_PRIVOPT_SIGKILL_TIMEOUT=${MPI_PRIVOPT_SIGKILL_TIMEOUT:-3} \
  set_mpiexec_flags "$(command -v mpiexec)" oversubscribe --export MPI_PRIVOPT_TERMINAL
# Ctrl-C at this terminal reaches this script alone: mpiexec runs in a process group of its
# own (job control, set -m) and the script passes the first Ctrl-C on to it. A second one
# within MPI_PRIVOPT_FORCE_AFTER seconds (default 10) is held back with one line, because
# MPICH's mpiexec takes a second SIGINT as "force abort" and kills every rank before it has
# written its checkpoint and summary (docs/reliability.md, "Ctrl-C twice"); a later one is
# passed on, and forces the stop. SIGTERM and SIGHUP are passed on as they come.
force_after=${MPI_PRIVOPT_FORCE_AFTER:-10}
if ! [[ $force_after =~ ^[0-9]+$ ]]; then  # whole seconds; "10s" or "2.5" would pass it on
  echo "mpi_privopt: error: MPI_PRIVOPT_FORCE_AFTER=$force_after is not a whole number of" \
       "seconds" >&2
  echo "how to fix: give seconds as digits, e.g. MPI_PRIVOPT_FORCE_AFTER=10" >&2
  exit 2
fi
# What /dev/shm holds before the job: a job that does not end cleanly leaves its MPI's
# shared-memory segments behind, memory held until the machine restarts; those that
# appeared during it are removed once it has ended (every name is listed here, so the
# segments of any MPI shm_segments.py knows count: mpi_privopt/shm_segments.py,
# docs/reliability.md)
shm_before=$(mktemp "${TMPDIR:-/tmp}/mpi_privopt-shm.XXXXXX")
ls -1 /dev/shm > "$shm_before" 2>/dev/null || true
job=
first_interrupt=
pass_on() {
  job=${job:-$!}  # (the launcher's pid, if it started just before this signal)
  if [ -z "$job" ]; then  # before the launcher started: nothing runs yet, stop here
    rm -f "$shm_before"
    case $1 in INT) exit 130 ;; TERM) exit 143 ;; *) exit 129 ;; esac
  fi
  if [ "$1" = INT ]; then
    if [ -n "$first_interrupt" ] && (( SECONDS - first_interrupt < force_after )); then
      echo "mpi_privopt: already stopping: every rank ends its iteration and writes its" \
           "checkpoint and summary (a Ctrl-C ${force_after} s after the first forces it)" >&2
      return 0
    fi
    first_interrupt=${first_interrupt:-$SECONDS}
  fi
  # to the launcher alone, which passes it on to every rank once (a signal to its whole
  # group would reach each rank twice: from here and from the launcher); under Open MPI
  # to the ranks themselves, the first time (below)
  local ranks=
  if [ "$launcher_family" = "Open MPI" ] && [ -z "$stopped_by" ]; then
    ranks=$(job_processes "$job" | tail -n +2)
  fi
  stopped_by=${stopped_by:-$1}
  # shellcheck disable=SC2086  # one pid per word
  kill -s "$1" ${ranks:-$job} 2>/dev/null
  return 0
}
# Open MPI's launcher does not pass SIGINT, SIGTERM or SIGHUP on: it sends the ranks
# SIGCONT, sleeps odls_base_sigkill_timeout seconds (30 on our launch lines), sends
# SIGTERM, sleeps as long again and sends SIGKILL, so a Ctrl-C took 58 s to end a run.
# The first stop signal therefore goes to the ranks (this machine's processes under the
# launcher), which stop at an agreed iteration and write their checkpoint (1.2 s); a
# later one goes to the launcher and forces the stop, as with MPICH.
launcher_family=$(python -m mpi_privopt.commands.launch_line family "$(command -v mpiexec)")
stopped_by=
exit_status() {  # the job's status, as a job ended by the signal passed on reports it
  # Open MPI's launcher, given the signal itself (a forced stop), ends the ranks and
  # ends 1; MPICH's ends 128 + the signal. After a signal, a 1 is that signal's status.
  if [ "$1" = 1 ] && [ -n "$stopped_by" ]; then
    case $stopped_by in INT) echo 130 ;; TERM) echo 143 ;; *) echo 129 ;; esac
  else
    echo "$1"
  fi
}
# Ctrl-Z pauses the whole job, not only this script: the launcher and every process it
# started (MPICH's proxy and ranks each run in a session of their own, so no signal to a
# process group reaches them) are stopped, then this script; when the shell continues it
# (fg, bg), so are they. The stall watchdog does not take a pause of the whole job for a
# stall: every rank resumes at once (docs/reliability.md).
job_processes() {  # the launcher and its descendants (Linux: their parents from /proc)
  local pid=$1 stat fields
  echo "$pid"
  for stat in /proc/[0-9]*/stat; do
    read -r fields < "$stat" 2>/dev/null || continue
    fields=${fields##*) }  # after the command's name: state, parent, ...
    fields=${fields#* }
    [ "${fields%% *}" = "$pid" ] || continue
    stat=${stat#/proc/}
    job_processes "${stat%/stat}"
  done
}
pause_job() {
  job=${job:-$!}
  local paused=
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then
    paused=$(job_processes "$job")
    # shellcheck disable=SC2086  # one pid per word
    kill -s STOP $paused 2>/dev/null
    echo "mpi_privopt: paused: every rank of the job is stopped (fg or bg resumes it)" >&2
  fi
  kill -s STOP $$
  # continued (fg, bg)
  # shellcheck disable=SC2086
  [ -z "$paused" ] || kill -s CONT $paused 2>/dev/null
  return 0
}
# The launcher ends with this script: SIGKILL cannot be trapped, so the kernel sends the
# launcher SIGTERM when the script dies (setpriv --pdeathsig, util-linux), and the run
# stops as it does on a SIGTERM to the script. Without setpriv the launcher outlives it.
with_parent=()
if setpriv --pdeathsig TERM true 2>/dev/null; then with_parent=(setpriv --pdeathsig TERM); fi
# the traps before the launcher starts: a Ctrl-C in between must not leave it running
# (the launcher itself starts with the default handlers, as every child does)
trap 'pass_on INT' INT
trap 'pass_on TERM' TERM
trap 'pass_on HUP' HUP
trap pause_job TSTP
set -m
${with_parent[@]+"${with_parent[@]}"} \
  mpiexec -n "$ranks" "${MPIEXEC_FLAGS[@]}" python -m mpi4py -m mpi_privopt run "$@" </dev/null &
job=$!
set +m +e
# wait returns early (status above 128) when a signal is trapped: wait again until the
# launcher has ended, then give its exit status
while :; do
  wait "$job"
  kill -0 "$job" 2>/dev/null || break
done
wait "$job"
status=$(exit_status $?)
[ $status = 0 ] || python -m mpi_privopt.shm_segments clean-after "$shm_before"
rm -f "$shm_before"
exit $status
