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

It takes stoker-train's flags (the ones jobs/ passes, --check and --ready-file included), so the
job scripts run it with TRAINER=python. Rank 0 logs progress on stderr and ends with one JSON
line of figures on stdout. Exit code: 0; 2 for wrong settings; 1 for an error.

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

import argparse  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from checkpoint_files import write_atomically  # noqa: E402 (beside this file)


def _size(text):
    """Bytes, as stoker-train reads them: a whole number with an optional suffix, K/KB/KiB = 1024,
    M.. = 1024^2, G.. = 1024^3."""
    units = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    number = text.rstrip("BbIi")
    digits = number.rstrip("KkMmGg")
    unit = number[len(digits):].lower()
    if not digits.strip().isdigit() or unit not in units:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (e.g. 8MiB)")
    return int(digits) * units[unit]


def _depth(text):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is neither auto nor a number") from None


def reading_settings(args):
    """The Loader's reading settings of the command line."""
    return {"prefetch": args.prefetch, "read_ahead_bytes": args.read_ahead,
            "io_depth": args.io_depth, "io_engine": args.io_engine, "direct_io": args.direct_io}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        """The wrong flag alone (jobs/ names the setting behind every flag it finds), exit 2."""
        self.exit(2, f"train.py: {message} (train.py --help lists the flags)\n")


