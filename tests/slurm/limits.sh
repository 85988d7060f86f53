#!/usr/bin/env bash
# Time limits and requeues that jobs/slurm/train.sbatch can meet, on a real single-node Slurm
# (tests/slurm/cluster.sh):
#   1. A time limit at or below the warning offset (--time=2 minutes against the script's
#      #SBATCH --signal=B:USR1@180) is refused at start: exit 2, saying so, nothing launched, no
#      requeue; the same with the offset from WARNING_SECONDS.
#   2. A job whose warning comes before a step can be saved, every time, does not requeue for
#      ever: with IDLE_REQUEUES=1, the first SIGUSR1 (during the trainer's settings check, so
#      before the launch: nothing is started or saved) requeues the job; the second, on the rerun,
#      finds no newer complete step and ends the job (exit 1), saying why. The trainer here is
#      stoker-train behind a script whose --check, as a slow file system or a Python trainer's
#      imports would, waits until the test has sent the signal, then 4 s more for Slurm to
#      deliver it, so that it lands before the launch each time.
# Environment: STOKER, STOKER_TRAIN (the programs), MPIRUN (mpirun with its flags).
# Exit 77 (skipped) when a single-node Slurm cannot run here (cluster.sh says why).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?}" "${STOKER_TRAIN:?}" "${MPIRUN:?}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
unset STOKER_HOME

work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-slurm-limits.XXXXXX")
# shellcheck disable=SC2089,SC2090  # a command for eval (tests/slurm/cluster.sh), quotes and all
STOKER_SLURM_ON_EXIT='[ "${STOKER_SLURM_KEEP:-0}" = 1 ] && echo "kept $work" >&2 || rm -rf "$work"'
# shellcheck disable=SC2090
trap 'eval "$STOKER_SLURM_ON_EXIT"' EXIT
source "$here/cluster.sh"
slurm_start

job_corpus
export STOKER MPIRUN CORPUS=$work/corpus SEQ_LEN=16 BATCH_SIZE=2 STEPS=100000 SAVE_EVERY=0
export TRAIN_ARGS="--dim 16 --layers 1 --heads 2"
cd "$work"

# ended ID STATE EXIT WHAT: the job must end in STATE with exit code EXIT (as Slurm says "2:0").
ended() {
  local state
  state=$(slurm_wait_done "$1" 120) || { cat "$work"/*-"$1".out >&2; fail "$4: still running"; }
  [ "$state" = "$2" ] && [ "$(slurm_field "$1" ExitCode)" = "$3" ] ||
    { cat "$work"/*-"$1".out >&2; fail "$4: job $1 ended $state, exit $(slurm_field "$1" ExitCode)"; }
}
expect_log() {
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$3: the log has no line with: $2"; }
}

# --- 1. A time limit the warning offset does not fit in. ---
id=$(slurm_submit STOKER_TRAIN="$STOKER_TRAIN" CHECKPOINT_DIR="$work/ck1" --time=00:02:00 -n 1 \
     -o "$work/short-%j.out" "$repo/jobs/slurm/train.sbatch")
ended "$id" FAILED 2:0 "a 2-minute job with a 180 s warning"
expect_log "$work/short-$id.out" "the job's time limit (2:00) is at or below the warning offset of 180 s" \
  "a 2-minute job with a 180 s warning"
! grep -q "running:" "$work/short-$id.out" || fail "the 2-minute job launched the trainer"
[ "$(slurm_field "$id" Restarts)" = 0 ] || fail "the 2-minute job was requeued"
echo "ok: --time=2:00 with --signal=B:USR1@180 refused at start (exit 2), nothing launched"
id=$(slurm_submit STOKER_TRAIN="$STOKER_TRAIN" CHECKPOINT_DIR="$work/ck1" WARNING_SECONDS=900 \
     --time=00:10:00 -n 1 -o "$work/short-%j.out" "$repo/jobs/slurm/train.sbatch")
ended "$id" FAILED 2:0 "a 10-minute job with WARNING_SECONDS=900"
expect_log "$work/short-$id.out" "at or below the warning offset of 900 s" "WARNING_SECONDS=900"
echo "ok: --time=10:00 with WARNING_SECONDS=900 refused at start"

# --- 2. Warnings that come before every save: requeued once, then stopped. ---
# The check waits for $work/signalled (made once scancel has sent the run's USR1; 60 s at most,
# against about 1 s on a quiet machine); then 4 s stand for slurmctld passing the signal to
# slurmd and slurmd to the script, which takes milliseconds and cannot be seen from here.
cat > "$work/slow-check-train" <<EOS
#!/bin/bash
case " \$* " in *" --check "*)
  for ((i = 0; i < 1200; ++i)); do [ -e "$work/signalled" ] && break; sleep 0.05; done
  rm -f "$work/signalled"
  sleep 4 ;;
esac
exec "$STOKER_TRAIN" "\$@"
EOS
chmod +x "$work/slow-check-train"
id=$(slurm_submit STOKER_TRAIN="$work/slow-check-train" CHECKPOINT_DIR="$work/ck2" \
     IDLE_REQUEUES=1 --time=00:10:00 -n 1 -o "$work/idle-%j.out" "$repo/jobs/slurm/train.sbatch")
out=$work/idle-$id.out
# signal_in_check N: once the Nth run of the job is in its settings check, SIGUSR1 to the script.
signal_in_check() {
  slurm_poll 60 "run $1 of job $id to start its check" \
    bash -c "[ \$(grep -c 'restart count' '$out' 2> /dev/null) -ge $1 ]" ||
    { cat "$out" >&2; fail "run $1 of job $id did not start"; }
  scancel --batch --signal=USR1 "$id"
  touch "$work/signalled"
}
signal_in_check 1
slurm_poll 60 "job $id to be requeued" bash -c "[ \"\$(scontrol show job -o $id | grep -o 'Restarts=[0-9]*')\" = Restarts=1 ]" ||
  { cat "$out" >&2; fail "job $id was not requeued after its first SIGUSR1"; }
signal_in_check 2
ended "$id" FAILED 1:0 "a job signalled before every save"
expect_log "$out" "the trainer will not be started" "a job signalled before its launch"
expect_log "$out" "not requeueing job $id: requeued 1 time(s) in a row without a newer complete step" \
  "a job signalled before every save"
[ "$(slurm_field "$id" Restarts)" = 1 ] || fail "job $id ran $(slurm_field "$id" Restarts) restarts"
! grep -q "running:" "$out" || fail "job $id launched the trainer"
echo "ok: a job signalled before every save requeued once, then stopped (exit 1), saying why"
echo "PASS: time limits and idle requeues"
