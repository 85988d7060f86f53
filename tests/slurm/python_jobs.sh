#!/usr/bin/env bash
# The Python example trainer (src/train/train.py) through the job scripts of jobs/ with
# TRAINER=python, on a real single-node Slurm (tests/slurm/cluster.sh), on the corpus of
# jobs.sh, with --doc-mask. One training history across two jobs, tracing into one folder:
#   1. jobs/slurm/train.sbatch on 4 tasks, REQUEUE=0, to a step it cannot reach before the
#      signal however slow the machine. Once a complete step folder exists, `scancel --batch
#      --signal=USR1` (a preemption warning): every rank stops at the same step N, saves it
#      (model, optimizer and loader state) and the job ends, not requeued.
#   2. jobs/slurm/resume.sbatch on 2 tasks: "resumed from step-N (saved on 4 ranks, now 2)",
#      to 50 steps past N.
# The runs' figures are read from their --result files (RESULT_FILE), which no other output
# shares; the job output files are read for the log lines.
# Then: the loss fell (the last ten steps' mean below 0.8 of the first ten's, across the
# preemption and the rescale), the replicas agreed (train.py checks their checksums), and
# `stoker audit --data` of the trace history is clean: runs 0:4 and N:2, every step once.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags), STOKER_PYTHONPATH (the
# folder holding the built package). Exit 77 (skipped) when Slurm cannot run here.
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}"
: "${MPIRUN:?MPIRUN must name mpirun and its flags}"
: "${STOKER_PYTHONPATH:?STOKER_PYTHONPATH must name the folder holding the stoker package}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
unset STOKER_HOME STOKER_TRAIN  # the checkout from the scripts' path; TRAINER=python's trainer

work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-slurm-python.XXXXXX")
# shellcheck disable=SC2089,SC2090  # a command for eval (tests/slurm/cluster.sh), quotes and all
STOKER_SLURM_ON_EXIT='[ "${STOKER_SLURM_KEEP:-0}" = 1 ] && echo "kept $work" >&2 || rm -rf "$work"'
# shellcheck disable=SC2090
trap 'eval "$STOKER_SLURM_ON_EXIT"' EXIT  # until slurm_start takes the trap over
source "$here/cluster.sh"
source "$here/job_checks.sh"

started=$SECONDS
slurm_start
corpus=$work/corpus
make_corpus "$corpus"
cd "$work"

export STOKER MPIRUN TRAINER=python PYTHONPATH=$STOKER_PYTHONPATH CORPUS=$corpus
export TRACE_DIR=$work/trace SEQ_LEN=64 BATCH_SIZE=4 SAVE_EVERY=5 SEED=3 REQUEUE=0
export WEIGHTS=licenses=1,headers=2,copyright=1
export TRAIN_ARGS="--dim 64 --layers 1 --heads 4 --log-every 5 --doc-mask"
ckpt=$work/ckpt
unreachable=100000  # the first job's STEPS: it ends on the signal, never at its last step

# --- 1. train.sbatch on 4 tasks, preempted with USR1: saves and ends. ---
t=$SECONDS
result=$work/train-result.json
id=$(slurm_submit STEPS=$unreachable CHECKPOINT_DIR="$ckpt" RESULT_FILE="$result" -n 4 \
     -o "$work/train-%j.out" "$repo/jobs/slurm/train.sbatch")
out=$work/train-$id.out
preempt_after "$id" "$ckpt" 0 "$out" "train.sbatch (TRAINER=python)"
wait_job "$id" 90 "train.sbatch (TRAINER=python)"
stop=$(run_field "$result" 0 end_step)
# train.py ran on the corpus, which the job passed in the environment (CORPUS).
expect_log "$out" "src/train/train.py --resume" "train.sbatch (TRAINER=python)"
expect_log "$out" "--data CORPUS='$corpus' in the environment" "train.sbatch (TRAINER=python)"
expect_log "$out" "train: stopping at step $stop on signal; saved $ckpt/step-$stop" \
  "train.sbatch (TRAINER=python)"
expect "$result" 0 trainer train.py "train.sbatch (TRAINER=python)"
expect "$result" 0 stopped_early true "train.sbatch (TRAINER=python)"
expect "$result" 0 ranks 4 "train.sbatch (TRAINER=python)"
expect "$result" 0 doc_mask true "train.sbatch (TRAINER=python)"
[ "$stop" -lt "$unreachable" ] ||
  fail "train.sbatch (TRAINER=python): stopped at $stop, not before $unreachable"
steps=$((stop + 50))  # the resumed job's STEPS
[ "$(complete_steps "$ckpt" | tail -n 1)" = "$stop" ] ||
  fail "train.sbatch (TRAINER=python): the newest complete step is not $stop:" \
       "$(complete_steps "$ckpt")"
[ "$(slurm_field "$id" Restarts)" = 0 ] || fail "train.sbatch with REQUEUE=0 was requeued"
ok "train.sbatch, TRAINER=python, 4 tasks: USR1 -> every rank stopped at step $stop and saved" \
   "it, no requeue ($((SECONDS - t)) s)"

# --- 2. resume.sbatch on 2 tasks: the loader rescales 4 -> 2, the model goes on. ---
t=$SECONDS
result2=$work/resume-result.json
id=$(slurm_submit STEPS=$steps CHECKPOINT_DIR="$ckpt" RESULT_FILE="$result2" -n 2 \
     -o "$work/resume-%j.out" "$repo/jobs/slurm/resume.sbatch")
out2=$work/resume-$id.out
wait_job "$id" 120 "resume.sbatch (TRAINER=python)"
expect_log "$out2" "train: resumed from $ckpt/step-$stop (saved on 4 ranks, now 2)" \
  "resume.sbatch (TRAINER=python)"
expect "$result2" 0 start_step "$stop" "resume.sbatch (TRAINER=python)"
expect "$result2" 0 end_step "$steps" "resume.sbatch (TRAINER=python)"
expect "$result2" 0 ranks 2 "resume.sbatch (TRAINER=python)"
expect "$result2" 0 saved_world 4 "resume.sbatch (TRAINER=python)"
ok "resume.sbatch, TRAINER=python, 2 tasks: resumed step-$stop saved on 4 ranks, to $steps" \
   "($((SECONDS - t)) s)"

slurm_stop

# --- The loss fell across both runs; the history is audited. ---
first=$(run_field "$result" 0 loss_start)
last=$(run_field "$result2" 0 loss_end)
python3 -c "import sys; sys.exit(0 if $last < 0.8 * $first else 1)" ||
  fail "the loss did not fall: $first over the first ten steps, $last over the last ten"
ok "the loss fell from $first (steps 1-10, 4 ranks) to $last (steps $((steps - 9))-$steps, 2 ranks)"
audit_history "$work/trace" "$steps" "0:4 $stop:2"
ok "stoker audit of the trace history: clean, steps 1-$steps in 2 runs on 4 and 2 ranks" \
   "($(run_field "$work/audit.json" 0 tokens_checked) framed tokens checked)"

echo "--- summary (all in $((SECONDS - started)) s):"
printf '  %s\n' "${checked[@]}"
