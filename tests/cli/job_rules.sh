#!/usr/bin/env bash
# `stoker job`, the decisions of the Slurm job scripts, run as jobs/common.sh runs them but
# without Slurm: one process, the decision as a word on the first line of stdout and then the
# lines the script prints; exit 0 once decided, 2 on any error.
#   time-limit: a limit at or below the warning offset is too short (the wording
#     tests/slurm/limits.sh greps), above it fits, UNLIMITED and Partition_Limit are not checked;
#     a --signal spec sbatch would refuse, a missing or doubled offset, under mpirun: exit 2.
#   requeue: the record CHECKPOINT_DIR/.stoker-requeues counted through each branch (no step
#     yet, a newer step, the same step up to --idle-requeues, the last step reached, no step
#     found), written atomically and removed when the job stops; a record that cannot be
#     written gives up where IDLE_REQUEUES sets a limit (it could not count) and is a warning
#     without one.
# Environment: STOKER, MPIRUN (see tests/CMakeLists.txt).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?}" "${MPIRUN:?}"

make_work job_rules

# job NAME ARGS...: `stoker job ARGS`, stdout in $work/NAME.out, stderr in NAME.err; fails
# unless it exits 0. decided NAME WORD LINE: its first line is WORD and a later one holds LINE.
job() {
  local name=$1 rc=0
  shift
  "$STOKER" job "$@" > "$work/$name.out" 2> "$work/$name.err" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/$name.out" "$work/$name.err" >&2; fail "$name: exit $rc, not 0"; }
}
decided() {
  [ "$(head -n 1 "$work/$1.out")" = "$2" ] && tail -n +2 "$work/$1.out" | grep -qF -- "$3" ||
    { cat "$work/$1.out" "$work/$1.err" >&2; fail "$1: not '$2' with a line '$3'"; }
}
# refused NAME TEXT ARGS...: `stoker job ARGS` exits 2 with TEXT on stderr, nothing on stdout.
refused() {
  local name=$1 text=$2 rc=0
  shift 2
  "$STOKER" job "$@" > "$work/$name.out" 2> "$work/$name.err" || rc=$?
  [ "$rc" = 2 ] && [ ! -s "$work/$name.out" ] && grep -qF -- "$text" "$work/$name.err" ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "$name: exit $rc, not 2 with '$text'"; }
}

# --- time-limit ---
job short time-limit --limit 2:00 --signal B:USR1@180
decided short too-short \
  "error: the job's time limit (2:00) is at or below the warning offset of 180 s (--signal=B:USR1@180)"
job at time-limit --limit 3:00 --signal B:USR1@180
decided at too-short "at or below the warning offset of 180 s"
job seconds time-limit --limit 10:00 --warning-seconds 900
decided seconds too-short "at or below the warning offset of 900 s"
job fits time-limit --limit 3:01 --signal B:USR1@180
decided fits fits "time limit 3:01; the warning comes 180 s before it"
job default time-limit --limit 1:01 --signal USR1
decided default fits "the warning comes 60 s before it"
job days time-limit --limit 1-00:00:00 --signal R:SIGUSR1@65535
decided days fits "time limit 1-00:00:00; the warning comes 65535 s before it"
job days2 time-limit --limit 0-0:3 --warning-seconds 180
decided days2 too-short "time limit (0-0:3)"
job unlimited time-limit --limit UNLIMITED --signal B:USR1@180
decided unlimited unlimited "time limit UNLIMITED"
job partition time-limit --limit Partition_Limit --signal B:USR1@180
decided partition unknown "'Partition_Limit' is not a time"
echo "ok: time-limit decides too-short, fits, unlimited and unknown"

refused bad_signal "--signal 'B:FOO@10' is not" time-limit --limit 10:00 --signal B:FOO@10
refused bad_time "TIME is a number of seconds from 0 to 65535" \
  time-limit --limit 10:00 --signal B:USR1@70000
