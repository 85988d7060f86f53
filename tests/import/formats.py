"""Writers of the foreign formats `stoker import` reads, written from the formats' descriptions
with NumPy alone (`zstandard` for compressed MDS shards, hashlib and `xxhash` for the hashes an
MDS index lists), independent of stoker's code:

- Megatron-LM's indexed dataset (PREFIX.bin + PREFIX.idx, as its IndexedDatasetBuilder writes),
- OLMo/Dolma token files (a raw little-endian array, or a .npy file),
- Mosaic Streaming's MDS folders (index.json version 2 + shard.NNNNN.mds[.zstd], as MDSWriter
  writes).

Everything is little-endian."""

import json
import os
import struct

import numpy as np

# Megatron ------------------------------------------------------------------------------------

MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
FAIRSEQ_MAGIC = b"TNTIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5,
                        "float64": 6, "float32": 7, "uint16": 8}
# Byte offsets of the .idx header's fields.
IDX_VERSION_AT = 9
IDX_DTYPE_AT = 17
IDX_HEADER_BYTES = 34  # magic 9, version 8, dtype code 1, sequence count 8, document count 8


def megatron_header(dtype: str, sequences: int, document_indices: int, version: int = 1,
                    magic: bytes = MEGATRON_MAGIC) -> bytes:
    """The .idx header: magic, u64 version, u8 dtype code, u64 S, u64 D."""
    return (magic + struct.pack("<Q", version) + struct.pack("<B", MEGATRON_DTYPE_CODES[dtype])
            + struct.pack("<QQ", sequences, document_indices))


def write_megatron(prefix, documents, dtype: str, multimodal: bool = False) -> None:
    """PREFIX.bin and PREFIX.idx as Megatron-LM's IndexedDatasetBuilder writes them. `documents`
    is a list of documents, each a list of sequences, each a list or array of token ids (a
    document may have no sequence, a sequence no token). With `multimodal` the .idx ends with
    one int8 mode per sequence (all 0)."""
    prefix = str(prefix)
    dt = np.dtype(dtype).newbyteorder("<")
    sequences = [np.asarray(s, dtype=dt) for doc in documents for s in doc]
    lengths = np.array([len(s) for s in sequences], dtype="<i4")
    pointers = np.zeros(len(sequences), dtype="<i8")
    if len(sequences) > 1:
        pointers[1:] = np.cumsum(lengths[:-1].astype(np.int64) * dt.itemsize)
    document_indices = np.zeros(len(documents) + 1, dtype="<i8")
    document_indices[1:] = np.cumsum([len(doc) for doc in documents], dtype=np.int64)
    with open(prefix + ".bin", "wb") as out:
        for s in sequences:
            out.write(s.tobytes())
    with open(prefix + ".idx", "wb") as out:
        out.write(megatron_header(dtype, len(sequences), len(document_indices)))
        out.write(lengths.tobytes())
        out.write(pointers.tobytes())
        out.write(document_indices.tobytes())
        if multimodal:
            out.write(np.zeros(len(sequences), dtype=np.int8).tobytes())


def megatron_index_arrays_at(prefix, sequences: int):
    """Byte offsets in PREFIX.idx of its lengths, pointers and document indices (S sequences)."""
    lengths_at = IDX_HEADER_BYTES
    pointers_at = lengths_at + 4 * sequences
    documents_at = pointers_at + 8 * sequences
    return lengths_at, pointers_at, documents_at


def write_fairseq_idx(prefix, lengths, dtype_code: int = 4, element_size: int = 4) -> None:
    """A fairseq (pre-mmap, "cached"/"lazy") IndexedDataset .idx: magic TNTIDX, u64 version 1,
    u64 dtype code, u64 element size, u64 count, u64 s, then dim offsets, data offsets, sizes."""
    n = len(lengths)
    data_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype("<i8")
    dim_offsets = np.arange(n + 1, dtype="<i8")
    with open(str(prefix) + ".idx", "wb") as out:
        out.write(FAIRSEQ_MAGIC + struct.pack("<QQQ", 1, dtype_code, element_size))
        out.write(struct.pack("<QQ", n, n))
        out.write(dim_offsets.tobytes() + data_offsets.tobytes())
        out.write(np.asarray(lengths, dtype="<i8").tobytes())


