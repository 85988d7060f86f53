# shellcheck shell=bash
# Shared by the job scripts in jobs/slurm/ and jobs/mpirun/ (sourced, bash): the settings with
# their defaults (one place for all six scripts), finding the newest complete checkpoint, and
# launching the trainer so that a signal makes it save and stop instead of dying.
#
# Settings: environment variables; a value set before the script runs wins over the default.
#   STOKER_HOME      the stoker checkout (default: the folder holding jobs/)
#   STOKER_TRAIN     the trainer program (default $STOKER_HOME/build/stoker-train)
#   STOKER           the stoker program, for reshard and inspect ($STOKER_HOME/build/stoker)
#   CORPUS           the corpus folder, --data ($STOKER_HOME/out/corpus)
#   CHECKPOINT_DIR   where step-<N>/ folders go; on storage every node sees
#                    ($STOKER_HOME/out/checkpoints)
#   STEPS            train until this global step (300)
#   SAVE_EVERY       save a step folder every this many steps (50)
#   WEIGHTS          mixing weights NAME=W,... (empty: proportional to each dataset's tokens)
#   SEQ_LEN, BATCH_SIZE, SEED   --seq-len (128), --batch-size per rank (16), --seed (0)
#   TRACE_DIR        if set, --trace DIR: piece traces for `stoker audit DIR` (empty: none)
#   TRAIN_ARGS       more stoker-train flags, split on spaces (e.g. "--dim 64 --layers 1")
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
  : "${TRACE_DIR:=}" "${TRAIN_ARGS:=}"
  : "${LAUNCHER:=mpirun}" "${MPIRUN:=mpirun}" "${NP:=2}" "${REQUEUE:=1}"
  : "${WORLD_SIZE:=}" "${STEP:=}" "${NEW_CHECKPOINT_DIR:=}"
  CHECKPOINT_DIR=${CHECKPOINT_DIR%/}
}

# Messages go to stderr, so stdout holds only the trainer's JSON line.
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

