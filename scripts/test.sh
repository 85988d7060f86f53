#!/usr/bin/env bash
# Set up, build, and run every test: unit tests, MPI tests at 1, 2 and 4 ranks, and the
# command-line tests; then the same tests under sanitizers in their own build folders
# (scripts/sanitize.sh: AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/,
# ThreadSanitizer on the threaded parts in build-tsan/; see the README, "Sanitizers"), and a
# bounded fuzzing run.
#   scripts/test.sh                  everything (what CI runs)
#   scripts/test.sh --quick          builds what changed and runs the quick tier only (ctest -L
#                                    quick: unit tests, MPI tests at 2 ranks, one CLI chain, one
#                                    Python run; a few minutes), no sanitizers
#   scripts/test.sh [--quick] ARGS   ARGS go to ctest (for example -R mpi.verify) and make it a
#                                    filtered run, which skips the sanitizer stages; so does
#                                    STOKER_SANITIZERS=0
# Each stage prints what it took ("test: STAGE took N s").
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
ctest_args=()
if [ "${1:-}" = --quick ]; then
  ctest_args=(-L quick)
  shift
fi
stoker_stage "test: setup" scripts/setup.sh --slurm
stoker_stage "test: build" scripts/build.sh
full=false
if [ $# -eq 0 ] && [ ${#ctest_args[@]} -eq 0 ] && [ "${STOKER_SANITIZERS:-1}" != 0 ]; then
  full=true
fi
# The sanitizer and fuzzing builds compile beside the main ctest, at the lowest priority: the main
# ctest keeps the cores busy only about 60 % of its time (its tests wait on files, processes, MPI
# start-up, Slurm and the multi-node test bed), and a process at nice 19 takes only what the
# tests leave (a CPU-bound test beside it keeps about 98 % of its core). Their output goes to
# BUILD/sanitizer-builds.log, shown when they end.
builds_log=${STOKER_BUILD_DIR:-build}/sanitizer-builds.log
if "$full"; then
  setsid nice -n 19 bash -c 'source scripts/env.sh
    stoker_stage "test: sanitizer builds (beside the main ctest)" eval \
      "scripts/sanitize.sh --build-only address,undefined && scripts/fuzz.sh --build-only &&
       scripts/sanitize.sh --build-only thread"' > "$builds_log" 2>&1 &
  builds=$!
  # They run in a session of their own (no Ctrl-C reaches them): stopped when this script ends.
  trap 'kill -- "-$builds" 2> /dev/null || true' EXIT
  trap 'exit 130' INT
fi
# One test more than the cores: many tests wait on files, processes and MPI start-up rather than
# compute (the main ctest on 2 cores: 617 s at -j3 against 715 s at -j2, docs/benchmarks.md).
stoker_stage "test: ctest" ctest --test-dir "${STOKER_BUILD_DIR:-build}" --output-on-failure \
  -j "$(($(stoker_cores) + 1))" "${ctest_args[@]}" "$@"
if "$full"; then
  status=0
  stoker_stage "test: waiting for the sanitizer builds" wait "$builds" || status=$?
  trap - EXIT
  cat "$builds_log"
  [ "$status" -eq 0 ] || { echo "test: the sanitizer builds failed (log above)" >&2; exit 1; }
  stoker_stage "test: asan" scripts/sanitize.sh address,undefined
  stoker_stage "test: tsan" scripts/sanitize.sh thread
  # libFuzzer (clang): every parser stoker owns, 10 s each here (a smoke run; FUZZ_SECONDS=600
  # scripts/fuzz.sh for a real search), then the regressions.
  stoker_stage "test: fuzz" env FUZZ_SECONDS="${FUZZ_SECONDS:-10}" scripts/fuzz.sh
fi
