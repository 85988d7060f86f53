"""`stoker import` end to end: Megatron-LM indexed datasets, OLMo/Dolma token files and Mosaic
Streaming MDS folders, written here by formats.py (independent of stoker's code), imported at
1, 2 and 4 ranks of a real mpirun into a dataset folder DIR/NAME. Each import that succeeds is
read back with h5py, document by document, against what was written, and `stoker verify DIR`
must find the corpus clean. Each broken input must fail the import, name the file at fault and
leave nothing behind in DIR."""

import json
import struct

import numpy as np
import pytest
import zstandard

import formats
from import_checks import (INT64_MAX, assert_documents, import_fails, import_ok, joined,
                           megatron_documents, patch, random_tokens, read_dataset, truncate)

MEGATRON_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "uint16"]
# Megatron documents imported whole, with eos_id 1 recorded for the loader to append (a Megatron
# import takes --eod-id or --eos-id: test_end_of_document.py).
WHOLE = ["--eos-id", 1]


# Megatron --------------------------------------------------------------------------------------

@pytest.mark.parametrize("ranks", [1, 2, 4], ids=lambda r: f"np{r}")
@pytest.mark.parametrize("dtype", MEGATRON_DTYPES)
def test_megatron_every_dtype(run, tmp_path, dtype, ranks):
    """Three Megatron prefixes of one integer dtype (documents of several sequences, empty
    documents first and last, a document with an empty sequence, the dtype's largest id) import
    into one dataset: the same documents in prefix order, each its sequences concatenated, in
    the same dtype, in at least two shards per rank (--shard-tokens 50 of 1,100 to 1,600)."""
    rng = np.random.default_rng(MEGATRON_DTYPES.index(dtype))
    prefixes, expected = [], []
    for i, count in enumerate([25, 18, 12]):
        documents = megatron_documents(rng, dtype, count, first_empty=(i == 0),
                                       last_empty=(i == 2))
        prefixes.append(tmp_path / f"in{i}_text_document")
        formats.write_megatron(prefixes[-1], documents, dtype)
        expected += [joined(d, dtype) for d in documents]
    out = tmp_path / "corpus" / "web"
    import_ok(run, ranks, "megatron", prefixes, out, *WHOLE, "--shard-tokens", 50)
    dataset = read_dataset(out, "megatron", ranks)
    assert_documents(dataset.documents, expected)
    assert dataset.dtypes == {np.dtype(dtype)}, f"{dataset.dtypes}, expected {dtype}"
    total = sum(len(d) for d in expected)
    assert len(dataset.names) >= 2 * ranks, (
        f"{len(dataset.names)} shards for {total} tokens with --shard-tokens 50 at {ranks} ranks")


@pytest.mark.parametrize("ranks", [1, 2], ids=lambda r: f"np{r}")
def test_megatron_multimodal(run, tmp_path, ranks):
    """A multimodal .idx (an int8 mode per sequence after the document indices) imports like a
    plain one, beside a plain prefix."""
    rng = np.random.default_rng(11)
    plain = megatron_documents(rng, "uint16", 10)
    multimodal = megatron_documents(rng, "uint16", 14, last_empty=True)
    formats.write_megatron(tmp_path / "plain", plain, "uint16")
    formats.write_megatron(tmp_path / "multimodal", multimodal, "uint16", multimodal=True)
    out = tmp_path / "corpus" / "mm"
    import_ok(run, ranks, "megatron", [tmp_path / "multimodal", tmp_path / "plain"], out,
              *WHOLE)
    dataset = read_dataset(out, "megatron", ranks)
    assert_documents(dataset.documents, [joined(d, "uint16") for d in multimodal + plain])
    assert dataset.dtypes == {np.dtype("uint16")}


