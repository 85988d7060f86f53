#!/usr/bin/env bash
# A node lost mid-run (tests/multinode/testbed.sh: 3 network-namespace nodes of 2 slots). In
# each of NODE_LOSS_ROUNDS rounds (default 10) a 6-rank `stoker run` saving every 3 steps loses
# node 1 or 2 at a random moment after a save began, in half the rounds while saves are slowed
# (STOKER_FAULTS, for testing only) so that the loss lands during one: in the first half every
# process of the node is SIGKILLed, in the second its network link goes down. Each time the job
# must end by itself within a bound (the kill: 30 s; the link: Open MPI's out-of-band keepalive,
# set here to 2 s + 2 probes x 1 s, with 36 s to spare), leave no process on any node, and a
# resume on the two other nodes (4 ranks) from the newest complete step must run. At the end
# `stoker audit` of the whole chain is clean: counting the steps that were saved, every token
# once. Then stoker-train loses a node the same way (killed) and resumes with its model. Prints
# each loss, when it struck and how long the job took to end.
# Environment: STOKER, STOKER_TRAIN (optional); NODE_LOSS_SEED (default 1), NODE_LOSS_ROUNDS.
set -euo pipefail
source "$(dirname "$0")/common.sh"
: "${STOKER:?STOKER must name the stoker program}"
seed=${NODE_LOSS_SEED:-1}
rounds=${NODE_LOSS_ROUNDS:-10}
RANDOM=$seed
# shellcheck disable=SC2034  # read by fail(), tests/common/test_lib.sh
FAIL_CONTEXT="NODE_LOSS_SEED=$seed"
multinode_start

# Open MPI's launcher notices a silent node by TCP keepalive on its out-of-band channel: after
# keepalive_time + probes x intvl seconds (by default 300 + 9 x 20 = 480), here 2 + 2 x 1.
keepalive=(--mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1
           --mca oob_tcp_keepalive_probes 2)

# newest: the newest complete step of $ck (0 when none).
newest() { "$STOKER" steps "$ck" --newest 2> /dev/null | cut -f1 | grep . || echo 0; }

# ended_by SECONDS PID: waits for PID (a job) up to SECONDS; fails the test when it runs on.
ended_by() {
  local limit=$1 pid=$2 start=$SECONDS
  while kill -0 "$pid" 2> /dev/null; do
    ((SECONDS - start < limit)) || fail "the job still runs $limit s after the loss"
    sleep 0.1
  done
  wait "$pid" || true
}

# cleared NODE SECONDS WHAT: no process runs on NODE within SECONDS, or the test fails naming them.
cleared() {
  local node=${TESTBED_NODES[$1]} left
  for _ in $(seq $(($2 * 10))); do
    [ -z "$(ip netns pids "$node")" ] && return 0
    sleep 0.1
  done
  left=$(ip netns pids "$node" | paste -sd,)
  [ -z "$left" ] || fail "$3: processes left on node $1 after $2 s: $(ps -o pid=,comm= -p "$left")"
}

# lose_node NAME MODE: the job ${job[@]} (a program and its flags; saving into $ck) on 6 ranks
# loses node 1 or 2 (MODE kill or link) at a random moment after a save began; it must end by
# itself and leave nothing running; then it resumes on the two other nodes, 4 steps further.
lose_node() {
  local name=$1 mode=$2 lost=$((1 + RANDOM % 2)) faults=() before pid start took node left saved
  local other=$((3 - lost))
  ((RANDOM % 2)) && faults=(-x "STOKER_FAULTS=fsync:.ckpt:*:delay=$((20 + RANDOM % 60))")
  before=$(newest)
  "$TESTBED_MPIRUN" -np 6 "${keepalive[@]}" "${faults[@]}" "${job[@]}" --steps 100000000 \
    > "$work/$name.out" 2> "$work/$name.err" &
  pid=$!
  # Up to 120 s (6 trainers loading libtorch on a loaded machine), and no longer than the job
  # runs: a job that could not start fails the test at once.
  start=$SECONDS
  while ((SECONDS - start < 120)) && kill -0 "$pid" 2> /dev/null; do
    [ "$(newest)" -gt "$before" ] && break
    sleep 0.1
  done
  [ "$(newest)" -gt "$before" ] || { cat "$work/$name.err" >&2; fail "$name saved nothing"; }
  sleep "0.$((RANDOM % 10))"
  start=$SECONDS
  if [ "$mode" = kill ]; then
    testbed_kill_node "$lost"
    ended_by 30 "$pid"
  else
    testbed_link "$lost" down
    ended_by 40 "$pid"
  fi
  took=$((SECONDS - start))
  # Nothing of the job may stay: on the other nodes once mpirun has ended (their daemons exit
  # right after it: within 10 s even on a loaded machine), on the lost one once it noticed (a
  # silent node's daemon by its own keepalive: within 30 s).
  cleared 0 10 "$name"
  cleared "$other" 10 "$name"
  cleared "$lost" 30 "$name"
  [ "$mode" = kill ] || testbed_link "$lost" up
  saved=$(newest)
  timeout 120 "$TESTBED_MPIRUN" -np 4 --host "${TESTBED_ADDRS[0]}:2,${TESTBED_ADDRS[$other]}:2" \
    "${job[@]}" --steps $((saved + 4)) > "$work/$name-resume.out" 2> "$work/$name-resume.err" ||
    { cat "$work/$name-resume.err" >&2; fail "$name: the resume on nodes 0 and $other"; }
  echo "$name: node $lost lost ($mode${faults[*]:+, slow saves}) after step $saved was saved;" \
    "the job ended in $took s; resumed on nodes 0 and $other to step $((saved + 4))"
}

ck="$work/ckpt"
job=("$STOKER" run --data "$corpus" --seq-len 32 --batch-size 2 --logical-shards 24 --seed 4
     --checkpoint-dir "$ck" --save-every 3 --trace "$work/trace" --resume)
for ((round = 1; round <= rounds; round++)); do
  if ((round <= rounds / 2)); then lose_node "round-$round" kill; else lose_node "round-$round" link; fi
done
audit_clean "$work/trace"
# The example trainer too: a node killed while it trains, resumed with its model on the others.
if [ -n "${STOKER_TRAIN:-}" ]; then
  ck="$work/train-ckpt"
  job=("$STOKER_TRAIN" --data "$corpus" --seq-len 32 --batch-size 2 --seed 4 --dim 16 --layers 1
       --heads 2 --checkpoint-dir "$ck" --save-every 3 --trace "$work/train-trace" --resume)
  lose_node stoker-train kill
  audit_clean "$work/train-trace"
fi
echo "PASS: $rounds nodes lost under stoker run and one under stoker-train; each job ended by" \
  "itself and left nothing running; every resume on the other nodes went on from the newest" \
  "complete step; the audits of the chains are clean"
