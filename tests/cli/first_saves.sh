#!/usr/bin/env bash
# A job killed during its first saves can always be run again and goes on. Ten trials, each a run
# on 2 ranks saving every 2 steps whose rank files take 600 ms to reach the disk in the first save
# and 150 ms in the others (injected fsync delays), one rank killed with SIGKILL at a random
# moment of its first saves (what is left: no step folder complete, or the first few); then the
# same command again, which must go on (from step 0 when no step is complete, the step folders
# set aside, saying so in one line; else from the newest complete one) to the last step, and
# `stoker audit` of the chain of traces must be clean: no token lost, none delivered twice.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work first-saves
background=""
# The run in the background: its ranks, its mpirun and the shell that runs it.
stop_background() {
  [ -n "$background" ] || return 0
  pkill -9 -f "^$STOKER run .*--checkpoint-dir $ckpt " 2> /dev/null || true
  pkill -9 -P "$background" 2> /dev/null || true
}
trap 'stop_background; rm -rf "$work"' EXIT
"$STOKER" -q synth "$work/corpus" --dataset a:6000:40 --dataset b:3000:100 --files 2 --seed 4 \
  --unique-tokens > /dev/null
steps=40  # long enough to be running still when the kill comes
run() {  # run LOG [ENV...]: the job's command, the same every time
  local log=$1
  shift
  env "$@" $MPIRUN -np 2 "$STOKER" run --data "$work/corpus" --seq-len 32 --batch-size 2 \
    --logical-shards 16 --steps "$steps" --save-every 2 --checkpoint-dir "$ckpt" \
    --trace "$trace" --resume > "$log.out" 2> "$log.err"
}

fresh=0
for trial in $(seq 10); do
  ckpt=$work/ckpt-$trial trace=$work/trace-$trial
  run "$work/killed-$trial" STOKER_FAULTS="fsync:.ckpt:1:delay=600,fsync:.ckpt:*:delay=150" &
  background=$!
  for _ in $(seq 300); do
    [ -d "$ckpt/step-2" ] && break
    sleep 0.05
  done
  [ -d "$ckpt/step-2" ] || fail "trial $trial: no first save in 15 s: $(cat "$work/killed-$trial.err")"
  # Odd trials within the first save (its rank files take 600 ms: none complete, with room for
  # a busy machine), even ones after it, in or after the second.
  if ((trial % 2)); then sleep "0.0$((RANDOM % 10))"; else sleep "0.$((60 + RANDOM % 35))"; fi
  mapfile -t ranks < <(pgrep -f "^$STOKER run .*--checkpoint-dir $ckpt " || true)
  [ "${#ranks[@]}" = 2 ] ||
    fail "trial $trial: ${#ranks[@]} ranks to kill, not 2: $(cat "$work/killed-$trial.err")"
  kill -9 "${ranks[$((RANDOM % 2))]}"
  wait "$background" || true
  background=""
  left=$(ls "$ckpt")
  run "$work/again-$trial" ||
    fail "trial $trial: the run again failed (left: $(echo $left)): $(cat "$work/again-$trial.err")"
  if grep -q "none of the .* step folders in $ckpt is complete" "$work/again-$trial.err"; then
    fresh=$((fresh + 1))
    grep -q "moved the interrupted step $ckpt/step-2 aside" "$work/again-$trial.err" ||
      fail "trial $trial: started afresh without setting step-2 aside: $(cat "$work/again-$trial.err")"
  fi
  timeout 60 "$STOKER" audit "$trace" --data "$work/corpus" --json > "$work/audit-$trial.json" ||
    fail "trial $trial: stoker audit failed: $(cat "$work/audit-$trial.json")"
  python3 - "$work/audit-$trial.json" "$steps" <<'EOF' || fail "trial $trial: the audit is not clean (left: $(echo $left))"
import json, sys
report, steps = json.load(open(sys.argv[1])), int(sys.argv[2])
ends = [r["valid_end"] for r in report["runs"]]
problems = [] if report["clean"] else report["problems"][:5]
if max(ends) != steps:
    problems.append(f"the runs end at {ends}, not {steps}")
sys.exit("\n".join(map(str, problems)) or None)
EOF
  echo "ok: trial $trial: killed with $(echo $left) left; run again to step $steps, audit clean"
done
[ "$fresh" -ge 1 ] || fail "no trial left its step folders all incomplete: the case is not tested"
echo "PASS: 10 jobs killed during their first saves went on ($fresh from step 0, no step complete)"
