# shellcheck shell=bash
# Shared by the job scripts in jobs/slurm/ and jobs/mpirun/ (sourced, bash 5.1 or later): the
# shell's part of a training job. It chooses the launcher, holds a signal until the ranks can take
# it, and runs `scontrol requeue`. Everything else is a program's: the trainer reads its settings
# from the environment (`stoker settings` lists them, with their defaults) and checks them
# (`--check`, naming the flag and the variable); `stoker steps` finds the newest complete step;
# `stoker job` decides on time limits and requeues; `stoker reshard` makes a resharded step.
#
# The scripts' own settings (jobs/README.md has the trainer's too). One set to nothing is an
# error, except where nothing means none or the default:
#   STOKER_HOME      the stoker checkout (default: the folder holding jobs/)
#   TRAINER          stoker-train (C++, the default) or python (src/train/train.py under Debian's
#                    python3; the package from $STOKER_HOME/build/python when it is there)
#   STOKER_TRAIN     the trainer ($STOKER_HOME/build/stoker-train, or src/train/train.py); another
#                    must take stoker-train's settings, --check and --ready-file included
#   STOKER           the stoker program ($STOKER_HOME/build/stoker)
#   CORPUS, CHECKPOINT_DIR   the trainer's, defaulting here to $STOKER_HOME/out/corpus and
#                    $STOKER_HOME/out/checkpoints (on storage every node sees)
#   TRAIN_ARGS       more trainer flags, split on white space (e.g. "--dim 64 --layers 1")
#   TRAINER_FILES    files a complete step folder must hold beside loader/ besides those its
#                    trainer.files names (a trainer that writes none; default: none)
#   LAUNCHER         mpirun (default) or srun (Slurm only: srun --mpi=pmix)
#   MPIRUN           the mpirun command and its flags ("mpirun")
#   NP               ranks, for jobs/mpirun/ only (2); under Slurm the job's tasks decide
#   REQUEUE, IDLE_REQUEUES, WARNING_SECONDS   Slurm only: requeue after SIGUSR1 (1) or not (0);
#                    requeues in a row without a newer step before giving up (3; 0: no limit);
#                    the --signal offset when sbatch's command line gave it
#   WORLD_SIZE, STEP, NEW_CHECKPOINT_DIR   reshard: the new rank count (required), the step (the
#                    newest complete one), the output ("$CHECKPOINT_DIR-to-$WORLD_SIZE")

# `wait -n -p` (below) needs bash 5.1 or later.
if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
  echo "error: jobs/ needs bash 5.1 or later, not $BASH_VERSION" >&2
  exit 2
fi

stoker_settings() {
  : "${STOKER_HOME:?STOKER_HOME must name the stoker checkout}"
  # `=`, not `:=`: a setting given as empty (CHECKPOINT_DIR="") stays empty, and the trainer
  # refuses it by name instead of the default silently taking its place.
  : "${TRAINER=stoker-train}"
  case "$TRAINER" in
    stoker-train) : "${STOKER_TRAIN=$STOKER_HOME/build/stoker-train}" ;;
    python)
      : "${STOKER_TRAIN=$STOKER_HOME/src/train/train.py}"
      # The package as built in the checkout (after a PYTHONPATH of your own).
      [ ! -d "$STOKER_HOME/build/python/stoker" ] ||
        export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$STOKER_HOME/build/python
      ;;
    *) stoker_fail "TRAINER must be stoker-train or python, not '$TRAINER'" ;;
  esac
  : "${STOKER=$STOKER_HOME/build/stoker}"
  export CORPUS=${CORPUS-$STOKER_HOME/out/corpus}
  export CHECKPOINT_DIR=${CHECKPOINT_DIR-$STOKER_HOME/out/checkpoints}
  [ "$CHECKPOINT_DIR" = / ] || CHECKPOINT_DIR=${CHECKPOINT_DIR%/}
  : "${TRAIN_ARGS:=}" "${TRAINER_FILES:=}" "${LAUNCHER=mpirun}" "${MPIRUN=mpirun}" "${NP=2}"
  : "${REQUEUE=1}" "${IDLE_REQUEUES=3}" "${WARNING_SECONDS:=}"
  : "${WORLD_SIZE:=}" "${STEP:=}" "${NEW_CHECKPOINT_DIR:=}"
}

