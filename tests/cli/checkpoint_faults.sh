#!/usr/bin/env bash
# Checkpoint faults as a user meets them, under mpirun -np 2 (3 where more ranks are the fault),
# each run under `timeout 60` so that a hang fails the test:
#   - the newest step lacks a rank file, or holds only a .tmp (a save killed half-way), or has an
#     empty loader/: --resume passes over it with one warning naming it and goes on from the
#     newest complete step (the dump proves which); `stoker inspect` of it fails naming the file;
#     many incomplete steps (the saves one rank never made) are one warning: how many, and per
#     pattern of missing files how many, the newest and the oldest;
#   - a truncated or a bit-flipped rank file in the newest step: passed over as incomplete, naming
#     the file, and --resume goes on from the step before; `stoker inspect` of it fails naming it;
#   - a checkpoint of another corpus or seed: refused, saying what differs;
#   - a rank file of another run (the same seed, corpus and shapes, another batch size) copied over
#     the same-named file of the newest step, at 2 and 3 ranks: --resume (which picked that step)
#     refuses it rather than pass it over, on the same rank count and rescaled to the other, and
#     so do `stoker inspect` and `stoker reshard`, naming the file and both runs (at 3 ranks a
#     rank file 0 of another run is named as such, the others outvoting it); the unmixed
#     folders resume, and save under a new run identity;
#   - more ranks than logical shards (fresh, resumed, or `stoker reshard --world-size`): refused;
# every error exits non-zero, printed once (by rank 0 only).
# Then a run saving every step is killed with SIGKILL at random moments, several times: each
# time the newest complete step is usable, and --resume goes on from it.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-ckpt-faults.XXXXXX")
background=""
cleanup() {
  if [ -n "$background" ]; then
    local pids
    mapfile -t pids < <(pgrep -P "$background" || true)
    kill -9 "${pids[@]}" "$background" 2> /dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

for name_seed in corpus:1 other:2; do
  "$STOKER" synth "$work/${name_seed%:*}" --dataset a:8000:40 --dataset b:4000:100 --files 2 \
    --seed "${name_seed#*:}" --unique-tokens > "$work/synth.log" 2>&1 ||
    { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
done
seq=32 batch=2
base=(--data "$work/corpus" --seq-len "$seq" --batch-size "$batch")
common=("${base[@]}" --logical-shards 16 --seed 4)
batch_bytes=$((batch * (seq + 1) * 8))

# The checkpoint every case starts from: steps 4, 8 and 12, saved by 2 ranks.
timeout 60 $MPIRUN -np 2 "$STOKER" run "${common[@]}" --steps 12 --save-every 4 \
  --checkpoint-dir "$work/base" > "$work/base.log" 2>&1 ||
  { cat "$work/base.log" >&2; fail "saving steps 4, 8, 12 at 2 ranks"; }
copy() { cp -r "$work/base" "$work/$1"; echo "$work/$1"; }

# once NAME PATTERN FILE: PATTERN (fixed text) appears exactly once in FILE, and rank 1 is silent.
once() {
  local count
  count=$(grep -o -F -- "$2" "$3" | wc -l || true)
  [ "$count" = 1 ] || fail "$1: '$2' printed $count times, not once:
$(cat "$3")"
  ! grep -q "\[rank 1\]" "$3" || fail "$1: rank 1 printed too:
$(cat "$3")"
}

# expect_error NAME NP PATTERN COMMAND...: `stoker COMMAND` at NP ranks fails (not by timeout),
# printing PATTERN once.
expect_error() {
  local name=$1 np=$2 pattern=$3 rc=0
  shift 3
  timeout 60 $MPIRUN -np "$np" "$STOKER" "$@" > "$work/out.txt" 2>&1 || rc=$?
  [ "$rc" != 124 ] || fail "$name: still running after 60 s (a hang?)"
  [ "$rc" != 0 ] || fail "$name: exited 0:
$(cat "$work/out.txt")"
  once "$name" "$pattern" "$work/out.txt"
  echo "ok: $name: $(grep -m1 -F -- "$pattern" "$work/out.txt")"
}

# expect_resumed NAME DIR STEP PATTERN...: --resume at 2 ranks from DIR goes on from STEP (its
# dump holds exactly the 3 batches after it), printing each PATTERN once.
expect_resumed() {
  local name=$1 dir=$2 step=$3 rc=0 r size
  shift 3
  timeout 60 $MPIRUN -np 2 "$STOKER" run "${common[@]}" --checkpoint-dir "$dir" --resume \
    --steps $((step + 3)) --dump "$dir.dump" > "$work/out.txt" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail "$name: --resume failed (exit $rc):
$(cat "$work/out.txt")"
  for r in 0 1; do
    size=$(stat -c %s "$dir.dump/rank-$r.bin")
    [ "$size" = $((3 * batch_bytes)) ] ||
      fail "$name: rank $r delivered $((size / batch_bytes)) batches to step $((step + 3)):" \
           "it did not resume from step $step"
  done
  for pattern in "$@"; do once "$name" "$pattern" "$work/out.txt"; done
  echo "ok: $name: resumed from step $step${1:+; warned: $(grep -m1 -F -- "$1" "$work/out.txt")}"
}

# --- Incomplete newest steps: passed over, with a warning naming them. ---
dir=$(copy missing)
rm "$dir/step-12/loader/rank-00001-of-00002.ckpt"
expect_resumed "missing rank file" "$dir" 8 \
  "passing over 1 incomplete checkpoint in $dir " \
  "$dir/step-12 (loader/rank-00001-of-00002.ckpt is missing)"
expect_error "inspect of a step missing a rank file" 2 \
  "$dir/step-12/loader/rank-00001-of-00002.ckpt is missing" inspect "$dir/step-12"

dir=$(copy killed-mid-save)
mv "$dir/step-12/loader/rank-00000-of-00002.ckpt" "$dir/step-12/loader/rank-00000-of-00002.ckpt.tmp"
rm "$dir/step-12/loader/rank-00001-of-00002.ckpt"
mkdir -p "$dir/step-16/loader"
expect_resumed "incomplete newest steps" "$dir" 8 \
  "passing over 2 incomplete checkpoints in $dir " \
  "2 like $dir/step-16 (loader holds no rank files), the oldest $dir/step-12;"

dir=$(copy many-incomplete)
rm "$dir/step-12/loader/rank-00001-of-00002.ckpt"
for step in 13 14 15 16; do
  cp -r "$work/base/step-12" "$dir/step-$step"
  rm "$dir/step-$step/loader/rank-00000-of-00002.ckpt"
done
expect_resumed "many incomplete steps" "$dir" 8 "passing over" \
  "passing over 5 incomplete checkpoints in $dir (a save was interrupted?): 4 like \
$dir/step-16 (loader/rank-00000-of-00002.ckpt is missing), the oldest $dir/step-13; \
$dir/step-12 (loader/rank-00001-of-00002.ckpt is missing); \`stoker steps $dir\` lists each"

# --- Corrupt files: a resume reads every rank file of a step before it takes it; a step with a
# damaged one is passed over as an incomplete one, naming the file. ---
dir=$(copy truncated)
file="$dir/step-12/loader/rank-00001-of-00002.ckpt"
truncate -s -7 "$file"
expect_resumed "truncated rank file" "$dir" 8 "passing over 1 incomplete checkpoint in $dir " \
  "$dir/step-12 (loader/rank-00001-of-00002.ckpt: not a valid stoker checkpoint"

dir=$(copy flipped)
file="$dir/step-12/loader/rank-00000-of-00002.ckpt"
python3 - "$file" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x04
open(sys.argv[1], "wb").write(bytes(data))
EOF
expect_resumed "bit-flipped rank file" "$dir" 8 "passing over 1 incomplete checkpoint in $dir " \
  "$dir/step-12 (loader/rank-00000-of-00002.ckpt: not a valid stoker checkpoint"
expect_error "inspect of a bit-flipped rank file" 2 "$file: not a valid stoker checkpoint" \
  inspect "$dir/step-12"

# --- Another corpus, another seed: refused, saying what differs. ---
dir=$(copy other-corpus)
other=("${common[@]}")
other[1]="$work/other"
expect_error "another corpus" 2 "corpus fingerprint: checkpoint" \
  run "${other[@]}" --checkpoint-dir "$dir" --resume --steps 20
grep -q -F "does not belong to this run" "$work/out.txt" ||
  fail "another corpus: $(cat "$work/out.txt")"
dir=$(copy other-seed)
expect_error "another seed" 2 "seed: checkpoint 4, now 5" \
  run "${base[@]}" --logical-shards 16 --seed 5 --checkpoint-dir "$dir" --resume --steps 20

# --- A rank file of another run: refused naming it, at 2 and 3 ranks. ---
# json_field FILE KEY: the value of KEY in the JSON object in FILE.
json_field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
for np in 2 3; do
  first=$(printf 'rank-00000-of-%05d.ckpt' "$np")
  last=$(printf 'rank-%05d-of-%05d.ckpt' $((np - 1)) "$np")
  for run_batch in a:2 b:3; do  # the same seed, corpus and shapes; another batch size
    run=${run_batch%:*}
    timeout 60 $MPIRUN -np "$np" "$STOKER" run --data "$work/corpus" --seq-len "$seq" \
      --batch-size "${run_batch#*:}" --logical-shards 16 --seed 4 --steps 8 --save-every 4 \
      --checkpoint-dir "$work/run-$run$np" > "$work/run.log" 2>&1 ||
      { cat "$work/run.log" >&2; fail "saving run $run at $np ranks"; }
    timeout 60 "$STOKER" inspect "$work/run-$run$np/step-8" --json > "$work/run-$run$np.json" \
      2> "$work/run.log" || { cat "$work/run.log" >&2; fail "inspect of run $run at $np ranks"; }
  done
  run_a=$(json_field "$work/run-a$np.json" run)
  run_b=$(json_field "$work/run-b$np.json" run)
  [[ $run_a =~ ^[0-9a-f]{32}$ && $run_b =~ ^[0-9a-f]{32}$ && $run_a != "$run_b" ]] ||
    fail "$np ranks: the runs' identities are '$run_a' and '$run_b', not two of 32 hex digits"
  dir="$work/mixed$np"
  cp -r "$work/run-a$np" "$dir"
  cp "$work/run-b$np/step-8/loader/$last" "$dir/step-8/loader/$last"
  says="$dir/step-8/loader/$last was saved by another run than $first of the same step folder \
(run $run_b, step 8; rank file 0: run $run_a, step 8)"
  expect_error "a rank file of another run, $np ranks" "$np" "$says" \
    run "${common[@]}" --checkpoint-dir "$dir" --resume --steps 12 --save-every 4
  expect_error "a rank file of another run, $np ranks resumed on $((5 - np))" $((5 - np)) "$says" \
    run "${common[@]}" --checkpoint-dir "$dir" --resume --steps 12
  ! grep -q -F "passing over" "$work/out.txt" || fail "$np ranks: the mixed step was passed over:
$(cat "$work/out.txt")"
  [ -d "$dir/step-8/loader" ] || fail "$np ranks: the mixed step was moved away: $(ls "$dir")"
  expect_error "inspect of a step with a rank file of another run, $np ranks" 1 "$says" \
    inspect "$dir/step-8"
  expect_error "reshard of a step with a rank file of another run, $np ranks" 1 "$says" \
    reshard "$dir/step-8" --world-size 1 --out "$work/mixed-resharded$np/step-8"
  ! ls -A "$work/mixed-resharded$np" | grep -q step-8 ||
    fail "$np ranks: a refused reshard left its output: $(ls -A "$work/mixed-resharded$np")"
  # `stoker steps` lists the mixed step as a resume sees it: not complete, naming the file.
  timeout 60 "$STOKER" steps "$dir" > "$work/steps.txt" 2>&1 ||
    fail "$np ranks: stoker steps of the mixed folder: $(cat "$work/steps.txt")"
  grep -F "$dir/step-8" "$work/steps.txt" | grep -qF "$last was saved by another run" &&
    ! grep -F "$dir/step-8" "$work/steps.txt" | grep -q "  complete  " ||
    fail "$np ranks: stoker steps lists the mixed step so: $(cat "$work/steps.txt")"
  if [ "$np" = 3 ]; then  # rank file 0 the stranger: the two others outvote it
    dir="$work/mixed-first$np"
    cp -r "$work/run-a$np" "$dir"
    cp "$work/run-b$np/step-8/loader/$first" "$dir/step-8/loader/$first"
    expect_error "rank file 0 of another run, 3 ranks" 3 "$dir/step-8/loader/$first was saved by \
another run than the 2 other rank files of the same step folder (run $run_b, step 8; the others: \
run $run_a, step 8)" run "${common[@]}" --checkpoint-dir "$dir" --resume --steps 12 --save-every 4
  fi
  # The unmixed folder resumes, and the resumed run saves under an identity of its own.
  timeout 60 $MPIRUN -np "$np" "$STOKER" run "${common[@]}" --checkpoint-dir "$work/run-a$np" \
    --resume --steps 12 --save-every 4 > "$work/run.log" 2>&1 ||
    { cat "$work/run.log" >&2; fail "$np ranks: run A's own folder did not resume"; }
  timeout 60 "$STOKER" inspect "$work/run-a$np/step-12" --json > "$work/resumed.json" ||
    fail "$np ranks: inspect of the resumed run's step 12"
  resumed=$(json_field "$work/resumed.json" run)
  [[ $resumed =~ ^[0-9a-f]{32}$ && $resumed != "$run_a" ]] ||
    fail "$np ranks: the resumed run saved under identity '$resumed' (the run it resumed: $run_a)"
  echo "ok: $np ranks: run A's folder resumed from step 8 and saved step 12 as run $resumed"
done

# --- More ranks than logical shards. ---
few=("${base[@]}" --logical-shards 2 --seed 4)
expect_error "3 ranks, 2 logical shards" 3 "3 ranks but only 2 logical shards" \
  run "${few[@]}" --steps 2
timeout 60 $MPIRUN -np 2 "$STOKER" run "${few[@]}" --steps 4 --save-every 4 \
  --checkpoint-dir "$work/few" > "$work/few.log" 2>&1 || { cat "$work/few.log" >&2; fail "few"; }
expect_error "resumed on 3 ranks, 2 logical shards" 3 "3 ranks but only 2 logical shards" \
  run "${few[@]}" --checkpoint-dir "$work/few" --resume --steps 8
expect_error "reshard to 3 ranks, 2 logical shards" 2 "--world-size 3 is outside [1, 2]" \
  reshard "$work/few/step-4" --world-size 3 --out "$work/few3/step-4"

# --- SIGKILL while saving every step: the newest complete step stays usable. ---
# The newest step of DIR whose two rank files are both there (-1: none).
newest_complete() {
  local best=-1 d n
  for d in "$1"/step-*; do
    n=${d##*/step-}
    [[ $n =~ ^[0-9]+$ ]] || continue
    if [ "$n" -gt "$best" ] && [ -f "$d/loader/rank-00000-of-00002.ckpt" ] &&
       [ -f "$d/loader/rank-00001-of-00002.ckpt" ]; then
      best=$n
    fi
  done
  echo "$best"
}
dir="$work/kill"
incomplete=0 previous=-1
for round in 1 2 3 4 5; do
  $MPIRUN -np 2 "$STOKER" run "${common[@]}" --steps 100000000 --save-every 1 \
    --checkpoint-dir "$dir" --resume > "$work/kill-$round.log" 2>&1 &
  background=$!
  # Once it is saving (step previous + 3 complete: leftovers of the last kill never are), at a
  # random moment.
  for ((wait = 0; wait < 300; ++wait)); do
    [ "$(newest_complete "$dir")" -lt $((previous + 3)) ] || break
    sleep 0.1
  done
  [ "$(newest_complete "$dir")" -ge $((previous + 3)) ] ||
    fail "round $round: no step saved after step $previous in 30 s: $(cat "$work/kill-$round.log")"
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  mapfile -t ranks < <(pgrep -P "$background" || true)
  [ "${#ranks[@]}" = 2 ] ||
    fail "round $round: ${#ranks[@]} ranks running to kill, not 2: $(cat "$work/kill-$round.log")"
  kill -9 "${ranks[@]}"
  wait "$background" || true
  background=""
  step=$(newest_complete "$dir")
  [ "$step" -gt "$previous" ] ||
    fail "round $round: no complete step after $previous: $(ls "$dir" | sort -V | tail -3)"
  # A newer step folder than the newest complete one: the kill caught a save half-way.
  ls -d "$dir"/step-$((step + 1)) > /dev/null 2>&1 && incomplete=$((incomplete + 1))
  timeout 60 "$STOKER" inspect "$dir/step-$step" > "$work/inspect.txt" 2>&1 ||
    fail "round $round: stoker inspect of step $step: $(cat "$work/inspect.txt")"
  rm -rf "$dir.dump"
  expect_resumed "killed in round $round" "$dir" "$step"
  previous=$step
done
echo "ok: 5 runs killed with SIGKILL while saving every step (to step $previous; $incomplete" \
     "left a half-saved newer step): --resume went on from the newest complete step each time"
