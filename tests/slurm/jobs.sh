#!/usr/bin/env bash
# The job scripts of jobs/ on a real single-node Slurm (tests/slurm/cluster.sh), end to end with
# the example trainer, on a small byte-tokenized corpus of three datasets. One training history
# across seven runs, all tracing into one folder:
#   1. jobs/slurm/train.sbatch on 4 tasks (mpirun). Once the script is launching the trainer,
#      `scancel --batch --signal=USR1`: the script holds it until the ranks are ready, the
#      trainer stops and saves step N, the job requeues itself, runs again (restart count 1),
#      resumes from step N on 4 ranks and reaches STEPS.
#   2. jobs/slurm/resume.sbatch with an empty checkpoint folder: refused (exit 2), nothing run.
#   3. jobs/slurm/resume.sbatch on 2 tasks: resumed from the step of 1 "saved on 4 ranks, now 2".
#   4. jobs/slurm/reshard.sbatch (1 task) of the newest step to 3 ranks: a complete step folder
#      (3 loader files, stoker inspect agrees; the trainer's files copied unchanged).
#   5. jobs/mpirun/resume.sh on 3 ranks, without Slurm, from the resharded folder.
#   6. jobs/slurm/train.sbatch with LAUNCHER=srun (srun --mpi=pmix) on 2 tasks, REQUEUE=0,
#      signalled with USR1 too: srun forwards it, the trainer saves and stops, no requeue.
#   7. jobs/mpirun/train.sh on 2 ranks goes on 10 more steps, its figures also in RESULT_FILE;
#      jobs/mpirun/reshard.sh refuses WORLD_SIZE=0 (exit 2).
# The figures of every run are read from its --result file (RESULT_FILE), which no log line can
# break into; the two runs of the requeued job 1 each append their line to one file.
# Then `stoker audit --data` of the whole trace history: clean (no token lost or repeated across
# the 4 -> 4 -> 2 -> 3 -> 2 -> 2 rank counts), its runs the six started, to the last step.
# Environment: STOKER, STOKER_TRAIN (the programs), MPIRUN (mpirun with its flags).
# Exit 77 (skipped) when a single-node Slurm cannot run here (cluster.sh says why).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}"
: "${STOKER_TRAIN:?STOKER_TRAIN must name the stoker-train program}"
: "${MPIRUN:?MPIRUN must name mpirun and its flags}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
unset STOKER_HOME  # the job scripts find the checkout from their own path

work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-slurm-jobs.XXXXXX")
# shellcheck disable=SC2089,SC2090  # a command for eval (tests/slurm/cluster.sh), quotes and all
STOKER_SLURM_ON_EXIT='[ "${STOKER_SLURM_KEEP:-0}" = 1 ] && echo "kept $work" >&2 || rm -rf "$work"'
# shellcheck disable=SC2090
trap 'eval "$STOKER_SLURM_ON_EXIT"' EXIT  # until slurm_start takes the trap over
source "$here/cluster.sh"
source "$here/job_checks.sh"

[ -x "$STOKER_TRAIN" ] || fail "no trainer program at STOKER_TRAIN=$STOKER_TRAIN"
started=$SECONDS
slurm_start

corpus=$work/corpus
make_corpus "$corpus"
cd "$work"

# The settings every job shares (sbatch passes the environment on); jobs/common.sh reads them.
export STOKER STOKER_TRAIN MPIRUN CORPUS=$corpus TRACE_DIR=$work/trace SEQ_LEN=64 BATCH_SIZE=4
export SAVE_EVERY=5 WEIGHTS=licenses=1,headers=2,copyright=1 SEED=3
export TRAIN_ARGS="--dim 64 --layers 1 --heads 4 --log-every 5"
ckpt=$work/ckpt
# The bounds of the waits below (slurm_poll, wait_job, slurm_wait_done) are 5 to 10 times what
# each takes on a quiet machine (the ok lines say): they only make a job that hangs fail with a
# message naming it before CTest's limit for the whole script.