def parse_args(argv):
    p = _Parser(prog="train.py", description=__doc__, allow_abbrev=False,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    data = p.add_argument_group("data")
    data.add_argument("--data", required=True, help="corpus folder (docs/format.md)")
    data.add_argument("--weights", default="",
                      help="mixing weights NAME=W,NAME=W (default: by each dataset's tokens)")
    data.add_argument("--weights-schedule", default="",
                      help="mixing weights that change with the step, as stoker-train's: "
                           "\"0:web=0.7,code=0.3;~10000:web=0.5,code=0.5\" (STEP: a jump, "
                           "~STEP: a ramp) or a TOML or JSON file (docs/loader.md, \"Mixing\")")
    data.add_argument("--seq-len", type=int, default=128, help="tokens per training sequence")
    data.add_argument("--batch-size", type=int, default=16, help="sequences per step per rank")
    data.add_argument("--seed", type=int, default=0, help="data order and initial weights")
    data.add_argument("--logical-shards", type=int, default=65536,
                      help="units of the data order ranks own; any rank count up to it works")
    reading = p.add_argument_group("reading (docs/loader.md, \"Reading from storage\")")
    reading.add_argument("--prefetch", type=int, default=4,
                         help="finished batches each rank keeps ready")
    reading.add_argument("--read-ahead", type=_size, default=None,
                         help="bytes of batches read at once beyond the finished ones; suffixes "
                              "KiB, MiB, GiB (default 8MiB)")
    reading.add_argument("--io-depth", type=_depth, default="auto",
                         help="reads each rank keeps in flight, or auto: 128 a node, shared")
    reading.add_argument("--io-engine", choices=("auto", "uring", "threads"), default="auto",
                         help="what keeps the reads in flight")
    reading.add_argument("--direct-io", choices=("auto", "on", "off"), default="auto",
                         help="token reads bypass the page cache (auto: when the corpus is "
                              "larger than the memory a rank may use)")
    model = p.add_argument_group("model")
    model.add_argument("--vocab", type=int, default=0,
                       help="vocabulary size; 0: the corpus's vocab_size attribute")
    model.add_argument("--dim", type=int, default=128, help="model width")
    model.add_argument("--layers", type=int, default=2, help="transformer blocks")
    model.add_argument("--heads", type=int, default=4, help="attention heads (divide --dim)")
    model.add_argument("--lr", type=float, default=3e-3, help="AdamW's rate after warm-up")
    model.add_argument("--warmup", type=int, default=20, help="steps of linear warm-up")
    model.add_argument("--clip", type=float, default=1.0, help="gradient norm clip (0: none)")
    model.add_argument("--doc-mask", action="store_true",
                       help="attend only within each document, positions from its start "
                            "(the loader's segment_ids and position_ids)")
    run = p.add_argument_group("run")
    run.add_argument("--steps", type=int, default=300, help="stop after this global step")
    run.add_argument("--checkpoint-dir", default="", help="step-<N>/ folders go here")
    run.add_argument("--save-every", type=int, default=50, help="steps between saves (0: never)")
    run.add_argument("--resume", action="store_true",
                     help="go on from the newest complete step on any rank count (none: step 0)")
    run.add_argument("--start-over", action="store_true",
                     help="start at step 0, deleting the step folders of an earlier run")
    run.add_argument("--trace", default="", help="piece traces for `stoker audit DIR`")
    run.add_argument("--log-every", type=int, default=10, help="log every K steps (0: never)")
    run.add_argument("--result", default="", help="also write the JSON summary into FILE")
    run.add_argument("--ready-file", default="",
                     help="rank 0 creates FILE once every rank can take a stop signal")
    run.add_argument("--check", action="store_true",
                     help="check the settings without MPI and exit: 0, or 2 naming each wrong one")
    for action in p._actions:  # the defaults that say something, in --help
        if action.default not in (None, "", False, argparse.SUPPRESS) and action.help:
            action.help += " (default %(default)s)"
    return p.parse_args(argv)


def option_problems(args, stoker, shape_type):
    """Every problem of the settings that shows without MPI and without reading the corpus, one
    line each, named by flag (jobs/ names the setting behind each flag it finds)."""
    problems, weights = [], {}
    try:
        weights = stoker.parse_weights(args.weights) if args.weights else {}
    except stoker.ConfigError as e:
        problems.append(str(e))
    schedule = {"weight_schedule": args.weights_schedule} if args.weights_schedule else {}
    problems += stoker.config_problems(args.data, weights=weights, **schedule,
                                       seq_len=max(args.seq_len, 0),
                                       batch_size=max(args.batch_size, 0), seed=max(args.seed, 0),
                                       logical_shards=max(args.logical_shards, 0),
                                       **reading_settings(args))
    if args.data and not os.path.isdir(args.data):
        problems.append(f"--data {args.data}: no such folder")
    if args.steps < 1:
        problems.append("--steps must be at least 1")
    for flag, value in (("--save-every", args.save_every), ("--log-every", args.log_every),
                        ("--warmup", args.warmup), ("--seed", args.seed)):
        if value < 0:
            problems.append(f"{flag} {value} is negative")
    if (args.resume or args.start_over) and not args.checkpoint_dir:
        problems.append(f"{'--resume' if args.resume else '--start-over'} needs --checkpoint-dir")
    if args.resume and args.start_over:
        problems.append("--start-over and --resume exclude each other")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        problems.append(f"--lr {args.lr} must be a number above 0")
    if not (args.clip >= 0 and math.isfinite(args.clip)):
        problems.append(f"--clip {args.clip} must be 0 (no clipping) or above")
    if args.vocab < 0:
        problems.append(f"--vocab {args.vocab} is negative")
    shape = shape_type(max(args.vocab, 1), args.dim, args.layers, args.heads, args.seq_len)
    problems += [p for p in shape.problems() if args.seq_len > 0 or not p.startswith("--seq-len")]
    if args.result:
        problems += writable_problems(args.result)
    return problems


def writable_problems(path):
    """[] when a file can be written beside ``path`` atomically, else the reason."""
    try:
        if os.path.isdir(path):
            raise OSError("it is a folder")
        write_atomically(path + ".probe", b"")
        os.remove(path + ".probe")
        return []
    except OSError as e:
        return [f"--result {path} cannot be written: {e}"]


def log(comm, message):
    """Rank 0's progress, on stderr, in the C++ trainer's form."""
    if comm.rank == 0:
        now = time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
        print(f"[{stamp}] [rank 0] [info] {message}", file=sys.stderr, flush=True)


def check_only(args):
    """--check: no MPI (mpi4py must not initialize it: a job script runs this on its own)."""
    import mpi4py
    mpi4py.rc.initialize = False
    import stoker
    from tiny_lm import Shape
    problems = option_problems(args, stoker, Shape)
    for problem in problems:
        print(f"train.py: {problem}", file=sys.stderr)
    return 2 if problems else 0


def main(argv):
    args = parse_args(argv)
    if args.check:
        return check_only(args)
    import stoker  # initializes MPI (mpi4py)
    from mpi4py import MPI
    return run_program(MPI.COMM_WORLD, stoker, lambda: train(args, MPI.COMM_WORLD, stoker))


def train(args, comm, stoker):
    """The settings, checked by rank 0 for all (exit 2 on every rank); the ready file, once every
    rank has started (its stop handlers installed at its first line); then the run."""
    from tiny_lm import Shape
    from trainer import Trainer, together  # imports torch
    problems = comm.bcast(together(comm, lambda: comm.rank == 0 and option_problems(
        args, stoker, Shape)))
    if problems:
        log(comm, "train: wrong settings:\n  " + "\n  ".join(problems))
        return 2
    together(comm, lambda: comm.rank == 0 and args.ready_file and write_atomically(
        args.ready_file, f"{os.getpid()}\n".encode()))
    return Trainer(args, comm, _stop, log, reading_settings(args)).run()


def run_program(comm, stoker, body):
    """``body()``'s exit code; an error every rank raised together is printed once by rank 0 and
    every rank exits 1; one raised by some ranks only (the others are waiting for them in a
    collective) is printed by each of those and ends the job (Abort)."""
    errors = comm.Dup()  # the error agreement, never mixed with the run's collectives
    try:
        return body()
    except Exception as e:  # noqa: BLE001 (every error ends the run; it is said first)
        kind = type(e).__name__
        request, deadline = errors.Ibarrier(), time.monotonic() + 10
        while not request.Test():
            if time.monotonic() > deadline:
                print(f"train.py: rank {comm.rank}: {kind}: {e}", file=sys.stderr, flush=True)
                comm.Abort(1)
            time.sleep(0.01)
        if comm.rank == 0:
            print(f"train.py: error: {kind}: {e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