# Messages go to stderr, so stdout holds only the trainer's output (its JSON result line).
stoker_say() {
  printf '[%s jobs] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

stoker_fail() {
  stoker_say "error: $*"
  exit 2
}

stoker_need_program() {
  [ -x "$2" ] || stoker_fail "$1 is not an executable program: $2 (set $1, or build it)"
}

# stoker_newest_step DIR: the newest complete step folder under DIR, from `stoker steps`, in
# STEP_NUMBER, STEP_WORLD and STEP_PATH; `stoker steps` logs the newer ones it passed over, and
# why. Returns 1 when DIR holds no step folder; exits 2 when it holds some and none is complete
# (a resume would refuse them too: starting over would repeat every token trained on).
stoker_newest_step() {
  _stoker_steps "$1" --newest || stoker_fail "stoker steps $1 --newest failed (above)"
  [ -n "$STEP_PATH" ]
}

# stoker_step DIR N: step N of DIR, as stoker_newest_step; exits 2 when it is not complete.
stoker_step() {
  _stoker_steps "$1" --step "$2" || stoker_fail "stoker steps $1 --step $2 failed (above)"
}

# The --require flags of TRAINER_FILES.
_stoker_required() {
  local files=() f
  read -ra files <<< "$TRAINER_FILES"
  for f in "${files[@]}"; do printf '%s\n' --require "$f"; done
}

# _stoker_steps DIR FLAGS...: `stoker steps`; its one line in STEP_NUMBER, STEP_WORLD, STEP_PATH
# (empty when it printed none). Returns 1 when it failed.
_stoker_steps() {
  local line require=()
  mapfile -t require < <(_stoker_required)
  STEP_NUMBER="" STEP_WORLD="" STEP_PATH=""
  [ -x "$STOKER" ] || { stoker_say "error: STOKER is not an executable program: $STOKER"; return 1; }
  line=$(setsid -w "$STOKER" steps "$@" "${require[@]}") || return 1
  IFS=$'\t' read -r STEP_NUMBER STEP_WORLD STEP_PATH <<< "$line" || true
}

# stoker_train_command LAUNCHER_ARGS...: the trainer's command line, in the array STOKER_CMD, after
# the launcher's arguments (e.g. mpirun -np 4). The trainer's settings travel in the environment;
# mpirun passes each one set to the ranks of other nodes too (-x NAME; srun passes them all).
# Always --resume: the trainer starts at step 0 when there is no checkpoint yet, so a requeued
# or repeated job goes on where it was.
stoker_train_command() {
  local extra=() name forward=()
  read -ra extra <<< "$TRAIN_ARGS"  # a list of flags, split on white space (never globbed)
  STOKER_ARGS=(--resume "${extra[@]}")
  if [ "$(basename "$1")" = mpirun ] || [ "$1" = "${MPIRUN%% *}" ]; then
    for name in $("$STOKER" settings --variables --program trainer) PYTHONPATH; do
      [ -z "${!name+set}" ] || forward+=(-x "$name")
    done
  fi
  STOKER_CMD=("$@" "${forward[@]}" "$STOKER_TRAIN" "${STOKER_ARGS[@]}")
}

# stoker_check_settings: every setting, checked before anything is launched; exits 2 naming the
# wrong ones. The trainer checks its own (`--check`, in one process without MPI: each problem
# names its flag, and its variable when the value came from one) and prints them as NAME=VALUE;
# TARGET_STEPS becomes its STEPS (for `stoker job requeue`). Call after stoker_train_command.
stoker_check_settings() {
  local out err rc=0
  stoker_need_program STOKER_TRAIN "$STOKER_TRAIN"
  stoker_need_program STOKER "$STOKER"
  [[ "$REQUEUE" =~ ^[01]$ ]] || stoker_fail "REQUEUE must be 0 or 1, not '$REQUEUE'"
  [[ "$IDLE_REQUEUES" =~ ^[0-9]+$ ]] ||
    stoker_fail "IDLE_REQUEUES must be a whole number, not '$IDLE_REQUEUES'"
  [[ -z "$WARNING_SECONDS" || "$WARNING_SECONDS" =~ ^[0-9]+$ ]] ||
    stoker_fail "WARNING_SECONDS must be a whole number of seconds, not '$WARNING_SECONDS'"
  [ -n "${MPIRUN// /}" ] || stoker_fail "MPIRUN is empty: give mpirun and its flags"
  err=$(mktemp) || stoker_fail "cannot make a temporary file"
  # In a session of its own, as the trainer: a Ctrl-C in the terminal reaches this script (which
  # then does not launch), not the check.
  out=$(setsid -w "$STOKER_TRAIN" --check "${STOKER_ARGS[@]}" 2> "$err") || rc=$?
  sed 's/^/  /' "$err" >&2
  rm -f "$err"
  [ "$rc" -le 128 ] || stoker_fail "$STOKER_TRAIN --check was killed (exit $rc)"
  # shellcheck disable=SC2016  # the quotes are the message's
  [ "$rc" = 0 ] || stoker_fail "wrong setting: $STOKER_TRAIN --check said so (above, exit" \
    "$rc${TRAIN_ARGS:+; TRAIN_ARGS='$TRAIN_ARGS' gave flags}); nothing was launched"
  TARGET_STEPS=$(sed -n 's/^STEPS=//p' <<< "$out")
  [[ "$TARGET_STEPS" =~ ^[0-9]+$ ]] || stoker_fail "$STOKER_TRAIN --check printed no" \
    "STEPS=N line (a trainer of one's own prints its settings as stoker-train --check does)"
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
  trap '_stoker_on_signal USR1' USR1
  trap '_stoker_on_signal TERM' TERM
  trap '_stoker_on_signal INT' INT
  trap '_stoker_on_signal HUP' HUP
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

# stoker_launch: runs STOKER_CMD (with --ready-file, in CHECKPOINT_DIR, which rank 0's node sees
# too) unless a signal came first, and waits for it; STOKER_RC is its exit code (0 unstarted).
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
  export OMPI_MCA_orte_execute_quiet=1  # no "Primary job terminated" banner: explained below
  stoker_say "running: ${STOKER_CMD[*]}"
  setsid "${STOKER_CMD[@]}" &  # a terminal's Ctrl-C reaches this script only, not mpirun
  _stoker_pid=$!
  _stoker_wait
  rm -f "$_stoker_ready"
  case "$STOKER_RC" in
    0) stoker_say "the trainer's launcher exited with code 0" ;;
    1) stoker_say "the trainer failed (exit code 1): its error is above" ;;
    2) stoker_say "the trainer refused its settings (exit code 2): see above" ;;
    *) stoker_say "the trainer's launcher exited with code $STOKER_RC$( [ "$STOKER_RC" -le 128 ] ||
         echo ": a rank or the launcher was killed by signal $((STOKER_RC - 128))" \
              "($(kill -l $((STOKER_RC - 128)) 2> /dev/null || echo ?))")" ;;
  esac
}

