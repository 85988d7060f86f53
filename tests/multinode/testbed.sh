#!/usr/bin/env bash
# shellcheck shell=bash
# Several nodes on this machine, for tests and for a person trying stoker across hosts: each node
# is a Linux network namespace with its own loopback, its own host name (a UTS namespace for the
# processes started in it) and one address on a bridge that only the nodes share. Open MPI
# launches across them over TCP with a hostfile naming the nodes by address; its remote agent
# (instead of ssh) enters the node's namespaces. Storage is this machine's file system, shared
# by every node as a parallel file system would be, but for /tmp: each node has its own, as
# cluster nodes do (a mount namespace binds TESTBED_DIR/tmp-NODE there), so the state folder and
# whatever the nodes share live outside /tmp (TESTBED_DIR in TESTBED_TMPDIR, default /var/tmp).
# What must be shared but lies in /tmp (a checkout and its build there) is named in
# TESTBED_SHARED (paths, space-separated): each node sees the folder of /tmp that holds it.
# Measured facts: ../shared/notes/multinode.md.
#
# The nodes hold no route but their bridge's subnet (10.251.0.0/24, nodes at .10, .11, ...): no
# traffic leaves them for any other address. The bridge has no address of its own, so the
# machine's own namespace takes no part either. Everything made is removed at exit (processes
# in the nodes, namespaces, links, the state folder), also when a test fails; what a killed run
# left behind is removed by the next start.
#
# As a script (needs root):
#   tests/multinode/testbed.sh [--nodes K] [--slots R] [-- COMMAND [ARGS...]]
# makes K nodes (default 3) of R slots each (default 2), runs COMMAND (default: an interactive
# shell) with the variables below exported, and removes the nodes when it ends. Example:
#   tests/multinode/testbed.sh -- sh -c '$TESTBED_MPIRUN -np 6 hostname'
#
# As a library (a test script sources it):
#   source tests/multinode/testbed.sh
#   testbed_start 3 2     # 3 nodes x 2 slots; exits 77 (ctest: skipped) saying why when
#                         # namespaces cannot be made here
#   $TESTBED_MPIRUN -np 6 PROGRAM ...   # mpirun across the nodes (started inside node 0)
#   testbed_on 2 PROGRAM ...            # PROGRAM on node 2 alone
#   testbed_kill_node 1   # SIGKILL every process of node 1
#   testbed_link 2 down   # cut node 2's network (up: restore it)
# Variables: TESTBED_DIR (the hostfile, the programs, the nodes' /tmp folders, and room for what
# the nodes share), TESTBED_NODES (names, also
# their host names), TESTBED_ADDRS (their addresses), TESTBED_SUBNET, TESTBED_HOSTFILE,
# TESTBED_MPIRUN (a program: mpirun with the hostfile, the agent and the TCP settings; extra
# mpirun flags go after it).

TESTBED_SUBNET=10.251.0.0/24
TESTBED_DIR=""
TESTBED_NODES=()
TESTBED_ADDRS=()
_testbed_tag=""  # stk<pid>: the prefix of every name this test bed makes

# testbed_skip WHY: namespaces cannot be made here; exit 77.
testbed_skip() {
  echo "SKIP: the multi-node test bed cannot run here: $1" >&2
  exit 77
}

