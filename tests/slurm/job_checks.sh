# shellcheck shell=bash
# What the job tests (jobs.sh, python_jobs.sh) check and how; sourced after tests/common/
# test_lib.sh (fail), with `work` set to the test's temporary folder and STOKER to the program.
#   make_corpus DIR             three datasets of text from this machine through `stoker pack`'s
#                               byte tokenizer (vocab 258): licenses, headers, copyright
#   ok WHAT...                  a check passed: printed now and kept for the summary (`checked`)
#   run_field FILE INDEX FIELD  FIELD of the INDEX-th (from 0; -1: last) JSON line of FILE
#   expect FILE INDEX FIELD VALUE WHAT   a field of a run's result line, or fail
#   expect_log FILE TEXT WHAT   FILE has a line with TEXT, or fail
#   wait_job ID TIMEOUT WHAT    the job must end COMPLETED with exit code 0
#   complete_steps DIR          the complete step numbers under DIR, checked independently of
#                               the job scripts
#   preempt_after ID DIR STEP OUT WHAT   once job ID has saved a complete step after STEP in
#                               DIR, `scancel --batch --signal=USR1` (a preemption warning); fails
#                               showing OUT when none comes within 120 s
#   audit_history TRACE STEPS RUNS   `stoker audit TRACE --data $corpus` is clean, its runs are
#                               RUNS ("START:RANKS ..."), its valid steps 1 to STEPS; the report
#                               is left in $work/audit.json

checked=()
ok() {
  checked+=("$*")
  echo "ok: $*"
}

make_corpus() {
  local out=$1 licenses headers copyrights
  shopt -s nullglob
  licenses=(/usr/share/common-licenses/*)
  headers=(/usr/include/*.h)
  copyrights=(/usr/share/doc/*/copyright)
  shopt -u nullglob
  [ ${#licenses[@]} -ge 5 ] && [ ${#headers[@]} -ge 20 ] && [ ${#copyrights[@]} -ge 20 ] ||
    fail "too few text files for a corpus: ${#licenses[@]} licenses, ${#headers[@]} headers," \
         "${#copyrights[@]} copyright files"
  _pack "$out" licenses "${licenses[@]}"
  _pack "$out" headers "${headers[@]:0:40}"
  _pack "$out" copyright "${copyrights[@]:0:60}"
}

_pack() {
  local out=$1 name=$2
  shift 2
  "$STOKER" pack "$@" --out "$out/$name" --format text > "$work/pack-$name.log" 2>&1 ||
    { cat "$work/pack-$name.log" >&2; fail "stoker pack of $name"; }
}

run_field() {
  python3 - "$@" <<'EOF'
import json, sys
path, index, field = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = [json.loads(l) for l in open(path) if l.startswith("{")]
value = runs[index][field] if -len(runs) <= index < len(runs) else "<no run %d>" % index
print(json.dumps(value) if not isinstance(value, str) else value)
EOF
}
json_lines() {
  grep -c '^{' "$1" || true
}
# expect FILE INDEX FIELD VALUE WHAT: a field of a run's result line.
expect() {
  local got
  got=$(run_field "$1" "$2" "$3")
  [ "$got" = "$4" ] || fail "$5: $3 is $got, not $4, in result $2 of $1: $(grep '^{' "$1")"
}
expect_log() {
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$3: the log has no line with: $2"; }
}
show_job_output() {
  cat "$work"/*-"$1".out >&2 || true
}
# wait_job ID TIMEOUT WHAT: the job must end COMPLETED with exit code 0.
wait_job() {
  local state
  state=$(slurm_wait_done "$1" "$2") || { show_job_output "$1"; fail "$3: still running"; }
  [ "$state" = COMPLETED ] && [ "$(slurm_field "$1" ExitCode)" = 0:0 ] ||
    { show_job_output "$1"; fail "$3: job $1 ended $state, exit $(slurm_field "$1" ExitCode)"; }
}
# complete_steps DIR: the complete step numbers under DIR, checked independently of the job
# scripts: the trainer's three files and one loader file per rank of one world size.
complete_steps() {
  local d worlds
  for d in "$1"/step-*; do
    [ -s "$d/model.pt" ] && [ -s "$d/optimizer.pt" ] && [ -s "$d/trainer.json" ] || continue
    # The world size of each rank file: as many files as the one world size says.
    worlds=$(find "$d/loader" -maxdepth 1 -name 'rank-*-of-*.ckpt' 2> /dev/null |
             sed -n 's/.*-of-0*\([0-9]*\)\.ckpt$/\1/p')
    [ -n "$worlds" ] && [ "$(wc -l <<< "$worlds")" = "$(sort -u <<< "$worlds")" ] || continue
    echo "${d##*/step-}"
  done | sort -n
}
has_step_after() {
  local n
  for n in $(complete_steps "$1"); do [ "$n" -gt "$2" ] && return 0; done
  return 1
}
# The job was requeued, or it ended without that (a failure, found without waiting for long).
requeued_or_ended() {
  [ "$(slurm_field "$1" Restarts)" = 1 ] || _slurm_done "$1"
}

audit_history() {
  local trace=$1 steps=$2 runs=$3 rc=0
  "$STOKER" audit "$trace" --data "$corpus" --json > "$work/audit.json" 2> "$work/audit.err" ||
    rc=$?
  [ "$rc" = 0 ] || { cat "$work/audit.json" "$work/audit.err" >&2; fail "stoker audit: exit $rc"; }
  python3 - "$work/audit.json" "$steps" "$runs" <<'EOF' || fail "stoker audit of $trace"
import json, sys
audit = json.load(open(sys.argv[1]))
want_runs = sys.argv[3].split()
runs = [f"{r['start_step']}:{r['world_size']}" for r in audit["runs"]]
problems = []
if not audit["clean"] or audit["problem_count"]:
    problems.append(f"not clean: {audit['problems']}")
if runs != want_runs:
    problems.append(f"runs (start step:ranks) {runs}, expected {want_runs}")
if audit["steps"] != int(sys.argv[2]) or audit["runs"][-1]["valid_end"] != int(sys.argv[2]):
    problems.append(f"{audit['steps']} valid steps, expected {sys.argv[2]}")
sys.exit("; ".join(problems) if problems else 0)
EOF
}

preempt_after() {
  local id=$1 dir=$2 after=$3 out=$4 what=$5
  slurm_poll 120 "job $id's first complete checkpoint after step $after in $dir" \
    has_step_after "$dir" "$after" || { cat "$out" >&2 || true; fail "$what saved no step"; }
  [ "$(slurm_field "$id" JobState)" = RUNNING ] || fail "job $id is $(slurm_field "$id" JobState)"
  scancel --batch --signal=USR1 "$id"
}
