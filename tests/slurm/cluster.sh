# shellcheck shell=bash
# A private single-node Slurm for tests, sourced by a test script (bash). As root, without
# systemd and without touching /etc: munged, slurmctld and slurmd run in the foreground from a
# temporary folder with their own key, socket, ports, state and logs. Settings measured on
# Debian 12's Slurm 22.05: up in ~1 s, a trivial job done ~3 s after its submission, a requeued
# job runs again ~11 s after the requeue (cred_expire=10, sched_interval=1; by default 120 s),
# stopped in ~1-2 s.
#
#   source tests/slurm/cluster.sh
#   slurm_start                       # exits 77 (ctest: skipped) when Slurm cannot run here
#   id=$(slurm_submit STEPS=40 -n 4 job.sbatch)  # sbatch --parsable, with STEPS=40 in the
#                                     # job's environment; prints the job id
#   slurm_wait_done "$id" 120         # polls until the job has ended for good; prints its state
#   slurm_field "$id" Restarts        # one Key=Value field of `scontrol show job`
#   slurm_poll 60 "what" cmd args...  # runs cmd a few times a second until it succeeds
#
# slurm_start traps EXIT: the daemons are stopped by the PIDs recorded when they started (never
# by name), after cancelling the jobs still known to this cluster. A test that needs its own
# cleanup sets STOKER_SLURM_ON_EXIT to a command, run after the daemons are down. The clients
# (sbatch, squeue, ...) find this cluster through SLURM_CONF, exported by slurm_start; jobs
# inherit it. Sets STOKER_SLURM_DIR: the temporary folder (config, state, logs), removed at exit
# unless STOKER_SLURM_KEEP=1.
#
# Several nodes (tests/multinode/testbed.sh), set before slurm_start: STOKER_SLURM_NODES, the
# nodes as "NAME=ADDRESS ..." (the first also runs slurmctld), STOKER_SLURM_ON_NODE, a program
# that runs "NAME COMMAND..." on node NAME (the test bed's `enter`), STOKER_SLURM_CPUS per node (default
# 8), and STOKER_SLURM_BASE, a folder every node sees for STOKER_SLURM_DIR. The clients must then
# reach the controller: the caller makes sbatch, squeue, ... shell functions that run on a node.

STOKER_SLURM_DIR=""
STOKER_SLURM_ON_EXIT=${STOKER_SLURM_ON_EXIT:-}
_slurm_pids=()   # munged, slurmctld, slurmd: in start order
_slurm_names=()
_slurm_logs=()

# slurm_skip WHY [LOG]: cannot run Slurm here. Prints why (and the tail of the log), exit 77.
slurm_skip() {
  echo "SKIP: single-node Slurm: $1" >&2
  if [ -n "${2:-}" ] && [ -s "$2" ]; then
    echo "--- last lines of $2:" >&2
    tail -n 20 "$2" >&2
  fi
  exit 77
}

# slurm_poll TIMEOUT WHAT CMD...: runs CMD every 0.2 s until it succeeds; returns 1 (with a
# message naming WHAT) after TIMEOUT seconds.
slurm_poll() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" > /dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "slurm_poll: timed out after ${timeout} s waiting for $what" >&2
      return 1
    fi
    sleep 0.2
  done
}

