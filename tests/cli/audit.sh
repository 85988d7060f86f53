#!/usr/bin/env bash
# Piece traces and `stoker audit`, end to end. A chain of `stoker run --trace` runs resumed from
# checkpoints on other rank counts -- 4 ranks stopped at step 14 after saving step 12, resumed on
# 2 ranks to step 26 (saved 24), then on 3 ranks to step 40 -- audits clean, with the numbers
# checked in its JSON: each run counts for the steps up to the next run's start, tokens checked
# = sum over runs of valid steps x ranks x rows x (seq_len + 1), and with --data every document
# of epochs 0 and 1 is delivered whole, the epoch's framed tokens being the dataset's tokens plus
# one EOS per non-empty document (but for documents the last step holds open). Then:
#   - a last run whose file ends in a partial record (a kill while writing): the step drops out,
#     still clean;
#   - a duplicated record, a run folder removed (steps missing), a rank's trace overwritten by
#     another's (many problems: 20 printed, "... and N more"): exit 1 naming the problem;
#   - a resume from an OLDER checkpoint: the newer run's folder is set aside without its records,
#     audit clean;
#   - a run really killed (SIGKILL to its ranks mid-stream), then resumed: audit clean;
#   - errors: a missing rank file, --bos without --data, --bos for runs without BOS (not clean,
#     saying so first); --help explains every option.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work audit
start=$SECONDS

