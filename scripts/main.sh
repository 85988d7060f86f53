#!/usr/bin/env bash
# The main job: set up, build, then run stoker on its embedded default. For now that is a small
# synthetic corpus of three datasets made under mpirun, described by `stoker inspect` and checked
# by `stoker verify`.
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