@pytest.mark.parametrize("ranks", [1, 4], ids=lambda r: f"np{r}")
def test_megatron_eod_id(run, tmp_path, ranks):
    """--eod-id N: documents written with N appended to their last sequence (as Megatron's
    preprocess_data.py --append-eod does) come back without it; a document that does not end
    in N (empty, N only inside, another last token) is kept whole; of N N at the end only the
    last goes; a document of N alone becomes empty. The shards get eos_id N and --vocab-size."""
    eod, vocab = 50256, 50257
    rng = np.random.default_rng(12)

    def tokens(n):
        return random_tokens(rng, "uint16", n, high=eod - 1)

    written, expected = [], []
    for _ in range(30):
        sequences = [tokens(int(rng.integers(0, 30))) for _ in range(int(rng.integers(1, 4)))]
        sequences[-1] = np.append(sequences[-1], eod).astype("uint16")
        written.append(sequences)
        expected.append(joined(sequences, "uint16")[:-1])
    kept = [[], [tokens(3), np.array([eod, 5], "uint16")], [np.array([eod, 7], "uint16")]]
    written[4:4] = kept
    expected[4:4] = [joined(d, "uint16") for d in kept]
    special = [([[eod]], []), ([[1, eod, eod]], [1, eod]),
               # The document's last token is N although its last sequence is empty.
               ([[2, 3, eod], []], [2, 3])]
    written += [w for w, _ in special]
    expected += [np.array(e, "uint16") for _, e in special]
    formats.write_megatron(tmp_path / "gpt2_text_document", written, "uint16")
    out = tmp_path / "corpus" / "eod"
    import_ok(run, ranks, "megatron", [tmp_path / "gpt2_text_document"], out,
              "--eod-id", eod, "--vocab-size", vocab, "--shard-tokens", 100)
    dataset = read_dataset(out, "megatron", ranks)
    assert_documents(dataset.documents, expected)
    assert dataset.attribute("eos_id") == eod
    assert dataset.attribute("vocab_size") == vocab


def test_megatron_narrow(run, tmp_path):
    """--narrow: an int64 Megatron dataset whose ids are below 60,000 imports with the same
    values into an unsigned type no wider than needed (2 bytes at most)."""
    rng = np.random.default_rng(13)
    documents = megatron_documents(rng, "int64", 20)
    documents = [[random_tokens(rng, "int64", len(s), high=59999) for s in d]
                 for d in documents]
    documents[5] = [np.array([59999, 0], "int64")]
    formats.write_megatron(tmp_path / "wide", documents, "int64")
    out = tmp_path / "corpus" / "narrow"
    import_ok(run, 2, "megatron", [tmp_path / "wide"], out, *WHOLE, "--narrow")
    dataset = read_dataset(out, "megatron", 2)
    assert_documents(dataset.documents, [joined(d, "int64") for d in documents])
    for dtype in dataset.dtypes:
        assert dtype.itemsize <= 2, f"--narrow wrote {dtype} for ids below 60,000"


def test_megatron_prefixes_without_tokens(run, tmp_path):
    """A prefix with no document at all (an empty .bin, document indices [0]) and one whose
    documents are all empty, between two others: the empty documents are kept, in order."""
    rng = np.random.default_rng(14)
    first = megatron_documents(rng, "int32", 8)
    last = megatron_documents(rng, "int32", 8)
    formats.write_megatron(tmp_path / "a", first, "int32")
    formats.write_megatron(tmp_path / "none", [], "int32")
    formats.write_megatron(tmp_path / "empties", [[], [], []], "int32")
    formats.write_megatron(tmp_path / "b", last, "int32")
    out = tmp_path / "corpus" / "sparse"
    prefixes = [tmp_path / p for p in ["a", "none", "empties", "b"]]
    import_ok(run, 2, "megatron", prefixes, out, *WHOLE)
    dataset = read_dataset(out, "megatron", 2)
    expected = [joined(d, "int32") for d in first + [[], [], []] + last]
    assert_documents(dataset.documents, expected)
    assert dataset.dtypes == {np.dtype("int32")}


# The broken prefix's documents: S = 7 sequences, document indices [0, 2, 4, 5, 5, 7].
BROKEN_DOCUMENTS = [[[1, 2, 3], [4, 5]], [[6], [7, 8, 9]], [[10]], [], [[11, 12], [13]]]
BROKEN_S = 7


def _idx(prefix):
    return prefix.with_name(prefix.name + ".idx")


def _bin(prefix):
    return prefix.with_name(prefix.name + ".bin")


