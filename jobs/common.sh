# shellcheck shell=bash
# Shared by the job scripts in jobs/slurm/ and jobs/mpirun/ (sourced, bash): the settings with
# their defaults (one place for all six scripts), launching the trainer so that a signal makes it
# save and stop instead of dying, and requeueing. What a checkpoint folder holds is stoker's to
# say: `stoker steps` finds the newest complete step (the rule a resume applies) and
# `stoker reshard` makes a whole resharded step folder; no step folder is checked here.
#
# Settings: environment variables; a value set before the script runs wins over the default.
#   STOKER_HOME      the stoker checkout (default: the folder holding jobs/)
#   STOKER_TRAIN     the trainer program (default $STOKER_HOME/build/stoker-train)
#   STOKER           the stoker program: steps, reshard, inspect ($STOKER_HOME/build/stoker)
#   CORPUS           the corpus folder, --data ($STOKER_HOME/out/corpus)
#   CHECKPOINT_DIR   where step-<N>/ folders go; on storage every node sees
#                    ($STOKER_HOME/out/checkpoints)
#   STEPS            train until this global step (300)
#   SAVE_EVERY       save a step folder every this many steps (50)
#   WEIGHTS          mixing weights NAME=W,... (empty: proportional to each dataset's tokens)
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
#   For reshard: WORLD_SIZE (the new rank count; required), STEP (the step to reshard; default
#   the newest complete one), NEW_CHECKPOINT_DIR (where its step-<N>/ goes;
#   default "$CHECKPOINT_DIR-to-$WORLD_SIZE").

stoker_settings() {
  : "${STOKER_HOME:?STOKER_HOME must name the stoker checkout}"
  : "${STOKER_TRAIN:=$STOKER_HOME/build/stoker-train}"
  : "${STOKER:=$STOKER_HOME/build/stoker}"
  : "${CORPUS:=$STOKER_HOME/out/corpus}"
  : "${CHECKPOINT_DIR:=$STOKER_HOME/out/checkpoints}"
  : "${STEPS:=300}" "${SAVE_EVERY:=50}" "${WEIGHTS:=}"
  : "${SEQ_LEN:=128}" "${BATCH_SIZE:=16}" "${SEED:=0}"
  : "${TRACE_DIR:=}" "${TRAIN_ARGS:=}" "${RESULT_FILE:=}"
  : "${TRAINER_FILES=model.pt optimizer.pt trainer.json}"
  : "${LAUNCHER:=mpirun}" "${MPIRUN:=mpirun}" "${NP:=2}" "${REQUEUE:=1}"
  : "${WORLD_SIZE:=}" "${STEP:=}" "${NEW_CHECKPOINT_DIR:=}"
  CHECKPOINT_DIR=${CHECKPOINT_DIR%/}
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
  line=$("$STOKER" steps "$@" "${require[@]}") || return 1
  IFS=$'\t' read -r STEP_NUMBER STEP_WORLD STEP_PATH <<< "$line" || true
}

# stoker_train_command NP_ARGS...: the trainer's command line, in the array STOKER_CMD; the
# arguments are the launcher's (e.g. mpirun -np 4). Always --resume: the trainer starts at step
# 0 when there is no checkpoint yet, so a requeued or repeated job goes on where it was.
stoker_train_command() {
  STOKER_CMD=("$@" "$STOKER_TRAIN" --data "$CORPUS" --steps "$STEPS"
              --checkpoint-dir "$CHECKPOINT_DIR" --save-every "$SAVE_EVERY" --resume
              --seq-len "$SEQ_LEN" --batch-size "$BATCH_SIZE" --seed "$SEED")
  [ -z "$WEIGHTS" ] || STOKER_CMD+=(--weights "$WEIGHTS")
  [ -z "$TRACE_DIR" ] || STOKER_CMD+=(--trace "$TRACE_DIR")
  [ -z "$RESULT_FILE" ] || STOKER_CMD+=(--result "$RESULT_FILE")
  # shellcheck disable=SC2206  # TRAIN_ARGS is a list of flags, split on spaces on purpose
  [ -z "$TRAIN_ARGS" ] || STOKER_CMD+=($TRAIN_ARGS)
}

