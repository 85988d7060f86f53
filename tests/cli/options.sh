#!/usr/bin/env bash
# Settings as users type them, refused before anything starts, each naming the option and the
# value as typed: negative values of unsigned options and values strtoull would read as octal
# or hexadecimal (stoker run, pack, synth, reshard); sizes above what a rank may hold (a batch of
# 2 billion tokens, verify --block of 16 GiB where RAM is below 32 GiB, 10^10 logical shards);
# EOS/BOS ids outside the corpus's vocabulary; --config files that are folders, binary or
# missing, --resume with --start-over from one, --start-over without --save-every; and keys of
# a --config file, --data among them, working as --help says; `stoker --help` one short line per
# subcommand. Representatives under mpirun -np 2 print their message once; the rest run alone.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work options
source "$(dirname "$0")/expect.sh"

good="$work/good"
"$STOKER" synth "$good" --dataset web:3000:50 --dataset code:2000:50 --files 2 > /dev/null 2>&1 ||
  fail "synth"
echo "a plain file" > "$work/plain-file"

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
    "the loader would hold .* per rank (7 batches of --batch-size 1 x (--seq-len 2000000000 + 1)" \
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

# `stoker --help` lists every subcommand on one short line; `stoker SUB --help` explains at length.
"$STOKER" --help > "$work/help.txt" 2>&1 || fail "stoker --help: $(cat "$work/help.txt")"
for sub in synth pack verify inspect run reshard audit; do
  line=$(grep -E "^  $sub " "$work/help.txt") || fail "stoker --help does not list $sub: $(cat "$work/help.txt")"
  [ "${#line}" -le 100 ] || fail "stoker --help: the line of $sub is ${#line} characters: $line"
  [ "$(grep -c -E "^  $sub " "$work/help.txt")" = 1 ] || fail "stoker --help lists $sub twice"
  "$STOKER" "$sub" --help > "$work/help-$sub.txt" 2>&1 || fail "stoker $sub --help failed"
  [ "$(wc -c < "$work/help-$sub.txt")" -gt $(( ${#line} + 200 )) ] ||
    fail "stoker $sub --help explains no more than the summary: $(cat "$work/help-$sub.txt")"
done
[ "$(wc -l < "$work/help.txt")" -le 25 ] || fail "stoker --help is $(wc -l < "$work/help.txt") lines"
echo "ok: stoker --help lists the 7 subcommands one short line each; SUB --help explains each"

echo "options: all checks passed"
