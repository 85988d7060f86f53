#!/usr/bin/env bash
# A corpus that changed since a checkpoint, as a user meets it, under mpirun -np 2: `stoker run`
# saves step 4, and rank 0 writes the corpus record (loader/corpus.table) beside its rank file.
# In a copy of the corpus one shard is added (a shard copied under a new name), one removed and
# one changed (another shard's bytes under its name: other documents, tokens and size). Then
#   - --resume on the changed corpus is refused, once, naming each of the three files and what
#     changed, below the fingerprint line; so is a resume onto a shard whose tokens were
#     rewritten at the same sizes (its checksum recorded anew); on the corpus it was saved from
#     it resumes, with
#     another --batch-size too (the batch size per rank may change at a resume);
#   - `stoker inspect STEP --data CHANGED` is refused naming the same files;
#   - `stoker reshard` carries the record over, byte for byte, and the resharded step names the
#     files too;
#   - a step without the record (saved before stoker wrote it: the file deleted) still resumes on
#     its corpus, and on the changed one gives the fingerprint line and says it predates the
#     record;
#   - a step whose record has a flipped byte resumes on its corpus with one warning naming the
#     file; `stoker inspect` (text and --json) and `stoker steps` (table and --newest) report it.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work corpus-changed

# ok LOG CMD...: runs CMD; its output to LOG; fails the test if CMD fails (or runs 60 s).
ok() {
  local log=$1; shift
  timeout 60 "$@" > "$log" 2>&1 || { cat "$log" >&2; fail "$* failed"; }
}

# refused NAME CMD...: CMD fails with exit code 1 (not by timeout), each of the PATTERNS (fixed
# text) printed exactly once, nothing printed by rank 1. Its output is in $work/NAME.txt.
refused() {
  local name=$1 rc=0 count pattern
  shift
  timeout 60 "$@" > "$work/$name.txt" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "$name: exit code $rc, not 1:
$(cat "$work/$name.txt")"
  for pattern in "${PATTERNS[@]}"; do
    count=$(grep -o -F -- "$pattern" "$work/$name.txt" | wc -l || true)
    [ "$count" = 1 ] || fail "$name: '$pattern' printed $count times, not once:
$(cat "$work/$name.txt")"
  done
  ! grep -q "\[rank 1\]" "$work/$name.txt" || fail "$name: rank 1 printed too:
$(cat "$work/$name.txt")"
  echo "ok: $name:"
  for pattern in "${PATTERNS[@]}"; do
    echo "      $(grep -m1 -F -- "$pattern" "$work/$name.txt" | sed 's/^ *//' | cut -c1-300)"
  done
}

corpus="$work/corpus"
ok "$work/synth.log" "$STOKER" synth "$corpus" --dataset code:3000:40 --dataset web:3000:60 \
  --files 3 --seed 1
ok "$work/synth-other.log" "$STOKER" synth "$work/other" --dataset code:4500:40 --files 3 \
  --seed 2
args=(--seq-len 32 --logical-shards 8 --seed 3 --batch-size 2)
args3=(--seq-len 32 --logical-shards 8 --seed 3 --batch-size 3)
ok "$work/save.log" $MPIRUN -np 2 "$STOKER" run --data "$corpus" "${args[@]}" --steps 4 \
  --save-every 4 --checkpoint-dir "$work/ck"
step="$work/ck/step-4"
[ -s "$step/loader/corpus.table" ] || fail "no corpus record in $step/loader: $(ls "$step/loader")"
echo "ok: step 4 saved on 2 ranks, with a corpus record of" \
     "$(stat -c %s "$step/loader/corpus.table") bytes"

# The changed corpus: web/part-00012.h5 added, code/part-00001.h5 removed, code/part-00002.h5
# replaced by a shard of another corpus (1500 tokens where it held 1000).
changed="$work/changed"
cp -r "$corpus" "$changed"
cp "$corpus/web/part-00000.h5" "$changed/web/part-00012.h5"
rm "$changed/code/part-00001.h5"
cp "$work/other/code/part-00002.h5" "$changed/code/part-00002.h5"
PATTERNS=("corpus fingerprint: checkpoint" "corpus differs from the checkpoint's: 1 file added \
(web/part-00012.h5), 1 removed (code/part-00001.h5), 1 changed (code/part-00002.h5: 25 -> 39 \
documents, 1000 -> 1500 tokens, 4256 -> 5368 bytes)" "does not belong to this run")
refused "resume on the changed corpus" $MPIRUN -np 2 "$STOKER" run --data "$changed" \
  "${args[@]}" --steps 8 --checkpoint-dir "$work/ck" --resume
PATTERNS=("corpus $changed (fingerprint" "is not the corpus checkpoint $step was saved from" \
          "${PATTERNS[1]}")
refused "inspect --data of the changed corpus" $MPIRUN -np 2 "$STOKER" inspect "$step" \
  --data "$changed"

# Tokens rewritten at the same sizes by a tool that records the checksum (here: one token changed
# with h5py, its checksum recomputed by `stoker verify --record`): refused, naming the shard and
# both checksums.
rewritten="$work/rewritten"
cp -r "$corpus" "$rewritten"
/usr/bin/python3 - "$rewritten/code/part-00000.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["tokens"][3] = (int(f["tokens"][3]) + 1) % int(f.attrs["vocab_size"])
    del f.attrs["checksum"]
