"""The Python example trainer (src/train/): its model attends within documents with --doc-mask,
on real batches of the loader; train.py --check names each wrong setting without MPI."""

import os
import subprocess
import sys

import torch

from conftest import agree, loader, once

TRAIN = os.path.join(os.environ["STOKER_SOURCE"], "src", "train")
sys.path.insert(0, TRAIN)
from tiny_lm import Shape, TinyLm  # noqa: E402


def _model(seq_len):
    torch.manual_seed(7)
    return TinyLm(Shape(vocab=1000, dim=32, layers=2, heads=4, context=seq_len)).eval()


def test_a_documents_predictions_depend_on_it_alone(corpus):
    """Row by row of real batches: the logits of each document's tokens with --doc-mask's
    inputs equal those of the document alone (positions from 0, nothing else in the row), and
    without the mask they do not (the test can fail)."""
    batch = next(loader(corpus, boundaries=True))
    inputs = batch["input_ids"] % 1000  # the corpus's unique token ids, in a small vocabulary
    model = _model(inputs.shape[1])
    ok, leaks = True, False
    with torch.no_grad():
        masked = model(inputs, batch["position_ids"], batch["segment_ids"])
        plain = model(inputs, batch["position_ids"])
        for row, segments in enumerate(batch["segment_ids"]):
            for s in segments.unique():
                at = (segments == s).nonzero().flatten()
                alone = model(inputs[row, at].unsqueeze(0),
                              batch["position_ids"][row, at].unsqueeze(0))[0]
                ok &= torch.allclose(masked[row, at], alone, atol=1e-5)
                leaks |= not torch.allclose(plain[row, at], alone, atol=1e-5)
    agree(ok, "a document's logits depend on the other documents of its row")
    agree(leaks or batch["segment_ids"].max() == 1,
          "without the mask no document saw another: the test cannot tell")


def _check(*flags):
    env = dict(os.environ, PYTHONPATH=os.environ["PYTHONPATH"])
    for name in list(env):  # a process of its own, not a rank of this job
        if name.startswith(("OMPI_", "PMIX_")):
            del env[name]
    return subprocess.run([sys.executable, os.path.join(TRAIN, "train.py"), "--check", *flags],
                          env=env, capture_output=True, text=True, timeout=120)


@once
def test_check_names_each_wrong_setting_and_runs_no_mpi(corpus):
    bad = _check("--data", corpus, "--steps", "0", "--seq-len", "0", "--heads", "3",
                 "--weights", "a=x", "--resume")
    assert bad.returncode == 2, bad
    for flag in ("--steps", "--seq-len", "--heads", "--weights", "--resume needs"):
        assert flag in bad.stderr, (flag, bad.stderr)
    assert "Traceback" not in bad.stderr, bad.stderr
    unparsed = _check("--data", corpus, "--steps", "x")
    assert unparsed.returncode == 2 and "--steps" in unparsed.stderr, unparsed
    assert "--seq-len" not in unparsed.stderr, "only the wrong flag is named"
    good = _check("--data", corpus, "--seq-len", "31", "--batch-size", "3")
    assert good.returncode == 0 and good.stderr == "", good
