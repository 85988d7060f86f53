"""One import at a time into a dataset folder DIR/NAME, with real processes under mpirun.

Import A is slowed down by the I/O seam (STOKER_FAULTS delays its reads of the input) and then
held (SIGSTOP, its lock kept) so that it is still running, however long they take, while the
test runs import B into the same DIR/NAME: B is refused on
every rank, once, naming A's host and the pid of A's rank 0, and touches nothing (A's staging
folder stays); A then ends with its whole dataset. An import killed with SIGKILL mid-import
leaves its staging folder behind; `stoker import --remove-leftovers DIR/NAME` removes it, naming
it, and so does the next import into DIR/NAME. An input written to while a slowed import reads
it fails that import, naming the file, with nothing left behind."""

import os
import signal
import socket
import subprocess
import time

import numpy as np

import formats
from import_checks import assert_documents, random_tokens, read_dataset

EOD = 65535  # every test document ends in it; --eod-id takes it off
WAIT = 60    # seconds to wait for a slowed import to reach a point


def write_input(path, seed: int, count: int) -> list:
    """A uint16 Megatron prefix of `count` documents of 0 to 59 ids, each ending in EOD (as
    Megatron's --append-eod writes them); returns the documents as imported with --eod-id EOD."""
    rng = np.random.default_rng(seed)
    documents = [random_tokens(rng, "uint16", int(rng.integers(0, 60)), high=EOD - 1)
                 for _ in range(count)]
    formats.write_megatron(path, [[np.append(d, EOD).astype("uint16")] for d in documents],
                           "uint16")
    return documents


def start(stoker, mpirun, ranks, args, log, faults=None):
    """`$MPIRUN -np RANKS stoker ARGS` in the background, in a session of its own, output to
    `log`."""
    env = dict(os.environ)
    if faults:
        env["STOKER_FAULTS"] = faults
    with open(log, "w") as out:
        return subprocess.Popen([*mpirun, "-np", str(ranks), stoker, *map(str, args)],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)


