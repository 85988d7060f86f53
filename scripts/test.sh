#!/usr/bin/env bash
# Set up, build, and run every test: unit tests, MPI tests at 1, 2 and 4 ranks, and the
# command-line tests; then the same tests under sanitizers in their own build folders
# (scripts/sanitize.sh: AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/,
# ThreadSanitizer on the threaded parts in build-tsan/; see the README, "Sanitizers").
# Extra arguments go to ctest (for example -R mpi.verify) and make it a filtered run, which skips
# the sanitizer stages; so does STOKER_SANITIZERS=0.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --slurm
scripts/build.sh
source scripts/env.sh
ctest --test-dir "${STOKER_BUILD_DIR:-build}" --output-on-failure -j "$(stoker_cores)" "$@"
if [ $# -eq 0 ] && [ "${STOKER_SANITIZERS:-1}" != 0 ]; then
  scripts/sanitize.sh address,undefined
  scripts/sanitize.sh thread
  # libFuzzer (clang): every parser stoker owns, 10 s each here (a smoke run within the CI's
  # 50 minutes; FUZZ_SECONDS=600 scripts/fuzz.sh for a real search), then the regressions.
  FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh
fi
