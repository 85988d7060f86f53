# shellcheck shell=bash
# Shared by the job scripts in jobs/slurm/ and jobs/mpirun/ (sourced, bash 5.1 or later): the
# settings with their defaults (one place for all six scripts), checked before anything is
# launched, launching the trainer so that a signal makes it save and stop instead of dying, and
# requeueing. What a checkpoint folder holds is stoker's to
# say: `stoker steps` finds the newest complete step (the rule a resume applies) and
# `stoker reshard` makes a whole resharded step folder; no step folder is checked here.
#
# Settings: environment variables; a value set before the script runs wins over the default.
# One set to nothing is an error (named before anything starts), not the default, except for
# WEIGHTS, WEIGHTS_SCHEDULE, TRACE_DIR, TRAIN_ARGS, RESULT_FILE, WARNING_SECONDS, STEP and
# NEW_CHECKPOINT_DIR, where nothing means none (or the default) as below.
#   STOKER_HOME      the stoker checkout (default: the folder holding jobs/)
#   TRAINER          which example trainer: stoker-train (C++, the default) or python
#                    (src/train/train.py under Debian's python3; the package from
#                    $STOKER_HOME/build/python when it is there, else the installed one)
#   STOKER_TRAIN     the trainer program (default $STOKER_HOME/build/stoker-train, or
#                    $STOKER_HOME/src/train/train.py for TRAINER=python); another trainer must
#                    take stoker-train's flags, --check and --ready-file included
#   STOKER           the stoker program: steps, reshard, inspect ($STOKER_HOME/build/stoker)
#   CORPUS           the corpus folder, --data ($STOKER_HOME/out/corpus)
#   CHECKPOINT_DIR   where step-<N>/ folders go; on storage every node sees
#                    ($STOKER_HOME/out/checkpoints)
#   STEPS            train until this global step (300)
#   SAVE_EVERY       save a step folder every this many steps (50)
#   WEIGHTS          mixing weights NAME=W,... (empty: proportional to each dataset's tokens)
#   WEIGHTS_SCHEDULE --weights-schedule: weights that change with the step, inline
#                    ("0:web=0.7,code=0.3;~10000:web=0.5,code=0.5") or a TOML or JSON file every
#                    node sees (docs/loader.md, "Mixing"); not with WEIGHTS (the trainer's check
#                    refuses both). Empty: none
#   SEQ_LEN, BATCH_SIZE, SEED   --seq-len (128), --batch-size per rank (16), --seed (0)
#   TRACE_DIR        if set, --trace DIR: piece traces for `stoker audit DIR` (empty: none)
#   TRAIN_ARGS       more stoker-train flags, split on spaces (e.g. "--dim 64 --layers 1")
#   TRAINER_FILES    the files the trainer saves in every step folder, beside loader/ (those of
#                    stoker-train: "model.pt optimizer.pt trainer.json"); a step without one of
#                    them is not complete. Set it for another trainer
#   RESULT_FILE      if set, --result FILE: the trainer writes its figures there as JSON
#   LAUNCHER         mpirun (default) or srun (Slurm only: srun --mpi=pmix)
#   MPIRUN           the mpirun command and its flags ("mpirun")
#   NP               ranks, for jobs/mpirun/ only (2); under Slurm the job's tasks decide
#   REQUEUE          Slurm only: 1 (default) requeues the job after a SIGUSR1 made the trainer
#                    save and stop early (a preemption or time-limit warning); 0 does not
#   IDLE_REQUEUES    Slurm only: requeues in a row that found no newer complete step, after
#                    which the job stops requeueing (3; 0: no limit)
#   WARNING_SECONDS  Slurm only: the warning offset of --signal=B:USR1@N, when it was given on
#                    sbatch's command line (default: from SBATCH_SIGNAL or the script's #SBATCH
#                    --signal line); a time limit at or below it is refused
#   For reshard: WORLD_SIZE (the new rank count; required), STEP (the step to reshard; default
#   the newest complete one), NEW_CHECKPOINT_DIR (where its step-<N>/ goes;
#   default "$CHECKPOINT_DIR-to-$WORLD_SIZE").

# `wait -n -p` (below) needs bash 5.1 or later.
if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
  echo "error: jobs/ needs bash 5.1 or later, not $BASH_VERSION" >&2
  exit 2
fi

