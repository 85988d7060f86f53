#!/usr/bin/env bash
# Parallel layouts: what a replica gets from `stoker run --layout tp=T` (T = 1, 2, 4) on 4 ranks,
# its batches broadcast from the replica's first rank against read by every member, in the same
# run, alternating REPEAT times (default 3) on a corpus warmed into the page cache: medians of
# tokens/s per replica (a loop that only takes batches), the ratio of broadcast to read at each
# tp, and the largest resident memory of a rank. At tp 1 the 4 ranks are 4 replicas sharing the
# machine's cores, at tp 4 one: compare the feeds at one tp, not the tps. Figures, not a test.
#   benchmarks/layout_bench.sh [REPEAT]      (from the source tree, after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
repeat=${1:-3}
corpus=/tmp/stoker-layout-bench/corpus
steps=3000 seq=4095 batch=8  # 98 M tokens of batches per replica
[ -d "$corpus" ] || build/stoker synth "$corpus" --dataset web:200000000:900 --files 8 --seed 1 \
  > /dev/null
warm() { cat "$corpus"/*/*.h5 > /dev/null; }
median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
field() { python3 -c "import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }
# run TP FEED: "tokens/s per replica, largest RSS of a rank in MiB"
run() {
  local rss="$(mktemp -d)"
  local out
  out=$(mpirun --bind-to none -np 4 bash -c '/usr/bin/time -f %M -o "$0/$OMPI_COMM_WORLD_RANK" "$@"' \
          "$rss" build/stoker run --data "$corpus" --steps "$steps" --seq-len "$seq" \
          --batch-size "$batch" --layout "tp=$1" --replica-feed "$2" 2>/dev/null)
  echo "$(echo "$out" | field tokens_per_second_per_replica) $(($(sort -n "$rss"/* | tail -1) / 1024))"
  rm -rf "$rss"
}
declare -A speed memory
for i in $(seq "$repeat"); do
  for tp in 1 2 4; do
    for feed in broadcast read; do
      [ "$tp" = 1 ] && [ "$feed" = read ] && continue  # the same job: no replica to feed
      warm
      read -r s m < <(run "$tp" "$feed")
      speed[$tp-$feed]+=" $s" memory[$tp-$feed]+=" $m"
      echo "run $i: tp=$tp $feed: $s tokens/s per replica, $m MiB largest rank"
    done
  done
done
for key in 1-broadcast 2-broadcast 2-read 4-broadcast 4-read; do
  s=$(median ${speed[$key]}) m=$(median ${memory[$key]})
  tp=${key%-*} feed=${key#*-}
  ratio=""
  [ "$feed" = broadcast ] && [ "$tp" != 1 ] &&
    ratio=$(python3 -c "print(f', {$s / $(median ${speed[$tp-read]}):.2f} of read')")
  python3 -c "print(f'tp=$tp $feed: {$s / 1e6:.1f} M tokens/s per replica$ratio, largest rank {$m:.0f} MiB')"
done
