# shellcheck shell=bash
# Shared by the job scripts in jobs/slurm/ and jobs/mpirun/ (sourced, bash 5.1 or later): the
# shell's part of a training job. It chooses the launcher, holds a signal until the ranks can take
# it, and runs `scontrol requeue`. Everything else is a program's: `stoker job settings` gives the
# job's settings and their defaults (its --help lists them), the trainer reads its own from the
# environment (`stoker settings --program trainer`), `stoker job start` has the trainer check them
# (naming the flag and the variable), checks the time limit and says where the run starts,
# `stoker job requeue` decides on a requeue, `stoker job reshard` makes a resharded step.

((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))) ||
  { echo "error: jobs/ needs bash 5.1 or later (wait -n -p), not $BASH_VERSION" >&2; exit 2; }

# stoker_settings slurm|mpirun: the job's settings from `stoker job settings`, exported.
stoker_settings() {
  local out line
  : "${STOKER_HOME:?STOKER_HOME must name the stoker checkout}"
  : "${STOKER=$STOKER_HOME/build/stoker}"
  [ -x "$STOKER" ] || stoker_fail "STOKER is not an executable program: $STOKER (set STOKER, or" \
    "build it)"
  out=$(setsid -w "$STOKER" job settings --launch "$1") ||
    stoker_fail "wrong job setting: stoker job settings said so (above); nothing was launched"
  while IFS= read -r line; do export "${line?}"; done <<< "$out"
}

# Messages go to stderr, so stdout holds only the trainer's output (its JSON result line).
stoker_say() {
  printf '[%s jobs] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

stoker_fail() {
  stoker_say "error: $*"
  exit 2
}

# stoker_train_command: the trainer's command line, in the array STOKER_CMD, after the launcher's
# (the array LAUNCH, e.g. mpirun -np 4). The trainer's settings travel in the environment; mpirun
# passes each one set to the ranks of other nodes too (-x NAME; srun passes them all). Always
# --resume: the trainer starts at step 0 when there is no checkpoint yet, so a requeued or
# repeated job goes on where it was.
stoker_train_command() {
  local extra=() name forward=()
  read -ra extra <<< "$TRAIN_ARGS"  # a list of flags, split on white space (never globbed)
  STOKER_ARGS=(--resume "${extra[@]}")
  if [ "$LAUNCHER" = mpirun ]; then
    for name in $("$STOKER" settings --variables --program trainer) PYTHONPATH; do
      [ -z "${!name+set}" ] || forward+=(-x "$name")
    done
  fi
  STOKER_CMD=("${LAUNCH[@]}" "${forward[@]}" "$STOKER_TRAIN" "${STOKER_ARGS[@]}")
}

# Signals (jobs/README.md, "A signal is never lost"). Each job script traps them from its first
# line (STOKER_EARLY_SIGNALS); then one is remembered in STOKER_SIGNAL: before the launch the
# trainer is not started (exit 0 after USR1, 128 + N after INT, TERM, HUP); after it, it reaches
# the ranks as SIGUSR1 once rank 0 has made the --ready-file (every rank can take it), or the
# launcher is stopped after 120 s. USR1, not TERM: mpirun kills the ranks a second after a TERM.
# A second INT, TERM or HUP stops the launcher at once.
stoker_catch_signals() {
  local signal
  STOKER_SIGNAL="" _stoker_pending_since="" _stoker_launching="" _stoker_pid="" _stoker_ready=""
  # shellcheck disable=SC2064  # $signal is expanded now, on purpose
  for signal in USR1 TERM INT HUP; do trap "_stoker_on_signal $signal" "$signal"; done
  for signal in ${STOKER_EARLY_SIGNALS:-}; do _stoker_on_signal "$signal"; done
}

_stoker_on_signal() {
  local signal=$1
  if [ -z "$STOKER_SIGNAL" ]; then
    STOKER_SIGNAL=$signal _stoker_pending_since=$SECONDS
    if [ -z "$_stoker_launching" ]; then
      stoker_say "got SIG$signal before the launch: the trainer will not be started"
    else
      stoker_say "got SIG$signal: asking the trainer to save and stop"
      _stoker_deliver
    fi
  elif [ "$signal" != USR1 ] && [ -n "$_stoker_pid" ]; then
    stoker_say "got SIG$signal again: stopping the launcher now, without a save"
    kill -TERM "$_stoker_pid" 2> /dev/null || true
  fi
}

_stoker_deliver() {
  [ -n "$_stoker_pending_since" ] && [ -n "$_stoker_pid" ] || return 0
  if [ -e "$_stoker_ready" ]; then
    kill -USR1 "$_stoker_pid" 2> /dev/null || true
    stoker_say "sent SIGUSR1 to the ranks (launcher pid $_stoker_pid)"
    _stoker_pending_since=""
  elif [ $((SECONDS - _stoker_pending_since)) -ge 120 ]; then
    stoker_say "the ranks did not start within 120 s of SIG$STOKER_SIGNAL: stopping the launcher"
    kill -TERM "$_stoker_pid" 2> /dev/null || true
    _stoker_pending_since=""
  fi
}

# stoker_launch: runs STOKER_CMD (with a --ready-file in CHECKPOINT_DIR, which rank 0 sees too)
# unless a signal came first, and waits for it; STOKER_RC is its exit code (0 unstarted).
stoker_launch() {
  STOKER_RC=0
  _stoker_launching=1
  if [ -n "$STOKER_SIGNAL" ]; then
    stoker_say "not starting the trainer: SIG$STOKER_SIGNAL came first (nothing to save)"
    [ "$STOKER_SIGNAL" = USR1 ] || STOKER_RC=$((128 + $(kill -l "$STOKER_SIGNAL")))
    return
  fi
  _stoker_ready=$CHECKPOINT_DIR/.stoker-ready-$(hostname)-$$
  rm -f "$_stoker_ready"
  STOKER_CMD+=(--ready-file "$_stoker_ready")
  export OMPI_MCA_orte_execute_quiet=1  # no "Primary job terminated" banner: the error says why
  stoker_say "running: ${STOKER_CMD[*]}"
  setsid "${STOKER_CMD[@]}" &  # a terminal's Ctrl-C reaches this script only, not mpirun
  _stoker_pid=$!
  _stoker_wait
  rm -f "$_stoker_ready"
  local killed=""
  ((STOKER_RC <= 128)) || killed=": a rank or the launcher was killed by signal $((STOKER_RC - 128))"
  case "$STOKER_RC" in
    1) stoker_say "the trainer failed (exit code 1): its error is above" ;;
    2) stoker_say "the trainer refused its settings (exit code 2): see above" ;;
    3) stoker_say "another run holds the checkpoint folder (exit code 3): see above" ;;
    *) stoker_say "the trainer's launcher exited with code $STOKER_RC$killed" ;;
  esac
}

