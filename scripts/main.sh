#!/usr/bin/env bash
# The main job: set up, build, and train the example trainer on stoker's embedded default corpus,
# through a preemption and a rescale:
#   1. scripts/default-corpus.sh packs text every Debian system carries (license texts, the
#      packages' copyright files, C headers) with the byte-level tokenizer: three datasets;
#   2. jobs/mpirun/train.sh trains a tiny language model on 4 ranks, mixing the datasets by
#      weight and saving a checkpoint every 50 steps; attention stays within each document of a
#      packed row and positions count from each document's start (stoker-train --doc-mask, from
#      the loader's segment_ids and position_ids);
#   3. a preemption: SIGUSR1 once step 150 is saved; every rank stops at the same step and saves;
#   4. jobs/mpirun/resume.sh goes on from that checkpoint on 2 ranks (the loader rescales) to
#      step 300;
#   5. a report: loss at the start and the end, tokens/s and data-wait share of each run,
#      `stoker audit` of both runs' piece traces (no document position delivered twice), and last
#      each dataset's share of the whole run's tokens beside its weight.
# Environment: STOKER_DEMO_DIR (default out/demo), STOKER_DEMO_STEPS (300).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The two programs and the Python package (build/python/stoker: the README's "From Python").
STOKER_BUILD_TARGETS="stoker_cli stoker_train stoker_python" scripts/build.sh
source scripts/env.sh

out=${STOKER_DEMO_DIR:-out/demo}
steps=${STOKER_DEMO_STEPS:-300}
preempt_after=$((steps / 2))
export CORPUS=$out/corpus CHECKPOINT_DIR=$out/checkpoints TRACE_DIR=$out/trace
export WEIGHTS=copyright=0.5,headers=0.3,licenses=0.2 SAVE_EVERY=50 TRAIN_ARGS=--doc-mask
rm -rf "$CHECKPOINT_DIR" "$TRACE_DIR"

echo "== 1. the default corpus: Debian's own text, byte-tokenized, in $CORPUS"
scripts/default-corpus.sh "$CORPUS" 2
build/stoker inspect "$CORPUS"

echo "== 2. training on 4 ranks, attention within documents, a checkpoint every $SAVE_EVERY steps"
NP=4 STEPS=$steps jobs/mpirun/train.sh > "$out/run-1.json" &
job=$!
until [ -f "$CHECKPOINT_DIR/step-$preempt_after/trainer.json" ] || ! kill -0 "$job" 2>/dev/null; do
  sleep 0.2
done
echo "== 3. preemption: SIGUSR1 to the job after step $preempt_after was saved"
kill -USR1 "$job" 2>/dev/null || true
wait "$job"

echo "== 4. resuming on 2 ranks from the newest checkpoint, on to step $steps"
NP=2 STEPS=$steps jobs/mpirun/resume.sh > "$out/run-2.json"

echo "== 5. stoker audit of both runs' piece traces"
build/stoker audit "$TRACE_DIR" --data "$CORPUS" --json > "$out/audit.json" || true
python3 - "$out/run-1.json" "$out/run-2.json" "$out/audit.json" <<'PY'
import json, sys
first, second = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
audit = json.load(open(sys.argv[3]))
def run(d, n):
    resumed = f", resumed from {d['resumed_from']} saved on {d['saved_world']} ranks" if d["resumed_from"] else ""
    print(f"  run {n}: {d['ranks']} ranks, steps {d['start_step'] + 1}-{d['end_step']}{resumed}: "
          f"{d['tokens_per_second'] / 1e3:.1f}k tokens/s, waiting for data {100 * d['data_wait_share']:.2f}% of the time")
print("== report")
masked = "attention within documents (--doc-mask)" if first["doc_mask"] and second["doc_mask"] else "attention over whole rows"
print(f"  loss: {first['loss_start']:.3f} over the first 10 steps -> {second['loss_end']:.3f} over the last 10, {masked}")
run(first, 1)
run(second, 2)
tokens = sum(r["tokens"] for r in audit["runs"])
steps = sum(r["valid_steps"] for r in audit["runs"])
if not audit["clean"]:
    print(f"  audit: {audit['problem_count']} problems:", *audit["problems"][:10], sep="\n    ")
    sys.exit(1)
print(f"  audit: {steps} steps of {len(audit['runs'])} runs, {tokens:,} tokens checked: no document "
      f"position delivered twice, none skipped")
for name, d in sorted(audit["datasets"].items()):
    parts = [f"epoch {e['epoch']}: {e['documents']} documents started, {e['whole_documents']} whole"
             for e in d["epochs"]]
    print(f"    {name} ({d['nonempty_docs']} documents): " + "; ".join(parts))
# Last, the whole run's mixing (the second run's line counts from step 0, the first run's batches
# included): each dataset's tokens over all ranks, beside the tokens the weights of their steps
# promised it (the mixer keeps them within about a document per rank).
counted, promised = second["dataset_tokens"], second["promised_tokens"]
names = sorted(counted)
gap = max(abs(counted[n] - promised[n]) for n in names)
shares = ", ".join(f"{n} {counted[n] / sum(counted.values()):.3f} (weights {promised[n] / sum(promised.values()):.3f})"
                   for n in names)
print(f"  mixing, steps 1-{second['end_step']} over all ranks: {shares}; largest gap {gap:,.0f} tokens")
PY
