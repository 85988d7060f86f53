#!/usr/bin/env bash
# `stoker run --weights-schedule` end to end, at 2 ranks: the inline form, a TOML file, a JSON
# file and a --config key give the same bytes; a one-entry schedule is --weights; the shares per
# window of steps, read from the dumps' pieces, follow the jumps and the ramp; a resume with the
# same schedule goes on bit for bit and one with another schedule says so; `stoker inspect` shows
# the schedule a checkpoint ran under with the entry in force; bad schedules stop the run with
# one message, printed once.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work mixing

run_ok() {
  local log=$1; shift
  $MPIRUN -np 2 "$STOKER" run "$@" > "$log.out" 2> "$log.err" ||
    { cat "$log.out" "$log.err" >&2; fail "stoker run $* failed"; }
}
same() {  # same DUMP1 DUMP2 WHAT: every rank's tokens and pieces equal
  for f in rank-0.bin rank-1.bin rank-0.pieces rank-1.pieces; do
    cmp -s "$1/$f" "$2/$f" || fail "$3: $f differs"
  done
  echo "ok: $3"
}

corpus="$work/corpus"
"$STOKER" synth "$corpus" --dataset code:300K:200 --dataset math:200K:100 --dataset web:600K:80 \
  --files 2 --seed 4 > "$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; fail "synth"; }
base=(--data "$corpus" --seq-len 255 --batch-size 4)
args=("${base[@]}" --steps 120)
inline="0:web=0.7,code=0.3;40:web=0.2,code=0.3,math=0.5;~80:web=1"

# --- One schedule, four ways of writing it: the same bytes. ---
cat > "$work/schedule.toml" <<'EOF'
# annealing onto web
[[schedule]]
step = 0
weights = { web = 0.7, code = 0.3 }

[[schedule]]
step = 40
weights = { web = 0.2, code = 0.3, math = 0.5 }

[[schedule]]
step = 80
ramp = true
weights = { web = 1 }
EOF
cat > "$work/schedule.json" <<'EOF'
{"schedule": [{"step": 0, "weights": {"web": 0.7, "code": 0.3}},
              {"step": 40, "weights": {"web": 0.2, "code": 0.3, "math": 0.5}},
              {"step": 80, "ramp": true, "weights": {"web": 1}}]}
EOF
printf 'weights-schedule = "%s"\n' "$inline" > "$work/run.toml"
run_ok "$work/inline" "${args[@]}" --weights-schedule "$inline" --dump "$work/d-inline"
run_ok "$work/toml" "${args[@]}" --weights-schedule "$work/schedule.toml" --dump "$work/d-toml"
run_ok "$work/json" "${args[@]}" --weights-schedule "$work/schedule.json" --dump "$work/d-json"
run_ok "$work/config" "${args[@]}" --config "$work/run.toml" --dump "$work/d-config"
same "$work/d-inline" "$work/d-toml" "a TOML schedule file is the inline form"
same "$work/d-inline" "$work/d-json" "a JSON schedule file is the inline form"
same "$work/d-inline" "$work/d-config" "weights-schedule in --config is the option"
run_ok "$work/plain" "${args[@]}" --weights web=7,code=3 --dump "$work/d-plain"
run_ok "$work/one" "${args[@]}" --weights-schedule "0:web=7,code=3" --dump "$work/d-one"
same "$work/d-plain" "$work/d-one" "--weights is the schedule of one entry"

# --- Shares per window of 20 steps over both ranks, from the pieces (dataset, count). ---
/usr/bin/python3 - "$work/d-inline" <<'EOF' || fail "the shares do not follow the schedule"
import struct, sys
batch, window = 4 * 256, 20  # tokens per batch per rank; steps per window
# The schedule's weights (code, math, web) at the step a batch is planned at: the rule, written
# apart from stoker's code.
def weights(step):
    if step < 40:
        return [0.3, 0.0, 0.7]
    t = min(1.0, (step - 40) / 40)
    return [(1 - t) * a + t * b for a, b in zip([0.3, 0.5, 0.2], [0.0, 0.0, 1.0])]
