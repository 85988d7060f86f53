"""Parallel layouts from Python at 4 ranks: with layout="tp=2,dp=2", by broadcast and read by
every member, and with the communicators of layout_comms given instead, every rank holds the
batches of a flat job of 2 ranks at its dp coordinate (rank // 2 here); with "cp=2,dp=2" each
rank's input_ids and labels are its part of those rows (chunks c and 3 - c of 4); a layout that
does not fit the job is refused on every rank."""

import numpy as np
import pytest

import stoker
from conftest import WORLD, agree, loader, on_first_ranks

four_ranks = pytest.mark.skipif(WORLD.size != 4, reason="the layout here is of 4 ranks")
STEPS = 5


def tokens_of(stream: stoker.Loader) -> list:
    return [next(stream)["tokens"].numpy().tobytes() for _ in range(STEPS)]


def flat_of_two(corpus: str, **settings) -> list:
    """Every rank's batches of a flat job of ranks 0 and 1, on every rank."""
    mine = []

    def run(comm):
        mine.extend(tokens_of(loader(corpus, comm=comm, **settings)))
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
    data_parallel, replica, gradient = stoker.layout_comms("tp=2,dp=2")
    agree((data_parallel.size, replica.size) == (2, 2), "groups of other sizes")
    agree(gradient.allgather(WORLD.rank) == [WORLD.rank % 2, WORLD.rank % 2 + 2],
          "the gradient group is not the ranks of this rank's tp coordinate")
    stream = loader(corpus, data_parallel_comm=data_parallel, replica_comm=replica)
    expect_flat_at_each_replica(tokens_of(stream), flat, "the communicators given")
    del stream
    for made in (data_parallel, replica, gradient):
        made.Free()


@four_ranks
def test_context_parallel_ranks_get_their_part_of_each_row(corpus):
    flat = flat_of_two(corpus, seq_len=32)
    stream = loader(corpus, seq_len=32, layout="cp=2,dp=2")
    c, chunk = WORLD.rank % 2, 8
    wrong = []
    for step in range(STEPS):
        batch = next(stream)
        rows = np.frombuffer(flat[WORLD.rank // 2][step], dtype=np.int64).reshape(-1, 33)
        starts = (c * chunk, (3 - c) * chunk)
        inputs = np.concatenate([rows[:, s:s + chunk] for s in starts], axis=1)
        labels = np.concatenate([rows[:, s + 1:s + 1 + chunk] for s in starts], axis=1)
        if not (np.array_equal(batch["input_ids"].numpy(), inputs)
                and np.array_equal(batch["labels"].numpy(), labels)):
            wrong.append(step + 1)
    agree(not wrong, f"input_ids or labels at steps {wrong} are not this rank's part of the rows")


def test_a_layout_that_does_not_fit_is_refused_on_every_rank(corpus):
    with pytest.raises(stoker.ConfigError, match=f"holds {WORLD.size + 1} ranks, the job"):
        loader(corpus, layout=f"dp={WORLD.size + 1}")
    with pytest.raises(stoker.ConfigError, match="'xp' is not a dimension"):
        loader(corpus, layout="xp=2")