def _pointers_at(prefix):
    return formats.megatron_index_arrays_at(prefix, BROKEN_S)[1]


def _documents_at(prefix):
    return formats.megatron_index_arrays_at(prefix, BROKEN_S)[2]


# Each breaks an int16 prefix written from BROKEN_DOCUMENTS.
BREAKS = {
    "bad_magic": lambda p: patch(_idx(p), 0, b"MMIDIDY\x00\x00"),
    "fairseq_magic": lambda p: formats.write_fairseq_idx(p, [2, 3, 1, 3, 1, 2, 1]),
    "version_2": lambda p: patch(_idx(p), formats.IDX_VERSION_AT, struct.pack("<Q", 2)),
    "float64_dtype": lambda p: patch(_idx(p), formats.IDX_DTYPE_AT, bytes([6])),
    "idx_truncated": lambda p: truncate(_idx(p), 3),
    "idx_trailing_bytes": lambda p: _idx(p).write_bytes(_idx(p).read_bytes() + b"\0" * 5),
    "bin_truncated": lambda p: truncate(_bin(p), 2),
    "pointer_off_lengths": lambda p: patch(_idx(p), _pointers_at(p) + 3 * 8,
                                           struct.pack("<q", 14)),  # the sum is 12
    "documents_end_before_s": lambda p: patch(_idx(p), _documents_at(p) + 5 * 8,
                                              struct.pack("<q", BROKEN_S - 1)),
    "documents_decrease": lambda p: patch(_idx(p), _documents_at(p) + 2 * 8,
                                          struct.pack("<q", 1)),  # [0, 2, 1, 5, 5, 7]
    "negative_token": lambda p: formats.write_megatron(p, [[[1, 2]], [[3, -5, 4]]], "int16"),
    "missing_bin": lambda p: _bin(p).unlink(),
}
MEGATRON_ERROR_CASES = ([(case, 2) for case in BREAKS]
                        + [("bad_magic", 1), ("bin_truncated", 1)])


@pytest.mark.parametrize("case,ranks", MEGATRON_ERROR_CASES,
                         ids=[f"{c}-np{r}" for c, r in MEGATRON_ERROR_CASES])
def test_megatron_broken_input(run, tmp_path, case, ranks):
    """A broken Megatron prefix after a good one fails the import with a message that names the
    broken .idx or .bin (and TNTIDX for a fairseq index), and leaves nothing behind: bad magic,
    fairseq's magic, version 2, float64 dtype, .idx truncated or with trailing bytes, .bin
    truncated, a pointer off the lengths' sum, document indices that end before S or decrease,
    a negative id in an int16 file, a missing .bin."""
    rng = np.random.default_rng(15)
    good, broken = tmp_path / "good", tmp_path / "broken"
    formats.write_megatron(good, megatron_documents(rng, "int16", 10), "int16")
    formats.write_megatron(broken, BROKEN_DOCUMENTS, "int16")
    BREAKS[case](broken)
    output = import_fails(run, ranks, "megatron", [good, broken], tmp_path / "corpus" / "web",
                          *WHOLE)
    assert "broken.idx" in output or "broken.bin" in output, (
        f"the error names neither broken.idx nor broken.bin:\n{output}")
    if case == "fairseq_magic":
        assert "TNTIDX" in output, f"the error does not say the index is fairseq's:\n{output}"
    if case == "missing_bin":
        assert "broken.bin" in output, output


@pytest.mark.parametrize("ranks", [2], ids=lambda r: f"np{r}")
def test_force(run, tmp_path, ranks):
    """Importing into a DIR/NAME that already holds shards fails without --force and leaves
    every file as it was; with --force the new import replaces the old shards."""
    rng = np.random.default_rng(16)
    old = megatron_documents(rng, "uint16", 30)
    new = megatron_documents(rng, "uint16", 6)
    formats.write_megatron(tmp_path / "old", old, "uint16")
    formats.write_megatron(tmp_path / "new", new, "uint16")
    out = tmp_path / "corpus" / "web"
    import_ok(run, ranks, "megatron", [tmp_path / "old"], out, *WHOLE, "--shard-tokens", 50)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert len(before) > 2
    rc, output = run("import", "megatron", tmp_path / "new", *WHOLE, "--out", out, ranks=ranks)
    assert rc != 0, f"an import replaced {out} without --force:\n{output}"
    assert "--force" in output, f"the refusal does not mention --force:\n{output}"
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before, f"a refused import changed {out}: {sorted(after)}"
    import_ok(run, ranks, "megatron", [tmp_path / "new"], out, *WHOLE, "--force")
    dataset = read_dataset(out, "megatron", ranks)
    assert_documents(dataset.documents, [joined(d, "uint16") for d in new])


