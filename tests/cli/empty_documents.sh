#!/usr/bin/env bash
# Empty documents never take a dataset out of the mix, end to end on real shards. Datasets e8, e4
# and e1 have 16 documents each, of which 8, 4 or 1 hold tokens (the others are empty), beside an
# ordinary dataset b; weights eN=1,b=1, at 1, 4 and 8 ranks (at 8, a rank's share of an epoch of
# eN is 2 documents, often both empty). Through the dumps' pieces: every rank's share of eN stays
# within two documents of one half at every step, over at least 5 epochs of eN. A run resumed
# from its checkpoint at step 40 on the same number of ranks dumps, byte for byte, what a run
# that never stopped dumps after step 40. e1 alone on one rank runs, all of it from its one
# document. Dataset z, whose documents are all empty, is refused up front, naming it, weighted
# with another or alone.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work empty-docs

steps=100 resume_at=40 batch=4 seq=64
row_bytes=$(( batch * (seq + 1) * 8 ))

# One corpus: datasets e8, e4 and e1 (16 documents each, of which 8, 4 or 1 hold tokens), an
# ordinary dataset b, and z (16 empty documents). Each run reads b and one of them.
corpus="$work/corpus"
mkdir -p "$work/in"
python3 - "$work/in" <<'PY'
import json, random, sys
out = sys.argv[1]
rng = random.Random(5)
def doc():
    return [rng.randrange(1, 999) for _ in range(rng.randrange(20, 200))]
for nonempty in (8, 4, 1):
    with open(f"{out}/e{nonempty}.jsonl", "w") as f:
        for i in range(16):
            f.write(json.dumps({"tokens": doc() if i % (16 // nonempty) == 0 else []}) + "\n")
with open(f"{out}/b.jsonl", "w") as f:
    for _ in range(2000):
        f.write(json.dumps({"tokens": doc()}) + "\n")
with open(f"{out}/z.jsonl", "w") as f:
    for _ in range(16):
        f.write(json.dumps({"tokens": []}) + "\n")
PY
for d in e8 e4 e1 b z; do
  "$STOKER" pack "$work/in/$d.jsonl" --out "$corpus/$d" --vocab-size 1000 > "$work/pack.log" 2>&1 ||
    { cat "$work/pack.log" >&2; fail "pack $d"; }
done

# check_shares DUMP NP E: every rank's share of dataset number E (of b, e1, e4, e8, z) within two
# documents of 1/2 at every step, and at least 5 epochs of it delivered.
check_shares() {
  python3 - "$1" "$2" "$(( batch * (seq + 1) ))" "$3" <<'PY'
import struct, sys
dump, world, step_tokens, E = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
LONGEST = 201  # a document is at most 199 tokens + EOS
problems = []
for rank in range(world):
    data = open(f"{dump}/rank-{rank}.pieces", "rb").read()
    tokens, at, epochs, worst = [0] * 5, 0, set(), 0.0
    for i in range(len(data) // 40):
        dataset, doc, epoch, first, count = struct.unpack_from("<5Q", data, 40 * i)
        tokens[dataset] += count
        at += count
        if dataset == E:
            epochs.add(epoch)
        if at % step_tokens == 0:
            worst = max(worst, abs(tokens[E] - at / 2))
    if worst > 2 * LONGEST:
        problems.append(f"rank {rank}: its tokens strayed {worst:.0f} from half (share "
                        f"{tokens[E] / at:.3f} at the end)")
    if max(epochs, default=-1) < 5:
        problems.append(f"rank {rank}: delivered only in epochs {sorted(epochs)}")
    print(f"rank {rank}: share {tokens[E] / at:.3f}, epochs up to {max(epochs, default=-1)}")
sys.exit("\n".join(problems) or None)
PY
}

run() {  # run NP LOG ARGS...
  local np=$1 log=$2; shift 2
  $MPIRUN -np "$np" "$STOKER" run "$@" > "$log.out" 2> "$log.err" ||
    { cat "$log.out" "$log.err" >&2; fail "stoker run $* at $np ranks failed"; }
}

for nonempty in 8 4 1; do
  index=$(( nonempty == 1 ? 1 : nonempty == 4 ? 2 : 3 ))  # datasets by name: b e1 e4 e8 z
  common=(--data "$corpus" --weights "e$nonempty=1,b=1" --seq-len "$seq" --batch-size "$batch")
  for np in 1 4 8; do
    run "$np" "$work/straight-$nonempty-$np" "${common[@]}" --steps "$steps" \
      --dump "$work/d-$nonempty-$np"
    check_shares "$work/d-$nonempty-$np" "$np" "$index" ||
      fail "$nonempty of 16 documents of e$nonempty non-empty, $np ranks: shares"
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
run 1 "$work/alone" --data "$corpus" --weights e1=1 --seq-len "$seq" --batch-size "$batch" \
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
echo "ok: e1=1 alone on 1 rank with one non-empty document: $steps steps, all of it"

# All empty: refused up front, naming the dataset, whether weighted with others or alone.
for weights in e1=1,z=1 z=1; do
  if "$STOKER" run --data "$corpus" --weights "$weights" --steps 1 > "$work/z.out" 2>&1; then
    fail "--weights $weights ran with dataset z all empty"
  fi
  grep -q "dataset z has weight 1 but no tokens: its 16 documents are all empty" "$work/z.out" ||
    fail "--weights $weights: not refused naming z: $(cat "$work/z.out")"
done
echo "ok: a dataset of empty documents only is refused, naming it"
echo "empty_documents: all checks passed"
