#!/usr/bin/env bash
# `stoker run` end to end, as a user runs it under mpirun, on a corpus of unique token values:
# --dump files are bit-identical between two runs of one configuration, of the right size, and
# differ under another --seed; the final JSON line counts what was delivered; --config is read
# and a flag on the command line wins over it; bad flags stop the run with one message printed
# once; --help explains every option; SIGUSR1 and SIGTERM stop it at a step with a save; saves
# keep the ranks together (a rank whose writes are slow is waited for, and the JSON line says how
# long); and
# through the dumps, at 1, 2 and 3 ranks, every rank's first epoch-share of each dataset is its
# part of epoch 0: over the ranks, every token of the dataset exactly once.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work run

# run_ok NP LOG ARGS...: `stoker run ARGS` at NP ranks; stdout to LOG.out, stderr to LOG.err.
run_ok() {
  local np=$1 log=$2; shift 2
  $MPIRUN -np "$np" "$STOKER" run "$@" > "$log.out" 2> "$log.err" ||
    { cat "$log.out" "$log.err" >&2; fail "stoker run $* at $np ranks failed"; }
}

# Three datasets (sorted names, so their values come in that order), two files each.
corpus="$work/corpus"
"$STOKER" synth "$corpus" --dataset a:6000:50 --dataset b:4000:120 --dataset c:2000:20 \
  --files 2 --seed 3 --unique-tokens > "$work/synth.log" 2>&1 ||
  { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
"$STOKER" inspect "$corpus" --json > "$work/inspect.json" 2> "$work/inspect.err" ||
  { cat "$work/inspect.err" >&2; fail "stoker inspect failed"; }

# --- Dumps: same configuration, same bytes; another seed, other bytes; the JSON line. ---
steps=20 batch=4 seq=128
args=(--data "$corpus" --steps "$steps" --seq-len "$seq" --batch-size "$batch")
run_ok 2 "$work/run1" "${args[@]}" --dump "$work/d1"
run_ok 2 "$work/run2" "${args[@]}" --dump "$work/d2"
run_ok 2 "$work/run3" "${args[@]}" --dump "$work/d3" --seed 1
for r in 0 1; do
  size=$(stat -c %s "$work/d1/rank-$r.bin")
  [ "$size" = $((steps * batch * (seq + 1) * 8)) ] ||
    fail "rank-$r.bin holds $size bytes, not $steps steps of $batch rows of $((seq + 1)) int64"
  cmp -s "$work/d1/rank-$r.bin" "$work/d2/rank-$r.bin" ||
    fail "two runs of one configuration dumped different batches on rank $r"
  ! cmp -s "$work/d1/rank-$r.bin" "$work/d3/rank-$r.bin" ||
    fail "--seed 1 dumped the same batches as --seed 0 on rank $r"
done
[ ! -e "$work/d1/rank-2.bin" ] || fail "a dump for a rank that does not exist"
[ "$(wc -l < "$work/run1.out")" = 1 ] || fail "stdout is not one JSON line: $(cat "$work/run1.out")"
python3 - "$work/run1.out" 2 $steps $((2 * steps * batch * (seq + 1))) <<'EOF' ||
import json, sys
line = json.loads(open(sys.argv[1]).read())
ranks, steps, tokens = (int(a) for a in sys.argv[2:5])
problems = [f"{k} is {line.get(k)!r}, not {v}" for k, v in
            (("ranks", ranks), ("steps", steps), ("tokens", tokens)) if line.get(k) != v]
if not (isinstance(line.get("seconds"), (int, float)) and line["seconds"] > 0):
    problems.append(f"seconds is {line.get('seconds')!r}")
tps = line.get("tokens_per_second")
if not (isinstance(tps, (int, float)) and abs(tps * line["seconds"] - tokens) <= 1e-6 * tokens):
    problems.append(f"tokens_per_second {tps!r} is not tokens / seconds")
sys.exit("\n".join(problems) or None)
EOF
  fail "the JSON line of stoker run: $(cat "$work/run1.out")"
echo "ok: dumps identical across runs, differ by seed; JSON line counts $((2 * steps * batch * (seq + 1))) tokens"

# --- --config: the file is read; a flag on the command line wins. ---
printf '# stoker run options\nseq-len = 64\nbatch-size = 2\n' > "$work/run.toml"
run_ok 1 "$work/cfg1" --data "$corpus" --steps 3 --config "$work/run.toml" --dump "$work/c1"
[ "$(stat -c %s "$work/c1/rank-0.bin")" = $((3 * 2 * 65 * 8)) ] ||
  fail "--config seq-len = 64, batch-size = 2 was not honoured: $(cat "$work/cfg1.out")"
run_ok 1 "$work/cfg2" --data "$corpus" --steps 3 --config "$work/run.toml" --seq-len 32 \
  --dump "$work/c2"
[ "$(stat -c %s "$work/c2/rank-0.bin")" = $((3 * 2 * 33 * 8)) ] ||
  fail "--seq-len 32 on the command line did not win over the file's 64: $(cat "$work/cfg2.out")"
for bad in "missing:$work/no-such.toml" "unknown key:$work/bad.toml"; do
  printf 'seq-lenn = 64\n' > "$work/bad.toml"
  rc=0
  "$STOKER" run --data "$corpus" --steps 1 --config "${bad#*:}" > "$work/cfg3.txt" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "--config with a ${bad%%:*} file was ignored: $(cat "$work/cfg3.txt")"
  grep -q "${bad#*:}" "$work/cfg3.txt" ||
    fail "the error for a ${bad%%:*} --config file does not name it: $(cat "$work/cfg3.txt")"
done
echo "ok: --config read, command line wins, a missing file or unknown key is refused"

# --- Bad flags: non-zero exit, one message, printed once. ---
expect_error() {
  local name=$1 np=$2 pattern=$3; shift 3
  local rc=0 count
  $MPIRUN -np "$np" "$STOKER" run "$@" > "$work/bad.txt" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "$name: exited 0"
  count=$(grep -c -- "$pattern" "$work/bad.txt" || true)
  [ "$count" = 1 ] || fail "$name: '$pattern' printed $count times, not once:
$(cat "$work/bad.txt")"
  ! grep -q "\[rank [1-9]\]" "$work/bad.txt" || fail "$name: other ranks spoke too:
$(cat "$work/bad.txt")"
  echo "ok: $name: $(grep -m1 -- "$pattern" "$work/bad.txt")"
}
expect_error "seq-len 0" 2 "--seq-len must be at least 1" --data "$corpus" --seq-len 0
expect_error "unknown dataset" 2 "nosuch" --data "$corpus" --weights nosuch=1
expect_error "negative weight" 2 "weights must be >= 0" --data "$corpus" --weights a=-1
expect_error "all weights 0" 2 "every dataset has weight 0" --data "$corpus" --weights a=0,b=0
expect_error "more ranks than logical shards" 4 "4 ranks but only 2 logical shards" \
  --data "$corpus" --logical-shards 2
expect_error "missing --data" 2 "--data is required" --steps 1
expect_error "--direct-io yes" 2 "--direct-io: Check yes value in {" --data "$corpus" --direct-io yes
expect_error "--io-depth 5000" 2 "--io-depth 5000 is above the maximum of 4096" --data "$corpus" \
  --io-depth 5000

# --- --io-depth auto shares 128 reads in flight among the ranks of a node (all of them here). ---
# depth_of NP ARGS...: the reads in flight every rank's loader says it keeps (its debug line).
depth_of() {
  local np=$1; shift
  $MPIRUN -np "$np" "$STOKER" -v run --data "$corpus" --steps 2 "$@" > "$work/depth.txt" 2>&1 ||
    { cat "$work/depth.txt" >&2; fail "stoker -v run $* at $np ranks failed"; }
  sed -n 's/.*rank [0-9]*: reading with [a-z]*, \([0-9]*\) reads in flight.*/\1/p' \
    "$work/depth.txt" | sort -u | paste -sd' '
}
expect_error "--io-depth 0" 2 "0: give 1 or more, or auto" --data "$corpus" --io-depth 0
for case in "1 128 auto" "2 64 auto" "4 32 auto" "2 8 8"; do
  read -r np want flag <<< "$case"
  got=$(depth_of "$np" --io-depth "$flag")
  [ "$got" = "$want" ] || fail "--io-depth $flag at $np ranks: ranks keep '$got' reads in flight, not $want"
done
[ "$(depth_of 2)" = 64 ] || fail "the default --io-depth at 2 ranks is not auto's 64"
echo "ok: --io-depth auto gives each of 1, 2, 4 ranks of a node 128, 64, 32 reads; a number is kept"

# --- --help explains every option of the issue. ---
"$STOKER" run --help > "$work/help.txt" 2>&1 || fail "stoker run --help failed"
for option in --data --weights --seq-len --batch-size --steps --seed --logical-shards --eos-id \
              --bos-id --prefetch --read-ahead --io-depth --io-engine --direct-io --dump --config; do
  grep -q -- "$option" "$work/help.txt" || fail "run --help does not mention $option"
done
echo "ok: --help mentions every option"

# --- A stop signal stops the run at the next step, saved: SIGUSR1 to mpirun (which passes it
# on), SIGTERM to the ranks (as Slurm sends it). Exit 0, the stop logged, the step complete. ---
for sig in USR1 TERM; do
  ck="$work/stop-$sig"
  $MPIRUN -np 2 "$STOKER" run --data "$corpus" --steps 100000000 --seq-len 64 --batch-size 2 \
    --checkpoint-dir "$ck" --save-every 20 > "$work/stop-$sig.out" 2> "$work/stop-$sig.err" &
  pid=$!
  for _ in $(seq 600); do  # until both ranks stream and step 20 is saved
    [ "$(find "$ck/step-20/loader" -name '*.ckpt' 2> /dev/null | wc -l)" = 2 ] && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  if [ "$sig" = USR1 ]; then kill -USR1 "$pid"; else pkill -TERM -P "$pid"; fi
  wait "$pid" || { cat "$work/stop-$sig.err" >&2; fail "stopped by SIG$sig, the run exited $?"; }
  grep -q "run: stopping at step .* on signal; saved" "$work/stop-$sig.err" ||
    fail "SIG$sig: no stop message: $(tail -3 "$work/stop-$sig.err")"
  end=$(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); assert r["stopped_early"], r; print(r["end_step"])' "$work/stop-$sig.out") ||
    fail "SIG$sig: the result line does not say the run stopped early"
  "$STOKER" inspect "$ck/step-$end" > /dev/null || fail "SIG$sig: step-$end is not complete"
done
echo "ok: SIGUSR1 and SIGTERM stop the run at a step, saved, exit 0"

# --- Saves keep the ranks together: rank 0's checkpoint writes slowed (each fsync 300 ms), the
# other rank waits for it at the next save; the JSON line says how long. ---
STOKER_FAULTS="fsync:.ckpt:*:delay=300:rank=0" run_ok 2 "$work/slow-saves" --data "$corpus" \
  --seq-len 15 --batch-size 2 --steps 6 --save-every 1 --checkpoint-dir "$work/slow-ck"
python3 - "$work/slow-saves.out" "$work/slow-ck" <<'EOF' ||
import json, os, sys
line = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
wait = line["max_save_wait_seconds"]
steps = sorted(os.listdir(sys.argv[2]))
problems = []
if not 0.2 <= wait < 5:
    problems.append(f"max_save_wait_seconds {wait}: the other rank did not wait for rank 0's saves")
if [s for s in steps if s.startswith("step-")] != [f"step-{n}" for n in range(1, 7)]:
    problems.append(f"step folders {steps}")
sys.exit("\n".join(problems) or None)
EOF
  fail "saves with rank 0's writes slowed: $(tail -3 "$work/slow-saves.out")"
echo "ok: a rank waits at a save for a slower one (max_save_wait_seconds in the JSON line)"

# --- Exactly once through the dumps, at 1, 2 and 3 ranks, datasets dealt and walked. ---
# With default weights each dataset gets its share of tokens, so 3 passes' worth of the whole
# corpus per rank takes every rank well into epoch 1 of every dataset, whatever its share. Epoch 0
# is the documents the pieces say are of epoch 0, checked to be every document once; walked
# (--deal-max-docs 0), a rank's part of it is the documents of its logical shards, in a row.
total=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["total_tokens"] + j["total_docs"])' "$work/inspect.json")
seq=64 batch=4
steps=$(( (3 * total + batch * (seq + 1) - 1) / (batch * (seq + 1)) ))
for case in "1 65536 1048576" "2 7 0" "2 7 1048576" "3 100 1048576"; do
  read -r np shards deal <<< "$case"
  run_ok "$np" "$work/once$np-$deal" --data "$corpus" --seq-len $seq --batch-size $batch \
    --steps $steps --logical-shards "$shards" --deal-max-docs "$deal" --dump "$work/once$np-$deal"
  python3 - "$work/inspect.json" "$work/once$np-$deal" "$np" "$shards" "$deal" <<'EOF' ||
