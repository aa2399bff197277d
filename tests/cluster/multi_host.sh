#!/usr/bin/env bash
# Three hosts on this machine, then the default experiment across them over TCP.
#   tests/cluster/multi_host.sh [RUN_ARGS...]          (root; Debian/Ubuntu packages)
# 1. installs openssh-server with apt-get when sshd is missing (no daemon is started by it);
# 2. makes four network namespaces: a switch (one bridge) and three hosts, each joined to
#    the bridge by a veth pair, with addresses $MULTIHOST_NET.11-.13/24. The machine's own
#    namespace gets no device, address or route: only the namespaces are added;
# 3. starts one sshd per host namespace, each in its own UTS namespace with its own hostname
#    (host1, host2, host3: MPI_Get_processor_name tells the hosts apart), keys under $work;
# 4. writes a hostfile with 2 slots per host and runs, from host1,
#       mpiexec -f HOSTFILE -n 6 -launcher ssh -launcher-exec SSH_WRAPPER
#               -localhost <host1's address> python -m mpi4py -m mpi_privopt run RUN_ARGS
#    with the transport forced to TCP (MPICH on UCX: UCX_TLS=tcp,self, UCX_NET_DEVICES=eth0;
#    with an Open MPI launcher: --mca btl tcp,self, --mca plm_rsh_agent SSH_WRAPPER and
#    the hostfile syntax "host slots=N" instead);
# 5. checks summary.json (6 ranks on 3 distinct hosts, 2 each), traffic.json (the links that
#    cross hosts are marked, and carry bytes), that the hosts' veth interfaces received at
#    least those links' payload (a sanity figure: ssh and the launcher's control traffic
#    alone may reach it), and that host2 and host3 had a TCP connection during the run
#    (the proof: ssh and the launcher's control connections all involve host1, so such a
#    connection is MPI's; without the forced transport MPICH/UCX uses shared memory between
#    the namespaces and this check fails, see MULTIHOST_FORCE_TCP=0);
# 6. runs the same experiment on one host (this machine, the same mpiexec) and checks that
#    the final models are bitwise the same: placement does not change the result;
# 7. stops the sshd processes it started and deletes the namespaces (trap, on any exit).
# Exit: 0 passed, 1 failed, 77 skipped (the reason on the last line: "SKIPPED: ...").
# Environment: MPI_PRIVOPT_VENV (default: the python3 on PATH's environment),
# MULTIHOST_TEST_DIR (default /tmp/mpi_privopt-hosts), MULTIHOST_NET (the hosts' /24,
# default 10.231.77: it exists only inside the namespaces), MULTIHOST_TIMEOUT (seconds for
# the run, default 600), MULTIHOST_MPIEXEC (the launcher, default the mpiexec on PATH after
# the venv's bin: the `mpich` wheel's; e.g. /usr/bin/mpiexec.openmpi for the system's Open
# MPI, with MPI4PY_LIBMPI=MULTIHOST_LIBMPI, default libmpi.so.40, when mpi4py loads another
# library), MULTIHOST_FORCE_TCP=0 (MPICH: do not force TCP; a control showing that the TCP
# check fails when the transport is left to MPICH), MULTIHOST_SHAPE (a tc qdisc, e.g.
# "netem delay 5ms" or "tbf rate 100mbit burst 32kbit latency 50ms": host3's link to the
# switch is shaped with it in both directions before the run, and the time per link is
# printed; exit 77 when the kernel lacks that qdisc; docs/performance.md "Time per link"),
# MULTIHOST_DELAY (a one-way delay, e.g. 5ms, 0.1ms or 200us, without sch_netem: host3's
# cable is cut at the switch and tests/cluster/delay_line.py, a user-space relay in the
# switch's namespace, passes every frame on that late in both directions; it can be
# combined with a MULTIHOST_SHAPE such as "tbf rate 100mbit burst 32kbit latency 50ms";
# the delay actually added, the relay's own latency included, is measured by ICMP echo
# from host1 to host3 with and without it and printed: "measured one-way delay added").
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${MULTIHOST_TEST_DIR:-/tmp/mpi_privopt-hosts}
net=${MULTIHOST_NET:-10.231.77}
venv=${MPI_PRIVOPT_VENV:-$(python3 -c 'import sys; print(sys.prefix)')}
timeout_s=${MULTIHOST_TIMEOUT:-600}
tag="mpo$$"                              # namespace names unique to this run
hosts=(1 2 3)
slots=2
sshd_pids=()
made_namespaces=()
made_run_sshd=0
relay_pid=""

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*"; show_logs; exit 1; }
show_logs() {
  local h
  for h in "${hosts[@]}"; do
    [ -s "$work/sshd$h.log" ] && { echo "--- $work/sshd$h.log"; tail -n 5 "$work/sshd$h.log"; }
  done
}
stop_relay() {  # the delay line's own count of frames, drops and lateness
  [ -n "$relay_pid" ] || return 0
  kill "$relay_pid" 2>/dev/null && wait "$relay_pid" 2>/dev/null
  relay_pid=""
  grep "^delay line stopped" "$work/relay.log" ||
    { echo "the delay line ended early:"; tail -n 5 "$work/relay.log"; }
}
cleanup() {
  local pid ns
  stop_relay
  for pid in "${sshd_pids[@]}"; do
    kill "$pid" 2>/dev/null && echo "stopped sshd (pid $pid)"
  done
  for ns in "${made_namespaces[@]}"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
    ip netns del "$ns" 2>/dev/null && echo "deleted namespace $ns"
  done
  [ $made_run_sshd = 1 ] && rmdir /run/sshd 2>/dev/null
  return 0
}
trap cleanup EXIT