# stoker_step_problem STEP_DIR: prints why a trainer step folder is not complete; prints
# nothing (and returns 0) when it is: loader/ holds rank-R-of-W.ckpt for every rank of one
# world size W, and the trainer's model.pt, optimizer.pt and trainer.json are beside it.
stoker_step_problem() {
  local dir=$1 files=() worlds f w
  for f in model.pt optimizer.pt trainer.json; do
    [ -s "$dir/$f" ] || { echo "no $f"; return 1; }
  done
  shopt -s nullglob
  files=("$dir"/loader/rank-*-of-*.ckpt)
  shopt -u nullglob
  [ ${#files[@]} -gt 0 ] || { echo "no loader/rank-*-of-*.ckpt"; return 1; }
  worlds=$(printf '%s\n' "${files[@]}" | sed 's/.*-of-0*\([0-9][0-9]*\)\.ckpt$/\1/' | sort -u)
  [ "$(echo "$worlds" | wc -l)" = 1 ] ||
    { echo "loader/ mixes world sizes ${worlds//$'\n'/ }"; return 1; }
  w=$worlds
  [ "${#files[@]}" = "$w" ] || { echo "loader/ holds ${#files[@]} of $w rank files"; return 1; }
}

# stoker_step_world STEP_DIR: the world size a complete step folder was saved by.
stoker_step_world() {
  local f
  for f in "$1"/loader/rank-*-of-*.ckpt; do
    echo "$f" | sed 's/.*-of-0*\([0-9][0-9]*\)\.ckpt$/\1/'
    return
  done
}

# stoker_newest_step DIR: prints the newest complete step-<N> folder under DIR; says on stderr
# which newer ones it passed over, and why. Returns 1 when there is none.
stoker_newest_step() {
  local dir=$1 n problem
  [ -d "$dir" ] || return 1
  for n in $(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'step-*' -printf '%f\n' |
             sed -n 's/^step-\([0-9][0-9]*\)$/\1/p' | sort -rn); do
    if problem=$(stoker_step_problem "$dir/step-$n"); then
      echo "$dir/step-$n"
      return 0
    fi
    stoker_say "passing over $dir/step-$n: not complete ($problem)"
  done
  return 1
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
# STOKER_RC (its exit code), STOKER_SIGNAL (the first signal received, or empty) and
# STOKER_RESULT (the trainer's JSON line, also printed on stdout).
stoker_launch() {
  local out
  out=$(mktemp "${TMPDIR:-/tmp}/stoker-train-result.XXXXXX")
  STOKER_SIGNAL=""
  stoker_say "running: ${STOKER_CMD[*]}"
  # In a session of its own: a Ctrl-C in the terminal reaches this script only, which forwards
  # it as above, instead of also reaching mpirun (which would kill the ranks) and the ranks.
  setsid "${STOKER_CMD[@]}" > "$out" &
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
  STOKER_RESULT=$(grep -m 1 '^{' "$out" || true)
  cat "$out"
  rm -f "$out"
  stoker_say "the trainer's launcher exited with code $STOKER_RC"
}

# stoker_result_field NAME: a field of the trainer's JSON line (numbers, true/false, null, or a
# string without quotes).
stoker_result_field() {
  echo "$STOKER_RESULT" | sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

# stoker_check_inputs train|resume RANKS: the program, the corpus and the checkpoint folder,
# checked before launching anything; says where the run starts. For resume, refuses (exit 2)
# when CHECKPOINT_DIR holds no complete step folder.
stoker_check_inputs() {
  local mode=$1 ranks=$2 newest saved
  stoker_need_program STOKER_TRAIN "$STOKER_TRAIN"
  [ -d "$CORPUS" ] || stoker_fail "no corpus folder at CORPUS=$CORPUS (make one with" \
    "scripts/default-corpus.sh $CORPUS, or set CORPUS)"
  if ! newest=$(stoker_newest_step "$CHECKPOINT_DIR"); then
    [ "$mode" != resume ] || stoker_fail "nothing to resume: no complete step-<N> folder in" \
      "CHECKPOINT_DIR=$CHECKPOINT_DIR (a complete one holds loader/rank-R-of-W.ckpt for every" \
      "rank R < W, model.pt, optimizer.pt and trainer.json). Start with train instead, or set" \
      "CHECKPOINT_DIR"
    mkdir -p "$CHECKPOINT_DIR" || stoker_fail "cannot create CHECKPOINT_DIR=$CHECKPOINT_DIR"
    stoker_say "no complete checkpoint in $CHECKPOINT_DIR yet: the trainer starts at step 0"
    return
  fi
  saved=$(stoker_step_world "$newest")
  stoker_say "newest complete checkpoint: $newest, saved on $saved ranks, now $ranks:" \
    "the trainer resumes from it$([ "$saved" = "$ranks" ] || echo " and the loader rescales" \
    "its state (no token lost or repeated)")"
}

# stoker_summary: one line from the trainer's JSON.
stoker_summary() {
  [ -n "$STOKER_RESULT" ] || { stoker_say "the trainer printed no result line"; return; }
  stoker_say "trainer: $(stoker_result_field ranks) ranks, steps" \
    "$(stoker_result_field start_step) -> $(stoker_result_field end_step)" \
    "(stopped early: $(stoker_result_field stopped_early)), loss" \
    "$(_stoker_number loss_start %.3f) -> $(_stoker_number loss_end %.3f)," \
    "$(_stoker_number tokens_per_second %.0f) tokens/s"
}

_stoker_number() {
  local value
  value=$(stoker_result_field "$1")
  printf "$2" "$value" 2> /dev/null || printf '%s' "$value"
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
  stoker_summary
  if [ "$STOKER_SIGNAL" = USR1 ] && [ "$REQUEUE" = 1 ]; then
    _stoker_requeue
  fi
  exit "$STOKER_RC"
}

# After SIGUSR1: requeue unless the trainer had reached STEPS anyway. A trainer that failed
# after the signal (e.g. it came before the ranks could catch it) is requeued too: the job is
# about to end, and the next run goes on from the newest complete step.
_stoker_requeue() {
  local from
  if [ "$STOKER_RC" = 0 ]; then
    [ "$(stoker_result_field stopped_early)" = true ] || return 0
    from=$CHECKPOINT_DIR/step-$(stoker_result_field end_step)
  else
    from=$(stoker_newest_step "$CHECKPOINT_DIR") || from="step 0 (no complete checkpoint)"
    stoker_say "the trainer did not stop cleanly after SIGUSR1 (exit $STOKER_RC); requeueing" \
      "all the same"
  fi
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
  stoker_summary
  exit "$STOKER_RC"
}

# stoker_reshard: the body of jobs/slurm/reshard.sbatch and jobs/mpirun/reshard.sh. Rewrites the
# loader part of step STEP (default: the newest complete one) of CHECKPOINT_DIR for WORLD_SIZE
# ranks, copies the trainer's files beside it, and publishes it as NEW_CHECKPOINT_DIR/step-<N>
# in one rename (a job killed midway leaves no half step folder); then `stoker inspect` of it.
stoker_reshard() {
  stoker_settings
  stoker_need_program STOKER "$STOKER"
  [[ "$WORLD_SIZE" =~ ^[1-9][0-9]*$ ]] ||
    stoker_fail "set WORLD_SIZE to the number of ranks the job will resume on (now '$WORLD_SIZE')"
  : "${NEW_CHECKPOINT_DIR:=$CHECKPOINT_DIR-to-$WORLD_SIZE}"
  local source problem n out staging
  if [ -n "$STEP" ]; then
    source=$CHECKPOINT_DIR/step-$STEP
    [ -d "$source" ] || stoker_fail "no step folder $source (STEP=$STEP)"
    problem=$(stoker_step_problem "$source") ||
      stoker_fail "$source is not a complete trainer checkpoint: $problem"
  else
    source=$(stoker_newest_step "$CHECKPOINT_DIR") ||
      stoker_fail "no complete step-<N> folder in CHECKPOINT_DIR=$CHECKPOINT_DIR to reshard"
  fi
  n=${source##*/step-}
  out=$NEW_CHECKPOINT_DIR/step-$n
  [ ! -e "$out" ] || stoker_fail "$out exists already: reshard never overwrites a checkpoint;" \
    "remove it or set NEW_CHECKPOINT_DIR"
  stoker_say "resharding $source (saved on $(stoker_step_world "$source") ranks) for" \
    "$WORLD_SIZE ranks into $out"
  mkdir -p "$NEW_CHECKPOINT_DIR" || stoker_fail "cannot create $NEW_CHECKPOINT_DIR"
  staging=$(mktemp -d "$NEW_CHECKPOINT_DIR/.reshard-step-$n.XXXXXX")
  stoker_say "running: $STOKER reshard $source --world-size $WORLD_SIZE --out $staging/step-$n"
  local rc=0
  "$STOKER" reshard "$source" --world-size "$WORLD_SIZE" --out "$staging/step-$n" || rc=$?
  if [ "$rc" != 0 ]; then
    rm -rf "$staging"
    stoker_say "error: stoker reshard failed (exit $rc)"
    exit "$rc"
  fi
  # The trainer's own files (model.pt, optimizer.pt, trainer.json, ...): everything but loader/.
  local entry
  for entry in "$source"/* "$source"/.[!.]*; do
    [ -e "$entry" ] && [ "${entry##*/}" != loader ] || continue
    cp -a "$entry" "$staging/step-$n/" ||
      { rm -rf "$staging"; stoker_fail "copying $entry into the new step folder failed"; }
  done
  problem=$(stoker_step_problem "$staging/step-$n") ||
    { rm -rf "$staging"; stoker_fail "the resharded step folder is not complete: $problem"; }
  mv -T "$staging/step-$n" "$out" || stoker_fail "could not move $staging/step-$n to $out"
  rmdir "$staging"
  stoker_say "wrote $out; resume from it with CHECKPOINT_DIR=$NEW_CHECKPOINT_DIR on" \
    "$WORLD_SIZE ranks"
  local inspect=("$STOKER" inspect "$out")
  [ ! -d "$CORPUS" ] || inspect+=(--data "$CORPUS")
  stoker_say "running: ${inspect[*]}"
  "${inspect[@]}" || rc=$?
  [ "$rc" = 0 ] || { stoker_say "error: stoker inspect of $out failed (exit $rc)"; exit "$rc"; }
}
