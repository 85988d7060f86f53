#!/usr/bin/env bash
# The main job: set up, build, then run stoker on its embedded default: a small synthetic corpus
# of three datasets made under mpirun, described by `stoker inspect` and checked by `stoker
# verify`; then the loader streams it on 2 ranks with checkpoints, and a resumed run goes on from
# the last checkpoint on 3 ranks (the loader rescales its state).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
source scripts/env.sh

stoker=build/stoker
corpus=${STOKER_DEMO_CORPUS:-out/demo-corpus}
ranks=${STOKER_DEMO_RANKS:-2}

echo "== stoker synth: a 4M-token corpus of three datasets on $ranks ranks"
mpirun -np "$ranks" "$stoker" synth "$corpus" --force --seed 1 --files 4 \
  --dataset web:2M:1000 --dataset code:1M:3000 --dataset books:1M:20000
echo "== stoker inspect $corpus"
mpirun -np "$ranks" "$stoker" inspect "$corpus"
echo "== stoker verify $corpus"
mpirun -np "$ranks" "$stoker" verify "$corpus"

checkpoints=${corpus%/*}/demo-checkpoints
rm -rf "$checkpoints"
echo "== stoker run: 40 steps on $ranks ranks, a checkpoint every 20"
mpirun -np "$ranks" "$stoker" run --data "$corpus" --steps 40 --seq-len 2048 --batch-size 8 \
  --weights web=0.5,code=0.3,books=0.2 --checkpoint-dir "$checkpoints" --save-every 20
echo "== stoker run --resume: on to step 80 on 3 ranks"
mpirun -np 3 "$stoker" run --data "$corpus" --steps 80 --seq-len 2048 --batch-size 8 \
  --weights web=0.5,code=0.3,books=0.2 --checkpoint-dir "$checkpoints" --save-every 20 --resume
echo "== stoker inspect $checkpoints/step-80"
"$stoker" inspect "$checkpoints/step-80"
