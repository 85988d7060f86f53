"""Checkpoints from Python: saved on every rank of the world, resumed on fewer ranks (every token
of epoch 0 once, by `stoker audit` of the piece traces), and the state-dict protocol."""

import json
import os
import shutil

import pytest

import stoker
from conftest import WORLD, expect_epoch_zero_whole, loader, on_first_ranks

TAKEN = 7  # batches before the save


def save_on_every_rank(corpus, shared_dir):
    """TAKEN batches on the whole world with a trace, then a save; the step folder."""
    trace = os.path.join(shared_dir, "trace")
    first = loader(corpus, trace_dir=trace)
    for _ in range(TAKEN):
        next(first)
    step_dir = os.path.join(shared_dir, "ck", f"step-{TAKEN}")
    first.save(step_dir)
    first.wait_for_save()
    WORLD.Barrier()
    return step_dir, trace


@pytest.mark.parametrize("fewer", [1, 2])
def test_saved_on_every_rank_resumed_on_fewer_every_token_once(corpus, shared_dir, fewer):
    ranks = max(WORLD.size - fewer, 1)  # on 4 ranks: resumed on 3 and on 2
    step_dir, trace = save_on_every_rank(corpus, shared_dir)

    def resume(sub):
        resumed = loader(corpus, resume_from=step_dir, comm=sub, trace_dir=trace)
        assert resumed.step == TAKEN and resumed.world_size == ranks
        # Far past this rank's share of epoch 0 (96,000 tokens and their EOS over the ranks).
        for _ in range(3 * 102000 // (ranks * 96) + 10):
            next(resumed)
    on_first_ranks(ranks, resume)
    expect_epoch_zero_whole(trace, corpus, [(0, WORLD.size), (TAKEN, ranks)])


def test_state_dict_goes_on_from_the_saved_step_on_any_rank_count(corpus, shared_dir):
    step_dir, _ = save_on_every_rank(corpus, shared_dir)
    straight = loader(corpus, resume_from=step_dir)
    expected = [next(straight)["tokens"] for _ in range(5)]

    first = loader(corpus)
    with pytest.raises(stoker.ConfigError, match="call loader.save"):
        first.state_dict()
    for _ in range(TAKEN):
        next(first)
    first.save(step_dir)  # the same state as save_on_every_rank's
    first.wait_for_save()
    state = first.state_dict()
    assert state["step_dir"] == step_dir and state["step"] == TAKEN
    assert "cursors" not in json.dumps(state)
    with pytest.raises(stoker.ConfigError, match="after 7 batches were taken"):
        first.load_state_dict(state)

    again = loader(corpus)
    again.load_state_dict(state)
    assert again.step == TAKEN
    for tokens in expected:
        assert next(again)["tokens"].equal(tokens)

    other = loader(corpus, seed=5)
    with pytest.raises(stoker.ConfigError, match="seed: saved 4, now 5"):
        other.load_state_dict(state)
    WORLD.Barrier()
    if WORLD.rank == 0:
        shutil.rmtree(os.path.join(shared_dir, "ck"))


def test_after_a_failed_load_state_dict_the_loader_goes_on(corpus, shared_dir):
    step_dir, _ = save_on_every_rank(corpus, shared_dir)
    state = take_state(corpus, step_dir)
    missing = dict(state, step_dir=os.path.join(shared_dir, "ck", "step-99"))
    fresh, twin = loader(corpus), loader(corpus)
    with pytest.raises(stoker.Error, match="step-99"):
        fresh.load_state_dict(missing)
    # As it was: the fresh stream from step 1, and a good state still loads.
    for _ in range(3):
        assert next(fresh)["tokens"].equal(next(twin)["tokens"])
    again = loader(corpus)
    with pytest.raises(stoker.Error):
        again.load_state_dict(missing)
    again.load_state_dict(state)
    assert again.step == TAKEN


def test_state_dict_right_after_a_resume_names_the_step_resumed_from(corpus, shared_dir):
    step_dir, _ = save_on_every_rank(corpus, shared_dir)
    state = take_state(corpus, step_dir)
    resumed = loader(corpus)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    assert loader(corpus, resume_from=step_dir).state_dict() == state


def test_the_trace_starts_where_load_state_dict_resumes(corpus, shared_dir):
    """A job traced through the state-dict protocol: the second run is constructed as the
    first was (trace_dir too), then given the state; `stoker audit` of both runs is clean."""
    step_dir, trace = save_on_every_rank(corpus, shared_dir)
    state = take_state(corpus, step_dir)
    second = loader(corpus, trace_dir=trace)
    second.load_state_dict(state)
    for _ in range(3 * 102000 // (WORLD.size * 96) + 10):  # far past epoch 0
        next(second)
    expect_epoch_zero_whole(trace, corpus, [(0, WORLD.size), (TAKEN, WORLD.size)])


def take_state(corpus, step_dir):
    """The state_dict() of a loader that took TAKEN batches and saved into `step_dir`."""
    first = take_batches(loader(corpus), TAKEN)
    first.save(step_dir)
    return first.state_dict()


def take_batches(stream, count):
    for _ in range(count):
        next(stream)
    return stream
