#!/usr/bin/env bash
# Empty documents never take a dataset out of the mix, end to end on real shards. Dataset e has
# 16 documents of which 8, 4 or 1 hold tokens (the others are empty), beside an ordinary dataset
# b; weights e=1,b=1, at 1, 4 and 8 ranks (at 8, a rank's share of an epoch of e is 2 documents,
# often both empty). Through the dumps' pieces: every rank's share of e stays within two
# documents of one half at every step, over at least 5 epochs of e. A run resumed from its
# checkpoint at step 40 on the same number of ranks dumps, byte for byte, what a run that never
# stopped dumps after step 40. A dataset whose documents are all empty is refused up front,
# naming it, and so is --weights naming only it.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-empty-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

steps=100 resume_at=40 batch=4 seq=64
row_bytes=$(( batch * (seq + 1) * 8 ))

# make_corpus DIR NONEMPTY: datasets e (16 documents, NONEMPTY of them with tokens) and b.
make_corpus() {
  local dir=$1 nonempty=$2
  mkdir -p "$dir.in"
  python3 - "$dir.in" "$nonempty" <<'PY'
import json, random, sys
out, nonempty = sys.argv[1], int(sys.argv[2])
rng = random.Random(nonempty)
with open(f"{out}/e.jsonl", "w") as f:
    for i in range(16):
        keep = i % (16 // nonempty) == 0 and i // (16 // nonempty) < nonempty
        doc = [rng.randrange(1, 999) for _ in range(rng.randrange(20, 200))] if keep else []
        f.write(json.dumps({"tokens": doc}) + "\n")
with open(f"{out}/b.jsonl", "w") as f:
    for _ in range(2000):
        f.write(json.dumps({"tokens": [rng.randrange(1, 999) for _ in range(rng.randrange(20, 200))]}) + "\n")
with open(f"{out}/z.jsonl", "w") as f:
    for _ in range(16):
        f.write(json.dumps({"tokens": []}) + "\n")
PY
  for d in e b; do
    "$STOKER" pack "$dir.in/$d.jsonl" --out "$dir/$d" --vocab-size 1000 > "$dir.pack.log" 2>&1 ||
      { cat "$dir.pack.log" >&2; fail "pack $d"; }
  done
}

# check_shares DUMP NP: every rank's share of e within two documents of 1/2 at every step, and
# at least 5 epochs of e delivered.
check_shares() {
  python3 - "$1" "$2" "$(( batch * (seq + 1) ))" <<'PY'
import struct, sys
dump, world, step_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
E, LONGEST = 1, 201  # datasets in name order: b, e; a document is at most 199 tokens + EOS
problems = []
for rank in range(world):
    data = open(f"{dump}/rank-{rank}.pieces", "rb").read()
    tokens, at, epochs, worst = [0, 0], 0, set(), 0.0
    for i in range(len(data) // 40):
        dataset, doc, epoch, first, count = struct.unpack_from("<5Q", data, 40 * i)
        tokens[dataset] += count
        at += count
        if dataset == E:
            epochs.add(epoch)
        if at % step_tokens == 0:
            worst = max(worst, abs(tokens[E] - at / 2))
    if worst > 2 * LONGEST:
        problems.append(f"rank {rank}: e's tokens strayed {worst:.0f} from half (share "
                        f"{tokens[E] / at:.3f} at the end)")
    if max(epochs, default=-1) < 5:
        problems.append(f"rank {rank}: e delivered only in epochs {sorted(epochs)}")
    print(f"rank {rank}: e share {tokens[E] / at:.3f}, epochs of e up to {max(epochs)}")
sys.exit("\n".join(problems) or None)
PY
}

run() {  # run NP LOG ARGS...
  local np=$1 log=$2; shift 2
  $MPIRUN -np "$np" "$STOKER" run "$@" > "$log.out" 2> "$log.err" ||
    { cat "$log.out" "$log.err" >&2; fail "stoker run $* at $np ranks failed"; }
}

for nonempty in 8 4 1; do
  corpus="$work/c$nonempty"
  make_corpus "$corpus" "$nonempty"
  common=(--data "$corpus" --weights e=1,b=1 --seq-len "$seq" --batch-size "$batch")
  for np in 1 4 8; do
    run "$np" "$work/straight-$nonempty-$np" "${common[@]}" --steps "$steps" \
      --dump "$work/d-$nonempty-$np"
    check_shares "$work/d-$nonempty-$np" "$np" ||
      fail "$nonempty of 16 documents of e non-empty, $np ranks: shares"
  done
  for np in 4 8; do
    [ "$np" = 8 ] && [ "$nonempty" != 1 ] && continue
    ck="$work/ck-$nonempty-$np"
    run "$np" "$work/first-$nonempty-$np" "${common[@]}" --steps "$resume_at" \
      --checkpoint-dir "$ck" --save-every "$resume_at"
    run "$np" "$work/resumed-$nonempty-$np" "${common[@]}" --steps "$steps" \
      --checkpoint-dir "$ck" --resume --dump "$work/r-$nonempty-$np"
    for (( r = 0; r < np; r++ )); do
      tail -c +$(( resume_at * row_bytes + 1 )) "$work/d-$nonempty-$np/rank-$r.bin" |
        cmp -s - "$work/r-$nonempty-$np/rank-$r.bin" ||
        fail "$nonempty non-empty, $np ranks: rank $r resumed at step $resume_at dumped other bytes"
    done
    echo "ok: $nonempty of 16 non-empty, $np ranks: resumed at step $resume_at, same bytes"
  done
done

# One non-empty document of 16, read alone on one rank: every step is e's single document.
run 1 "$work/alone" --data "$work/c1" --weights e=1 --seq-len "$seq" --batch-size "$batch" \
  --steps "$steps" --dump "$work/d-alone"
python3 - "$work/d-alone" "$steps" "$(( batch * (seq + 1) ))" <<'PY' || fail "e=1 alone on 1 rank"
import struct, sys
data = open(f"{sys.argv[1]}/rank-0.pieces", "rb").read()
pieces = [struct.unpack_from("<5Q", data, 40 * i) for i in range(len(data) // 40)]
docs = {(d, doc) for d, doc, _, _, _ in pieces}
total = sum(p[4] for p in pieces)
want = int(sys.argv[2]) * int(sys.argv[3])
sys.exit(None if len(docs) == 1 and total == want else f"documents {docs}, {total} tokens of {want}")
PY
echo "ok: e=1 alone on 1 rank with one non-empty document: $steps steps, all of it"

# All empty: refused up front, naming the dataset, whether weighted with others or alone.
"$STOKER" pack "$work/c1.in/z.jsonl" --out "$work/c1/z" --vocab-size 1000 > /dev/null 2>&1 ||
  fail "pack z"
for weights in e=1,z=1 z=1; do
  if "$STOKER" run --data "$work/c1" --weights "$weights" --steps 1 > "$work/z.out" 2>&1; then
    fail "--weights $weights ran with dataset z all empty"
  fi
  grep -q "dataset z has weight 1 but no tokens: its 16 documents are all empty" "$work/z.out" ||
    fail "--weights $weights: not refused naming z: $(cat "$work/z.out")"
done
echo "ok: a dataset of empty documents only is refused, naming it"
echo "empty_documents: all checks passed"
