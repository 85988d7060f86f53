"""Dynamic mixing from Python: the datasets' shares of the batches follow a weight schedule's
jumps and ramps; set_weights is the schedule that jumps where it is called; resumes from saves
before, at and after a jump and mid-ramp; schedules as text, files and lists; the errors."""

import inspect
import json
import os

import numpy as np
import pytest
import torch.utils.data

import stoker
from conftest import WORLD, agree, expect_epoch_zero_whole, loader, on_first_ranks

W0 = {"a": 0.5, "b": 0.3, "c": 0.2}  # conftest's loader's weights
W1 = {"a": 0.1, "b": 0.3, "c": 0.6}
JUMP = 6  # the step of the jump in RESUMED
RESUMED = [{"step": 0, "weights": W0}, {"step": JUMP, "weights": W1},
           {"step": 14, "ramp": True, "weights": {"a": 0.6, "b": 0.3, "c": 0.1}}]


def weights_at(schedule, step):
    """The weights of the batch after `step` batches by the entries of `schedule` (normalized,
    as Loader.schedule gives them): the test's own reading of the rule."""
    k = max(i for i, e in enumerate(schedule) if e["step"] <= step)
    here = schedule[k]["weights"]
    if k + 1 == len(schedule) or not schedule[k + 1]["ramp"]:
        return dict(here)
    to = schedule[k + 1]
    t = (step - schedule[k]["step"]) / (to["step"] - schedule[k]["step"])
    return {d: (1 - t) * w + t * to["weights"][d] for d, w in here.items()}


def differing_steps(first, second, steps):
    """The steps, among the next `steps` batches of two loaders, whose tokens differ."""
    differ = []
    for _ in range(steps):
        x, y = next(first), next(second)
        if x["step"] != y["step"] or not x["tokens"].equal(y["tokens"]):
            differ.append(x["step"])
    return differ


def take(stream, steps):
    for _ in range(steps):
        next(stream)
    return stream


def save(stream, shared_dir, name):
    """Saves `stream` on every rank into shared_dir/name/step-<N>; the step folder."""
    step_dir = os.path.join(shared_dir, name, f"step-{stream.step}")
    stream.save(step_dir)
    stream.wait_for_save()
    WORLD.Barrier()
    return step_dir


# Jumps at 40 and 140 (window edges), a ramp over the three windows of 40..100, then constant.
SHARES = "0:a=0.6,b=0.3,c=0.1; 40:a=0.1,b=0.3,c=0.6; ~100:a=0.5,b=0.5; 140:a=0.2,b=0.8"
WINDOW, WINDOWS = 20, 9


