"""Settings of the wrong type or out of range are a ConfigError naming the argument, from the
constructor and from config_problems alike; BOS equal to EOS is refused."""

import pytest

import stoker
from conftest import WORLD, loader

WRONG = [
    (dict(seq_len=-1), "seq_len=-1 is not a whole number from 0 to"),
    (dict(seq_len=True), "seq_len=True is not a whole number"),
    (dict(batch_size=2.5), "batch_size=2.5 is not a whole number"),
    (dict(seed=-3), "seed=-3 is not a whole number"),
    (dict(prefetch=2**32), "prefetch=4294967296 is not a whole number from 0 to 4294967295"),
    (dict(boundaries="no"), "boundaries='no' is not True or False"),
    (dict(eos_id=2**63), "eos_id=9223372036854775808 is not a whole number"),
    (dict(bos_id="1"), "bos_id='1' is not a whole number"),
    (dict(io_depth="deep"), "io_depth='deep' is not a whole number"),
    (dict(io_engine=1), "io_engine=1 is not a string"),
    (dict(weights="a=1"), "weights='a=1' is not a dict of dataset name -> weight"),
]


@pytest.mark.parametrize("settings,words", WRONG)
def test_a_wrong_argument_is_a_config_error_naming_it(corpus, settings, words):
    with pytest.raises(stoker.ConfigError) as raised:
        loader(corpus, **settings)
    assert words in str(raised.value)
    with pytest.raises(stoker.ConfigError) as raised:
        stoker.config_problems(corpus, **settings)
    assert words in str(raised.value)


def test_bos_equal_to_eos_is_refused(corpus):
    words = "--bos-id 7 is the EOS id (--eos-id)"
    assert any(words in p for p in stoker.config_problems(corpus, eos_id=7, bos_id=7))
    with pytest.raises(stoker.ConfigError, match=r"--bos-id 7 is the EOS id \(--eos-id\)"):
        loader(corpus, eos_id=7, bos_id=7)
    # The EOS id the corpus gives (its eos_id attribute, else 0) is checked at construction.
    eos = loader(corpus).eos_id
    with pytest.raises(stoker.ConfigError) as raised:
        loader(corpus, bos_id=eos)
    assert f"--bos-id {eos} is the EOS id (the corpus's" in str(raised.value)
    assert len(set(WORLD.allgather(str(raised.value)))) == 1
