#!/usr/bin/env bash
# The crash-and-resume soak: `stoker run` on 1..4 ranks, saving every 1 or 2 steps and tracing
# every batch (--trace), is killed with SIGKILL -- mpirun and every rank: the whole session that
# setsid started -- at random moments drawn from a seeded generator (SOAK_SEED, default 1,
# printed), at least SOAK_KILLS (default 22) times, and resumed each time with --resume on a
# rank count drawn at random (so often another one: a rescale). In about half the rounds every
# rank's checkpoint fsync is slowed down through the I/O seam (STOKER_FAULTS=fsync:.ckpt:*:
# delay=MS, for testing only) so that kills land while a step folder is being written; after
# each kill the script counts whether a step folder was left incomplete (a kill during a save),
# and checks that no process of the killed run is left running. Some rounds are killed during
# start-up. The script never cleans up: each resumed run itself sets aside the step folders a
# killed save left incomplete above the step it resumes from (PrepareResume renames them
# step-<N>.interrupted), so that its saves never complete them with files of its own; the script
# counts them at the end.
# At the end a last run to a fixed step, past epoch 0 of every dataset, then `stoker audit TRACE
# --data CORPUS` must be clean: over the whole chain, counting only steps that were saved, every
# framed token is delivered exactly once, and every dataset's epoch 0 is delivered whole.
# Prints: kills, kills during saves, rescales, steps, tokens checked.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags); SOAK_SEED, SOAK_KILLS;
# SOAK_KEEP=1 keeps the work folder.
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"
seed=${SOAK_SEED:-1}
kills_wanted=${SOAK_KILLS:-22}
RANDOM=$seed  # every draw below comes from this stream
echo "soak: SOAK_SEED=$seed SOAK_KILLS=$kills_wanted (rerun with the same values to reproduce)"

work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-soak.XXXXXX")
group=""
cleanup() {
  [ -z "$group" ] || kill_run || true
  if [ -n "${SOAK_KEEP:-}" ]; then echo "soak: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
# shellcheck disable=SC2034  # read by fail(), tests/common/test_lib.sh
FAIL_CONTEXT="SOAK_SEED=$seed"
start=$SECONDS

corpus="$work/corpus" tr="$work/trace" ck="$work/ckpt"
"$STOKER" synth "$corpus" --dataset a:6000:40 --dataset b:3000:80 --dataset c:1500:15 --files 2 \
  --seed "$seed" --unique-tokens > "$work/synth.log" 2>&1 ||
  { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
"$STOKER" inspect "$corpus" --json > "$work/inspect.json"
seq=31 batch=2
common=(--data "$corpus" --seq-len "$seq" --batch-size "$batch" --logical-shards 16 --seed 4
        --trace "$tr" --checkpoint-dir "$ck" --resume)

# steps.py DIR: "NEWEST_COMPLETE WORLD" of the checkpoint folder (-1 0 when none); with
# --incomplete, the incomplete step folders above it with their files, one "STEP:file,file" per
# line (for comparing before and after a kill). Reads the folder while a run may write into it.
cat > "$work/steps.py" <<'EOF'
import os, re, sys
root = sys.argv[1]
best, world, incomplete = -1, 0, []
for name in sorted(os.listdir(root) if os.path.isdir(root) else []):
    m = re.fullmatch(r"step-(\d+)", name)
    if not m:
        continue
    try:  # the run being watched may set the folder aside meanwhile
        files = sorted(os.listdir(os.path.join(root, name, "loader")))
    except FileNotFoundError:
        files = []
    named = [f for f in files if re.fullmatch(r"rank-\d{5}-of-\d{5}\.ckpt", f)]
    worlds = {int(f.split("-of-")[1][:5]) for f in named}
    ranks = {f for f in files if f.endswith(".ckpt")}
    step = int(m.group(1))
    partial = any(f.endswith(".tmp") for f in files)
    if len(worlds) == 1 and len(ranks) == next(iter(worlds)) and not partial:
        if step > best:
            best, world = step, next(iter(worlds))
    else:
        incomplete.append(f"{step}:{','.join(files)}")
if sys.argv[2:] != ["--incomplete"]:
    print(best, world)
for line in incomplete if sys.argv[2:] == ["--incomplete"] else []:
    if int(line.split(":")[0]) > best:
        print(line)
EOF
steps() { python3 "$work/steps.py" "$ck" "$@"; }

# True while process $1 runs (a zombie waiting to be reaped does not count: it holds no files).
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2> /dev/null || true)
  [ -n "$state" ] && [[ $state != Z* ]]
}

# The processes of the run's session (setsid made mpirun its leader; the ranks, each in a process
# group of its own, stay in it) that still run.
running() {
  local pid
  for pid in $(pgrep -s "$group" || true); do
    if alive "$pid"; then echo "$pid"; fi
  done
}

# Kills the run: mpirun first (so that it starts no more ranks), then every process of its
# session, until none is left running: no orphan rank may go on writing checkpoints or traces.
kill_run() {
  local pids i
  kill -9 "$group" 2> /dev/null || true
  for ((i = 0; i < 600; ++i)); do  # 30 s: SIGKILL takes milliseconds; a bound for the message
    mapfile -t pids < <(running)
    [ "${#pids[@]}" != 0 ] || break
    kill -9 "${pids[@]}" 2> /dev/null || true
    sleep 0.05
  done
  [ -z "$(running)" ] || fail "processes of the killed run still running: $(running)"
  group=""
}

