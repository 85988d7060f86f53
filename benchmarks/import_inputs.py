"""Inputs for benchmarks/import_bench.sh: a Megatron-LM indexed dataset (uint16, one sequence a
document), an OLMo-style headerless token file (uint32, documents ending at eos id 0) and an MDS
folder (ndarray:uint32 samples, uncompressed and zstd), GB-sized, written with NumPy by the
independent writers of tests/import/formats.py (the Megatron one vectorized here for size).
    /usr/bin/python3 benchmarks/import_inputs.py DIR MEGABYTES"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "import"))
import formats  # noqa: E402

MEAN_DOC = 1000  # tokens


def lengths(rng, total):
    """Log-normal document lengths (mean about MEAN_DOC) that sum to `total`."""
    out = rng.lognormal(np.log(MEAN_DOC) - 0.5, 1.0, size=total // MEAN_DOC * 2).astype(np.int64)
    out = np.maximum(out, 1)
    out = out[:np.searchsorted(np.cumsum(out), total)]
    return np.append(out, total - out.sum())


def megatron(prefix, tokens, rng):
    n = lengths(rng, tokens)
    data = rng.integers(1, 50000, size=tokens, dtype=np.uint16)
    data.tofile(prefix + ".bin")
    pointers = np.concatenate([[0], np.cumsum(n)[:-1] * 2]).astype(np.int64)
    with open(prefix + ".idx", "wb") as out:
        out.write(formats.megatron_header("uint16", len(n), len(n) + 1))
        out.write(n.astype(np.int32).tobytes())
        out.write(pointers.tobytes())
        out.write(np.arange(len(n) + 1, dtype=np.int64).tobytes())


def token_file(path, tokens, rng):
    data = rng.integers(1, 50000, size=tokens, dtype=np.uint32)
    data[np.cumsum(lengths(rng, tokens)) - 1] = 0  # eos id 0 ends every document
    formats.write_tokens(path, data, "uint32")


def mds(folder, tokens, rng, compression):
    data = rng.integers(1, 50000, size=tokens, dtype=np.uint32)
    ends = np.cumsum(lengths(rng, tokens))
    samples = np.split(data, ends[:-1])
    formats.write_mds(folder, samples, "tokens", "ndarray:uint32", compression=compression,
                      extra_columns=False, samples_per_shard=16000)


def main():
    root, megabytes = sys.argv[1], int(sys.argv[2])
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(5)
    tokens = megabytes * 1000 * 1000
    megatron(os.path.join(root, "megatron"), tokens // 2, rng)
    token_file(os.path.join(root, "tokens.npy"), tokens // 4, rng)
    mds(os.path.join(root, "mds"), tokens // 8, rng, None)
    mds(os.path.join(root, "mds-zstd"), tokens // 8, rng, "zstd")
    json.dump({"megabytes": megabytes}, open(os.path.join(root, "done.json"), "w"))


if __name__ == "__main__":
    main()
