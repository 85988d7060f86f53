#!/usr/bin/env bash
# stoker: rewrite a checkpoint for another number of ranks, offline, in one process (no mpirun):
# the flow of jobs/slurm/reshard.sbatch for a machine without Slurm. From the environment:
#
#   WORLD_SIZE=3 CHECKPOINT_DIR=out/checkpoints jobs/mpirun/reshard.sh
#   then: NP=3 CHECKPOINT_DIR=out/checkpoints-to-3 jobs/mpirun/resume.sh
#
# Takes step STEP of CHECKPOINT_DIR (default: the newest complete one, from `stoker steps`) and
# runs `stoker reshard` for WORLD_SIZE ranks: it writes the loader files, copies the trainer's
# files (everything beside loader/) unchanged and publishes NEW_CHECKPOINT_DIR/step-<N> (default
# "$CHECKPOINT_DIR-to-$WORLD_SIZE") in one rename; then `stoker inspect` of it. The original is
# only read. Exit code: 0 on success; stoker's when `stoker reshard` or `stoker inspect` fails;
# 2 when a setting is wrong, the step is missing or incomplete, or the output step folder exists
# already.
set -uo pipefail
STOKER_HOME=${STOKER_HOME:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export STOKER_HOME
[ -f "$STOKER_HOME/jobs/common.sh" ] ||
  { echo "error: STOKER_HOME=$STOKER_HOME holds no jobs/common.sh: set STOKER_HOME" >&2; exit 2; }
source "$STOKER_HOME/jobs/common.sh"
stoker_reshard
