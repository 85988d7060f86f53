"""Scenarios that need a process of their own: slow or failing storage through STOKER_FAULTS
(which the module reads when Python loads it), a real SIGINT, the exit code. Run by the tests
(test_processes.py) as `python3 scenarios.py NAME CORPUS WORK`, a plain process
outside the test's mpirun job (a world of one rank); each prints what the test checks, one line
at a time, flushed."""

import os
import random
import signal
import sys
import threading
import time

import torch.utils.data

import stoker
from spinner import Spinner

BASE = dict(seq_len=31, batch_size=3, seed=4, weights={"a": 0.5, "b": 0.3, "c": 0.2},
            prefetch=1, read_ahead_bytes=0)
W1 = {"a": 0.1, "b": 0.3, "c": 0.6}


def say(*words) -> None:
    print(*words, flush=True)


def interrupted_next(corpus: str, work: str) -> None:
    """Takes batches, saying "next" before each and "got STEP" after; the test sends SIGINT while
    one waits for a read STOKER_FAULTS stalls. The handler saves, as a trainer's would; then a
    loader resumed from that save must hand over the interrupted batch."""
    loader = stoker.Loader(corpus, **BASE)
    received = 0
    try:
        while True:
            say("next")
            received = next(loader)["step"]
            say("got", received)
    except KeyboardInterrupt:
        say("interrupted", time.monotonic())
        step_dir = os.path.join(work, f"step-{loader.step}")
        loader.save(step_dir)
        loader.wait_for_save()
        say("saved", loader.step, "received", received)
    reference = stoker.Loader(corpus, **BASE)
    while reference.step < received:
        next(reference)
    expected = next(reference)
    resumed = next(stoker.Loader(corpus, resume_from=step_dir, **BASE))
    same = resumed["step"] == expected["step"] and resumed["tokens"].equal(expected["tokens"])
    say("resumed", resumed["step"], "same" if same else "different")
    # The first loader's reading thread still sleeps in the stalled read: no wait for it.
    os._exit(0)


def set_weights_during_next(corpus: str, work: str) -> None:
    """One thread waits in next() for a read STOKER_FAULTS stalls while another sets weights:
    set_weights waits for that call, and the stream is the one of a loader that set the weights
    after the step where they took effect (the schedule's last entry)."""
    loader = stoker.Loader(corpus, **BASE)
    waiting_since = [0.0]  # when the main thread entered next(); 0 outside
    done = threading.Event()

    def set_weights():
        while not (waiting_since[0] and time.monotonic() - waiting_since[0] > 0.3):
            time.sleep(0.01)
        say("setting weights while next() waits")
        loader.set_weights(W1)
        done.set()

    setter = threading.Thread(target=set_weights)
    setter.start()
    batches = []
    while not done.is_set() or len(batches) < 3 + loader.schedule[-1]["step"]:
        waiting_since[0] = time.monotonic()
        batches.append(next(loader))
        waiting_since[0] = 0.0
    setter.join()
    at = loader.schedule[-1]["step"]
    reference = stoker.Loader(corpus, **BASE)
    expected = [next(reference) for _ in range(at)]
    reference.set_weights(W1)
    expected += [next(reference) for _ in range(len(batches) - at)]
    differ = [b["step"] for b, e in zip(batches, expected)
              if b["step"] != e["step"] or not b["tokens"].equal(e["tokens"])]
    say("set at step", at, "batches", len(batches), "differing", differ)
    os._exit(0)  # the reading threads are done; no wait for the stalled read's sleep


def save_waits_without_the_gil(corpus: str, work: str) -> None:
    """Two saves in a row, each fsync slowed down: the second waits for the first's write while
    another thread counts; it counts at about its own speed if save() lets go of the GIL."""
    loader = stoker.Loader(corpus, **BASE)
    next(loader)
    waited = []

    def second_save():  # the first one's file is being written
        start = time.perf_counter()
        loader.save(os.path.join(work, "step-1-again"))
        waited.append(time.perf_counter() - start)

    with Spinner() as spinner:
        alone = spinner.rate(lambda: time.sleep(0.3))
        loader.save(os.path.join(work, "step-1"))
        beside = spinner.rate(second_save)
    loader.wait_for_save()
    waited = waited[0]
    say("waited", f"{waited:.3f}", "ratio", f"{beside / alone:.3f}")


def unseen_failed_save(corpus: str, work: str) -> None:
    """A save whose write fails in the background, and a program that ends without asking."""
    loader = stoker.Loader(corpus, **BASE)
    for _ in range(3):
        next(loader)
    loader.save(os.path.join(work, "step-3"))
    say("saved, exiting")


def state_dict_of_a_failed_save(corpus: str, work: str) -> None:
    """state_dict() after a save whose write failed: the state inline, no step folder named, the
    first time and after; the process then exits with code 1, naming the failed write."""
    loader = stoker.Loader(corpus, **BASE)
    for _ in range(3):
        next(loader)
    loader.save(os.path.join(work, "step-3"))
    for attempt in (1, 2):
        try:
            state = loader.state_dict()
            say("named", state["step_dir"], "inline", len(state["state"]) > 0)
        except stoker.Error as error:
            say("refused", type(error).__name__, str(error).replace("\n", " "))


