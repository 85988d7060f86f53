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
# Nothing here races: a run that must still be at work when another starts is held (its --dump
# goes into a pipe this script reads only when it is time), and the killed run is held in its
# save of step 30, so that when it is killed step 20 is its newest complete step and it has
# recorded steps past it, however slow the machine.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work audit-runs
start=$SECONDS
# Every run this script started is killed when it ends, so that a failed check leaves no run
# behind (a held one would wait for minutes).
sessions=()
on_exit() {
  local s
  for s in "${sessions[@]}"; do kill -KILL $(ps -o pid= --sid "$s") 2> /dev/null || true; done
  rm -rf "$work"
}
trap on_exit EXIT

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
    --checkpoint-dir "$ckpt" "$@" > "$work/$name.out" 2> "$work/$name.err" 3<&- &
  launched=$!
  sessions+=("$launched")
}

# finish NAME PID: waits for the run; it must exit 0.
finish() {
  local rc=0
  wait "$2" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/$1.err" >&2; fail "$1 exited $rc"; }
}

# wait_until WHAT PID COMMAND...: until COMMAND succeeds, the run PID still going. The bound
# (60 s, where a quiet machine takes under 2 s) only makes a run that never gets there fail with
# WHAT before CTest's limit for the whole script.
wait_until() {
  local what=$1 pid=$2 deadline=$((SECONDS + 60))
  shift 2
  until "$@"; do
    kill -0 "$pid" 2> /dev/null || fail "the run ended before $what"
    ((SECONDS < deadline)) || fail "no $what after 60 s"
    sleep 0.05
  done
}

# wait_for FILE PID: until FILE exists (the run PID still going).
wait_for() { wait_until "$1" "$2" test -e "$1"; }

# hold PIPE FREE: PIPE (DIR/rank-0.bin) becomes a pipe for the --dump DIR of a run on 1 rank,
# which this script keeps open for reading (fd 3) and reads FREE steps of (--batch-size rows of
# --seq-len + 1 int64 tokens each); the run goes on until the pipe is full (64 KiB: 128 steps; at
# least 8 on a system short of pipe memory), then waits in its write, still running, until
# `release`. Readers share fd 3 (a pipe with no reader at all would end the run with SIGPIPE);
# no other process gets it (3<&-).
hold() {
  mkfifo "$1"
  exec 4<> "$1" 3< "$1" 4>&-  # read-only fd 3, opened without waiting for a writer
  dd of=/dev/null bs=$((2 * 32 * 8)) count="$2" iflag=fullblock status=none <&3 3<&- &
}
release() {
  cat > /dev/null <&3 3<&- &  # to the run's end
  exec 3<&-
}

# --- Two fresh runs at once: 1 rank, then 2 ranks while the first is at work. ---
# The first is held after 10 steps and a full pipe (at most 138 of its 300) until the second
# has ended: then it writes at least 162 steps (3.2 s at 20 ms each) after the second started,
# past the 2 s tolerance.
tr="$work/both"
mkdir "$work/dump-first"
hold "$work/dump-first/rank-0.bin" 10
launch first 1 300 "$tr" "$work/ckpt-first" --dump "$work/dump-first"
first=$launched
wait_for "$tr/from-0/rank-0-of-1.trace" "$first"
launch second 2 150 "$tr" "$work/ckpt-second"
second=$launched
finish second "$second"
kill -0 "$first" 2> /dev/null || fail "the first run ended before the second did"
release
finish first "$first"
audit both 1 "$tr"
grep -q "^  runs from-0 (1 rank; host .*) and from-0 (2 ranks; host .*) ran at the same time: the \
first still wrote at .* s after the second started (clock tolerance 2 s); the first was set aside \
as superseded/.*/from-0 when the second started" "$work/both.out" ||
  fail "two runs at once are not named: $(cat "$work/both.out")"
echo "ok: two runs at once (1 and 2 ranks, one trace folder): exit 1"
grep "ran at the same time" "$work/both.out"

# --- A resume from a copy of a running run's checkpoint: from-0 and from-20 overlap in time. ---
# The running run is held after its save of step 20 and a full pipe (at most 148 of its 300
# steps) until the resumed one has ended, as above: 152 steps (3 s) after the resume started.
tr="$work/overlap"
mkdir "$work/dump-running"
hold "$work/dump-running/rank-0.bin" 20
launch running 1 300 "$tr" "$work/ckpt-running" --dump "$work/dump-running"
running=$launched
wait_for "$work/ckpt-running/step-20/loader/rank-00000-of-00001.ckpt" "$running"
mkdir "$work/ckpt-copy"
cp -r "$work/ckpt-running/step-20" "$work/ckpt-copy/"
launch resumed 2 120 "$tr" "$work/ckpt-copy" --resume
resumed=$launched
finish resumed "$resumed"
kill -0 "$running" 2> /dev/null || fail "the running run ended before the resumed one did"
release
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
# The save of step 30 is held (its writes wait 10 minutes), so the run stops at the save of step
# 40, which waits for it: it is killed once step 20 is complete and rank 0 has recorded step 30.
tr="$work/chain" ck="$work/ckpt-chain"
STOKER_FAULTS="$STOKER_FAULTS,write:/step-30/:*:delay=600000" launch killed 2 100000 "$tr" "$ck"
killed=$launched
newest_is_20() {
  [ -d "$ck/step-30" ] && [ "$("$STOKER" steps "$ck" --newest 2> /dev/null | cut -f1)" = 20 ]
}
wait_until "a complete step 20 and a step-30 folder" "$killed" newest_is_20
# mpirun and both ranks at once: mpirun puts each rank in a process group of its own, so a
# SIGKILL to mpirun (or its group) alone leaves the ranks running, writing, holding the lock.
kill -KILL $(ps -o pid= --sid "$killed")
wait "$killed" 2> /dev/null && fail "the killed run exited 0" || true
# Gone, not only killed: the resume must find the lock free and no rank writing. (Zombies, which
# no one may reap in a container, are gone enough.)
alive() { ps -o stat= --sid "$killed" | grep -qv '^ *Z'; }
deadline=$((SECONDS + 60))  # as in wait_until
while alive; do
  ((SECONDS < deadline)) || fail "the killed run's processes are still there after 60 s"
  sleep 0.05
done
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
