"""The Python package's figures on one rank (benchmarks/python_bench.sh runs it beside `stoker
run`): seconds from the start of the process to `import stoker` done, to the loader constructed
and to its first batch; then tokens per second of a loop that only takes batches (no training),
counted as `stoker run` counts them (batch_size x (seq_len + 1) a step). Prints one JSON line.
The batches are torch tensors, or numpy arrays with --tensors numpy (torch is then not imported).

    mpirun -np 1 /usr/bin/python3 benchmarks/python_loader.py --data CORPUS --steps N [--tensors T]
"""

import time

START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402

import stoker  # noqa: E402

IMPORTED = time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--tensors", choices=("torch", "numpy"), default="torch")
    args = parser.parse_args()
    loader = stoker.Loader(args.data, seq_len=args.seq_len, batch_size=args.batch_size,
                           tensors=args.tensors)
    built = time.perf_counter()
    next(loader)
    first = time.perf_counter()
    for _ in range(args.steps - 1):
        next(loader)
    seconds = time.perf_counter() - first
    tokens = (args.steps - 1) * args.batch_size * (args.seq_len + 1)
    print(json.dumps({"import_seconds": IMPORTED - START, "construct_seconds": built - IMPORTED,
                      "first_batch_seconds": first - START, "tokens": tokens,
                      "seconds": seconds, "tokens_per_second": tokens / seconds}))


if __name__ == "__main__":
    main()
