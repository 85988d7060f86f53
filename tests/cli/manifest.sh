#!/usr/bin/env bash
# A corpus manifest (stoker manifest, shard/manifest.h) under mpirun -np 2:
#   - `stoker manifest` writes CORPUS/stoker.manifest; discovery then starts from it (its debug
#     line) and the stream is the one without it, byte for byte;
#   - a shard whose modification time alone changed (a copy that did not keep times) is described
#     again, found the same, and noted once; the stream is the same;
#   - a shard added, one gone, one of another size and one rewritten at the same size with other
#     metadata (its checksum attribute) make discovery refuse the manifest as stale, on every rank
#     with one message naming the file and the command that writes it again; so are a damaged
#     manifest, a file that is not one and an empty one;
#   - `stoker manifest` again opens only the shards whose size or time changed;
#   - `stoker pack` writes the manifest of the corpus it packs into, and writes it again when it
#     adds a dataset.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work manifest
corpus=$work/corpus
"$STOKER" synth "$corpus" --dataset a:120000:60 --dataset b:40000:30 --files 20 --unique-tokens \
  > /dev/null 2>&1 || fail "stoker synth failed"

# stream NAME [FLAGS...]: `stoker run --dump` of 6 steps at 2 ranks into $work/NAME (log NAME.log).
stream() {
  local name=$1; shift
  timeout 60 $MPIRUN -np 2 "$STOKER" "$@" run --data "$corpus" --steps 6 --seq-len 63 \
    --batch-size 2 --dump "$work/$name" > "$work/$name.log" 2>&1 ||
    fail "$name: stoker run failed: $(tail -5 "$work/$name.log")"
}
same_stream() {
  if ! cmp -s "$work/plain/rank-0.bin" "$work/$1/rank-0.bin" ||
    ! cmp -s "$work/plain/rank-1.bin" "$work/$1/rank-1.bin"; then
    fail "$1: another stream"
  fi
}
# stale NAME PATTERN: discovery refuses the manifest: exit 1, PATTERN and the command once.
stale() {
  local rc=0
  timeout 60 $MPIRUN -np 2 "$STOKER" run --data "$corpus" --steps 1 > "$work/$1.txt" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "$1: exit code $rc, not 1: $(cat "$work/$1.txt")"
  for pattern in "$2" "stoker manifest $corpus"; do
    [ "$(grep -c -F -- "$pattern" "$work/$1.txt")" = 1 ] ||
      fail "$1: '$pattern' not printed once: $(cat "$work/$1.txt")"
  done
}

stream plain
[ -s "$work/plain/rank-0.bin" ] || fail "no dump: $(ls "$work/plain")"
timeout 60 $MPIRUN -np 2 "$STOKER" manifest "$corpus" > "$work/manifest.txt" 2>&1 ||
  fail "stoker manifest failed: $(cat "$work/manifest.txt")"
grep -q "^wrote $corpus/stoker.manifest: 2 datasets, 40 shards, " "$work/manifest.txt" ||
  fail "stoker manifest said: $(cat "$work/manifest.txt")"
stream with -v
grep -q "discovery: 40 shards from $corpus/stoker.manifest" "$work/with.log" ||
  fail "discovery did not start from the manifest: $(grep discovery "$work/with.log" | head -3)"
same_stream with
echo "ok: stoker manifest; the stream from it is the stream without it"

touch "$corpus/a/part-00003.h5"
stream touched
same_stream touched
[ "$(grep -c "1 shard has another modification time than its manifest records" \
  "$work/touched.log")" = 1 ] || fail "the touched shard was not noted once: $(cat "$work/touched.log")"
echo "ok: a shard's new time alone: described again, the same stream, noted once"

cp -p "$corpus/b/part-00001.h5" "$corpus/b/part-00020.h5"
stale added "b/part-00020.h5: not in the manifest"
rm "$corpus/b/part-00020.h5"
mv "$corpus/b/part-00002.h5" "$work/keep.h5"
stale gone "b/part-00002.h5: gone"
mv "$work/keep.h5" "$corpus/b/part-00002.h5"
cp -p "$corpus/a/part-00004.h5" "$work/keep.h5"
truncate -s +10 "$corpus/a/part-00004.h5"
stale bigger "a/part-00004.h5: $(stat -c %s "$corpus/a/part-00004.h5") bytes; the manifest records"
cp -p "$work/keep.h5" "$corpus/a/part-00004.h5"
# The checksum attribute's hex digits changed in place: the same size, other metadata.
/usr/bin/python3 - "$corpus/a/part-00005.h5" <<'PY' || fail "could not rewrite the checksum"
import re, sys
data = open(sys.argv[1], "rb").read()
found = re.search(rb"xxh3-64:([0-9a-f]{16})", data)
digits = bytes(b"0123456789abcdef"[(b"0123456789abcdef".index(c) + 1) % 16] for c in found.group(1))
open(sys.argv[1], "r+b").write(data[:found.start(1)] + digits + data[found.end(1):])
PY
stale rewritten "a/part-00005.h5: rewritten after the manifest was written"
echo "ok: a shard added, gone, of another size or rewritten: the manifest refused as stale"

