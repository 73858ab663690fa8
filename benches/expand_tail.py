"""Where expansion's p99 comes from: 50 hits -> payload (``budget_tokens=1000``) on an index of
~100k leaves (``expand_bench.py``'s structure and hits, made just before each call as
``Index.query`` makes them), timed two ways in turns, rounds of 100 queries:

- ``Index.expand``: the public call (its checks, the native call, ``Payload``);
- ``native``: ``Expander.expand`` alone.

Then, for ``Index.expand``, what its slowest 2% of calls have in common: minor page faults
(``getrusage``), whether they are the same queries (a query-specific cost would be), and how
much slower each is than its own query's median (a gap the host took, measured apart by
``benches/host_gaps.c``, would add 40-160 us to a call wherever it falls).

    python benches/expand_tail.py [--leaves 100000] [--queries 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
from collections import Counter
from dataclasses import replace

import numpy as np

from expand_bench import fresh, queries, structure_index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--leaves", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    index = structure_index(args.leaves)
    leaves = index.leaves()
    hit_lists = [[replace(leaves[label], score=score) for label, score in q] for q in queries(index, args.queries, 50)]
    gc.collect()
    gc.freeze()
    made = fresh(index)
    native = index._expander

    def native_call(hits: list) -> object:
        return native.expand(hits, None, None, False, None, 1000, "score", "skip", False)

    calls = {
        "Index.expand": lambda hits: index.expand(hits, budget_tokens=1000),
        "native": native_call,
    }
    wall: dict[str, list[float]] = {name: [] for name in calls}
    faults, query = [], []
    for _ in range(args.rounds):
        for at in range(0, len(hit_lists), 100):
            for name, call in calls.items():
                for i in range(at, min(at + 100, len(hit_lists))):
                    hits = made(hit_lists[i])
                    f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
                    t0 = time.perf_counter()
                    call(hits)
                    wall[name].append((time.perf_counter() - t0) * 1e6)
                    if name == "Index.expand":
                        faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0)
                        query.append(i)
    for name, samples in wall.items():
        p50, p90, p99 = np.percentile(samples, [50, 90, 99])
        print(f"{name:20s} p50 {p50:6.1f}  p90 {p90:6.1f}  p99 {p99:6.1f} us")
    t, f, q = np.array(wall["Index.expand"]), np.array(faults), np.array(query)
    slow = t > np.percentile(t, 98)
    print(f"Index.expand's slowest 2% ({slow.sum()} calls):")
    print(f"  minor page faults per call: {f[slow].mean():.3f} (all calls: {f.mean():.3f})")
    repeats = Counter(q[slow].tolist()).most_common(1)[0][1]
    print(f"  distinct queries: {len(set(q[slow].tolist()))} (at most {repeats} slow calls of one query)")
    median = np.array([np.median(t[q == i]) for i in range(len(hit_lists))])
    excess = t[slow] - median[q[slow]]
    print(
        "  slower than their query's median by (p10 / p50 / p90): {:.1f} / {:.1f} / {:.1f} us".format(
            *np.percentile(excess, [10, 50, 90])
        )
    )


if __name__ == "__main__":
    main()
