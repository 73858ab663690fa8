"""Expansion latency: 50 hits -> payload on an index of ~100k leaves.

The index's structure (sections, parents and leaves of ``Index``'s defaults: 256
and 48 tokens) is built from the real corpus (tests/data/docs-corpus.jsonl.gz)
without embedding: the expansion never looks at vectors. Each query's hits are realistic: a few anchor
leaves and their neighbours, scores descending. ``--export`` also writes the
trees and hits for the LlamaIndex adapter (benches/llamaindex_expand.py).
Timed per policy: ``expand`` (``Payload`` of ``Passage`` objects; their texts are
sliced when read), ``expand + texts`` (every passage's text read, as rendering
does), both on hits made once before the run (on a large index most are out of the
caches by their turn), and ``expand`` on hits made just before each call, untimed,
as ``Index.search`` hands them to ``Index.expand`` in ``Index.query``; taking turns
in rounds of 100 queries. To compare two builds, run this once
with each (the other build's package first on ``PYTHONPATH``), alternating; or, better,
``--other DIR``: DIR is a copy of the other build's ``python/chunkforge`` folder under
another name (its extension inside), and both builds' structures live in this process,
timed in turns on the same hits. On a shared host a process runs at one of two speeds
(one is ~1.5x the other here, whichever the build, the CPU or the address layout), so
two processes compare the host more than the builds.

    python benches/expand_bench.py --leaves 100000 --export expand-data.json
    python benches/expand_bench.py --only budget=1000 --other ../base/chunkforge_base
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from chunkforge.index import Index

from bench_texts import corpus_documents

POLICIES = {
    "budget=1000 (Index.query's default)": dict(budget_tokens=1000),
    "window_tokens=64 budget=1000": dict(window_tokens=64, budget_tokens=1000),
    "window=2": dict(window=2),
    "window=2 budget=2000": dict(window=2, budget_tokens=2000),
    "auto_merge=0.5": dict(auto_merge=0.5),
    "auto_merge=0.5 window=2": dict(auto_merge=0.5, window=2),
    "auto_merge=0.5 budget=2000": dict(auto_merge=0.5, budget_tokens=2000),
    "parent budget=2000 order=document": dict(parent=True, budget_tokens=2000, order="document"),
}


def structure_index(leaves: int, index_type: type[Index] = Index) -> Index:
    """An index holding the trees of the first corpus documents up to ``leaves`` leaves,
    with no vectors (expansion reads the trees only): the index's own build step, its
    leaves labelled in order, without the embedding and the HNSW graph."""
    index = index_type()
    records = corpus_documents(leaves)
    trees = index._build(index._records(records))
    counts = np.cumsum([0] + [len(t.leaf_parent) for t in trees])
    labels = [np.arange(a, b, dtype=np.int64) for a, b in zip(counts[:-1], counts[1:])]
    slots = index._expander.insert(
        [t.native for t in trees], [x.tolist() for x in labels], [t.doc_id for t in trees], [t.text for t in trees]
    )
    index._register(trees, labels, slots)
    return index


def queries(index: Index, n: int, hits: int, seed: int = 0) -> list[list[tuple[int, float]]]:
    """``n`` hit lists: 8 random anchors, the rest within 6 leaves of an anchor."""
    rng = random.Random(seed)
    total = index.leaf_count  # labels 0 .. n-1, in order
    out = []
    for _ in range(n):
        anchors = [rng.randrange(total) for _ in range(8)]
        labels = set(anchors)
        while len(labels) < hits:
            labels.add(min(total - 1, max(0, rng.choice(anchors) + rng.randint(-6, 6))))
        scores = sorted((rng.random() for _ in labels), reverse=True)
        out.append(list(zip(rng.sample(sorted(labels), len(labels)), scores)))
    return out


def percentiles(samples: list[float]) -> tuple[float, float]:
    a = np.array(samples) * 1e6
    return float(np.percentile(a, 50)), float(np.percentile(a, 99))


def timed(
    call: Callable[[list], object], hit_lists: list, made: Callable[[list], list] | None = None
) -> tuple[list[float], list[float]]:
    """Wall-clock and thread CPU seconds of each call (CPU time leaves out the
    time the OS gave other processes: this machine is shared); with ``made``, each
    call's hits are ``made(hits)`` just before it, untimed."""
    wall, cpu = [], []
    for hits in hit_lists:
        if made is not None:
            hits = made(hits)
        c0, t0 = time.thread_time(), time.perf_counter()
        call(hits)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return wall, cpu


def texts(payload) -> int:
    """Reads every passage's text (what rendering a payload does)."""
    return sum(len(p.text) for p in payload.passages)


