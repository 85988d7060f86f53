#!/usr/bin/env python3
"""What a run of the test command cost, from its log (docs/benchmarks.md, "The test command").

    scripts/test.sh 2>&1 | tee test.log; benchmarks/test_costs.py test.log [--slowest 15]

Prints, as Markdown: each stage's time (the "test: STAGE took N s" lines of scripts/test.sh and
the "sanitize[KIND]: STEP took N s" lines of scripts/sanitize.sh), then the slowest tests of each
ctest run in the log with their times. Several logs may be given; each gets its own tables.
"""
import argparse
import re
import sys

STAGE = re.compile(r"^(?:test|sanitize\[([a-z,]+)\]|fuzz): (.+?) took (\d+) s")
RESULT = re.compile(r"Test +#\d+: (\S+)(?: .*?)? \.+\**\s*(\S.*?)\s+([\d.]+) sec")
SUMMARY = re.compile(r"^Total Test time \(real\) = +([\d.]+) sec")


def report(path, slowest):
    stages, runs, tests = [], [], []
    for line in open(path, errors="replace"):
        if m := STAGE.match(line):
            name = f"{m[1]} {m[2]}" if m[1] else m[2]
            stages.append((name, int(m[3])))
        elif m := RESULT.search(line):
            tests.append((float(m[3]), m[1], m[2]))
        elif m := SUMMARY.match(line):
            runs.append((float(m[1]), tests))
            tests = []
    print(f"### {path}\n")
    if stages:
        print("| stage | seconds |\n|---|---:|")
        for name, seconds in stages:
            print(f"| {name} | {seconds} |")
        print()
    for number, (wall, results) in enumerate(runs, 1):
        total = sum(t for t, _, _ in results)
        print(f"ctest run {number}: {len(results)} tests, {wall:.0f} s wall, "
              f"{total:.0f} s summed over the tests\n")
        print("| test | seconds | result |\n|---|---:|---|")
        for seconds, name, result in sorted(results, reverse=True)[:slowest]:
            print(f"| {name} | {seconds:.1f} | {result} |")
        print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", help="logs of scripts/test.sh (or of ctest alone)")
    parser.add_argument("--slowest", type=int, default=15, help="tests listed per run (15)")
    args = parser.parse_args()
    for path in args.logs:
        report(path, args.slowest)


if __name__ == "__main__":
    sys.exit(main())