if [ -n "${MULTIHOST_DELAY:-}" ]; then  # a mistake of the caller's: said before any skip
  [[ $MULTIHOST_DELAY =~ ^([0-9]+(\.[0-9]+)?)(ms|us)?$ ]] || {  # nothing started: no logs
    echo "FAILED: MULTIHOST_DELAY='$MULTIHOST_DELAY': give a one-way delay such as 5ms, 0.1ms or 200us"
    exit 1; }
  delay_ms=${BASH_REMATCH[1]}
  [ "${BASH_REMATCH[3]}" = us ] && delay_ms=$(awk -v u="$delay_ms" 'BEGIN {print u / 1000}')
fi
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces and sshd"
command -v ip >/dev/null && command -v unshare >/dev/null ||
  skip "needs iproute2 (ip) and util-linux (unshare)"
[ -x "$venv/bin/python" ] || skip "no virtual environment at $venv (set MPI_PRIVOPT_VENV)"
"$venv/bin/python" -c 'import mpi_privopt, mpi4py' 2>/dev/null ||
  skip "mpi_privopt or mpi4py is not installed in $venv"
export PATH="$venv/bin:$PATH"
mpiexec=${MULTIHOST_MPIEXEC:-$(command -v mpiexec)}
[ -n "$mpiexec" ] && [ -x "$mpiexec" ] || skip "no mpiexec on PATH or in $venv/bin"
probe="${tag}probe"
ip netns add "$probe" 2>/dev/null || skip "cannot create a network namespace (no CAP_SYS_ADMIN?)"
ip netns del "$probe"

# -- 1. packages ---------------------------------------------------------------------------
if ! [ -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
  command -v apt-get >/dev/null || skip "sshd is not installed and there is no apt-get"
  echo "installing openssh-server with apt-get"
  tick=$SECONDS
  made_policy=0                          # no daemon may start from the package's scripts
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      openssh-server openssh-client; } > /tmp/mpi_privopt-hosts-apt.log 2>&1
  status=$?
  [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ $status = 0 ] || skip "apt-get install of openssh-server failed (see /tmp/mpi_privopt-hosts-apt.log)"
  echo "installed in $((SECONDS - tick)) s"
fi
echo "$(/usr/sbin/sshd -V 2>&1 | head -n1 || true)"

# -- 2. namespaces: a switch and three hosts -----------------------------------------------
rm -rf "$work" && mkdir -p "$work"
sw="${tag}sw"
ip netns add "$sw" && made_namespaces+=("$sw") || fail "ip netns add $sw"
ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up ||
  fail "cannot make the bridge in $sw"
for h in "${hosts[@]}"; do
  ns="${tag}h$h"
  ip netns add "$ns" && made_namespaces+=("$ns") || fail "ip netns add $ns"
  # the veth pair is born inside the namespaces: nothing appears in the machine's own
  ip -n "$ns" link add eth0 type veth peer name "port$h" netns "$sw" &&
    ip -n "$sw" link set "port$h" master br0 up &&
    ip -n "$ns" addr add "$net.1$h/24" dev eth0 &&
    ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up ||
    fail "cannot wire host$h to the bridge"
