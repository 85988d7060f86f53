#!/usr/bin/env bash
# Errors as a user meets them: a missing corpus folder, a file given as the corpus, an empty
# corpus folder, a shard that is not HDF5, an unknown flag; entries of a corpus that are neither
# shards nor folders (a dangling link, a FIFO, a folder named like a shard, a loop, a shard
# reached twice). Each command, alone and under mpirun -np 2, must exit non-zero with one clear
# message, printed once (not once per rank), and never with HDF5's own error stack
# ("HDF5-DIAG"). Settings (numbers, --config) are options.sh's.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work errors

mkdir -p "$work/empty" "$work/not-hdf5/web"
echo "not an HDF5 file at all" > "$work/not-hdf5/web/part-00000.h5"
echo "a plain file" > "$work/plain-file"

source "$(dirname "$0")/expect.sh"

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

# --- No shard is skipped in silence: every entry is a shard, a folder, or a problem naming it. ---
good="$work/good"
"$STOKER" synth "$good" --dataset web:3000:50 --dataset code:2000:50 --files 2 > /dev/null 2>&1 ||
  fail "synth"
broken="$work/broken"
cp -r "$good" "$broken"
ln -s /nonexistent/project/books "$broken/books"         # a dataset on an unmounted file system
ln -s /nonexistent/project/web/x.h5 "$broken/web/x.h5"  # a shard there
mkfifo "$broken/web/fifo.h5"
mkdir "$broken/web/folder.h5"
mkdir "$broken/code/sub" && ln -s .. "$broken/code/sub/up"  # a file-system loop
ln -s ../part-00000.h5 "$broken/code/sub/again.h5"            # a shard reached twice
echo "notes" > "$broken/web/README"                           # ignored, as documented
PATTERNS=("books: a symbolic link to /nonexistent/project/books, which does not exist"
          "web/x.h5: a symbolic link to /nonexistent/project/web/x.h5, which does not exist"
          "web/fifo.h5: is a FIFO" "web/folder.h5: is named like a shard"
          "code/sub/up: leads back to a folder that contains it"
          "code/sub/again.h5: is the same file as code/part")
for sub in inspect verify; do
  expect_errors "$sub: dangling links, a FIFO, a folder named *.h5, a loop, a shard twice" \
      "$sub" "$broken"
done
"$STOKER" verify "$broken" > "$work/verify-broken.txt" 2>&1 && fail "verify of the broken corpus exited 0"
! grep -q README "$work/verify-broken.txt" || fail "verify named web/README: $(cat "$work/verify-broken.txt")"
grep -q "^FAILED: 6 problems" "$work/verify-broken.txt" ||
  fail "verify did not count the 6 problems: $(cat "$work/verify-broken.txt")"

echo "errors: all checks passed"
