# Sourced by every test script (tests/cli, tests/install, tests/slurm): what they share.

# fail MESSAGE...: prints "FAIL: MESSAGE" on stderr (with "($FAIL_CONTEXT)" when the script set
# it, e.g. the seed that reproduces a soak) and exits 1, which fails the test.
fail() { echo "FAIL${FAIL_CONTEXT:+ ($FAIL_CONTEXT)}: $*" >&2; exit 1; }

# make_work NAME: $work becomes a new temporary folder, removed when the script exits.
make_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-$1.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# audit NAME EXPECTED_RC ARGS...: `$STOKER audit ARGS` (stdout $work/NAME.out, stderr NAME.err);
# fails unless it exits EXPECTED_RC.
audit() {
  local name=$1 expected=$2 rc=0
  shift 2
  timeout 60 "$STOKER" audit "$@" > "$work/$name.out" 2> "$work/$name.err" || rc=$?
  [ "$rc" = "$expected" ] ||
    { cat "$work/$name.out" "$work/$name.err" >&2; fail "$name: stoker audit exited $rc, not $expected"; }
}

# job_corpus: a small corpus in $work/corpus for the job-script tests (`stoker synth`: datasets
# web and code, 2 files), which train a tiny model on it; fails the test with synth's log.
job_corpus() {
  "$STOKER" synth "$work/corpus" --dataset web:20000:200 --dataset code:10000:200 --files 2 \
    > "$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
}