# --- 1. train.sbatch on 4 tasks, preempted with USR1, requeued, resumed to the end. ---
# The signal goes once the script says it is running the trainer (it is launching: a signal is
# held from then on, not taken as one before the launch). The script passes it on within 0.2 s
# of the ranks' ready file, which they make before they build the loader and the model: the
# trainer stops within its first steps, far from its 60th, without racing a save.
t=$SECONDS
steps1=60
result=$work/train-result.json
id=$(slurm_submit STEPS=$steps1 CHECKPOINT_DIR="$ckpt" RESULT_FILE="$result" -n 4 \
     -o "$work/train-%j.out" "$repo/jobs/slurm/train.sbatch")
out=$work/train-$id.out
slurm_poll 120 "job $id to launch the trainer" grep -q "running: " "$out" ||
  { cat "$out" >&2 || true; fail "train.sbatch launched no trainer"; }
scancel --batch --signal=USR1 "$id"
slurm_poll 90 "job $id to be requeued" requeued_or_ended "$id" || true
[ "$(slurm_field "$id" Restarts)" = 1 ] ||
  { cat "$out" >&2; fail "job $id was not requeued after SIGUSR1"; }
wait_job "$id" 300 "train.sbatch"
[ "$(json_lines "$result")" = 2 ] ||
  { cat "$out" "$result" >&2; fail "train.sbatch: not two runs in $result"; }
stop=$(run_field "$result" 0 end_step)
expect "$result" 0 stopped_early true "train.sbatch, first run"
expect "$result" 0 ranks 4 "train.sbatch, first run"
expect "$result" 0 start_step 0 "train.sbatch, first run"
[ "$stop" -lt "$steps1" ] || fail "train.sbatch: stopped at $stop, not before $steps1"
expect_log "$out" "train: stopping at step $stop on signal; saved $ckpt/step-$stop" "train.sbatch"
expect_log "$out" "restart count 0" "train.sbatch"
expect_log "$out" "requeueing job $id" "train.sbatch"
expect_log "$out" "restart count 1" "train.sbatch"
expect_log "$out" "train: resumed from $ckpt/step-$stop (saved on 4 ranks, now 4)" "train.sbatch"
expect "$result" 1 start_step "$stop" "train.sbatch, requeued run"
expect "$result" 1 end_step "$steps1" "train.sbatch, requeued run"
expect "$result" 1 stopped_early false "train.sbatch, requeued run"
expect "$result" 1 resumed_from "$ckpt/step-$stop" "train.sbatch, requeued run"
expect "$result" 1 saved_world 4 "train.sbatch, requeued run"
ok "train.sbatch, 4 tasks: USR1 at step $stop -> saved, requeued (restart count 1), resumed" \
   "from step-$stop to $steps1 ($((SECONDS - t)) s)"

# --- 2. resume.sbatch refuses an empty checkpoint folder. ---
t=$SECONDS
id=$(slurm_submit STEPS=60 CHECKPOINT_DIR="$work/empty" -n 2 -o "$work/refused-%j.out" \
     "$repo/jobs/slurm/resume.sbatch")
slurm_wait_done "$id" 60 > /dev/null || fail "resume.sbatch with no checkpoint: still running"
[ "$(slurm_field "$id" JobState)" = FAILED ] && [ "$(slurm_field "$id" ExitCode)" = 2:0 ] ||
  fail "resume.sbatch with no checkpoint: $(slurm_field "$id" JobState)," \
       "exit $(slurm_field "$id" ExitCode), not FAILED 2:0"
expect_log "$work/refused-$id.out" "nothing to resume: no complete step-<N> folder" "resume.sbatch"
! grep -q "running:" "$work/refused-$id.out" ||
  fail "resume.sbatch with no checkpoint launched something"
ok "resume.sbatch with no checkpoint: refused, exit 2, nothing launched ($((SECONDS - t)) s)"

# --- 3. resume.sbatch on 2 tasks: the loader rescales 4 -> 2. ---
t=$SECONDS
steps3=75
result=$work/resume-result.json
id=$(slurm_submit STEPS=$steps3 CHECKPOINT_DIR="$ckpt" RESULT_FILE="$result" -n 2 \
     -o "$work/resume-%j.out" "$repo/jobs/slurm/resume.sbatch")