refused no_offset "--signal or --warning-seconds" time-limit --limit 10:00
refused both "excludes" time-limit --limit 10:00 --signal USR1 --warning-seconds 5
refused word "--warning-seconds" time-limit --limit 10:00 --warning-seconds abc
refused negative "negative" time-limit --limit 10:00 --warning-seconds -5
refused no_limit "--limit" time-limit --signal USR1
refused empty_limit "--limit" time-limit --limit "" --signal USR1
refused no_sub "subcommand"
refused extra "bogus" time-limit --limit 1 --signal USR1 --bogus
rc=0
$MPIRUN -np 2 "$STOKER" job time-limit --limit 10:00 --signal USR1 > "$work/mpi.out" \
  2> "$work/mpi.err" || rc=$?
[ "$rc" = 2 ] && grep -q "stoker job runs in one process" "$work/mpi.err" ||
  { cat "$work/mpi.out" "$work/mpi.err" >&2; fail "stoker job under mpirun -np 2 exited $rc"; }
"$STOKER" job time-limit --help > "$work/help.out"
grep -q "squeue -o %l" "$work/help.out" && grep -q "too-short" "$work/help.out" ||
  { cat "$work/help.out" >&2; fail "stoker job time-limit --help does not explain it"; }
echo "ok: time-limit refuses wrong options, mpirun and bad --signal specs with exit 2"

# --- requeue ---
ck=$work/ck
record=$ck/.stoker-requeues
mkdir -p "$ck"
# A real rank file: the newest step counts only when its rank files read as a resume reads them.
"$STOKER" -q synth "$work/corpus" --dataset a:2000:20 --seed 1 > /dev/null
"$STOKER" -q run --data "$work/corpus" --seq-len 16 --batch-size 1 --logical-shards 4 --steps 1 \
  --save-every 1 --checkpoint-dir "$work/real" > /dev/null || fail "saving a step to copy"
# step N [FILES...]: a step folder saved by 1 rank holding FILES (the trainer's: names only count).
step() {
  local dir=$ck/step-$1
  shift
  mkdir -p "$dir/loader"
  cp "$work/real/step-1/loader/rank-00000-of-00001.ckpt" "$dir/loader/"
  for f in "$@"; do : > "$dir/$f"; done
}
requeue() {
  local name=$1
  shift
  job "$name" requeue --checkpoint-dir "$ck" --steps 100 --idle-requeues 2 --job-id 7 \
    --require model.pt,trainer.json "$@"
}
has_record() {
  [ "$(cat "$record" 2> /dev/null)" = "$1" ] || fail "the record holds '$(cat "$record")', not '$1'"
  [ -z "$(find "$ck" -maxdepth 1 -name '*.tmp')" ] || fail "a temporary record was left behind"
}

requeue none1
decided none1 requeue "requeueing job 7: when it runs again it resumes from step 0 (no complete checkpoint)"
has_record "none 1"
requeue none2
decided none2 requeue "requeueing job 7"
has_record "none 2"
requeue none3
decided none3 give-up "error: not requeueing job 7: requeued 2 time(s) in a row without a newer complete step than step 0 (no complete checkpoint)"
[ ! -e "$record" ] || fail "the record is still there after give-up"
echo "ok: requeue with no step: requeued twice, then gave up (IDLE_REQUEUES=2), record removed"

step 10 model.pt trainer.json
job slash requeue --checkpoint-dir "$ck/" --steps 100 --idle-requeues 2 --job-id 7 \
  --require model.pt --require trainer.json
decided slash requeue "requeueing job 7: when it runs again it resumes from $ck/step-10"
has_record "10 1"
step 20 model.pt  # incomplete: no trainer.json
requeue same
decided same requeue "resumes from $ck/step-10"
has_record "10 2"
step 20 model.pt trainer.json
requeue newer --trainer-exit 137
decided newer requeue "the trainer did not stop cleanly after SIGUSR1 (exit 137); requeueing all the same"
decided newer requeue "resumes from $ck/step-20"
has_record "20 1"
echo "garbage" > "$record"
requeue garbled
decided garbled requeue "warning: the requeue record 'garbage' is not 'STEP COUNT'"
has_record "20 1"
job nolimit requeue --checkpoint-dir "$ck" --steps 100 --idle-requeues 0 --job-id 7 \
  --require model.pt,trainer.json
