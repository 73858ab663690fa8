"""Where a query's time goes, the LanceDB store beside the in-memory ``Index`` of the same
tree dataset, in one run: the question's embedding, LanceDB's searches (nearest leaves,
full text, the best parents' leaves), reading the hit sections (from the side's copy; without a
side, whole documents by LanceDB's docs query) and decoding them, their insertion into the native
expander, and the rest (fusion, expansion, packing). With a side, its graph is searched on its own thread
while the best BM25 parents' leaves are scored and their sections read: "side: graph (its wait)"
is the wait for it that is left.

The dataset and store are those ``store_growth.py --workdir DIR`` writes (``DIR/d<N>`` and
``DIR/s<N>``). Each index answers ``store_growth.QUESTIONS`` (warm: asked before, their
documents cached) and then distinct questions (cold); the phases are timed by wrapping the
store's own calls.

    python benches/store_growth.py --leaves 100000 --workdir DIR
    python benches/store_stages.py DIR 100000
    python benches/store_stages.py --lance DIR 1000000   # LanceDB's searches alone, nprobes / refine_factor
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import chunkforge.index.store_cache as store_cache
import chunkforge.index.store_query as store
from chunkforge.encoder import Encoder
from chunkforge.index import Index
from chunkforge.index.store_cache import DocumentCache, Key

from store_growth import QUESTIONS, dataset_name, distinct_questions, store_name


class Stages:
    """Seconds spent in each wrapped call, summed."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.reading = False  # inside the store's document reads

    def timed(self, name: str | Callable[[], str], call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return call(*args)
            finally:
                key = name() if callable(name) else name
                self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - start

        return run


def instrument(encoder: Encoder) -> Stages:
    """Wraps the encoder's question embedding, the store's LanceDB searches (none with a side: its
    reader reads no table for an unfiltered question), its reads of the hit documents (LanceDB's
    docs query, or the side's copy) and their insertion, and its side's searches."""
    stages = Stages()
    encoder.embed_query = stages.timed("embed the question", encoder.embed_query)  # type: ignore[method-assign]
    run = store._run
    timed_run = stages.timed("LanceDB: searches", run)
    store._run = lambda query: run(query) if stages.reading else timed_run(query)
    rows = DocumentCache._rows

    def reading_rows(self: DocumentCache, keys: list[Key]) -> Any:
        stages.reading = True
        try:
            return rows(self, keys)
        finally:
            stages.reading = False

    DocumentCache._rows = stages.timed("read the hit sections", reading_rows)  # type: ignore[method-assign]
    store_cache.read_rows = stages.timed("read the hit sections", store_cache.read_rows)  # their columns decoded
    DocumentCache._insert = stages.timed("insert into the expander", DocumentCache._insert)  # type: ignore[method-assign]
    for name in ("lexical", "pooled", "bm25"):
        setattr(store.Side, name, stages.timed("side: BM25, best parents' leaves", getattr(store.Side, name)))
    nearest_later = store.Side.nearest_later

    def waited(self: store.Side, *args: Any) -> Any:
        future = nearest_later(self, *args)
        future.result = stages.timed("side: graph (its wait)", future.result)  # type: ignore[method-assign]
        return future

    store.Side.nearest_later = waited  # type: ignore[method-assign]
    return stages


def measure(index: Any, stages: Stages, asked: list[str]) -> dict[str, float]:
    """p50 and the mean ms of each stage per question over ``asked``."""
    stages.seconds.clear()
    times = []
    for question in asked:
        start = time.perf_counter()
        index.query(question)
        times.append(time.perf_counter() - start)
    row = {"p50 ms": 1000 * float(np.median(times))}
    row.update({name: 1000 * s / len(asked) for name, s in sorted(stages.seconds.items())})
    row["the rest"] = 1000 * sum(times) / len(asked) - sum(v for k, v in row.items() if k != "p50 ms")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path, help="store_growth.py's --workdir")
    parser.add_argument("leaves", type=int, help="the size written there (its d<N> and s<N>)")
    parser.add_argument("--rounds", type=int, default=20, help="times each warm question is asked")
    parser.add_argument("--no-memory", action="store_true", help="the store alone (10M leaves do not fit in memory)")
    parser.add_argument("--ann-index", default="IVF_PQ", help="the store written with this ANN index")
    parser.add_argument("--real-vectors", action="store_true", help="the store of the real model's vectors")
    parser.add_argument("--lancedb", action="store_true", help="the store without its side too (LanceDB's searches)")
    args = parser.parse_args()
    encoder = Encoder.default("optimized")
    stages = instrument(encoder)
    name = store_name(args.leaves, args.ann_index, args.real_vectors)
    indexes = {"store": Index.open(args.workdir / name, encoder)}
    if args.lancedb:
        indexes["store, LanceDB's searches"] = Index.open(args.workdir / name, encoder, side=False)
    if not args.no_memory:
        indexes["in memory"] = Index.from_dataset(args.workdir / dataset_name(args.leaves, args.real_vectors), encoder)
    cold = distinct_questions(2 * 200)
    for index in indexes.values():
        for question in QUESTIONS + cold[:50]:  # sessions, caches and the first partitions read
            index.query(question)
    rows = {}
    for phase in ("warm", "warm again"):  # side by side, in turn
        for name, index in indexes.items():
            rows[f"{name}, {phase}"] = measure(index, stages, args.rounds * QUESTIONS)
    rows["store, cold"] = measure(indexes["store"], stages, cold[200:300])
    if args.lancedb:
        rows["store, LanceDB's searches, cold"] = measure(indexes["store, LanceDB's searches"], stages, cold[300:])
    for name, row in rows.items():
        print(json.dumps({"index": name, **{k: round(v, 2) for k, v in row.items()}}), flush=True)


