#!/usr/bin/env bash
# The Python package as Python users install things: in a fresh virtual environment (with the
# system's site packages, for numpy and mpi4py), `pip install --no-build-isolation --no-index`
# of the source tree (pyproject.toml, setup.py: CMake builds the module; this build's folder is
# reused through STOKER_PIP_BUILD_DIR, its settings left alone), then from outside the tree
# `import stoker` finds the environment's copy, which streams at 2 ranks under mpirun and
# resumes from its save; `pip uninstall stoker` removes every file it installed.
# Environment: STOKER_BUILD (this build), STOKER_SOURCE, MPIRUN.
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER_BUILD:?}" "${STOKER_SOURCE:?}" "${MPIRUN:?}"

make_work pip
unset PYTHONPATH
/usr/bin/python3 -m venv --system-site-packages "$work/venv" > "$work/venv.txt" 2>&1 ||
  fail "python3 -m venv: $(cat "$work/venv.txt")"
python="$work/venv/bin/python"
(cd "$STOKER_SOURCE" && STOKER_PIP_BUILD_DIR="$STOKER_BUILD" "$python" -m pip install \
  --no-build-isolation --no-index . > "$work/pip.txt" 2>&1) ||
  fail "pip install: $(tail -30 "$work/pip.txt")"
echo "ok: $(grep -m1 "Successfully installed" "$work/pip.txt")"

"$STOKER_BUILD/stoker" synth "$work/corpus" --dataset a:20000:40 --dataset b:8000:90 --files 2 \
  > /dev/null 2>&1 || fail "stoker synth failed"
cat > "$work/stream.py" <<'PY'
import os, sys
import numpy as np
import stoker
corpus, ckpt = sys.argv[1:3]
assert stoker.__file__.startswith(sys.prefix), f"stoker imported from {stoker.__file__}"
with stoker.Loader(corpus, seq_len=31, batch_size=2, tensors="numpy") as loader:
    rank = loader.rank
    first = [next(loader)["tokens"].copy() for _ in range(3)]
    loader.save(f"{ckpt}/step-3")
    after = next(loader)["tokens"].copy()
with stoker.Loader(corpus, seq_len=31, batch_size=2, tensors="numpy",
                   resume_from=f"{ckpt}/step-3") as resumed:
    assert np.array_equal(next(resumed)["tokens"], after), "the resume differs"
with open(f"{ckpt}/rank-{rank}.done", "w") as done:  # one file per rank: mpirun's merged
    done.write("3 batches, a save, a resume\n")       # output may run two ranks' lines together
PY
(cd "$work" && $MPIRUN -np 2 "$python" "$work/stream.py" "$work/corpus" "$work/ckpt" \
  > "$work/stream.txt" 2>&1) || fail "streaming from the environment: $(tail -20 "$work/stream.txt")"
for rank in 0 1; do
  grep -q "3 batches, a save, a resume" "$work/ckpt/rank-$rank.done" 2> /dev/null ||
    fail "rank $rank did not stream, save and resume: $(cat "$work/stream.txt")"
done
echo "ok: import stoker from the environment streams at 2 ranks, saves and resumes"

site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$python" -m pip uninstall -y stoker > "$work/uninstall.txt" 2>&1 ||
  fail "pip uninstall: $(cat "$work/uninstall.txt")"
left=$(find "$site" -maxdepth 1 -iname 'stoker*' | head -3)
[ -z "$left" ] || fail "pip uninstall left: $left"
! (cd "$work" && "$python" -c "import stoker" 2> /dev/null) ||
  fail "import stoker still works after pip uninstall"
echo "ok: pip uninstall stoker removes it"
