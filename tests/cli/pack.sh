#!/usr/bin/env bash
# `stoker pack` end to end, as a user runs it: text files (the licenses Debian ships) packed by
# one process and by two ranks under mpirun, a jsonl file of token ids, refusals and a bad line;
# then `stoker verify` must find the result clean and `stoker inspect --json` must count the
# documents and tokens that went in.
# Needs STOKER (the program) and MPIRUN (mpirun with its flags), as CTest sets them.
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"

: "${STOKER:?set STOKER to the stoker program}"
: "${MPIRUN:?set MPIRUN to mpirun and its flags}"

make_work pack


# The value of a top-level integer field of inspect's JSON ("total_docs": 12).
json_int() {
  grep -o "\"$1\": *[0-9]*" "$2" | head -n 1 | grep -o '[0-9]*$' || fail "no \"$1\" in $2"
}

licenses=()
for name in GPL-3 Apache-2.0 MPL-2.0 BSD Artistic GPL-2; do
  [[ -f /usr/share/common-licenses/$name ]] && licenses+=("/usr/share/common-licenses/$name")
done
(( ${#licenses[@]} >= 3 )) || fail "fewer than 3 license files in /usr/share/common-licenses"
text_bytes=$(cat "${licenses[@]}" | wc -c)

# Text, one process, small shards so that there are several.
"$STOKER" pack "${licenses[@]}" --out "$work/corpus/licenses" --shard-tokens 40K \
  > "$work/pack1.log" 2>&1 || { cat "$work/pack1.log" >&2; fail "pack of text files failed"; }
grep -q "pack: ${#licenses[@]} inputs" "$work/pack1.log" ||
  { cat "$work/pack1.log" >&2; fail "pack did not log its summary"; }
ls "$work/corpus/licenses"/part-00000-00001.h5 > /dev/null ||
  fail "--shard-tokens 40K did not split $text_bytes bytes into several shards"

# The same under mpirun with two ranks: rank 1 writes part-00001-*.
$MPIRUN -np 2 "$STOKER" pack "${licenses[@]}" --out "$work/corpus/licenses-np2" \
  > "$work/pack2.log" 2>&1 || { cat "$work/pack2.log" >&2; fail "pack under mpirun failed"; }
ls "$work/corpus/licenses-np2"/part-00001-00000.h5 > /dev/null ||
  fail "rank 1 wrote no shard under mpirun -np 2"

# jsonl with token ids: 50 documents of 1 to 50 tokens, and a blank line that is skipped.
jsonl="$work/ids.jsonl"
for (( d = 1; d <= 50; d++ )); do
  ids=$(seq -s, 1 "$d")
  echo "{\"meta\": {\"n\": $d}, \"tokens\": [$ids]}"
  if (( d == 25 )); then echo ""; fi
done > "$jsonl"
"$STOKER" pack "$jsonl" --out "$work/corpus/ids" --vocab-size 1000 > "$work/pack3.log" 2>&1 ||
  { cat "$work/pack3.log" >&2; fail "pack of jsonl failed"; }

# Refusals: a full folder without --force, an id beyond --vocab-size (names file and line).
if "$STOKER" pack "$jsonl" --out "$work/corpus/ids" > "$work/refuse.log" 2>&1; then
  fail "pack wrote into a non-empty folder without --force"
fi
grep -q "is not empty; use --force" "$work/refuse.log" ||
  { cat "$work/refuse.log" >&2; fail "no clear message for a non-empty --out"; }
if $MPIRUN -np 2 "$STOKER" pack "$jsonl" "$jsonl" --out "$work/bad/ids" --vocab-size 10 \
    > "$work/bad.log" 2>&1; then
  fail "pack accepted token id 10 with --vocab-size 10"
fi
grep -q "ids.jsonl:10: \"tokens\"\[9\] = 10 is not below --vocab-size 10" "$work/bad.log" ||
  { cat "$work/bad.log" >&2; fail "the error does not name the file, line and id"; }
[[ -z "$(ls -A "$work/bad/ids")" ]] || fail "a failed pack left shards behind"

# --force replaces the old shards.
"$STOKER" pack "$jsonl" --out "$work/corpus/ids" --vocab-size 1000 --shard-tokens 500 --force \
  > "$work/pack4.log" 2>&1 || { cat "$work/pack4.log" >&2; fail "pack --force failed"; }

# The whole corpus is clean and holds what went in.
"$STOKER" verify "$work/corpus" > "$work/verify.log" 2>&1 ||
  { cat "$work/verify.log" >&2; fail "stoker verify found problems (or failed) in packed data"; }
"$STOKER" inspect "$work/corpus" --json > "$work/inspect.json" 2> "$work/inspect.log" ||
  { cat "$work/inspect.log" >&2; fail "stoker inspect --json failed"; }
docs=$(json_int total_docs "$work/inspect.json")
tokens=$(json_int total_tokens "$work/inspect.json")
expected_docs=$(( 2 * ${#licenses[@]} + 50 ))
expected_tokens=$(( 2 * text_bytes + 50 * 51 / 2 ))
[[ "$docs" == "$expected_docs" ]] ||
  fail "inspect counts $docs documents, expected $expected_docs (${#licenses[@]} texts twice + 50)"
[[ "$tokens" == "$expected_tokens" ]] ||
  fail "inspect counts $tokens tokens, expected $expected_tokens"

echo "pack.sh: all checks passed"
