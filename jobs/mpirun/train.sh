#!/usr/bin/env bash
# stoker: a data-parallel training run under plain mpirun, for a machine without Slurm. The same
# settings and defaults as jobs/slurm/train.sbatch (see jobs/README.md), from the environment:
#
#   NP=4 STEPS=300 CORPUS=out/corpus CHECKPOINT_DIR=out/checkpoints jobs/mpirun/train.sh
#
# NP ranks (default 2) run $STOKER_TRAIN with --resume: with no checkpoint in CHECKPOINT_DIR yet
# it starts at step 0, otherwise it goes on from the newest complete step folder (run it again
# after an interruption). It saves step-<N>/ every SAVE_EVERY steps. SIGUSR1, SIGTERM or Ctrl-C
# to this script make every rank stop at the same next step, save it and exit 0 (a second
# Ctrl-C or SIGTERM stops mpirun at once, without a save).
#
# mpirun's own flags come from MPIRUN (as root: MPIRUN="mpirun --allow-run-as-root"; more ranks
# than cores: --oversubscribe). Prints what it runs on stderr, the trainer's one JSON
# result line on stdout. Exit code: mpirun's; 2 when a setting is wrong.
set -uo pipefail
# A signal is caught from here on (jobs/common.sh says what it does once sourced).
STOKER_EARLY_SIGNALS=""
# shellcheck disable=SC2064  # $s is expanded now, on purpose
for s in USR1 TERM INT HUP; do trap "STOKER_EARLY_SIGNALS+=' $s'" "$s"; done
STOKER_HOME=${STOKER_HOME:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export STOKER_HOME
[ -f "$STOKER_HOME/jobs/common.sh" ] ||
  { echo "error: STOKER_HOME=$STOKER_HOME holds no jobs/common.sh: set STOKER_HOME" >&2; exit 2; }
source "$STOKER_HOME/jobs/common.sh"
stoker_mpirun_train train