stoker_settings() {
  : "${STOKER_HOME:?STOKER_HOME must name the stoker checkout}"
  # `=`, not `:=`: a setting given as empty (CHECKPOINT_DIR="") stays empty, and the trainer's
  # --check refuses it by name instead of the default silently taking its place.
  : "${TRAINER=stoker-train}"
  case "$TRAINER" in
    stoker-train) : "${STOKER_TRAIN=$STOKER_HOME/build/stoker-train}" ;;
    python)
      : "${STOKER_TRAIN=$STOKER_HOME/src/train/train.py}"
      # The package as built in the checkout (after a PYTHONPATH of your own); an installed one
      # is found without it.
      [ ! -d "$STOKER_HOME/build/python/stoker" ] ||
        export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$STOKER_HOME/build/python
      ;;
    *) stoker_fail "TRAINER must be stoker-train or python, not '$TRAINER'" ;;
  esac
  : "${STOKER=$STOKER_HOME/build/stoker}"
  : "${CORPUS=$STOKER_HOME/out/corpus}" "${CHECKPOINT_DIR=$STOKER_HOME/out/checkpoints}"
  : "${STEPS=300}" "${SAVE_EVERY=50}" "${WEIGHTS:=}" "${WEIGHTS_SCHEDULE:=}"
  : "${SEQ_LEN=128}" "${BATCH_SIZE=16}" "${SEED=0}"
  : "${TRACE_DIR:=}" "${TRAIN_ARGS:=}" "${RESULT_FILE:=}"
  : "${TRAINER_FILES=model.pt optimizer.pt trainer.json}"
  : "${LAUNCHER=mpirun}" "${MPIRUN=mpirun}" "${NP=2}" "${REQUEUE=1}" "${IDLE_REQUEUES=3}"
  : "${WARNING_SECONDS:=}" "${WORLD_SIZE:=}" "${STEP:=}" "${NEW_CHECKPOINT_DIR:=}"
  [ "$CHECKPOINT_DIR" = / ] || CHECKPOINT_DIR=${CHECKPOINT_DIR%/}
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

# _stoker_steps DIR FLAGS...: `stoker steps` with the trainer's files required; its one line in
# STEP_NUMBER, STEP_WORLD, STEP_PATH (empty when it printed none). Returns 1 when it failed.
_stoker_steps() {
  local line require=() files=() f
  read -ra files <<< "$TRAINER_FILES"
  for f in "${files[@]}"; do require+=(--require "$f"); done
  STEP_NUMBER="" STEP_WORLD="" STEP_PATH=""
  [ -x "$STOKER" ] || { stoker_say "error: STOKER is not an executable program: $STOKER"; return 1; }
  line=$(setsid -w "$STOKER" steps "$@" "${require[@]}") || return 1
  IFS=$'\t' read -r STEP_NUMBER STEP_WORLD STEP_PATH <<< "$line" || true
}

# stoker_train_command LAUNCHER_ARGS...: the trainer's command line, in the array STOKER_CMD;
# the arguments are the launcher's (e.g. mpirun -np 4). Always --resume: the trainer starts at
# step 0 when there is no checkpoint yet, so a requeued or repeated job goes on where it was.
# STOKER_ARGS holds the trainer's flags alone, and _stoker_setting_of the setting behind each.
stoker_train_command() {
  STOKER_ARGS=()
  declare -gA _stoker_setting_of=()
  _stoker_arg CORPUS --data "$CORPUS"
  _stoker_arg STEPS --steps "$STEPS"
  _stoker_arg CHECKPOINT_DIR --checkpoint-dir "$CHECKPOINT_DIR"
  _stoker_arg SAVE_EVERY --save-every "$SAVE_EVERY"
  STOKER_ARGS+=(--resume)
  _stoker_arg SEQ_LEN --seq-len "$SEQ_LEN"
  _stoker_arg BATCH_SIZE --batch-size "$BATCH_SIZE"
  _stoker_arg SEED --seed "$SEED"
  [ -z "$WEIGHTS" ] || _stoker_arg WEIGHTS --weights "$WEIGHTS"
  [ -z "$WEIGHTS_SCHEDULE" ] ||
    _stoker_arg WEIGHTS_SCHEDULE --weights-schedule "$WEIGHTS_SCHEDULE"
  [ -z "$TRACE_DIR" ] || _stoker_arg TRACE_DIR --trace "$TRACE_DIR"
  [ -z "$RESULT_FILE" ] || _stoker_arg RESULT_FILE --result "$RESULT_FILE"
  local extra=() flag
  read -ra extra <<< "$TRAIN_ARGS"  # a list of flags, split on white space (never globbed)
  for flag in "${extra[@]}"; do
    [[ "$flag" != --* ]] || _stoker_setting_of[${flag%%=*}]=TRAIN_ARGS
  done
  STOKER_ARGS+=("${extra[@]}")
  STOKER_CMD=("$@" "$STOKER_TRAIN" "${STOKER_ARGS[@]}")
}

