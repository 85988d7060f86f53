#!/usr/bin/env bash
# The example trainer end to end on the default corpus (scripts/default-corpus.sh, capped to 150
# files per dataset):
#   - 4 ranks train with checkpoints until a preemption signal (SIGUSR1 to mpirun once step 80 is
#     saved): every rank stops at the same step, saves it, and exits 0; its --result file holds
#     the summary line of stdout (stopped_early, end_step, ...); an unwritable one is refused
#     before training (exit 2, naming it);
#   - a resumed run on 2 ranks goes on from exactly that step (the loader rescales 4 -> 2) for 60
#     more steps, and logs the one trainer setting it changed (--warmup 20 -> 30); the loss
#     fell from about log(258) by more than 1.5 nats;
#   - `stoker audit` of the two runs' piece traces: every step of both runs is there, no framed
#     position of any document was delivered twice, all within epoch 0 of every dataset;
#   - with --doc-mask (attention within documents) the loss falls by more than 1.5 nats too;
#   - a resume on the same rank count is bit-exact: 10 steps + resume to 20 give the model of an
#     uninterrupted 20-step run (model, optimizer and loader state all restored);
#   - a step folder without model.pt is passed over (by `stoker steps` too, which reads the
#     trainer's files from the step folder's trainer.files); a model of another shape is refused;
#   - a fresh run into a folder of step folders is refused without touching them; a negative
#     --steps or --warmup, and a model larger than a rank can hold, are refused before training.
# Environment: STOKER, STOKER_TRAIN, MPIRUN, STOKER_SOURCE (see tests/CMakeLists.txt).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?}" "${STOKER_TRAIN:?}" "${MPIRUN:?}" "${STOKER_SOURCE:?}"

make_work train
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print($1)"; }

STOKER_CORPUS_MAX_FILES=150 "$STOKER_SOURCE/scripts/default-corpus.sh" "$work/corpus" 2 \
  > "$work/corpus.log" 2>&1 || { cat "$work/corpus.log" >&2; fail "default-corpus.sh failed"; }

model=(--dim 64 --layers 2 --heads 4 --seq-len 128 --batch-size 8 --lr 3e-3)
common=(--data "$work/corpus" --weights copyright=0.6,headers=0.3,licenses=0.1 "${model[@]}"
        --log-every 20)
ck="$work/ck" trace="$work/trace"

# 1. 4 ranks until preempted.
$MPIRUN -np 4 "$STOKER_TRAIN" "${common[@]}" --steps 100000 --checkpoint-dir "$ck" \
  --save-every 40 --trace "$trace" --result "$work/results/a.json" > "$work/a.out" 2> "$work/a.err" &
