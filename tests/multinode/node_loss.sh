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
# once. Prints each round's loss, when it struck and how long the job took to end.
# Environment: STOKER; NODE_LOSS_SEED (default 1), NODE_LOSS_ROUNDS.
set -euo pipefail
source "$(dirname "$0")/common.sh"
: "${STOKER:?STOKER must name the stoker program}"
seed=${NODE_LOSS_SEED:-1}
rounds=${NODE_LOSS_ROUNDS:-10}
RANDOM=$seed
FAIL_CONTEXT="NODE_LOSS_SEED=$seed"
multinode_start

ck="$work/ckpt" trace="$work/trace"
common=(--data "$corpus" --seq-len 32 --batch-size 2 --logical-shards 24 --seed 4
        --checkpoint-dir "$ck" --save-every 3 --trace "$trace" --resume)
# Open MPI's launcher notices a silent node by TCP keepalive on its out-of-band channel: after
# keepalive_time + probes x intvl seconds (by default 300 + 9 x 20 = 480), here 2 + 2 x 1.
keepalive=(--mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1
           --mca oob_tcp_keepalive_probes 2)

# newest: the newest complete step of the folder (0 when none).
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

for ((round = 1; round <= rounds; round++)); do
  lost=$((1 + RANDOM % 2)) other=$((3 - lost))
  mode="kill"
  ((round > rounds / 2)) && mode="link"
  faults=()
  ((RANDOM % 2)) && faults=(-x "STOKER_FAULTS=fsync:.ckpt:*:delay=$((20 + RANDOM % 60))")
  before=$(newest)
  "$TESTBED_MPIRUN" -np 6 "${keepalive[@]}" "${faults[@]}" "$STOKER" run "${common[@]}" \
    --steps 100000000 > "$work/round-$round.out" 2> "$work/round-$round.err" &
  job=$!
  for _ in $(seq 300); do
    [ "$(newest)" -gt "$before" ] && break
    sleep 0.1
  done
  [ "$(newest)" -gt "$before" ] || { cat "$work/round-$round.err" >&2; fail "round $round saved nothing"; }
  sleep "0.$((RANDOM % 10))"
  start=$SECONDS
  if [ "$mode" = kill ]; then
    testbed_kill_node "$lost"
    ended_by 30 "$job"
  else
    testbed_link "$lost" down
    ended_by 40 "$job"
  fi
  took=$((SECONDS - start))
  sleep 1  # the daemons' last exits
  for node in 0 1 2; do
    left=$(ip netns pids "${TESTBED_NODES[$node]}")
    [ -z "$left" ] || fail "round $round: processes left on node $node: $(ps -o comm= -p "$left")"
  done
  [ "$mode" = kill ] || testbed_link "$lost" up
  saved=$(newest)
  # The resume on the two other nodes: node 0 and the one not lost.
  timeout 120 "$TESTBED_MPIRUN" -np 4 --host "${TESTBED_ADDRS[0]}:2,${TESTBED_ADDRS[$other]}:2" \
    "$STOKER" run "${common[@]}" --steps $((saved + 4)) > "$work/resume-$round.out" \
    2> "$work/resume-$round.err" ||
    { cat "$work/resume-$round.err" >&2; fail "round $round: the resume on nodes 0 and $other"; }
  echo "round $round: node $lost lost ($mode${faults[*]:+, slow saves}) after step $saved was" \
    "saved; the job ended in $took s; resumed on nodes 0 and $other to step $((saved + 4))"
done

audit audit 0 "$trace" --data "$corpus" --json
python3 - "$work/audit.out" <<'PY' || fail "the audit: $(head -c 2000 "$work/audit.out")"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["clean"], report["problems"][:5]
PY
echo "PASS: $rounds nodes lost, each job ended by itself and left nothing running; every resume" \
  "on the other nodes went on from the newest complete step; the audit of the chain is clean"
