#!/usr/bin/env bash
# Exactly once across rescales, end to end: `stoker run` saves (--checkpoint-dir, --save-every),
# stops, and resumes (--resume) on another number of ranks -- 4->1, 4->3, 2->5, 3->7 and a chain
# 4->3->5->2 -- on a corpus of unique token values with three datasets mixed by weight. Each
# segment ends at a step it saved; the last one runs until every rank is past epoch 0 of every
# dataset (the pieces' epoch field says so; steps are added when it is not). Over the dumps of
# all segments (--dump: rank-<r>.bin tokens, rank-<r>.pieces what they are made of):
#   - every dump holds exactly the steps of its segment, and the step numbers go on across resumes;
#   - the tokens agree with the pieces: a document's values are consecutive integers and EOS
#     (= total tokens) closes it;
#   - epoch 0 of every dataset is delivered exactly once: every document's framed positions are
#     covered once, and the documents' values tile the dataset's whole range of token values.
# And the offline `stoker reshard` equals the MPI rescale: resuming on W' ranks from the resharded
# folder and from the original dumps the same bytes (4->3 and 2->5).
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work rescale

corpus="$work/corpus"
"$STOKER" synth "$corpus" --dataset a:30000:60 --dataset b:20000:150 --dataset c:10000:25 \
  --files 2 --seed 5 --unique-tokens > "$work/synth.log" 2>&1 ||
  { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
"$STOKER" inspect "$corpus" --json > "$work/inspect.json" 2> "$work/inspect.err" ||
  { cat "$work/inspect.err" >&2; fail "stoker inspect failed"; }

seq=64 batch=4
common=(--data "$corpus" --seq-len "$seq" --batch-size "$batch" --logical-shards 64 --seed 9
        --weights "a=5,b=3,c=2")

# Checks the dumps of segments given as WORLD:FROM_STEP:TO_STEP:DIR, in order. Exit 1 with the
# problems; exit 3 when the last world's ranks are not all past epoch 0 of every dataset yet.
cat > "$work/check.py" <<'EOF'
import json, sys
from array import array

info = json.load(open(sys.argv[1]))
row, batch = int(sys.argv[2]), int(sys.argv[3])
segments = [(int(w), int(a), int(b), d) for w, a, b, d in (s.split(":", 3) for s in sys.argv[4:])]
names = sorted(info["datasets"])  # corpus order
docs = [info["datasets"][n]["docs"] for n in names]
tokens = [info["datasets"][n]["tokens"] for n in names]
eos = info["total_tokens"]
base = [{} for _ in names]    # document -> value of its token 0
length = [{} for _ in names]  # document -> its length (where EOS stands)
runs = [{} for _ in names]    # document -> epoch-0 (first, count) runs
problems = []

def problem(text):
    problems.append(text)
    if len(problems) >= 10:
        sys.exit("\n".join(problems))

last = len(segments) - 1  # the trailing segments at the last world size
while last > 0 and segments[last - 1][0] == segments[-1][0]:
    last -= 1
past = [set() for _ in range(segments[-1][0])]
delivered = 0
for index, (world, first_step, last_step, folder) in enumerate(segments):
    for r in range(world):
        t, p = array("q"), array("Q")
        t.frombytes(open(f"{folder}/rank-{r}.bin", "rb").read())
        p.frombytes(open(f"{folder}/rank-{r}.pieces", "rb").read())
        if len(t) != (last_step - first_step) * batch * row:
            problem(f"{folder}/rank-{r}.bin: {len(t)} tokens, not steps {first_step + 1}.."
                    f"{last_step} of {batch} rows of {row}")
        delivered += len(t)
        at = 0
        for j in range(0, len(p), 5):
            k, doc, epoch, first, count = p[j:j + 5]
            where = f"{folder}/rank-{r}: dataset {names[k]} document {doc} epoch {epoch}"
            if k >= len(names) or doc >= docs[k] or count == 0:
                problem(f"{where}: no such document, or an empty piece")
                continue
            for q, value in enumerate(t[at:at + count], start=first):
                if value == eos:
                    if q != first + count - 1:
                        problem(f"{where}: EOS at position {q}, inside [{first}, +{count})")
                    if length[k].setdefault(doc, q) != q:
                        problem(f"{where}: EOS at position {q}, elsewhere {length[k][doc]}")
                elif base[k].setdefault(doc, value - q) != value - q:
                    problem(f"{where}: token {value} at position {q} breaks the run from "
                            f"{base[k][doc]}")
            at += count
            if epoch == 0:
                runs[k].setdefault(doc, []).append((first, count))
            elif index >= last:
                past[r].add(k)
        if at != len(t):
            problem(f"{folder}/rank-{r}: the pieces cover {at} of {len(t)} tokens")
if problems:
    sys.exit("\n".join(problems))
behind = [f"rank {r} ({', '.join(n for k, n in enumerate(names) if k not in s)})"
          for r, s in enumerate(past) if len(s) < len(names)]
if behind:
    print("not yet past epoch 0: " + "; ".join(behind))
    sys.exit(3)
checked = 0
for k, name in enumerate(names):
    value = sum(tokens[:k])  # unique tokens: dataset after dataset, document after document
    for doc in range(docs[k]):
        n = length[k].get(doc)
        if n is None:
            problem(f"dataset {name} document {doc}: never closed by an EOS")
            continue
        covered = 0
        for first, count in sorted(runs[k].get(doc, [])):
            if first != covered:
                problem(f"dataset {name} document {doc}: epoch 0 has {sorted(runs[k][doc])}: "
                        f"positions from {min(first, covered)} not exactly once")
                break
            covered = first + count
        if covered != n + 1:
            problem(f"dataset {name} document {doc}: epoch 0 covers {covered} of {n + 1} "
                    f"framed positions")
        if base[k].get(doc, value) != value:
            problem(f"dataset {name} document {doc}: starts at value {base[k][doc]}, not {value}")
        value += n
        checked += n + 1
    if value != sum(tokens[:k + 1]):
        problem(f"dataset {name}: documents hold {value - sum(tokens[:k])} tokens, not {tokens[k]}")
if problems:
    sys.exit("\n".join(problems))
print(f"{checked} framed tokens of epoch 0 exactly once ({delivered} tokens delivered)")
EOF

# segment NAME INDEX NP FROM TO EVERY: `stoker run` at NP ranks from step FROM (resumed unless
# 0) to TO, saving every EVERY steps; dumps into $work/NAME/seg-INDEX. Appends to `segments`.
segment() {
  local name=$1 index=$2 np=$3 from=$4 to=$5 every=$6
  local log="$work/$name/seg-$index" resume=()
  [ "$from" = 0 ] || resume=(--resume)
  timeout 120 $MPIRUN -np "$np" "$STOKER" run "${common[@]}" --steps "$to" --save-every "$every" \
    --checkpoint-dir "$work/$name/ckpt" --dump "$log" "${resume[@]}" > "$log.out" 2> "$log.err" ||
    { cat "$log.out" "$log.err" >&2; fail "$name: stoker run at $np ranks, steps $from..$to"; }
  grep -q "\"steps\":${to}[,}]" "$log.out" ||
    fail "$name: the run did not stop at step $to: $(cat "$log.out")"
  [ -d "$work/$name/ckpt/step-$to" ] || fail "$name: step $to was not saved"
  if [ "$from" != 0 ] && [ "$previous" != "$np" ]; then
    grep -q "step-$from: step $from, rescaled from $previous to $np ranks" "$log.err" ||
      fail "$name: did not resume from step $from of $previous ranks: $(cat "$log.err")"
  fi
  previous=$np
  segments+=("$np:$from:$to:$log")
}

# scenario NAME EVERY NP:TO...: the segments in turn, then more steps at the last world size until
# it is past epoch 0; then the checks.
scenario() {
  local name=$1 every=$2 from=0 index=0 np to rc tries=0
  shift 2
  segments=()
  mkdir -p "$work/$name"
  for spec in "$@"; do
    np=${spec%%:*} to=${spec#*:}
    segment "$name" "$index" "$np" "$from" "$to" "$every"
    from=$to index=$((index + 1))
  done
  while true; do
    rc=0
    python3 "$work/check.py" "$work/inspect.json" $((seq + 1)) "$batch" "${segments[@]}" \
      > "$work/$name/check.txt" 2>&1 || rc=$?
    [ "$rc" = 3 ] || break
    tries=$((tries + 1))
    [ "$tries" -le 4 ] || fail "$name: $(cat "$work/$name/check.txt") after $from steps"
    to=$((from + every * ((24 + every - 1) / every)))
    segment "$name" "$index" "$np" "$from" "$to" "$every"
    from=$to index=$((index + 1))
  done
  [ "$rc" = 0 ] || { cat "$work/$name/check.txt" >&2; fail "$name ($*): exactly-once broken"; }
  echo "ok: $name ($*, $((index)) segments, to step $from): $(cat "$work/$name/check.txt")"
}

start=$SECONDS
scenario 4to1 5 4:20 1:290
scenario 4to3 4 4:16 3:120
scenario 2to5 8 2:40 5:104
scenario 3to7 9 3:27 7:72
scenario chain 2 4:10 3:22 5:30 2:144

# --- The offline reshard equals the MPI rescale, bit for bit. ---
# offline NAME OLD NEW STEP: save at STEP on OLD ranks; resume on NEW ranks to STEP + 24 from the
# original (the MPI rescale) and from `stoker reshard` of it: the same dumps.
offline() {
  local name=$1 old=$2 new=$3 step=$4 dir="$work/offline-$1"
  timeout 60 $MPIRUN -np "$old" "$STOKER" run "${common[@]}" --steps "$step" --save-every "$step" \
    --checkpoint-dir "$dir/original" > "$dir.save.log" 2>&1 ||
    { cat "$dir.save.log" >&2; fail "$name: saving step $step at $old ranks"; }
  timeout 60 "$STOKER" reshard "$dir/original/step-$step" --world-size "$new" \
    --out "$dir/resharded/step-$step" > "$dir.reshard.log" 2>&1 ||
    { cat "$dir.reshard.log" >&2; fail "$name: stoker reshard to $new ranks"; }
  local files=("$dir/resharded/step-$step/loader"/rank-*-of-*.ckpt)
  [ "${#files[@]}" = "$new" ] ||
    fail "$name: stoker reshard wrote ${#files[@]} rank files, not $new: ${files[*]}"
  for from in original resharded; do
    timeout 60 $MPIRUN -np "$new" "$STOKER" run "${common[@]}" --steps $((step + 24)) --resume \
      --checkpoint-dir "$dir/$from" --dump "$dir/dump-$from" > "$dir.$from.log" 2>&1 ||
      { cat "$dir.$from.log" >&2; fail "$name: resuming at $new ranks from the $from step"; }
  done
  for ((r = 0; r < new; ++r)); do
    for part in bin pieces; do
      [ -s "$dir/dump-original/rank-$r.$part" ] || fail "$name: rank-$r.$part is empty"
      cmp -s "$dir/dump-original/rank-$r.$part" "$dir/dump-resharded/rank-$r.$part" ||
        fail "$name: rank $r of $new: resuming from stoker reshard's output dumped other $part" \
             "than the MPI rescale from $old ranks"
    done
  done
  echo "ok: $name: stoker reshard $old -> $new equals the MPI rescale (24 steps on $new ranks)"
}
offline 4to3 4 3 16
offline 2to5 2 5 40
# The same configuration and step as the scenario: its resumed segment starts with these batches.
size=$(stat -c %s "$work/offline-4to3/dump-original/rank-2.bin")
cmp -s -n "$size" "$work/offline-4to3/dump-original/rank-2.bin" "$work/4to3/seg-1/rank-2.bin" ||
  fail "4to3: two resumes from equal checkpoints at step 16 (one saving as it went) differ"
echo "ok: all in $((SECONDS - start)) s"