PY
ok "$work/record.log" "$STOKER" verify --record "$rewritten"
PATTERNS=("corpus differs from the checkpoint's: 0 files added, 0 removed, 1 changed \
(code/part-00000.h5: " "other content (checksum xxh3-64:")
refused "resume on tokens rewritten at the same sizes" $MPIRUN -np 2 "$STOKER" run \
  --data "$rewritten" "${args[@]}" --steps 8 --checkpoint-dir "$work/ck" --resume

# The same corpus resumes, with another batch size per rank, and the next step has its record.
ok "$work/resume.log" $MPIRUN -np 2 "$STOKER" run --data "$corpus" "${args3[@]}" --steps 8 \
  --save-every 4 --checkpoint-dir "$work/ck" --resume
cmp -s "$step/loader/corpus.table" "$work/ck/step-8/loader/corpus.table" ||
  fail "step 8 does not record the same corpus as step 4"
echo "ok: resumed on the corpus it was saved from with --batch-size 3 (was 2); step 8 recorded"

# reshard carries the record over.
ok "$work/reshard.log" "$STOKER" reshard "$step" --world-size 3 --out "$work/resharded/step-4"
cmp -s "$step/loader/corpus.table" "$work/resharded/step-4/loader/corpus.table" ||
  fail "reshard did not copy the corpus record: $(ls "$work/resharded/step-4/loader")"
PATTERNS=("1 file added (web/part-00012.h5), 1 removed (code/part-00001.h5), 1 changed")
refused "resume of the resharded step on the changed corpus" $MPIRUN -np 3 "$STOKER" run \
  --data "$changed" "${args[@]}" --steps 8 --checkpoint-dir "$work/resharded" --resume
echo "ok: reshard copied the corpus record"

# A step saved before stoker recorded the corpus: resumes as before; refused by fingerprint only.
mkdir -p "$work/old"
cp -r "$step" "$work/old/step-4"
rm "$work/old/step-4/loader/corpus.table"
predates="checkpoint $work/old/step-4 predates the corpus record (it has no \
$work/old/step-4/loader/corpus.table), so which files differ is not known"
PATTERNS=("corpus fingerprint: checkpoint" "$predates")
refused "resume of a step without a record on the changed corpus" $MPIRUN -np 2 "$STOKER" run \
  --data "$changed" "${args[@]}" --steps 8 --checkpoint-dir "$work/old" --resume
! grep -q "file added" "$work/resume of a step without a record on the changed corpus.txt" ||
  fail "a step without a record named files"
PATTERNS=("is not the corpus checkpoint $work/old/step-4 was saved from" "$predates")
refused "inspect --data of a step without a record" "$STOKER" inspect "$work/old/step-4" \
  --data "$changed"
ok "$work/resume-old.log" $MPIRUN -np 2 "$STOKER" run --data "$corpus" "${args[@]}" --steps 6 \
  --checkpoint-dir "$work/old" --resume

echo "ok: a step without a record resumes on its corpus"

# A corrupt record: named by the resume (which goes on), inspect and steps.
mkdir -p "$work/flipped"
cp -r "$step" "$work/flipped/step-4"
record="$work/flipped/step-4/loader/corpus.table"
size=$(stat -c %s "$record")
printf '\xff' | dd of="$record" bs=1 seek=$((size / 2)) conv=notrunc status=none
ok "$work/inspect-flipped.txt" "$STOKER" inspect "$work/flipped/step-4"
grep -q "^corpus record UNUSABLE: $record" "$work/inspect-flipped.txt" ||
  fail "inspect does not report the corrupt record: $(cat "$work/inspect-flipped.txt")"
ok "$work/inspect-flipped.json" "$STOKER" inspect "$work/flipped/step-4" --json
/usr/bin/python3 - "$work/inspect-flipped.json" "$record" <<'PY' || fail "inspect --json: $(cat "$work/inspect-flipped.json")"
import json, sys
got = json.load(open(sys.argv[1]))["corpus_record"]
sys.exit(None if got["state"] == "unusable" and got["problem"].startswith(sys.argv[2]) else got)
PY
ok "$work/inspect-whole.txt" "$STOKER" inspect "$step"
grep -q "^corpus record: 6 shards" "$work/inspect-whole.txt" ||
  fail "inspect of a whole record: $(cat "$work/inspect-whole.txt")"
ok "$work/steps-flipped.txt" "$STOKER" steps "$work/flipped"
grep -q "step-4 *$" "$work/steps-flipped.txt" && grep -q "complete; its corpus record cannot be used: $record" \
  "$work/steps-flipped.txt" || fail "stoker steps: $(cat "$work/steps-flipped.txt")"
ok "$work/steps-newest.txt" "$STOKER" steps "$work/flipped" --newest
grep -q "its corpus record cannot be used: $record" "$work/steps-newest.txt" ||
  fail "stoker steps --newest: $(cat "$work/steps-newest.txt")"
ok "$work/resume-flipped.log" $MPIRUN -np 2 "$STOKER" run --data "$corpus" "${args[@]}" --steps 6 \
  --checkpoint-dir "$work/flipped" --resume
warned=$(grep -c "whose corpus record cannot be used: $record" "$work/resume-flipped.log" || true)
[ "$warned" = 1 ] || fail "the resume from a step with a corrupt record warned $warned times:
$(cat "$work/resume-flipped.log")"
grep -q "could not name the files that differ" "$work/resume-flipped.log" ||
  fail "the warning does not say what is lost: $(cat "$work/resume-flipped.log")"
echo "ok: a corrupt corpus record: the resume warns once, inspect and steps report it"