def children(pid: int) -> list:
    """The pids of every process below `pid`."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        below = [p for p, parent in parents.items() if parent == current]
        found += below
        todo += below
    return found


def rank_zero(mpirun_pid: int) -> int:
    """The pid of rank 0 of the job `mpirun_pid` launched."""
    for pid in children(mpirun_pid):
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if b"OMPI_COMM_WORLD_RANK=0" in environ.read().split(b"\0"):
                    return pid
        except OSError:
            pass
    raise AssertionError(f"no rank 0 below mpirun {mpirun_pid}")


def wait_for(condition, what: str, log=None) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        text = open(log).read() if log else ""
        assert time.monotonic() < deadline, f"waited {WAIT} s for {what}:\n{text}"
        time.sleep(0.05)


def signal_job(job, number: int) -> None:
    """Signal `number` to mpirun, then to every process below it."""
    for pid in [job.pid, *children(job.pid)]:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


def kill_job(job) -> None:
    """SIGKILL to mpirun and every process below it, as a node failure or `scancel -s KILL`."""
    for pid in [*children(job.pid), job.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    job.wait(timeout=WAIT)


def hidden(folder) -> list:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_second_import_is_refused_naming_the_first(run, stoker, mpirun, tmp_path):
    """A (2 ranks, every read of its .bin slowed by 12 s) holds DIR/.web.lock while B (2 ranks,
    another input, same --out; then with --force; then --remove-leftovers) runs: each is refused
    once, naming A's host and rank 0's pid, and A's staging folder is left alone. A ends with
    every one of its 3,000 documents; `stoker verify` finds the corpus clean; nothing hidden is
    left beside it."""
    expected = write_input(tmp_path / "a", 1, 3000)
    write_input(tmp_path / "b", 2, 40)
    out = tmp_path / "corpus" / "web"
    staging = out.parent / ".web.import"
    a = start(stoker, mpirun, 2, ["import", "megatron", tmp_path / "a", "--eod-id", EOD,
                                  "--out", out, "--shard-tokens", 5000],
              tmp_path / "a.log", faults="pread:a.bin:*:delay=12000")
    try:
        wait_for(staging.exists, "import A's staging folder", tmp_path / "a.log")
        holder = f"host {socket.gethostname()}, pid {rank_zero(a.pid)}"
        # A cannot end while B runs three times, on a machine however busy: held, not raced.
        # (Its reads, 12 s late, only make sure that it is still at work here.)
        signal_job(a, signal.SIGSTOP)
        for extra in [[], ["--force"]]:
            rc, output = run("import", "megatron", tmp_path / "b", "--eod-id", EOD, "--out", out,
                             *extra, ranks=2)
            assert rc == 3, f"B {extra} was not refused as busy (exit {rc}, not 3):\n{output}"
            assert output.count(f"being written by an import that is still running ({holder}")\
                == 1, f"B {extra} does not name A ({holder}) once:\n{output}"
            assert staging.is_dir(), f"B {extra} removed A's staging folder:\n{output}"
        rc, output = run("import", "--remove-leftovers", out, ranks=2)
        assert rc == 3 and holder in output, f"--remove-leftovers during A (exit {rc}):\n{output}"
        assert staging.is_dir(), f"--remove-leftovers removed A's staging folder:\n{output}"
        assert a.poll() is None, "A ended before B was refused"
        signal_job(a, signal.SIGCONT)
        assert a.wait(timeout=WAIT) == 0, open(tmp_path / "a.log").read()
    finally:
        if a.poll() is None:
            kill_job(a)
    assert_documents(read_dataset(out, "megatron", 2).documents, expected)
    rc, verified = run("verify", out.parent)
    assert rc == 0, verified
    assert hidden(out.parent) == [], f"left beside {out}: {hidden(out.parent)}"


def start_and_kill(stoker, mpirun, tmp_path, out, log):
    """Starts an import into `out` at 2 ranks whose rank 0 reads slowly, waits until rank 1 has
    written a shard into the staging folder, and kills the job with SIGKILL."""
    staging = out.parent / f".{out.name}.import"
    job = start(stoker, mpirun, 2, ["import", "megatron", tmp_path / "a", "--eod-id", EOD,
                                    "--out", out, "--shard-tokens", 5000],
                log, faults="pread:a.bin:*:delay=5000:rank=0")
    try:
        wait_for(lambda: any(staging.glob("part-00001-*.h5")), "a shard of rank 1", log)
    finally:
        kill_job(job)
    assert staging.is_dir() and job.returncode != 0, open(log).read()
    return staging


def test_leftovers_of_a_killed_import(run, stoker, mpirun, tmp_path):
    """An import killed with SIGKILL mid-import (rank 1's shards written, rank 0 still reading)
    leaves DIR/.web.import. `stoker import --remove-leftovers DIR/web` removes it, naming it,
    and imports nothing; after a second such kill, the next import into DIR/web removes it,
    naming it, and writes the whole dataset with nothing hidden left beside it."""
    expected = write_input(tmp_path / "a", 3, 3000)
    out = tmp_path / "corpus" / "web"
    staging = start_and_kill(stoker, mpirun, tmp_path, out, tmp_path / "killed1.log")
    rc, output = run("import", "--remove-leftovers", out, ranks=2)
    assert rc == 0, output
    assert f"removed {staging} (" in output, f"--remove-leftovers does not name it:\n{output}"
    assert not staging.exists() and not out.exists(), output
    assert hidden(out.parent) == [], f"left beside {out}: {hidden(out.parent)}"
    rc, output = run("import", "--remove-leftovers", out)
    assert rc == 0 and "nothing to remove" in output, output

    staging = start_and_kill(stoker, mpirun, tmp_path, out, tmp_path / "killed2.log")
    rc, output = run("import", "megatron", tmp_path / "a", "--eod-id", EOD, "--out", out,
                     "--shard-tokens", 5000, ranks=2)
    assert rc == 0, output
    assert f"removed {staging} (" in output and "did not finish" in output, output
    assert_documents(read_dataset(out, "megatron", 2).documents, expected)
    assert hidden(out.parent) == [], f"left beside {out}: {hidden(out.parent)}"


def test_remove_leftovers_is_explained(run):
    """`stoker import --help` explains --remove-leftovers; it takes no format or input."""
    rc, output = run("import", "--help")
    assert rc == 0 and "--remove-leftovers" in output and "did not finish" in output, output


def test_an_input_written_while_it_is_read_fails_the_import(stoker, mpirun, tmp_path):
    """A .bin file rewritten in place (same size, other ids) while the import's reads of it are
    slowed by 3 s each: the import exits non-zero naming the file and what changed, and leaves
    nothing beside --out; a dataset that mixed both versions would verify clean."""
    write_input(tmp_path / "a", 4, 300)
    out = tmp_path / "corpus" / "web"
    staging = out.parent / ".web.import"
    job = start(stoker, mpirun, 1, ["import", "megatron", tmp_path / "a", "--eod-id", EOD,
                                    "--out", out], tmp_path / "a.log",
                faults="pread:a.bin:*:delay=3000")
    try:
        wait_for(staging.exists, "the import's staging folder", tmp_path / "a.log")
        data = (tmp_path / "a.bin").read_bytes()
        with open(tmp_path / "a.bin", "r+b") as f:  # in place: the same inode and size
            f.write(bytes(reversed(data)))
        rc = job.wait(timeout=WAIT)
    finally:
        kill_job(job) if job.poll() is None else None
    output = open(tmp_path / "a.log").read()
    assert rc != 0, output
    assert f"input {tmp_path / 'a.bin'} changed while it was imported (it was written to" in output, \
        output
    assert not out.exists() and hidden(out.parent) == [], output


def test_an_mds_shard_written_while_it_is_read_fails_the_import(stoker, mpirun, tmp_path):
    """The same for an MDS shard (read whole, without hashes in its index to catch it): rewritten
    in place, while its read is slowed by 3 s, with a valid shard of other ids at the same size
    (what read alone would import clean), the import exits non-zero naming it."""
    rng = np.random.default_rng(7)
    shard, other = [formats.write_mds(tmp_path / name, [random_tokens(rng, "uint32", 50, high=1000)
                                                        for _ in range(6)],
                                      "input_ids", "ndarray:uint32", samples_per_shard=6)[0]
                    for name in ["m", "other"]]
    assert os.path.getsize(shard) == os.path.getsize(other)
    out = tmp_path / "corpus" / "mds"
    job = start(stoker, mpirun, 1, ["import", "mds", tmp_path / "m", "--column", "input_ids",
                                    "--out", out], tmp_path / "m.log",
                faults=f"pread:{os.path.basename(shard)}:*:delay=3000")
    try:
        wait_for((out.parent / ".mds.import").exists, "the import's staging folder",
                 tmp_path / "m.log")
        data = open(other, "rb").read()
        with open(shard, "r+b") as f:  # in place: the same inode and size
            f.write(data)
        rc = job.wait(timeout=WAIT)
    finally:
        kill_job(job) if job.poll() is None else None
    output = open(tmp_path / "m.log").read()
    assert rc != 0, output
    assert f"input {shard} changed while it was imported" in output, output
    assert not out.exists(), output
