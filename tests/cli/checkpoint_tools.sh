#!/usr/bin/env bash
# The checkpoint tools end to end, as a user runs them: `stoker run` saves loader checkpoints on
# 2 ranks; `stoker reshard` rewrites step 10 for 3 ranks (alone, and under mpirun with the same
# bytes) and prints its summary, and for 2 ranks copies the files unchanged; `stoker inspect`
# describes both step folders (table and --json: identity, the run identity the reshard keeps,
# per-rank logical shards, per-dataset progress kept across the reshard, epochs done with
# --data); resuming from the resharded
# folder on 3 ranks dumps the same batches as resuming from the original on 3 ranks; reshard
# refuses --world-size 0, a world size above the logical shards, an existing output, an
# incomplete step and a corrupt file; inspect of a corrupt file, of an incomplete step and with
# --data of another corpus exits 1 with a message naming the culprit, printed once under mpirun;
# inspect of the folder of step folders says it is one and names the newest step; a fresh run
# into it is refused without touching it, and --start-over deletes the earlier steps first (and
# only once the run is known to start). `stoker steps` lists the steps of a folder, finds the
# newest complete one with a trainer's required files (passing over newer incomplete ones,
# saying why) and none, saying so, for a folder of which none is complete; a reshard into a new folder makes
# it whole (the trainer's files copied) and publishes it in one rename, leaving nothing behind
# when a write fails. A run whose datasets are dealt: inspect shows where each stream's dealing
# stands, and its epochs, before and after a reshard.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work ckpt-tools

# ok LOG CMD...: runs CMD; stdout to LOG.out, stderr to LOG.err; fails the test if CMD fails.
ok() {
  local log=$1; shift
  "$@" > "$log.out" 2> "$log.err" || { cat "$log.out" "$log.err" >&2; fail "$* failed"; }
}

# refused NAME PATTERN CMD...: CMD must exit non-zero, printing PATTERN exactly once.
refused() {
  local name=$1 pattern=$2; shift 2
  local rc=0 count
  "$@" > "$work/refused.txt" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "$name: exited 0: $(cat "$work/refused.txt")"
  count=$(grep -c -F -- "$pattern" "$work/refused.txt" || true)
  [ "$count" = 1 ] || fail "$name: '$pattern' printed $count times, not once:
$(cat "$work/refused.txt")"
  echo "ok: $name: $(grep -m1 -F -- "$pattern" "$work/refused.txt")"
}

corpus="$work/corpus"
ok "$work/synth" "$STOKER" synth "$corpus" --dataset a:6000:50 --dataset b:4000:120 \
  --dataset c:500:20 --files 2 --seed 3 --unique-tokens
ok "$work/corpus" "$STOKER" inspect "$corpus" --json

# --- Save on 2 ranks: steps 5 and 10. c (25 documents) weighs half: it runs through epochs. ---
# Every dataset walked: progress in logical shards (a dealt dataset's, below).
seq=64 batch=2 shards=12
args=(--data "$corpus" --seq-len $seq --batch-size $batch --logical-shards $shards --seed 5
      --weights a=1,b=1,c=2 --deal-max-docs 0)
ok "$work/save" $MPIRUN -np 2 "$STOKER" run "${args[@]}" --steps 10 \
  --checkpoint-dir "$work/ck" --save-every 5
for step in 5 10; do
  for r in 0 1; do
    [ -s "$work/ck/step-$step/loader/rank-0000$r-of-00002.ckpt" ] ||
      fail "run --save-every 5 left no rank $r file in step-$step: $(ls -R "$work/ck")"
  done
done
echo "ok: run saved step-5 and step-10 on 2 ranks"

# --- Reshard step 10 for 3 ranks; the same bytes under mpirun; the summary line; 2 ranks. ---
ok "$work/reshard" "$STOKER" reshard "$work/ck/step-10" --world-size 3 --out "$work/resharded"
grep -q "resharded step 10 from 2 to 3 ranks" "$work/reshard.out" ||
  fail "reshard's summary: $(cat "$work/reshard.out")"
written=$(sed -n 's/.*: \([0-9]*\) bytes written.*/\1/p' "$work/reshard.out")
files=$(stat -c %s "$work"/resharded/loader/{rank-0000[0-2]-of-00003.ckpt,corpus.table} |
  awk '{s += $1} END {print s}')
