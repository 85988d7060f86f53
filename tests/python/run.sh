#!/usr/bin/env bash
# run.sh N: the Python package's tests (test_*.py here) under pytest on N ranks of mpirun, against
# a corpus of unique token values and the C++ stream of the same configuration (`stoker run
# --dump`) at N ranks. Environment: STOKER, MPIRUN, STOKER_PYTHONPATH (tests/python/CMakeLists.txt).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?}" "${MPIRUN:?}" "${STOKER_PYTHONPATH:?}"
ranks=${1:?ranks}
make_work python

"$STOKER" synth "$work/corpus" --dataset a:60000:40 --dataset b:30000:90 --dataset c:6000:12 \
  --files 2 --seed 9 --unique-tokens > "$work/synth.log" 2>&1 ||
  { cat "$work/synth.log" >&2; fail "stoker synth failed"; }
# The C++ stream the Python one must equal byte for byte (test_loader.py, DUMP_* there).
$MPIRUN -np "$ranks" "$STOKER" run --data "$work/corpus" --seq-len 31 --batch-size 3 --seed 4 \
  --weights a=0.5,b=0.3,c=0.2 --steps 40 --dump "$work/dump" > "$work/dump.log" 2>&1 ||
  { cat "$work/dump.log" >&2; fail "stoker run --dump failed"; }

export PYTHONPATH="$STOKER_PYTHONPATH" STOKER_TEST_CORPUS="$work/corpus" STOKER_TEST_DUMP="$work/dump"
export STOKER_TEST_WORK="$work"
# Each rank's own pytest; mpirun exits non-zero when any rank's does. Rank 0 prints the report,
# the others their failures only.
$MPIRUN -np "$ranks" bash -c 'if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then q=-q; else q="-q --no-header -rN"; fi
  exec /usr/bin/python3 -m pytest $q -p no:cacheprovider --color=no "$0"' "$(dirname "$0")" ||
  fail "pytest failed on $ranks ranks"
echo "PASS"
