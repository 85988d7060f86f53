#!/usr/bin/env bash
# `stoker audit` tells two runs that wrote into one trace folder at the same time from a chain of
# resumes (run records: from-<S>/run.json, run.clock; docs/format.md, "Piece traces"). Real
# `stoker run --trace` under mpirun, paced by the fault seam (every trace write delayed 20 ms):
#   - two fresh runs on one trace folder, with different checkpoint folders, one on 1 rank and
#     one on 2 started while the first runs: the second sets the first's from-0 aside, the first
#     goes on writing; both exit 0, the audit exits 1 naming both runs;
#   - a run on 2 ranks resumed from a copy of the checkpoint of a run on 1 rank that is still
#     running: consecutive runs from-0 and from-20 that overlap in time; exit 1 naming both;
#   - a legitimate chain: a run on 2 ranks killed with SIGKILL (all its processes) after saving
#     step 20 and recording steps past it, resumed on 1 rank in the same trace folder: clean,
#     with both run records and no note of runs at the same time;
#   - trace folders without run records (an older stoker): audited as before, with a note.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work audit-runs
start=$SECONDS

corpus="$work/corpus"
"$STOKER" synth "$corpus" --dataset a:40000:30 --dataset b:20000:40 --files 2 --seed 3 \
  > "$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
common=(--data "$corpus" --seq-len 31 --batch-size 2 --logical-shards 16 --seed 4 --save-every 10)
export STOKER_FAULTS="write:.trace:*:delay=20"  # every trace write 20 ms late: a pace, no fault

# launch NAME NP STEPS TRACE CKPT [ARGS...]: `stoker run` in the background, in its own process
# group (pid in $launched); logs NAME.out, NAME.err.
launch() {
  local name=$1 np=$2 steps=$3 trace=$4 ckpt=$5
  shift 5
  setsid $MPIRUN -np "$np" "$STOKER" run "${common[@]}" --steps "$steps" --trace "$trace" \
    --checkpoint-dir "$ckpt" "$@" > "$work/$name.out" 2> "$work/$name.err" &
  launched=$!
}

# finish NAME PID: waits for the run; it must exit 0.
finish() {
  local rc=0
  wait "$2" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/$1.err" >&2; fail "$1 exited $rc"; }
}

# wait_for FILE PID: until FILE exists (the run PID still going).
wait_for() {
  for ((i = 0; i < 200; ++i)); do
    [ -e "$1" ] && return 0
    kill -0 "$2" 2> /dev/null || fail "the run ended before $1 appeared"
    sleep 0.05
  done
  fail "no $1 after 10 s"
}

# --- Two fresh runs at once: 1 rank, then 2 ranks while the first is at work. ---
tr="$work/both"
launch first 1 300 "$tr" "$work/ckpt-first"
first=$launched
wait_for "$tr/from-0/rank-0-of-1.trace" "$first"
sleep 0.5
launch second 2 150 "$tr" "$work/ckpt-second"
second=$launched
wait_for "$tr/from-0/rank-1-of-2.trace" "$second"
kill -0 "$first" 2> /dev/null || fail "the first run ended before the second started"
finish second "$second"
finish first "$first"
audit both 1 "$tr"
grep -q "^  runs from-0 (1 rank; host .*) and from-0 (2 ranks; host .*) ran at the same time: the \
first still wrote at .* s after the second started (clock tolerance 2 s); the first was set aside \
as superseded/.*/from-0 when the second started" "$work/both.out" ||
  fail "two runs at once are not named: $(cat "$work/both.out")"
echo "ok: two runs at once (1 and 2 ranks, one trace folder): exit 1"
grep "ran at the same time" "$work/both.out"

