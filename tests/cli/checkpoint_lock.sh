#!/usr/bin/env bash
# One run per checkpoint folder, with real processes: run A (`stoker run`, 2 ranks under mpirun)
# saves into a folder; run B on the same folder (1 rank, --resume, and 2 ranks fresh; and a
# `stoker reshard` into it, `stoker steps --interrupted --remove` of it, stoker-train) is
# refused at start-up on every rank with exit 3 (busy), naming the folder and A's host and pid,
# once, and touches nothing (A's step folders are neither set aside nor deleted); A is then
# killed with SIGKILL, and run C gets the lock at once (the kernel released it with A) and goes
# on from A's newest step. A checkpoint or trace folder that cannot be written or lacks the space
# of a step is refused at start-up.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags); STOKER_TRAIN (stoker-train,
# when built with libtorch) and STOKER_PYTHONPATH (train.py, when the Python package is built).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work ckpt-lock
"$STOKER" -q synth "$work/corpus" --dataset a:4000:60 --dataset b:2000:200 --files 4 --seed 2 \
  > /dev/null
ckpt="$work/ckpt dir"
common=(--data "$work/corpus" --seq-len 64 --batch-size 2 --logical-shards 16
        --checkpoint-dir "$ckpt" --save-every 20)

# A: saves for ever, until killed.
setsid $MPIRUN -np 2 "$STOKER" run "${common[@]}" --steps 100000000 --resume \
  > "$work/a.out" 2> "$work/a.err" &
a=$!
trap 'kill -9 -- -$a 2> /dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  [ -d "$ckpt/step-40" ] && break
  sleep 0.2
done
[ -d "$ckpt/step-40" ] || { cat "$work/a.err" >&2; fail "run A saved no step-40"; }
holder=$(cat "$ckpt/.stoker-lock")
[[ "$holder" == "host $(hostname), pid "*", started "* ]] ||
  fail "the lock file does not say who holds it: '$holder'"

