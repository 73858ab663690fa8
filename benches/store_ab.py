"""Two versions of the store's reader side by side on new questions: each version's checkout
(``--a`` / ``--b``: a folder holding its ``python/chunkforge`` with its extension built) answers
from its own store (``--a-store`` / ``--b-store``: the same tables, each with the side its
version writes), one fresh process per block of distinct questions, the versions in turn.
Each block is asked by one version and then by the other, which finds the first one's pages
of the tables they share (the leaves' vectors) in the page cache: so compare within a
position (asked first, asked second), never across. Each process then asks its block again
(questions asked before).

    python benches/store_ab.py --a /old/checkout --a-store DIR/s10000000 \\
        --b . --b-store DIR/s10000000-parts --blocks 6 --block 60
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from store_growth import distinct_questions

ASK = """
import json, sys, time
import numpy as np
from chunkforge.encoder import Encoder
from chunkforge.index import Index
index = Index.open(sys.argv[1], Encoder.default("optimized"))
questions = json.loads(sys.argv[2])
def timed():
    times = []
    for q in questions:
        t = time.perf_counter()
        index.query(q)
        times.append(1000 * (time.perf_counter() - t))
    return times
new = timed()
print(json.dumps({"new": new, "asked before": timed()}))
"""


def ask(checkout: Path, store: Path, questions: list[str]) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(checkout / "python")}
    out = subprocess.run(
        [sys.executable, "-c", ASK, str(store), json.dumps(questions)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="version A's checkout")
    parser.add_argument("--a-store", type=Path, required=True)
    parser.add_argument("--b", type=Path, required=True, help="version B's checkout")
    parser.add_argument("--b-store", type=Path, required=True)
    parser.add_argument("--blocks", type=int, default=6, help="blocks of questions (even: each version first as often)")
    parser.add_argument("--block", type=int, default=60, help="distinct questions a block")
    parser.add_argument("--skip", type=int, default=0, help="questions left out first (new to a store asked before)")
    args = parser.parse_args()
    questions = distinct_questions(args.skip + args.blocks * args.block)[args.skip :]
    versions = {"A": (args.a, args.a_store), "B": (args.b, args.b_store)}
    rows = []
    for i in range(args.blocks):
        block = questions[i * args.block : (i + 1) * args.block]
        order = ["A", "B"] if i % 2 == 0 else ["B", "A"]
        for position, name in enumerate(order):
            times = ask(*versions[name], block)
            row = {"block": i, "version": name, "position": ("first", "second")[position]}
            row.update({kind: float(np.median(t)) for kind, t in times.items()})
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| position | A new p50 ms | B new p50 ms | B / A | A asked before | B asked before |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for position in ("first", "second"):
        mean = {
            (name, kind): float(np.mean([r[kind] for r in rows if r["version"] == name and r["position"] == position]))
            for name in "AB"
            for kind in ("new", "asked before")
        }
        ratio = mean[("B", "new")] / mean[("A", "new")]
        print(
            f"| asked {position} | {mean[('A', 'new')]:.1f} | {mean[('B', 'new')]:.1f} | {ratio:.2f}x "
            f"| {mean[('A', 'asked before')]:.1f} | {mean[('B', 'asked before')]:.1f} |"
        )


if __name__ == "__main__":
    main()