cp "$corpus/stoker.manifest" "$work/manifest.good"
/usr/bin/python3 -c "
import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 1
open(p, 'wb').write(b)" "$corpus/stoker.manifest"
stale damaged "$corpus/stoker.manifest is damaged"
head -c -7 "$work/manifest.good" > "$corpus/stoker.manifest"
stale cut "$corpus/stoker.manifest is damaged"
/usr/bin/python3 -c "
import sys; open(sys.argv[1], 'wb').write(b'stoker manifest\\n' + (1).to_bytes(4, 'little') + bytes(8))
" "$corpus/stoker.manifest"
stale version1 "$corpus/stoker.manifest is a corpus manifest of version 1; this stoker reads version 2"
echo "not a manifest" > "$corpus/stoker.manifest"
stale other "$corpus/stoker.manifest is not a stoker corpus manifest"
: > "$corpus/stoker.manifest"
stale empty "$corpus/stoker.manifest is not a stoker corpus manifest"
echo "ok: a damaged or cut manifest and a file that is not one are refused"

# Written again, a shard the manifest records at the same size and time keeps its record
# unopened: one whose HDF5 signature was overwritten with its time set back goes unnoticed (as
# documented: `stoker verify` reads every shard); one of a new time is described again.
cp "$work/manifest.good" "$corpus/stoker.manifest"
timeout 60 $MPIRUN -np 2 "$STOKER" manifest "$corpus" > "$work/again.txt" 2>&1 ||
  fail "stoker manifest over a stale one: $(cat "$work/again.txt")"
shard=$corpus/b/part-00007.h5
cp -p "$shard" "$work/keep.h5"
printf 'XXXXXXXX' | dd of="$shard" conv=notrunc status=none
touch -r "$work/keep.h5" "$shard"
timeout 60 $MPIRUN -np 2 "$STOKER" manifest "$corpus" > "$work/kept.txt" 2>&1 ||
  fail "a shard recorded at its size and time was opened: $(cat "$work/kept.txt")"
touch "$shard"
rc=0
timeout 60 $MPIRUN -np 2 "$STOKER" manifest "$corpus" > "$work/opened.txt" 2>&1 || rc=$?
if [ "$rc" != 1 ] || ! grep -q "b/part-00007.h5" "$work/opened.txt"; then
  fail "a shard of a new time was not described again: exit $rc, $(cat "$work/opened.txt")"
fi
cp -p "$work/keep.h5" "$shard"
echo "ok: stoker manifest again opens only the shards whose size or time changed"

printf 'one document\n' > "$work/one.txt"
printf 'another document\n' > "$work/two.txt"
timeout 60 $MPIRUN -np 2 "$STOKER" pack "$work/one.txt" --out "$work/packed/first" \
  > "$work/pack1.txt" 2>&1 || fail "stoker pack failed: $(cat "$work/pack1.txt")"
[ -f "$work/packed/stoker.manifest" ] || fail "stoker pack wrote no manifest"
timeout 60 $MPIRUN -np 2 "$STOKER" pack "$work/two.txt" --out "$work/packed/second" \
  > "$work/pack2.txt" 2>&1 || fail "the second stoker pack failed: $(cat "$work/pack2.txt")"
timeout 60 $MPIRUN -np 2 "$STOKER" -v inspect "$work/packed" > "$work/inspect.txt" 2>&1 ||
  fail "stoker inspect of the packed corpus: $(cat "$work/inspect.txt")"
grep -q "discovery: 2 shards from $work/packed/stoker.manifest" "$work/inspect.txt" ||
  fail "the packed corpus's manifest: $(cat "$work/inspect.txt")"
echo "ok: stoker pack writes the corpus's manifest, and again for a dataset added"
