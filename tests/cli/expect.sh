# Sourced by tests/cli/errors.sh and options.sh (after tests/common/test_lib.sh): how a refusal
# is checked. Needs STOKER, MPIRUN and a folder $work.

# expect_errors NAME ARGS...: runs stoker with ARGS alone and at 2 ranks (NPS="1" for alone
# only); each must exit non-zero, print every pattern of the array PATTERNS exactly once, speak
# only from rank 0, and print no HDF5 stack.
expect_errors() {
  local name=$1; shift
  local np rc out count pattern
  for np in ${NPS:-1 2}; do
    out="$work/out.txt"
    rc=0
    if [ "$np" = 1 ]; then
      "$STOKER" "$@" > "$out" 2>&1 || rc=$?
    else
      $MPIRUN -np "$np" "$STOKER" "$@" > "$out" 2>&1 || rc=$?
    fi
    [ "$rc" != 0 ] || fail "$name (np $np): exited 0"
    for pattern in "${PATTERNS[@]}"; do
      count=$(grep -o -- "$pattern" "$out" | wc -l || true)
      [ "$count" = 1 ] || fail "$name (np $np): '$pattern' printed $count times, not once:
$(cat "$out")"
      echo "ok: $name (np $np): $(grep -m1 -- "$pattern" "$out")"
    done
    ! grep -q "HDF5-DIAG" "$out" || fail "$name (np $np): HDF5 printed its error stack:
$(cat "$out")"
    ! grep -q "\[rank 1\]" "$out" || fail "$name (np $np): rank 1 printed too:
$(cat "$out")"
  done
}

# expect_error NAME PATTERN ARGS...: expect_errors with the one pattern PATTERN.
expect_error() {
  local name=$1 PATTERNS=("$2"); shift 2
  expect_errors "$name" "$@"
}

