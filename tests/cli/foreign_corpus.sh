#!/usr/bin/env bash
# Corpora as other tools write them. Shards written with h5py (Debian's python3-h5py, as a team's
# own preprocessing writes them) whose tokenizer attribute is a variable-length UTF-8 string
# (h5py's default for attrs["tokenizer"] = "..."), a fixed-length ASCII string and a fixed-length
# UTF-8 string: verify passes, inspect --json reports each tokenizer exactly, and run reads them
# at 1 and 2 ranks. A dataset folder whose name is not UTF-8 (Latin-1 "caf\xe9"): every --json
# output (inspect, verify, run, audit) is valid UTF-8 JSON, the name's bad byte replaced by
# U+FFFD; the text output keeps the name's bytes. A dataset whose shards record no eos_id: a run
# given no --eos-id warns once, naming it and the id it appends; given --eos-id, not at all.
# Environment: STOKER (the program), MPIRUN (mpirun with its flags).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER:?STOKER must name the stoker program}" "${MPIRUN:?MPIRUN must name mpirun and its flags}"

make_work foreign
python=/usr/bin/python3  # Debian's, which sees python3-h5py
"$python" -c "import h5py" 2> /dev/null || fail "h5py is missing (scripts/setup.sh installs python3-h5py)"

corpus="$work/corpus"
"$python" - "$corpus" <<'PY'
import os, sys
import h5py, numpy as np
root = sys.argv[1]
rng = np.random.default_rng(7)
def shard(path, tokenizer, eos=True):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lengths = rng.integers(1, 300, size=200)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64)
    with h5py.File(path, "w") as f:
        f.create_dataset("tokens", data=rng.integers(0, 50000, size=int(offsets[-1]), dtype=np.uint16))
        f.create_dataset("doc_offsets", data=offsets)
        f.attrs["stoker_format_version"] = 1
        f.attrs["vocab_size"] = 50257
        if eos:
            f.attrs["eos_id"] = 50256
        tokenizer(f)
def vlen(f):  # h5py's default for a str: variable-length UTF-8
    f.attrs["tokenizer"] = "gpt2-\u00e9t\u00e9"
def fixed_ascii(f):
    f.attrs["tokenizer"] = np.bytes_("gpt2")
def fixed_utf8(f):
    text = "bpe-\u00fc".encode()
    f.attrs.create("tokenizer", text, dtype=h5py.string_dtype("utf-8", len(text)))
for i in range(2):
    shard(f"{root}/vlen/part-{i}.h5", vlen)
    shard(f"{root}/fixed/part-{i}.h5", fixed_ascii)
    shard(f"{root}/fixed-utf8/part-{i}.h5", fixed_utf8)
shard(f"{root}-noeos/bare/part-0.h5", vlen, eos=False)
for name in ("vlen", "fixed", "fixed-utf8"):
    kind = h5py.h5a.open(h5py.File(f"{root}/{name}/part-0.h5").id, b"tokenizer").get_type()
    print(name, "variable" if kind.is_variable_str() else "fixed", kind.get_cset())
PY

"$STOKER" verify "$corpus" > "$work/verify.txt" 2>&1 || fail "verify: $(cat "$work/verify.txt")"
"$STOKER" inspect "$corpus" --json > "$work/inspect.json" 2> "$work/inspect.err" ||
  fail "inspect: $(cat "$work/inspect.err")"
"$python" - "$work/inspect.json" <<'PY' || fail "inspect --json of the h5py corpus"
import json, sys
datasets = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))["datasets"]
want = {"vlen": ["gpt2-\u00e9t\u00e9"], "fixed": ["gpt2"], "fixed-utf8": ["bpe-\u00fc"]}
got = {name: d["tokenizers"] for name, d in datasets.items()}
sys.exit(None if got == want else f"tokenizers {got}, not {want}")
PY
for np in 1 2; do
  $MPIRUN -np "$np" "$STOKER" run --data "$corpus" --steps 5 --seq-len 256 --batch-size 2 \
    > "$work/run$np.txt" 2>&1 || fail "run at $np ranks: $(cat "$work/run$np.txt")"