done
echo "namespaces: ${made_namespaces[*]} (bridge br0 in $sw; hosts $net.11-$net.13)"

# -- 3. one sshd per host, each with its own hostname ---------------------------------------
ssh-keygen -q -t ed25519 -N '' -f "$work/id_ed25519" && ssh-keygen -q -t ed25519 -N '' \
  -f "$work/host_ed25519" || fail "ssh-keygen"
cp "$work/id_ed25519.pub" "$work/authorized_keys" && chmod 600 "$work/authorized_keys"
cat > "$work/sshd_config" <<EOF
# the sshd of tests/cluster/multi_host.sh (one per host namespace)
Port 22
HostKey $work/host_ed25519
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
EOF
[ -d /run/sshd ] || { mkdir -p /run/sshd && made_run_sshd=1; }  # sshd's privilege separation
for h in "${hosts[@]}"; do
  ip netns exec "${tag}h$h" unshare --uts sh -c \
    "hostname host$h && exec /usr/sbin/sshd -D -f '$work/sshd_config' -o 'PidFile=$work/sshd$h.pid' -E '$work/sshd$h.log'" &
  sshd_pids+=($!)
done
cat > "$work/ssh" <<EOF
#!/bin/sh
# hydra's launcher (-launcher-exec): ssh with this test's key, no known-hosts bookkeeping
exec ssh -F /dev/null -i "$work/id_ed25519" -o StrictHostKeyChecking=no \\
  -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=20 "\$@"
EOF
chmod +x "$work/ssh"
for h in "${hosts[@]}"; do
  seen=""
  for _ in $(seq 1 50); do
    seen=$(ip netns exec "${tag}h1" "$work/ssh" "$net.1$h" hostname 2>/dev/null) && break
    sleep 0.2
  done
  [ "$seen" = "host$h" ] || fail "ssh to $net.1$h answered '$seen', not host$h"
done
echo "sshd on host1 host2 host3: ssh from host1 reaches each under its own hostname"
if [ -n "${MULTIHOST_SHAPE:-}" ]; then
  # host3's cable, both ways: its eth0 sends, the switch's port3 sends to it
  ip netns exec "${tag}h3" tc qdisc replace dev eth0 root $MULTIHOST_SHAPE 2>"$work/tc.err" &&
    ip netns exec "$sw" tc qdisc replace dev port3 root $MULTIHOST_SHAPE 2>>"$work/tc.err" ||
    skip "cannot shape a link with 'tc qdisc ... $MULTIHOST_SHAPE': $(head -n1 "$work/tc.err") (no sch_${MULTIHOST_SHAPE%% *} in this kernel?)"
  echo "shaped: host3's link to the switch, both directions: $MULTIHOST_SHAPE"
fi
if [ -n "${MULTIHOST_DELAY:-}" ]; then
  # no sch_netem needed: port3 leaves the bridge, a second veth pair relay3/bport3 takes its
  # place (bport3 in br0), and tests/cluster/delay_line.py relays frames between port3 and
  # relay3 late by the delay in each direction. A MULTIHOST_SHAPE on port3 still applies:
  # the relay's sends to host3 go through port3's qdisc.
  pinger=(ip netns exec "${tag}h1" "$venv/bin/python" "$here/tests/cluster/delay_line.py"
          --ping "$net.13" --count 50)
  without=$("${pinger[@]}") || fail "host1 cannot ping host3: $without"
  ip -n "$sw" link set port3 nomaster &&
    ip -n "$sw" link add relay3 type veth peer name bport3 &&
    ip -n "$sw" link set bport3 master br0 up && ip -n "$sw" link set relay3 up ||
    fail "cannot cut host3's cable for the delay line"
  ip netns exec "$sw" "$venv/bin/python" "$here/tests/cluster/delay_line.py" port3 relay3 \
    --delay-ms "$delay_ms" --ready "$work/relay.ready" > "$work/relay.log" 2>&1 &
  relay_pid=$!
  for _ in $(seq 1 100); do
    [ -s "$work/relay.ready" ] || ! kill -0 $relay_pid 2>/dev/null && break
    sleep 0.1
  done
  [ -s "$work/relay.ready" ] || fail "the delay line did not start: $(tail -n 3 "$work/relay.log")"
  with=$("${pinger[@]}") || fail "host1 cannot ping host3 through the delay line: $with"
  # "ping ADDR: N/M replies, RTT ms mean A median B min C max D"
  added=$(awk -v a="$with" -v b="$without" 'BEGIN {
    split(a, x, " "); split(b, y, " "); printf "%.4f", (x[10] - y[10]) / 2 }')
  echo "delayed: host3's link to the switch, both directions: a delay line of $delay_ms ms each way (tests/cluster/delay_line.py, user space)"
  echo "  host1 -> host3 without it: $without"
  echo "  host1 -> host3 with it:    $with"
  echo "measured one-way delay added: $added ms (median RTT with minus without, halved; the relay's own latency included)"
