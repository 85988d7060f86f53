#!/usr/bin/env bash
# Parallel layouts end to end (`stoker run --layout`, docs/loader.md "Parallel layouts"), 8 ranks:
# a chain of runs saved and resumed under other layouts -- tp=4 (dp 2) to step 14, saved 12;
# tp=2 (dp 4) to step 26, saved 24; no layout (dp 8) to 38, saved 36; tp=8 (dp 1) with every
# rank reading for itself to 50 -- holds one checkpoint file and one trace per data-parallel rank
# at every step, and `stoker audit` finds every token of the chain exactly once, epoch 0 of
# every dataset whole; `stoker inspect` names a step's layout; the example trainer at tp 2 x dp 2
# checks that its replicas take the same batches. A layout that does not divide the job is
# refused with one message.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

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
assert (tp4["layout"], tp4["world_size"], tp4["format_version"]) == ("tp=4,cp=1,dp=2,pp=1", 2, 4), tp4
assert (flat["layout"], flat["world_size"], flat["format_version"]) == (None, 8, 3), flat
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

# The example trainer under a layout: 4 ranks as 2 replicas of tp 2. Its members check at every
# log line that they took the same batches, and at the end that they hold the same weights; the
# tokens it trained on count each replica's once.
if [ -n "${STOKER_TRAIN:-}" ]; then
  timeout 120 $MPIRUN -np 4 "$STOKER_TRAIN" --data "$corpus" --seq-len 32 --batch-size 2 \
    --steps 6 --layout tp=2 --dim 16 --layers 1 --heads 2 --log-every 2 \
    > "$work/train.out" 2> "$work/train.err" ||
    { cat "$work/train.out" "$work/train.err" >&2; fail "stoker-train --layout tp=2"; }
  python3 - "$work/train.out" <<'PY' || fail "stoker-train --layout tp=2: $(tail -c 2000 "$work/train.out")"
import json, sys
result = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert result["tokens"] == 6 * 2 * 32 * 2, result  # steps x rows x seq_len x dp
assert result["model_checksum"], result
PY
  [ "$(grep -c 'train: step [246]/6' "$work/train.err")" = 3 ] ||
    fail "stoker-train --layout tp=2 logged no 3 lines: $(cat "$work/train.err")"
  echo "ok: stoker-train at tp=2 x dp 2: replicas hold the same batches and weights"
fi

rc=0
timeout 60 $MPIRUN -np 8 "$STOKER" run --data "$corpus" --seq-len 32 --steps 2 --layout tp=3 \
  > "$work/bad.out" 2> "$work/bad.err" || rc=$?
[ "$rc" = 1 ] || fail "--layout tp=3 on 8 ranks: exit $rc, not 1"
[ "$(grep -c "layout tp=3,cp=1,pp=1 does not divide the job's 8 ranks" "$work/bad.err")" = 1 ] ||
  fail "--layout tp=3 on 8 ranks is not refused once: $(cat "$work/bad.err")"
echo "ok: a layout that does not divide the job is refused once"
echo "PASS"
