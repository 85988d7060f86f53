#!/usr/bin/env bash
# A stop signal to a job script is never lost, whenever it comes. jobs/mpirun/train.sh gets
# SIGUSR1 (what Slurm's time-limit warning sends) at several delays after it launched mpirun,
# from 0 to 2 s: before the ranks exist, while they load libtorch and start MPI, and while they
# train. Each time the script holds the signal until rank 0 says every rank can take it (the
# trainer's --ready-file), then the ranks stop at the same step, save it and exit 0: the result
# says stopped_early, and that step folder is complete. A signal before the launch (as soon as
# the script can catch it) starts nothing and exits 0. Without this, a signal in the first
# ~50 ms reached no rank and the run went on to the end (here: 100,000 steps, caught by the
# timeout).
# Environment: STOKER, STOKER_TRAIN, MPIRUN, STOKER_SOURCE (see tests/CMakeLists.txt).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?}" "${STOKER_TRAIN:?}" "${MPIRUN:?}" "${STOKER_SOURCE:?}"

make_work job_signals
job_corpus
export STOKER STOKER_TRAIN MPIRUN CORPUS=$work/corpus STEPS=100000 SAVE_EVERY=0 SEQ_LEN=16
export BATCH_SIZE=2 NP=2 TRAIN_ARGS="--dim 16 --layers 1 --heads 2 --log-every 0"
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }

# catches PID SIGNAL_NUMBER: whether the process has a handler for the signal yet.
catches() {
  local mask
  mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2> /dev/null) || return 1
  [ -n "$mask" ] && (( (16#$mask >> ($2 - 1)) & 1 ))
}

# trial NAME DELAY|early|trained: runs train.sh into its own checkpoint folder and sends it
# SIGUSR1 DELAY seconds after it said "running:" (early: as soon as it can catch the signal;
# trained: once a step folder shows that the ranks train).
trial() {
  local name=$1 delay=$2 pid rc=0
  local ck=$work/ck-$name err=$work/$name.err result=$work/$name.json
  CHECKPOINT_DIR=$ck RESULT_FILE=$result setsid "$STOKER_SOURCE/jobs/mpirun/train.sh" \
    > "$work/$name.out" 2> "$err" &
  pid=$!
  if [ "$delay" = early ]; then
    for _ in $(seq 5000); do
      catches "$pid" "$(kill -l USR1)" && break
      kill -0 "$pid" 2> /dev/null || { cat "$err" >&2; fail "$name: the script ended early"; }
      sleep 0.001
    done
  elif [ "$delay" = trained ]; then
    until [ -d "$ck/step-2" ]; do
      kill -0 "$pid" 2> /dev/null || { cat "$err" >&2; fail "$name: the script ended early"; }
      sleep 0.05
    done
  else
    until grep -q "running:" "$err"; do
      kill -0 "$pid" 2> /dev/null || { cat "$err" >&2; fail "$name: the script ended early"; }
      sleep 0.005
    done
    sleep "$delay"
  fi
  kill -USR1 "$pid"
  for _ in $(seq 600); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2> /dev/null; then
    kill -KILL -- "-$pid" 2> /dev/null || true
    cat "$err" >&2
    fail "$name: SIGUSR1 $delay s after the launch was lost: still training after 60 s"
  fi
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || { cat "$err" >&2; fail "$name: exit $rc after SIGUSR1"; }
  if [ "$delay" = early ]; then
    grep -q "before the launch: the trainer will not be started" "$err" &&
      ! grep -q "running:" "$err" || { cat "$err" >&2; fail "$name: the trainer was started"; }
    echo "$name: SIGUSR1 before the launch: nothing started, exit 0"
    return
  fi
  [ -f "$result" ] || { cat "$err" >&2; fail "$name: no result file"; }
  local stopped step
  stopped=$(json "$result" '["stopped_early"]') step=$(json "$result" '["end_step"]')
  [ "$stopped" = True ] || { cat "$err" >&2; fail "$name: the run was not stopped early"; }
  "$STOKER" steps "$ck" --step "$step" --require trainer.json > /dev/null ||
    fail "$name: step-$step, where the run stopped, is not complete"
  local when="$delay s after the launch"
  [ "$delay" != trained ] || when="while the ranks train"
  echo "$name: SIGUSR1 $when: stopped at step $step, saved"
}

trial early early
for delay in 0 0.05 0.5 2; do trial "after-$delay" "$delay"; done
SAVE_EVERY=2 trial trained trained
echo "PASS: SIGUSR1 before the launch and 0 to 2 s after it: never lost"
