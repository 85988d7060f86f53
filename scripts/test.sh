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
# One test more than the cores: many tests wait on files, processes and MPI start-up rather than
# compute (the main ctest on 2 cores: 617 s at -j3 against 715 s at -j2, docs/benchmarks.md).
stoker_stage "test: ctest" ctest --test-dir "${STOKER_BUILD_DIR:-build}" --output-on-failure \
  -j "$(($(stoker_cores) + 1))" "${ctest_args[@]}" "$@"
if [ $# -eq 0 ] && [ ${#ctest_args[@]} -eq 0 ] && [ "${STOKER_SANITIZERS:-1}" != 0 ]; then
  stoker_stage "test: asan" scripts/sanitize.sh address,undefined
  stoker_stage "test: tsan" scripts/sanitize.sh thread
  # libFuzzer (clang): every parser stoker owns, 10 s each here (a smoke run; FUZZ_SECONDS=600
  # scripts/fuzz.sh for a real search), then the regressions.
  stoker_stage "test: fuzz" env FUZZ_SECONDS="${FUZZ_SECONDS:-10}" scripts/fuzz.sh
fi
