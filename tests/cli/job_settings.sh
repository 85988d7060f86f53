#!/usr/bin/env bash
# jobs/mpirun/train.sh refuses a wrong setting before anything is launched: exit 2, a message
# that names the setting (and its value), no mpirun started, no checkpoint folder made. Each
# trainer option goes through `stoker-train --check` (the trainer's own parsing and checks), so
# the messages are the trainer's. Then one right setting runs, to show the check lets it pass,
# and a refusal the ranks make together after the launch ends without Open MPI's banner.
# Environment: STOKER, STOKER_TRAIN, MPIRUN, STOKER_SOURCE (see tests/CMakeLists.txt).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?}" "${STOKER_TRAIN:?}" "${MPIRUN:?}" "${STOKER_SOURCE:?}"

make_work job_settings
job_corpus
export STOKER STOKER_TRAIN MPIRUN CORPUS=$work/corpus CHECKPOINT_DIR=$work/ck STEPS=4 SEQ_LEN=16
export BATCH_SIZE=2 TRAIN_ARGS="--dim 16 --layers 1 --heads 2"

# refused SETTING=VALUE NAMED: the script exits 2 saying NAMED (e.g. "STEPS='-5'"), launching
# nothing.
refused() {
  local rc=0
  env "$1" "$STOKER_SOURCE/jobs/mpirun/train.sh" > "$work/out" 2> "$work/err" || rc=$?
  [ "$rc" = 2 ] || { cat "$work/err" >&2; fail "$1: exit $rc, not 2"; }
  grep -qF -- "$2" "$work/err" || { cat "$work/err" >&2; fail "$1: no '$2' in the message"; }
  if grep -q "running:" "$work/err" || [ -e "$work/ck" ]; then
    cat "$work/err" >&2
    fail "$1: something was launched or created"
  fi
  echo "refused $1: $(grep -m1 'error:' "$work/err")"
}

# stoker job start with a --script that does not exist: an error naming it (it was a check
# skipped in silence).
rc=0
STOKER_HOME=$STOKER_SOURCE "$STOKER" job start --mode train --limit 10:00 \
  --script "$work/nope.sbatch" -- --dim 16 --layers 1 --heads 2 > "$work/out" 2> "$work/err" ||
  rc=$?
[ "$rc" = 2 ] && grep -qF "$work/nope.sbatch: no such batch script" "$work/err" ||
  { cat "$work/err" >&2; fail "stoker job start with a missing --script: exit $rc"; }
echo "refused a missing --script: $(grep -m1 -F 'no such batch script' "$work/err")"

refused STEPS=-5 "STEPS='-5'"
refused STEPS=abc "STEPS='abc'"
refused STEPS=0 "STEPS='0'"
refused SEQ_LEN=0 "SEQ_LEN='0'"
refused BATCH_SIZE=-1 "BATCH_SIZE='-1'"
refused WEIGHTS=garbage "WEIGHTS='garbage'"
refused WEIGHTS=web=1,nope=x "WEIGHTS='web=1,nope=x'"
refused "WEIGHTS_SCHEDULE=10:web=1;~20:web=1" "WEIGHTS_SCHEDULE='10:web=1;~20:web=1'"
refused TRAIN_ARGS=--bogus "TRAIN_ARGS='--bogus'"
refused "TRAIN_ARGS=--dim 10 --heads 3" "TRAIN_ARGS="
refused CHECKPOINT_DIR= "CHECKPOINT_DIR=''"
refused CORPUS=$work/none "CORPUS='$work/none'"
refused CORPUS= "CORPUS=''"
refused NP=0 "NP must be the number of ranks"
refused NP=two "NP must be the number of ranks"
refused REQUEUE=yes "REQUEUE must be 0 or 1"
refused STOKER_TRAIN=$work/none "STOKER_TRAIN is not an executable program"
refused STOKER_HOME=/nope "STOKER_HOME=/nope holds no jobs/common.sh"

# Right settings pass the check and train.
NP=1 "$STOKER_SOURCE/jobs/mpirun/train.sh" > "$work/out" 2> "$work/err" ||
  { cat "$work/err" >&2; fail "a run with right settings failed"; }
[ -d "$work/ck/step-4" ] || { cat "$work/err" >&2; fail "no step-4 after a run with right settings"; }

# A refusal the ranks make together after the launch (another SEQ_LEN than the checkpoint's) is
# the trainer's message once and the script's line, without Open MPI's "Primary job terminated"
# banner.
rc=0
NP=2 SEQ_LEN=32 STEPS=8 "$STOKER_SOURCE/jobs/mpirun/train.sh" > "$work/out" 2> "$work/err" || rc=$?
[ "$rc" = 1 ] || { cat "$work/err" >&2; fail "a resume with another SEQ_LEN exited $rc, not 1"; }
[ "$(grep -c "seq_len: checkpoint 16, now 32" "$work/err")" = 1 ] &&
  grep -q "the trainer failed (exit code 1): its error is above" "$work/err" ||
  { cat "$work/err" >&2; fail "the refusal of another SEQ_LEN was not said once"; }
! grep -qi "primary job\|mpirun detected" "$work/err" ||
  { cat "$work/err" >&2; fail "Open MPI's banner followed the refusal"; }
echo "PASS: 18 wrong settings refused before the launch, naming each; right ones train; a" \
  "collective refusal after the launch ends without Open MPI's banner"
