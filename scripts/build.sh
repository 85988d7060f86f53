#!/usr/bin/env bash
# Configures and builds stoker into ./build (or $STOKER_BUILD_DIR). Extra arguments go to cmake.
# STOKER_BUILD_TARGETS (space-separated CMake targets, e.g. "stoker_cli stoker_train") builds
# only those; default: everything, tests and benchmarks included.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
build_dir=${STOKER_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
targets=()
for t in ${STOKER_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(stoker_cores)" "${targets[@]}"
