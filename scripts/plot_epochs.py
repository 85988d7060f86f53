"""Plots what an epoch of a small, upsampled dataset is, walked and dealt: docs/epochs.svg.

Makes a corpus of a small dataset (14 documents, 11,200 tokens) and a large one (`stoker
synth`), runs `stoker run --weights large=1,small=1 --dump DIR` at 7 ranks with 16 logical
shards twice, with `--deal-max-docs 0` (every dataset walked through the ranks' logical shards:
stoker before dealing) and with the default (the small dataset dealt to the ranks), and plots
how many times each document of the small dataset has been delivered (its framed position 0
handed out, over all ranks) at the end of every step. Prints the largest spread between two
documents' counts at a step's end, and the step the counts first spread by more than 2. From
the checkout, after the build (seconds; OUT defaults to docs/epochs.svg, STOKER to
build/stoker):

    /usr/bin/python3 scripts/plot_epochs.py [OUT]
"""
import os
import struct
import sys
import tempfile

from plot_mixing_shares import launcher, run

RANKS, SHARDS, STEPS, SEQ_LEN, BATCH = 7, 16, 300, 63, 4
SMALL = 1  # corpus order: large, small
RUNS = [("walked (--deal-max-docs 0)", "0", "#d95f02"), ("dealt (the default)", None, "#1b9e77")]


def counts_per_step(dump):
    """counts[step][doc]: deliveries of each small document by the end of each step, all ranks."""
    batch_tokens = BATCH * (SEQ_LEN + 1)
    begun = [[] for _ in range(STEPS)]  # per step: small documents begun
    for rank in range(RANKS):
        done = 0
        with open(os.path.join(dump, f"rank-{rank}.pieces"), "rb") as f:
            for dataset, doc, _, first, count in struct.iter_unpack("<5Q", f.read()):
                if dataset == SMALL and first == 0:
                    begun[done // batch_tokens].append(doc)
                done += count
    docs = 1 + max(doc for step in begun for doc in step)
    counts, total = [], [0] * docs
    for step in begun:
        for doc in step:
            total[doc] += 1
        counts.append(list(total))
    return counts


def report(title, counts):
    spreads = [max(c) - min(c) for c in counts]
    beyond = next((s + 1 for s, x in enumerate(spreads) if x > 2), None)
    print(f"{title}: {len(counts[0])} documents, {min(counts[-1])} to {max(counts[-1])} "
          f"deliveries after {STEPS} steps; largest spread at a step's end {max(spreads)}; "
          f"first above 2 at step {beyond}")


def svg_panel(top, title, counts, color):
    """The counts of every document against the step, one line each, 250 px high."""
    most = max(max(c) for c in counts)

    def xy(step, n):
        return f"{60 + 680 * step / STEPS:.1f},{top + 220 - 190 * n / most:.1f}"

    out = [f'<text x="60" y="{top + 18}" font-weight="bold">{title}</text>',
           f'<polyline points="{xy(0, most)} {xy(0, 0)} {xy(STEPS, 0)}" fill="none" '
           'stroke="#000"/>']
    for n in range(0, most + 1, max(1, most // 5)):
        out.insert(1, f'<polyline points="{xy(0, n)} {xy(STEPS, n)}" stroke="#ddd"/>')
        out.append(f'<text x="52" y="{top + 224 - 190 * n / most:.1f}" text-anchor="end">{n}</text>')
    for step in range(0, STEPS + 1, 50):
        out.append(f'<text x="{60 + 680 * step / STEPS:.1f}" y="{top + 236}" '
                   f'text-anchor="middle">{step}</text>')
    for doc in range(len(counts[0])):
        points = [xy(s + 1, c[doc]) for s, c in enumerate(counts)]
        out.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" '
                   'stroke-opacity="0.6"/>')
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stoker = os.environ.get("STOKER", os.path.join(root, "build", "stoker"))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "docs", "epochs.svg")
    env, mpirun = launcher()
    body = [f'<text x="60" y="20">deliveries of each document of the small dataset, all '
            f'{RANKS} ranks, {SHARDS} logical shards; x: step</text>']
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus")
        run([stoker, "synth", corpus, "--files", "2", "--seed", "2", "--dataset",
             "small:11200:800", "--dataset", "large:300K:60"], env)
        for i, (title, deal, color) in enumerate(RUNS):
            dump = os.path.join(work, f"dump-{i}")
            run(mpirun + ["-np", str(RANKS), stoker, "run", "--data", corpus, "--weights",
                          "large=1,small=1", "--logical-shards", str(SHARDS), "--steps",
                          str(STEPS), "--seq-len", str(SEQ_LEN), "--batch-size", str(BATCH),
                          "--dump", dump] + (["--deal-max-docs", deal] if deal else []), env)
            counts = counts_per_step(dump)
            report(title, counts)
            body += svg_panel(30 + 250 * i, title, counts, color)
    with open(out, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="760" height="{40 + 250 * 2}" '
                'font-family="sans-serif" font-size="12">\n<rect width="100%" height="100%" '
                'fill="#fff"/>\n' + "\n".join(body) + "\n</svg>\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
