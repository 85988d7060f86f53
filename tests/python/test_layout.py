"""Parallel layouts from Python at 4 ranks: with layout="tp=2,dp=2", by broadcast and read by
every member, and with the communicators of layout_comms given instead, every rank holds the
batches of a flat job of 2 ranks at its dp coordinate (rank // 2 here); a layout that does not fit
the job is refused on every rank."""

import pytest

import stoker
from conftest import WORLD, agree, loader, on_first_ranks

four_ranks = pytest.mark.skipif(WORLD.size != 4, reason="the layout here is of 4 ranks")
STEPS = 5


def tokens_of(stream: stoker.Loader) -> list:
    return [next(stream)["tokens"].numpy().tobytes() for _ in range(STEPS)]


def flat_of_two(corpus: str) -> list:
    """Every rank's batches of a flat job of ranks 0 and 1, on every rank."""
    mine = []

    def run(comm):
        mine.extend(tokens_of(loader(corpus, comm=comm)))
    on_first_ranks(2, run)
    return WORLD.allgather(mine)[:2]


def expect_flat_at_each_replica(got: list, flat: list, what: str) -> None:
    everyone = WORLD.allgather(got)
    wrong = [r for r in range(WORLD.size) if everyone[r] != flat[r // 2]]
    agree(not wrong, f"{what}: ranks {wrong} differ from the flat job's rank of their dp")


@four_ranks
@pytest.mark.parametrize("feed", ["broadcast", "read"])
def test_every_member_holds_its_data_parallel_ranks_batches(corpus, feed):
    flat = flat_of_two(corpus)
    stream = loader(corpus, layout="tp=2,dp=2", replica_feed=feed)
    expect_flat_at_each_replica(tokens_of(stream), flat, f"tp=2,dp=2 by {feed}")


@four_ranks
def test_the_communicators_of_layout_comms_serve_the_same(corpus):
    flat = flat_of_two(corpus)
    data_parallel, replica = stoker.layout_comms("tp=2,dp=2")
    agree(data_parallel.size == 2 and replica.size == 2, "groups of other sizes")
    stream = loader(corpus, data_parallel_comm=data_parallel, replica_comm=replica)
    expect_flat_at_each_replica(tokens_of(stream), flat, "the communicators given")
    del stream
    data_parallel.Free()
    replica.Free()


def test_a_layout_that_does_not_fit_is_refused_on_every_rank(corpus):
    with pytest.raises(stoker.ConfigError, match=f"holds {WORLD.size + 1} ranks, the job"):
        loader(corpus, layout=f"dp={WORLD.size + 1}")
    with pytest.raises(stoker.ConfigError, match="'xp' is not a dimension"):
        loader(corpus, layout="xp=2")