# OLMo / Dolma token files --------------------------------------------------------------------

def write_tokens(path, tokens, dtype: str, npy_header: bool = False) -> None:
    """A token file: the raw little-endian array, or with `npy_header` a real .npy file."""
    array = np.asarray(tokens, dtype=np.dtype(dtype).newbyteorder("<"))
    if npy_header:
        with open(path, "wb") as out:  # numpy.save on a path would append ".npy" to other names
            np.save(out, array)
    else:
        with open(path, "wb") as out:
            out.write(array.tobytes())


def split_at(tokens, eos: int):
    """The documents of a token file with end-of-document id `eos`, as `stoker import npy` reads
    it: each `eos` ends a document and is dropped; tokens after the last `eos` form a last
    document; two in a row make an empty document."""
    tokens = np.asarray(tokens)
    ends = np.flatnonzero(tokens == eos)
    documents, start = [], 0
    for end in ends:
        documents.append(tokens[start:end])
        start = end + 1
    if start < len(tokens):
        documents.append(tokens[start:])
    return documents


# Mosaic Streaming MDS ------------------------------------------------------------------------

# `ndarray` with a dynamic dtype: the dtype's code byte.
MDS_VALUE_DTYPE_CODES = {"uint8": 8, "int8": 9, "uint16": 16, "int16": 17, "float16": 18,
                         "uint32": 32, "int32": 33, "float32": 34, "uint64": 64, "int64": 65,
                         "float64": 66}
MDS_SHAPE_DTYPES = ["uint8", "uint16", "uint32", "uint64"]  # code 0..3 in the (ndim, code) byte
MDS_SIZE_LIMIT = 1 << 26


def mds_encode(encoding: str, value) -> bytes:
    """One column value in an MDS encoding: int, str, bytes, ndarray, ndarray:<dtype>."""
    if encoding == "int":
        return struct.pack("<q", value)
    if encoding == "str":
        return value.encode("utf-8")
    if encoding == "bytes":
        return bytes(value)
    if encoding == "ndarray" or encoding.startswith("ndarray:"):
        array = np.asarray(value)
        assert array.size > 0, "MDSWriter refuses an ndarray with no element"
        parts = []
        if encoding == "ndarray":
            parts.append(bytes([MDS_VALUE_DTYPE_CODES[array.dtype.name]]))
        else:
            assert array.dtype.name == encoding.split(":")[1], (array.dtype, encoding)
        largest = max(array.shape)
        code = next(i for i, t in enumerate(MDS_SHAPE_DTYPES) if largest < (1 << (8 << i)))
        parts.append(bytes([(array.ndim << 2) | code]))
        parts.append(np.array(array.shape, dtype=np.dtype(MDS_SHAPE_DTYPES[code])
                              .newbyteorder("<")).tobytes())
        parts.append(array.astype(array.dtype.newbyteorder("<")).tobytes())
        return b"".join(parts)
    raise ValueError(f"no writer for MDS encoding {encoding}")


def mds_fixed_size(encoding: str):
    """The fixed byte size of an encoding, or None when its size varies."""
    return 8 if encoding == "int" else None


def mds_shard_bytes(columns, samples) -> bytes:
    """A raw MDS shard: u32 sample count, u32 offsets (count + 1, absolute), the writer's config
    JSON, then each sample: the u32 sizes of its variable-size columns, then the columns' bytes.
    `columns` is [(name, encoding)] sorted by name; `samples` a list of {name: value}."""
    names = [name for name, _ in columns]
    encodings = [encoding for _, encoding in columns]
    config = json.dumps({"column_encodings": encodings, "column_names": names,
                         "column_sizes": [mds_fixed_size(e) for e in encodings],
                         "compression": None, "format": "mds", "hashes": [],
                         "size_limit": MDS_SIZE_LIMIT, "version": 2},
                        sort_keys=True).encode("utf-8")
    encoded = []
    for sample in samples:
        values = [mds_encode(encoding, sample[name]) for name, encoding in columns]
        sizes = [len(v) for v, e in zip(values, encodings) if mds_fixed_size(e) is None]
        encoded.append(np.array(sizes, dtype="<u4").tobytes() + b"".join(values))
    head = 4 + 4 * (len(samples) + 1) + len(config)
    offsets = head + np.concatenate([[0], np.cumsum([len(e) for e in encoded], dtype=np.int64)])
    return (struct.pack("<I", len(samples)) + offsets.astype("<u4").tobytes() + config
            + b"".join(encoded))


