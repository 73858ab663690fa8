"""Where a query's time goes, the LanceDB store beside the in-memory ``Index`` of the same
tree dataset, in one run: the question's embedding, LanceDB's searches (nearest leaves,
full text, the best parents' leaves), reading the hit documents (LanceDB's docs query, then
their insertion into the native expander), and the rest (fusion, expansion, packing).

The dataset and store are those ``store_growth.py --workdir DIR`` writes (``DIR/d<N>`` and
``DIR/s<N>``). Each index answers ``store_growth.QUESTIONS`` (warm: asked before, their
documents cached) and then distinct questions (cold); the phases are timed by wrapping the
store's own calls.

    python benches/store_growth.py --leaves 100000 --workdir DIR
    python benches/store_stages.py DIR 100000
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import chunkforge.index.store_query as store
from chunkforge.encoder import Encoder
from chunkforge.index import Index

from store_growth import QUESTIONS, distinct_questions


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
    """Wraps the encoder's question embedding and the store's LanceDB calls and reads."""
    stages = Stages()
    encoder.embed_query = stages.timed("embed the question", encoder.embed_query)  # type: ignore[method-assign]
    store._run = stages.timed(lambda: "LanceDB: docs query" if stages.reading else "LanceDB: searches", store._run)
    load = store._Checkout.load

    def reading_load(self: store._Checkout, doc_ids: Any, uri: str) -> Any:
        stages.reading = True
        try:
            return load(self, doc_ids, uri)
        finally:
            stages.reading = False

    store._Checkout.load = reading_load  # type: ignore[method-assign]
    store._Checkout._insert = stages.timed("insert into the expander", store._Checkout._insert)  # type: ignore[method-assign]
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
    args = parser.parse_args()
    encoder = Encoder.default("optimized")
    stages = instrument(encoder)
    indexes = {
        "store": Index.open(args.workdir / f"s{args.leaves}", encoder),
        "in memory": Index.from_dataset(args.workdir / f"d{args.leaves}", encoder),
    }
    cold = distinct_questions(2 * 200)
    for index in indexes.values():
        for question in QUESTIONS + cold[:50]:  # sessions, caches and the first partitions read
            index.query(question)
    rows = {}
    for phase in ("warm", "warm again"):  # side by side, in turn
        for name, index in indexes.items():
            rows[f"{name}, {phase}"] = measure(index, stages, args.rounds * QUESTIONS)
    rows["store, cold"] = measure(indexes["store"], stages, cold[200:])
    for name, row in rows.items():
        print(json.dumps({"index": name, **{k: round(v, 2) for k, v in row.items()}}), flush=True)


if __name__ == "__main__":
    main()