pid=$!
for _ in $(seq 600); do
  [ -f "$ck/step-80/trainer.json" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
[ -f "$ck/step-80/trainer.json" ] || { cat "$work/a.err" >&2; fail "no step-80 checkpoint"; }
kill -USR1 "$pid"
wait "$pid" || { cat "$work/a.err" >&2; fail "the preempted run exited $?"; }
grep -q "stopping at step .* on signal; saved" "$work/a.err" || fail "no stop message"
# Every progress line says the weights in force and the shares over all ranks since they last
# changed (from step 0 here: constant weights, so no promised shares apart).
grep -Eq "train: step 20/.* \| weights copyright=0.600 headers=0.300 licenses=0.100 \| shares \
since step 0 copyright=0\.[0-9]{3} headers=0\.[0-9]{3} licenses=0\.[0-9]{3}$" "$work/a.err" ||
  fail "no weights and shares on the progress line: $(grep -m1 'train: step' "$work/a.err")"
a_end=$(json 'd["end_step"]' < "$work/a.out")
[ "$(json 'd["stopped_early"]' < "$work/a.out")" = True ] || fail "run A was not stopped early"
[ -f "$ck/step-$a_end/model.pt" ] || fail "the stop step $a_end was not saved"
"$STOKER" inspect "$ck/step-$a_end" > /dev/null || fail "step-$a_end is not a complete checkpoint"
python3 - "$work/results/a.json" "$work/a.out" <<'PY' || fail "--result does not match stdout"
import json, sys
result = json.load(open(sys.argv[1]))
line = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
assert result == line, (result, line)
assert result["stopped_early"] is True and result["end_step"] >= 80, result
for key in ("ranks", "start_step", "end_step", "stopped_early", "loss_end", "model_checksum"):
    assert key in result, key
PY
ls "$work/results" | grep -qv '^a.json$' && fail "--result left other files: $(ls "$work/results")"
echo "run A: 4 ranks, preempted at step $a_end; --result holds the summary"

# An unwritable --result (its folder is a file) is refused before training: exit 2, naming it.
code=0
$MPIRUN -np 2 "$STOKER_TRAIN" "${common[@]}" --steps 1 --result "$work/a.out/x.json" \
  > /dev/null 2> "$work/result.err" || code=$?
[ "$code" = 2 ] || { cat "$work/result.err" >&2; fail "an unwritable --result exited $code, not 2"; }
[ "$(grep -c -F -- "--result $work/a.out/x.json cannot be written" "$work/result.err")" = 1 ] ||
  { cat "$work/result.err" >&2; fail "the unwritable --result was not named once"; }
grep -q "train: step" "$work/result.err" && fail "training began despite an unwritable --result"

# 2. Resumed on 2 ranks for 60 more steps, with a longer warm-up (logged as a change).
b_end=$((a_end + 60))
$MPIRUN -np 2 "$STOKER_TRAIN" "${common[@]}" --steps "$b_end" --checkpoint-dir "$ck" \
  --save-every 40 --trace "$trace" --resume --warmup 30 > "$work/b.out" 2> "$work/b.err" ||
  { cat "$work/b.err" >&2; fail "the resumed run failed"; }
grep -q "resumed from $ck/step-$a_end (saved on 4 ranks, now 2)" "$work/b.err" ||
  { cat "$work/b.err" >&2; fail "run B did not resume from step-$a_end on 4 -> 2 ranks"; }
[ "$(grep -c "train: changed at this resume: " "$work/b.err")" = 1 ] &&
  grep -q "train: changed at this resume: --warmup 20 -> 30" "$work/b.err" ||
  { cat "$work/b.err" >&2; fail "run B did not log its one setting change (--warmup)"; }
grep -Eq "train: mixing over the run: weights copyright=0.600 headers=0.300 licenses=0.100 \| \
shares since step 0 copyright=0\.[0-9]{3} .* \| largest gap [0-9]+ tokens$" "$work/b.err" ||
  fail "run B's report has no mixing line: $(grep 'train: ' "$work/b.err" | tail -2)"
[ "$(json 'd["start_step"], d["end_step"], d["saved_world"], d["ranks"]' < "$work/b.out")" = \
  "$a_end $b_end 4 2" ] || fail "run B: $(tail -1 "$work/b.out")"
loss_start=$(json 'd["loss_start"]' < "$work/a.out")
loss_end=$(json 'd["loss_end"]' < "$work/b.out")
python3 -c "import sys; s, e = $loss_start, $loss_end; sys.exit(0 if s > 4.5 and e < s - 1.5 else 1)" ||
  fail "the loss did not fall enough: $loss_start at the start, $loss_end at step $b_end"
echo "run B: 2 ranks, steps $((a_end + 1))..$b_end; loss $loss_start -> $loss_end"

# 3. The audit of both runs.
"$STOKER" audit "$trace" --data "$work/corpus" --json > "$work/audit.json" ||
  { cat "$work/audit.json" >&2; fail "stoker audit found problems"; }
python3 - "$work/audit.json" "$a_end" "$b_end" "$work/a.out" "$work/b.out" <<'PY' ||
  fail "the audit's figures, or the trainer's count of each dataset's tokens, are wrong"
import json, sys
d = json.load(open(sys.argv[1]))
a_end, b_end = int(sys.argv[2]), int(sys.argv[3])
# The result lines' tokens of each dataset since step 0 over all ranks (run B's through the
# rescale, from the loader's state) against the steps and the audit's count from the piece
# traces; what the weights promised adds up alike.
a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[4:6])
for run, rows in ((a, a_end * 4 * 8), (b, (a_end * 4 + (b_end - a_end) * 2) * 8)):
    assert sum(run["dataset_tokens"].values()) == rows * 129, run["dataset_tokens"]
    assert abs(sum(run["promised_tokens"].values()) - rows * 129) < 1, run["promised_tokens"]
for name, ds in d["datasets"].items():
    assert b["dataset_tokens"][name] == ds["epochs"][0]["tokens"], (name, b, ds["epochs"])
runs = [(r["start_step"], r["world_size"], r["valid_end"]) for r in d["runs"]]
assert d["clean"] and d["problem_count"] == 0, d["problems"]
assert runs == [(0, 4, a_end), (a_end, 2, b_end)], runs
epochs = {e["epoch"] for ds in d["datasets"].values() for e in ds["epochs"]}
assert epochs == {0}, epochs
tokens = sum(r["tokens"] for r in d["runs"])
assert tokens == (a_end * 4 + (b_end - a_end) * 2) * 8 * 129, tokens
print(f"audit: {tokens} framed tokens of {len(runs)} runs checked, none twice, all in epoch 0")
PY

# 3b. --doc-mask (attention within documents, positions from each document's start): the loss
# falls as well, from about log(258) by more than 1.5 nats in 100 steps on 2 ranks.
$MPIRUN -np 2 "$STOKER_TRAIN" "${common[@]}" --doc-mask --steps 100 \
  > "$work/mask.out" 2> "$work/mask.err" || { cat "$work/mask.err" >&2; fail "the --doc-mask run failed"; }
[ "$(json 'd["doc_mask"], d["end_step"]' < "$work/mask.out")" = "True 100" ] ||
  fail "the --doc-mask run: $(tail -1 "$work/mask.out")"
mask_start=$(json 'd["loss_start"]' < "$work/mask.out")
mask_end=$(json 'd["loss_end"]' < "$work/mask.out")
python3 -c "import sys; s, e = $mask_start, $mask_end; sys.exit(0 if s > 4.5 and e < s - 1.5 else 1)" ||
  fail "with --doc-mask the loss did not fall enough: $mask_start at the start, $mask_end at step 100"
