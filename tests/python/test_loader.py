"""stoker.Loader against the C++ loader: the same stream byte for byte as torch tensors and as
numpy arrays (and in a process where torch cannot be imported), tensors and arrays that are the
loader's own memory, the boundary fields, errors raised on every rank, the GIL released while a
batch is awaited, the DataLoader wrapper, and the documentation a user sees."""

import inspect
import os
import subprocess
import sys
import time
import typing

import numpy as np
import pytest
import torch

import stoker
from conftest import WORLD, agree, loader, once
from spinner import Spinner


@pytest.mark.parametrize("tensors", ["torch", "numpy"])
def test_the_stream_is_the_cpp_loaders_byte_for_byte(corpus, tensors):
    # run.sh: `stoker run --dump` of the same configuration, 40 steps, at this world size.
    rows = np.fromfile(os.path.join(os.environ["STOKER_TEST_DUMP"], f"rank-{WORLD.rank}.bin"),
                       dtype="<i8").reshape(-1, 32)
    assert len(rows) == 40 * 3
    stream = loader(corpus, tensors=tensors)
    kind = torch.Tensor if tensors == "torch" else np.ndarray
    differ = []
    for step in range(40):
        batch = next(stream)
        if (batch["step"] != step + 1 or not isinstance(batch["tokens"], kind)
                or not np.array_equal(np.asarray(batch["tokens"]), rows[3 * step:3 * step + 3])):
            differ.append(step + 1)
    agree(not differ, f"batches of steps {differ[:5]} differ from `stoker run --dump`")


@once
def test_a_process_without_torch_streams_numpy_arrays(corpus, tmp_path):
    # Plain processes (Open MPI's variables left out): `stoker run --dump` at one rank, then
    # without_torch.py, where `import torch` fails, against it.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    dump = str(tmp_path / "dump")
    subprocess.run([os.environ["STOKER"], "run", "--data", corpus, "--seq-len", "31",
                    "--batch-size", "3", "--seed", "4", "--weights", "a=0.5,b=0.3,c=0.2",
                    "--steps", "40", "--dump", dump], env=env, check=True, capture_output=True,
                   timeout=120)
    script = os.path.join(os.path.dirname(__file__), "without_torch.py")
    done = subprocess.run([sys.executable, script, corpus, dump], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stdout + done.stderr[-2000:]


def test_arrays_are_the_loaders_memory(corpus):
    stream = loader(corpus, tensors="numpy")
    for _ in range(5):
        batch = next(stream)
        tokens = batch["tokens"]
        assert stream._holds_filled_buffer(batch), "tokens is a copy of the loader's buffer"
        assert isinstance(tokens, np.ndarray) and tokens.dtype == np.int64
        assert tokens.shape == (3, 32) and tokens.flags.writeable
        assert batch["input_ids"].ctypes.data == tokens.ctypes.data
        assert np.array_equal(batch["labels"], tokens[:, 1:])  # a buffer of its own
        assert not np.shares_memory(batch["labels"], tokens)
    # The arrays outlive the loader: each owns the buffer it was filled in.
    del stream
    assert np.array_equal(batch["input_ids"][:, 1:], batch["tokens"][:, 1:-1])


def test_tensors_are_the_loaders_memory(corpus):
    stream = loader(corpus)
    for _ in range(5):
        batch = next(stream)
        tokens = batch["tokens"]
        assert stream._holds_filled_buffer(batch), "tokens is a copy of the loader's buffer"
        assert tokens.dtype == torch.int64 and tokens.shape == (3, 32)
        assert batch["input_ids"].shape == batch["labels"].shape == (3, 31)
        # input_ids a view of tokens (the same storage), labels a copy of its columns from 1 on.
        assert batch["input_ids"].data_ptr() == tokens.data_ptr()
        assert torch.equal(batch["labels"], tokens[:, 1:])
        assert not np.shares_memory(batch["labels"].numpy(), tokens.numpy())
        assert sum(batch["dataset_tokens"].values()) == 3 * 32
        assert set(batch["dataset_tokens"]) == {"a", "b", "c"}
        assert not {"position_ids", "cu_seqlens", "segment_ids", "loss_mask"} & set(batch)


def test_boundaries_follow_the_documents(corpus):
    stream = loader(corpus, boundaries=True, bos_id=96001)  # the corpus's vocabulary holds it
    for _ in range(20):
        batch = next(stream)
        inputs, segments = batch["input_ids"], batch["segment_ids"]
        assert batch["position_ids"].dtype == torch.int64
        assert segments.dtype == batch["cu_seqlens"].dtype == torch.int32
        assert batch["loss_mask"].dtype == torch.float32
        # With BOS on, every document a row holds from its start begins with BOS at position 0
        # and a new segment; each segment's positions count up by one.
        starts = inputs == 96001
        assert torch.all(batch["position_ids"][starts] == 0)
        first_of_segment = torch.ones_like(starts)
        first_of_segment[:, 1:] = segments[:, 1:] != segments[:, :-1]
        assert torch.all(first_of_segment[starts])
        assert torch.all(batch["position_ids"][~first_of_segment] ==
                         batch["position_ids"][:, :-1][~first_of_segment[:, 1:]] + 1)
        lengths = torch.diff(batch["cu_seqlens"])
        assert int(lengths.max()) == batch["max_seqlen"]
        assert int(batch["cu_seqlens"][-1]) == inputs.numel()
        assert len(lengths) == int(segments.max(dim=1).values.sum())
        # The label of an input that ends a document's piece is masked: the next one's BOS, or
        # the rest of a document that another one came before (mixing/lane.h) - a new segment.
        masked = batch["loss_mask"] == 0
        assert torch.equal(masked[:, :-1], first_of_segment[:, 1:])
        assert torch.all(masked[batch["labels"] == 96001])
        assert torch.all(batch["loss_mask"][~masked] == 1)
        # The trainer's masking idiom changes the labels alone.
        inputs_before, tokens_before = inputs.clone(), batch["tokens"].clone()
        batch["labels"][masked] = -100
        assert torch.equal(inputs, inputs_before) and torch.equal(batch["tokens"], tokens_before)
        assert torch.all(batch["labels"][masked] == -100)
        assert torch.equal(batch["labels"][~masked], batch["tokens"][:, 1:][~masked])


def test_errors_are_raised_on_every_rank_with_one_message(corpus, shared_dir):
    cases = [(dict(data=os.path.join(shared_dir, "nowhere")), stoker.ConfigError, "does not exist"),
             (dict(seq_len=0), stoker.ConfigError, "--seq-len must be at least 1"),
             (dict(weights={"a": 1, "zzz": 1}), stoker.ConfigError, "zzz"),
             (dict(positions="sideways", boundaries=True), stoker.ConfigError, "positions")]
    for settings, kind, words in cases:
        data = settings.pop("data", corpus)
        with pytest.raises(kind) as raised:
            loader(data, **settings)
        assert isinstance(raised.value, stoker.Error)
        assert words in str(raised.value)
        messages = WORLD.allgather(str(raised.value))
        assert len(set(messages)) == 1, messages


def test_next_lets_other_python_threads_run(corpus):
    # Batches of 4 M tokens take the loader tens of milliseconds each, far longer than Python
    # takes to hand one over: taking them in a row, the trainer's thread mostly waits in next().
    # A thread that counts meanwhile counts at about its own speed if next() lets go of the GIL
    # (0.8 to 0.95 of it here), and hardly at all if it holds it (0.14).
    stream = loader(corpus, seq_len=8191, batch_size=512, prefetch=1, read_ahead_bytes=0)
    next(stream)
    with Spinner() as spinner:
        alone = spinner.rate(lambda: time.sleep(0.3))
        start = time.perf_counter()
        beside = spinner.rate(lambda: [next(stream) for _ in range(10)])
        per_batch = (time.perf_counter() - start) / 10
    assert per_batch > 0.005, f"batches came in {per_batch * 1e3:.1f} ms: nothing was awaited"
    assert beside > 0.35 * alone, (
        f"the other thread counted {beside:.0f}/s while next() waited, {alone:.0f}/s alone")


def test_a_dataloader_takes_the_batches_as_they_are(corpus):
    direct, wrapped = loader(corpus), loader(corpus)
    data = torch.utils.data.DataLoader(stoker.LoaderDataset(wrapped), batch_size=None,
                                       num_workers=0)
    for batch, step in zip(data, range(5)):
        assert torch.equal(batch["tokens"], next(direct)["tokens"])
        assert batch["step"] == step + 1


def test_a_dataset_forwards_the_state_protocol(corpus, shared_dir):
    dataset = stoker.LoaderDataset(loader(corpus))
    batches = iter(torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0))
    for _ in range(5):
        next(batches)
    dataset.loader.save(os.path.join(shared_dir, "step-5"))
    state = dataset.state_dict()
    assert state == dataset.loader.state_dict() and state["step"] == 5
    after = next(batches)
    again = stoker.LoaderDataset(loader(corpus))
    again.load_state_dict(state)
    assert torch.equal(next(iter(again))["tokens"], after["tokens"])


