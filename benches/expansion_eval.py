"""Does index-small-send-big retrieve better? (issue 7)

Payloads of :class:`chunkforge.index.Index` (sentence leaves retrieved dense-only
or hybrid, expanded into windows, parents or auto-merged parents, packed into a
token budget) against plain chunks (RecursiveChunker 128/256/512, dense top
chunks while the budget lasts), scored with :mod:`chunkforge.eval` on the same
evidence spans at the same 500- and 1,000-token budgets, on the labelled set of
``tests/data/eval`` (20 documents, 48 questions, 44 answerable).

Both sides pack the same way (``--pack``, default ``skip``: a passage or chunk
that does not fit is skipped and smaller later ones may fill the budget, the
index's default). Each question's payload is ``index.expand(index.search(q, k),
budget_tokens=B, **policy)``, scored on its passages' spans
``Span(p.doc_id, p.start, p.end)`` with ``chunkforge.eval.score``; the plain chunks
go through ``chunkforge.eval.evaluate`` (same measure, same packing). Sizes and
budgets are in all-MiniLM-L6-v2 tokens (passages' and chunks' exact counts).

    python benches/expansion_eval.py --out benches/results/expansion-eval.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from chunkforge.chunkers import RecursiveChunker
from chunkforge.encoder import Encoder
from chunkforge.eval import (
    EmbeddingCache,
    Scores,
    Span,
    SpanMeasure,
    evaluate,
    load_corpus,
    load_queries,
    score,
)
from chunkforge.index import Index
from chunkforge.onnx_export import cache_root

DATA = Path(__file__).parent.parent / "tests" / "data" / "eval"
POLICIES = {
    "leaves only (window 0)": dict(window=0),
    "window 1": dict(window=1),
    "window 2": dict(window=2),
    "window 3": dict(window=3),
    "parent": dict(parent=True),
    "auto-merge 0.5": dict(auto_merge=0.5),
}
BUDGETS = (500, 1000)
PLAIN = (128, 256, 512)
COLUMNS = ("evidence_recall", "found", "recall", "precision", "iou", "context")


def summary(s: Scores) -> dict[str, float]:
    """Means over the answerable questions (context: mean tokens handed over, all questions)."""
    out = s.summary()
    return {c: out[c]["mean"] for c in COLUMNS}


def row(name: str, by_budget: dict[int, dict[str, float]]) -> str:
    cells = []
    for b in BUDGETS:
        m = by_budget[b]
        cells += [f"{m['evidence_recall']:.3f}", f"{m['found']:.3f}", f"{m['recall']:.3f}", f"{m['precision']:.3f}",
                  f"{m['iou']:.3f}", f"{m['context']:.0f}"]
    return f"| {name} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, nargs="+", default=[12, 50], help="hits retrieved per question (default 12 50)")
    parser.add_argument("--pack", choices=("skip", "stop"), default="skip")
    parser.add_argument("--coverage", type=float, default=0.5)
    parser.add_argument("--out", help="write the Markdown table here (else stdout only)")
    args = parser.parse_args()
    started = time.perf_counter()
    corpus = load_corpus(DATA / "corpus.jsonl")
    queries = load_queries(DATA / "queries.jsonl", corpus)
    encoder = Encoder.default()
    measure = SpanMeasure(corpus)
    cache = EmbeddingCache(cache_root() / "embeddings.sqlite")

    results: dict[tuple[str, int | None], dict[int, dict[str, float]]] = {}
    per_query: dict[tuple[str, int | None, int], np.ndarray] = {}
    for n in PLAIN:
        name = f"plain RecursiveChunker {n} (dense)"
        for b in BUDGETS:
            r = evaluate(corpus, queries, RecursiveChunker(encoder.tokenizer, max_tokens=n), encoder, k=5, budget=b,
                         pack=args.pack, measure=measure, coverage=args.coverage, cache=cache, name=name)
            assert r.at_budget is not None
            results.setdefault((name, None), {})[b] = summary(r.at_budget)
            per_query[(name, None, b)] = r.at_budget.evidence_recall
        print(row(name, results[(name, None)]), flush=True)

    t0 = time.perf_counter()
    index = Index.build([{"id": d.doc_id, "text": d.text} for d in corpus], encoder)
    built = time.perf_counter() - t0
    print(f"{index!r} built in {built:.0f} s", flush=True)
    for k in args.k:
        for hybrid in (False, True):
            hits = [index.search(q.query, k=k, hybrid=hybrid) for q in queries]
            for policy, options in POLICIES.items():
                name = f"{policy}, {'hybrid' if hybrid else 'dense'}"
                for b in BUDGETS:
                    payloads = [index.expand(h, budget_tokens=b, pack=args.pack, **options) for h in hits]
                    spans = [[Span(p.doc_id, p.start, p.end) for p in pl.passages] for pl in payloads]
                    s = score(queries, spans, measure, coverage=args.coverage)
                    results.setdefault((name, k), {})[b] = summary(s)
                    per_query[(name, k, b)] = s.evidence_recall
                print(f"k={k} " + row(name, results[(name, k)]), flush=True)

    def mean_er(key: tuple[str, int | None]) -> tuple[float, float]:
        by = results[key]
        return (float(np.mean([by[b]["evidence_recall"] for b in BUDGETS])),
                float(np.mean([by[b]["iou"] for b in BUDGETS])))

    payload_keys = [key for key in results if key[1] is not None]
    plain_keys = [key for key in results if key[1] is None]
    best = max(payload_keys, key=mean_er)
    best_plain = max(plain_keys, key=mean_er)
    head = ("| config | " + " | ".join(f"{c} @{b}" for b in BUDGETS for c in
                                        ("ev. recall", "found", "recall", "precision", "IoU", "tokens")) + " |")
    rule = "|---" * (1 + len(COLUMNS) * len(BUDGETS)) + "|"
    lines = [head, rule]
    lines += [row(name, results[(name, None)]) for name, _ in plain_keys]
    for k in args.k:
        lines += [row(f"k={k}: {name}", results[(name, kk)]) for name, kk in payload_keys if kk == k]
    paired = []
    for b in BUDGETS:
        a, c = per_query[(*best, b)], per_query[(*best_plain, b)]
        ok = ~np.isnan(a)
        paired.append(f"at {b} tokens: better on {int((a[ok] > c[ok]).sum())}, worse on "
                      f"{int((a[ok] < c[ok]).sum())}, equal on {int((a[ok] == c[ok]).sum())} questions")
    verdict = (f"Best payload (mean evidence recall over both budgets, then IoU): **k={best[1]}: {best[0]}** "
               f"({mean_er(best)[0]:.3f}); best plain chunks: **{best_plain[0]}** ({mean_er(best_plain)[0]:.3f}). "
               f"Per question, evidence recall of the best payload against the best plain chunks: "
               + "; ".join(paired) + ".")
    elapsed = time.perf_counter() - started
    text = "\n".join([
        "<!-- Written by benches/expansion_eval.py (issue 7). -->",
        "# Does index-small-send-big retrieve better?",
        "",
        (f"Labelled set of `tests/data/eval/` ({len(corpus)} documents, {len(queries)} questions, "
        f"{int((~np.isnan(per_query[(*best, BUDGETS[0])])).sum())} answerable; means over those), metrics of "
        "`chunkforge.eval` in all-MiniLM-L6-v2 tokens, coverage "
        f"{args.coverage}, packing `{args.pack}` on both sides. Payloads: `Index.build(corpus)` with the defaults "
        f"({index!r}, default ONNX encoder), `index.expand(index.search(q, k=K, hybrid=...), budget_tokens=B, ...)`, "
        "scored on the passages' spans. Plain chunks: `chunkforge.eval.evaluate(RecursiveChunker(max_tokens=N), "
        "Encoder.default(), budget=B)` (dense, the chunks in rank order while the budget lasts). `tokens` is the "
        f"mean context handed over. Run on the shared 2-core machine in {elapsed:.0f} s:"),
        "",
        ("    python benches/expansion_eval.py " + " ".join(sys.argv[1:])).rstrip(),
        "",
        *lines,
        "",
        verdict,
        "",
    ])
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