echo "--doc-mask: 2 ranks, 100 steps; loss $mask_start -> $mask_end"

# 4. Bit-exact resume on the same rank count.
same=(--data "$work/corpus" "${model[@]}" --seed 3 --log-every 0)
$MPIRUN -np 2 "$STOKER_TRAIN" "${same[@]}" --steps 20 > "$work/c.out" 2> "$work/c.err" ||
  { cat "$work/c.err" >&2; fail "run C failed"; }
$MPIRUN -np 2 "$STOKER_TRAIN" "${same[@]}" --steps 10 --checkpoint-dir "$work/ck2" --save-every 10 \
  > /dev/null 2> "$work/d.err" || { cat "$work/d.err" >&2; fail "run D failed"; }
$MPIRUN -np 2 "$STOKER_TRAIN" "${same[@]}" --steps 20 --checkpoint-dir "$work/ck2" --save-every 10 \
  --resume > "$work/e.out" 2> "$work/e.err" || { cat "$work/e.err" >&2; fail "run E failed"; }
c_sum=$(json 'd["model_checksum"]' < "$work/c.out")
[ "$(json 'd["model_checksum"]' < "$work/e.out")" = "$c_sum" ] ||
  fail "10 + 10 resumed steps did not give the model of 20 steps in one run"
echo "resume at the same rank count is bit-exact (model $c_sum)"

# 5. A step folder without model.pt is incomplete: the resume goes back to step-10. The step
#    folder records the trainer's files, so `stoker steps` knows that without being told.
[ "$(cat "$work/ck2/step-20/trainer.files")" = "$(printf 'model.pt\noptimizer.pt\ntrainer.json')" ] ||
  fail "step-20/trainer.files does not name the trainer's files: $(cat "$work/ck2/step-20/trainer.files")"
rm "$work/ck2/step-20/model.pt"
newest=$("$STOKER" steps "$work/ck2" --newest 2> "$work/steps.err") ||
  { cat "$work/steps.err" >&2; fail "stoker steps --newest failed"; }
[ "$(cut -f1 <<< "$newest")" = 10 ] || fail "stoker steps took step-20 without model.pt: $newest"
$MPIRUN -np 2 "$STOKER_TRAIN" "${same[@]}" --steps 20 --checkpoint-dir "$work/ck2" --save-every 10 \
  --resume > "$work/f.out" 2> "$work/f.err" || { cat "$work/f.err" >&2; fail "run F failed"; }
grep -q "passing over 1 incomplete checkpoint in $work/ck2 .*step-20 (.*model.pt is missing" \
  "$work/f.err" ||
  { cat "$work/f.err" >&2; fail "step-20 without model.pt was not passed over"; }
[ "$(json 'd["start_step"], d["model_checksum"]' < "$work/f.out")" = "10 $c_sum" ] ||
  fail "run F did not redo steps 11..20 from step-10: $(tail -1 "$work/f.out")"

# 6. Another model shape is refused, naming the difference.
if $MPIRUN -np 2 "$STOKER_TRAIN" --data "$work/corpus" --seq-len 128 --batch-size 8 --seed 3 \
     --dim 32 --steps 30 --checkpoint-dir "$work/ck2" --resume > /dev/null 2> "$work/g.err"; then
  fail "a model of another shape was accepted"
fi
grep -q "holds a model of another shape" "$work/g.err" && grep -q "dim: saved 64, now 32" "$work/g.err" ||
  { cat "$work/g.err" >&2; fail "the shape mismatch was not explained"; }
echo "a step without model.pt is passed over; another model shape is refused"

# 7. A fresh run never overwrites another run's checkpoints; numbers are checked as numbers.
# refused NAME PATTERN ARGS...: stoker-train ARGS at 2 ranks exits non-zero, PATTERN once.
refused() {
  local name=$1 pattern=$2; shift 2
  if $MPIRUN -np 2 "$STOKER_TRAIN" "$@" > /dev/null 2> "$work/r.err"; then fail "$name: exited 0"; fi
  [ "$(grep -c -F -- "$pattern" "$work/r.err")" = 1 ] ||
    { cat "$work/r.err" >&2; fail "$name: '$pattern' not printed once"; }
  echo "ok: $name"
}
before=$(cat "$work"/ck2/step-*/loader/* | md5sum)
refused "a fresh run into a folder of checkpoints" "already holds 2 step folders of an earlier run" \
  "${same[@]}" --steps 20 --checkpoint-dir "$work/ck2"
[ "$(cat "$work"/ck2/step-*/loader/* | md5sum)" = "$before" ] || fail "the refused run changed ck2"
refused "--steps -1" "--steps: -1 is negative" "${same[@]}" --steps -1
refused "--warmup -2" "--warmup: -2 is negative" "${same[@]}" --warmup -2
refused "a model larger than a rank can hold" "needs about" --data "$work/corpus" \
  --dim 1000000 --heads 1 --steps 1
echo "PASS"
