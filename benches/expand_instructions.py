"""Instructions per ``Index.expand`` call, counted by valgrind (callgrind): a measure this
shared, noisy host cannot blur (its timings drift 1.5x between processes), for comparing
two builds. It says nothing of cache misses: time those with ``expand_bench.py --other``.

The run expands the same 100 hit lists (50 hits each, ``budget_tokens=1000``) on a 5,000-leaf
structure index ``rounds`` times, once with few rounds and once with many; the difference of
the two totals over the calls in between is the cost of one call, the payload's release
included (hnswlib, whose wheel uses AVX-512 that valgrind cannot run, is stubbed out: the
expansion never touches it).

    python benches/expand_instructions.py                         # this build
    python benches/expand_instructions.py --other ../base/chunkforge_base
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FEW, MANY, QUERIES = 5, 25, 100


def child(package: str, rounds: int) -> None:
    import gc
    import importlib
    import types
    from dataclasses import replace

    sys.modules["hnswlib"] = types.ModuleType("hnswlib")
    from expand_bench import queries, structure_index

    index = structure_index(5000, importlib.import_module(f"{package}.index").Index)
    leaves = index.leaves()
    hit_lists = [[replace(leaves[label], score=score) for label, score in q] for q in queries(index, QUERIES, 50)]
    gc.collect()
    gc.freeze()
    for _ in range(rounds):
        for hits in hit_lists:
            index.expand(hits, budget_tokens=1000)


def count(package: str, path: Path, rounds: int) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": os.pathsep.join([str(path), str(HERE)])}
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    out = subprocess.run(
        [*command, __file__, "--child", package, str(rounds)], env=env, capture_output=True, text=True, check=True
    )
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--other", metavar="DIR", help="another build's package folder (see expand_bench.py)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    builds = {"this build": ("chunkforge", HERE.parent / "python")}
    if args.other:
        folder = Path(args.other).resolve()
        builds[folder.name] = (folder.name, folder.parent)
    for name, (package, path) in builds.items():
        few, many = count(package, path, FEW), count(package, path, MANY)
        print(f"{name}: {(many - few) / ((MANY - FEW) * QUERIES):,.0f} instructions per expand call")


if __name__ == "__main__":
    main()