done
echo "ok: shards written by h5py with variable- and fixed-length string attributes: verify, inspect, run"

# --- A dataset that records no eos_id: one warning naming it and the id appended. ---
cp -r "$corpus/vlen" "$corpus-noeos/vlen"
$MPIRUN -np 2 "$STOKER" run --data "$corpus-noeos" --steps 2 --seq-len 64 --batch-size 2 \
  > "$work/noeos.txt" 2>&1 || fail "run on a dataset without eos_id: $(cat "$work/noeos.txt")"
warned=$(grep -c "records no eos_id" "$work/noeos.txt" || true)
[ "$warned" = 1 ] || fail "$warned warnings of a dataset without eos_id, not 1: $(cat "$work/noeos.txt")"
grep -q "dataset bare records no eos_id .* appends id 50256 " "$work/noeos.txt" ||
  fail "the warning does not name dataset bare and id 50256: $(cat "$work/noeos.txt")"
$MPIRUN -np 2 "$STOKER" run --data "$corpus-noeos" --steps 2 --seq-len 64 --batch-size 2 \
  --eos-id 50256 > "$work/noeos-given.txt" 2>&1 || fail "run with --eos-id: $(cat "$work/noeos-given.txt")"
! grep -q "records no eos_id" "$work/noeos-given.txt" || fail "warned although --eos-id was given"
echo "ok: a dataset without eos_id: one warning naming it and the id; none with --eos-id"

# --- A dataset folder named in Latin-1: valid JSON everywhere. ---
latin="$work/latin"
mkdir -p "$latin"
cp -r "$corpus/fixed" "$latin/$(printf 'caf\xe9')"
# valid_json NAME FILE [named]: FILE is strict UTF-8 JSON (a line each); with "named", it names
# the dataset as caf\ufffd.
valid_json() {
  "$python" - "$2" "${3:-}" <<'PY' || fail "$1: not valid UTF-8 JSON: $(head -c 600 "$2")"
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")
values = [json.loads(line) for line in text.splitlines()]
sys.exit("the name is not caf\ufffd" if sys.argv[2] and "caf\ufffd" not in json.dumps(values,
         ensure_ascii=False) else None)
PY
  echo "ok: $1: valid JSON"
}
"$STOKER" inspect "$latin" --json > "$work/latin-inspect.json" || fail "inspect --json"
valid_json "inspect --json" "$work/latin-inspect.json" named
"$STOKER" inspect "$latin" > "$work/latin-inspect.txt" || fail "inspect"
grep -q "$(printf 'caf\xe9') " "$work/latin-inspect.txt" || fail "inspect's table lost the name's bytes"
"$STOKER" verify "$latin" --json > "$work/latin-verify.json" || fail "verify --json"
valid_json "verify --json" "$work/latin-verify.json"
rm "$latin/$(printf 'caf\xe9')/part-1.h5" && echo "not HDF5" > "$latin/$(printf 'caf\xe9')/part-1.h5"
"$STOKER" verify "$latin" --json > "$work/latin-bad.json" && fail "verify of a bad shard exited 0"
valid_json "verify --json naming a bad shard" "$work/latin-bad.json" named
rm "$latin/$(printf 'caf\xe9')/part-1.h5"
$MPIRUN -np 2 "$STOKER" run --data "$latin" --steps 4 --seq-len 64 --batch-size 2 \
  --trace "$work/trace" > "$work/latin-run.json" 2> "$work/latin-run.err" || fail "run: $(cat "$work/latin-run.err")"
valid_json "run's line" "$work/latin-run.json"
"$STOKER" audit "$work/trace" --data "$latin" --json > "$work/latin-audit.json" ||
  fail "audit: $(head -c 600 "$work/latin-audit.json")"
valid_json "audit --json" "$work/latin-audit.json" named
echo "foreign_corpus: all checks passed"
