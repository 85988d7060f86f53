#!/usr/bin/env bash
# `stoker import` against a plain copy of the same bytes, in the same run: for each format
# (Megatron .bin/.idx uint16, an OLMo token file uint32, MDS ndarray:uint32 plain and zstd), the
# input is warmed into the page cache, then copied (dd, 8 MiB blocks, fsync at the end, as the
# import syncs its shards) and imported at 1 and 2 ranks; REPEAT rounds (default 3) alternate
# the three. Prints MB/s of input each time, then medians and ratios to the copy. The import's
# own seconds (its log line: from the start of the import to the rename of the dataset) leave
# out the program's start-up. Figures, not a test.
#   benchmarks/import_bench.sh [REPEAT] [MEGABYTES]   (after scripts/build.sh; inputs of about
#   MEGABYTES each, 1000 by default, are made once in /tmp/stoker-import-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
repeat=${1:-3} megabytes=${2:-1000}
dir=/tmp/stoker-import-bench/in-$megabytes out=/tmp/stoker-import-bench/out
[ -f "$dir/done.json" ] || /usr/bin/python3 benchmarks/import_inputs.py "$dir" "$megabytes"
py() { /usr/bin/python3 -c "import statistics, sys; a = sys.argv[2:]; print($1)" "$@"; }
median() { py "round(statistics.median(float(x) for x in a), 1)" "$@"; }
now() { date +%s.%N; }
rate() { py "round(int(a[0]) / 1e6 / (float(a[2]) - float(a[1])), 1)" "$@"; }  # BYTES START END
ratio() { py "f'{float(a[0]) / float(a[1]):.2f}'" "$@"; }
# The import's own rate, from its log line "... (N MB/s over R ranks)".
import_rate() { sed -n 's/.*(\([0-9.]*\) MB\/s over.*/\1/p' | tail -1; }

declare -A files args
files[megatron]="$dir/megatron.bin $dir/megatron.idx" args[megatron]="megatron $dir/megatron --eos-id 0"
files[npy]="$dir/tokens.npy" args[npy]="npy $dir/tokens.npy --eos-id 0 --dtype uint32"
files[mds]="$dir/mds/shard.*" args[mds]="mds $dir/mds"
files[mds-zstd]="$dir/mds-zstd/shard.*" args[mds-zstd]="mds $dir/mds-zstd"
declare -A copy one two
for round in $(seq "$repeat"); do
  for format in megatron npy mds mds-zstd; do
    rm -rf "$out"; mkdir -p "$out"
    # shellcheck disable=SC2086  # the globs of files[] expand here
    set -- ${files[$format]}
    bytes=$(cat "$@" | wc -c)
    cat "$@" > /dev/null
    start=$(now)
    for f in "$@"; do dd if="$f" of="$out/$(basename "$f")" bs=8M conv=fsync status=none; done
    c=$(rate "$bytes" "$start" "$(now)")
    rm -rf "$out"; mkdir -p "$out"
    # shellcheck disable=SC2086
    a=$(mpirun --bind-to none -np 1 build/stoker import ${args[$format]} --out "$out/one" 2>&1 |
          import_rate)
    # shellcheck disable=SC2086
    b=$(mpirun --bind-to none -np 2 build/stoker import ${args[$format]} --out "$out/two" 2>&1 |
          import_rate)
    copy[$format]+=" $c" one[$format]+=" $a" two[$format]+=" $b"
    echo "round $round $format ($((bytes / 1000000)) MB): copy $c MB/s," \
      "import 1 rank $a, 2 ranks $b"
  done
done
echo
echo "format     copy MB/s  import 1 rank  (ratio)  import 2 ranks  (ratio)   medians of $repeat"
for format in megatron npy mds mds-zstd; do
  # shellcheck disable=SC2086
  c=$(median ${copy[$format]}) a=$(median ${one[$format]}) b=$(median ${two[$format]})
  printf "%-9s %10s %14s %8s %15s %8s\n" "$format" "$c" "$a" "$(ratio "$a" "$c")" "$b" \
    "$(ratio "$b" "$c")"
done
rm -rf "$out"