class OwnDataset(torch.utils.data.IterableDataset):
    """A user's own wrapper of a loader, as many write one."""

    def __init__(self, loader):
        super().__init__()
        self.loader = loader

    def __iter__(self):
        for batch in self.loader:
            yield batch


def forked_children(corpus: str, work: str) -> None:
    """A loader used in forked processes: DataLoader workers (num_workers=2) around the
    package's LoaderDataset and around a user's own dataset, and a plain os.fork(). Each child
    must raise ConfigError at its first batch: none is served twice, nothing hangs."""
    loader = stoker.Loader(corpus, **BASE)
    for dataset in (stoker.LoaderDataset(loader), OwnDataset(loader)):
        data = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2, timeout=20)
        served, started = 0, time.monotonic()
        try:
            for _ in data:
                served += 1
                if served == 4:
                    break
            say(f"served {served} batches")
        except Exception as error:  # the worker's, raised again in this process
            say(f"{type(error).__name__} after {served} batches in "
                f"{time.monotonic() - started:.1f} s: " + str(error).replace("\n", " "))
    for call, what in ((lambda: next(loader), "0 batches"),
                       (lambda: loader.set_weights(W1), "set_weights")):
        child = os.fork()
        if child == 0:
            try:
                call()
                os._exit(3)
            except stoker.ConfigError as error:
                say(f"ConfigError after {what} in the child: " + str(error).replace("\n", " "))
                os._exit(0)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
    say("parent goes on at step", next(loader)["step"])


def close_during_a_stalled_read(corpus: str, work: str) -> None:
    """From some read of the shards on, every read takes 1.5 s (STOKER_FAULTS): once a batch took
    that long, the reading thread is in the next batch's reads. Leaving the ``with`` block then
    closes the loader without waiting for them: says how long it took, and what a call after it
    raises."""
    with stoker.Loader(corpus, **BASE) as loader:
        say("stalled at step", until_stalled(loader))
        started = time.monotonic()
    say(f"closed in {time.monotonic() - started:.2f} s")
    try:
        next(loader)
    except stoker.ConfigError as error:
        say("then", type(error).__name__, isinstance(error, ValueError), str(error))


def interrupted(name, call) -> None:
    """Says "call NAME", calls, and says how it ended: "returned NAME" or "interrupted NAME" (a
    KeyboardInterrupt)."""
    say("call", name)
    try:
        call()
        say("returned", name)
    except KeyboardInterrupt:
        say("interrupted", name)


def interrupted_waits(corpus: str, work: str) -> None:
    """Each call that waits on storage, said as "call NAME" before it: the test sends SIGINT
    while it waits (every checkpoint fsync and every open of a rank file slowed down by
    STOKER_FAULTS), and "interrupted NAME" says the KeyboardInterrupt came; then what
    state_dict() names: the last save or resume that completed."""
    first = os.path.join(work, "step-1")
    loader = stoker.Loader(corpus, **BASE)
    next(loader)
    loader.save(first)  # its write takes seconds: the calls below wait for it

    interrupted("save", lambda: loader.save(os.path.join(work, "step-1-again")))
    interrupted("wait_for_save", loader.wait_for_save)
    interrupted("state_dict", loader.state_dict)
    loader.wait_for_save()
    say("named", loader.state_dict()["step_dir"] == first)
    interrupted("Loader", lambda: stoker.Loader(corpus, resume_from=first, **BASE))
    fresh = stoker.Loader(corpus, **BASE)
    interrupted("load_state_dict", lambda: fresh.load_state_dict(
        dict(loader.state_dict(), world=2)))  # another world size: from the step folder
    say("named", fresh.state_dict()["step_dir"], "at step", fresh.step)
    loader.save(os.path.join(work, "step-1-last"))
    interrupted("close", loader.close)
    # A run session: its second save waits for the first's write, its end for its last save's;
    # a resume helper opens the rank files.
    run = os.path.join(work, "run")
    settings = dict(BASE, weights="a=0.5,b=0.3,c=0.2")
    session = stoker.RunSession(stoker.run_settings(corpus, steps=5, checkpoint_dir=run,
                                                    save_every=1, **settings))
    session.start()
    next(session)
    session.end_step(False)
    next(session)
    interrupted("end_step", lambda: session.end_step(False))
    try:
        session.finish({})
    except stoker.ConfigError as error:  # its ranks may stand in different saves
        say("then", str(error).split(":")[0])
    session.loader.wait_for_save()  # step-1 whole: the helper opens its rank file
    interrupted("find_resume_step", lambda: stoker.find_resume_step(run))
    another = stoker.RunSession(stoker.run_settings(
        corpus, steps=5, checkpoint_dir=os.path.join(work, "another"), save_every=1, **settings))
    another.start()
    next(another)
    another.end_step(False)
    interrupted("finish", lambda: another.finish({}))
    os._exit(0)  # the work left goes on in the background; the test is done with it


