"""Settings every rank must give alike, from Python: a seed per rank (``seed = base + rank``) or a
logical-shard count per rank is a ConfigError on every rank naming the setting and the ranks;
``set_weights`` with other weights on one rank is refused on every rank and the loader goes on."""

import pytest

import stoker
from conftest import WORLD, agree, loader

LAST = WORLD.size - 1
OTHERS = "rank 0" if LAST == 1 else f"ranks 0-{LAST - 1}"
two_ranks = pytest.mark.skipif(WORLD.size < 2, reason="a difference between ranks needs two")


def refusal(**settings) -> str:
    """The ConfigError every rank gets building a loader with `settings`, or ''."""
    try:
        loader(settings.pop("corpus"), **settings)
        return ""
    except stoker.ConfigError as error:
        return str(error)


@two_ranks
def test_a_seed_per_rank_is_refused_on_every_rank(corpus):
    message = refusal(corpus=corpus, seed=1000 + WORLD.rank)
    values = "; ".join(f"{1000 + r} on rank {r}" for r in range(WORLD.size))
    agree(f"\n  seed: {values}" in message, f"no seed line in {message!r}")


@two_ranks
def test_logical_shards_on_one_rank_is_refused_on_every_rank(corpus):
    message = refusal(corpus=corpus, logical_shards=32 if WORLD.rank == LAST else 64)
    want = f"logical_shards: 64 on {OTHERS}; 32 on rank {LAST}"
    agree(message.endswith(want), f"{message!r} does not end with {want!r}")


@two_ranks
def test_set_weights_differing_on_one_rank_is_refused_and_the_loader_goes_on(corpus):
    online = loader(corpus)
    next(online)
    before = online.weights
    mine = {"a": 1.0} if WORLD.rank == LAST else {"b": 1.0}
    with pytest.raises(stoker.ConfigError) as refused:
        online.set_weights(mine)
    want = f"weights: b=1 on {OTHERS}; a=1 on rank {LAST}"
    agree(want in str(refused.value), f"{str(refused.value)!r} lacks {want!r}")
    agree(online.weights == before, f"weights changed to {online.weights}")
    online.set_weights({"a": 1.0})
    agree(online.weights["a"] == 1.0, f"weights {online.weights} after an agreed call")
    next(online)