[ "$written" = "$files" ] || fail "reshard says $written bytes written; its files hold $files"
grep -q "is not named step-10" "$work/reshard.err" ||
  fail "no warning that --out resharded is not named step-10: $(cat "$work/reshard.err")"
ok "$work/reshard-mpi" $MPIRUN -np 2 "$STOKER" reshard "$work/ck/step-10/loader" \
  --world-size 3 --out "$work/mpi/step-10"
for r in 0 1 2; do
  f=loader/rank-0000$r-of-00003.ckpt
  cmp -s "$work/resharded/$f" "$work/mpi/step-10/$f" ||
    fail "reshard under mpirun (given the loader folder) wrote another $f than alone"
done
! grep -q "is not named" "$work/reshard-mpi.err" || fail "a warning for an --out named step-10"
echo "ok: reshard 2 -> 3 ranks: $(cat "$work/reshard.out")"
# To the world size it has: the files unchanged (a resume on 2 ranks does not rescale either).
ok "$work/reshard-same" "$STOKER" reshard "$work/ck/step-10" --world-size 2 \
  --out "$work/same/step-10"
grep -q "resharded step 10 from 2 to 2 ranks" "$work/reshard-same.out" ||
  fail "reshard to the same world size: $(cat "$work/reshard-same.out")"
for r in 0 1; do
  f=loader/rank-0000$r-of-00002.ckpt
  cmp -s "$work/ck/step-10/$f" "$work/same/step-10/$f" ||
    fail "reshard to the world size the checkpoint has changed $f"
done
echo "ok: reshard 2 -> 2 ranks copies the files unchanged"

# --- inspect: the table, and --json checked field by field. ---
ok "$work/inspect-orig" "$STOKER" inspect "$work/ck/step-10"
ok "$work/inspect-new" $MPIRUN -np 2 "$STOKER" inspect "$work/resharded"
fingerprint=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fingerprint"])' \
  "$work/corpus.out")
for check in "orig:saved by 2 ranks" "new:saved by 3 ranks" "orig:loader state after step 10" \
             "orig:$fingerprint" "new:generation 1" "orig:per rank" "new:[8, 12)"; do
  grep -q -F -- "${check#*:}" "$work/inspect-${check%%:*}.out" ||
    fail "inspect ${check%%:*} does not show '${check#*:}': $(cat "$work/inspect-${check%%:*}.out")"
done
ok "$work/orig" "$STOKER" inspect "$work/ck/step-10" --json
ok "$work/new" "$STOKER" inspect "$work/resharded" --json
ok "$work/orig-data" "$STOKER" inspect "$work/ck/step-10/loader/" --json --data "$corpus"
ok "$work/orig-table" "$STOKER" inspect "$work/ck/step-10" --data "$corpus"
grep -q "epochs done" "$work/orig-table.out" || fail "inspect --data shows no epochs done"
python3 - "$work" "$fingerprint" $shards $((10 * 2 * batch * (seq + 1))) <<'EOF' ||
import json, os, re, sys
work, fingerprint = sys.argv[1], sys.argv[2]
shards, rows_tokens = int(sys.argv[3]), int(sys.argv[4])
corpus = json.load(open(f"{work}/corpus.out"))
orig, new, data = (json.load(open(f"{work}/{n}.out")) for n in ("orig", "new", "orig-data"))
problems = []
def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: {got!r}, not {want!r}")

