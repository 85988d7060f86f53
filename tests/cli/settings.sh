#!/usr/bin/env bash
# One schema of settings (stoker/program/settings.h; `stoker settings`): the --help of stoker run,
# stoker-train and train.py shows every setting of the schema with the schema's default and no
# other; a setting comes from its variable when the flag is not given, the command line wins, the
# run says where a setting came from, and an error names both the flag and the variable.
# Environment: STOKER, STOKER_TRAIN, MPIRUN, STOKER_SOURCE; STOKER_PYTHONPATH for train.py.
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?}" "${STOKER_TRAIN:?}" "${MPIRUN:?}" "${STOKER_SOURCE:?}"
make_work settings
compare="/usr/bin/python3 $STOKER_SOURCE/tests/cli/help_defaults.py"

"$STOKER" settings --json > "$work/schema.json" || fail "stoker settings --json"
"$STOKER" run --help > "$work/run.txt"
$compare "$work/schema.json" run "$work/run.txt" "stoker run" || fail "stoker run --help"
"$STOKER_TRAIN" --help > "$work/train.txt"
$compare "$work/schema.json" trainer "$work/train.txt" stoker-train || fail "stoker-train --help"
if [ -n "${STOKER_PYTHONPATH:-}" ]; then
  PYTHONPATH=$STOKER_PYTHONPATH /usr/bin/python3 "$STOKER_SOURCE/src/train/train.py" --help \
    > "$work/train-py.txt" || fail "train.py --help"
  $compare "$work/schema.json" trainer "$work/train-py.txt" train.py || fail "train.py --help"
else
  echo "skipped: train.py --help (no Python package built)"
fi
# `stoker settings --variables` lists the variables, which the text table shows too.
"$STOKER" settings --variables > "$work/variables.txt"
"$STOKER" settings > "$work/table.txt"
while read -r variable; do
  grep -qw -- "$variable" "$work/table.txt" || fail "stoker settings does not show $variable"
done < "$work/variables.txt"
[ "$(wc -l < "$work/variables.txt")" -ge 15 ] || fail "only $(wc -l < "$work/variables.txt") variables"

# The environment under the command line, for stoker run and the trainers alike.
"$STOKER" synth "$work/corpus" --dataset web:20000:200 --files 2 > /dev/null 2>&1 || fail "synth"
STEPS=3 SEQ_LEN=32 "$STOKER" run --data "$work/corpus" --seq-len 16 > "$work/env.out" \
  2> "$work/env.err" || { cat "$work/env.err" >&2; fail "stoker run with STEPS=3"; }
grep -q '"steps":3' "$work/env.out" && grep -q '"seq_len":16' "$work/env.out" ||
  fail "STEPS=3 SEQ_LEN=32 with --seq-len 16: $(cat "$work/env.out")"
grep -q "settings not from the command line: --steps STEPS='3' in the environment" "$work/env.err" &&
  ! grep -q "SEQ_LEN" "$work/env.err" || fail "the origins were not logged as they are: $(cat "$work/env.err")"
echo "ok: STEPS came from the environment, --seq-len from the command line over SEQ_LEN, logged"
CORPUS=$work/corpus STEPS=2 "$STOKER_TRAIN" --check --dim 16 --layers 1 --heads 2 \
  > "$work/check.out" 2> "$work/check.err" || { cat "$work/check.err" >&2; fail "--check"; }
grep -qx "STEPS=2" "$work/check.out" && grep -qx "CORPUS=$work/corpus" "$work/check.out" &&
  grep -qx "SEQ_LEN=128" "$work/check.out" || fail "--check printed: $(cat "$work/check.out")"
echo "ok: stoker-train --check prints the settings that have a variable"