def test_refusals_that_protect_the_data(run, tmp_path):
    """What an operator can get wrong is refused before anything is written, once, naming what
    is wrong: inputs that hold no document (at 2 ranks: one error naming the input, no
    MPI_Abort, nothing left behind); --force onto a folder that holds the inputs (the import would delete them); a
    Megatron prefix whose index has no document but whose .bin has tokens (they would be lost);
    an --eos-id the token type cannot hold (no document would ever end)."""
    empty = tmp_path / "empty"
    formats.write_megatron(empty, [], "uint16")
    output = import_fails(run, 2, "megatron", [empty], tmp_path / "corpus" / "none", *WHOLE,
                          names=["no documents", str(empty)])
    assert output.count("no documents") == 1 and "MPI_ABORT" not in output, output

    inside = tmp_path / "corpus" / "web"
    inside.mkdir(parents=True)
    data = inside / "tokens.npy"
    formats.write_tokens(data, np.array([1, 2, 0, 3, 0], dtype=np.uint16), "uint16")
    rc, output = run("import", "npy", data, "--eos-id", 0, "--dtype", "uint16", "--out", inside,
                     "--force", ranks=2)
    assert rc != 0 and "lies in --out" in output, output
    assert data.exists(), f"--force deleted its own input:\n{output}"

    lost = tmp_path / "lost"
    formats.write_megatron(lost, [[[5, 6, 7]]], "uint16")
    with open(_idx(lost), "r+b") as f:  # D = 1: the index says no document at all
        f.seek(9 + 8 + 1 + 8)
        f.write(np.uint64(1).tobytes())
        f.truncate(9 + 8 + 1 + 8 + 8 + 12 * 1 + 8 * 1)
    import_fails(run, 1, "megatron", [lost], tmp_path / "corpus" / "lost", *WHOLE,
                 names=["lost.idx", "not from 0 to the sequence count 1"])

    wide = tmp_path / "wide.bin"
    formats.write_tokens(wide, np.array([1, 2, 3], dtype=np.uint16), "uint16")
    import_fails(run, 1, "npy", [wide], tmp_path / "corpus" / "wide", "--eos-id", 100257,
                 "--dtype", "uint16", names=["--eos-id 100257 cannot occur"])


def test_plain_messages_for_empty_inputs_and_vocab_size_zero(run, tmp_path):
    """Empty token files (0 bytes) are refused naming each; --vocab-size 0 is refused in words,
    naming the option and the value, not as a range of floating-point numbers."""
    files = [tmp_path / "empty-a.bin", tmp_path / "empty-b.bin"]
    for f in files:
        f.write_bytes(b"")
    output = import_fails(run, 2, "npy", files, tmp_path / "corpus" / "none", "--eos-id", 0,
                          "--dtype", "uint16", names=["no documents", *map(str, files)])
    assert output.count("no documents") == 1, output
    formats.write_tokens(tmp_path / "a.bin", [1, 2, 0, 3, 0], "uint16")
    output = import_fails(run, 1, "npy", [tmp_path / "a.bin"], tmp_path / "corpus" / "v",
                          "--eos-id", 0, "--dtype", "uint16", "--vocab-size", 0,
                          names=["--vocab-size 0: a vocabulary holds at least one id"])
    assert "0.000000" not in output and output.count("--vocab-size 0") == 1, output


# OLMo / Dolma token files ----------------------------------------------------------------------