fi

# -- 4. the run ----------------------------------------------------------------------------
flavour=mpich
"$mpiexec" --version 2>&1 | grep -q -E "Open MPI|OpenRTE" && flavour=openmpi
out="$work/run"
if [ $flavour = mpich ]; then
  for h in "${hosts[@]}"; do echo "$net.1$h:$slots"; done > "$work/hostfile"
  launch=("$mpiexec" -f "$work/hostfile" -n $((slots * ${#hosts[@]}))
          -launcher ssh -launcher-exec "$work/ssh" -localhost "$net.11")
  [ "${MULTIHOST_FORCE_TCP:-1}" = 0 ] ||
    launch+=(-genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0
             -genv FI_PROVIDER tcp -genv FI_TCP_IFACE eth0)
else
  for h in "${hosts[@]}"; do echo "$net.1$h slots=$slots"; done > "$work/hostfile"
  "$venv/bin/python" -c 'from mpi4py import MPI; import sys
sys.exit("Open MPI" not in MPI.Get_library_version())' 2>/dev/null ||
    export MPI4PY_LIBMPI=${MULTIHOST_LIBMPI:-libmpi.so.40}
  # Open MPI forwards no environment by default: PATH, the library mpi4py loads, and the
  # BLAS/OpenMP settings (numpy's OpenBLAS picks other kernels without OPENBLAS_CORETYPE,
  # and its results then differ in the last bits from the one-host run's)
  forward=(-x PATH ${MPI4PY_LIBMPI:+-x MPI4PY_LIBMPI})
  for name in $(compgen -e | grep -E '^(OPENBLAS_|OMP_|MKL_)'); do forward+=(-x "$name"); done
  launch=("$mpiexec" --hostfile "$work/hostfile" -n $((slots * ${#hosts[@]}))
          --allow-run-as-root --mca plm_rsh_agent "$work/ssh" --bind-to none
          --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0
          --mca pml ob1 "${forward[@]}")
fi
echo "hostfile ($flavour):"; sed 's/^/  /' "$work/hostfile"
declare -A rx_before
for h in "${hosts[@]}"; do
  rx_before[$h]=$(ip netns exec "${tag}h$h" cat /sys/class/net/eth0/statistics/rx_bytes)
done
cmd=("${launch[@]}" "$venv/bin/python" -m mpi4py -m mpi_privopt run --out "$out" "$@")
echo "from host1: ${cmd[*]}"
tick=$SECONDS
# host2's TCP connections, sampled during the run: one between host2 and host3 can only be
# MPI's (ssh and the launcher's control connections all go to or from host1)
( while :; do ip netns exec "${tag}h2" ss -Htn state established 2>/dev/null; sleep 0.2; done ) \
  > "$work/host2-tcp.txt" &
sampler=$!
(cd "$here" && ip netns exec "${tag}h1" unshare --uts sh -c 'hostname host1 && exec "$@"' sh \
   timeout "$timeout_s" "${cmd[@]}") > "$work/run.log" 2>&1
status=$?
kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
stop_relay
sed 's/^/  | /' "$work/run.log" | tail -n 30
[ $status = 0 ] || fail "the run exited with status $status after $((SECONDS - tick)) s"
echo "the run took $((SECONDS - tick)) s"

# -- 5. checks -----------------------------------------------------------------------------
wire=0
for h in "${hosts[@]}"; do
  rx=$(ip netns exec "${tag}h$h" cat /sys/class/net/eth0/statistics/rx_bytes)
  wire=$((wire + rx - rx_before[$h]))
done
"$venv/bin/python" - "$out" "$wire" "$slots" "${#hosts[@]}" <<'EOF' || fail "checks failed"
import json, sys
from collections import Counter
out, wire, slots, n_hosts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
summary = json.load(open(f"{out}/summary.json"))
traffic = json.load(open(f"{out}/traffic.json"))
hosts = summary["hosts"]
per_host = Counter(hosts)
print(f"summary.json: ranks {summary['ranks']}, hosts by rank {hosts}")
assert summary["ranks"] == slots * n_hosts, summary["ranks"]
assert sorted(per_host) == [f"host{h}" for h in range(1, n_hosts + 1)], per_host
assert set(per_host.values()) == {slots}, per_host
assert traffic["hosts"] == hosts
cross = traffic["cross_host"]
K = len(hosts)
for i in range(K):
    for j in range(K):
        assert cross[i][j] == (hosts[i] != hosts[j]), (i, j)
moved = traffic["total"]["bytes"]
cross_bytes = sum(moved[i][j] for i in range(K) for j in range(K) if cross[i][j])
links = sum(1 for i in range(K) for j in range(K) if moved[i][j] and cross[i][j])
all_links = sum(1 for i in range(K) for j in range(K) if moved[i][j])
print(f"traffic.json: {links} of {all_links} links cross hosts, carrying {cross_bytes} of "
      f"{sum(map(sum, moved))} payload bytes")
assert links > 0 and cross_bytes > 0
print(f"the hosts' eth0 received {wire} bytes during the run "
      f"({wire / cross_bytes:.1f}x the cross-host payload)")
assert wire >= cross_bytes, (wire, cross_bytes)
EOF
mpi_tcp=$(grep -c "$net.12:[0-9]* *$net.13:\|$net.13:[0-9]* *$net.12:" "$work/host2-tcp.txt")
echo "host2 <-> host3 TCP connections seen during the run: $mpi_tcp samples, e.g."
grep -m 2 "$net.12:[0-9]* *$net.13:\|$net.13:[0-9]* *$net.12:" "$work/host2-tcp.txt" | sed 's/^/  /'
[ "$mpi_tcp" -gt 0 ] || command -v ss >/dev/null || echo "(no ss: not checked)"
[ "$mpi_tcp" -gt 0 ] || ! command -v ss >/dev/null || fail "no TCP connection between host2 and host3: the MPI traffic did not go over TCP"
"$venv/bin/python" -m mpi_privopt report "$out" |
  awk '/^bytes per link/ {on = 1} /^privacy loss/ {on = 0} on'
"$venv/bin/python" - "$out" <<'EOF'
import json, sys
import numpy as np
out = sys.argv[1]
total = json.load(open(f"{out}/traffic.json"))["total"]
summary = json.load(open(f"{out}/summary.json"))
samples = np.array(total["wait_samples"])
wait = np.array(total["wait_seconds"]) / np.maximum(samples, 1)
third = np.array([h == "host3" for h in summary["hosts"]])
via = (third[:, None] != third[None, :]) & (samples > 0)  # over host3's cable
rest = ~via & (samples > 0)
print(f"link wait: {wait[via].mean() * 1e3:.3f} ms mean over the {int(via.sum())} links over "
      f"host3's cable, {wait[rest].mean() * 1e3:.3f} ms over the other {int(rest.sum())}; "
      f"wall time {summary['wall_seconds']:.3f} s, algorithm {summary['algorithm_seconds']:.3f} s, "
      f"{int(np.array(total['messages']).max())} exchanges per link")
EOF
# -- 6. the same run on one host gives the same models, bit for bit -------------------------
one=("$mpiexec" -n $((slots * ${#hosts[@]})))
[ $flavour = openmpi ] &&
  one+=(--allow-run-as-root --oversubscribe --bind-to none "${forward[@]}")
(cd "$here" && timeout "$timeout_s" "${one[@]}" "$venv/bin/python" -m mpi4py \
     -m mpi_privopt run --out "$work/one-host" "$@") > "$work/one-host.log" 2>&1 ||
    fail "the one-host run failed: $(tail -n 3 "$work/one-host.log")"
"$venv/bin/python" - "$out" "$work/one-host" <<'EOF' || fail "the models differ"
import json, sys
import numpy as np
a, b = (np.load(f"{d}/models.npz")["W"] for d in sys.argv[1:3])
host = json.load(open(f"{sys.argv[2]}/summary.json"))["hosts"]
assert a.shape == b.shape and np.array_equal(a, b), np.abs(a - b).max()
print(f"the same run on one host ({host[0]}, the same mpiexec): final models "
      f"{a.shape[0]} x {a.shape[1]} bitwise equal")
EOF
echo "PASSED: ${#hosts[@]} hosts (network namespaces with their own hostnames, sshd) ran one $((slots * ${#hosts[@]}))-rank world over TCP; the cross-host links are marked"
