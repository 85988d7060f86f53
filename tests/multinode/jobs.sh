#!/usr/bin/env bash
# The job scripts and the checkpoint folder's lock across nodes (tests/multinode/testbed.sh: 3
# network-namespace nodes of 2 slots). jobs/mpirun/train.sh takes the nodes from mpirun's own
# options (MPIRUN: the test bed's mpirun, with its hostfile) and trains on 3 nodes.
# Then run A saves on nodes 0 and 1; a run on node 2 into the same folder is refused (exit 3,
# naming A's host, which is node 0's); both of A's nodes die (every process SIGKILLed) and the
# run on node 2 takes the lock at once and goes on from A's newest step. Skipped (77) where
# the nodes cannot be made.
# Environment: STOKER, STOKER_SOURCE (the checkout); STOKER_TRAIN when built.
set -euo pipefail
source "$(dirname "$0")/common.sh"
: "${STOKER:?STOKER must name the stoker program}" "${STOKER_SOURCE:?}"
multinode_start

if [ -n "${STOKER_TRAIN:-}" ]; then
  (export STOKER STOKER_TRAIN MPIRUN=$TESTBED_MPIRUN NP=6 STEPS=10 CORPUS=$corpus \
     CHECKPOINT_DIR=$work/job-ck SEQ_LEN=32 BATCH_SIZE=2 SAVE_EVERY=5 \
     TRAIN_ARGS="--dim 16 --layers 1 --heads 2"
   timeout 180 "$STOKER_SOURCE/jobs/mpirun/train.sh") > "$work/job.out" 2> "$work/job.err" ||
    { tail -c 3000 "$work/job.err" >&2; fail "jobs/mpirun/train.sh on 6 ranks"; }
  python3 - "$work/job.out" <<'PY' || fail "jobs/mpirun/train.sh: $(tail -n 1 "$work/job.out")"
import json, sys
result = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert (result["ranks"], result["end_step"]) == (6, 10), result
PY
  echo "ok: jobs/mpirun/train.sh on 3 nodes, the nodes in MPIRUN"
fi

ckpt="$work/ckpt"
common=(--data "$corpus" --seq-len 32 --batch-size 2 --logical-shards 24 --checkpoint-dir "$ckpt"
        --save-every 20 --resume)
# A: nodes 0 and 1, saving until its nodes die.
"$TESTBED_MPIRUN" -np 4 "$STOKER" run "${common[@]}" --steps 100000000 \
  > "$work/a.out" 2> "$work/a.err" &
for _ in $(seq 150); do
  [ -d "$ckpt/step-40" ] && break
  sleep 0.2
done
[ -d "$ckpt/step-40" ] || { cat "$work/a.err" >&2; fail "run A saved no step-40"; }
holder=$(cat "$ckpt/.stoker-lock")
[[ "$holder" == "host ${TESTBED_NODES[0]}, pid "* ]] ||
  fail "the lock file does not name A's first node ${TESTBED_NODES[0]}: '$holder'"
rc=0
testbed_on 2 "$STOKER" run "${common[@]}" --steps 10 > "$work/b.out" 2>&1 || rc=$?
if [ "$rc" != 3 ] || ! grep -q -F "is in use by another run ($holder)" "$work/b.out"; then
  fail "a run on node 2 into A's folder: exit $rc, not 3 naming A: $(cat "$work/b.out")"
fi
echo "ok: a run on node 2 is refused while A holds the folder on nodes 0 and 1 ($holder)"

testbed_kill_node 0
testbed_kill_node 1
wait || true
newest=$("$STOKER" steps "$ckpt" --newest 2> /dev/null | cut -f1)
[ -n "$newest" ] || fail "no complete step after A's nodes died"
"$STOKER" steps "$ckpt" 2>&1 | tail -n 4
rc=0
testbed_on 2 "$STOKER" run "${common[@]}" --steps $((newest + 20)) \
  > "$work/c.out" 2> "$work/c.err" || rc=$?
[ "$rc" = 0 ] || { cat "$work/c.err" >&2; fail "the run on node 2 after A's nodes died: exit $rc"; }
python3 - "$work/c.out" "$newest" <<'PY' || fail "C: $(tail -n 1 "$work/c.out")"
import json, sys
result = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert result["start_step"] == int(sys.argv[2]) and result["ranks"] == 1, result
PY
echo "ok: A's nodes died; node 2 took the lock at once and went on from A's newest complete" \
  "step ($newest)"
echo "PASS"