# A signal to the script (Slurm's warning USR1, scancel, Ctrl-C, kill) reaches the trainer as
# SIGUSR1 (the launcher forwards it to every rank): all ranks stop at the same next step, save
# it and exit 0. USR1, not TERM: mpirun answers SIGTERM by passing it on and killing the ranks
# about a second later, before they could save. A second INT or TERM means "now": the launcher
# gets SIGTERM.
_stoker_on_signal() {
  local signal=$1
  if [ -z "$STOKER_SIGNAL" ]; then
    STOKER_SIGNAL=$signal
    stoker_say "got SIG$signal: asking the trainer (launcher pid $_stoker_pid) to save and stop"
    kill -USR1 "$_stoker_pid" 2> /dev/null || true
  elif [ "$signal" != USR1 ]; then
    stoker_say "got SIG$signal again: stopping the launcher now, without a save"
    kill -TERM "$_stoker_pid" 2> /dev/null || true
  fi
}

# stoker_launch: runs STOKER_CMD, forwarding signals as above, and waits for it. Sets
# STOKER_RC (its exit code) and STOKER_SIGNAL (the first signal received, or empty).
stoker_launch() {
  STOKER_SIGNAL=""
  stoker_say "running: ${STOKER_CMD[*]}"
  # In a session of its own: a Ctrl-C in the terminal reaches this script only, which forwards
  # it as above, instead of also reaching mpirun (which would kill the ranks) and the ranks.
  setsid "${STOKER_CMD[@]}" &
  _stoker_pid=$!
  trap '_stoker_on_signal USR1' USR1
  trap '_stoker_on_signal TERM' TERM
  trap '_stoker_on_signal INT' INT
  # `wait` returns early whenever a trapped signal arrives; wait again until the launcher is
  # gone (a launcher that ended but was not waited for yet still answers kill -0).
  while true; do
    STOKER_RC=0
    wait "$_stoker_pid" || STOKER_RC=$?
    kill -0 "$_stoker_pid" 2> /dev/null || break
  done
  trap - USR1 TERM INT
  stoker_say "the trainer's launcher exited with code $STOKER_RC"
}

# stoker_check_inputs train|resume RANKS: the programs, the corpus and the checkpoint folder,
# checked before launching anything; says where the run starts. For resume, refuses (exit 2)
# when CHECKPOINT_DIR holds no step folder.
stoker_check_inputs() {
  local mode=$1 ranks=$2
  stoker_need_program STOKER_TRAIN "$STOKER_TRAIN"
  [ -d "$CORPUS" ] || stoker_fail "no corpus folder at CORPUS=$CORPUS (make one with" \
    "scripts/default-corpus.sh $CORPUS, or set CORPUS)"
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
    mpirun) launcher=($MPIRUN ${ranks:+-np "$ranks"}) ;;
    srun) launcher=(srun --export=ALL --mpi=pmix --kill-on-bad-exit=1) ;;
    *) stoker_fail "LAUNCHER must be mpirun or srun, not '$LAUNCHER'" ;;
  esac
  stoker_check_inputs "$mode" "${ranks:-?}"
  stoker_train_command "${launcher[@]}"
  stoker_launch
  if [ "$STOKER_SIGNAL" = USR1 ] && [ "$REQUEUE" = 1 ]; then
    _stoker_requeue
  fi
  exit "$STOKER_RC"
}

# After SIGUSR1: requeue unless the newest complete step has reached STEPS (the trainer saves
# the step it stops at, and the last one). A trainer that failed after the signal (e.g. it came
# before the ranks could catch it) is requeued too: the job is about to end, and the next run
# goes on from the newest complete step.
_stoker_requeue() {
  local from="step 0 (no complete checkpoint)"
  if ! _stoker_steps "$CHECKPOINT_DIR" --newest; then
    from="its newest complete step (stoker steps failed above)"
  elif [ -n "$STEP_PATH" ]; then
    if [ "$STEP_NUMBER" -ge "$STEPS" ]; then
      stoker_say "the trainer reached step $STEP_NUMBER of $STEPS: no requeue"
      return 0
    fi
    from=$STEP_PATH
  fi
  [ "$STOKER_RC" = 0 ] || stoker_say "the trainer did not stop cleanly after SIGUSR1" \
    "(exit $STOKER_RC); requeueing all the same"
  stoker_say "requeueing job $SLURM_JOB_ID: when it runs again it resumes from $from"
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
  stoker_check_inputs "$mode" "$NP"
  # shellcheck disable=SC2206  # MPIRUN is a command and its flags
  local launcher=($MPIRUN -np "$NP")
  stoker_train_command "${launcher[@]}"
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
