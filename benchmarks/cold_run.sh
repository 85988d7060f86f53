#!/usr/bin/env bash
# cold_run.sh: `stoker run` on 1 rank with the page cache dropped before every run, beside the
# same run warm: what the loader delivers from storage that does not hold the corpus in memory.
# Needs root (it writes /proc/sys/vm/drop_caches). Prints one line per run and the medians.
#
#   benchmarks/cold_run.sh CORPUS [STEPS] [REPEAT]     (STOKER: the program, default build/stoker)
#
# The corpus must be far larger than what a run reads (seq_len 4096, batch 8: 32,776 tokens a
# step), or the kernel's read-ahead makes the run warm within a second: e.g.
#   build/stoker synth /tmp/cold --dataset web:300000000:1000 --dataset code:200000000:1000 \
#     --files 24         # 1 GB of uint16 tokens; 300 steps read 20 MB of it
set -euo pipefail
corpus=${1:?usage: cold_run.sh CORPUS [STEPS] [REPEAT]}
steps=${2:-300} repeat=${3:-5} stoker=${STOKER:-build/stoker}
[ -w /proc/sys/vm/drop_caches ] || { echo "cold_run.sh: needs root (drop_caches)" >&2; exit 2; }

# One run; prints M tokens/s.
run_once() {
  "$stoker" -q run --data "$corpus" --steps "$steps" --seq-len 4096 --batch-size 8 |
    python3 -c 'import json, sys
print("%.2f" % (json.loads(next(l for l in sys.stdin if l.startswith("{")))["tokens_per_second"] / 1e6))'
}
median() {
  sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
cold=() warm=()
for ((i = 1; i <= repeat; ++i)); do
  sync
  echo 3 > /proc/sys/vm/drop_caches
  cold+=("$(run_once)")
  warm+=("$(run_once)")  # the same run again: its documents are in the page cache now
  echo "run $i: cold ${cold[-1]} M tokens/s, warm ${warm[-1]} M tokens/s"
done
c=$(printf '%s\n' "${cold[@]}" | median) w=$(printf '%s\n' "${warm[@]}" | median)
echo "median over $repeat runs of $steps steps: cold $c M tokens/s, warm $w M tokens/s," \
  "cold / warm $(awk -v c="$c" -v w="$w" 'BEGIN { printf "%.3f", c / w }')"