corpus="$work/corpus"
"$STOKER" synth "$corpus" --dataset a:1500:30 --dataset b:1000:40 --dataset c:500:10 \
  --files 2 --seed 3 > "$work/synth.log" 2>&1 ||
  { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
"$STOKER" inspect "$corpus" --json > "$work/inspect.json"

seq=31 batch=2
step_tokens=$((batch * (seq + 1)))
common=(--data "$corpus" --seq-len "$seq" --batch-size "$batch" --logical-shards 16 --seed 4)

# run NP STEPS TRACE CKPT [ARGS...]: `stoker run` at NP ranks to step STEPS, saving every 4.
run() {
  local np=$1 steps=$2 trace=$3 ckpt=$4 log="$work/run-$1-$2"
  shift 4
  timeout 60 $MPIRUN -np "$np" "$STOKER" run "${common[@]}" --steps "$steps" --trace "$trace" \
    --checkpoint-dir "$ckpt" --save-every 4 "$@" > "$log.out" 2> "$log.err" ||
    { cat "$log.out" "$log.err" >&2; fail "stoker run at $np ranks to step $steps"; }
}

# check NAME WORLD:START:VALID_END... [-- whole]: the JSON of audit NAME is clean, has exactly
# these runs, and counts their tokens; with "whole", epochs 0 and 1 are delivered whole.
cat > "$work/check.py" <<'EOF'
import json, sys
report, inspect = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
step_tokens, args = int(sys.argv[3]), sys.argv[4:]
whole = "whole" in args
# open=STEP.json: `stoker inspect --json` of the last run's last step; its documents started and
# not finished may be of epoch 1 (a document cut by a step's end goes on after those that fall
# due, mixing/lane.h)
ends = [json.load(open(a[5:])) for a in args if a.startswith("open=")]
still_open = {n: v["unfinished_docs"] for n, v in ends[0]["datasets"].items()} if ends else {}
runs = [tuple(int(x) for x in a.split(":")) for a in args if a != "whole" and "=" not in a]
problems = []
if not report["clean"] or report["problem_count"] != 0:
    problems.append(f"not clean: {report['problems'][:5]}")
got = [(r["world_size"], r["start_step"], r["valid_end"]) for r in report["runs"]]
if got != runs:
    problems.append(f"runs (world, start, valid end) are {got}, not {runs}")
tokens = sum(w * (end - s) * step_tokens for w, s, end in runs)
if report["tokens_checked"] != tokens:
    problems.append(f"tokens_checked {report['tokens_checked']}, not {tokens}")
if report["steps"] != sum(end - s for _, s, end in runs):
    problems.append(f"steps {report['steps']}")
for r in report["runs"]:
    if r["tokens_per_step"] != step_tokens or r["tokens"] != r["valid_steps"] * r["world_size"] * step_tokens:
        problems.append(f"run from-{r['start_step']}: {r}")
for name, d in inspect["datasets"].items() if whole else []:
    got = report["datasets"].get(name)
    if got is None or got["docs"] != d["docs"]:
        problems.append(f"dataset {name}: {got and got.get('docs')} docs, not {d['docs']}")
        continue
    for e in got["epochs"][:2]:
        want = d["tokens"] + got["nonempty_docs"]
        cut = got["nonempty_docs"] - e["whole_documents"]
        if (e["documents"] != got["nonempty_docs"] or cut > still_open.get(name, 0) or
                (cut == 0 and e["tokens"] != want)):
            problems.append(f"dataset {name} epoch {e['epoch']}: {e}, not all "
                            f"{got['nonempty_docs']} documents whole ({want} framed tokens) but "
                            f"{still_open.get(name, 0)} still open")
sys.exit("\n".join(problems) or None)
EOF
check() {
  local name=$1
  shift
  python3 "$work/check.py" "$work/$name.out" "$work/inspect.json" "$step_tokens" "$@" ||
    fail "$name: the audit's numbers are wrong: $(head -c 2000 "$work/$name.out")"
}

# --- The chain: 4 ranks (stopped at 14, saved 12), 2 ranks (to 26, saved 24), 3 ranks to 40. ---
tr="$work/trace" ck="$work/ckpt"
run 4 14 "$tr" "$ck"
run 2 26 "$tr" "$ck" --resume
run 3 40 "$tr" "$ck" --resume
[ "$(ls "$tr")" = "$(printf 'from-0\nfrom-12\nfrom-24')" ] || fail "trace folders: $(ls "$tr")"
timeout 60 $MPIRUN -np 2 "$STOKER" audit "$tr" --data "$corpus" --json > "$work/chain.out" ||
  fail "stoker audit of a clean chain under mpirun failed: $(cat "$work/chain.out")"
[ "$(wc -l < "$work/chain.out")" = 1 ] || fail "--json under mpirun printed more than one line"
"$STOKER" inspect "$ck/step-40" --json > "$work/step-40.json"
check chain 4:0:12 2:12:24 3:24:40 whole "open=$work/step-40.json"
grep -q 'steps 13..14 replayed by from-12' "$work/chain.out" || fail "no note on replayed steps"
audit chain-text 0 "$tr"
grep -q '^clean' "$work/chain-text.out" || fail "the report does not say clean: $(cat "$work/chain-text.out")"
grep -Eq '^from-12 +2 +13\.\.26 +13\.\.24 +64 ' "$work/chain-text.out" ||
  fail "no row for run from-12: $(cat "$work/chain-text.out")"
echo "ok: a chain 4 -> 2 -> 3 ranks audits clean, epochs 0 and 1 whole"

# --- A last run killed while writing: a partial record; its step drops out. ---
cp -r "$tr" "$work/cut"
truncate -s -20 "$work/cut/from-24/rank-1-of-3.trace"
audit cut 0 "$work/cut" --json
check cut 4:0:12 2:12:24 3:24:39
grep -q 'step 40 dropped: not recorded completely by every rank (rank 1 recorded step 40 in part' \
  "$work/cut.out" || fail "no note on the partial step: $(cat "$work/cut.out")"
grep -q 'partial record of 28 bytes' "$work/cut.out" || fail "no note on the partial record"
echo "ok: a partial last record drops step 40 of the last run, clean"

# --- Tampered traces. ---
cp -r "$tr" "$work/dup"
python3 - "$work/dup/from-24/rank-1-of-3.trace" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
at = 48 * 5  # duplicate record 5 in place
open(sys.argv[1], "wb").write(data[:at + 48] + data[at:at + 48] + data[at + 48:])
EOF
audit dup 1 "$work/dup" --data "$corpus"
grep -Eq 'delivered twice: by from-24 rank 1 of 3 at step [0-9]+, .* and by from-24 rank 1 of 3' \
  "$work/dup.out" || fail "the duplicate is not named: $(cat "$work/dup.out")"
grep -q '^2 problems:' "$work/dup.out" || fail "dup: $(cat "$work/dup.out")"

cp -r "$tr" "$work/gap"
rm -rf "$work/gap/from-12"
audit gap 1 "$work/gap"
for r in 0 1 2 3; do
  grep -q "from-0 rank $r of 4: no records for steps 15..24" "$work/gap.out" ||
    fail "gap: rank $r's missing steps are not named: $(cat "$work/gap.out")"
done

cp -r "$tr" "$work/many"
cp "$work/many/from-24/rank-0-of-3.trace" "$work/many/from-24/rank-1-of-3.trace"
audit many 1 "$work/many"
[ "$(grep -c 'delivered twice' "$work/many.out")" -ge 10 ] || fail "many: $(cat "$work/many.out")"
grep -Eq '^  \.\.\. and [0-9]+ more$' "$work/many.out" || fail "many: no '... and N more'"
[ "$(awk '/problems:$/ { p = 1; next } p && !/ more$/' "$work/many.out" | wc -l)" = 20 ] ||
  fail "many: not 20 problems printed: $(cat "$work/many.out")"
echo "ok: a duplicated record, a removed run, an overwritten rank: exit 1, named"

# --- Resume from an older checkpoint: the newer run's trace is removed. ---
cp -r "$tr" "$work/old-trace"
cp -r "$ck" "$work/old-ckpt"
for dir in "$work/old-ckpt"/step-*; do
  [ "${dir##*step-}" -le 16 ] || rm -rf "$dir"
done
run 2 30 "$work/old-trace" "$work/old-ckpt" --resume
[ "$(ls "$work/old-trace")" = "$(printf 'from-0\nfrom-12\nfrom-16\nsuperseded')" ] ||
  fail "after a resume from step 16: $(ls "$work/old-trace")"
# from-24 set aside without its records: who it was and when it last wrote, for the audit.
[ "$(cd "$work/old-trace/superseded" && ls */from-24)" = "$(printf 'run.clock\nrun.json')" ] ||
  fail "from-24 is not set aside as superseded/<id>/from-24: $(find "$work/old-trace/superseded")"
audit old 0 "$work/old-trace" --data "$corpus" --json
check old 4:0:12 2:12:16 2:16:30
echo "ok: a resume from an older checkpoint (16) supersedes from-24, clean"

# --- A run really killed mid-stream, then resumed. ---
$MPIRUN -np 3 "$STOKER" run "${common[@]}" --steps 100000000 --trace "$tr" --checkpoint-dir "$ck" \
  --save-every 100 --resume > "$work/killed.out" 2> "$work/killed.err" &
pid=$!
for ((i = 0; i < 300; ++i)); do  # until every rank streams and step 100 is saved
  [ "$(ls "$ck/step-100/loader" 2> /dev/null | grep -c '\.ckpt$')" = 3 ] && break
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.1
done
sleep 0.2
# SIGKILL to the ranks (mpirun's children): a stop signal would stop the run with a save.
pkill -KILL -P "$pid" || fail "the run to be killed ended by itself: $(cat "$work/killed.err")"
wait "$pid" && fail "the killed run exited 0" || true
audit killed 0 "$tr" --json
python3 - "$work/killed.out" <<'EOF' || fail "killed: $(head -c 2000 "$work/killed.out")"
import json, sys
r = json.load(open(sys.argv[1]))
last = r["runs"][-1]
assert r["clean"] and last["start_step"] == 40 and last["world_size"] == 3, r["runs"]
assert 100 <= last["valid_end"] <= last["recorded_end"], last
EOF
run 2 $(( $(ls "$ck" | sed 's/step-//' | sort -n | tail -1) + 8 )) "$tr" "$ck" --resume
audit resumed 0 "$tr" --json
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['clean'] and r['runs'][-1]['world_size'] == 2 and len(r['runs']) == 5, r['runs']" \
  "$work/resumed.out" || fail "resumed after the kill: $(head -c 2000 "$work/resumed.out")"
echo "ok: a run killed mid-stream, then resumed on 2 ranks: clean"

# --- Errors and help. ---
cp -r "$tr" "$work/missing"
rm "$work/missing/from-0/rank-2-of-4.trace"
audit missing 1 "$work/missing"
grep -q "from-0: no file for rank 2 of 4 (rank-2-of-4.trace)" "$work/missing.err" ||
  fail "a missing rank file is not named: $(cat "$work/missing.err")"
audit bos 1 "$tr" --bos
grep -q -- "--bos .*needs --data" "$work/bos.err" || fail "--bos without --data: $(cat "$work/bos.err")"
# The runs framed documents without BOS: audited with --bos, not clean, saying why first.
audit wrong-bos 1 "$tr" --data "$corpus" --bos
grep -A1 -E "problems?:" "$work/wrong-bos.out" | grep -q "document ends checked fall one framed token \
short of BOS tokens EOS: the runs framed documents without BOS (audit them without --bos)" ||
  fail "--bos on a trace without BOS: $(head -c 3000 "$work/wrong-bos.out")"
echo "ok: --bos on a trace recorded without BOS: $(grep -m1 "fall one framed" "$work/wrong-bos.out")"
"$STOKER" audit --help > "$work/help.txt"
for word in --data --bos --json "n + 2" "Exit code 0"; do
  grep -q -- "$word" "$work/help.txt" || fail "stoker audit --help does not explain $word"
done
"$STOKER" run --help > "$work/run-help.txt"  # not piped: grep -q would stop the writer early
grep -q -- "--trace" "$work/run-help.txt" || fail "stoker run --help has no --trace"
echo "ok: all in $((SECONDS - start)) s"