def token_stream(rng, dtype: str, eos: int, documents: int, high: int, trailing_eos: bool):
    """A token file's ids: `documents` documents of 0 to 59 ids (none equal to eos) each
    followed by eos, with two eos in a row somewhere (an empty document); without
    `trailing_eos` the last document has no eos after it."""
    parts = []
    for i in range(documents):
        n = 0 if i == documents // 2 else int(rng.integers(1, 60))
        parts.append(random_tokens(rng, dtype, n, high=high, avoid=eos))
        parts.append(np.array([eos], dtype=dtype))
    if not trailing_eos:
        parts.pop()
    return np.concatenate(parts).astype(dtype)


# name: (dtype, eos, largest id, [(file name, has a NumPy header)], --dtype or None)
NPY_GROUPS = {
    "uint16_raw_and_npy": ("uint16", 50279, 65535,
                           [("a.bin", False), ("b.npy", True), ("c.bin", False)], "uint16"),
    "uint32_raw": ("uint32", 100257, 2**32 - 1, [("a.bin", False), ("b.bin", False)], "uint32"),
    "uint64_raw": ("uint64", 2**40 + 3, 2**41, [("a.u64", False), ("b.u64", False)], "uint64"),
    "int32_npy": ("int32", 0, 2**31 - 1, [("a.npy", True), ("b.npy", True)], None),
}
NPY_CASES = ([("uint16_raw_and_npy", r) for r in (1, 2, 4)]
             + [(g, 2) for g in ("uint32_raw", "uint64_raw", "int32_npy")])


@pytest.mark.parametrize("group,ranks", NPY_CASES, ids=[f"{g}-np{r}" for g, r in NPY_CASES])
def test_npy(run, tmp_path, group, ranks):
    """Token files (headerless raw arrays and real .npy files, several at once) split at
    --eos-id N: each N ends a document and is dropped, two N in a row are an empty document,
    ids after a file's last N are its last document (--allow-unterminated); the dtype is kept
    and eos_id is N. The uint16 group runs at 1, 2 and 4 ranks: the same documents at each."""
    dtype, eos, high, files, dtype_option = NPY_GROUPS[group]
    rng = np.random.default_rng(sorted(NPY_GROUPS).index(group))
    paths, expected = [], []
    for i, (name, npy_header) in enumerate(files):
        tokens = token_stream(rng, dtype, eos, 20 + 7 * i, high, trailing_eos=(i % 2 == 0))
        paths.append(tmp_path / name)
        formats.write_tokens(paths[-1], tokens, dtype, npy_header=npy_header)
        expected += formats.split_at(tokens, eos)
    options = ["--eos-id", eos, "--shard-tokens", 200, "--allow-unterminated"]
    if dtype_option:
        options += ["--dtype", dtype_option]
    out = tmp_path / "corpus" / "dolma"
    output = import_ok(run, ranks, "npy", paths, out, *options)
    cut = [str(p) for i, p in enumerate(paths) if i % 2 == 1]  # no eos after the last document
    assert "without a final --eos-id" in output and all(c in output for c in cut), output
    dataset = read_dataset(out, "npy", ranks)
    assert_documents(dataset.documents, expected)
    assert dataset.dtypes == {np.dtype(dtype)}, f"{dataset.dtypes}, expected {dtype}"
    assert dataset.attribute("eos_id") == eos


@pytest.mark.parametrize("ranks", [3, 4], ids=lambda r: f"np{r}")
def test_npy_ranks_start_inside_documents(run, tmp_path, ranks):
    """A 320,000-token file of long documents (one of 180,000 ids spans several ranks' shares):
    where a rank's share of the file starts inside a document, that document is still imported
    once and whole, by one rank, and no document is lost or repeated."""
    eos = 7
    rng = np.random.default_rng(17)
    lengths = [5, 180000, 1, 0, 40000, 33000, 0, 25000, 21000, 12000, 3, 8000, 999]
    parts = []
    for n in lengths:
        parts += [random_tokens(rng, "uint32", n, high=10**6, avoid=eos), np.array([eos])]
    tokens = np.concatenate(parts[:-1]).astype("uint32")  # the last document without eos
    formats.write_tokens(tmp_path / "long.bin", tokens, "uint32")
    small = token_stream(rng, "uint32", eos, 9, 10**6, trailing_eos=True)
    formats.write_tokens(tmp_path / "small.bin", small, "uint32")
    out = tmp_path / "corpus" / "long"
    import_ok(run, ranks, "npy", [tmp_path / "long.bin", tmp_path / "small.bin"], out,
              "--eos-id", eos, "--dtype", "uint32", "--shard-tokens", 60000,
              "--allow-unterminated")
    dataset = read_dataset(out, "npy", ranks)
    assert [len(d) for d in dataset.documents[:len(lengths)]] == lengths
    assert_documents(dataset.documents,
                     formats.split_at(tokens, eos) + formats.split_at(small, eos))


