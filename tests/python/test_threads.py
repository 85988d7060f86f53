"""A loader shared by Python threads: their calls are serialized, so every batch goes to one
thread, once, its trace records are whole and in order, and the state saved after them is the
state after every batch handed out."""

import os
import threading

from conftest import WORLD, agree, expect_epoch_zero_whole, loader

PER_THREAD = 150


def test_two_threads_taking_batches_leave_the_state_a_resume_goes_on_from(corpus, shared_dir):
    trace = os.path.join(shared_dir, "trace")
    shared = loader(corpus, trace_dir=trace)
    taken = [[], []]

    def take(mine):
        for _ in range(PER_THREAD):
            mine.append(next(shared))

    threads = [threading.Thread(target=take, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    steps = sorted(batch["step"] for mine in taken for batch in mine)
    agree(steps == list(range(1, 2 * PER_THREAD + 1)),
          f"the threads were handed steps {steps[:8]}..., not 1 to {2 * PER_THREAD} once each")
    assert shared.step == 2 * PER_THREAD

    straight = loader(corpus)
    expected = [next(straight)["tokens"] for _ in range(2 * PER_THREAD)]
    differ = [b["step"] for mine in taken for b in mine
              if not b["tokens"].equal(expected[b["step"] - 1])]
    agree(not differ, f"batches of steps {sorted(differ)[:5]} differ from one thread's stream")

    # Resumed on as many ranks from a save after both threads: the stream goes on as the one
    # thread's would, and `stoker audit` of both runs' traces (which racing calls tore: pieces
    # of 43 or 128 framed tokens in steps of 96) finds every token of epoch 0 once.
    step_dir = os.path.join(shared_dir, f"step-{shared.step}")
    shared.save(step_dir)
    shared.wait_for_save()
    del shared  # its trace closed
    WORLD.Barrier()
    resumed = loader(corpus, resume_from=step_dir, trace_dir=trace)
    differ = [step for step in range(2 * PER_THREAD + 1, 2 * PER_THREAD + 41)
              if not next(resumed)["tokens"].equal(next(straight)["tokens"])]
    agree(not differ, f"resumed after the threads, batches of steps {differ[:5]} differ")
    for _ in range(3 * 102000 // (WORLD.size * 96)):  # far past epoch 0
        next(resumed)
    del resumed
    expect_epoch_zero_whole(trace, corpus, [(0, WORLD.size), (2 * PER_THREAD, WORLD.size)])
