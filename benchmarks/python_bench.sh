#!/usr/bin/env bash
# The Python package against `stoker run` in the same run, on one rank, on bench_loader's
# throughput corpus (made by `bench_loader --mode throughput` if missing; warmed into the page
# cache before every measurement): `stoker run`, the Python loop taking torch tensors and the loop
# taking numpy arrays alternate REPEAT times (default 5); medians of tokens/s (a loop that only
# takes batches) and the ratios, and the Python side's seconds from process start to `import
# stoker` and to the first batch (torch imported on the way, for tensors). Figures, not a test.
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
python_loop() {  # TENSORS: the loop's JSON line
  PYTHONPATH=build/python mpirun --bind-to none -np 1 /usr/bin/python3 benchmarks/python_loader.py \
    --data "$corpus" --steps "$steps" --tensors "$1"
}
cpp=() py=() np=() imp=() first=() first_np=()
for i in $(seq "$repeat"); do
  warm
  cpp+=("$(mpirun --bind-to none -np 1 build/stoker run --data "$corpus" --steps "$steps" 2>/dev/null | field tokens_per_second)")
  warm
  out=$(python_loop torch)
  py+=("$(echo "$out" | field tokens_per_second)")
  imp+=("$(echo "$out" | field import_seconds)")
  first+=("$(echo "$out" | field first_batch_seconds)")
  warm
  out=$(python_loop numpy)
  np+=("$(echo "$out" | field tokens_per_second)")
  first_np+=("$(echo "$out" | field first_batch_seconds)")
  echo "run $i: stoker run ${cpp[-1]}, python torch ${py[-1]}, numpy ${np[-1]} tokens/s; import ${imp[-1]} s, first batch ${first[-1]} s (numpy ${first_np[-1]} s)"
done
c=$(median "${cpp[@]}") p=$(median "${py[@]}") n=$(median "${np[@]}")
python3 -c "print(f'medians of $repeat: stoker run {$c / 1e6:.1f} M tokens/s, python loop torch {$p / 1e6:.1f} (ratio {$p / $c:.3f}), numpy {$n / 1e6:.1f} (ratio {$n / $c:.3f}); import stoker {$(median "${imp[@]}"):.2f} s, first batch {$(median "${first[@]}"):.2f} s (numpy {$(median "${first_np[@]}"):.2f} s) from process start')"