def test_dataset_shares_follow_the_schedule(corpus):
    # Windows of 20 batches of 512 tokens. The mixer keeps each dataset within one document of
    # its weights' tokens, but documents run across batches (b's average 90 tokens, log-normal):
    # a window's shares are the weights' within a few hundred tokens.
    stream = loader(corpus, weights=None, weight_schedule=SHARES, seq_len=63, batch_size=8)
    schedule = stream.schedule
    assert [(e["step"], e["ramp"]) for e in schedule] == [(0, False), (40, False), (100, True),
                                                          (140, False)]
    names = ["a", "b", "c"]
    got, want = np.zeros((WINDOWS, 3)), np.zeros((WINDOWS, 3))
    off = []
    for step in range(WINDOW * WINDOWS):
        expected = weights_at(schedule, step)
        if any(abs(stream.weights[d] - expected[d]) > 1e-12 for d in names):
            off.append(step + 1)
        batch = next(stream)
        got[step // WINDOW] += [batch["dataset_tokens"][d] for d in names]
        want[step // WINDOW] += [expected[d] / WINDOW for d in names]
    agree(not off, f"loader.weights is not the schedule's before batches {off[:5]}")
    # The tolerance tells the ramp's windows apart, and a ramp from a jump.
    assert np.abs(np.diff(want[2:5], axis=0)).max(axis=1).min() > 0.1
    mine = np.abs(got / got.sum(axis=1, keepdims=True) - want).max(axis=1)
    total = np.sum(WORLD.allgather(got), axis=0)
    overall = np.abs(total / total.sum(axis=1, keepdims=True) - want).max(axis=1)
    agree(mine.max() < 0.05 and overall.max() < 0.05,
          f"shares off the schedule's by {np.round(mine, 3)} (this rank), "
          f"{np.round(overall, 3)} (all ranks)")


@pytest.mark.parametrize("at", [0, 5])
def test_set_weights_is_the_schedule_jumping_there(corpus, at):
    if at:
        jumps = [{"step": 0, "weights": W0}, {"step": at, "weights": W1}]
        scheduled = loader(corpus, weights=None, weight_schedule=jumps)
    else:  # before the first batch: the run's weights from the start
        scheduled = loader(corpus, weights=W1)
    online = take(loader(corpus), at)
    online.set_weights(W1)
    assert online.weights == pytest.approx(W1) and online.schedule == scheduled.schedule
    take(scheduled, at)
    differ = differing_steps(scheduled, online, 40)
    agree(not differ, f"set_weights after step {at}: batches {differ[:5]} differ")


def test_set_weights_through_a_dataloader(corpus):
    scheduled = loader(corpus, weights=None, weight_schedule=[{"step": 0, "weights": W0},
                                                              {"step": 5, "weights": W1}])
    online = loader(corpus)
    data = iter(torch.utils.data.DataLoader(stoker.LoaderDataset(online), batch_size=None,
                                            num_workers=0))
    differ = []
    for step in range(1, 21):
        if step == 6:
            online.set_weights(W1)
        if not next(data)["tokens"].equal(next(scheduled)["tokens"]):
            differ.append(step)
    agree(not differ, f"through a DataLoader, batches {differ[:5]} differ")


def test_set_weights_mid_ramp_ends_the_ramp_where_it_stood(corpus):
    ramp = [{"step": 0, "weights": W0}, {"step": 20, "ramp": True, "weights": W1}]
    online = take(loader(corpus, weights=None, weight_schedule=ramp), 8)
    stood = online.weights
    online.set_weights({"b": 1, "c": 1})
    assert [(e["step"], e["ramp"]) for e in online.schedule] == [(0, False), (7, True),
                                                                 (8, False)]
    assert online.schedule[1]["weights"] == pytest.approx(weights_at(ramp, 7))
    assert stood == pytest.approx(weights_at(ramp, 8))
    assert online.weights == {"a": 0.0, "b": 0.5, "c": 0.5}
    # The schedule it reports is the stream's: a loader configured with it gives the same one.
    again = take(loader(corpus, weights=None, weight_schedule=online.schedule), 8)
    differ = differing_steps(again, online, 30)
    agree(not differ, f"batches {differ[:5]} differ from the reported schedule's")


@pytest.mark.parametrize("saved_at", [JUMP - 1, JUMP, JUMP + 1, 10])
def test_a_resume_on_the_same_ranks_goes_on_bit_for_bit(corpus, shared_dir, saved_at):
    # Saved before, at and after the jump, and mid-ramp (10, on the way to 14).
    first = take(loader(corpus, weights=None, weight_schedule=RESUMED), saved_at)
    step_dir = save(first, shared_dir, "ck")
    resumed = loader(corpus, weights=None, weight_schedule=RESUMED, resume_from=step_dir)
    assert resumed.step == saved_at and resumed.weights == pytest.approx(first.weights)
    differ = differing_steps(first, resumed, 20)
    agree(not differ, f"saved at step {saved_at}: batches {differ[:5]} differ once resumed")


def test_a_resume_follows_its_own_schedule_from_the_resumed_step(corpus, shared_dir):
    # Resumed at step 9 with a schedule that agrees with the saved run's up to there and jumps
    # at 9 (other weights at the resumed step) or later: the stream is that schedule's.
    step_dir = save(take(loader(corpus), 9), shared_dir, "ck")
    for jump in (9, 12):
        changed = [{"step": 0, "weights": W0}, {"step": jump, "weights": W1}]
        straight = take(loader(corpus, weights=None, weight_schedule=changed), 9)
        resumed = loader(corpus, weights=None, weight_schedule=changed, resume_from=step_dir)
        differ = differing_steps(straight, resumed, 20)
        agree(not differ, f"jump at {jump}: batches {differ[:5]} differ from the schedule's")


def test_weights_set_online_are_the_configurations_again_at_a_resume(corpus, shared_dir):
    online = take(loader(corpus), 4)
    online.set_weights(W1)
    take(online, 4)
    online.set_weights({"a": 1, "c": 1})  # at the step saved, too
    kept = online.schedule  # what a trainer keeps beside its checkpoint
    assert [e["step"] for e in kept] == [0, 4, 8]
    step_dir = save(online, shared_dir, "ck")
    state = online.state_dict()
    assert loader(corpus, resume_from=step_dir).weights == pytest.approx(W0)
    resumed = loader(corpus, weights=None, weight_schedule=kept, resume_from=step_dir)
    assert resumed.weights == {"a": 0.5, "b": 0.0, "c": 0.5}
    differ = differing_steps(online, resumed, 20)
    agree(not differ, f"resumed with the kept schedule: batches {differ[:5]} differ")
    # load_state_dict rebuilds the loader from its configuration: a set_weights before it would
    # be lost without a word.
    fresh = loader(corpus)
    fresh.set_weights(W1)
    with pytest.raises(stoker.ConfigError, match="after set_weights"):
        fresh.load_state_dict(state)


def test_saved_mid_ramp_resumed_on_fewer_ranks_every_token_once(corpus, shared_dir):
    ranks = max(WORLD.size - 1, 1)  # on 4 ranks: resumed on 3
    trace = os.path.join(shared_dir, "trace")
    first = take(loader(corpus, weights=None, weight_schedule=RESUMED, trace_dir=trace), 10)
    step_dir = save(first, shared_dir, "ck")
    del first

    def resume(sub):
        resumed = loader(corpus, weights=None, weight_schedule=RESUMED, resume_from=step_dir,
                         comm=sub, trace_dir=trace)
        # Past this rank's share of epoch 0 of every dataset at the last weights (a: 60,000
        # tokens and their EOS at 0.6) with room to spare.
        take(resumed, 2 * 102000 // (ranks * 96) + 10)
    on_first_ranks(ranks, resume)
    expect_epoch_zero_whole(trace, corpus, [(0, WORLD.size), (10, ranks)])


def test_a_schedule_as_text_file_or_list_is_one_schedule(corpus, shared_dir):
    text = "0:a=0.5,b=0.3,c=0.2; 6:a=0.1,b=0.3,c=0.6; ~14:a=0.6,b=0.3,c=0.1"
    toml = os.path.join(shared_dir, "schedule.toml")
    js = os.path.join(shared_dir, "schedule.json")
    if WORLD.rank == 0:
        with open(toml, "w") as out:
            out.write("".join(f"[[schedule]]\nstep = {e['step']}\nramp = "
                              f"{str(e.get('ramp', False)).lower()}\nweights = {{ " +
                              ", ".join(f"{d} = {w}" for d, w in e["weights"].items()) + " }\n"
                              for e in RESUMED))
        with open(js, "w") as out:
            json.dump({"schedule": RESUMED}, out)
    WORLD.Barrier()
    parsed = stoker.parse_weight_schedule(text)
    assert parsed == [dict(e, ramp=e.get("ramp", False)) for e in RESUMED]
    schedules = [loader(corpus, weights=None, weight_schedule=s).schedule
                 for s in (text, toml, js, RESUMED, parsed)]
    assert all(s == schedules[0] for s in schedules), schedules


def test_errors_name_what_is_wrong(corpus):
    cases = [
        (dict(weight_schedule="0:a=1"), "both weights and a weight schedule"),
        (dict(weights=None, weight_schedule="0:a=1;~5:b=x"), "'~5:b=x'"),
        (dict(weights=None, weight_schedule="0:a=1;5:zzz=1"), "entry 2 (step 5) names dataset zzz"),
        (dict(weights=None, weight_schedule="0:a=1;5:a=1;3:b=1"), "entry 3 (step 3)"),
        (dict(weights=None, weight_schedule=[{"step": 0, "weights": {"a": 1}},
                                             {"step": 4, "wieghts": {"a": 1}}]),
         "weight_schedule entry 2 {'step': 4, 'wieghts': {'a': 1}}: unknown key 'wieghts'"),
        (dict(weights=None, weight_schedule=[{"step": -1, "weights": {"a": 1}}]), "step=-1"),
        (dict(weights=None, weight_schedule=[]), "no entries"),
    ]
    for settings, words in cases:
        with pytest.raises(stoker.ConfigError) as raised:
            loader(corpus, **settings)
        assert words in str(raised.value)
        messages = WORLD.allgather(str(raised.value))
        assert len(set(messages)) == 1, messages
    # For a trainer's --check: every problem at once, a schedule that does not parse too.
    problems = stoker.config_problems(corpus, weights=W0, seq_len=0, weight_schedule=[
        {"step": 0, "weights": {"a": 1}}, {"step": 3, "weights": {"a": 0}}])
    for words in ("entry 2 (step 3): every weight is 0", "both weights and a weight schedule",
                  "--seq-len"):
        assert sum(words in p for p in problems) == 1, (words, problems)
    problems = stoker.config_problems(corpus, weights=None, seq_len=0, weight_schedule="0:a=x")
    assert "'0:a=x'" in problems[0] and "--seq-len" in problems[1], problems


def test_set_weights_refused_names_the_dataset_and_changes_nothing(corpus):
    stream, twin = take(loader(corpus), 3), take(loader(corpus), 3)
    with pytest.raises(stoker.ConfigError, match="zzz") as raised:
        stream.set_weights({"a": 1, "zzz": 1})
    assert len(set(WORLD.allgather(str(raised.value)))) == 1
    with pytest.raises(stoker.ConfigError, match="is not a number"):
        stream.set_weights({"a": "much"})
    assert stream.schedule == twin.schedule
    differ = differing_steps(stream, twin, 10)
    agree(not differ, f"after a refused set_weights, batches {differ[:5]} differ")


def test_help_explains_dynamic_mixing():
    signature = inspect.signature(stoker.Loader)
    assert signature.parameters["weight_schedule"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "ramp" in inspect.getdoc(stoker.Loader)
    doc = inspect.getdoc(stoker.Loader.set_weights)
    for words in ("next batch", "Collective", "same step", "resume", "ConfigError"):
        assert words in doc, words
    assert "ramp" in inspect.getdoc(stoker.parse_weight_schedule)
