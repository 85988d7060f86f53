#!/usr/bin/env bash
# The Python package against `stoker run` in the same run, on one rank, on bench_loader's
# throughput corpus (made by `bench_loader --mode throughput` if missing; warmed into the page
# cache before every measurement): the two alternate REPEAT times (default 5); medians of
# tokens/s (a loop that only takes batches) and the ratio, and the Python side's seconds from
# process start to `import stoker`, to the loader, to the first batch. Figures, not a test.
#   benchmarks/python_bench.sh [REPEAT]      (from the source tree, after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
repeat=${1:-5}
corpus=/tmp/stoker-loader-bench/throughput-600000000
steps=3000  # 98 M tokens of batches of 8 x 4,097
[ -d "$corpus" ] || mpirun -np 1 build/benchmarks/bench_loader --mode throughput --repeat 1 > /dev/null
warm() { cat "$corpus"/*/*.h5 > /dev/null; }
median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
field() { python3 -c "import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }
cpp=() py=() imp=() first=()
for i in $(seq "$repeat"); do
  warm
  cpp+=("$(mpirun --bind-to none -np 1 build/stoker run --data "$corpus" --steps "$steps" 2>/dev/null | field tokens_per_second)")
  warm
  out=$(PYTHONPATH=build/python mpirun --bind-to none -np 1 /usr/bin/python3 benchmarks/python_loader.py \
          --data "$corpus" --steps "$steps")
  py+=("$(echo "$out" | field tokens_per_second)")
  imp+=("$(echo "$out" | field import_seconds)")
  first+=("$(echo "$out" | field first_batch_seconds)")
  echo "run $i: stoker run ${cpp[-1]}, python ${py[-1]} tokens/s; import ${imp[-1]} s, first batch ${first[-1]} s"
done
c=$(median "${cpp[@]}") p=$(median "${py[@]}")
python3 -c "print(f'medians of $repeat: stoker run {$c / 1e6:.1f} M tokens/s, python loop {$p / 1e6:.1f}, ratio {$p / $c:.3f}; import stoker {$(median "${imp[@]}"):.2f} s, first batch {$(median "${first[@]}"):.2f} s from process start')"