out=$work/resume-$id.out
wait_job "$id" 120 "resume.sbatch"
expect_log "$out" "train: resumed from $ckpt/step-$steps1 (saved on 4 ranks, now 2)" "resume.sbatch"
expect "$result" 0 start_step "$steps1" "resume.sbatch"
expect "$result" 0 end_step "$steps3" "resume.sbatch"
expect "$result" 0 ranks 2 "resume.sbatch"
expect "$result" 0 saved_world 4 "resume.sbatch"
ok "resume.sbatch, 2 tasks: resumed step-$steps1 saved on 4 ranks, to $steps3 ($((SECONDS - t)) s)"

# --- 4. reshard.sbatch: the newest step for 3 ranks, a complete trainer checkpoint. ---
t=$SECONDS
resharded=$work/ckpt-3
id=$(slurm_submit CHECKPOINT_DIR="$ckpt" WORLD_SIZE=3 NEW_CHECKPOINT_DIR="$resharded" \
     -o "$work/reshard-%j.out" "$repo/jobs/slurm/reshard.sbatch")
out=$work/reshard-$id.out
wait_job "$id" 60 "reshard.sbatch"
expect_log "$out" "resharded step $steps3 from 2 to 3 ranks" "reshard.sbatch"
[ "$(complete_steps "$resharded")" = "$steps3" ] ||
  fail "reshard.sbatch: $resharded holds complete steps [$(complete_steps "$resharded")]," \
       "not $steps3"
for f in model.pt optimizer.pt trainer.json; do
  cmp -s "$ckpt/step-$steps3/$f" "$resharded/step-$steps3/$f" ||
    fail "reshard.sbatch: $f differs from the original's"
done
"$STOKER" inspect "$resharded/step-$steps3" --json > "$work/inspect.json" 2> "$work/inspect.err" ||
  { cat "$work/inspect.err" >&2; fail "stoker inspect of the resharded step"; }
python3 - "$work/inspect.json" "$steps3" <<'EOF' || fail "reshard.sbatch: stoker inspect disagrees"
import json, sys
info = json.load(open(sys.argv[1]))
want = {"kind": "checkpoint", "step": int(sys.argv[2]), "world_size": 3}
bad = {k: info.get(k) for k in want if info.get(k) != want[k]}
sys.exit(f"stoker inspect: {bad}, expected {want}" if bad else 0)
EOF
expect_log "$out" "step $steps3" "reshard.sbatch (stoker inspect's table in the job's output)"
ok "reshard.sbatch: step-$steps3 of 2 ranks -> 3 ranks, complete, trainer files copied," \
   "stoker inspect: world 3 ($((SECONDS - t)) s)"

# --- 5. jobs/mpirun/resume.sh on 3 ranks from the resharded folder, without Slurm. ---
t=$SECONDS
steps5=85
rc=0
(unset SLURM_CONF; NP=3 STEPS=$steps5 CHECKPOINT_DIR=$resharded "$repo/jobs/mpirun/resume.sh") \
  > "$work/mpirun-resume.json" 2> "$work/mpirun-resume.log" || rc=$?
[ "$rc" = 0 ] || { cat "$work/mpirun-resume.log" >&2; fail "jobs/mpirun/resume.sh: exit $rc"; }
expect_log "$work/mpirun-resume.log" "train: resumed from $resharded/step-$steps3 (saved on " \
  "jobs/mpirun/resume.sh"
# The loader files were made for 3 ranks already: the loader goes on without a rescale.
! grep "rescaled from" "$work/mpirun-resume.log" ||
  fail "jobs/mpirun/resume.sh: the loader rescaled the resharded checkpoint again"
[ "$(json_lines "$work/mpirun-resume.json")" = 1 ] &&
  [ "$(wc -l < "$work/mpirun-resume.json")" = 1 ] ||
  fail "jobs/mpirun/resume.sh: stdout is not the trainer's one JSON line"
expect "$work/mpirun-resume.json" 0 start_step "$steps3" "jobs/mpirun/resume.sh"
expect "$work/mpirun-resume.json" 0 end_step "$steps5" "jobs/mpirun/resume.sh"
expect "$work/mpirun-resume.json" 0 ranks 3 "jobs/mpirun/resume.sh"
ok "jobs/mpirun/resume.sh, 3 ranks: resumed the resharded step-$steps3 to $steps5" \
   "($((SECONDS - t)) s)"