def until_stalled(loader) -> int:
    """Takes batches until one took more than a second (a read STOKER_FAULTS slowed down): with
    every read from some point on slowed down, the reading thread is then in the next batch's
    reads. The step of that batch."""
    while True:
        started = time.monotonic()
        step = next(loader)["step"]
        if time.monotonic() - started > 1:
            return step


def interrupted_set_weights(corpus: str, work: str) -> None:
    """From some read of the shards on, every read takes 1.5 s (STOKER_FAULTS): once a batch took
    that long, the reading thread is in the next batch's reads, and set_weights, which stops it,
    waits for them. Says "call set_weights" and what came (the test sends SIGINT meanwhile);
    then that the weights were set all the same (the call went on to its end) and the next
    batch came."""
    loader = stoker.Loader(corpus, **BASE)
    until_stalled(loader)
    interrupted("set_weights", lambda: loader.set_weights(W1))
    total = sum(W1.values())
    set_after_all = all(abs(loader.weights[k] - w / total) < 1e-9 for k, w in W1.items())
    say("weights set", set_after_all, "next step", next(loader)["step"] == loader.step)
    os._exit(0)


def interrupts_after_saves(corpus: str, work: str) -> None:
    """Pairs of saves, the second with a SIGINT sent from another thread 0 to 12 ms after it
    starts (STOKER_FAULTS makes every write take 10 ms more: it waits for the first's write for
    some of that): wherever the KeyboardInterrupt comes, in the wait, in the save or after it,
    state_dict() names the second save's folder if its rank file was written, else the first's
    (a save that completed is recorded before any signal is raised). Says how many second saves
    were interrupted, how many were written, and where state_dict() named another folder."""
    loader = stoker.Loader(corpus, **BASE)
    next(loader)
    interrupted, written, wrong = 0, 0, []
    for i in range(200):
        first, second = (os.path.join(work, f"race-{i}-{n}") for n in (1, 2))
        loader.save(first)
        signal_later = threading.Timer(random.uniform(0, 0.012), os.kill,
                                       (os.getpid(), signal.SIGINT))
        try:
            signal_later.start()
            loader.save(second)
            signal_later.join()
            time.sleep(0.005)  # a signal not yet handled comes here
        except KeyboardInterrupt:
            interrupted += 1
        signal_later.join()
        loader.wait_for_save()
        done = os.path.exists(os.path.join(second, "loader", "rank-00000-of-00001.ckpt"))
        written += done
        if loader.state_dict()["step_dir"] != (second if done else first):
            wrong.append(i)
    say("interrupted", interrupted, "written", written, "wrong", wrong)


def forked_child_exits(corpus: str, work: str) -> None:
    """Children forked from a process that imported stoker and made a loader end as children do:
    sys.exit(3), an uncaught exception, the end of the code. Says each one's exit code, or that
    it hung (no exit within 20 s)."""
    loader = stoker.Loader(corpus, **BASE)
    next(loader)
    for how in ("sys.exit(3)", "raise ValueError", "end"):
        child = os.fork()
        if child == 0:
            sys.stderr = open(os.devnull, "w")  # the traceback of the uncaught exception
            if how == "sys.exit(3)":
                sys.exit(3)
            if how == "raise ValueError":
                raise ValueError("in the child")
            return  # the child runs on to the end of the program
        started = time.monotonic()
        while time.monotonic() - started < 20:
            done, status = os.waitpid(child, os.WNOHANG)
            if done:
                say(how, "exit", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            say(how, "hung")
    say("parent goes on at step", next(loader)["step"])


def handler_during_set_weights(corpus: str, work: str) -> None:
    """As interrupted_set_weights, with a SIGINT handler of the trainer's own that reads the
    loader's step before it raises KeyboardInterrupt: the handler's call waits for set_weights'
    work on the worker (no crash, no torn state), then the interrupt comes."""
    loader = stoker.Loader(corpus, **BASE)

    def handler(signum, frame):
        say("handler step", loader.step)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    until_stalled(loader)
    interrupted("set_weights", lambda: loader.set_weights(W1))
    say("next step", next(loader)["step"] == loader.step)
    os._exit(0)


def exit_with_work_left(corpus: str, work: str) -> None:
    """A loader's construction that Ctrl-C left (its rank file's open slowed down), then the end
    of the program: the exit waits for the work left, or a second Ctrl-C ends it at once."""
    step_dir = os.path.join(work, "step-1")
    loader = stoker.Loader(corpus, **BASE)
    next(loader)
    loader.save(step_dir)
    loader.wait_for_save()
    interrupted("Loader", lambda: stoker.Loader(corpus, resume_from=step_dir, **BASE))
    say("exiting")


if __name__ == "__main__":
    name, corpus, work = sys.argv[1:4]
    globals()[name](corpus, work)
