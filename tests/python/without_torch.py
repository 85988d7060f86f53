"""A process where torch cannot be imported (as where it is not installed): `import stoker` and a
whole stream of numpy arrays. Run by test_loader.py as `python3 without_torch.py CORPUS DUMP`, a
plain process outside the test's mpirun job (a world of one rank), against `stoker run --dump
DUMP` of conftest.loader's configuration at one rank. Prints what it found wrong, or "ok"."""

import sys

sys.modules["torch"] = None  # `import torch` raises ImportError from here on

import numpy as np  # noqa: E402

import stoker  # noqa: E402


def main(corpus: str, dump: str) -> None:
    problems = []
    rows = np.fromfile(f"{dump}/rank-0.bin", dtype="<i8").reshape(-1, 32)
    loader = stoker.Loader(corpus, seq_len=31, batch_size=3, seed=4,
                           weights={"a": 0.5, "b": 0.3, "c": 0.2}, boundaries=True)
    if loader.tensors != "numpy":
        problems.append(f"tensors {loader.tensors!r} without torch")
    for step in range(len(rows) // 3):
        batch = next(loader)
        tokens = batch["tokens"]
        if type(tokens) is not np.ndarray or tokens.dtype != np.int64:
            problems.append(f"step {step + 1}: tokens of type {type(tokens)}")
            break
        if not np.array_equal(tokens, rows[3 * step:3 * step + 3]):
            problems.append(f"step {step + 1}: differs from `stoker run --dump`")
        # The loader's own buffer and a view of it, no copy; labels a copy of their own.
        if (not loader._holds_filled_buffer(batch)
                or batch["input_ids"].ctypes.data != tokens.ctypes.data):
            problems.append(f"step {step + 1}: tokens or input_ids are copies")
        if np.shares_memory(batch["labels"], tokens) or not np.array_equal(batch["labels"],
                                                                           tokens[:, 1:]):
            problems.append(f"step {step + 1}: labels are not tokens[:, 1:] of their own")
        for key, dtype in (("position_ids", np.int64), ("cu_seqlens", np.int32),
                           ("segment_ids", np.int32), ("loss_mask", np.float32)):
            if batch[key].dtype != dtype:
                problems.append(f"step {step + 1}: {key} of {batch[key].dtype}")
    if "torch" in sys.modules and sys.modules["torch"] is not None:
        problems.append("torch was imported")
    print("\n".join(problems[:10]) or "ok", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