has_record "20 2"
echo "ok: requeue counts the same newest step, restarts at a newer one, says why"

step 30 model.pt trainer.json  # a newer step: the decision would be to requeue
for limit in 0 2; do
  STOKER_FAULTS="rename:.stoker-requeues:1" job "unwritable$limit" requeue --checkpoint-dir "$ck" \
    --steps 100 --idle-requeues "$limit" --job-id 7 --require model.pt,trainer.json
  decided "unwritable$limit" give-up "error: not requeueing job 7: cannot record the requeue in $record"
  decided "unwritable$limit" give-up "the requeues in a row without a newer complete step cannot be counted"
  has_record "20 2"
done
echo "ok: a record that cannot be written: give-up, with an IDLE_REQUEUES limit and without"

step 100 model.pt trainer.json
requeue last
decided last "done" "the trainer reached step 100 of 100: no requeue"
[ ! -e "$record" ] || fail "the record is still there after the last step"

# A newest step of two saves (rank file 1 of another run) cannot be resumed, nor passed over: the
# newest step is not known.
bad=$work/bad
"$STOKER" -q run --data "$work/corpus" --seq-len 16 --batch-size 1 --logical-shards 4 --steps 1 \
  --save-every 1 --checkpoint-dir "$work/other" > /dev/null || fail "saving another run's step"
for run in real other; do
  "$STOKER" -q reshard "$work/$run/step-1" --world-size 2 --out "$work/$run-2/step-1" \
    > /dev/null || fail "resharding $run to 2 ranks"
done
mkdir -p "$bad/step-5/loader"
cp "$work/real-2/step-1/loader/rank-00000-of-00002.ckpt" "$bad/step-5/loader/"
cp "$work/other-2/step-1/loader/rank-00001-of-00002.ckpt" "$bad/step-5/loader/"
job unknown requeue --checkpoint-dir "$bad" --steps 100 --idle-requeues 1 --job-id 8
decided unknown requeue "resumes from its newest complete step (finding it failed, above)"
grep -q "error" "$work/unknown.err" || { cat "$work/unknown.err" >&2; fail "no reason logged"; }
[ "$(cat "$bad/.stoker-requeues")" = "unknown 1" ] || fail "no 'unknown 1' record"
job unknown2 requeue --checkpoint-dir "$bad" --steps 100 --idle-requeues 1 --job-id 8
decided unknown2 give-up "error: not requeueing job 8: requeued 1 time(s)"
echo "ok: requeue stops at the last step; a step it cannot find counts as no progress"

# An option with '=' and nothing after it: refused as empty (CLI11 would take the next argument
# as its value).
refused empty_limit "--limit= gives an empty value" time-limit --limit= --signal=B:USR1@180
refused no_steps "--steps" requeue --checkpoint-dir "$ck" --idle-requeues 1 --job-id 7
refused word_steps "--steps" requeue --checkpoint-dir "$ck" --steps many --idle-requeues 1 \
  --job-id 7
refused neg_idle "negative" requeue --checkpoint-dir "$ck" --steps 1 --idle-requeues -1 \
  --job-id 7
refused no_job "--job-id" requeue --checkpoint-dir "$ck" --steps 1 --idle-requeues 1
"$STOKER" job requeue --help > "$work/help.out"
grep -q "stoker-requeues" "$work/help.out" && grep -q "give-up" "$work/help.out" ||
  { cat "$work/help.out" >&2; fail "stoker job requeue --help does not explain it"; }
echo "PASS: stoker job time-limit and requeue decide as the job scripts need, without Slurm"
