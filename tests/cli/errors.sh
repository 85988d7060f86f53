#!/usr/bin/env bash
# Errors as a user meets them: a missing corpus folder, a file given as the corpus, an empty
# corpus folder, a shard that is not HDF5, an unknown flag. `stoker inspect` and `stoker verify`,
# alone and under mpirun -np 2, must exit non-zero with one clear message, printed once (not once
# per rank), and never with HDF5's own error stack ("HDF5-DIAG").
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/empty" "$work/not-hdf5/web"
echo "not an HDF5 file at all" > "$work/not-hdf5/web/part-00000.h5"
echo "a plain file" > "$work/plain-file"

# expect_error NAME PATTERN ARGS...: runs stoker with ARGS alone and at 2 ranks; each must exit
# non-zero, print PATTERN exactly once, speak only from rank 0, and print no HDF5 stack.
expect_error() {
  local name=$1 pattern=$2; shift 2
  local np rc out count
  for np in 1 2; do
    out="$work/out.txt"
    rc=0
    if [ "$np" = 1 ]; then
      "$STOKER" "$@" > "$out" 2>&1 || rc=$?
    else
      $MPIRUN -np 2 "$STOKER" "$@" > "$out" 2>&1 || rc=$?
    fi
    [ "$rc" != 0 ] || fail "$name (np $np): exited 0"
    count=$(grep -o -- "$pattern" "$out" | wc -l)
    [ "$count" = 1 ] || fail "$name (np $np): '$pattern' printed $count times, not once:
$(cat "$out")"
    ! grep -q "HDF5-DIAG" "$out" || fail "$name (np $np): HDF5 printed its error stack:
$(cat "$out")"
    ! grep -q "\[rank 1\]" "$out" || fail "$name (np $np): rank 1 printed too:
$(cat "$out")"
    echo "ok: $name (np $np): $(grep -m1 -- "$pattern" "$out")"
  done
}

for sub in inspect verify; do
  expect_error "$sub of a missing folder" "corpus folder .*/missing does not exist" \
      "$sub" "$work/missing"
  expect_error "$sub of a plain file" "is not a folder" "$sub" "$work/plain-file"
  expect_error "$sub of an empty folder" "the corpus has no datasets" "$sub" "$work/empty"
  expect_error "$sub of a shard that is not HDF5" "web/part-00000.h5: not an HDF5 file" \
      "$sub" "$work/not-hdf5"
  expect_error "$sub with an unknown flag" "argument was not expected: --frobnicate" \
      "$sub" --frobnicate "$work/empty"
done
expect_error "verify without a corpus" "corpus is required" verify

echo "errors: all checks passed"
