"""What the package's tests share: the world, the corpus and the C++ dump run.sh made, a folder
every rank sees, a check that fails every rank together, work on the first ranks alone, and
`stoker audit` of a trace."""

import json
import os
import subprocess

import pytest
from mpi4py import MPI

import stoker

WORLD = MPI.COMM_WORLD

# Tests of a plain process of their own, not a rank of the job (a forked loader, Ctrl-C, the
# README's lines): the job's size changes nothing in them, so they run once per test command,
# on rank 0 of the job at 2 ranks (python.loader.np2, the one of the quick tier).
once = pytest.mark.skipif(WORLD.size != 2 or WORLD.rank != 0,
                          reason="a process of its own: run by rank 0 of the job at 2 ranks")


@pytest.fixture
def corpus() -> str:
    return os.environ["STOKER_TEST_CORPUS"]


@pytest.fixture
def shared_dir(request) -> str:
    """A folder of its own per test, the same on every rank."""
    path = os.path.join(os.environ["STOKER_TEST_WORK"], request.node.name)
    if WORLD.rank == 0:
        os.makedirs(path, exist_ok=True)
    WORLD.Barrier()
    return path


def agree(ok: bool, what: str) -> None:
    """Fails on every rank when `ok` is false on any (so that no rank waits alone in a
    collective); `what` says what a failing rank saw."""
    failures = [w for w in WORLD.allgather(None if ok else f"rank {WORLD.rank}: {what}") if w]
    assert not failures, "; ".join(failures)


def loader(corpus: str, **settings) -> stoker.Loader:
    """The configuration of run.sh's `stoker run --dump`, with `settings` on top."""
    base = dict(seq_len=31, batch_size=3, seed=4, weights={"a": 0.5, "b": 0.3, "c": 0.2})
    base.update(settings)
    return stoker.Loader(corpus, **base)


def audit(trace_dir: str, corpus: str) -> dict:
    """`stoker audit --json` of a trace folder, run by rank 0 as a plain process (not a rank of
    this job: Open MPI's variables are left out of its environment), its report on every rank."""
    report = None
    if WORLD.rank == 0:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
        done = subprocess.run([os.environ["STOKER"], "audit", trace_dir, "--data", corpus,
                               "--json"], env=env, capture_output=True, text=True, timeout=120)
        report = json.loads(done.stdout) if done.stdout else {"clean": False,
                                                              "problems": [done.stderr]}
    return WORLD.bcast(report)


def on_first_ranks(ranks: int, work) -> None:
    """Collective: `work(comm)` on ranks [0, ranks) over a communicator of their own while the
    others wait; an exception on any of them fails every rank together."""
    sub = WORLD.Split(0 if WORLD.rank < ranks else 1, WORLD.rank)
    failure = None
    if WORLD.rank < ranks:
        try:
            work(sub)
        except Exception as error:  # reported together below
            failure = repr(error)
    sub.Free()
    WORLD.Barrier()
    agree(failure is None, str(failure))


def expect_epoch_zero_whole(trace_dir: str, corpus: str, runs: list) -> None:
    """Collective: `stoker audit` of the trace is clean, its runs are `runs` ((start step, world
    size) each), and every non-empty document of epoch 0 was delivered whole."""
    report = audit(trace_dir, corpus)
    agree(report["clean"], f"stoker audit: {report.get('problems')}")
    got = [(r["start_step"], r["world_size"]) for r in report["runs"]]
    assert got == runs, got
    for name, dataset in report["datasets"].items():
        epoch0 = next(e for e in dataset["epochs"] if e["epoch"] == 0)
        assert epoch0["whole_documents"] == dataset["nonempty_docs"], (name, epoch0)