# Waits for the launcher (`wait -n -p` returns early on a trapped signal); until the ranks are
# up, or with a signal pending, it wakes every 0.2 s to deliver it.
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

# stoker_check_inputs train|resume RANKS: says where the run starts; resume refuses (exit 2) a
# CHECKPOINT_DIR without a step folder.
stoker_check_inputs() {
  local mode=$1 ranks=$2
  if ! stoker_newest_step "$CHECKPOINT_DIR"; then
    [ "$mode" != resume ] || stoker_fail "nothing to resume: no complete step-<N> folder in" \
      "CHECKPOINT_DIR=$CHECKPOINT_DIR (a complete one holds loader/rank-R-of-W.ckpt for every" \
      "rank R < W and the files its trainer.files names). Start with train instead, or set" \
      "CHECKPOINT_DIR"
    mkdir -p "$CHECKPOINT_DIR" || stoker_fail "cannot create CHECKPOINT_DIR=$CHECKPOINT_DIR"
    stoker_say "no checkpoint in $CHECKPOINT_DIR yet: the trainer starts at step 0"
    return
  fi
  stoker_say "newest complete checkpoint: $STEP_PATH, saved on $STEP_WORLD ranks, now $ranks:" \
    "the trainer resumes from it$([ "$STEP_WORLD" = "$ranks" ] || echo " and the loader" \
    "rescales its state (no token lost or repeated)")"
}