for name, j, world, generation in (("orig", orig, 2, 0), ("new", new, 3, 1), ("data", data, 2, 0)):
    for key, want in (("kind", "checkpoint"), ("format_version", 5), ("step", 10),
                      ("world_size", world), ("generation", generation),
                      ("corpus_fingerprint", fingerprint), ("seed", 5), ("logical_shards", shards),
                      ("seq_len", 64), ("eos_id", corpus["total_tokens"]), ("bos_id", None)):
        expect(f"{name} {key}", j.get(key), want)
    expect(f"{name} datasets", sorted(j["datasets"]), ["a", "b", "c"])
    expect(f"{name} ranks", [r["rank"] for r in j["ranks"]], list(range(world)))
    expect(f"{name} logical shards", [r["logical_shards"] for r in j["ranks"]],
           [[r * shards // world, (r + 1) * shards // world] for r in range(world)])
    expect(f"{name} bytes", j["bytes"], sum(os.path.getsize(r["file"]) for r in j["ranks"]))
    weights = {d: round(v["weight"], 6) for d, v in j["datasets"].items()}
    expect(f"{name} weights", weights, {"a": 0.25, "b": 0.25, "c": 0.5})
    for d, v in j["datasets"].items():
        ranks_sum = sum(r["datasets"][d]["started_tokens"] for r in j["ranks"])
        expect(f"{name} {d}: started tokens of the ranks add up", ranks_sum, v["started_tokens"])
    started = sum(v["started_tokens"] for v in j["datasets"].values())
    if started < rows_tokens:
        problems.append(f"{name}: {started} tokens started, fewer than the {rows_tokens} delivered")

# One run identity for the whole step; the reshard keeps it (the same run's training).
if not re.fullmatch("[0-9a-f]{32}", str(orig["run"])):
    problems.append(f"run identity {orig['run']!r}: not 32 hex digits")
expect("the resharded step's run", new["run"], orig["run"])

# The reshard moves cursors and re-splits counters: every per-dataset total stays.
for d in "abc":
    for key in ("started_tokens", "shards", "epoch_min", "epoch_max", "shards_at_epoch_max",
                "positions", "unfinished_docs"):
        expect(f"{d} {key} across the reshard", new["datasets"][d][key], orig["datasets"][d][key])
    expect(f"{d} per-rank unfinished", sum(r["unfinished_docs"] for r in new["ranks"]),
           sum(r["unfinished_docs"] for r in orig["ranks"]))
if orig["datasets"]["c"]["epoch_max"] < 1:
    problems.append(f"c never left epoch 0: {orig['datasets']['c']}")

# --data: documents per dataset from the corpus; epochs done = documents passed over / documents.
expect("without --data, no epochs_done", "epochs_done" in orig["datasets"]["c"], False)
for d, v in data["datasets"].items():
    expect(f"--data {d} docs", v.get("docs"), corpus["datasets"][d]["docs"])
    if abs(v.get("epochs_done", -1) - v["docs_done"] / v["docs"]) > 1e-9:
        problems.append(f"--data {d}: epochs_done {v.get('epochs_done')} is not docs_done / docs")
    expect(f"--data {d} ranks' docs", sum(r["datasets"][d]["docs"] for r in data["ranks"]),
           v["docs"])
if data["datasets"]["c"]["epochs_done"] < 1:
    problems.append(f"--data: c has done {data['datasets']['c']['epochs_done']} epochs, not >= 1")
sys.exit("\n".join(problems) or None)
EOF
  fail "inspect --json of the original and the resharded checkpoint"
echo "ok: inspect of both folders: identity, logical shards, progress kept across the reshard"

# --- Resuming on 3 ranks: from the resharded folder, the same batches as from the original. ---
mkdir -p "$work/ck-new" "$work/ck-orig"
cp -r "$work/resharded" "$work/ck-new/step-10"
cp -r "$work/ck/step-10" "$work/ck-orig/step-10"
for kind in orig new; do
  ok "$work/resume-$kind" $MPIRUN -np 3 "$STOKER" run "${args[@]}" --steps 25 \
    --checkpoint-dir "$work/ck-$kind" --resume --dump "$work/dump-$kind"
done
for r in 0 1 2; do
  for ext in bin pieces; do
    [ -s "$work/dump-orig/rank-$r.$ext" ] || fail "resuming dumped nothing on rank $r"
    cmp -s "$work/dump-orig/rank-$r.$ext" "$work/dump-new/rank-$r.$ext" ||
      fail "rank $r: resuming from the resharded folder gave other $ext than from the original"
  done
  size=$(stat -c %s "$work/dump-new/rank-$r.bin")
  [ "$size" = $((15 * batch * (seq + 1) * 8)) ] ||
    fail "rank $r dumped $size bytes, not the 15 batches of steps 11-25"
done
echo "ok: resumed on 3 ranks from the resharded and the original step 10: the same batches"

# --- Refusals. ---
refused "reshard --world-size 0" "--world-size must be at least 1" \
  "$STOKER" reshard "$work/ck/step-10" --world-size 0 --out "$work/r0/step-10"
refused "reshard above the logical shards" "--world-size 13 is outside [1, 12]" \
  "$STOKER" reshard "$work/ck/step-10" --world-size 13 --out "$work/r13/step-10"
refused "reshard into an existing checkpoint" "already holds a loader checkpoint" \
  "$STOKER" reshard "$work/ck/step-10" --world-size 4 --out "$work/resharded"
[ ! -e "$work/resharded/loader/rank-00000-of-00004.ckpt" ] ||
  fail "reshard wrote into an existing checkpoint"
mkdir -p "$work/incomplete"
cp -r "$work/ck/step-10" "$work/incomplete/step-10"
rm "$work/incomplete/step-10/loader/rank-00001-of-00002.ckpt"
refused "reshard of an incomplete step" "rank-00001-of-00002.ckpt is missing" \
  "$STOKER" reshard "$work/incomplete/step-10" --world-size 3 --out "$work/r-inc/step-10"
[ -z "$(ls -A "$work/r-inc/step-10/loader" 2>/dev/null)" ] ||
  fail "reshard of an incomplete step wrote files"
refused "inspect of an incomplete step" "rank-00001-of-00002.ckpt is missing" \
  $MPIRUN -np 2 "$STOKER" inspect "$work/incomplete/step-10"

# A corrupt file: one byte flipped in the middle of rank 1's file.
mkdir -p "$work/corrupt"
cp -r "$work/ck/step-10" "$work/corrupt/step-10"
bad="$work/corrupt/step-10/loader/rank-00001-of-00002.ckpt"
python3 - "$bad" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x40
open(sys.argv[1], "wb").write(data)
EOF
refused "inspect of a corrupt file" "$bad: not a valid stoker checkpoint: checksum mismatch" \
  "$STOKER" inspect "$work/corrupt/step-10"
refused "inspect of a corrupt file under mpirun" "$bad: not a valid stoker checkpoint" \
  $MPIRUN -np 2 "$STOKER" inspect "$work/corrupt/step-10" --json
refused "reshard of a corrupt file" "$bad: not a valid stoker checkpoint" \
  "$STOKER" reshard "$work/corrupt/step-10" --world-size 3 --out "$work/r-bad/step-10"
refused "reshard of a corrupt file under mpirun" "$bad: not a valid stoker checkpoint" \
  $MPIRUN -np 2 "$STOKER" reshard "$work/corrupt/step-10" --world-size 2 --out "$work/r-bad2"

# --data of another corpus.
ok "$work/synth2" "$STOKER" synth "$work/other" --dataset a:600:50 --dataset b:400:120 \
  --dataset c:500:20 --seed 4
refused "inspect --data of another corpus" "is not the corpus checkpoint" \
  "$STOKER" inspect "$work/ck/step-10" --data "$work/other"

# --- stoker steps: the rule a resume applies, for job scripts; reshard makes whole folders. ---
tab=$'\t'
ok "$work/steps" "$STOKER" steps "$work/ck"
grep -q "^ *5 *2  complete  $work/ck/step-5\$" "$work/steps.out" &&
  grep -q "^ *10 *2  complete  $work/ck/step-10\$" "$work/steps.out" ||
  fail "stoker steps: not both steps complete on 2 ranks: $(cat "$work/steps.out")"
ok "$work/newest" "$STOKER" steps "$work/ck/" --newest
[ "$(cat "$work/newest.out")" = "10${tab}2${tab}$work/ck/step-10" ] ||
  fail "stoker steps --newest: $(cat "$work/newest.out")"
ok "$work/none-complete" "$STOKER" steps "$work/ck" --newest --require model.pt
[ ! -s "$work/none-complete.out" ] &&
  grep -q "none of the 2 step folders in $work/ck is complete" "$work/none-complete.err" ||
  fail "steps --newest, no step with the trainer's files: $(cat "$work/none-complete".{out,err})"
# A trainer's history: step 10 whole, step 15 without model.pt (a directory of that name does
# not count), step 20 without a rank file; steps newer than the newest complete one passed over.
st="$work/steps dir"
for n in 10 15 20; do
  mkdir -p "$st/step-$n" && cp -r "$work/ck/step-10/loader" "$st/step-$n/"
  echo "optimizer of step $n" > "$st/step-$n/optimizer.pt"
done
echo "model" > "$st/step-10/model.pt"
mkdir -p "$st/step-10/extra" "$st/step-15/model.pt" && echo "more" > "$st/step-10/extra/notes"
echo "model" > "$st/step-20/model.pt"
rm "$st/step-20/loader/rank-00001-of-00002.ckpt"
ok "$work/newest-st" "$STOKER" steps "$st" --newest --require model.pt,optimizer.pt
[ "$(cat "$work/newest-st.out")" = "10${tab}2${tab}$st/step-10" ] ||
  fail "stoker steps --newest --require: $(cat "$work/newest-st.out")"
grep -q "passing over 2 incomplete checkpoints in $st .*$st/step-20 (.*rank-00001-of-00002.ckpt \
is missing).*$st/step-15 (.*model.pt is missing" "$work/newest-st.err" ||
  fail "stoker steps --newest: $(cat "$work/newest-st.err")"
ok "$work/step-15" "$STOKER" steps "$st" --step 15
refused "steps --step of a step without a required file" "$st/step-15 is not a complete step: \
model.pt is missing" "$STOKER" steps "$st" --step 15 --require model.pt
refused "steps --step of a missing step" "no step folder $st/step-99" \
  "$STOKER" steps "$st" --step 99
mkdir -p "$work/no-steps"
for dir in "$work/no-steps" "$work/not-there"; do
  ok "$work/none" "$STOKER" steps "$dir" --newest --require model.pt
  [ ! -s "$work/none.out" ] || fail "stoker steps --newest of $dir: $(cat "$work/none.out")"
done
echo "ok: stoker steps: complete steps, the newest with required files, what each lacks"

# Reshard into a new folder: a whole step folder, the trainer's files copied, one rename.
ok "$work/whole" "$STOKER" reshard "$st/step-10" --world-size 3 --out "$work/whole/step-10"
for f in model.pt optimizer.pt extra/notes; do
  cmp -s "$st/step-10/$f" "$work/whole/step-10/$f" || fail "reshard: $f not copied unchanged"
done
ok "$work/whole-steps" "$STOKER" steps "$work/whole" --newest --require model.pt
[ "$(cat "$work/whole-steps.out")" = "10${tab}3${tab}$work/whole/step-10" ] ||
  fail "reshard into a new folder: $(cat "$work/whole-steps.out")"
# Beside the step folder only the lock of the folder it was written into (no staging folder).
[ "$(ls -A "$work/whole" | tr '\n' ' ')" = ".stoker-lock step-10 " ] ||
  fail "reshard left $(ls -A "$work/whole") behind"
# A write that fails midway leaves neither the step folder nor its staging folder.
rc=0
STOKER_FAULTS="write:rank-00002-of-00003:1:enospc" "$STOKER" reshard "$st/step-10" \
  --world-size 3 --out "$work/failed/step-10" > "$work/failed.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "rank-00002-of-00003.ckpt" "$work/failed.txt" ||
  fail "reshard with a failing write: exit $rc: $(cat "$work/failed.txt")"
[ "$(ls -A "$work/failed")" = .stoker-lock ] ||
  fail "a failed reshard left $(ls -A "$work/failed") behind"
refused "reshard into an existing step folder" "already holds a loader checkpoint" \
  "$STOKER" reshard "$st/step-10" --world-size 3 --out "$work/whole/step-10"
echo "ok: reshard into a new folder: whole (trainer files copied), published in one rename"

# --- A folder of step folders: inspect says it is a checkpoint folder and names the newest. ---
refused "inspect of a checkpoint folder" "$work/ck is a checkpoint folder, not a corpus or one \
checkpoint: it holds 2 step folders (steps 5 to 10); inspect one of them: the newest complete one \
is $work/ck/step-10" $MPIRUN -np 2 "$STOKER" inspect "$work/ck"

# --- A fresh run never overwrites another run's checkpoints; --start-over deletes them first. ---
sums=$(cat "$work"/ck/step-*/loader/* | md5sum)
refused "a fresh run into a folder of checkpoints" "$work/ck already holds 2 step folders of an \
earlier run (step 5 to 10, the newest $work/ck/step-10): this run would start at step 0" \
  $MPIRUN -np 2 "$STOKER" run "${args[@]}" --steps 10 --checkpoint-dir "$work/ck" --save-every 5
[ "$(cat "$work"/ck/step-*/loader/* | md5sum)" = "$sums" ] || fail "the refused run changed ck"
refused "--start-over with --resume" "--resume excludes --start-over" \
  "$STOKER" run "${args[@]}" --checkpoint-dir "$work/ck" --resume --start-over
cp -r "$work/ck" "$work/ck-over"
refused "--start-over of a run that cannot start" "corpus folder $work/nosuch does not exist" \
  "$STOKER" run "${args[@]:2}" --data "$work/nosuch" --steps 5 --checkpoint-dir "$work/ck-over" \
  --save-every 5 --start-over
[ "$(cat "$work"/ck-over/step-*/loader/* | md5sum)" = "$sums" ] ||
  fail "--start-over deleted steps although the run could not start"
ok "$work/over" $MPIRUN -np 3 "$STOKER" run "${args[@]}" --steps 5 --checkpoint-dir \
  "$work/ck-over" --save-every 5 --start-over
grep -q -F -- "--start-over: deleted $work/ck-over/step-10 of an earlier run" "$work/over.err" ||
  fail "--start-over did not say what it deleted: $(cat "$work/over.err")"
[ "$(ls "$work/ck-over")" = "step-5" ] && [ "$(ls "$work/ck-over/step-5/loader" | wc -l)" = 4 ] &&
  [ -z "$(ls "$work/ck-over/step-5/loader" | grep -v -e 'of-00003.ckpt$' -e '^corpus.table$')" ] ||
  fail "--start-over left: $(ls -R "$work/ck-over")"
echo "ok: --start-over deleted the earlier steps; step-5 holds the new run's files only"

# --- Dealt datasets: inspect shows where the dealing stands in each stream, kept by a reshard. ---
dealt=("${args[@]:0:${#args[@]}-2}")  # the same run, the default --deal-max-docs
ok "$work/dealt" $MPIRUN -np 2 "$STOKER" run "${dealt[@]}" --steps 10 \
  --checkpoint-dir "$work/ck-dealt" --save-every 10
ok "$work/dealt-reshard" "$STOKER" reshard "$work/ck-dealt/step-10" --world-size 3 \
  --out "$work/dealt-3"
ok "$work/dealt-orig" "$STOKER" inspect "$work/ck-dealt/step-10" --json --data "$corpus"
ok "$work/dealt-new" "$STOKER" inspect "$work/dealt-3" --json --data "$corpus"
ok "$work/dealt-table" "$STOKER" inspect "$work/ck-dealt/step-10" --data "$corpus"
grep -q "dealt" "$work/dealt-table.out" || fail "inspect of dealt datasets does not say so"
python3 - "$work" <<'EOF' ||
import json, sys
work = sys.argv[1]
orig, new = (json.load(open(f"{work}/{n}.out")) for n in ("dealt-orig", "dealt-new"))
problems = []
for name, j in (("orig", orig), ("new", new)):
    for d, v in j["datasets"].items():
        if not v.get("dealt") or v["shards"] != 0 or v["stream_min"] > v["stream_max"]:
            problems.append(f"{name} {d}: not shown as dealt: {v}")
        elif (v["epochs_done"] != v["stream_min"] / v["docs"]
              or v["epoch_max"] != v["stream_max"] // v["docs"]):
            problems.append(f"{name} {d}: epochs not from the stream: {v}")
        for r in j["ranks"]:
            if r["datasets"][d]["docs"] != v["docs"]:
                problems.append(f"{name} rank {r['rank']} {d}: {r['datasets'][d]['docs']} "
                                f"documents, not the dataset's {v['docs']}")
    if j["datasets"]["c"]["epochs_done"] < 1:
        problems.append(f"{name}: c (dealt) has done {j['datasets']['c']['epochs_done']} epochs")
for d in orig["datasets"]:
    for key in ("started_tokens", "stream_min", "stream_max", "epoch_min", "epoch_max"):
        if new["datasets"][d][key] != orig["datasets"][d][key]:
            problems.append(f"{d} {key} across the reshard: {new['datasets'][d][key]}, "
                            f"not {orig['datasets'][d][key]}")
sys.exit("\n".join(problems) or None)
EOF
  fail "inspect of dealt datasets, before and after a reshard"
echo "ok: inspect shows dealt datasets by their streams' positions, kept by a reshard"

# --- --help explains the commands. ---
ok "$work/help-reshard" "$STOKER" reshard --help
for word in --world-size --out "login node" "bit for bit" step_dir; do
  grep -q -i -F -- "$word" "$work/help-reshard.out" ||
    fail "reshard --help does not mention '$word'"
done
ok "$work/help-inspect" "$STOKER" inspect --help
for word in --data --json checkpoint epochs_done started_tokens; do
  grep -q -F -- "$word" "$work/help-inspect.out" || fail "inspect --help does not mention '$word'"
done
echo "ok: --help of reshard and inspect"
