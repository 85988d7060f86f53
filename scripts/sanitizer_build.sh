# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: configures one sanitizer build folder.
#   sanitizer_configure address,undefined DIR   clang-14, ASan + LSan + UBSan, the tests and the
#                                               libFuzzer targets (-DSTOKER_FUZZ=ON): the ASan
#                                               stage and the fuzzing stage share one build of
#                                               the library (CI compiles it once, not twice)
#   sanitizer_configure thread DIR              gcc, ThreadSanitizer, the tests
# Both: no libtorch, no benchmarks. -O1 instead of -O2 halves the compile time of the
# instrumented build (measured: 16 s -> 8 s for one file) and keeps stack traces exact; -g1 (line
# tables, no variables) gives file:line in reports at 0.84 of the compile time of -g (10.9 s ->
# 9.1 s for shard/discovery.cc). Every target is a unity build (CMake's batches of 8 files), the
# library's too: these folders are built whole for a stage, not rebuilt after each edit. The
# configure log goes to DIR/sanitizer-configure.log.
sanitizer_configure() {
  local kind=$1 dir=$2 compilers=()
  if [ "$kind" = address,undefined ]; then
    if ! command -v clang++-14 > /dev/null; then
      echo "sanitizer build: clang++-14 not found;" \
           "run scripts/setup.sh (clang-14 libclang-rt-14-dev)" >&2
      return 1
    fi
    compilers=(-DCMAKE_C_COMPILER="$(command -v clang-14)"
               -DCMAKE_CXX_COMPILER="$(command -v clang++-14)" -DSTOKER_FUZZ=ON)
  fi
  mkdir -p "$dir"
  cmake -S . -B "$dir" "${compilers[@]}" -DSTOKER_SANITIZE="$kind" \
    -DSTOKER_BUILD_TORCH=OFF -DSTOKER_BUILD_PYTHON=OFF -DSTOKER_BUILD_BENCHMARKS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" > "$dir/sanitizer-configure.log" 2>&1 ||
    { cat "$dir/sanitizer-configure.log" >&2; echo "sanitizer build: configuring $dir failed" >&2
      return 1; }
}
