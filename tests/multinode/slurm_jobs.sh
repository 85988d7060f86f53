#!/usr/bin/env bash
# The Slurm job scripts on a real Slurm of 3 nodes (tests/multinode/testbed.sh: network-namespace
# nodes, each with its own slurmd; slurmctld on the first; tests/slurm/cluster.sh runs them):
# jobs/slurm/train.sbatch on 3 nodes x 2 tasks, its ranks launched by mpirun from the allocation,
# trains to its last step; jobs/slurm/resume.sbatch on 2 nodes x 2 tasks with LAUNCHER=srun
# (srun --mpi=pmix) goes on from it, a rescale; `stoker audit` of both runs is clean. Skipped (77)
# where the nodes or Slurm cannot be made.
# Environment: STOKER, STOKER_TRAIN, STOKER_SOURCE (the checkout).
set -euo pipefail
source "$(dirname "$0")/common.sh"
: "${STOKER:?STOKER must name the stoker program}" "${STOKER_TRAIN:?}" "${STOKER_SOURCE:?}"
multinode_start

# Slurm's daemons on the nodes; its clients on node 0, where slurmctld listens.
STOKER_SLURM_NODES=""
for i in "${!TESTBED_NODES[@]}"; do STOKER_SLURM_NODES+=" ${TESTBED_NODES[$i]}=${TESTBED_ADDRS[$i]}"; done
STOKER_SLURM_ON_NODE="$TESTBED_DIR/enter" STOKER_SLURM_CPUS=2 STOKER_SLURM_BASE="$TESTBED_DIR"
STOKER_SLURM_ON_EXIT=testbed_stop  # after the daemons
for client in sbatch squeue sinfo scontrol scancel; do
  eval "$client() { testbed_on 0 $client \"\$@\"; }"
done
source "$(dirname "$0")/../slurm/cluster.sh"
slurm_start

# The job's environment: the test suite's pinning of Open MPI to one node must not reach it.
unset OMPI_MCA_btl STOKER_HOME
export STOKER STOKER_TRAIN MPIRUN="mpirun --allow-run-as-root" CORPUS=$corpus SEQ_LEN=32
export BATCH_SIZE=2 SAVE_EVERY=5 TRACE_DIR=$work/trace CHECKPOINT_DIR=$work/ckpt
export TRAIN_ARGS="--dim 16 --layers 1 --heads 2"
# submit NAME TASKS NODES SCRIPT [VAR=VALUE...]: sbatch of jobs/slurm/SCRIPT; waits until it ends
# well, within 240 s; the run's result line is in $work/NAME.json.
submit() {
  local name=$1 tasks=$2 nodes=$3 script=$4 id state
  shift 4
  id=$(slurm_submit RESULT_FILE="$work/$name.json" "$@" -N "$nodes" -n "$tasks" \
       -o "$work/$name.out" "$STOKER_SOURCE/jobs/slurm/$script")
  state=$(slurm_wait_done "$id" 240) || { cat "$work/$name.out" >&2; fail "$name: still running"; }
  [ "$state" = COMPLETED ] ||
    { cat "$work/$name.out" >&2; fail "$name: $state, exit $(slurm_field "$id" ExitCode)"; }
  echo "$name: job $id on $(slurm_field "$id" NodeList)"
}
submit train 6 3 train.sbatch STEPS=10
submit resume 4 2 resume.sbatch STEPS=16 LAUNCHER=srun
python3 - "$work/train.json" "$work/resume.json" <<'PY' || fail "the runs: $(cat "$work"/*.json)"
import json, sys
first, then = (json.loads(open(f).read().strip().splitlines()[-1]) for f in sys.argv[1:])
assert (first["ranks"], first["end_step"]) == (6, 10), first
assert (then["ranks"], then["start_step"], then["end_step"]) == (4, 10, 16), then
PY
audit_clean "$work/trace" "6:0-10 4:10-16"
echo "PASS: train.sbatch on 3 nodes (mpirun from the allocation), resume.sbatch on 2 (srun)," \
  "the audit of both clean"