# Waits for the launcher (`wait -n -p` returns early on a trapped signal), waking every 0.2 s
# until the ranks are up, or while a signal waits to be delivered.
_stoker_wait() {
  local ended status sleeper
  while true; do
    _stoker_deliver
    sleeper=""
    if [ -n "$_stoker_pending_since" ] || [ ! -e "$_stoker_ready" ]; then
      sleep 0.2 &
      sleeper=$!
    fi
    ended="" status=0
    wait -n -p ended "$_stoker_pid" ${sleeper:+"$sleeper"} || status=$?
    [ -z "$sleeper" ] || kill "$sleeper" 2> /dev/null || true
    # The launcher ended, or `wait` failed for another reason than a signal: no spinning.
    if [ "${ended:-}" = "$_stoker_pid" ] || { [ -z "${ended:-}" ] && [ "$status" -le 128 ]; }; then
      STOKER_RC=$status
      return
    fi
  done
}

# stoker_start MODE RANKS [ARGS...]: signals caught, command built on LAUNCH, then `stoker job
# start --mode MODE --ranks RANKS ARGS -- TRAINER_FLAGS`: the trainer's --check, the time limit,
# where the run starts (exit 2 when the job must not); its first line is the trainer's STEPS.
stoker_start() {
  local out rc=0 line
  stoker_catch_signals
  stoker_train_command
  # In a session of its own, as the trainer: a terminal's Ctrl-C reaches this script, not it.
  out=$(setsid -w "$STOKER" job start --mode "$1" --ranks "${2:-?}" "${@:3}" -- \
        "${STOKER_ARGS[@]}") || rc=$?
  { read -r TARGET_STEPS; while IFS= read -r line; do stoker_say "$line"; done; } <<< "$out"
  [ "$rc" = 0 ] || stoker_fail "stoker job start refused the start (above, exit $rc)"
}

