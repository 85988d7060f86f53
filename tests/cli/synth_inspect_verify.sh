#!/usr/bin/env bash
# End to end as a user runs it: every subcommand's --help explains each of its options;
# `stoker synth` a small corpus (OUT may follow --dataset; --force leaves no stale shard),
# `inspect` it (alone and under mpirun at 2 and 4 ranks) and check the counts against what was
# asked, `verify` it clean, then truncate one shard and check that verify and inspect fail naming
# that file, once.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work synth-inspect-verify
corpus="$work/corpus"

# Runs stoker at $1 ranks (1: without mpirun) with the remaining arguments.
stoker_at() {
  local np=$1; shift
  if [ "$np" = 1 ]; then "$STOKER" "$@"; else $MPIRUN -np "$np" "$STOKER" "$@"; fi
}

# expect_help SUB NAME WORD...: `stoker SUB --help` exits 0 and lists the option or positional
# NAME with an explanation holding every WORD (CLI11 prints --help itself: no proof of anything).
expect_help() {
  local sub=$1 name=$2 entry word; shift 2
  "$STOKER" "$sub" --help > "$work/help.txt" || fail "$sub --help exited non-zero"
  # The line naming the option, and the deeper-indented lines that continue it.
  entry=$(awk -v name="$name" '
    found && /^                    / { print; next }
    found { exit }
    $1 == name || index($1, name ",") == 1 || index($1, name "=") == 1 { found = 1; print }
  ' "$work/help.txt")
  [ -n "$entry" ] || fail "$sub --help does not list $name: $(cat "$work/help.txt")"
  for word in "$@"; do
    grep -qF -- "$word" <<< "$entry" || fail "$sub --help: $name lacks '$word': $entry"
  done
}
expect_help synth out "Corpus folder"
expect_help synth --dataset "NAME:TOKENS[:MEAN_DOC_LEN]" "mean document length" "Repeat"
expect_help synth --files "Shard files per dataset"
expect_help synth --seed "Seed"
expect_help synth --vocab "2^63 - 1" "eos_id" "uint64 above"
expect_help synth --unique-tokens "position in the corpus"
expect_help synth --force "part-*.h5" "refused"
expect_help pack inputs "Input files"
expect_help pack --out "DIR/NAME" "--force"
expect_help pack --format "auto" "jsonl" "text" "=auto"
expect_help pack --field "jsonl field" "=tokens"
expect_help pack --shard-tokens "Tokens per shard" "Memory"
expect_help pack --vocab-size "vocab_size" "2^63 - 1" "default: not recorded"
expect_help pack --force "part-*.h5"
expect_help inspect path "Corpus folder"
expect_help inspect --json "kind" "fingerprint" "doc_length" "datasets"
expect_help verify corpus "Corpus folder"
expect_help verify --json "files_read" "files_with_problems" "text" "index is null"
expect_help verify --block "16 bytes per element"

# OUT may come after --dataset, with options after it: one value per --dataset.
"$STOKER" synth --dataset web:120K:300 --dataset code:30K:100 "$corpus" --files 3 --seed 7 \
    > "$work/synth.log" 2>&1 || { cat "$work/synth.log"; fail "synth failed"; }
[ "$(find "$corpus" -name '*.h5' | wc -l)" = 6 ] || fail "synth wrote $(find "$corpus" -type f)"

# A forced rerun with fewer files leaves only its own shards (and refuses without --force).
other="$work/other"
"$STOKER" synth "$other" --dataset a:3K --files 3 > "$work/other.log" 2>&1 || fail "synth failed"
if "$STOKER" synth "$other" --dataset a:3K --files 1 > "$work/other.log" 2>&1; then
  fail "synth wrote into a corpus without --force"
fi
grep -q "already holds a corpus" "$work/other.log" || fail "no clear refusal: $(cat "$work/other.log")"
"$STOKER" synth "$other" --dataset a:3K --files 1 --force > "$work/other.log" 2>&1 ||
  { cat "$work/other.log"; fail "synth --force failed"; }
[ "$(find "$other" -name '*.h5')" = "$other/a/part-00000.h5" ] ||
  fail "synth --force --files 1 left: $(find "$other" -name '*.h5')"

for np in 1 2 4; do
  stoker_at "$np" inspect "$corpus" --json > "$work/inspect.$np.json" \
    || fail "inspect --json at $np ranks exited non-zero"
  python3 - "$work/inspect.$np.json" <<'PY' || fail "inspect --json at $np ranks: wrong counts"
import json, sys
text = open(sys.argv[1]).read()
assert text.count("\n") == 1, "expected one JSON line, got:\n" + text
s = json.loads(text)
ds = s["datasets"]
assert sorted(ds) == ["code", "web"], sorted(ds)
assert ds["web"]["tokens"] == 120_000 and ds["code"]["tokens"] == 30_000, ds
assert ds["web"]["files"] == 3 and ds["code"]["files"] == 3, ds
assert s["total_tokens"] == 150_000 and s["total_files"] == 6, s
assert s["total_docs"] == ds["web"]["docs"] + ds["code"]["docs"] > 0, s
assert len(s["fingerprint"]) == 32 and s["root"].endswith("/corpus"), s
for name, d in ds.items():
    assert d["dtype"] == "uint16", d
    L = d["doc_length"]
    assert 0 <= L["min"] <= L["p50"] <= L["p90"] <= L["p99"] <= L["max"], (name, L)
    # Every token belongs to one document: the mean length is tokens / docs exactly.
    assert abs(L["mean"] - d["tokens"] / d["docs"]) < 1e-6 * L["mean"], (name, L, d)
# Means near what was asked (log-normal lengths, so loosely).
assert 150 < ds["web"]["doc_length"]["mean"] < 600, ds["web"]
assert 50 < ds["code"]["doc_length"]["mean"] < 200, ds["code"]
PY
done
cmp -s "$work/inspect.1.json" "$work/inspect.2.json" || fail "inspect differs at 1 and 2 ranks"
cmp -s "$work/inspect.1.json" "$work/inspect.4.json" || fail "inspect differs at 1 and 4 ranks"

# The table: thousands separators, both datasets, the fingerprint, printed once.
stoker_at 2 inspect "$corpus" > "$work/table.txt" || fail "inspect at 2 ranks exited non-zero"
grep -q "120,000" "$work/table.txt" || fail "table lacks 120,000: $(cat "$work/table.txt")"
[ "$(grep -c '^web ' "$work/table.txt")" = 1 ] || fail "table shows web not once"
[ "$(grep -c '^fingerprint ' "$work/table.txt")" = 1 ] || fail "table shows the fingerprint not once"

for np in 1 2 4; do
  stoker_at "$np" verify "$corpus" > "$work/verify.txt" 2>&1 \
    || { cat "$work/verify.txt"; fail "verify of a clean corpus at $np ranks exited non-zero"; }
  [ "$(grep -c '^OK: 2 datasets, 6 files, .* 150,000 tokens checked in' "$work/verify.txt")" = 1 ] \
    || fail "verify at $np ranks did not print OK once: $(cat "$work/verify.txt")"
done

# Break one shard: cut it to half its size.
victim="$corpus/web/part-00001.h5"
[ -f "$victim" ] || fail "synth did not write $victim: $(find "$corpus" -type f)"
truncate -s $(( $(stat -c %s "$victim") / 2 )) "$victim"

for np in 1 2 4; do
  rc=0
  stoker_at "$np" verify "$corpus" > "$work/verify.txt" 2> "$work/verify.err" || rc=$?
  [ "$rc" = 1 ] || fail "verify of a broken corpus at $np ranks exited $rc, not 1"
  [ "$(grep -c '^web/part-00001.h5: .*truncated' "$work/verify.txt")" = 1 ] \
    || fail "verify at $np ranks did not name the truncated file once: $(cat "$work/verify.txt")"
  [ "$(grep -c '^FAILED: 1 problem in 1 of 6 files' "$work/verify.txt")" = 1 ] \
    || fail "verify at $np ranks: no FAILED summary: $(cat "$work/verify.txt")"
  ! grep -q "HDF5-DIAG" "$work/verify.txt" "$work/verify.err" || fail "HDF5 printed its stack"
done

rc=0
stoker_at 2 verify "$corpus" --json > "$work/verify.json" || rc=$?
[ "$rc" = 1 ] || fail "verify --json of a broken corpus exited $rc, not 1"
python3 - "$work/verify.json" <<'PY' || fail "verify --json: wrong report: $(cat "$work/verify.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is False and r["files"] == 6 and r["files_read"] == 5, r
[p] = r["problems"]
assert p["file"] == "web/part-00001.h5" and p["object"] == "" and p["index"] is None, p
assert "truncated" in p["message"], p
PY

rc=0
stoker_at 2 inspect "$corpus" > "$work/inspect.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "inspect of a broken corpus exited 0"
[ "$(grep -c 'web/part-00001.h5' "$work/inspect.txt")" = 1 ] \
  || fail "inspect did not name the broken file once: $(cat "$work/inspect.txt")"

echo "synth_inspect_verify: all checks passed"