def lance_side(
    workdir: Path, leaves: int, settings: list[tuple[int, int]], distinct: int, ann_index: str, real: bool
) -> None:
    """LanceDB's side alone, on the store ``s<leaves>``: each search of a query timed on its own
    (the nearest leaves at each ``(nprobes, refine_factor)``, each setting on new questions, the full text, the best parents'
    leaves, the hit documents), cold (``distinct`` new questions) then warm (the same again),
    and the nearest search's recall of the exact ``DENSE_POOL`` nearest (numpy over every
    stored vector): the share of the leaves it returns that are at least as near as the exact
    ``DENSE_POOL``-th (leaves of equal text have equal vectors: any of them counts)."""
    from chunkforge.index.fusion import BM25_POOL, DENSE_POOL

    encoder = Encoder.default("optimized")
    index = Index.open(workdir / store_name(leaves, ann_index, real), encoder)
    at = index._now  # type: ignore[attr-defined]
    tables = at.tables
    questions = distinct_questions(distinct * (len(settings) + 2))  # new ones for each setting, and the side
    vectors = [encoder.embed_query(q) for q in questions]
    table = store._run(tables["leaves"].query().select(["vector"]).to_arrow())
    column = table.column("vector").combine_chunks()
    stored = column.values.to_numpy().reshape(len(column), column.type.list_size)
    assert len(stored) == index.leaf_count, "the exact search must see every leaf"
    norms = np.linalg.norm(stored, axis=1)
    exact = []  # each question's DENSE_POOL-th best cosine (leaves of equal text tie: any copy counts)
    for v in vectors:
        cos = stored @ v / norms
        exact.append(float(-np.partition(-cos, DENSE_POOL - 1)[DENSE_POOL - 1]))
    del table

    def timed(run: Callable[[Any], Any], items: list[Any]) -> tuple[float, list[Any]]:
        times, out = [], []
        for item in items:
            start = time.perf_counter()
            out.append(run(item))
            times.append(time.perf_counter() - start)
        return 1000 * float(np.median(times)), out

    for n, (nprobes, refine) in enumerate(settings):
        own = slice(n * distinct, (n + 1) * distinct)
        index.nprobes, index.refine_factor = nprobes, refine  # type: ignore[attr-defined]

        def nearest(v: Any) -> Any:
            return store._run(index._nearest(tables["leaves"], v, DENSE_POOL, None))  # type: ignore[attr-defined]

        cold, found = timed(nearest, vectors[own])
        warm, _ = timed(nearest, vectors[own])
        recall = float(
            np.mean([sum(c >= e - 1e-5 for _, c in f.values()) / DENSE_POOL for f, e in zip(found, exact[own])])
        )
        row = {"search": "nearest", "nprobes": nprobes, "refine": refine, "cold p50": cold, "warm p50": warm}
        print(json.dumps({**row, "recall": round(recall, 4)}), flush=True)

    if at.side is not None:  # the side's graph, its leaves scored from their int8 copies
        own = slice(len(settings) * distinct, (len(settings) + 1) * distinct)

        def side_nearest(v: Any) -> Any:
            unit = v / np.linalg.norm(v)
            rows = at.side.nearest(unit, DENSE_POOL)
            at.side.scored(rows, unit)
            return rows

        cold, found = timed(side_nearest, vectors[own])
        warm, _ = timed(side_nearest, vectors[own])
        cosines = [stored[rows] @ v / norms[rows] for rows, v in zip(found, vectors[own])]  # float, for the recall
        recall = float(np.mean([np.sum(f >= e - 1e-5) / DENSE_POOL for f, e in zip(cosines, exact[own])]))
        row = {"search": "nearest (side)", "cold p50": cold, "warm p50": warm, "recall": round(recall, 4)}
        print(json.dumps(row), flush=True)

        def side_ranked(i: int) -> Any:
            side, unit = at.side, vectors[i] / np.linalg.norm(vectors[i])
            best, rows = side.lexical(questions[i], BM25_POOL), side.nearest(unit, DENSE_POOL)
            return side.pooled(best, unit), side.bm25(questions[i], np.concatenate([side.leaf_parent[rows], best]))

        last = list(range(len(questions) - distinct, len(questions)))
        cold, _ = timed(side_ranked, last)
        warm, _ = timed(side_ranked, last)
        print(json.dumps({"search": "side: graph, BM25, best parents' leaves", "cold p50": cold, "warm p50": warm}))

    def fts(q: str) -> Any:
        return store._run(index._bm25(tables["parents"], q, None))  # type: ignore[attr-defined]

    questions, vectors = questions[-distinct:], vectors[-distinct:]
    cold, scores = timed(fts, questions)
    warm, _ = timed(fts, questions)
    print(json.dumps({"search": "full text", "cold p50": cold, "warm p50": warm}), flush=True)
    best = [[p for p, _ in sorted(s.items(), key=lambda item: -item[1])[:BM25_POOL]] for s in scores]

    def leaves_of(i: int) -> Any:
        return store._run(index._leaves_of(tables["leaves"], best[i], vectors[i], None))  # type: ignore[attr-defined]

    cold, _ = timed(leaves_of, list(range(len(questions))))
    warm, _ = timed(leaves_of, list(range(len(questions))))
    print(json.dumps({"search": "best parents' leaves", "cold p50": cold, "warm p50": warm}), flush=True)


def lance_main() -> None:
    parser = argparse.ArgumentParser(description=lance_side.__doc__)
    parser.add_argument("workdir", type=Path)
    parser.add_argument("leaves", type=int)
    parser.add_argument("--distinct", type=int, default=100)
    parser.add_argument("--ann-index", default="IVF_PQ", help="the store written with this ANN index")
    parser.add_argument("--real-vectors", action="store_true", help="the store of the real model's vectors")
    parser.add_argument("--settings", nargs="+", default=["32:4", "8:1", "16:1", "16:4", "32:1", "64:1", "64:4"])
    args = parser.parse_args()
    settings = [(int(s.split(":")[0]), int(s.split(":")[1])) for s in args.settings]
    lance_side(args.workdir, args.leaves, settings, args.distinct, args.ann_index, args.real_vectors)


if __name__ == "__main__":
    import sys

    if "--lance" in sys.argv:
        sys.argv.remove("--lance")
        lance_main()
    else:
        main()
