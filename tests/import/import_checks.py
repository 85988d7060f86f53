"""What the import tests share: running `stoker import` that must succeed (import_ok: then
`stoker verify` finds the corpus clean and nothing hidden is left) or fail (import_fails: naming
what it must, leaving nothing behind), reading a dataset folder back shard by shard with h5py
(read_dataset), comparing documents, and making and breaking inputs (random ids, Megatron
documents, byte patches)."""

import json
import os
import re
from dataclasses import dataclass, field

import h5py
import numpy as np

SHARD_NAME = re.compile(r"part-(\d{5})-(\d{5})\.h5")
INT64_MAX = 2**63 - 1


def import_ok(run, ranks, fmt, inputs, out, *options) -> str:
    """`$MPIRUN -np RANKS stoker import FMT INPUTS --out OUT OPTIONS` succeeds, `stoker verify`
    finds OUT's corpus (its parent folder) clean, and no hidden folder is left beside OUT.
    Returns the import's output."""
    rc, output = run("import", fmt, *inputs, "--out", out, *options, ranks=ranks)
    assert rc == 0, f"stoker import {fmt} failed at {ranks} ranks (exit {rc}):\n{output}"
    rc, verified = run("verify", out.parent)
    assert rc == 0, f"stoker verify {out.parent} (exit {rc}):\n{verified}\nimport:\n{output}"
    hidden = [p.name for p in out.parent.iterdir() if p.name.startswith(".")]
    assert not hidden, f"the import left {hidden} in {out.parent}:\n{output}"
    return output


def import_fails(run, ranks, fmt, inputs, out, *options, names=()) -> str:
    """The import exits non-zero, its output holds every string of `names`, and nothing is left
    behind (assert_nothing_left). Returns its output."""
    rc, output = run("import", fmt, *inputs, "--out", out, *options, ranks=ranks)
    assert rc != 0, f"stoker import {fmt} succeeded at {ranks} ranks:\n{output}"
    for name in names:
        assert name in output, f"the error does not name {name!r}:\n{output}"
    assert_nothing_left(out, output)
    return output


def assert_nothing_left(out, output: str = "") -> None:
    """A failed import into DIR/NAME leaves no DIR/NAME, no folder or file starting with '.' in
    DIR and no part-*.h5 anywhere under DIR."""
    assert not out.exists(), f"a failed import left {out}:\n{output}"
    root = out.parent
    if root.exists():
        hidden = [p.name for p in root.iterdir() if p.name.startswith(".")]
        assert not hidden, f"a failed import left {hidden} in {root}:\n{output}"
        shards = [str(p) for p in root.rglob("part-*.h5")]
        assert not shards, f"a failed import left shards {shards}:\n{output}"


@dataclass
class Dataset:
    """A dataset folder as read back: its shards' names, their documents in order, token types
    and attributes."""
    names: list = field(default_factory=list)
    documents: list = field(default_factory=list)
    dtypes: set = field(default_factory=set)
    attrs: list = field(default_factory=list)

    def attribute(self, name):
        """The value of an attribute every shard has, the same in all."""
        values = {int(a[name]) if name in a else None for a in self.attrs}
        assert len(values) == 1, f"shards differ in {name}: {values}"
        return values.pop()


def read_dataset(folder, fmt: str, ranks: int) -> Dataset:
    """Every shard of a dataset folder written by `stoker import FMT` at RANKS ranks, in file
    name order, each checked for the shard format (docs/format.md) and the import's names:
    part-RRRRR-KKKKK.h5 with R < RANKS and each rank's K numbered from 0 with no gap."""
    found = Dataset()
    found.names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".h5"))
    assert found.names, f"no shard in {folder}: {sorted(os.listdir(folder))}"
    per_rank = {}
    for name in found.names:
        match = SHARD_NAME.fullmatch(name)
        assert match, f"{name} is not named part-RRRRR-KKKKK.h5"
        rank, k = int(match[1]), int(match[2])
        assert rank < ranks, f"{name} names rank {rank} of {ranks}"
        per_rank.setdefault(rank, []).append(k)
    for rank, ks in per_rank.items():
        assert ks == list(range(len(ks))), f"rank {rank}'s shards are numbered {ks}"
    for name in found.names:
        with h5py.File(folder / name, "r") as shard:
            tokens = shard["tokens"][...]
            offsets = shard["doc_offsets"][...]
            attrs = dict(shard.attrs)
        assert tokens.ndim == 1 and tokens.dtype.kind in "iu", (name, tokens.dtype)
        assert offsets.dtype == np.uint64, (name, offsets.dtype)
        assert len(offsets) >= 1 and offsets[0] == 0 and offsets[-1] == len(tokens), name
        assert np.all(offsets[1:] >= offsets[:-1]), f"{name}: doc_offsets decrease"
        assert int(attrs.get("stoker_format_version", -1)) == 1, (name, attrs)
        source = attrs.get("source")
        assert source is not None, f"{name} has no source attribute"
        if isinstance(source, bytes):
            source = source.decode("utf-8")
        assert json.loads(str(source))["format"] == fmt, (name, source)
        found.dtypes.add(tokens.dtype)
        found.attrs.append(attrs)
        found.documents += [tokens[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    return found


def assert_documents(got, expected) -> None:
    """The same documents in the same order, token by token (compared as int64)."""
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g).astype(np.int64), np.asarray(e).astype(np.int64)
        assert len(g) == len(e) and np.array_equal(g, e), (
            f"document {i} of {len(expected)}: {len(g)} tokens {g[:8]}..., "
            f"expected {len(e)} tokens {e[:8]}...")
    assert len(got) == len(expected), f"{len(got)} documents, expected {len(expected)}"


def random_tokens(rng, dtype: str, n: int, high=None, avoid=None) -> np.ndarray:
    """n token ids in [0, high] (default: the dtype's largest, at most 2^63 - 1), none equal to
    `avoid`."""
    top = min(int(np.iinfo(dtype).max) if high is None else high, INT64_MAX)
    values = rng.integers(0, top, size=n, dtype=np.int64, endpoint=True)
    if avoid is not None:
        values[values == avoid] = avoid - 1 if avoid > 0 else avoid + 1
    return values.astype(dtype)


def patch(path, at: int, new: bytes) -> None:
    data = bytearray(path.read_bytes())
    data[at:at + len(new)] = new
    path.write_bytes(bytes(data))


def truncate(path, by: int) -> None:
    path.write_bytes(path.read_bytes()[:-by])


def megatron_documents(rng, dtype: str, count: int, first_empty=False, last_empty=False):
    """`count` Megatron documents of 0 to 3 sequences of 0 to 39 tokens, among them one with an
    empty sequence between two others, one of a single empty sequence and one with the dtype's
    extreme ids; optionally an empty document (no sequence) first and last."""
    top = min(int(np.iinfo(dtype).max), INT64_MAX)
    documents = [[random_tokens(rng, dtype, int(rng.integers(0, 40)))
                  for _ in range(int(rng.integers(0, 4)))] for _ in range(count)]
    documents[1] = [random_tokens(rng, dtype, 5), [], random_tokens(rng, dtype, 3)]
    documents[2] = [[]]
    documents[3] = [np.array([top, 0], dtype=dtype), np.array([top], dtype=dtype)]
    if first_empty:
        documents[0] = []
    if last_empty:
        documents[-1] = []
    return documents


def joined(document, dtype: str) -> np.ndarray:
    """A Megatron document as stoker imports it: its sequences concatenated."""
    return np.concatenate([np.asarray(s, dtype=dtype) for s in document] + [np.zeros(0, dtype)])
