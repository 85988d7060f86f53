# shellcheck shell=bash
# Sourced by the multi-node tests: the test library, the test bed, and multinode_start.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../common/test_lib.sh"
source "$here/testbed.sh"

# multinode_start: 3 nodes of 2 slots (testbed_start: exit 77 where they cannot be made); $work,
# a folder removed with the test bed; $corpus, a small corpus of two datasets in it.
multinode_start() {
  # The program and the sources may be in a checkout under /tmp, which each node has its own of.
  export TESTBED_SHARED="$STOKER ${STOKER_TRAIN:-} ${STOKER_SOURCE:-} ${STOKER_PYTHONPATH:-}"
  testbed_start 3 2
  work="$TESTBED_DIR/work"
  corpus="$work/corpus"
  mkdir -p "$work"
  "$STOKER" synth "$corpus" --dataset a:4000:30 --dataset b:2000:50 --files 3 --seed 5 \
    > "$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
}

# audit_clean TRACE [RUNS]: `stoker audit` of TRACE finds every token of the chain once, in runs
# "WORLD:START-END ..." when RUNS is given; fails the test otherwise.
audit_clean() {
  local name="audit-${1##*/}"
  audit "$name" 0 "$1" --data "$corpus" --json
  python3 - "$work/$name.out" "${2:-}" <<'PY' || fail "the audit of $1: $(head -c 2000 "$work/$name.out")"
import json, sys
report = json.load(open(sys.argv[1]))
runs = [f"{r['world_size']}:{r['start_step']}-{r['valid_end']}" for r in report["runs"]]
assert report["clean"], report["problems"][:5]
assert not sys.argv[2] or " ".join(runs) == sys.argv[2], runs
PY
}