# stoker_slurm_train train|resume: the body of jobs/slurm/train.sbatch and resume.sbatch, on the
# job's tasks. After a SIGUSR1 made the trainer save and stop early, the job requeues itself
# (unless REQUEUE=0) and, through --resume, goes on from the step just saved. The time limit is
# checked against the warning offset ($0 is Slurm's copy of the script, with its #SBATCH lines).
stoker_slurm_train() {
  local mode=$1 ranks=${SLURM_NTASKS:-${SLURM_NPROCS:-}} limit
  stoker_settings slurm
  stoker_say "job ${SLURM_JOB_ID:-?} ($mode) on ${SLURM_JOB_NODELIST:-?}: ${ranks:-?} tasks," \
    "restart count ${SLURM_RESTART_COUNT:-0}, launcher $LAUNCHER"
  # MPIRUN: a command and its flags. srun --export=ALL: under sbatch --export=NONE too.
  # shellcheck disable=SC2206
  case "$LAUNCHER" in  # checked by stoker job settings
    mpirun) read -ra LAUNCH <<< "$MPIRUN"; LAUNCH+=(${ranks:+-np "$ranks"}) ;;
    *) LAUNCH=(srun --export=ALL --mpi=pmix --kill-on-bad-exit=1) ;;
  esac
  limit=$(squeue -h -j "${SLURM_JOB_ID:-0}" -o %l 2> /dev/null) || limit=""
  stoker_start "$mode" "$ranks" ${limit:+--limit "$limit" --script "$0"}
  stoker_launch
  if [ "$STOKER_SIGNAL" = USR1 ] && [ "$REQUEUE" = 1 ]; then
    _stoker_requeue
  fi
  rm -f "$CHECKPOINT_DIR/.stoker-requeues"
  exit "$STOKER_RC"
}

# After SIGUSR1: `stoker job requeue` decides (requeue, done at STEPS, or give-up after
# IDLE_REQUEUES requeues without a newer complete step: exit 1) and counts in
# CHECKPOINT_DIR/.stoker-requeues; a trainer that failed after the signal is requeued too.
_stoker_requeue() {
  local out decision line files=() f require=()
  [ -n "${SLURM_JOB_ID:-}" ] || { stoker_say "not under Slurm: no requeue"; return 0; }
  read -ra files <<< "$TRAINER_FILES"
  for f in "${files[@]}"; do require+=(--require "$f"); done
  out=$(setsid -w "$STOKER" job requeue --checkpoint-dir "$CHECKPOINT_DIR" --steps "$TARGET_STEPS" \
        --idle-requeues "$IDLE_REQUEUES" --job-id "$SLURM_JOB_ID" --trainer-exit "$STOKER_RC" \
        "${require[@]}") || stoker_fail "stoker job requeue failed (above): no requeue"
  { read -r decision; while IFS= read -r line; do stoker_say "$line"; done; } <<< "$out"
  case "$decision" in
    requeue) scontrol requeue "$SLURM_JOB_ID" || stoker_fail "scontrol requeue $SLURM_JOB_ID" \
      "failed (was the job submitted with --no-requeue, or is JobRequeue=0 set?)"; exit 0 ;;
    done) ;;
    give-up) exit 1 ;;
    *) stoker_fail "stoker job requeue decided '$decision', not requeue, done or give-up" ;;
  esac
}

# stoker_mpirun_train train|resume: jobs/mpirun/train.sh and resume.sh, NP ranks under mpirun.
stoker_mpirun_train() {
  stoker_settings mpirun
  read -ra LAUNCH <<< "$MPIRUN"  # a command and its flags
  LAUNCH+=(-np "$NP")
  stoker_start "$1" "$NP"
  stoker_launch
  exit "$STOKER_RC"
}

# stoker_reshard: the body of jobs/slurm/reshard.sbatch and jobs/mpirun/reshard.sh: `stoker job
# reshard` (step STEP of CHECKPOINT_DIR for WORLD_SIZE ranks into NEW_CHECKPOINT_DIR), then
# `stoker inspect` of the new step.
stoker_reshard() {
  local out rc=0 data=()
  stoker_settings slurm
  out=$(setsid -w "$STOKER" job reshard) || rc=$?
  [ "$rc" = 0 ] || { stoker_say "error: stoker job reshard failed (above, exit $rc)"; exit "$rc"; }
  [ ! -d "$CORPUS" ] || data=(--data "$CORPUS")
  stoker_say "running: $STOKER inspect $out ${data[*]}"
  "$STOKER" inspect "$out" "${data[@]}" || exit
}
