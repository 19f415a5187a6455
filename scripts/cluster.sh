#!/usr/bin/env bash
# K hosts on one machine: network namespaces joined by veth pairs to a bridge, each host's link
# shaped with tc, and zerodp's MPI backend run across them over TCP.
#
#   scripts/cluster.sh --hosts K [--ranks-per-host R] [--rate RATE] [--delay D] [--loss P]
#                      [--cut H@S] [--partition A@S] [--kill H@S] [--after PATH] -- ZERODP_ARGS...
#
# Runs `zerodp ZERODP_ARGS --backend mpi` (the binary: build/zerodp, or $ZERODP) as K*R ranks,
# R per host, prints its output and exits with its status. Hosts are namespaces zerodp-h0 ..
# zerodp-h{K-1} with one interface, eth0, at 10.213.0.(h+1)/24; the bridge lives in a
# namespace of its own (zerodp-net), so no address exists outside the namespaces this script
# creates and nothing has a route off the machine. Between hosts MPI uses TCP only over that
# subnet; between ranks of one host, shared memory.
#   --rate RATE   each host's egress rate (tbf): 1gbit, 200mbit, ...; default unshaped
#   --delay D     one-way delay (netem), e.g. 5ms; refused where the kernel has no netem
#   --loss P      drop this fraction of each host's egress packets (nftables), e.g. 0.1
#   --cut H@S     take host H's link down S seconds after the start
#   --partition A@S  S seconds after the start, hosts 0..A-1 and A..K-1 stop reaching each
#                 other (blackhole routes both ways); each side's links stay up
#   --kill H@S    kill host H's zerodp processes (SIGKILL) S seconds after the start
#   --after PATH  the seconds of --cut, --partition and --kill count from when PATH exists (a
#                 checkpoint the run saves), not from the start: a loaded machine starts late
# Each rank gets ZERODP_WIRE_IF=eth0, so `measure` reports what each host's interface sent
# (the kernel's counter) as "wire", and ZERODP_LINK_RATE/ZERODP_LINK_DELAY (--rate, --delay),
# so that it replays the step on the link it runs on ("predicted_efficiency").
#
# Everything is removed on exit, failure or Ctrl-C; names with the zerodp- prefix left by a
# crashed run are removed at the next start. One cluster at a time (a lock). Without root or
# CAP_NET_ADMIN it says so in one line and exits 77.
set -euo pipefail
usage() {
  sed -n '/^#   scripts/,/^#                      \[--cut/p' "$0" | sed 's/^#//' >&2
  exit 2
}
fail() {
  echo "cluster.sh: $*" >&2
  exit 2
}

hosts="" per_host=1 rate="" delay="" loss="" cut="" kill="" partition="" after=""
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=${2:-}; shift 2 ;;
    --ranks-per-host) per_host=${2:-}; shift 2 ;;
    --rate) rate=${2:-}; shift 2 ;;
    --delay) delay=${2:-}; shift 2 ;;
    --loss) loss=${2:-}; shift 2 ;;
    --cut) cut=${2:-}; shift 2 ;;
    --kill) kill=${2:-}; shift 2 ;;
    --partition) partition=${2:-}; shift 2 ;;
    --after) after=${2:-}; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -gt 0 ] || usage