def _npy_error_inputs(tmp_path, case):
    """(files, options, strings the error must name) of one broken npy import; a good file
    comes first."""
    good = tmp_path / "good.bin"
    formats.write_tokens(good, [1, 2, 0, 3, 0], "uint16")
    if case == "raw_without_dtype":
        return [good], ["--eos-id", 0], ["--dtype"]
    if case == "float32_header":
        bad = tmp_path / "floats.npy"
        formats.write_tokens(bad, [1.0, 0.0, 2.0], "float32", npy_header=True)
        return [good, bad], ["--eos-id", 0, "--dtype", "uint16"], ["floats.npy"]
    if case == "header_differs_from_dtype":
        bad = tmp_path / "int32s.npy"
        formats.write_tokens(bad, [1, 0, 2], "int32", npy_header=True)
        return [good, bad], ["--eos-id", 0, "--dtype", "uint16"], ["int32s.npy"]
    if case == "unterminated":
        bad = tmp_path / "cut.bin"
        formats.write_tokens(bad, [1, 0, 2], "uint16")
        return ([good, bad], ["--eos-id", 0, "--dtype", "uint16"],
                ["cut.bin ends inside a document", "--allow-unterminated"])
    if case == "size_not_multiple":
        bad = tmp_path / "odd.bin"
        bad.write_bytes(np.array([1, 0, 2], "<u2").tobytes() + b"\x05")
        return [good, bad], ["--eos-id", 0, "--dtype", "uint16"], ["odd.bin"]
    raise ValueError(case)


@pytest.mark.parametrize("case", ["raw_without_dtype", "float32_header",
                                  "header_differs_from_dtype", "size_not_multiple",
                                  "unterminated"])
def test_npy_errors(run, tmp_path, case):
    """Refused at 2 ranks, naming the file (or --dtype), nothing left behind: a headerless file
    without --dtype, a .npy file of float32, a .npy header's dtype other than --dtype, a
    headerless file whose size is not a multiple of the element size, a file whose last document
    has no --eos-id after it (without --allow-unterminated)."""
    files, options, names = _npy_error_inputs(tmp_path, case)
    import_fails(run, 2, "npy", files, tmp_path / "corpus" / "dolma", *options, names=names)


# Mosaic Streaming MDS --------------------------------------------------------------------------

# name: (column, encoding, token dtype, largest id, --dtype or None, --eos-id or None)
MDS_KINDS = {
    "ndarray_uint32": ("input_ids", "ndarray:uint32", "uint32", 2**32 - 1, None, None),
    "ndarray_int64": ("input_ids", "ndarray:int64", "int64", INT64_MAX, None, None),
    "ndarray_dynamic": ("input_ids", "ndarray", "uint16", 65535, None, 0),
    "bytes": ("tokens", "bytes", "int64", 2**40, None, 50279),
    "bytes_uint16": ("tokens", "bytes", "uint16", 65535, "uint16", None),
}
MDS_CASES = ([("bytes", r) for r in (1, 2, 4)]
             + [(k, 2) for k in ("ndarray_uint32", "ndarray_int64", "ndarray_dynamic",
                                 "bytes_uint16")])