kills=0 during_save=0 early=0 rescales=0 round=0 removed=0
while [ "$kills" -lt "$kills_wanted" ]; do
  round=$((round + 1))
  [ "$round" -le $((kills_wanted * 2)) ] || fail "only $kills kills in $round rounds"
  read -r saved world < <(steps)
  before=$(steps --incomplete)
  np=$((RANDOM % 4 + 1))
  every=$((RANDOM % 2 + 1))
  faults=""
  [ $((RANDOM % 2)) = 0 ] || faults="fsync:.ckpt:*:delay=$((RANDOM % 40 + 20))"
  [ "$world" = 0 ] || [ "$world" = "$np" ] || rescales=$((rescales + 1))
  log="$work/round-$round"
  STOKER_FAULTS=$faults setsid $MPIRUN -np "$np" "$STOKER" -q run "${common[@]}" --steps 100000000 \
    --save-every "$every" > "$log.out" 2> "$log.err" &
  group=$!
  disown "$group"  # no "Killed" notice per round; alive() does not count it once it is a zombie
  if [ $((RANDOM % 5)) = 0 ]; then  # during start-up or the first steps
    sleep "$((RANDOM % 15 / 10)).$((RANDOM % 10))"
    early=$((early + 1))
  else  # once this run has saved a step, a little later
    for ((i = 0; i < 200; ++i)); do
      read -r now _ < <(steps)
      [ "$now" -le "$saved" ] || break
      alive "$group" || break
      sleep 0.05
    done
    sleep "0.$((RANDOM % 6))$((RANDOM % 10))"
  fi
  alive "$group" ||
    { cat "$log.out" "$log.err" >&2; fail "round $round: the run ended before it was killed"; }
  kill_run
  kills=$((kills + 1))
  after=$(steps --incomplete)
  # A step folder left incomplete that this round wrote into: the kill caught a save.
  new=$(comm -13 <(echo "$before" | sort) <(echo "$after" | sort) | grep -v '^$' || true)
  if [ -n "$new" ]; then
    during_save=$((during_save + 1))
  fi
  read -r saved_now _ < <(steps)
  echo "round $round: $np ranks, save every $every${faults:+, $faults}: killed; newest complete" \
       "step $saved -> $saved_now"
done

# The last run, to a fixed step past epoch 0 of every dataset (~10,800 framed tokens, 64 per
# step and rank: 170 steps at 1 rank), on 2 ranks (a rescale if the last kill left another
# count), saving every step: every step of it counts.
read -r saved world < <(steps)
final=$((saved > 380 ? saved + 20 : 400))
[ "$world" = 0 ] || [ "$world" = 2 ] || rescales=$((rescales + 1))
timeout 120 $MPIRUN -np 2 "$STOKER" -q run "${common[@]}" --steps "$final" --save-every 1 \
  > "$work/final.out" 2> "$work/final.err" ||
  { cat "$work/final.out" "$work/final.err" >&2; fail "the final run to step $final failed"; }
removed=$(find "$ck" -mindepth 1 -maxdepth 1 -name 'step-*.interrupted*' | wc -l)
# On failure: the first problems and the runs (world, start, valid end, recorded end).
cat > "$work/problems.py" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(r["problem_count"], "problems:", *r["problems"][:10], "runs:",
      *[(x["world_size"], x["start_step"], x["valid_end"], x["recorded_end"]) for x in r["runs"]],
      sep="\n")
EOF
timeout 120 "$STOKER" audit "$tr" --data "$corpus" --json > "$work/audit.json" \
  2> "$work/audit.err" ||
  { python3 "$work/problems.py" "$work/audit.json" >&2 || true
    cat "$work/audit.err" >&2; fail "stoker audit is not clean"; }
python3 - "$work/audit.json" "$work/inspect.json" "$final" "$kills" "$during_save" "$rescales" \
  "$early" "$removed" <<'EOF' || fail "the audit's figures are wrong"
import json, sys
report, inspect = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
final, kills, during, rescales, early, removed = (int(x) for x in sys.argv[3:9])
problems = []
if not report["clean"] or report["problem_count"] != 0:
    problems.append(f"not clean: {report['problems'][:5]}")
if report["runs"][-1]["valid_end"] != final:
    problems.append(f"the chain ends at step {report['runs'][-1]['valid_end']}, not {final}")
if report["steps"] != final:
    problems.append(f"{report['steps']} steps counted, not {final}")
for name, d in inspect["datasets"].items():
    got = report["datasets"].get(name)
    e0 = got and got["epochs"] and got["epochs"][0]
    whole = e0 and e0.get("whole_documents") == got["nonempty_docs"]
    if not whole or e0["tokens"] != d["tokens"] + got["nonempty_docs"]:
        problems.append(f"dataset {name}: epoch 0 not delivered whole: {e0}")
sys.exit("\n".join(problems) or print(
    f"soak: {kills} kills ({during} during saves, {early} during start-up or first steps), "
    f"{removed} interrupted step folders set aside by resumed runs, {rescales} rescales, "
    f"{len(report['runs'])} runs in the chain, {report['steps']} steps, "
    f"{report['tokens_checked']} tokens checked, epoch 0 of {len(inspect['datasets'])} datasets "
    f"whole: clean"))
EOF
[ "$during_save" -ge 1 ] || fail "no kill landed during a save"
echo "ok: soak (SOAK_SEED=$seed) in $((SECONDS - start)) s"