# --- 6. train.sbatch with LAUNCHER=srun, signalled, REQUEUE=0: saves and ends. ---
t=$SECONDS
steps6=1000  # far: the signal must stop it
result=$work/srun-result.json
id=$(slurm_submit LAUNCHER=srun REQUEUE=0 STEPS=$steps6 CHECKPOINT_DIR="$resharded" \
     RESULT_FILE="$result" -n 2 -o "$work/srun-%j.out" "$repo/jobs/slurm/train.sbatch")
out=$work/srun-$id.out
preempt_after "$id" "$resharded" "$steps5" "$out" "train.sbatch with srun"
wait_job "$id" 180 "train.sbatch with LAUNCHER=srun"
stop6=$(run_field "$result" 0 end_step)
expect_log "$out" "running: srun --export=ALL --mpi=pmix" "train.sbatch with LAUNCHER=srun"
expect_log "$out" "train: resumed from $resharded/step-$steps5 (saved on 3 ranks, now 2)" \
  "train.sbatch with LAUNCHER=srun"
expect_log "$out" "train: stopping at step $stop6 on signal; saved $resharded/step-$stop6" \
  "train.sbatch with LAUNCHER=srun"
expect "$result" 0 stopped_early true "train.sbatch with LAUNCHER=srun"
expect "$result" 0 ranks 2 "train.sbatch with LAUNCHER=srun"
[ "$(slurm_field "$id" Restarts)" = 0 ] && [ "$(json_lines "$out")" = 1 ] ||
  fail "train.sbatch with REQUEUE=0 was requeued"
ok "train.sbatch, LAUNCHER=srun, 2 tasks: resumed step-$steps5 of 3 ranks; USR1 reached the" \
   "ranks through srun: saved step-$stop6, no requeue with REQUEUE=0 ($((SECONDS - t)) s)"

# --- 7. jobs/mpirun/train.sh to the end; jobs/mpirun/reshard.sh refuses a bad setting. ---
t=$SECONDS
steps7=$((stop6 + 10))
rc=0
(unset SLURM_CONF; NP=2 STEPS=$steps7 CHECKPOINT_DIR=$resharded RESULT_FILE=$work/result7.json \
  "$repo/jobs/mpirun/train.sh") > "$work/mpirun-train.json" 2> "$work/mpirun-train.log" || rc=$?
[ "$rc" = 0 ] || { cat "$work/mpirun-train.log" >&2; fail "jobs/mpirun/train.sh: exit $rc"; }
expect "$work/mpirun-train.json" 0 start_step "$stop6" "jobs/mpirun/train.sh"
expect "$work/mpirun-train.json" 0 end_step "$steps7" "jobs/mpirun/train.sh"
# RESULT_FILE: the trainer's figures as one JSON object, the same as its stdout line.
cmp -s "$work/result7.json" "$work/mpirun-train.json" ||
  fail "jobs/mpirun/train.sh: RESULT_FILE differs from the result line:" \
       "$(cat "$work/result7.json" "$work/mpirun-train.json")"
expect_log "$work/mpirun-train.log" "train: done: 2 ranks, steps $stop6 -> $steps7, loss" \
  "jobs/mpirun/train.sh"
rc=0
CHECKPOINT_DIR=$resharded WORLD_SIZE=0 "$repo/jobs/mpirun/reshard.sh" > /dev/null \
  2> "$work/bad-reshard.log" || rc=$?
[ "$rc" = 2 ] && grep -q "set WORLD_SIZE" "$work/bad-reshard.log" ||
  { cat "$work/bad-reshard.log" >&2; fail "jobs/mpirun/reshard.sh WORLD_SIZE=0: exit $rc"; }
ok "jobs/mpirun/train.sh, 2 ranks: step-$stop6 to $steps7; jobs/mpirun/reshard.sh refuses" \
   "WORLD_SIZE=0 (exit 2) ($((SECONDS - t)) s)"

slurm_stop

# --- The whole history, audited: no token lost or repeated, the runs as they happened. ---
audit_history "$work/trace" "$steps7" "0:4 $stop:4 $steps1:2 $steps3:3 $steps5:2 $stop6:2"
ok "stoker audit of the trace history: clean, steps 1-$steps7 in 6 runs on 4, 4, 2, 3, 2, 2" \
   "ranks ($(run_field "$work/audit.json" 0 tokens_checked) framed tokens checked)"

echo "--- summary (all in $((SECONDS - started)) s):"
printf '  %s\n' "${checked[@]}"