def test_closed_loaders_and_the_standard_exceptions(corpus):
    with loader(corpus) as stream:
        next(stream)
    assert stream.closed
    stream.close()  # again: nothing to do
    with pytest.raises(stoker.ConfigError, match="closed"):
        next(stream)
    for kind, standard in ((stoker.ConfigError, ValueError), (stoker.DataError, ValueError),
                           (stoker.IoError, OSError), (stoker.Hdf5Error, OSError),
                           (stoker.MpiError, RuntimeError), (stoker.InternalError, RuntimeError),
                           (stoker.BusyError, stoker.ConfigError)):
        assert issubclass(kind, stoker.Error) and issubclass(kind, standard), kind
    with pytest.raises(ValueError, match="seq-len must be at least 1"):
        loader(corpus, seq_len=0)


def test_help_explains_the_loader():
    doc = inspect.getdoc(stoker.Loader)
    for words in ("collective", "input_ids", "labels", "no copy", "position_ids", "cu_seqlens",
                  "segment_ids", "loss_mask", "GIL", "ConfigError", "resume_from"):
        assert words in doc, words
    for name in ("state_dict", "load_state_dict", "save", "wait_for_save"):
        assert inspect.getdoc(getattr(stoker.Loader, name)), name
    signature = inspect.signature(stoker.Loader)
    assert signature.parameters["seq_len"].default == 4096
    assert signature.parameters["seq_len"].kind is inspect.Parameter.KEYWORD_ONLY
    assert typing.get_type_hints(stoker.Loader.__init__)["data"] == stoker.arguments.Path