# Two free TCP ports, so that two test clusters on one machine do not collide.
_slurm_free_ports() {
  python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

_slurm_check_prerequisites() {
  [ "$(id -u)" -eq 0 ] ||
    slurm_skip "needs root (the daemons run as SlurmUser=root here); the uid is $(id -u)"
  local missing=() c
  for c in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo scancel srun python3; do
    command -v "$c" > /dev/null || missing+=("$c")
  done
  [ ${#missing[@]} -eq 0 ] ||
    slurm_skip "missing ${missing[*]}: install them with scripts/setup.sh --slurm (packages
munge slurmctld slurmd slurm-client)"
}

# The nodes, "NAME=ADDRESS" each: the one of localhost unless STOKER_SLURM_NODES names others.
_slurm_nodes() { echo "${STOKER_SLURM_NODES:-localhost=127.0.0.1}"; }

_slurm_write_config() {
  local dir=$1 ctld_port=$2 slurmd_port=$3 first node names=""
  first=$(_slurm_nodes | awk '{print $1}')
  cat > "$dir/slurm.conf" <<EOF
# Written by tests/slurm/cluster.sh: a test cluster living in $dir.
ClusterName=stokertest
SlurmctldHost=${first%%=*}(${first#*=})
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
EnforcePartLimits=ALL
SchedulerParameters=batch_sched_delay=0,sched_interval=1
MinJobAge=3600
MpiDefault=none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
EOF
  for node in $(_slurm_nodes); do
    echo "NodeName=${node%%=*} NodeAddr=${node#*=} CPUs=${STOKER_SLURM_CPUS:-8} State=UNKNOWN" \
      >> "$dir/slurm.conf"
    mkdir -p "$dir/spool-${node%%=*}"
    names+="${names:+,}${node%%=*}"
  done
  echo "PartitionName=test Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4" \
    >> "$dir/slurm.conf"
  printf 'IgnoreSystemd=yes\n' > "$dir/cgroup.conf"
}

# _slurm_daemon NAME LOG CMD...: starts CMD in the background, records its PID and log.
_slurm_daemon() {
  local name=$1 log=$2
  shift 2
  "$@" >> "$log" 2>&1 &
  _slurm_pids+=("$!")
  _slurm_names+=("$name")
  _slurm_logs+=("$log")
}

# _slurm_alive INDEX: the daemon must still run, or the test is skipped with its log.
_slurm_alive() {
  kill -0 "${_slurm_pids[$1]}" 2> /dev/null ||
    slurm_skip "${_slurm_names[$1]} exited right after starting" "${_slurm_logs[$1]}"
}

# Every daemon after munged (slurmctld, then each node's slurmd) must still run.
_slurm_all_alive() {
  local i
  for ((i = 1; i < ${#_slurm_pids[@]}; i++)); do _slurm_alive "$i"; done
}

# Every node idle.
_slurm_node_idle() {
  [ "$(sinfo -h -N -o %t 2> /dev/null | grep -c '^idle$')" = "$(_slurm_nodes | wc -w)" ]
}

# _slurm_on NODE COMMAND...: becomes COMMAND on node NODE (on one node: COMMAND here).
_slurm_on() {
  if [ -n "${STOKER_SLURM_ON_NODE:-}" ]; then exec "$STOKER_SLURM_ON_NODE" "$@"; fi
  exec "${@:2}"
}

slurm_start() {
  _slurm_check_prerequisites
  local started=$SECONDS ports
  STOKER_SLURM_DIR=$(mktemp -d "${STOKER_SLURM_BASE:-${TMPDIR:-/tmp}}/stoker-slurm.XXXXXX")
  # munged wants its socket's folders searchable by all; mktemp makes 0700 folders.
  chmod 0755 "$STOKER_SLURM_DIR"
  mkdir -p "$STOKER_SLURM_DIR"/{munge,state}
  chmod 0755 "$STOKER_SLURM_DIR/munge"
  trap _slurm_exit EXIT
  ports=$(_slurm_free_ports) || slurm_skip "could not find two free TCP ports"
  _slurm_write_config "$STOKER_SLURM_DIR" $ports
  export SLURM_CONF="$STOKER_SLURM_DIR/slurm.conf"
  local d=$STOKER_SLURM_DIR
  mungekey --create --keyfile="$d/munge/munge.key" > "$d/munged.log" 2>&1 ||
    slurm_skip "mungekey could not create a key" "$d/munged.log"
  _slurm_daemon munged "$d/munged.log" munged --foreground --force \
    --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munged.log" --seed-file="$d/munge/seed"
  slurm_poll 10 "the munge socket" test -S "$d/munge/munge.socket" ||
    { _slurm_alive 0; slurm_skip "munged made no socket in 10 s" "$d/munged.log"; }
  local first node i
  first=$(_slurm_nodes | awk '{print $1}')
  _slurm_daemon slurmctld "$d/slurmctld.log" _slurm_on "${first%%=*}" slurmctld -D -f "$SLURM_CONF"
  for node in $(_slurm_nodes); do
    _slurm_daemon slurmd "$d/slurmd-${node%%=*}.log" \
      _slurm_on "${node%%=*}" slurmd -D -f "$SLURM_CONF" -N "${node%%=*}"
  done
  for i in 1 2; do
    sleep 0.3
    _slurm_all_alive
  done
  if ! slurm_poll 30 "every node to be idle" _slurm_node_idle; then
    _slurm_all_alive
    echo "sinfo: $(sinfo -h -N -o '%N %t %E' 2>&1)" >&2
    slurm_skip "the node did not become idle in 30 s" "$d/slurmctld.log"
  fi
  echo "slurm: cluster of $(_slurm_nodes | wc -w) node(s) up in $((SECONDS - started)) s in $d" \
    "(partition, nodes, CPUs, state: $(sinfo -h -o '%P %D %c %t'))"
}

# slurm_submit [VAR=VALUE...] SBATCH_ARGS...: submits a batch job with these variables added to
# the environment it inherits (sbatch passes the environment on); prints the job's id.
slurm_submit() {
  local vars=() out
  while [ $# -gt 0 ] && [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
    vars+=("$1")
    shift
  done
  out=$(export "${vars[@]}" && sbatch --parsable "$@") ||
    { echo "slurm_submit: sbatch $* failed" >&2; return 1; }
  echo "${out%%;*}"
}

# slurm_field ID KEY: the value of KEY in `scontrol show job ID` (one line), empty when absent.
slurm_field() {
  scontrol show job -o "$1" 2> /dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

_slurm_done() {
  case "$(slurm_field "$1" JobState)" in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) ;;
    *) return 1 ;;
  esac
}

# slurm_wait_done ID TIMEOUT: polls until the job has ended for good (a requeued job is pending
# again, not done); prints its final JobState. Returns 1 on timeout (the job still runs).
slurm_wait_done() {
  slurm_poll "$2" "job $1 to end" _slurm_done "$1" ||
    { echo "job $1 is still $(slurm_field "$1" JobState) after $2 s" >&2; return 1; }
  slurm_field "$1" JobState
}

# slurm_stop: cancels the cluster's jobs, then stops slurmd, slurmctld and munged by their PIDs.
slurm_stop() {
  [ ${#_slurm_pids[@]} -gt 0 ] || return 0
  local started=$SECONDS jobs i pid
  jobs=$(squeue -h -o %i 2> /dev/null || true)
  if [ -n "$jobs" ]; then
    scancel $jobs 2> /dev/null || true
    slurm_poll 15 "the cancelled jobs to end" test -z "$(squeue -h -o %i 2> /dev/null)" || true
  fi
  # slurmd and slurmctld first (together: each takes ~2 s), munged last (they talk to it).
  for ((i = ${#_slurm_pids[@]} - 1; i >= 0; --i)); do
    [ "${_slurm_names[$i]}" = munged ] || kill -TERM "${_slurm_pids[$i]}" 2> /dev/null || true
  done
  for ((i = ${#_slurm_pids[@]} - 1; i >= 0; --i)); do
    pid=${_slurm_pids[$i]}
    [ "${_slurm_names[$i]}" != munged ] || kill -TERM "$pid" 2> /dev/null || true
    slurm_poll 10 "${_slurm_names[$i]} (pid $pid) to exit" _slurm_gone "$pid" ||
      kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  _slurm_pids=()
  _slurm_names=()
  _slurm_logs=()
  echo "slurm: daemons stopped in $((SECONDS - started)) s"
}

# A child that has exited stays a zombie until waited for, and kill -0 still reaches a zombie.
_slurm_gone() {
  [ ! -e "/proc/$1/stat" ] || [ "$(sed 's/^.*) //' "/proc/$1/stat" | cut -c1)" = Z ]
}

_slurm_exit() {
  local rc=$?
  slurm_stop
  if [ -n "$STOKER_SLURM_DIR" ]; then
    if [ "${STOKER_SLURM_KEEP:-0}" = 1 ]; then
      echo "slurm: kept $STOKER_SLURM_DIR (STOKER_SLURM_KEEP=1)" >&2
    else
      rm -rf "$STOKER_SLURM_DIR"
    fi
  fi
  if [ -n "$STOKER_SLURM_ON_EXIT" ]; then eval "$STOKER_SLURM_ON_EXIT"; fi
  exit "$rc"
}