# B: refused on every rank, once, naming the folder and A; nothing of A's touched.
expect_refused() {
  local name=$1 rc=0 count
  shift
  "$@" > "$work/b.out" 2>&1 || rc=$?
  [ "$rc" = 3 ] || fail "$name: exit $rc, not 3 (busy): $(cat "$work/b.out")"
  count=$(grep -c -F "checkpoint folder $ckpt is in use by another run ($holder)" \
          "$work/b.out" || true)
  [ "$count" = 1 ] || fail "$name: the refusal printed $count times: $(cat "$work/b.out")"
  ! ls -d "$ckpt"/*.interrupted* > /dev/null 2>&1 || fail "$name: set A's steps aside"
  [ -d "$ckpt/step-20" ] || fail "$name: A's step-20 is gone"
  echo "ok: $name: refused, naming the folder and A ($holder)"
}
expect_refused "B on 1 rank, --resume" "$STOKER" run "${common[@]}" --steps 10 --resume
expect_refused "B on 2 ranks, fresh" $MPIRUN -np 2 "$STOKER" run "${common[@]}" --steps 10 \
  --start-over
expect_refused "a reshard into A's folder" "$STOKER" reshard "$ckpt/step-20" --world-size 1 \
  --out "$ckpt/step-20-for-1"
[ ! -e "$ckpt/step-20-for-1" ] || fail "a reshard published a step into A's folder"
expect_refused "removing set-aside steps of A's folder" "$STOKER" steps "$ckpt" --interrupted \
  --remove --keep 0
if [ -n "${STOKER_TRAIN:-}" ]; then
  expect_refused "stoker-train on A's folder" "$STOKER_TRAIN" --data "$work/corpus" --steps 10 \
    --checkpoint-dir "$ckpt" --resume --dim 16 --layers 1 --heads 2
fi
if [ -n "${STOKER_PYTHONPATH:-}" ]; then
  expect_refused "train.py on A's folder" env PYTHONPATH="$STOKER_PYTHONPATH" /usr/bin/python3 \
    "$(dirname "$0")/../../src/train/train.py" --data "$work/corpus" --steps 10 \
    --checkpoint-dir "$ckpt" --resume --dim 16 --layers 1 --heads 2
fi
kill -0 "$a" || fail "run A died while B was refused: $(cat "$work/a.err")"

# A killed with SIGKILL, mpirun and its ranks: the lock goes with rank 0; C resumes from A's
# newest complete step.
kill -9 -- "-$a"
pkill -9 -f -- "--checkpoint-dir $ckpt" || true
wait "$a" 2> /dev/null || true
for _ in $(seq 50); do
  pgrep -f -- "--checkpoint-dir $ckpt" > /dev/null || break
  sleep 0.1
done
newest=$("$STOKER" steps "$ckpt" --newest 2> /dev/null | cut -f1)
[ -n "$newest" ] || fail "no complete step of A"
rc=0
timeout 60 "$STOKER" run "${common[@]}" --steps $((newest + 20)) --resume > "$work/c.out" \
  2> "$work/c.err" || rc=$?
[ "$rc" = 0 ] || { cat "$work/c.err" >&2; fail "run C after A was killed: exit $rc"; }
grep -q "\"steps\":$((newest + 20))" "$work/c.out" || fail "run C: $(cat "$work/c.out")"
grep -q "host $(hostname), pid " "$ckpt/.stoker-lock" || fail "C did not write the lock file"
echo "ok: A killed with SIGKILL; C took the lock and went on from step $newest"

# Storage problems are found at start-up, before the first step: a folder that cannot be
# written (EROFS from the I/O seam: as root, permissions would not stop the write), and one with
# less free space than its newest step takes (a sparse file of 1 TB in that step).
expect_start_refused() {
  local name=$1 pattern=$2 rc=0
  shift 2
  "$@" > "$work/d.out" 2>&1 || rc=$?
  [ "$rc" = 1 ] && grep -q -F -- "$pattern" "$work/d.out" ||
    fail "$name: exit $rc: $(cat "$work/d.out")"
  ! grep -q '"steps"' "$work/d.out" || fail "$name: the run went on: $(cat "$work/d.out")"
  echo "ok: $name: refused at start-up: $(grep -m1 -F -- "$pattern" "$work/d.out")"
}
expect_start_refused "a read-only checkpoint folder" "cannot save into $ckpt: its lock file" \
  env STOKER_FAULTS="open:.stoker-lock:*:erofs" $MPIRUN -np 2 "$STOKER" run "${common[@]}" \
  --steps $((newest + 40)) --resume
newest=$("$STOKER" steps "$ckpt" --newest 2> /dev/null | cut -f1)
truncate -s 1T "$ckpt/step-$newest/huge"
expect_start_refused "a full file system" "less than the 1,099,51" \
  "$STOKER" run "${common[@]}" --steps $((newest + 40)) --resume
rm "$ckpt/step-$newest/huge"
# The same for the trace folder: one that cannot be written, and one with less room than a step
# of traces takes, as the run this one goes on from wrote them (a sparse file of 10 TB in its run
# folder).
trace="$work/trace"
"$STOKER" run "${common[@]}" --steps $((newest + 20)) --resume --trace "$trace" > "$work/t.out" 2>&1 ||
  fail "a run with --trace failed: $(cat "$work/t.out")"
expect_start_refused "a read-only trace folder" "$trace/from-$((newest + 20))/run.json" \
  env STOKER_FAULTS="open:run.json:*:erofs" "$STOKER" run "${common[@]}" \
  --steps $((newest + 40)) --resume --trace "$trace"
truncate -s 10T "$trace/from-$newest/huge"
expect_start_refused "a full trace file system" "of one step of traces (as $trace/from-$newest" \
  "$STOKER" run "${common[@]}" --steps $((newest + 40)) --resume --trace "$trace"
rm "$trace/from-$newest/huge"