# stoker_start MODE RANKS LAUNCHER_ARGS...: signals caught, command built, settings checked,
# checkpoint folder looked at: what every training job does before its launch.
stoker_start() {
  local mode=$1 ranks=$2
  shift 2
  stoker_catch_signals
  stoker_train_command "$@"
  stoker_check_settings
  stoker_check_inputs "$mode" "${ranks:-?}"
}

# stoker_slurm_train train|resume: the body of jobs/slurm/train.sbatch and resume.sbatch, on the
# job's tasks. After a SIGUSR1 made the trainer save and stop early, the job requeues itself
# (unless REQUEUE=0) and, through --resume, goes on from the step just saved.
stoker_slurm_train() {
  local mode=$1 ranks=${SLURM_NTASKS:-${SLURM_NPROCS:-}} launcher=()
  stoker_settings
  stoker_say "job ${SLURM_JOB_ID:-?} ($mode) on ${SLURM_JOB_NODELIST:-?}: ${ranks:-?} tasks," \
    "restart count ${SLURM_RESTART_COUNT:-0}, launcher $LAUNCHER"
  # MPIRUN: a command and its flags. srun --export=ALL: the settings, and PATH under
  # sbatch --export=NONE.
  # shellcheck disable=SC2206
  case "$LAUNCHER" in
    mpirun) read -ra launcher <<< "$MPIRUN"; launcher+=(${ranks:+-np "$ranks"}) ;;
    srun) launcher=(srun --export=ALL --mpi=pmix --kill-on-bad-exit=1) ;;
    *) stoker_fail "LAUNCHER must be mpirun or srun, not '$LAUNCHER'" ;;
  esac
  _stoker_check_time_limit
  stoker_start "$mode" "$ranks" "${launcher[@]}"
  stoker_launch
  if [ "$STOKER_SIGNAL" = USR1 ] && [ "$REQUEUE" = 1 ]; then
    _stoker_requeue
  fi
  rm -f "$CHECKPOINT_DIR/.stoker-requeues"
  exit "$STOKER_RC"
}

# A time limit at or below the warning offset would have Slurm warn at once, every time, and the
# job requeue itself for ever: refused (exit 2). `stoker job time-limit` decides; the offset comes
# from WARNING_SECONDS, else SBATCH_SIGNAL, else the script's #SBATCH --signal line ($0 is
# Slurm's copy of it), the limit from squeue. Without either, nothing is checked.
_stoker_check_time_limit() {
  local limit spec what offset=() out rc=0 verdict line
  if [ -n "$WARNING_SECONDS" ]; then
    what="WARNING_SECONDS='$WARNING_SECONDS'" offset=(--warning-seconds "$WARNING_SECONDS")
  else
    spec=${SBATCH_SIGNAL:-$(sed -n 's/^#SBATCH[[:space:]]*--signal[= ]\([^[:space:]]*\).*/\1/p' \
                                   "$0" 2> /dev/null | head -n 1)}
    [ -n "$spec" ] || return 0
    what="--signal=$spec" offset=(--signal "$spec")
  fi
  limit=$(squeue -h -j "${SLURM_JOB_ID:-0}" -o %l 2> /dev/null) && [ -n "$limit" ] || return 0
  stoker_need_program STOKER "$STOKER"
  out=$(setsid -w "$STOKER" job time-limit --limit "$limit" "${offset[@]}") || rc=$?
  [ "$rc" = 0 ] || stoker_fail "cannot check the time limit ($limit) against $what:" \
    "stoker job time-limit failed (above, exit $rc)"
  { read -r verdict; while IFS= read -r line; do stoker_say "$line"; done; } <<< "$out"
  [ "$verdict" != too-short ] || exit 2
}

