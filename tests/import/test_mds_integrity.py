"""What an MDS index.json promises about its shard files is held to, at 2 ranks of a real
mpirun: every hash it lists is checked when stoker computes that kind (each kind MDSWriter can
list, computed here by Python's hashlib and xxhash), a kind stoker does not compute is named in
a warning, and a zstd shard is decompressed only into the size its frame declares, which must be
raw_data's: a 1 KB shard whose index claims 1 GB is refused at once, in little memory."""

import json
import subprocess
import sys

import numpy as np
import pytest

import formats
from import_checks import assert_documents, import_fails, import_ok, random_tokens, read_dataset

# Every kind MDSWriter can list with Debian's Python (hashlib's named constructors but shake_*,
# and xxhash's algorithms).
KINDS = ["xxh32", "xxh64", "xxh3_64", "xxh128", "xxh3_128", "md5", "sha1", "sha224", "sha256",
         "sha384", "sha512", "sha3_224", "sha3_256", "sha3_384", "sha3_512", "blake2b",
         "blake2s"]
MARKED = np.array([40000, 40001, 40002, 40003], dtype="uint32")  # sample 4, found by its bytes


def write(folder, hashes=(), compression=None, content_size=True, seed=0) -> list:
    """An MDS folder of 9 samples (3 a shard, ndarray:uint32 ids below 40,000 but sample 4, which
    is MARKED) listing `hashes` for every file; returns the samples."""
    rng = np.random.default_rng(seed)
    samples = [random_tokens(rng, "uint32", int(rng.integers(1, 50)), high=39999)
               for _ in range(9)]
    samples[4] = MARKED
    formats.write_mds(folder, samples, "input_ids", "ndarray:uint32", compression=compression,
                      samples_per_shard=3, hashes=hashes, content_size=content_size)
    return samples


def edit_index(folder, shard: int, edit) -> None:
    """Applies `edit` to the index.json entry of shard `shard`."""
    path = folder / "index.json"
    index = json.loads(path.read_text())
    edit(index["shards"][shard])
    path.write_text(json.dumps(index))


def test_every_hash_kind_is_computed_as_mdswriter_does(run, tmp_path):
    """Plain and zstd folders listing all 17 kinds for every file import whole: stoker's digest
    of each kind equals Python's."""
    plain = write(tmp_path / "plain", KINDS)
    packed = write(tmp_path / "packed", KINDS, compression="zstd", seed=1)
    out = tmp_path / "corpus" / "mds"
    import_ok(run, 2, "mds", [tmp_path / "plain", tmp_path / "packed"], out, "--column",
              "input_ids")
    assert_documents(read_dataset(out, "mds", 2).documents, plain + packed)


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_shard_fails_its_hash(run, tmp_path, kind):
    """One bit of a token id flipped in shard.00001.mds (still a valid id, the shard still well
    formed): the import fails naming the shard, the hash kind and index.json."""
    write(tmp_path / "mds", [kind])
    shard = tmp_path / "mds" / "shard.00001.mds"
    data = bytearray(shard.read_bytes())
    at = data.find(MARKED.astype("<u4").tobytes())
    assert at > 0, "sample 4's ids are not in shard 1"
    data[at] ^= 1
    shard.write_bytes(bytes(data))
    import_fails(run, 2, "mds", [tmp_path / "mds"], tmp_path / "corpus" / "mds", "--column",
                 "input_ids", names=["shard.00001.mds:", f"the {kind} hash of the file",
                                     "index.json, shard 1"])


@pytest.mark.parametrize("data,said", [("zip_data", "the file"),
                                       ("raw_data", "its decompressed bytes")])
def test_zstd_shard_hashes(run, tmp_path, data, said):
    """A zstd shard whose index lists a wrong sha256 for the compressed file (zip_data) or for
    the decompressed bytes (raw_data) fails, naming which."""
    write(tmp_path / "mds", ["xxh64", "sha256"], compression="zstd")

    def spoil(entry):
        digest = entry[data]["hashes"]["sha256"]
        entry[data]["hashes"]["sha256"] = ("0" if digest[0] != "0" else "1") + digest[1:]

    edit_index(tmp_path / "mds", 2, spoil)
    import_fails(run, 2, "mds", [tmp_path / "mds"], tmp_path / "corpus" / "mds", "--column",
                 "input_ids", names=["shard.00002.mds.zstd", f"the sha256 hash of {said}"])


def test_a_hash_kind_stoker_does_not_compute_is_named(run, tmp_path):
    """A kind stoker does not compute (here `shake_128`, which MDSWriter cannot list, and a
    made-up one) does not stop the import; a warning names each and says it is not checked."""
    samples = write(tmp_path / "mds", ["xxh64"])
    edit_index(tmp_path / "mds", 0,
               lambda e: e["raw_data"]["hashes"].update({"shake_128": "00", "whirl": "11"}))
    out = tmp_path / "corpus" / "mds"
    output = import_ok(run, 2, "mds", [tmp_path / "mds"], out, "--column", "input_ids")
    assert_documents(read_dataset(out, "mds", 2).documents, samples)
    warning = [line for line in output.splitlines() if "not checked" in line]
    assert len(warning) == 1 and "shake_128, whirl" in warning[0], output


def run_measured(mpirun, stoker, *args):
    """(exit code, output, largest resident size of any process in MB) of
    `$MPIRUN -np 1 stoker ARGS`, measured by a Python process of its own that runs it."""
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE,\n"
               "                      stderr=subprocess.STDOUT, text=True)\n"
               "print(done.stdout)\n"
               "print('exit', done.returncode, 'peak', \n"
               "      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    done = subprocess.run([sys.executable, "-c", measure, *mpirun, "-np", "1", stoker,
                           *map(str, args)], stdout=subprocess.PIPE, text=True, timeout=120)
    *output, last = done.stdout.rstrip("\n").split("\n")
    _, code, _, kb = last.split()
    return int(code), "\n".join(output), int(kb) / 1024


def test_zstd_frame_size_is_checked_before_decompressing(mpirun, stoker, tmp_path):
    """A zstd shard of under 1 KB whose index.json says raw_data is 1,000,000,000 bytes is
    refused naming the shard and both sizes, and no process of the import grows past 300 MB."""
    write(tmp_path / "mds", compression="zstd")
    edit_index(tmp_path / "mds", 1, lambda e: e["raw_data"].update({"bytes": 10**9}))
    code, output, peak_mb = run_measured(mpirun, stoker, "import", "mds", tmp_path / "mds",
                                         "--column", "input_ids", "--out",
                                         tmp_path / "corpus" / "mds")
    assert code != 0, output
    assert "shard.00001.mds.zstd: its zstd frames say they hold" in output, output
    assert "says raw_data is 1000000000 bytes" in output, output
    assert peak_mb < 300, f"the refused import grew to {peak_mb:.0f} MB:\n{output}"


def test_zstd_frame_without_its_size_is_refused(run, tmp_path):
    """A zstd frame that does not say how many bytes it holds is refused, naming the shard."""
    write(tmp_path / "mds", compression="zstd", content_size=False)
    import_fails(run, 2, "mds", [tmp_path / "mds"], tmp_path / "corpus" / "mds", "--column",
                 "input_ids", names=["shard.00000.mds.zstd", "does not say how many bytes"])
