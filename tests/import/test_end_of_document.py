"""The id the loader appends to every document is never filled in for the user: a Megatron import
takes --eod-id (the id each document ends with, taken off) or --eos-id (documents kept whole,
the id recorded for the loader to append), and without either it is refused, saying which to
choose. At 2 ranks of a real mpirun; the --eod-id import itself is test_import.py's
test_megatron_eod_id."""

import numpy as np

import formats
from import_checks import (assert_documents, import_fails, import_ok, joined, random_tokens,
                           read_dataset)

EOD = 50256


def write_gpt2_prefix(path, with_eod: int) -> list:
    """A uint16 Megatron prefix of 30 documents of 1 to 3 sequences, the first `with_eod` of them
    ending in EOD as Megatron's --append-eod writes them; returns the documents, whole."""
    rng = np.random.default_rng(21)
    documents = []
    for i in range(30):
        sequences = [random_tokens(rng, "uint16", int(rng.integers(1, 20)), high=EOD - 1)
                     for _ in range(int(rng.integers(1, 4)))]
        if i < with_eod:
            sequences[-1] = np.append(sequences[-1], EOD).astype("uint16")
        documents.append(sequences)
    formats.write_megatron(path, documents, "uint16")
    return [joined(d, "uint16") for d in documents]


def test_megatron_without_an_end_of_document_id_is_refused(run, tmp_path):
    """No --eod-id and no --eos-id: refused once, before anything is written, with a message
    that names both options and says where the id comes from."""
    write_gpt2_prefix(tmp_path / "gpt2_text_document", with_eod=30)
    out = tmp_path / "corpus" / "web"
    output = import_fails(run, 2, "megatron", [tmp_path / "gpt2_text_document"], out,
                          names=["does not guess", "--eod-id ID", "--eos-id ID",
                                 "preprocess_data.py (--append-eod)"])
    assert output.count("does not guess") == 1, output


def test_megatron_eos_id_keeps_documents_whole(run, tmp_path):
    """--eos-id N: every document is imported whole (those ending in N keep it), N is recorded as
    eos_id, and a warning counts the documents that already end in N (the loader would append
    a second one) and points to --eod-id."""
    expected = write_gpt2_prefix(tmp_path / "gpt2_text_document", with_eod=12)
    out = tmp_path / "corpus" / "web"
    output = import_ok(run, 2, "megatron", [tmp_path / "gpt2_text_document"], out,
                       "--eos-id", EOD, "--vocab-size", EOD + 1)
    dataset = read_dataset(out, "megatron", 2)
    assert_documents(dataset.documents, expected)
    assert dataset.attribute("eos_id") == EOD
    assert f"12 of 30 documents already end in --eos-id {EOD}" in output, output
    assert f"--eod-id {EOD}" in output, output


def test_megatron_takes_one_id_not_both(run, tmp_path):
    """--eod-id and --eos-id together: refused, naming both."""
    write_gpt2_prefix(tmp_path / "gpt2_text_document", with_eod=30)
    out = tmp_path / "corpus" / "web"
    import_fails(run, 2, "megatron", [tmp_path / "gpt2_text_document"], out, "--eod-id", EOD,
                 "--eos-id", EOD, names=["one of --eod-id", "not both"])
