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


def run_settings(args, stoker):
    """The run's settings (stoker.RunSettings) of the command line. Negative numbers stand as 0
    here: option_problems names them."""
    return stoker.run_settings(
        args.data, steps=max(args.steps, 0), checkpoint_dir=args.checkpoint_dir,
        save_every=max(args.save_every, 0), resume=args.resume, start_over=args.start_over,
        trace_dir=args.trace, result_file=args.result, ready_file=args.ready_file,
        weights=args.weights, weights_schedule=args.weights_schedule,
        seq_len=max(args.seq_len, 0), batch_size=max(args.batch_size, 0), seed=max(args.seed, 0),
        logical_shards=max(args.logical_shards, 0), boundaries=args.doc_mask,
        **reading_settings(args))


def model_problems(args, shape_type):
    """The model's settings and the numbers run_settings cannot hold: a learning rate or
    clipping out of range, a shape that cannot be built, negative numbers."""
    problems = []
    for flag, value in (("--save-every", args.save_every), ("--log-every", args.log_every), ("--warmup", args.warmup),
                        ("--seed", args.seed)):
        if value < 0:
            problems.append(f"{flag} {value} is negative")
    if not (args.lr > 0 and math.isfinite(args.lr)):
        problems.append(f"--lr {args.lr} must be a number above 0")
    if not (args.clip >= 0 and math.isfinite(args.clip)):
        problems.append(f"--clip {args.clip} must be 0 (no clipping) or above")
    if args.vocab < 0:
        problems.append(f"--vocab {args.vocab} is negative")
    shape = shape_type(max(args.vocab, 1), args.dim, args.layers, args.heads, args.seq_len)
    problems += [p for p in shape.problems() if args.seq_len > 0 or not p.startswith("--seq-len")]
    return problems


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
    try:
        problems = run_settings(args, stoker).problems()
    except stoker.ConfigError as e:  # a value of the wrong kind, named
        problems = [str(e)]
    problems += model_problems(args, Shape)
    for problem in problems:
        print(f"train.py: {problem}", file=sys.stderr)
    return 2 if problems else 0


def main(argv):
    args = parse_args(argv)
    if args.check:
        return check_only(args)
    import stoker  # initializes MPI (mpi4py)
    from mpi4py import MPI
    stoker.install_stop_handlers(_stop["signal"])  # the session's, from here on
    return run_program(MPI.COMM_WORLD, stoker, lambda: train(args, MPI.COMM_WORLD, stoker))


def train(args, comm, stoker):
    """The settings, checked by rank 0 for all (exit 2 on every rank); the run session (the
    ready file, the resume); then the run."""
    from tiny_lm import Shape
    from checkpoint_files import TRAINER_FILES
    from trainer import Trainer  # imports torch
    settings = run_settings(args, stoker)
    if not stoker.check_run_settings(settings, lambda: model_problems(args, Shape), "train.py",
                                     comm):
        return 2
    session = stoker.RunSession(settings, files=TRAINER_FILES, comm=comm)
    return Trainer(args, comm, session, log).run()


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
