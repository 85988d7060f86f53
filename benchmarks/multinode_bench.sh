#!/usr/bin/env bash
# Jobs across nodes: `stoker run` with 4 ranks on 1, 2 and 4 nodes of the test bed
# (tests/multinode/testbed.sh: network namespaces on one machine, Open MPI over TCP between
# them, shared memory within a node), in the same run, alternating REPEAT times (default 3) on a
# corpus warmed into the page cache: medians of start-up (the result's startup_seconds: the
# session and the loader built, corpus discovery and the ranks' agreement included) and of
# tokens/s over the job, and their ratios to 1
# node. The nodes share one kernel, page cache and disk: this measures what crossing nodes costs
# stoker's collectives and start-up, not a network between machines. Figures, not a test.
#   benchmarks/multinode_bench.sh [REPEAT]   (as root, from the source tree, after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source tests/multinode/testbed.sh
repeat=${1:-3}
# Outside /tmp, which each node of the test bed has of its own.
corpus=/var/tmp/stoker-multinode-bench/corpus
steps=4000 seq=4095 batch=8  # 131 M tokens of batches per rank
[ -d "$corpus" ] || build/stoker synth "$corpus" --dataset web:200000000:900 --files 8 --seed 1 \
  > /dev/null
export TESTBED_SHARED=$PWD  # the checkout, should it be under /tmp
testbed_start 4 4
hosts() {  # NODES: 4 ranks spread over NODES nodes, as mpirun's --host
  local n=$1 i list=""
  for ((i = 0; i < n; i++)); do list+="${list:+,}${TESTBED_ADDRS[$i]}:$((4 / n))"; done
  echo "$list"
}
median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
field() { python3 -c "import json, sys; r = json.loads(sys.stdin.read().strip().splitlines()[-1]); print(r['startup_seconds'], r['tokens_per_second'])"; }
declare -A startup speed
for i in $(seq "$repeat"); do
  for nodes in 1 2 4; do
    cat "$corpus"/*/*.h5 > /dev/null
    read -r up s < <("$TESTBED_MPIRUN" -np 4 --host "$(hosts "$nodes")" --bind-to none \
                       --mca mpi_yield_when_idle 1 \
                       "$PWD/build/stoker" run --data "$corpus" --steps "$steps" --seq-len "$seq" \
                       --batch-size "$batch" 2> /dev/null | field)
    startup[$nodes]+=" $up" speed[$nodes]+=" $s"
    echo "run $i: $nodes node(s): start-up $up s, $s tokens/s"
  done
done
up1=$(median ${startup[1]}) s1=$(median ${speed[1]})
for nodes in 1 2 4; do
  up=$(median ${startup[$nodes]}) s=$(median ${speed[$nodes]})
  python3 -c "print(f'$nodes node(s) x $((4 / nodes)) ranks: start-up {$up * 1e3:.0f} ms ({$up / $up1:.2f} of 1 node), {$s / 1e6:.1f} M tokens/s ({$s / $s1:.2f} of 1 node)')"
done
