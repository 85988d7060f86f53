"""Plots how closely stoker's mixing follows a weight schedule: docs/mixing_shares.svg.

Makes a corpus of datasets web, code and math (`stoker synth`), runs `stoker run
--weights-schedule SCHEDULE --dump DIR` for 900 steps at 1 and at 4 ranks, cuts each rank's
pieces (DIR/rank-<r>.pieces) into batches and plots per dataset the share of the tokens of every
25 steps (all ranks), the schedule's weights dashed. Prints the largest gap between such a share
and the weights in each part of the schedule, and between one rank's tokens of a dataset since
step 0 and what the weights give it. From the checkout, after the build (seconds; OUT
defaults to docs/mixing_shares.svg, STOKER to build/stoker):

    /usr/bin/python3 scripts/plot_mixing_shares.py [OUT]
"""
import os
import struct
import subprocess
import sys
import tempfile

SCHEDULE = "0:web=0.7,code=0.3;300:web=0.2,code=0.3,math=0.5;~600:web=0.1,code=0.1,math=0.8"
NAMES = ["code", "math", "web"]  # corpus order: the datasets' folder names, sorted
COLORS = ["#d95f02", "#1b9e77", "#7570b3"]
STEPS, SEQ_LEN, BATCH, WINDOW = 900, 1023, 8, 25


def parse_schedule(text):
    """[(step, ramp, weights in corpus order, normalized)] of the inline form."""
    entries = []
    for head, _, body in (entry.partition(":") for entry in text.split(";")):
        named = {k: float(v) for k, v in (w.split("=") for w in body.split(","))}
        weights = [named.get(name, 0.0) / sum(named.values()) for name in NAMES]
        entries.append((int(head.lstrip("~")), head.startswith("~"), weights))
    return entries


def weights_at(entries, step):
    """MixSchedule::WeightsAt: the entry in force, or the point of the ramp towards the next."""
    k = max(i for i, e in enumerate(entries) if e[0] <= step)
    if k + 1 == len(entries) or not entries[k + 1][1]:
        return entries[k][2]
    (s0, _, w0), (s1, _, w1) = entries[k], entries[k + 1]
    t = (step - s0) / (s1 - s0)
    return [(1 - t) * a + t * b for a, b in zip(w0, w1)]


def run(cmd, env):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, env=env, check=True)


def launcher():
    """The environment and the mpirun command line for runs of the build's `stoker`."""
    # As scripts/env.sh: shared memory between the ranks; as root, mpirun must be told so.
    env = dict(os.environ, OMPI_MCA_btl="self,vader", OMPI_MCA_btl_base_warn_component_unused="0")
    mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none"]
    mpirun += ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return env, mpirun


def tokens_per_step(dump, rank):
    """tokens[step][dataset] of one rank, and the longest document it delivered (framed)."""
    batch_tokens = BATCH * (SEQ_LEN + 1)
    tokens, done, longest = [[0] * len(NAMES) for _ in range(STEPS)], 0, 0
    with open(os.path.join(dump, f"rank-{rank}.pieces"), "rb") as f:
        for dataset, _, _, first, count in struct.iter_unpack("<5Q", f.read()):
            step = done // batch_tokens
            assert (done + count - 1) // batch_tokens == step, "a piece across batches"
            tokens[step][dataset] += count
            done, longest = done + count, max(longest, first + count)
    assert done == STEPS * batch_tokens, f"rank {rank} delivered {done} tokens"
    return tokens, longest


def rank_gap(tokens, entries):
    """The largest gap, in tokens, between one rank's tokens of a dataset since step 0 and what
    the weights of those steps give it (the clock starts afresh nowhere: mixing/mix_clock.h)."""
    delivered, owed, gap = [0] * len(NAMES), [0.0] * len(NAMES), 0
    for step, row in enumerate(tokens):
        for d, w in enumerate(weights_at(entries, step)):
            delivered[d] += row[d]
            owed[d] += w * sum(row)
            gap = max(gap, abs(delivered[d] - owed[d]))
    return gap


def windows(tokens, entries):
    """[(first step, shares, scheduled weights)] per window, from each rank's tokens."""
    out = []
    for first in range(0, STEPS, WINDOW):
        steps = range(first, first + WINDOW)
        sums = [sum(t[s][d] for t in tokens for s in steps) for d in range(len(NAMES))]
        weights = [sum(weights_at(entries, s)[d] for s in steps) / WINDOW
                   for d in range(len(NAMES))]
        out.append((first, [x / sum(sums) for x in sums], weights))
    return out