def mds_folders(tmp_path, rng, kind):
    """Three MDS folders of one column kind (uncompressed, zstd, zstd:7), 10 to 12 samples of 1
    to 199 ids each, 3 samples a shard (several shards each), extra columns before and after;
    a `bytes` column also has an empty sample. Returns (folders, expected documents)."""
    column, encoding, dtype, high, _, _ = MDS_KINDS[kind]
    folders, expected = [], []
    for i, compression in enumerate([None, "zstd", "zstd:7"]):
        arrays = [random_tokens(rng, dtype, int(rng.integers(1, 200)), high=high)
                  for _ in range(10 + i)]
        arrays[2] = np.array([high, 0], dtype=dtype)
        if encoding == "bytes":
            arrays.insert(4, np.zeros(0, dtype=dtype))
            samples = [a.astype(np.dtype(dtype).newbyteorder("<")).tobytes() for a in arrays]
        else:
            samples = arrays
        folders.append(tmp_path / f"mds{i}")
        formats.write_mds(folders[-1], samples, column, encoding, compression=compression,
                          samples_per_shard=3)
        expected += arrays
    return folders, expected


@pytest.mark.parametrize("kind,ranks", MDS_CASES, ids=[f"{k}-np{r}" for k, r in MDS_CASES])
def test_mds(run, tmp_path, kind, ranks):
    """MDS folders (uncompressed and zstd-compressed shards, several each, columns to skip
    before and after) import with one document per sample in order, for `ndarray:uint32`,
    `ndarray:int64`, dynamic `ndarray` and `bytes` columns (int64 ids, or --dtype uint16); the
    dtype is kept (bytes: int64 unless --dtype), an empty `bytes` sample is an empty document,
    and --eos-id is only recorded. The `bytes` column runs at 1, 2 and 4 ranks."""
    column, _, dtype, _, dtype_option, eos = MDS_KINDS[kind]
    rng = np.random.default_rng(sorted(MDS_KINDS).index(kind))
    folders, expected = mds_folders(tmp_path, rng, kind)
    options = ["--column", column, "--shard-tokens", 300]
    if dtype_option:
        options += ["--dtype", dtype_option]
    if eos is not None:
        options += ["--eos-id", eos]
    out = tmp_path / "corpus" / "mds"
    import_ok(run, ranks, "mds", folders, out, *options)
    dataset = read_dataset(out, "mds", ranks)
    assert_documents(dataset.documents, expected)
    assert dataset.dtypes == {np.dtype(dtype)}, f"{dataset.dtypes}, expected {dtype}"
    if eos is not None:
        assert dataset.attribute("eos_id") == eos


def corrupt_zstd(path) -> None:
    """Flips 8 bytes near the middle of a zstd file, at the first place from there where the
    zstd library then refuses the frame (a flip inside a raw block would pass unseen)."""
    packed = path.read_bytes()
    for at in range(len(packed) // 2, len(packed) - 8):
        data = bytearray(packed)
        for i in range(at, at + 8):
            data[i] ^= 0xFF
        try:
            zstandard.ZstdDecompressor().decompress(bytes(data))
        except zstandard.ZstdError:
            path.write_bytes(bytes(data))
            return
    raise AssertionError(f"no flip of 8 bytes makes {path} undecodable")


def _mds_break(case, folders):
    """Breaks the MDS inputs for one case; returns (--column, strings the error must name)."""
    if case == "missing_column":
        return "token_ids", ["token_ids"]
    if case == "index_version_1":
        index = folders[1] / "index.json"
        index.write_text(json.dumps({**json.loads(index.read_text()), "version": 1}))
        return "tokens", ["index.json"]
    if case == "shard_truncated":
        truncate(folders[0] / "shard.00001.mds", 5)
        return "tokens", ["shard.00001.mds"]
    if case == "zstd_corrupt":
        corrupt_zstd(folders[1] / "shard.00001.mds.zstd")
        return "tokens", ["shard.00001.mds"]
    raise ValueError(case)


@pytest.mark.parametrize("case", ["missing_column", "index_version_1", "shard_truncated",
                                  "zstd_corrupt"])
def test_mds_errors(run, tmp_path, case):
    """Refused at 2 ranks, nothing left behind: --column naming a column the shards do not have
    (the error names it), an index.json of version 1 (names index.json), a truncated shard and
    a zstd shard with flipped bytes (each names the shard)."""
    rng = np.random.default_rng(18)
    folders, _ = mds_folders(tmp_path, rng, "bytes")
    column, names = _mds_break(case, folders)
    import_fails(run, 2, "mds", folders[:2], tmp_path / "corpus" / "mds", "--column", column,
                 names=names)
