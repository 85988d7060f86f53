#!/usr/bin/env bash
# What ranks see behind their corpus paths, under mpirun at 2 and 3 ranks. The last rank runs in
# a mount namespace of its own (`unshare -m`), where a bind mount shows it other files behind
# the same path, as a node's own copy or another mount would:
#   - other content at the same sizes (one shard packed from a text with one byte changed): the
#     run is refused before any batch, exit 1, one message naming that rank, its host, its path,
#     the shard and both checksums, and the ranks that see the model;
#   - a shard only the last rank sees: refused, naming the shard;
#   - the same files at another path on the last rank (its own --data: a bind mount of the corpus
#     elsewhere) and through a symbolic link on another: the run goes on and delivers exactly the
#     batches of a run where every rank names the corpus alike (--dump files compared);
#   - `stoker verify` names a shard whose tokens were rewritten in place (its checksum no longer
#     matches); a corpus written without checksums (the attribute deleted, as an older stoker
#     wrote it) runs with one warning saying so, and `stoker verify --record` adds the checksums
#     the writer would have.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags). Exit 77 (skipped) where no
# mount namespace can be made (not root, or no unshare).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

if ! unshare -m --propagation private true 2> /dev/null; then
  echo "skipped: unshare -m cannot make a mount namespace here (it needs root)"
  exit 77
fi
make_work corpus-views
python=/usr/bin/python3

