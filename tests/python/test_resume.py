"""Checkpoints from Python: saved on every rank of the world, resumed on fewer ranks (every token
of epoch 0 once, by `stoker audit` of the piece traces), and the state-dict protocol: the state
inline on as many ranks (with or without a save), the step folder on fewer (moved since)."""

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
    unsaved = first.state_dict()  # never refused: the state inline, no step folder
    assert unsaved["step"] == 0 and unsaved["step_dir"] is None and unsaved["state"]
    for _ in range(TAKEN):
        next(first)
    first.save(step_dir)  # the same state as save_on_every_rank's
    first.wait_for_save()
    state = first.state_dict()
    assert state["step_dir"] == step_dir and state["step"] == TAKEN
    assert state["step_name"] == f"step-{TAKEN}" and state["world"] == WORLD.size
    with pytest.raises(stoker.ConfigError, match="after 7 batches were taken"):
        first.load_state_dict(state)

    # As many ranks: from the state inline; without its step folder too.
    for given in (state, dict(state, step_dir=None, step_name=None)):
        again = loader(corpus)
        assert again.load_state_dict(given) == "inline" and again.step == TAKEN
        for tokens in expected:
            assert next(again)["tokens"].equal(tokens)

    # Fewer ranks: from the step folder, moved since (checkpoint_dir names where it is now).
    moved = os.path.join(shared_dir, "moved")
    if WORLD.rank == 0:
        shutil.copytree(os.path.join(shared_dir, "ck"), moved)
    WORLD.Barrier()

    def fewer(sub):
        resumed = loader(corpus, comm=sub)
        if sub.Get_size() == WORLD.size:
            return
        used = resumed.load_state_dict(dict(state, step_dir="/gone"), checkpoint_dir=moved)
        assert used == os.path.join(moved, f"step-{TAKEN}") and resumed.step == TAKEN
        with pytest.raises(stoker.ConfigError, match="with no save at that step"):
            loader(corpus, comm=sub).load_state_dict(unsaved)
    on_first_ranks(max(WORLD.size - 1, 1), fewer)

    other = loader(corpus, seed=5)
    with pytest.raises(stoker.ConfigError, match="seed: saved 4, now 5"):
        other.load_state_dict(state)
    WORLD.Barrier()
    if WORLD.rank == 0:
        shutil.rmtree(os.path.join(shared_dir, "ck"))


def test_after_a_failed_load_state_dict_the_loader_goes_on(corpus, shared_dir):
    step_dir, _ = save_on_every_rank(corpus, shared_dir)
    state = take_state(corpus, step_dir)
    missing = dict(state, state=b"", step_dir=os.path.join(shared_dir, "ck", "step-99"))
    fresh, twin = loader(corpus), loader(corpus)
    with pytest.raises(stoker.ConfigError, match="step-99 is missing: no such folder"):
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

    def same(got):  # the state inline holds the run identity, which a resume draws anew
        return {k: v for k, v in got.items() if k != "state"} == {
            k: v for k, v in state.items() if k != "state"}
    assert same(resumed.state_dict())
    assert same(loader(corpus, resume_from=step_dir).state_dict())


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


def test_states_taken_between_saves_resume_as_a_stateful_dataloader_does(corpus):
    # torchdata's StatefulDataLoader takes a state every few batches, with no save; a distributed
    # checkpoint keeps one state per rank. Each state restored into a new loader goes on with
    # the batch after it, on every rank, bit for bit.
    stream = loader(corpus)
    states, batches = {}, []
    for step in range(12):
        if step % 3 == 0:
            states[step] = stream.state_dict()
        batches.append(next(stream)["tokens"])
    per_rank = WORLD.allgather(states)  # what a distributed checkpoint writes, rank by rank
    for step, state in per_rank[WORLD.rank].items():
        again = loader(corpus)
        assert again.load_state_dict(state) == "inline" and again.step == step
        for want in batches[step:step + 3]:
            assert next(again)["tokens"].equal(want)
    if WORLD.size > 1:  # another rank's state is refused, on every rank alike
        with pytest.raises(stoker.ConfigError, match="was given the state of rank"):
            loader(corpus).load_state_dict(per_rank[(WORLD.rank + 1) % WORLD.size][3])


def test_a_save_names_its_folder_absolute_and_refuses_no_path(corpus, shared_dir):
    stream = loader(corpus)
    next(stream)
    here = os.getcwd()
    os.chdir(shared_dir)
    try:
        stream.save("relative/step-1")  # every rank: the same folder, seen from shared_dir
    finally:
        os.chdir(here)
    assert stream.state_dict()["step_dir"] == os.path.join(shared_dir, "relative", "step-1")
    for bad, kind in (("", ValueError), (None, TypeError), (123, TypeError)):
        with pytest.raises(kind, match="save"):
            stream.save(bad)


def test_many_incomplete_steps_are_one_warning(corpus, shared_dir, capfd):
    """Saves one rank never made (its file missing in six newer step folders) are passed over
    with one warning that counts them and names the newest and the oldest, as stoker-train's."""
    step_dir, _ = save_on_every_rank(corpus, shared_dir)
    checkpoint_dir = os.path.dirname(step_dir)
    missing = f"rank-{WORLD.size - 1:05d}-of-{WORLD.size:05d}.ckpt"
    if WORLD.rank == 0:
        for step in range(8, 14):
            newer = os.path.join(checkpoint_dir, f"step-{step}")
            shutil.copytree(step_dir, newer)
            os.remove(os.path.join(newer, "loader", missing))
    WORLD.Barrier()
    capfd.readouterr()
    assert stoker.find_resume_step(checkpoint_dir) == step_dir
    warnings = [line for line in capfd.readouterr().err.splitlines() if "passing over" in line]
    if WORLD.rank == 0:
        assert len(warnings) == 1, warnings
        # The missing file by name; at one rank, the folder holds no rank file at all.
        why = missing if WORLD.size > 1 else "loader holds no rank files"
        assert (f"passing over 6 incomplete checkpoints in {checkpoint_dir} " in warnings[0]
                and f"6 like {checkpoint_dir}/step-13 " in warnings[0]
                and f"the oldest {checkpoint_dir}/step-8" in warnings[0]
                and why in warnings[0]), warnings[0]
    else:
        assert warnings == [], warnings
