#!/usr/bin/env bash
# Builds stoker's libFuzzer targets (tests/fuzz: checkpoint, weights, jsonl, trace, config) with
# clang, ASan and UBSan in build-asan (the ASan stage's build folder, scripts/sanitize.sh),
# replays every input of tests/fuzz/regressions/<target>/ (crashes found before, now fixed), then
# fuzzes each target for a bounded time starting from tests/fuzz/corpus/<target>/, as many targets
# at once as there are cores. Fails on any crash, leak, sanitizer report or timeout and names the
# input that caused it.
#   scripts/fuzz.sh                         every target, FUZZ_SECONDS each
#   FUZZ_SECONDS=600 scripts/fuzz.sh trace  one target, longer
# Environment: FUZZ_SECONDS (default 20) per target; FUZZ_BUILD_DIR (default
# STOKER_ASAN_BUILD_DIR, or build-asan); FUZZ_JOBS (build jobs, default the cores). Inputs the
# fuzzer finds go to BUILD/fuzz-corpus/<target>/ (kept between runs, not in the repository); a
# crashing input goes to BUILD/fuzz-artifacts/<target>/: fix the parser, then copy the input to
# tests/fuzz/regressions/<target>/ (tests/unit/fuzz_regressions_test.cc replays it too).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(checkpoint weights jsonl trace config)
[ $# -gt 0 ] && targets=("$@")
build=${FUZZ_BUILD_DIR:-${STOKER_ASAN_BUILD_DIR:-build-asan}}
seconds=${FUZZ_SECONDS:-20}
for t in "${targets[@]}"; do
  if [ ! -f "tests/fuzz/${t}_fuzz.cc" ]; then
    echo "fuzz: no target '$t' (tests/fuzz/${t}_fuzz.cc)" >&2
    exit 2
  fi
done
start=$SECONDS
# The ASan stage's build (scripts/sanitizer_build.sh): clang, ASan + UBSan, the library compiled
# once for its tests and for these targets.
source scripts/env.sh
source scripts/sanitizer_build.sh
sanitizer_configure address,undefined "$build"
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "${t}_fuzz"); done
if ! cmake --build "$build" -j "${FUZZ_JOBS:-$(stoker_cores)}" "${build_targets[@]}" \
     > "$build/fuzz-build.log" 2>&1; then
  tail -50 "$build/fuzz-build.log" >&2
  echo "fuzz: building the fuzz targets failed" >&2
  exit 1
fi
echo "fuzz: built ${#targets[@]} targets in $((SECONDS - start)) s"

# The trace target writes files: tmpfs when there is one.
if [ -z "${TMPDIR:-}" ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
export UBSAN_OPTIONS=print_stacktrace=1
# fuzz_target T: replays T's regressions, then fuzzes T; its report goes to BUILD/fuzz-T.report.
fuzz_target() {
  local t=$1 binary="$build/tests/fuzz/$1_fuzz" artifacts="$build/fuzz-artifacts/$1"
  local log="$build/fuzz-$1.log" report="$build/fuzz-$1.report" regressions dict=()
  mkdir -p "$build/fuzz-corpus/$t" "$artifacts"
  shopt -s nullglob
  regressions=(tests/fuzz/regressions/"$t"/*)
  shopt -u nullglob
  if [ ${#regressions[@]} -gt 0 ] &&
     ! "$binary" -artifact_prefix="$artifacts/" "${regressions[@]}" > "$log" 2>&1; then
    { tail -40 "$log"
      echo "fuzz: $t: a regression input crashes again (log: $log)"; } > "$report"
    return 1
  fi
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  if "$binary" "$build/fuzz-corpus/$t" "tests/fuzz/corpus/$t" "${dict[@]}" \
       -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" > "$log" 2>&1; then
    local runs rate seeds found
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    seeds=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
    found=$(find "$build/fuzz-corpus/$t" -type f | wc -l)
    echo "fuzz: $t: ok, ${runs:-?} inputs in ${seconds} s (${rate:-?}/s); corpus: $seeds seeds," \
         "$found found here; ${#regressions[@]} regressions replayed" > "$report"
  else
    { tail -60 "$log"
      echo "fuzz: $t: CRASH; input: $(ls -t "$artifacts" | head -1 | sed "s|^|$artifacts/|")"
      echo "fuzz: fix the parser, then add the input to tests/fuzz/regressions/$t/ (log: $log)"
    } > "$report"
    return 1
  fi
}

# As many targets at once as there are cores (each fuzzer is one process); reports in order.
failed=0
pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(stoker_cores)" ]; do wait -n || true; done
  fuzz_target "$t" &
  pids+=($!)
done
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then cat "$build/fuzz-$t.report"; else
    cat "$build/fuzz-$t.report" >&2
    failed=1
  fi
done
echo "fuzz: done in $((SECONDS - start)) s"
exit "$failed"