import json, struct, sys
inspect, dump, world, shards = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
walked = int(sys.argv[5]) == 0
names = sorted(inspect["datasets"])
starts, at = {}, 0
for name in names:  # synth --unique-tokens: values of dataset after dataset, in name order
    starts[name] = at
    at += inspect["datasets"][name]["tokens"]
eos = at  # synth --unique-tokens: eos_id = total tokens
problems = []

def dataset_of(value):
    for name in reversed(names):
        if value >= starts[name]:
            return name

def cut(n, parts, part):
    return n * part // parts

def share(docs, rank):  # documents in the logical shards `rank` owns (order/partition.h)
    first, last = cut(shards, world, rank), cut(shards, world, rank + 1)
    return cut(docs, shards, last) - cut(docs, shards, first)

per_rank = []  # per rank: {dataset: [[first value, length or None, epoch], ...] in the order begun}
for rank in range(world):
    data = open(f"{dump}/rank-{rank}.bin", "rb").read()
    tokens = struct.unpack(f"<{len(data) // 8}q", data)
    raw = open(f"{dump}/rank-{rank}.pieces", "rb").read()
    pieces = struct.unpack(f"<{len(raw) // 8}Q", raw)
    docs = {name: [] for name in names}
    open_docs = {}  # (dataset, doc, epoch) -> (its entry in docs, its tokens so far)
    at = 0
    for k in range(0, len(pieces), 5):  # a document cut by a step's end may go on after others
        dataset, doc, epoch, first, count = pieces[k:k + 5]
        name, key, piece = names[dataset], (dataset, doc, epoch), tokens[at:at + count]
        at += count
        if first == 0 and key not in open_docs:
            entry = [piece[0], None, epoch]
            docs[name].append(entry)
            open_docs[key] = (entry, [])
        elif key not in open_docs or len(open_docs[key][1]) != first:
            problems.append(f"rank {rank}: a piece of {key} from {first} goes on from nothing")
            break
        entry, current = open_docs[key]
        for i, t in enumerate(piece):
            if t == eos:
                if not current or i != len(piece) - 1:
                    problems.append(f"rank {rank}: EOS of {key} not after its tokens, at its end")
                entry[1] = len(current)
                del open_docs[key]
            elif current and t != current[-1] + 1:
                problems.append(f"rank {rank}: token {t} follows {current[-1]} inside a document")
            elif not current and dataset_of(t) != name:
                problems.append(f"rank {rank}: a document of {name} begins with {t}")
            else:
                current.append(t)
    per_rank.append(docs)