def line(name: str, wall: list[float], cpu: list[float], extra: str = "") -> str:
    return (
        f"{name:44s} wall p50 {percentiles(wall)[0]:6.1f} p99 {percentiles(wall)[1]:7.1f} us | "
        f"cpu p50 {percentiles(cpu)[0]:6.1f} p99 {percentiles(cpu)[1]:6.1f} us{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--leaves", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--hits", type=int, default=50)
    parser.add_argument("--export", metavar="FILE", help="trees and hits for the LlamaIndex adapter")
    parser.add_argument("--export-queries", type=int, default=300)
    parser.add_argument("--only", metavar="PREFIX", help="time only the policies whose name starts with PREFIX")
    parser.add_argument("--other", metavar="DIR", help="another build's package folder, timed in this process")
    args = parser.parse_args()
    if args.other:
        other(args)
        return
    started = time.perf_counter()
    index = structure_index(args.leaves)
    print(f"structure of {len(index)} docs, {index.leaf_count} leaves in {time.perf_counter() - started:.1f} s")
    leaves = index.leaves()
    hit_lists = [
        [replace(leaves[label], score=score) for label, score in q] for q in queries(index, args.queries, args.hits)
    ]
    gc.collect()
    gc.freeze()  # the long-lived setup objects stay out of the collector's way, as in a warmed-up server
    for name, options in POLICIES.items():
        if args.only and not name.startswith(args.only):
            continue
        calls = {
            "expand": lambda hits, o=options: index.expand(hits, **o),
            "expand + texts": lambda hits, o=options: texts(index.expand(hits, **o)),
            "expand, hits made just before": lambda hits, o=options: index.expand(hits, **o),
        }
        passages = np.mean([len(index.expand(h, **options).passages) for h in hit_lists[:200]])
        print(f"{name} ({passages:.1f} passages)")
        for call in calls.values():
            for hits in hit_lists[:200]:
                call(hits)
        # the variants take turns in rounds of 100 queries, so that load changes hit them alike
        samples: dict[str, tuple[list[float], list[float]]] = {what: ([], []) for what in calls}
        for at in range(0, len(hit_lists), 100):
            for what, call in calls.items():
                made = fresh(index) if what.endswith("made just before") else None
                wall, cpu = timed(call, hit_lists[at : at + 100], made)
                samples[what][0].extend(wall)
                samples[what][1].extend(cpu)
        for what, (wall, cpu) in samples.items():
            print("  " + line(what, wall, cpu))
    if args.export:
        export(index, hit_lists[: args.export_queries], Path(args.export))


def fresh(index: Index) -> Callable[[list], list]:
    """Hits made anew, as :meth:`Index.search` makes them just before ``Index.query``
    expands them (the held hits of the other variants are out of the caches on a large
    index: reading their labels and scores is then a cache miss or more per hit)."""
    return lambda hits: index._hits([h.leaf for h in hits], [h.score for h in hits])


def other(args: argparse.Namespace) -> None:
    """This build and the package in ``args.other``, each on its own structure of the same
    documents and the same hits, ``expand`` timed in turns in rounds of 100 queries."""
    folder = Path(args.other).resolve()
    sys.path.insert(0, str(folder.parent))
    builds = {"this build": Index, f"{folder.name}": importlib.import_module(f"{folder.name}.index").Index}
    indexes = {name: structure_index(args.leaves, index_type) for name, index_type in builds.items()}
    wanted = queries(indexes["this build"], args.queries, args.hits)
    leaves = {name: ix.leaves() for name, ix in indexes.items()}
    hit_lists = {
        name: [[replace(leaves[name][label], score=score) for label, score in q] for q in wanted] for name in indexes
    }
    gc.collect()
    gc.freeze()
    for name, options in POLICIES.items():
        if args.only and not name.startswith(args.only):
            continue
        print(name)
        for build, ix in indexes.items():
            for hits in hit_lists[build][:200]:
                ix.expand(hits, **options)
        for hits_are in ("held", "made just before"):
            samples: dict[str, tuple[list[float], list[float]]] = {build: ([], []) for build in builds}
            for at in range(0, args.queries, 100):
                for build, ix in indexes.items():
                    made = fresh(ix) if hits_are == "made just before" else None
                    call = lambda hits, ix=ix, o=options: ix.expand(hits, **o)  # noqa: E731
                    wall, cpu = timed(call, hit_lists[build][at : at + 100], made)
                    samples[build][0].extend(wall)
                    samples[build][1].extend(cpu)
            for build, (wall, cpu) in samples.items():
                print("  " + line(f"expand, {build}, hits {hits_are}", wall, cpu))


def export(index: Index, hit_lists: list, path: Path) -> None:
    """Writes the touched documents' trees, their leaves' window-2 spans and the hits."""
    touched = sorted({h.doc_id for hits in hit_lists for h in hits}, key=index.doc_ids.index)
    docs = []
    for doc_id in touched:
        tree = index.tree(doc_id)
        leaves = index.leaves(doc_id)
        windows = [index.expand([h], window=2).passages[0] for h in leaves]
        docs.append(
            {
                "id": doc_id,
                "text": index.document(doc_id),
                "nodes": tree.nodes[:, :3].tolist(),
                "leaves": tree.leaves.tolist(),
                "labels": [h.leaf for h in leaves],
                "windows": [[w.start, w.end] for w in windows],
            }
        )
    queries = [[[h.leaf, h.score] for h in hits] for hits in hit_lists]
    path.write_text(json.dumps({"docs": docs, "queries": queries}))
    # as benches/llamaindex_expand.py times LlamaIndex: two rounds, the second timed, the
    # hits of each query made just before its call (a retriever hands over new objects)
    leaves = index.leaves()
    wall = []
    for rounds in range(2):
        for query in queries:
            hits = [replace(leaves[label], score=score) for label, score in query]
            t0 = time.perf_counter()
            index.expand(hits, auto_merge=0.5, window=2)
            if rounds:
                wall.append(time.perf_counter() - t0)
    print(
        f"exported {len(docs)} docs, {len(queries)} queries -> {path}; on these queries "
        f"auto_merge=0.5 window=2: wall p50 {percentiles(wall)[0]:.1f} us p99 {percentiles(wall)[1]:.1f} us"
    )


if __name__ == "__main__":
    main()