def mds_hashes(data: bytes, kinds) -> dict:
    """{kind: hex digest} of `data` for each hash kind, as MDSWriter lists them: Python's
    hashlib names (md5, sha1, sha256, blake2b, sha3_256, ...) and xxhash's (xxh32, xxh64,
    xxh3_64, xxh128, xxh3_128)."""
    import hashlib
    import xxhash
    return {k: (getattr(xxhash, k) if k.startswith("xxh") else getattr(hashlib, k))(data)
            .hexdigest() for k in kinds}


def write_mds(folder, samples, column: str, encoding: str, compression=None,
              extra_columns: bool = True, samples_per_shard: int = 4, hashes=(),
              content_size: bool = True) -> list:
    """An MDS folder as MDSWriter writes it: index.json (version 2) and shard.00000.mds, ...,
    `samples_per_shard` samples each; with compression "zstd" or "zstd:LEVEL" each shard is
    shard.NNNNN.mds.zstd, the raw shard compressed as one zstd frame. `samples` are the values of
    `column` (token arrays for ndarray encodings, bytes for `bytes`). With `extra_columns` each
    sample also has `id` (str), `n` (int) and `url` (str), so that a reader must skip columns
    before and after the one it wants. `hashes`: the hash kinds index.json lists for every
    file (raw_data: of the raw shard; zip_data: of the compressed file). Without `content_size`
    the zstd frame does not say how many bytes it holds. Returns the shard files' paths."""
    os.makedirs(folder, exist_ok=True)
    columns = {column: encoding}
    if extra_columns:
        columns.update({"id": "str", "n": "int", "url": "str"})
    columns = sorted(columns.items())  # MDSWriter orders columns by name
    names = [name for name, _ in columns]
    encodings = [e for _, e in columns]
    shards, paths = [], []
    for first in range(0, len(samples), samples_per_shard):
        part = []
        for i, value in enumerate(samples[first:first + samples_per_shard], start=first):
            sample = {column: value}
            if extra_columns:
                sample.update({"id": f"doc-{i}", "n": i * 1000 + 7,
                               "url": "https://example.org/" + "x" * (i % 5)})
            part.append(sample)
        basename = f"shard.{len(shards):05d}.mds"
        raw = mds_shard_bytes(columns, part)
        zip_data = None
        if compression is None:
            paths.append(os.path.join(folder, basename))
            with open(paths[-1], "wb") as out:
                out.write(raw)
        else:
            import zstandard
            assert compression == "zstd" or compression.startswith("zstd:"), compression
            level = int(compression.split(":")[1]) if ":" in compression else 3
            packed = zstandard.ZstdCompressor(level=level, write_content_size=content_size)\
                .compress(raw)
            paths.append(os.path.join(folder, basename + ".zstd"))
            with open(paths[-1], "wb") as out:
                out.write(packed)
            zip_data = {"basename": basename + ".zstd", "bytes": len(packed),
                        "hashes": mds_hashes(packed, hashes)}
        shards.append({"column_encodings": encodings, "column_names": names,
                       "column_sizes": [mds_fixed_size(e) for e in encodings],
                       "compression": compression, "format": "mds", "hashes": list(hashes),
                       "raw_data": {"basename": basename, "bytes": len(raw),
                                    "hashes": mds_hashes(raw, hashes)},
                       "samples": len(part), "size_limit": MDS_SIZE_LIMIT, "version": 2,
                       "zip_data": zip_data})
    with open(os.path.join(folder, "index.json"), "w") as out:
        json.dump({"shards": shards, "version": 2}, out, sort_keys=True)
    return paths