# refused WHAT PATTERN... -- COMMAND: exits 2 printing each pattern once.
refused() {
  local what=$1 rc=0 pattern
  shift
  local patterns=()
  while [ "$1" != -- ]; do patterns+=("$1"); shift; done
  shift
  "$@" > "$work/r.out" 2> "$work/r.err" || rc=$?
  [ "$rc" = 2 ] || { cat "$work/r.err" >&2; fail "$what: exit $rc, not 2"; }
  for pattern in "${patterns[@]}"; do
    [ "$(grep -c -F -- "$pattern" "$work/r.err")" = 1 ] ||
      { cat "$work/r.err" >&2; fail "$what: '$pattern' not printed once"; }
  done
  echo "ok: $what: $(head -n 1 "$work/r.err")"
}
refused "SEQ_LEN=abc, stoker run" "--seq-len" "SEQ_LEN='abc' in the environment" -- \
  env SEQ_LEN=abc "$STOKER" run --data "$work/corpus"
# A wrong option exits 2 in every program (CLI11's own codes, 104 and so on, are not used).
refused "--steps 12abc, stoker run" "12abc" -- "$STOKER" run --data "$work/corpus" --steps 12abc
refused "--eos-id 010, stoker run" "010 is not a decimal number" -- \
  "$STOKER" run --data "$work/corpus" --eos-id 010
refused "--steps 2^64, stoker-train" "18446744073709551616 is beyond 64 bits" -- \
  "$STOKER_TRAIN" --check --data "$work/corpus" --steps 18446744073709551616
refused "IO_DEPTH=0, stoker-train" "0: give 1 or more, or auto" "IO_DEPTH='0' in the environment" \
  -- env IO_DEPTH=0 "$STOKER_TRAIN" --check --data "$work/corpus"
refused "--save-every without --checkpoint-dir, stoker-train" \
  "--save-every needs --checkpoint-dir" -- "$STOKER_TRAIN" --check --data "$work/corpus" \
  --save-every 10
# --check prints each value as it is typed, not as converted.
IO_ENGINE=threads READ_AHEAD=4MiB "$STOKER_TRAIN" --check --data "$work/corpus" \
  > "$work/typed.out" 2> "$work/typed.err" || { cat "$work/typed.err" >&2; fail "--check"; }
grep -qx "IO_ENGINE=threads" "$work/typed.out" && grep -qx "READ_AHEAD=4MiB" "$work/typed.out" ||
  fail "--check printed converted values: $(grep -E 'IO_ENGINE|READ_AHEAD' "$work/typed.out")"
refused "STEPS=0, stoker-train" "--steps must be at least 1 (STEPS='0' in the environment)" -- \
  env STEPS=0 "$STOKER_TRAIN" --check --data "$work/corpus"
refused "CHECKPOINT_DIR= , stoker-train" \
  "CHECKPOINT_DIR='' in the environment: an empty value for --checkpoint-dir" -- \
  env CHECKPOINT_DIR= "$STOKER_TRAIN" --check --data "$work/corpus"
refused "CORPUS missing, 2 ranks of stoker run" "--data: corpus folder $work/none does not exist (CORPUS='$work/none' in the environment)" -- \
  env CORPUS="$work/none" $MPIRUN -np 2 "$STOKER" run
if [ -n "${STOKER_PYTHONPATH:-}" ]; then
  refused "IO_DEPTH=-1, train.py" "--io-depth" "IO_DEPTH='-1' in the environment" -- \
    env IO_DEPTH=-1 PYTHONPATH="$STOKER_PYTHONPATH" /usr/bin/python3 \
      "$STOKER_SOURCE/src/train/train.py" --check --data "$work/corpus"
  refused "--save-every without --checkpoint-dir, train.py" "--save-every needs --checkpoint-dir" \
    -- env PYTHONPATH="$STOKER_PYTHONPATH" /usr/bin/python3 "$STOKER_SOURCE/src/train/train.py" \
      --check --data "$work/corpus" --save-every 10
fi
echo "PASS: one schema behind three programs' flags, defaults and variables"
