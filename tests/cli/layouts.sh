#!/usr/bin/env bash
# Parallel layouts end to end (`stoker run --layout`, docs/loader.md "Parallel layouts"), 8 ranks:
# a chain of runs saved and resumed under other layouts -- tp=4 (dp 2) to step 14, saved 12;
# tp=2 (dp 4) to step 26, saved 24; no layout (dp 8) to 38, saved 36; tp=8 (dp 1) with every
# rank reading for itself to 50 -- holds one checkpoint file and one trace per data-parallel rank
# at every step, and `stoker audit` finds every token of the chain exactly once, epoch 0 of
# every dataset whole; `stoker inspect` names a step's layout; the example trainers under a
# layout given by its sizes (below). A layout that does not divide the job is refused with one
# message, and --layout beside one of the sizes before anything starts.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags), STOKER_SOURCE (the
# checkout); STOKER_TRAIN and STOKER_PYTHONPATH (the folder of the stoker package) when built.
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"
: "${STOKER_SOURCE:?STOKER_SOURCE must name the checkout}"

make_work layouts
corpus="$work/corpus" tr="$work/trace" ck="$work/ckpt"
"$STOKER" synth "$corpus" --dataset a:3000:30 --dataset b:2000:40 --files 2 --seed 3 \
  > "$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
common=(--data "$corpus" --seq-len 32 --batch-size 2 --logical-shards 16 --seed 4
        --trace "$tr" --checkpoint-dir "$ck" --save-every 4 --resume)

# run STEPS [ARGS...]: `stoker run` at 8 ranks to step STEPS.
run() {
  local steps=$1 log="$work/run-$1"
  shift
  timeout 120 $MPIRUN -np 8 "$STOKER" run "${common[@]}" --steps "$steps" "$@" \
    > "$log.out" 2> "$log.err" || { cat "$log.out" "$log.err" >&2; fail "stoker run to $steps"; }
}

# files DIR PATTERN: the names in DIR matching PATTERN, on one line.
files() { (cd "$1" && ls | grep -E "$2" | tr '\n' ' '); }

run 14 --layout tp=4
[ "$(files "$ck/step-12/loader" 'ckpt$')" = "rank-00000-of-00002.ckpt rank-00001-of-00002.ckpt " ] ||
  fail "step 12 under tp=4 holds $(files "$ck/step-12/loader" 'ckpt$')"
[ "$(files "$tr/from-0" 'trace$')" = "rank-0-of-2.trace rank-1-of-2.trace " ] ||
  fail "the trace under tp=4 holds $(files "$tr/from-0" 'trace$')"
run 26 --layout tp=2
[ "$(files "$ck/step-24/loader" 'ckpt$' | wc -w)" = 4 ] || fail "step 24 under tp=2: not 4 files"
run 38
run 50 --layout tp=8 --replica-feed read
[ "$(files "$tr/from-36" 'trace$')" = "rank-0-of-1.trace " ] ||
  fail "the trace under tp=8 holds $(files "$tr/from-36" 'trace$')"
"$STOKER" inspect "$ck/step-12" --json > "$work/step-12.json"
"$STOKER" inspect "$ck/step-36" --json > "$work/step-36.json"
python3 - "$work/step-12.json" "$work/step-36.json" <<'PY' || fail "stoker inspect of the steps"
import json, sys
tp4, flat = (json.load(open(f)) for f in sys.argv[1:])
assert (tp4["layout"], tp4["world_size"], tp4["format_version"]) == ("tp=4,cp=1,dp=2,pp=1", 2, 5), tp4
assert (flat["layout"], flat["world_size"], flat["format_version"]) == (None, 8, 5), flat
PY
"$STOKER" inspect "$ck/step-12" | grep -q '^parallel layout tp=4,cp=1,dp=2,pp=1: a rank file per data-parallel rank$' ||
  fail "stoker inspect does not show the layout of step 12"
echo "ok: one checkpoint file and one trace per data-parallel rank under each layout, inspect names it"

timeout 60 "$STOKER" audit "$tr" --data "$corpus" --json > "$work/audit.json" ||
  fail "stoker audit of the chain: $(head -c 2000 "$work/audit.json")"
python3 - "$work/audit.json" <<'PY' || fail "the audit of the chain: $(head -c 2000 "$work/audit.json")"
import json, sys
report = json.load(open(sys.argv[1]))
runs = [(r["world_size"], r["start_step"], r["valid_end"]) for r in report["runs"]]
assert report["clean"], report["problems"][:5]
assert runs == [(2, 0, 12), (4, 12, 24), (8, 24, 36), (1, 36, 50)], runs
for name, d in report["datasets"].items():
    first = d["epochs"][0]
    assert first["whole_documents"] == d["nonempty_docs"], (name, first)