# Removes what test beds of processes no longer running left behind (a run killed with
# SIGKILL, say, has no exit trap): namespaces stk<pid>-n<i>, state folders
# stoker-testbed-<pid>.*, bridges stk<pid>b, links stk<pid>v<i>.
_testbed_remove_stale() {
  local ns pid link dir
  for ns in $(ip netns list 2> /dev/null | awk '{print $1}' | grep -E '^stk[0-9]+-n[0-9]+$'); do
    pid=${ns#stk}
    pid=${pid%%-*}
    kill -0 "$pid" 2> /dev/null && continue
    _testbed_remove_node "$ns"
  done
  for dir in "${TESTBED_TMPDIR:-/var/tmp}"/stoker-testbed-*.*; do
    pid=${dir##*/stoker-testbed-}
    pid=${pid%%.*}
    [ -d "$dir" ] && [[ "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2> /dev/null &&
      rm -rf --one-file-system "$dir"
  done
  # The bridge and the node links (a namespace that processes held when it was deleted may
  # leave its link's peer behind).
  for link in $(ip -o link show 2> /dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
                grep -E '^stk[0-9]+(b|v[0-9]+)$'); do
    pid=${link#stk}
    pid=${pid%%[bv]*}
    kill -0 "$pid" 2> /dev/null || ip link del "$link" 2> /dev/null || true
  done
}

# _testbed_remove_node NS: its processes killed, then the namespace (its veth end goes with it,
# and so the peer on the bridge).
_testbed_remove_node() {
  local pids
  pids=$(ip netns pids "$1" 2> /dev/null || true)
  # shellcheck disable=SC2086  # a list of PIDs
  [ -z "$pids" ] || kill -9 $pids 2> /dev/null || true
  ip netns del "$1" 2> /dev/null || true
}

testbed_stop() {
  local i
  [ -n "$_testbed_tag" ] || return 0
  for i in "${!TESTBED_NODES[@]}"; do
    _testbed_remove_node "${TESTBED_NODES[$i]}"
    ip link del "${_testbed_tag}v$i" 2> /dev/null || true
  done
  ip link del "${_testbed_tag}b" 2> /dev/null || true
  # --one-file-system: never into a folder bound there (none shows here; a guard all the same).
  [ -z "$TESTBED_DIR" ] || rm -rf --one-file-system "$TESTBED_DIR"
  _testbed_tag=""
}

# testbed_start [K] [SLOTS]: K nodes (default 3) of SLOTS slots each (default 2).
testbed_start() {
  local nodes=${1:-3} slots=${2:-2} i ns addr veth
  [ "$(id -u)" = 0 ] || testbed_skip "network namespaces need root"
  command -v ip > /dev/null || testbed_skip "no ip command (iproute2)"
  command -v mpirun > /dev/null || testbed_skip "no mpirun"
  unshare --uts true 2> /dev/null || testbed_skip "unshare --uts fails (no UTS namespaces)"
  _testbed_remove_stale
  _testbed_tag="stk$$"
  trap testbed_stop EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  TESTBED_DIR=$(mktemp -d "${TESTBED_TMPDIR:-/var/tmp}/stoker-testbed-$$.XXXXXX")
  chmod 0755 "$TESTBED_DIR"
  ip link add "${_testbed_tag}b" type bridge 2> "$TESTBED_DIR/err" ||
    testbed_skip "no bridge can be made: $(cat "$TESTBED_DIR/err")"
  ip link set "${_testbed_tag}b" up
  : > "$TESTBED_DIR/hostfile"
  : > "$TESTBED_DIR/nodes"
  for ((i = 0; i < nodes; i++)); do
    ns="${_testbed_tag}-n$i" addr="10.251.0.$((10 + i))" veth="${_testbed_tag}v$i"
    ip netns add "$ns" 2> "$TESTBED_DIR/err" ||
      testbed_skip "no network namespace can be made: $(cat "$TESTBED_DIR/err")"
    TESTBED_NODES+=("$ns")
    TESTBED_ADDRS+=("$addr")
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "${_testbed_tag}b" up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    echo "$addr slots=$slots" >> "$TESTBED_DIR/hostfile"
    mkdir -m 1777 "$TESTBED_DIR/tmp-$ns"
    for kept in $(_testbed_kept_in_tmp); do  # a place to bind it on: a folder, or a file
      if [ -d "$kept" ]; then mkdir -p "$TESTBED_DIR/tmp-$ns/${kept#/tmp/}"
      else touch "$TESTBED_DIR/tmp-$ns/${kept#/tmp/}"; fi
    done
    echo "$ns $addr" >> "$TESTBED_DIR/nodes"
  done
  _testbed_write_programs
  TESTBED_HOSTFILE="$TESTBED_DIR/hostfile"
  TESTBED_MPIRUN="$TESTBED_DIR/mpirun"
  export TESTBED_DIR TESTBED_SUBNET TESTBED_HOSTFILE TESTBED_MPIRUN
  export TESTBED_NODES_TEXT="${TESTBED_NODES[*]}"  # arrays do not cross exec
}

# What right under /tmp holds the paths of TESTBED_SHARED (/tmp/clone for /tmp/clone/build/stoker,
# /tmp/stoker for itself), one per line.
_testbed_kept_in_tmp() {
  local path
  for path in ${TESTBED_SHARED:-}; do
    path=$(realpath -m "$path")
    [[ "$path" == /tmp/?* ]] || continue
    path=${path#/tmp/}
    echo "/tmp/${path%%/*}"
  done | sort -u
}

# The programs of the test bed: `enter` (ENTER NODE COMMAND...: COMMAND in the node's network,
# host-name and mount namespaces, with the node's own /tmp), Open MPI's remote agent (called as
# ssh would be: AGENT HOST COMMAND..., the command for a shell, as ssh hands it) and the mpirun
# wrapper.
_testbed_write_programs() {
  local root_flags="" keep="" kept
  [ "$(id -u)" != 0 ] || root_flags="--allow-run-as-root"
  # In the node's mount namespace (private: nothing of it shows outside), each kept folder is bound
  # into the node's /tmp folder before that goes over /tmp, with what is bound in it (--rbind).
  for kept in $(_testbed_kept_in_tmp); do
    keep+="mount --bind \"$kept\" \"$TESTBED_DIR/tmp-\$0/${kept#/tmp/}\" && "
  done
  cat > "$TESTBED_DIR/enter" <<EOF
#!/bin/sh
# ENTER NODE COMMAND...: COMMAND on a node of the test bed (its network, host name and /tmp).
node=\$1
shift
exec nsenter --net="/run/netns/\$node" unshare --uts --mount --propagation private sh -c \\
  '$keep mount --rbind "$TESTBED_DIR/tmp-\$0" /tmp && hostname "\$0" && exec "\$@"' \\
  "\$node" "\$@"
EOF
  cat > "$TESTBED_DIR/agent" <<EOF
#!/bin/sh
# Open MPI's remote agent for the test bed: runs COMMAND on the node of address HOST.
host=\$1
shift
node=\$(awk -v a="\$host" '\$2 == a {print \$1}' "$TESTBED_DIR/nodes")
[ -n "\$node" ] || { echo "testbed agent: no node has address \$host" >&2; exit 255; }
exec "$TESTBED_DIR/enter" "\$node" sh -c "\$*"
EOF
  cat > "$TESTBED_DIR/mpirun" <<EOF
#!/bin/sh
# mpirun across the test bed's nodes, started on node 0 (${TESTBED_NODES[0]}).
exec "$TESTBED_DIR/enter" "${TESTBED_NODES[0]}" mpirun $root_flags \\
  --hostfile "$TESTBED_DIR/hostfile" --mca plm_rsh_agent "$TESTBED_DIR/agent" \\
  --mca btl self,vader,tcp --mca btl_tcp_if_include $TESTBED_SUBNET \\
  --mca oob_tcp_if_include $TESTBED_SUBNET --mca btl_base_warn_component_unused 0 "\$@"
EOF
  chmod +x "$TESTBED_DIR/enter" "$TESTBED_DIR/agent" "$TESTBED_DIR/mpirun"
}

# testbed_on I COMMAND [ARGS...]: COMMAND on node I alone (its namespaces, host name and /tmp).
testbed_on() { "$TESTBED_DIR/enter" "${TESTBED_NODES[$1]}" "${@:2}"; }

# testbed_kill_node I: SIGKILL every process of node I, as a node that dies.
testbed_kill_node() {
  local pids
  pids=$(ip netns pids "${TESTBED_NODES[$1]}")
  # shellcheck disable=SC2086  # a list of PIDs
  [ -z "$pids" ] || kill -9 $pids 2> /dev/null || true
}

# testbed_link I up|down: node I's network, as a cable pulled and put back.
testbed_link() { ip -n "${TESTBED_NODES[$1]}" link set eth0 "$2"; }

_testbed_main() {
  local nodes=3 slots=2
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) nodes=$2; shift 2 ;;
      --slots) slots=$2; shift 2 ;;
      --) shift; break ;;
      -h|--help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; return 0 ;;
      *) echo "testbed.sh: unknown argument $1 (--nodes K, --slots R, -- COMMAND)" >&2; return 2 ;;
    esac
  done
  testbed_start "$nodes" "$slots"
  echo "testbed: nodes ${TESTBED_NODES[*]} at ${TESTBED_ADDRS[*]}; mpirun across them:" \
    "\$TESTBED_MPIRUN ($TESTBED_MPIRUN)" >&2
  local status=0
  if [ $# -gt 0 ]; then "$@" || status=$?; else "${SHELL:-bash}" -i || status=$?; fi
  return "$status"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  _testbed_main "$@"
  exit $?
fi
