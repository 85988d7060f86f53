#!/usr/bin/python3
"""train.py: stoker's example data-parallel trainer in Python, beside the C++ stoker-train.

A tiny causal transformer (tiny_lm.py, plain PyTorch) trains on the CPU. Every rank of a job
launched by mpirun or srun reads its own batches from ``stoker.Loader``; the replicas are kept
equal by torch.distributed's DistributedDataParallel over gloo, whose rank and world size are the
MPI launcher's (no MASTER_ADDR to set: rank 0 opens the rendezvous on its host and tells the
others over MPI). Model, optimizer and loader state go into one step folder,
CHECKPOINT_DIR/step-<N>/ (model.pt, optimizer.pt, trainer.json, loader/), every --save-every
steps, at the last step and when SIGUSR1 or SIGTERM asks the run to stop: every rank stops at
the same step and saves it. --resume goes on from the newest complete step on any number of
ranks (the loader redistributes its state). --doc-mask attends only within each document.
Under a parallel layout (--layout, or --tensor-parallel, --context-parallel, --pipeline-parallel)
every rank still runs the whole model: the ranks of a replica take the same batches (checked at
every log line), each context-parallel rank its part of every row, and gradients are averaged
over the ranks of one tp and pp coordinate (dp x cp) only.

It takes stoker-train's flags, variables and defaults, from the same schema and the same C++
code (stoker.parse_settings; `stoker settings` lists them), so the job scripts run it with
TRAINER=python. Rank 0 logs progress on stderr and ends with one JSON line of figures on stdout.
Exit code: 0; 2 for wrong settings; 1 for an error.

    mpirun -np 4 src/train/train.py --data out/corpus --checkpoint-dir out/py --resume --doc-mask
"""

import signal

# First thing, before the slow imports: a stop signal that comes while the process starts asks
# for a stop at the first step instead of ending the process. SA_RESTART: the calls the signal
# interrupts (reads, MPI, gloo) go on.
_stop = {"signal": 0}


def _on_stop(signum, _frame):
    _stop["signal"] = signum


for _s in (signal.SIGUSR1, signal.SIGTERM):
    signal.signal(_s, _on_stop)
    signal.siginterrupt(_s, False)

import sys  # noqa: E402
import time  # noqa: E402


def model_problems(settings, shape_type):
    """The model's settings (TrainerSettings.problems: a learning rate or clipping out of range)
    and a shape that cannot be built."""
    trainer, seq_len = settings.trainer, settings.run.loader.seq_len
    shape = shape_type(max(trainer.vocab, 1), trainer.dim, trainer.layers, trainer.heads, seq_len)
    return list(trainer.problems()) + [
        p for p in shape.problems() if seq_len > 0 or not p.startswith("--seq-len")]


def log(comm, message):
    """Rank 0's progress, on stderr, in the C++ trainer's form."""
    if comm.rank == 0:
        now = time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
        print(f"[{stamp}] [rank 0] [info] {message}", file=sys.stderr, flush=True)


def check_only(settings, stoker):
    """--check, in a process without MPI: each problem on stderr, the settings that have a
    variable on stdout (NAME=VALUE, for the job scripts)."""
    from tiny_lm import Shape
    problems = list(settings.run.problems()) + model_problems(settings, Shape)
    for problem in problems:
        print(f"train.py: {problem}", file=sys.stderr)
    print("\n".join(settings.variable_lines))
    return 2 if problems else 0


def main(argv):
    check = "--check" in argv
    if check:  # no MPI: mpi4py must not initialize it (a job script runs this on its own)
        import mpi4py
        mpi4py.rc.initialize = False
    import stoker  # imports torch; initializes MPI (mpi4py) unless --check
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.rank if MPI.Is_initialized() else 0
    settings = stoker.parse_settings(argv, name="train.py", description=__doc__, quiet=rank != 0)
    if check != settings.check:  # "--check=true": MPI has started, as for a run
        print("train.py: give --check alone, without a value", file=sys.stderr)
        return 2
    if check:
        return check_only(settings, stoker)
    stoker.install_stop_handlers(_stop["signal"])  # the session's, from here on
    return run_program(MPI.COMM_WORLD, stoker, lambda: train(settings, MPI.COMM_WORLD, stoker))


def train(settings, comm, stoker):
    """The settings, checked by rank 0 for all (exit 2 on every rank); the run session (the
    ready file, the resume); then the run."""
    from tiny_lm import Shape
    from checkpoint_files import TRAINER_FILES
    from trainer import Trainer  # imports torch
    run = settings.run
    run.loader.set_boundaries(settings.trainer.doc_mask, "restart")
    if not stoker.check_run_settings(run, lambda: model_problems(settings, Shape), "train.py",
                                     comm):
        return 2
    session = stoker.RunSession(run, files=TRAINER_FILES, comm=comm)
    return Trainer(settings, comm, session, log).run()


def run_program(comm, stoker, body):
    """``body()``'s exit code; an error every rank raised together is printed once by rank 0 and
    every rank exits 1 (3 for a BusyError: a folder another run holds, as the C++ programs); one
    raised by some ranks only (the others are waiting for them in a collective) is printed by each
    of those and ends the job (Abort)."""
    errors = comm.Dup()  # the error agreement, never mixed with the run's collectives
    try:
        return body()
    except Exception as e:  # noqa: BLE001 (every error ends the run; it is said first)
        kind = type(e).__name__
        code = 3 if isinstance(e, stoker.BusyError) else 1
        request, deadline = errors.Ibarrier(), time.monotonic() + 10
        while not request.Test():
            if time.monotonic() > deadline:
                print(f"train.py: rank {comm.rank}: {kind}: {e}", file=sys.stderr, flush=True)
                comm.Abort(code)
            time.sleep(0.01)
        if comm.rank == 0:
            print(f"train.py: error: {kind}: {e}", file=sys.stderr, flush=True)
        return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