[[ $hosts =~ ^[1-9][0-9]*$ ]] && [ "$hosts" -le 64 ] || fail "--hosts: expected a whole number from 1 to 64, got '$hosts'"
[[ $per_host =~ ^[1-9][0-9]*$ ]] && [ "$per_host" -le 64 ] || fail "--ranks-per-host: expected a whole number from 1 to 64, got '$per_host'"
[ -z "$rate" ] || [[ $rate =~ ^[0-9]+(\.[0-9]+)?(k|m|g)?bit$ ]] || fail "--rate: expected a rate such as 1gbit or 200mbit, got '$rate'"
[ -z "$delay" ] || [[ $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || fail "--delay: expected a time such as 5ms, got '$delay'"
[ -z "$loss" ] || [[ $loss =~ ^0?\.[0-9]+$ ]] || fail "--loss: expected a fraction below 1 such as 0.1, got '$loss'"
cut_host="" cut_after=""
if [ -n "$cut" ]; then
  [[ $cut =~ ^([0-9]+)@([0-9]+(\.[0-9]+)?)$ ]] || fail "--cut: expected HOST@SECONDS such as 1@5, got '$cut'"
  cut_host=${BASH_REMATCH[1]} cut_after=${BASH_REMATCH[2]}
  [ "$cut_host" -lt "$hosts" ] || fail "--cut: host $cut_host is not one of the $hosts hosts (0 to $((hosts - 1)))"
fi
part_at="" part_after=""
if [ -n "$partition" ]; then
  [[ $partition =~ ^([0-9]+)@([0-9]+(\.[0-9]+)?)$ ]] || fail "--partition: expected A@SECONDS such as 2@5 (hosts 0..A-1 apart from the rest), got '$partition'"
  part_at=${BASH_REMATCH[1]} part_after=${BASH_REMATCH[2]}
  [ "$part_at" -ge 1 ] && [ "$part_at" -lt "$hosts" ] || fail "--partition: A must split the $hosts hosts in two (1 to $((hosts - 1))), got $part_at"
fi
kill_host="" kill_after=""
if [ -n "$kill" ]; then
  [[ $kill =~ ^([0-9]+)@([0-9]+(\.[0-9]+)?)$ ]] || fail "--kill: expected HOST@SECONDS such as 1@5, got '$kill'"
  kill_host=${BASH_REMATCH[1]} kill_after=${BASH_REMATCH[2]}
  [ "$kill_host" -lt "$hosts" ] || fail "--kill: host $kill_host is not one of the $hosts hosts (0 to $((hosts - 1)))"
fi
here=$(cd "$(dirname "$0")/.." && pwd)
zerodp=$(realpath "${ZERODP:-$here/build/zerodp}")
[ -x "$zerodp" ] || fail "no zerodp binary at $zerodp (build it, or set ZERODP)"

if ! ip netns add zerodp-probe-$$ 2>/dev/null; then
  echo "cluster.sh: cannot create network namespaces here (needs root or CAP_NET_ADMIN): skipped" >&2
  exit 77
fi
ip netns del zerodp-probe-$$
if [ -n "$delay" ] && ! { ip netns add zerodp-probe-$$ && ip netns exec zerodp-probe-$$ tc qdisc add dev lo root netem delay 1ms 2>/dev/null; }; then
  ip netns del zerodp-probe-$$ 2>/dev/null || true
  fail "--delay: this kernel has no netem qdisc, so no delay can be added"
fi
ip netns del zerodp-probe-$$ 2>/dev/null || true
if [ -n "$loss" ] && ! command -v nft >/dev/null; then
  fail "--loss: needs nftables (apt install nftables)"
fi

exec 9>/run/zerodp-cluster.lock
flock 9  # one cluster at a time: a second would remove the first's namespaces

work=$(mktemp -d)
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  [ -n "${cutter:-}" ] && kill "$cutter" 2>/dev/null || true
  [ -n "${killer:-}" ] && kill "$killer" 2>/dev/null || true
  for ns in $(ip netns list | awk '/^zerodp-/ {print $1}'); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Leftovers of a crashed run.
for ns in $(ip netns list | awk '/^zerodp-/ {print $1}'); do
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$ns"
done

ip netns add zerodp-net
ip netns exec zerodp-net ip link add br0 type bridge
ip netns exec zerodp-net ip link set br0 up
hostlist=""
for h in $(seq 0 $((hosts - 1))); do
  ns=zerodp-h$h addr=10.213.0.$((h + 1))
  ip netns add "$ns"
  ip link add zerodp-v$h netns "$ns" type veth peer name p$h netns zerodp-net
  ip netns exec "$ns" ip link set zerodp-v$h name eth0
  ip netns exec "$ns" ip addr add "$addr/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  ip netns exec zerodp-net ip link set p$h master br0
  ip netns exec zerodp-net ip link set p$h up
  if [ -n "$delay" ]; then
    ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: netem delay "$delay"
    [ -z "$rate" ] || ip netns exec "$ns" tc qdisc add dev eth0 parent 1: handle 2: tbf rate "$rate" burst 64kb latency 1s
  elif [ -n "$rate" ]; then
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 64kb latency 1s
  fi
  if [ -n "$loss" ]; then
    ip netns exec "$ns" nft add table inet zerodp
    ip netns exec "$ns" nft add chain inet zerodp out '{ type filter hook output priority 0; }'
    ip netns exec "$ns" nft add rule inet zerodp out oifname eth0 numgen random mod 1000 \< "$(awk -v p="$loss" 'BEGIN { printf "%d", p * 1000 }')" drop
  fi
  echo "$addr $ns" >> "$work/hosts"
  hostlist+="${hostlist:+,}$addr:$per_host"
done

# mpirun reaches each host by running its daemon under `ip netns exec` of the namespace that
# owns the host's address, with a host name of its own (a UTS namespace): Open MPI names its
# session files and shared-memory segments after the host, and two hosts called alike would
# share them.
cat > "$work/agent" <<EOF
#!/usr/bin/env bash
while [ "\${1#-}" != "\$1" ]; do shift; done  # ssh-style options
ns=\$(awk -v a="\$1" '\$1 == a {print \$2}' "$work/hosts")
[ -n "\$ns" ] || { echo "cluster agent: unknown host \$1" >&2; exit 1; }
shift
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns && exec \$*"
EOF
chmod +x "$work/agent"

# Waits for --after's path, when given: the start of the events' clocks.
wait_for_start() {
  [ -z "$after" ] && return 0
  until [ -e "$after" ]; do sleep 0.1; done
}

if [ -n "$cut" ]; then
  (wait_for_start && sleep "$cut_after" && ip netns exec zerodp-h$cut_host ip link set eth0 down &&
     echo "cluster.sh: host $cut_host's link is down (--cut $cut)" >&2) &
  cutter=$!
fi

if [ -n "$partition" ]; then
  (wait_for_start && sleep "$part_after" &&
     for h in $(seq 0 $((hosts - 1))); do
       for o in $(seq 0 $((hosts - 1))); do
         if [ $(( h < part_at )) != $(( o < part_at )) ]; then
           ip netns exec zerodp-h$h ip route add blackhole 10.213.0.$((o + 1))/32
         fi
       done
     done &&
     echo "cluster.sh: hosts 0-$((part_at - 1)) and $part_at-$((hosts - 1)) are apart (--partition $partition)" >&2) &
fi

if [ -n "$kill" ]; then
  (wait_for_start && sleep "$kill_after" &&
     for pid in $(ip netns pids zerodp-h$kill_host); do
       # zerodp runs the engine's commands as zerodp-engine (the same process, exec'd).
       case "$(cat /proc/$pid/comm 2>/dev/null)" in
         zerodp | zerodp-engine) kill -9 "$pid" ;;
       esac
     done
     echo "cluster.sh: host $kill_host's zerodp processes killed (--kill $kill)" >&2) &
  killer=$!
fi

# mpirun learns a host is gone when its daemon misses 3 keepalive probes a second apart. Where
# packets are dropped on purpose, a probe or its answer is lost one time in five: 10 in a row
# before giving up (a few in 10^8), so that loss alone never ends a job.
probes=3
[ -z "$loss" ] || probes=10

# The hosts share this machine's cores: each rank gets its share for its BLAS threads, as it
# would have a host's cores to itself, rather than every rank starting one thread per core.
blas_threads=$(( $(nproc) / (hosts * per_host) ))
[ "$blas_threads" -ge 1 ] || blas_threads=1

set +e
ip netns exec zerodp-h0 unshare --uts env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  /bin/sh -c 'hostname zerodp-h0 && exec "$@"' sh mpirun --allow-run-as-root --oversubscribe -np $((hosts * per_host)) --host "$hostlist" \
  --mca plm_rsh_agent "$work/agent" --mca btl tcp,self,vader \
  --mca btl_tcp_if_include 10.213.0.0/24 --mca oob_tcp_if_include 10.213.0.0/24 \
  --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes "$probes" \
  --mca orte_timeout_for_stack_trace 0 \
  -x ZERODP_WIRE_IF=eth0 -x ZERODP_LINK_RATE="$rate" -x ZERODP_LINK_DELAY="$delay" \
  -x OPENBLAS_NUM_THREADS="$blas_threads" \
  -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
  "$zerodp" "$@" --backend mpi
status=$?
set -e
exit $status
