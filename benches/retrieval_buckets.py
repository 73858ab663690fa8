"""Issue 25 on evidence of every length: the search prefix (each document's title and each
leaf's heading path before what search sees; ``Index(search_prefix=...)``) and ``spread``
(relevance spread to neighbours; ``Index.expand(spread=...)``), each measured. The dev set
(``benches/devset``, nine genres, 38% of the answerable questions with 60+ evidence tokens)
answered by ``Index.query`` on an index without and with the prefix, each with the bare hits
and with ``spread`` decays, against plain ``RecursiveChunker`` 128/200/256 chunks ranked dense,
BM25 or hybrid RRF (as in ``benches/retrieval_eval.py``).

Evidence-token recall at 500 and 1,000 tokens on the ``test`` half (the decay was tuned on
``dev``), overall, per evidence-length bucket and per genre: the recommended policy (the
library's defaults) against the best baseline of that slice, against round 2's policy (no
prefix, bare hits), and ``spread=0.5`` against the bare hits on the same index: mean paired
difference and its 95% bootstrap CI. The query cost of round 2's policy and of the recommended one is timed in
the same run, interleaved question by question.

    python benches/retrieval_buckets.py --out benches/results/retrieval-buckets.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from chunkforge._recommended import RECOMMENDED  # noqa: E402
from chunkforge.eval import Span  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from retrieval_lab import Lab, beats, paired_ci, percent, rrf, test_slices  # noqa: E402

BUDGETS = (500, 1000)
INDEXES = {"no prefix": False, "prefix": True}
SPREADS = {"bare hits": None, "spread=0.3": 0.3, "spread=0.5": 0.5, "spread=0.7": 0.7}


def spread_name(decay: float | None) -> str:
    return next(name for name, d in SPREADS.items() if d == decay)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the Markdown report here")
    parser.add_argument("--save-index", help="save the index with the default search prefix here")
    parser.add_argument("--save-recalls", help="save every pipeline's per-question recalls here (npz)")
    args = parser.parse_args()
    lab = Lab()
    docs = [{"id": d.doc_id, "text": d.text, **d.metadata} for d in lab.corpus]
    indexes = {name: Index.build(docs, lab.encoder, search_prefix=on) for name, on in INDEXES.items()}
    default = "prefix" if Index(lab.encoder).search_prefix else "no prefix"
    if args.save_index:
        indexes[default].save(args.save_index)
    rec = f"{default}, {spread_name(RECOMMENDED['spread'])}"
    before = "no prefix, bare hits"
    bare, spread = f"{default}, bare hits", f"{default}, spread=0.5"  # the payload decision, on one index
    rows: dict[str, dict[int, np.ndarray]] = {}
    for n in (128, 200, 256):
        u = lab.chunks(n)
        dense, bm25 = lab.dense(u), lab.bm25(u)
        for name, scores in (("dense", dense), ("BM25", bm25), ("RRF", rrf((1, dense), (1, bm25)))):
            ranked = lab.ranked_units(u, scores)
            rows[f"recursive-{n} {name}"] = {b: lab.recall([lab.pack(r, b) for r in ranked]) for b in BUDGETS}
    baselines = list(rows)
    for index_name, index in indexes.items():
        hits = [index.search(q.query, k=RECOMMENDED["k"]) for q in lab.queries]
        for b in BUDGETS:
            for name, decay in SPREADS.items():
                payloads = [index.expand(h, budget_tokens=b, spread=decay) for h in hits]
                spans = [[Span(x.doc_id, x.start, x.end) for x in p.passages] for p in payloads]
                rows.setdefault(f"{index_name}, {name}", {})[b] = lab.recall(spans)
    # the query cost, round 2's policy and the recommended one interleaved question by question
    seconds: dict[str, list[float]] = {before: [], bare: [], rec: []}
    old, new = indexes["no prefix"], indexes[default]
    for q in lab.queries[:300]:
        for name, index, decay in ((before, old, None), (bare, new, None), (rec, new, RECOMMENDED["spread"])):
            t0 = time.perf_counter()
            index.query(q.query, spread=decay)
            seconds[name].append(time.perf_counter() - t0)

    if args.save_recalls:
        np.savez(args.save_recalls, **{f"{name} @{b}": r for name, by in rows.items() for b, r in by.items()})
    slices = test_slices(lab)
    verdicts = [
        f"- {name} against bare hits ({default}): {beats(rows[f'{default}, {name}'], rows[bare], slices)}."
        for name, decay in SPREADS.items()
        if decay is not None
    ]

    lines = [
        "| pipeline | " + " | ".join(f"{s} @{b}" for b in BUDGETS for s in ("dev", "test")) + " |",
        "|---" * 5 + "|",
    ]
    for name, by in rows.items():
        cells = [f"{percent(by[b], lab.split == s):.1f}" for b in BUDGETS for s in ("dev", "test")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    table = [
        "| test slice | n | "
        + " | ".join(
            f"recommended @{b} | best baseline @{b} | minus best [95% CI] | minus round 2 [95% CI] "
            f"| spread=0.5 minus bare hits [95% CI]"
            for b in BUDGETS
        )
        + " |",
        "|---" * (2 + 5 * len(BUDGETS)) + "|",
    ]
    for label, m in slices:
        m = m & ~np.isnan(rows[rec][1000])
        cells = []
        for b in BUDGETS:
            top = max(baselines, key=lambda n: percent(rows[n][b], m))
            cells += [
                f"{percent(rows[rec][b], m):.1f}",
                f"{percent(rows[top][b], m):.1f} ({top})",
                paired_ci(rows[rec][b], rows[top][b], m),
                paired_ci(rows[rec][b], rows[before][b], m),
                paired_ci(rows[spread][b], rows[bare][b], m),
            ]
        table.append(f"| {label} | {int(m.sum())} | " + " | ".join(cells) + " |")
    p50 = {name: float(np.median(t)) * 1000 for name, t in seconds.items()}
    cost = (
        f"`Index.query` p50 over {len(seconds[rec])} questions, interleaved: round 2's policy ({before}) "
        f"{p50[before]:.2f} ms, the bare hits ({bare}) {p50[bare]:.2f} ms, the recommended one ({rec}) "
        f"{p50[rec]:.2f} ms: {p50[rec] / p50[before]:.2f}x round 2's, {p50[rec] / p50[bare]:.2f}x the bare hits'."
    )
    text = "\n".join(
        [
            "<!-- Written by benches/retrieval_buckets.py (issues 25, 41). -->",
            "# The search prefix and spread on evidence of every length",
            "",
            f"`benches/devset`: {len(lab.corpus)} documents, {len(lab.queries)} questions, `{new!r}` "
            f"(titles in the documents' metadata). Recommended: {rec}. Evidence-token recall (%), "
            "means over answerable questions.",
            "",
            "    " + ("python benches/retrieval_buckets.py " + " ".join(sys.argv[1:])).rstrip(),
            "",
            *lines,
            "",
            "## The payload decision by the defaults rule",
            "",
            "A candidate beats the incumbent when it is ahead outside the paired 95% CI on the whole "
            "test half or on at least one evidence-length or genre slice, at 500 or 1,000 tokens, and "
            "behind outside the CI on none (`beats` in `benches/retrieval_lab.py`):",
            "",
            *verdicts,
            "",
            "## Test half: the recommended policy per slice",
            "",
            *table,
            "",
            cost,
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
