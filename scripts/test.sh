#!/usr/bin/env bash
# Set up, build, and run every test: unit tests, MPI tests at 1, 2 and 4 ranks, and the
# command-line tests. Extra arguments go to ctest (for example -R mpi.verify).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --slurm
scripts/build.sh
source scripts/env.sh
ctest --test-dir "${STOKER_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
