#!/usr/bin/env bash
# stoker: go on with a training run from its newest complete checkpoint, on NP ranks under plain
# mpirun -- any number, not necessarily the one that saved it. The settings and defaults of
# jobs/mpirun/train.sh (see jobs/README.md), from the environment:
#
#   NP=3 STEPS=600 CHECKPOINT_DIR=out/checkpoints jobs/mpirun/resume.sh
#
# Refuses (exit 2, before starting mpirun) when CHECKPOINT_DIR holds no complete step folder
# (loader/rank-R-of-W.ckpt for every rank R < W, model.pt, optimizer.pt, trainer.json). On
# another rank count the loader rescales its saved state at start-up, with no token lost or
# repeated; the log says "resumed from DIR/step-N (saved on W ranks, now W')". STEPS is the
# global step to reach: raise it to go further. Signals and output as in train.sh.
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
stoker_mpirun_train resume