got = [[0.0] * 3 for _ in range(120 // window)]
for rank in (0, 1):
    data = open(f"{sys.argv[1]}/rank-{rank}.pieces", "rb").read()
    delivered = 0
    for i in range(len(data) // 40):
        d, _, _, _, count = struct.unpack_from("<5Q", data, 40 * i)
        while count:
            take = min(count, batch - delivered % batch)
            got[delivered // batch // window][d] += take
            delivered += take
            count -= take
bad = 0
for w, tokens in enumerate(got):
    want = [sum(weights(s)[d] for s in range(w * window, (w + 1) * window)) / window
            for d in range(3)]
    shares = [t / sum(tokens) for t in tokens]
    line = " ".join(f"{s:.3f}/{x:.3f}" for s, x in zip(shares, want))
    ok = all(abs(s - x) < 0.04 for s, x in zip(shares, want))
    bad += not ok
    print(f"{'ok' if ok else 'FAIL'}: steps {w * window}-{(w + 1) * window}: share/weight {line}")
sys.exit(bad)
EOF

# --- A checkpoint records its schedule; a resume goes on bit for bit or says what changed. ---
ckpt="$work/ckpt"
run_ok "$work/save" "${base[@]}" --weights-schedule "$inline" --steps 60 \
  --checkpoint-dir "$ckpt" --save-every 30
"$STOKER" inspect "$ckpt/step-60" > "$work/inspect.txt" 2>&1 || fail "inspect step-60"
grep -q "weight schedule: 3 entries; at step 60 entry 2 is in force, ramping to entry 3" \
  "$work/inspect.txt" || fail "inspect does not show the schedule: $(cat "$work/inspect.txt")"
grep -Eq "^> +40 +jump" "$work/inspect.txt" ||
  fail "inspect does not mark entry 2: $(cat "$work/inspect.txt")"
"$STOKER" inspect "$ckpt/step-60" --json > "$work/inspect.json" || fail "inspect --json"
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schedule_entry"] == 1, j["schedule_entry"]
assert [e["step"] for e in j["schedule"]] == [0, 40, 80], j["schedule"]
assert j["schedule"][2]["ramp"] and j["schedule"][2]["weights"]["web"] == 1.0, j["schedule"]
' "$work/inspect.json" || fail "inspect --json: $(cat "$work/inspect.json")"
echo "ok: inspect shows the schedule and the entry in force"
run_ok "$work/resume" "${args[@]}" --weights-schedule "$inline" --checkpoint-dir "$ckpt" \
  --resume --dump "$work/d-resume"
for r in 0 1; do
  cmp -s <(tail -c +$((60 * 4 * 256 * 8 + 1)) "$work/d-inline/rank-$r.bin") \
    "$work/d-resume/rank-$r.bin" ||
    fail "rank $r: resumed at step 60 in the ramp, the tokens differ from the run that went on"
done
echo "ok: a resume in the middle of a ramp goes on bit for bit"
run_ok "$work/changed" "${args[@]}" --weights-schedule "0:web=0.7,code=0.3;60:math=1" \
  --checkpoint-dir "$ckpt" --resume
grep -q "resume at step 60: mixing weights math=1 where the saved run had" "$work/changed.err" ||
  fail "a changed schedule is not reported: $(cat "$work/changed.err")"
echo "ok: a resume with other weights says so"

# --- Bad schedules: one message, printed once. ---
expect_error() {
  local name=$1 pattern=$2; shift 2
  local rc=0 count
  $MPIRUN -np 2 "$STOKER" run --data "$corpus" --steps 2 "$@" > "$work/bad.txt" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "$name: exited 0"
  count=$(grep -c -- "$pattern" "$work/bad.txt" || true)
  [ "$count" = 1 ] || fail "$name: '$pattern' printed $count times, not once:
$(cat "$work/bad.txt")"
  echo "ok: $name: $(grep -m1 -- "$pattern" "$work/bad.txt")"
}
expect_error "both" "excludes" --weights web=1 --weights-schedule "0:web=1"
expect_error "both in --config" "exclude each other" --config "$work/run.toml" --weights web=1
expect_error "no such file" "--weights-schedule nofile.toml: no such file" \
  --weights-schedule nofile.toml
expect_error "not a step" "'x'" --weights-schedule "0:web=1;x:code=1"
expect_error "not increasing" "does not come after" --weights-schedule "0:web=1;10:code=1;5:web=1"
expect_error "unknown dataset" "entry 2 (step 10) names dataset books" \
  --weights-schedule "0:web=1;10:books=1"
expect_error "ramp first" "ramp" --weights-schedule "~0:web=1"
echo "mixing: all checks passed"