# After SIGUSR1: `stoker job requeue` decides (requeue, done at STEPS, or give-up after
# IDLE_REQUEUES requeues without a newer complete step: exit 1) and counts in
# CHECKPOINT_DIR/.stoker-requeues; a trainer that failed after the signal is requeued too.
_stoker_requeue() {
  local out rc=0 decision line require=()
  [ -n "${SLURM_JOB_ID:-}" ] || { stoker_say "not under Slurm: no requeue"; return 0; }
  mapfile -t require < <(_stoker_required)
  out=$(setsid -w "$STOKER" job requeue --checkpoint-dir "$CHECKPOINT_DIR" --steps "$TARGET_STEPS" \
        --idle-requeues "$IDLE_REQUEUES" --job-id "$SLURM_JOB_ID" --trainer-exit "$STOKER_RC" \
        "${require[@]}") || rc=$?
  [ "$rc" = 0 ] || stoker_fail "stoker job requeue failed (above, exit $rc): no requeue"
  { read -r decision; while IFS= read -r line; do stoker_say "$line"; done; } <<< "$out"
  case "$decision" in
    requeue) ;;
    done) return 0 ;;
    give-up) exit 1 ;;
    *) stoker_fail "stoker job requeue decided '$decision', not requeue, done or give-up" ;;
  esac
  # Slurm ends this run of the script when the requeue takes effect.
  scontrol requeue "$SLURM_JOB_ID" || stoker_fail "scontrol requeue $SLURM_JOB_ID failed" \
    "(was the job submitted with --no-requeue, or is JobRequeue=0 set?)"
  exit 0
}

# stoker_mpirun_train train|resume: the body of jobs/mpirun/train.sh and resume.sh: NP ranks
# under mpirun on this machine.
stoker_mpirun_train() {
  local mode=$1
  stoker_settings
  [ "$LAUNCHER" = mpirun ] ||
    stoker_fail "jobs/mpirun/ launches with mpirun only, not LAUNCHER=$LAUNCHER"
  [[ "$NP" =~ ^[1-9][0-9]*$ ]] || stoker_fail "NP must be the number of ranks, 1 or more, not '$NP'"
  local launcher=()
  read -ra launcher <<< "$MPIRUN"  # a command and its flags
  launcher+=(-np "$NP")
  stoker_start "$mode" "$NP" "${launcher[@]}"
  stoker_launch
  exit "$STOKER_RC"
}

# stoker_reshard: the body of jobs/slurm/reshard.sbatch and jobs/mpirun/reshard.sh: `stoker
# reshard` of step STEP (the newest complete one) for WORLD_SIZE ranks into a whole, new
# NEW_CHECKPOINT_DIR/step-<N>; then `stoker inspect` of it.
stoker_reshard() {
  stoker_settings
  stoker_need_program STOKER "$STOKER"
  [[ "$WORLD_SIZE" =~ ^[1-9][0-9]*$ ]] ||
    stoker_fail "set WORLD_SIZE to the number of ranks the job will resume on (now '$WORLD_SIZE')"
  : "${NEW_CHECKPOINT_DIR:=$CHECKPOINT_DIR-to-$WORLD_SIZE}"
  if [ -n "$STEP" ]; then
    stoker_step "$CHECKPOINT_DIR" "$STEP"
  else
    stoker_newest_step "$CHECKPOINT_DIR" ||
      stoker_fail "no step-<N> folder in CHECKPOINT_DIR=$CHECKPOINT_DIR to reshard"
  fi
  local out=$NEW_CHECKPOINT_DIR/step-$STEP_NUMBER
  [ ! -e "$out" ] || stoker_fail "$out exists already: reshard never overwrites a step folder;" \
    "remove it or set NEW_CHECKPOINT_DIR"
  stoker_say "resharding $STEP_PATH (saved on $STEP_WORLD ranks) for $WORLD_SIZE ranks into $out"
  _stoker_run "$STOKER" reshard "$STEP_PATH" --world-size "$WORLD_SIZE" --out "$out"
  stoker_say "wrote $out; resume from it with CHECKPOINT_DIR=$NEW_CHECKPOINT_DIR on" \
    "$WORLD_SIZE ranks"
  local data=()
  [ ! -d "$CORPUS" ] || data=(--data "$CORPUS")
  _stoker_run "$STOKER" inspect "$out" "${data[@]}"
}

_stoker_run() {  # _stoker_run COMMAND...: runs it, said; exits with its code when it fails
  local rc=0
  stoker_say "running: $*"
  "$@" || rc=$?
  [ "$rc" = 0 ] || { stoker_say "error: $1 $2 failed (exit $rc)"; exit "$rc"; }
}
