#!/usr/bin/env bash
# Errors as a user meets them: a missing corpus folder, a file given as the corpus, an empty
# corpus folder, a shard that is not HDF5, an unknown flag; entries of a corpus that are neither
# shards nor folders (a dangling link, a FIFO, a folder named like a shard, a loop, a shard
# reached twice); negative and oversized numbers; EOS/BOS outside the vocabulary; --config files
# that are folders, binary or missing. Each command, alone and under mpirun -np 2, must exit
# non-zero with one clear message, printed once (not once per rank), and never with HDF5's own
# error stack ("HDF5-DIAG").
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/empty" "$work/not-hdf5/web"
echo "not an HDF5 file at all" > "$work/not-hdf5/web/part-00000.h5"
echo "a plain file" > "$work/plain-file"

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

# --- Numbers are checked as numbers, named with the value as typed, before anything starts. ---
expect_error "run --steps -1" "\-\-steps: -1 is negative" run --data "$good" --steps -1
NPS=1 expect_error "run --seq-len -5" "\-\-seq-len: -5 is negative" run --data "$good" --seq-len=-5
NPS=1 expect_error "run --seed -3" "\-\-seed: -3 is negative" run --data "$good" --seed -3
NPS=1 expect_error "pack --shard-tokens -1K" "\-\-shard-tokens: -1K is negative" \
    pack "$work/plain-file" --out "$work/p/x" --shard-tokens -1K
NPS=1 expect_error "synth --files -2" "\-\-files: -2 is negative" synth "$work/s" --dataset a:10 --files -2
NPS=1 expect_error "run --steps 010" "\-\-steps: 010 is not a decimal number" run --data "$good" --steps 010
NPS=1 expect_error "run --seq-len 0x10" "\-\-seq-len: 0x10 is not a decimal number" \
    run --data "$good" --seq-len 0x10
NPS=1 expect_error "reshard --world-size -2" "\-\-world-size: -2 is negative" \
    reshard "$work/none" --world-size -2 --out "$work/out"
expect_error "a batch larger than a rank can hold" \
    "the loader would hold .* per rank (6 batches of --batch-size 1 x (--seq-len 2000000000 + 1)" \
    run --data "$good" --seq-len 2000000000 --batch-size 1
# A rank may use half the node's memory: 16 GiB of blocks is too much below 32 GiB of RAM.
if [ "$(awk '/^MemTotal/ {print int($2 / 1048576)}' /proc/meminfo)" -lt 32 ]; then
  expect_error "verify --block larger than a rank can hold" "\-\-block 1073741824 needs 16.0 GiB" \
      verify "$good" --block 1073741824
else
  echo "skipped: verify --block 1073741824 fits in this machine's memory"
fi
NPS=1 expect_error "too many logical shards" "\-\-logical-shards 10000000000 is above the maximum of" \
    run --data "$good" --logical-shards 10000000000
expect_error "--eos-id outside the vocabulary" \
    "\-\-eos-id 50304 is outside the vocabulary of code/part-00000.h5: vocab_size 50304" \
    run --data "$good" --eos-id 50304
NPS=1 expect_error "--bos-id outside the vocabulary" "\-\-bos-id 60000 is outside the vocabulary" \
    run --data "$good" --bos-id 60000

# --- --config: a folder, a binary file, a missing one; keys as --help says, --data included. ---
head -c 200 "$STOKER" > "$work/binary.toml"
expect_error "--config of a folder" "\-\-config $work: is a folder" run --data "$good" --config "$work"
NPS=1 expect_error "--config of a binary file" "binary.toml: is not a text file (a NUL byte at offset" \
    run --data "$good" --config "$work/binary.toml"
NPS=1 expect_error "--config of a missing file" "missing.toml: no such file" \
    run --data "$good" --config "$work/missing.toml"
expect_error "run without --data" "\-\-data is required" run --steps 1
printf 'resume = true\nstart-over = true\n' > "$work/both.toml"
NPS=1 expect_error "--resume and --start-over in --config" "\-\-resume and \-\-start-over exclude each other" \
    run --data "$good" --checkpoint-dir "$work/ck" --save-every 1 --config "$work/both.toml"
NPS=1 expect_error "--start-over without --save-every" "\-\-start-over needs \-\-checkpoint-dir and \-\-save-every" \
    run --data "$good" --checkpoint-dir "$work/ck" --start-over
printf 'data = "%s"\nsteps = 2\nseq-len = 16\n' "$good" > "$work/run.toml"
"$STOKER" run --config "$work/run.toml" > "$work/config-run.txt" 2>&1 ||
  fail "data = ... in --config: $(cat "$work/config-run.txt")"
grep -q '"steps":2' "$work/config-run.txt" || fail "--config did not set steps"
echo "ok: --config with data, steps and seq-len keys"

echo "errors: all checks passed"