PY
echo "ok: the chain tp=4 -> tp=2 -> dp 8 -> tp=8 audits clean, epoch 0 of every dataset whole"

# The example trainers under a layout. stoker-train at 8 ranks, --tensor-parallel 2
# --context-parallel 2 (dp 2): the ranks of a replica check at every log line that they took the
# same batches; each cp rank trains on its part of the rows and the gradients are averaged over
# the 4 ranks of its tp coordinate, so every rank ends with the same weights (checked by the
# trainer). train.py by jobs/mpirun/train.sh at 4 ranks, TENSOR_PARALLEL=2 CONTEXT_PARALLEL=2
# (dp 1) in the environment: the same checks, gradients over the 2 cp ranks of its tp
# coordinate. Tokens count each replica's once.
# trained OUT STEPS DP: the result line of OUT trained STEPS steps of 2 rows of 32 at dp DP.
trained() {
  python3 - "$@" <<'PY' || fail "the result of $1: $(tail -c 2000 "$1")"
import json, sys
out, steps, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
result = json.loads(open(out).read().strip().splitlines()[-1])
assert result["tokens"] == steps * 2 * 32 * dp, result
# Each dataset's framed tokens over the data-parallel ranks, a replica's counted once.
assert sum(result["dataset_tokens"].values()) == steps * 2 * 33 * dp, result
assert result["model_checksum"], result
PY
}
if [ -n "${STOKER_TRAIN:-}" ]; then
  timeout 180 $MPIRUN -np 8 "$STOKER_TRAIN" --data "$corpus" --seq-len 32 --batch-size 2 \
    --steps 6 --tensor-parallel 2 --context-parallel 2 --dim 16 --layers 1 --heads 2 \
    --log-every 2 > "$work/train.out" 2> "$work/train.err" ||
    { cat "$work/train.out" "$work/train.err" >&2; fail "stoker-train at tp 2 x cp 2"; }
  trained "$work/train.out" 6 2
  [ "$(grep -c 'train: step [246]/6' "$work/train.err")" = 3 ] ||
    fail "stoker-train at tp 2 x cp 2 logged no 3 lines: $(cat "$work/train.err")"
  echo "ok: stoker-train at tp 2 x cp 2 x dp 2: replicas hold the same batches and weights"
fi
if [ -n "${STOKER_PYTHONPATH:-}" ]; then
  (unset STOKER_TRAIN  # TRAINER=python's trainer, not the program STOKER_TRAIN names
   export STOKER MPIRUN PYTHONPATH=$STOKER_PYTHONPATH TRAINER=python NP=4 TENSOR_PARALLEL=2 \
     CONTEXT_PARALLEL=2 CORPUS=$corpus CHECKPOINT_DIR=$work/py SEQ_LEN=32 BATCH_SIZE=2 STEPS=6 \
     TRAIN_ARGS="--dim 16 --layers 1 --heads 2 --log-every 2"
   timeout 180 "$STOKER_SOURCE/jobs/mpirun/train.sh") > "$work/py.out" 2> "$work/py.err" ||
    { cat "$work/py.out" "$work/py.err" >&2; fail "train.py by train.sh at tp 2 x cp 2"; }
  trained "$work/py.out" 6 1
  [ "$(grep -c 'train: step [246]/6' "$work/py.err")" = 3 ] ||
    fail "train.py at tp 2 x cp 2 logged no 3 lines: $(cat "$work/py.err")"
  [ "$(files "$work/py/step-6/loader" 'ckpt$')" = "rank-00000-of-00001.ckpt " ] ||
    fail "train.py's step 6 at tp 2 x cp 2 holds $(files "$work/py/step-6/loader" 'ckpt$')"
  echo "ok: train.py by jobs/mpirun/train.sh at tp 2 x cp 2: one rank file, replicas equal"
fi

rc=0
timeout 60 $MPIRUN -np 8 "$STOKER" run --data "$corpus" --seq-len 32 --steps 2 --layout tp=3 \
  > "$work/bad.out" 2> "$work/bad.err" || rc=$?
[ "$rc" = 1 ] || fail "--layout tp=3 on 8 ranks: exit $rc, not 1"
[ "$(grep -c "layout tp=3,cp=1,pp=1 does not divide the job's 8 ranks" "$work/bad.err")" = 1 ] ||
  fail "--layout tp=3 on 8 ranks is not refused once: $(cat "$work/bad.err")"
echo "ok: a layout that does not divide the job is refused once"
rc=0
"$STOKER" run --data "$corpus" --layout tp=2 --context-parallel 2 > "$work/both.out" \
  2> "$work/both.err" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--layout and --context-parallel exclude each other" "$work/both.err" ||
  fail "--layout beside --context-parallel: exit $rc, $(cat "$work/both.err")"
echo "ok: --layout beside --context-parallel is refused before the run"
echo "PASS"