# --- A resume from a copy of a running run's checkpoint: from-0 and from-20 overlap in time. ---
tr="$work/overlap"
launch running 1 300 "$tr" "$work/ckpt-running"
running=$launched
wait_for "$work/ckpt-running/step-20/loader/rank-00000-of-00001.ckpt" "$running"
mkdir "$work/ckpt-copy"
cp -r "$work/ckpt-running/step-20" "$work/ckpt-copy/"
launch resumed 2 120 "$tr" "$work/ckpt-copy" --resume
resumed=$launched
finish resumed "$resumed"
finish running "$running"
audit overlap 1 "$tr" --json
python3 - "$work/overlap.out" <<'EOF' || fail "overlap: $(head -c 3000 "$work/overlap.out")"
import json, sys
r = json.load(open(sys.argv[1]))
runs = [(x["start_step"], x["world_size"]) for x in r["runs"]]
assert runs == [(0, 1), (20, 2)], runs
p = r["problems"][0]
assert p.startswith("runs from-0 (1 rank; host ") and ") and from-20 (2 ranks; host " in p, p
assert "ran at the same time: the first still wrote at" in p, p
assert all(x["record"] and x["record"]["last_write"] for x in r["runs"]), r["runs"]
EOF
echo "ok: a resume from a running run's checkpoint (from-0 on 1 rank, from-20 on 2): exit 1"

# --- A legitimate chain: killed with SIGKILL past its save of step 20, resumed on 1 rank. ---
tr="$work/chain" ck="$work/ckpt-chain"
launch killed 2 100000 "$tr" "$ck"
killed=$launched
wait_for "$ck/step-20/loader/rank-00001-of-00002.ckpt" "$killed"
sleep 0.3
# mpirun and both ranks at once: mpirun puts each rank in a process group of its own, so a
# SIGKILL to mpirun (or its group) alone leaves the ranks running, writing, holding the lock.
kill -KILL $(ps -o pid= --sid "$killed")
wait "$killed" 2> /dev/null && fail "the killed run exited 0" || true
for ((i = 0; i < 100; ++i)); do [ -n "$(ps -o pid= --sid "$killed")" ] || break; sleep 0.05; done
newest=$("$STOKER" steps "$ck" --newest | cut -f1)
unset STOKER_FAULTS
timeout 60 $MPIRUN -np 1 "$STOKER" run "${common[@]}" --steps $((newest + 15)) --trace "$tr" \
  --checkpoint-dir "$ck" --resume > "$work/resume.out" 2> "$work/resume.err" ||
  { cat "$work/resume.err" >&2; fail "the resume on 1 rank failed"; }
audit chain 0 "$tr" --json
python3 - "$work/chain.out" "$newest" <<'EOF' || fail "chain: $(head -c 3000 "$work/chain.out")"
import json, sys
r, newest = json.load(open(sys.argv[1])), int(sys.argv[2])
runs = [(x["start_step"], x["world_size"]) for x in r["runs"]]
assert r["clean"] and runs == [(0, 2), (newest, 1)], (runs, r["problems"][:3])
assert r["runs"][0]["recorded_end"] > newest, r["runs"][0]  # steps past the save, replayed
assert all(x["record"] for x in r["runs"]), r["runs"]
assert not any("same time" in n for x in r["runs"] for n in x["notes"]), r["runs"]
EOF
echo "ok: killed (SIGKILL) on 2 ranks past step $newest, resumed on 1: clean"

# --- Trace folders of an older stoker, without run records: audited as before, with a note. ---
cp -r "$tr" "$work/old"
rm "$work/old"/from-*/run.json
audit old 0 "$work/old"
grep -q "^clean" "$work/old.out" || fail "old: $(cat "$work/old.out")"
[ "$(grep -c 'no run record (run.json; an older stoker wrote this run): whether it ran at the same time as another run was not checked' "$work/old.out")" = 2 ] ||
  fail "old: no note on the runs without records: $(cat "$work/old.out")"
"$STOKER" audit --help > "$work/audit-help.txt"  # not piped: grep -q would stop the writer early
grep -q -- "--clock-tolerance" "$work/audit-help.txt" || fail "audit --help: no --clock-tolerance"
echo "ok: all in $((SECONDS - start)) s"