def report(ranks, rows, each, entries):
    bounds = [e[0] for e in entries] + [STEPS]
    for begin, end in zip(bounds, bounds[1:]):
        gap, first, d = max((abs(m - w), first, d) for first, shares, weights in rows
                            if begin <= first < end
                            for d, (m, w) in enumerate(zip(shares, weights)))
        print(f"{ranks} rank(s), steps {begin}-{end - 1}: largest gap {gap:.4f} "
              f"({NAMES[d]}, steps {first}-{first + WINDOW - 1})")
    print(f"{ranks} rank(s): largest gap of a rank's tokens of a dataset since step 0: "
          f"{max(rank_gap(t, entries) for t, _ in each):.0f}; longest document delivered: "
          f"{max(n for _, n in each)} framed tokens")


def svg_panel(top, title, rows, entries):
    """One plot, 250 px high, its top at `top`: axes, grid, the shares and the weights."""
    def xy(step, share):  # the plot's 680 x 190 px lie 60 px from the left, 30 below `top`
        return f"{60 + 680 * step / STEPS:.1f},{top + 220 - 190 * share:.1f}"

    out = [f'<text x="60" y="{top + 18}" font-weight="bold">{title}</text>',
           f'<polyline points="{xy(0, 1)} {xy(0, 0)} {xy(STEPS, 0)}" fill="none" stroke="#000"/>']
    for v in (0.2, 0.4, 0.6, 0.8, 1.0, 0.0):  # the last grid line lies under the axis
        out.insert(1, f'<polyline points="{xy(0, v)} {xy(STEPS, v)}" stroke="#ddd"/>')
        out.append(f'<text x="52" y="{top + 224 - 190 * v:.1f}" text-anchor="end">{v:.1f}</text>')
    for step in range(0, STEPS + 1, 100):
        out.append(f'<text x="{60 + 680 * step / STEPS:.1f}" y="{top + 236}" '
                   f'text-anchor="middle">{step}</text>')
    for d, color in enumerate(COLORS):
        points = []
        for step, ramp, weights in entries:
            if points and not ramp:  # a jump: the weights before it up to its step
                points.append(xy(step, weights_at(entries, step - 1)[d]))
            points.append(xy(step, weights[d]))
        points.append(xy(STEPS, entries[-1][2][d]))
        out.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" '
                   'stroke-dasharray="6 4"/>')
        points = [xy(first + WINDOW / 2, shares[d]) for first, shares, _ in rows]
        out.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" '
                   'stroke-width="1.5"/>')
    return out


def write_svg(path, panels, entries):
    body = [f'<text x="60" y="20">share of the tokens of every {WINDOW} steps, all ranks '
            '(solid); scheduled weight (dashed); x: step</text>']
    for d, name in enumerate(NAMES):
        body.append(f'<rect x="{60 + 90 * d}" y="30" width="14" height="4" fill="{COLORS[d]}"/>'
                    f'<text x="{80 + 90 * d}" y="36">{name}</text>')
    for i, (title, rows) in enumerate(panels):
        body += svg_panel(45 + 250 * i, title, rows, entries)
    with open(path, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="760" '
                f'height="{60 + 250 * len(panels)}" font-family="sans-serif" font-size="12">\n'
                '<rect width="100%" height="100%" fill="#fff"/>\n' + "\n".join(body) + "\n</svg>\n")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stoker = os.environ.get("STOKER", os.path.join(root, "build", "stoker"))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "docs", "mixing_shares.svg")
    env, mpirun = launcher()
    entries, panels = parse_schedule(SCHEDULE), []
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus")
        run([stoker, "synth", corpus, "--files", "2", "--dataset", "web:6M:300",
             "--dataset", "code:4M:600", "--dataset", "math:3M:150"], env)
        for ranks in (1, 4):
            dump = os.path.join(work, f"dump-{ranks}")
            run(mpirun + ["-np", str(ranks), stoker, "run", "--data", corpus,
                          "--weights-schedule", SCHEDULE, "--steps", str(STEPS), "--seq-len",
                          str(SEQ_LEN), "--batch-size", str(BATCH), "--dump", dump], env)
            each = [tokens_per_step(dump, rank) for rank in range(ranks)]
            rows = windows([t for t, _ in each], entries)
            report(ranks, rows, each, entries)
            panels.append((f"{ranks} rank{'s' if ranks > 1 else ''}", rows))
    write_svg(out, panels, entries)
    print("wrote", out)


if __name__ == "__main__":
    main()