_stoker_arg() {  # _stoker_arg SETTING FLAG VALUE
  STOKER_ARGS+=("$2" "$3")
  _stoker_setting_of[$2]=$1
}

# stoker_check_settings: every setting, checked before anything is launched; exits 2
# naming the wrong ones. The trainer's own options go through its --check: the option parsing
# and checks of the run itself (stoker-train's OptionProblems), in one process without MPI, so
# that no rule is written twice. Call after stoker_train_command.
stoker_check_settings() {
  local out rc=0 flag named=() setting
  stoker_need_program STOKER_TRAIN "$STOKER_TRAIN"
  stoker_need_program STOKER "$STOKER"
  [[ "$REQUEUE" =~ ^[01]$ ]] || stoker_fail "REQUEUE must be 0 or 1, not '$REQUEUE'"
  [[ "$IDLE_REQUEUES" =~ ^[0-9]+$ ]] ||
    stoker_fail "IDLE_REQUEUES must be a whole number, not '$IDLE_REQUEUES'"
  [[ -z "$WARNING_SECONDS" || "$WARNING_SECONDS" =~ ^[0-9]+$ ]] ||
    stoker_fail "WARNING_SECONDS must be a whole number of seconds, not '$WARNING_SECONDS'"
  [ -n "${TRAINER_FILES// /}" ] || stoker_fail "TRAINER_FILES is empty: name the files the" \
    "trainer saves in a step folder (stoker-train: model.pt optimizer.pt trainer.json)"
  [ -n "${MPIRUN// /}" ] || stoker_fail "MPIRUN is empty: give mpirun and its flags"
  # In a session of its own, as the trainer: a Ctrl-C in the terminal reaches this script (which
  # then does not launch), not the check.
  out=$(setsid -w "$STOKER_TRAIN" --check "${STOKER_ARGS[@]}" 2>&1) || rc=$?
  [ "$rc" != 0 ] || return 0
  [ "$rc" -le 128 ] || stoker_fail "$STOKER_TRAIN --check was killed (exit $rc): $out"
  printf '%s\n' "$out" | sed 's/^/  /' >&2
  for flag in "${!_stoker_setting_of[@]}"; do
    setting=${_stoker_setting_of[$flag]}
    if grep -qF -- "$flag" <<< "$out" && [[ " ${named[*]} " != *" $setting="* ]]; then
      named+=("$setting='${!setting}'")
    fi
  done
  [ ${#named[@]} -gt 0 ] || named=("(see above)")
  stoker_fail "wrong setting: ${named[*]}: $STOKER_TRAIN --check said so (above, exit $rc);" \
    "nothing was launched"
}

# Signals. From the script's first line on (each job script traps them before it sources this
# file, in STOKER_EARLY_SIGNALS), a signal is remembered in STOKER_SIGNAL and never lost:
#   - before the launch: the trainer is not started (nothing to save); under Slurm a SIGUSR1
#     still requeues the job;
#   - after it: the signal reaches the ranks as SIGUSR1 (the launcher forwards it to each) once
#     rank 0 has created the trainer's --ready-file, i.e. once every rank can take it; before
#     that, mpirun would forward it to ranks that do not exist yet or cannot catch it yet, and
#     the run would go on to the end. If the ranks never get there (120 s), the launcher is
#     stopped and, under Slurm, the job requeued;
#   - all ranks then stop at the same next step, save it and exit 0. USR1, not TERM: mpirun
#     answers SIGTERM by passing it on and killing the ranks about a second later, before they
#     could save. A second INT, TERM or HUP means "now": the launcher gets SIGTERM (srun passes
#     it on to the ranks, which then stop at their next step all the same).
#   - exit code when the trainer was not started: 0 after SIGUSR1 (the stop it asks for is done;
#     under Slurm the job requeues), 128 + the signal's number after INT, TERM or HUP.
# A terminal's hang-up (HUP) counts as TERM.
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

# Hands a pending signal to the launcher once the ranks can take it (see above).
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

# stoker_launch: runs STOKER_CMD (with --ready-file), delivering signals as above, and waits for
# it; or, after a signal came first, does not. Sets STOKER_RC (its exit code; 0 when it did not
# start) and STOKER_SIGNAL (the first signal received, or empty). The ready file lies in
# CHECKPOINT_DIR, storage that rank 0 and this script both see (rank 0 may run on another node).
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
  # Open MPI's banner after a rank's non-zero exit ("Primary job terminated normally, but ...")
  # repeats what the trainer said; the exit is explained below instead.
  export OMPI_MCA_orte_execute_quiet=1
  stoker_say "running: ${STOKER_CMD[*]}"
  # In a session of its own: a Ctrl-C in the terminal reaches this script only, which forwards
  # it as above, instead of also reaching mpirun (which would kill the ranks) and the ranks.
  setsid "${STOKER_CMD[@]}" &
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

# Waits for the launcher; with a signal pending, wakes every 0.2 s to deliver it. `wait -n -p`
# (bash 5.1) returns when the launcher ends, or early when a trapped signal arrives.
_stoker_wait() {
  local ended status sleeper
  while true; do
    _stoker_deliver
    sleeper=""
    # Until the ranks are up, wake up often: a signal that arrives between the delivery above
    # and the wait below is then delivered 0.2 s later instead of never. Once they are up, the
    # trap delivers it at once.
    if [ -n "$_stoker_pending_since" ] || [ ! -e "$_stoker_ready" ]; then
      sleep 0.2 &
      sleeper=$!
    fi
    ended="" status=0
    wait -n -p ended "$_stoker_pid" ${sleeper:+"$sleeper"} || status=$?
    [ -z "$sleeper" ] || kill "$sleeper" 2> /dev/null || true
    # The launcher ended; or `wait` failed for another reason than a signal (never seen: the
    # launcher is this shell's child), which must not spin here for ever.
    if [ "${ended:-}" = "$_stoker_pid" ] || { [ -z "${ended:-}" ] && [ "$status" -le 128 ]; }; then
      STOKER_RC=$status
      return
    fi
  done
}

# stoker_check_inputs train|resume RANKS: the checkpoint folder, checked before launching
# anything; says where the run starts. For resume, refuses (exit 2) when CHECKPOINT_DIR holds
# no step folder. Call after stoker_check_settings.
stoker_check_inputs() {
  local mode=$1 ranks=$2
  if ! stoker_newest_step "$CHECKPOINT_DIR"; then
    [ "$mode" != resume ] || stoker_fail "nothing to resume: no complete step-<N> folder in" \
      "CHECKPOINT_DIR=$CHECKPOINT_DIR (a complete one holds loader/rank-R-of-W.ckpt for every" \
      "rank R < W and the trainer's files: $TRAINER_FILES). Start with train instead, or set" \
      "CHECKPOINT_DIR"
    mkdir -p "$CHECKPOINT_DIR" || stoker_fail "cannot create CHECKPOINT_DIR=$CHECKPOINT_DIR"
    stoker_say "no checkpoint in $CHECKPOINT_DIR yet: the trainer starts at step 0"
    return
  fi
  stoker_say "newest complete checkpoint: $STEP_PATH, saved on $STEP_WORLD ranks, now $ranks:" \
    "the trainer resumes from it$([ "$STEP_WORLD" = "$ranks" ] || echo " and the loader" \
    "rescales its state (no token lost or repeated)")"
}

# stoker_start MODE RANKS LAUNCHER_ARGS...: what every training job does before its launch:
# signals caught, settings checked, the checkpoint folder looked at, the command built.
stoker_start() {
  local mode=$1 ranks=$2
  shift 2
  stoker_catch_signals
  stoker_train_command "$@"
  stoker_check_settings
  stoker_check_inputs "$mode" "${ranks:-?}"
}

# stoker_slurm_train train|resume: the body of jobs/slurm/train.sbatch and resume.sbatch. The
# trainer runs on the job's tasks (mpirun reads the allocation; srun --mpi=pmix). After a
# SIGUSR1 (Slurm's --signal warning before the time limit, or `scancel --batch --signal=USR1`)
# made it save and stop early, the job requeues itself (unless REQUEUE=0): it runs again with
# SLURM_RESTART_COUNT one higher and, through --resume, goes on from the step just saved.
stoker_slurm_train() {
  local mode=$1 ranks=${SLURM_NTASKS:-${SLURM_NPROCS:-}} launcher=()
  stoker_settings
  stoker_say "job ${SLURM_JOB_ID:-?} ($mode) on ${SLURM_JOB_NODELIST:-?}: ${ranks:-?} tasks," \
    "restart count ${SLURM_RESTART_COUNT:-0}, launcher $LAUNCHER"
  # MPIRUN is a command and its flags, split on spaces. srun --export=ALL: in a job submitted
  # with --export=NONE, srun's tasks would otherwise start without PATH.
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

# A time limit at or below the warning offset (#SBATCH --signal=B:USR1@N) would have Slurm send
# the warning at once, every time: the job would save a step and requeue itself every few
# seconds, for ever. Refused (exit 2) before anything starts. `stoker job time-limit` decides
# (every time format of Slurm, the offset of a --signal spec: src/job/slurm_time.h); here, where
# the two come from. The offset: WARNING_SECONDS, else SBATCH_SIGNAL, else the script's own
# #SBATCH --signal line (Slurm runs a copy of it: $0); an offset given as `sbatch --signal=...`
# on the command line is not visible here: set WARNING_SECONDS with it. The limit: squeue's.
# Without either, nothing is checked.
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

# After SIGUSR1: `stoker job requeue` decides (src/job/requeue.h) and keeps the count in
# CHECKPOINT_DIR/.stoker-requeues. The job requeues unless the newest complete step has reached
# STEPS (the trainer saves the step it stops at, and the last one), or the job has been requeued
# IDLE_REQUEUES times in a row without a newer complete step: a warning that comes before a step
# and its save can finish, every time, would otherwise requeue the job for ever (it then exits
# 1). A trainer that failed after the signal is requeued too: the job is about to end, and the
# next run goes on from the newest complete step.
_stoker_requeue() {
  local out rc=0 decision line files=() require=() f
  [ -n "${SLURM_JOB_ID:-}" ] || { stoker_say "not under Slurm: no requeue"; return 0; }
  read -ra files <<< "$TRAINER_FILES"
  for f in "${files[@]}"; do require+=(--require "$f"); done
  out=$(setsid -w "$STOKER" job requeue --checkpoint-dir "$CHECKPOINT_DIR" --steps "$STEPS" \
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
# under mpirun on this machine. SIGUSR1, SIGTERM or Ctrl-C make the trainer save and stop.
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

# stoker_reshard: the body of jobs/slurm/reshard.sbatch and jobs/mpirun/reshard.sh. `stoker
# reshard` rewrites step STEP (default: the newest complete one) of CHECKPOINT_DIR for WORLD_SIZE
# ranks into NEW_CHECKPOINT_DIR/step-<N>, a whole step folder (the trainer's files copied beside
# loader/) that appears in one rename; then `stoker inspect` of it.
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
  local out=$NEW_CHECKPOINT_DIR/step-$STEP_NUMBER rc=0
  [ ! -e "$out" ] || stoker_fail "$out exists already: reshard never overwrites a step folder;" \
    "remove it or set NEW_CHECKPOINT_DIR"
  stoker_say "resharding $STEP_PATH (saved on $STEP_WORLD ranks) for $WORLD_SIZE ranks into $out"
  stoker_say "running: $STOKER reshard $STEP_PATH --world-size $WORLD_SIZE --out $out"
  "$STOKER" reshard "$STEP_PATH" --world-size "$WORLD_SIZE" --out "$out" || rc=$?
  [ "$rc" = 0 ] || { stoker_say "error: stoker reshard failed (exit $rc)"; exit "$rc"; }
  stoker_say "wrote $out; resume from it with CHECKPOINT_DIR=$NEW_CHECKPOINT_DIR on" \
    "$WORLD_SIZE ranks"
  local inspect=("$STOKER" inspect "$out")
  [ ! -d "$CORPUS" ] || inspect+=(--data "$CORPUS")
  stoker_say "running: ${inspect[*]}"
  "${inspect[@]}" || rc=$?
  [ "$rc" = 0 ] || { stoker_say "error: stoker inspect of $out failed (exit $rc)"; exit "$rc"; }
}