for name in names:
    n, count, begin = inspect["datasets"][name]["docs"], inspect["datasets"][name]["tokens"], starts[name]
    epoch0 = []
    for rank in range(world):
        got = per_rank[rank][name]
        epochs = [e for _, _, e in got]
        if epochs != sorted(epochs) or not epochs or epochs[-1] == 0:
            problems.append(f"rank {rank}, dataset {name}: epochs begun in the order {epochs[:50]}")
        mine = [(first, length) for first, length, e in got if e == 0]
        epoch0 += mine
        if not walked and world > 1:
            continue
        want = share(n, rank)  # walked: the documents of its logical shards, in a row
        firsts = [first for first, _, _ in got]
        repeat = next((i for i, v in enumerate(firsts) if v in firsts[:i]), None)
        if repeat is None or repeat < want or len(mine) != want:
            problems.append(f"rank {rank}, dataset {name}: first repeat at document {repeat}, "
                            f"{len(mine)} documents of epoch 0; want {want}, then a repeat")
    epoch0.sort()
    at = begin
    for first, length in epoch0:
        if length is None:
            problems.append(f"dataset {name}: a document of epoch 0 from value {first} never ended")
            break
        if first != at:
            problems.append(f"dataset {name}: epoch 0 over {world} ranks goes from value {at} to {first}")
            break
        at += length
    if at != begin + count or len(epoch0) != n:
        problems.append(f"dataset {name}: epoch 0 delivered {len(epoch0)} documents ending at value {at}; want {n} ending at {begin + count}")
sys.exit("\n".join(problems[:20]) or None)
EOF
    fail "exactly once through the dumps at $np ranks, $shards logical shards, --deal-max-docs $deal"
  echo "ok: exactly once through the dumps at $np ranks, $shards logical shards, --deal-max-docs $deal ($steps steps)"
done