# texts DIR VARIANT: three text documents of 3000, 2000 and 2500 bytes; VARIANT 1 changes one
# byte of the second (the same sizes, other tokens).
texts() {
  "$python" - "$1" "$2" <<'PY'
import os, sys
folder, variant = sys.argv[1], int(sys.argv[2])
os.makedirs(folder, exist_ok=True)
for i, n in enumerate([3000, 2000, 2500]):
    text = bytearray((b"stoker corpus views %d " % i) * (n // 20 + 1))[:n]
    if variant == 1 and i == 1:
        text[700] = ord("#")
    open(os.path.join(folder, "doc-%d.txt" % i), "wb").write(bytes(text))
PY
}

# corpus DIR VARIANT: dataset web, one shard per text (--shard-tokens below each text's size).
corpus() {
  texts "$work/texts-$2" "$2"
  "$STOKER" pack "$work/texts-$2"/doc-*.txt --out "$1/web" --shard-tokens 1000 \
    > "$work/pack.log" 2>&1 || { cat "$work/pack.log" >&2; fail "stoker pack failed"; }
}

corpus "$work/corpus" 0
corpus "$work/other" 1
shard=web/part-00000-00001.h5
[ -f "$work/corpus/$shard" ] || fail "no $shard: $(ls "$work/corpus/web")"
[ "$(stat -c %s "$work/corpus/$shard")" = "$(stat -c %s "$work/other/$shard")" ] ||
  fail "the two versions of $shard differ in size"
cmp -s "$work/corpus/$shard" "$work/other/$shard" && fail "the two versions of $shard are equal"
# checksum CORPUS SHARD: the shard's checksum attribute, as h5py reads it.
checksum() {
  "$python" -c "import h5py, sys; a = h5py.File(sys.argv[1], 'r').attrs.get('checksum', b'none')
print(a.decode() if isinstance(a, bytes) else a)" "$1/$2"
}
ours=$(checksum "$work/corpus" "$shard")
theirs=$(checksum "$work/other" "$shard")

args=(run --seq-len 64 --batch-size 2 --steps 6 --seed 5 --logical-shards 6)
# launch NAME NP MOUNT DATA_LAST: NP ranks; the last one first mounts MOUNT ("SOURCE TARGET", or
# "" for none) in its own namespace and reads --data DATA_LAST; the others read $work/corpus.
# Exit code to $work/NAME.rc, output to $work/NAME.txt.
launch() {
  local name=$1 np=$2 mount=$3 data_last=$4 rc=0
  local first=(-np $((np - 1)) "$STOKER" "${args[@]}" --data "$work/corpus"
               --dump "$work/$name-dump")
  # shellcheck disable=SC2016  # expanded by the inner shell
  local last=(-np 1 unshare -m --propagation private sh -c
              '[ -z "$1" ] || mount --bind $1 || exit 3; shift; exec "$@"' sh "$mount"
              "$STOKER" "${args[@]}" --data "$data_last" --dump "$work/$name-dump")
  timeout 120 $MPIRUN "${first[@]}" : "${last[@]}" > "$work/$name.txt" 2>&1 || rc=$?
  echo "$rc" > "$work/$name.rc"
}

# refused NAME NP MOUNT PATTERN...: the run exits 1, each PATTERN (fixed text) printed once, and
# no batch was delivered.
refused() {
  local name=$1 np=$2 mount=$3 pattern count
  shift 3
  launch "$name" "$np" "$mount" "$work/corpus"
  [ "$(cat "$work/$name.rc")" = 1 ] ||
    fail "$name: exit code $(cat "$work/$name.rc"), not 1: $(cat "$work/$name.txt")"
  for pattern in "$@"; do
    count=$(grep -o -F -- "$pattern" "$work/$name.txt" | wc -l || true)
    [ "$count" = 1 ] || fail "$name: '$pattern' printed $count times, not once:
$(cat "$work/$name.txt")"
  done
  ! find "$work/$name-dump" -name '*.bin' -size +0 2> /dev/null | grep -q . ||
    fail "$name: batches were delivered before the refusal"
  echo "ok: $name: $(grep -m1 -F -- "$1" "$work/$name.txt" | cut -c1-300)"
}

host=$(hostname)
for np in 2 3; do
  last=$((np - 1))
  model="rank 0"; [ "$np" = 3 ] && model="ranks 0-1"
  refused "other-content-$np" "$np" "$work/other $work/corpus" \
    "rank $last (host $host, corpus $work/corpus) sees $shard as" \
    "checksum $theirs" "$model (host $host) see" "checksum $ours"
  mkdir -p "$work/extra/web"
  cp -r "$work/corpus/web/." "$work/extra/web/"
  cp "$work/corpus/$shard" "$work/extra/web/part-99999.h5"
  refused "extra-shard-$np" "$np" "$work/extra $work/corpus" \
    "rank $last (host $host, corpus $work/corpus) sees web/part-99999.h5, which $model"
  rm -rf "$work/extra"
done

# The same files by other names: a bind mount at another path, a symbolic link; the batches are
# those of a run where every rank names $work/corpus.
ln -s "$work/corpus" "$work/link"
mkdir -p "$work/elsewhere"
for np in 2 3; do
  launch "same-$np" "$np" "" "$work/corpus"
  launch "renamed-$np" "$np" "$work/corpus $work/elsewhere" "$work/elsewhere"
  launch "linked-$np" "$np" "" "$work/link"
  for name in same renamed linked; do
    [ "$(cat "$work/$name-$np.rc")" = 0 ] ||
      fail "$name-$np: exit code $(cat "$work/$name-$np.rc"): $(cat "$work/$name-$np.txt")"
  done
  for r in $(seq 0 $((np - 1))); do
    for name in renamed linked; do
      cmp -s "$work/same-$np-dump/rank-$r.bin" "$work/$name-$np-dump/rank-$r.bin" ||
        fail "$name-$np: rank $r delivered other batches than with one path"
    done
  done
  echo "ok: $np ranks: the corpus named by another path (a bind mount, a link) on one rank: the same batches"
done

# verify: tokens rewritten in place at the same size no longer match the recorded checksum.
cp -r "$work/corpus" "$work/edited"
"$python" - "$work/edited/$shard" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["tokens"][5] = (int(f["tokens"][5]) + 1) % 256
PY
rc=0
"$STOKER" verify "$work/edited" > "$work/edited.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "verify of an edited shard exited $rc, not 1: $(cat "$work/edited.txt")"
grep -q -F "$shard: checksum: is $ours, but the offsets and tokens hash to" "$work/edited.txt" ||
  fail "verify did not name the edited shard's checksum: $(cat "$work/edited.txt")"
echo "ok: verify names a shard edited in place: $(grep -m1 -F "$shard" "$work/edited.txt" | cut -c1-200)"

# A corpus without checksums: runs with one warning; verify --record adds them.
for dir in corpus other; do
  cp -r "$work/$dir" "$work/old-$dir"
  rm -f "$work/old-$dir/stoker.manifest"  # an older stoker's corpus has none
  for f in "$work/old-$dir"/web/*.h5; do
    "$python" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); del f.attrs['checksum']" "$f"
  done
done
$MPIRUN -np 2 "$STOKER" "${args[@]}" --data "$work/old-corpus" > "$work/old.txt" 2>&1 ||
  fail "a run on a corpus without checksums failed: $(cat "$work/old.txt")"
[ "$(grep -c "carry no content checksum" "$work/old.txt")" = 1 ] ||
  fail "no single warning of shards without checksum: $(cat "$work/old.txt")"
"$STOKER" verify "$work/old-corpus" > "$work/old-verify.txt" 2>&1 ||
  fail "verify of a corpus without checksums failed: $(cat "$work/old-verify.txt")"
grep -q "3 files carry no checksum" "$work/old-verify.txt" ||
  fail "verify did not count the files without checksum: $(cat "$work/old-verify.txt")"
for dir in corpus other; do
  $MPIRUN -np 2 "$STOKER" verify --record "$work/old-$dir" > "$work/record.txt" 2>&1 ||
    fail "verify --record failed: $(cat "$work/record.txt")"
  grep -q "checksum recorded in 3 files" "$work/record.txt" ||
    fail "verify --record did not say it recorded 3: $(cat "$work/record.txt")"
done
[ "$(checksum "$work/old-corpus" "$shard")" = "$ours" ] ||
  fail "verify --record recorded another checksum than the writer did"
$MPIRUN -np 2 "$STOKER" "${args[@]}" --data "$work/old-corpus" > "$work/recorded.txt" 2>&1 ||
  fail "a run on the recorded corpus failed: $(cat "$work/recorded.txt")"
! grep -q "carry no content checksum" "$work/recorded.txt" ||
  fail "the warning stayed after verify --record: $(cat "$work/recorded.txt")"
echo "ok: a corpus without checksums: one warning; verify --record adds the writer's checksums"
