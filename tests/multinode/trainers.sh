#!/usr/bin/env bash
# Jobs across nodes (tests/multinode/testbed.sh: 3 network-namespace nodes of 2 slots each, Open
# MPI over TCP between them): the 6 ranks run on 3 hosts; `stoker run` saves on 3 nodes and
# resumes on 2 (4 ranks, a rescale); stoker-train trains on 3 nodes x 2 ranks and the loss
# falls; so does train.py, whose gloo rendezvous finds rank 0's address with
# nothing set by hand (no node resolves another's host name here); `stoker audit` of each chain
# is clean (every token once). Skipped (77) where the nodes cannot be made.
# Environment: STOKER, STOKER_SOURCE (the checkout); STOKER_TRAIN and STOKER_PYTHONPATH (the folder of the stoker package)
# when built.
set -euo pipefail
source "$(dirname "$0")/common.sh"
: "${STOKER:?STOKER must name the stoker program}" "${STOKER_SOURCE:?}"
multinode_start

# across NAME RANKS PROGRAM ARGS...: PROGRAM on RANKS ranks across the nodes (the first RANKS / 2
# nodes), stdout in $work/NAME.out, stderr NAME.err; fails the test when it fails.
across() {
  local name=$1 ranks=$2 start=$SECONDS
  shift 2
  timeout 300 "$TESTBED_MPIRUN" -np "$ranks" "$@" > "$work/$name.out" 2> "$work/$name.err" ||
    { tail -c 3000 "$work/$name.err" >&2; fail "$name: $* on $ranks ranks across the nodes"; }
  echo "$name: $((SECONDS - start)) s"
}

across hosts 6 hostname
[ "$(sort -u "$work/hosts.out" | wc -l)" = 3 ] ||
  fail "6 ranks ran on other than 3 hosts: $(sort "$work/hosts.out" | uniq -c | tr '\n' ' ')"
echo "ok: 6 ranks on 3 hosts: $(sort -u "$work/hosts.out" | tr '\n' ' ')"

run_args=(--data "$corpus" --seq-len 32 --batch-size 2 --logical-shards 24 --seed 7
          --checkpoint-dir "$work/run-ck" --save-every 5 --trace "$work/run-trace" --resume)
across run-6 6 "$STOKER" run "${run_args[@]}" --steps 20
across run-4 4 "$STOKER" run "${run_args[@]}" --steps 40
audit_clean "$work/run-trace" "6:0-20 4:20-40"
echo "ok: stoker run saved on 3 nodes, resumed on 2; the audit is clean"

# trains NAME STEPS PROGRAM...: the trainer PROGRAM on 3 nodes x 2 ranks to STEPS: its loss
# falls, and the audit of its trace is clean.
trains() {
  local name=$1 steps=$2
  shift 2
  across "$name" 6 "$@" --data "$corpus" --seq-len 32 --batch-size 4 --seed 3 --dim 32 \
    --layers 1 --heads 2 --lr 0.01 --log-every 10 --steps "$steps" --trace "$work/$name-trace"
  python3 - "$work/$name.out" <<'PY' || fail "$name across the nodes: $(tail -n 1 "$work/$name.out")"
import json, sys
result = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert result["ranks"] == 6 and result["loss_end"] < result["loss_start"] - 0.5, result
PY
  audit_clean "$work/$name-trace" "6:0-$steps"
  echo "ok: $name on 3 nodes x 2 ranks: the loss falls; audit clean"
}
if [ -n "${STOKER_TRAIN:-}" ]; then
  trains stoker-train 30 "$STOKER_TRAIN"
fi
if [ -n "${STOKER_PYTHONPATH:-}" ]; then  # its rendezvous found with nothing set by hand
  trains train.py 20 -x PYTHONPATH="$STOKER_PYTHONPATH" "$STOKER_SOURCE/src/train/train.py"
fi
echo "PASS"
