"""Does ``spread`` (issue 25) send the evidence where it is long, without losing it where
it is short? The dev set (``benches/devset``, nine genres, 38% of the answerable questions
with 60+ evidence tokens) answered by ``Index.query`` with the bare hits (the policy before
issue 25, ``spread=None``) and with ``spread`` decays, against plain ``RecursiveChunker``
128/200/256 chunks ranked dense, BM25 or hybrid RRF (as in ``benches/retrieval_eval.py``).

Evidence-token recall at 500 and 1,000 tokens on the ``test`` half (the decay was tuned on
``dev``), overall, per evidence-length bucket and per genre, each against the best baseline
of that slice and against the bare hits: mean paired difference and its 95% bootstrap CI.
The query cost of both policies is timed in the same run, interleaved question by question.

    python benches/retrieval_buckets.py --out benches/results/retrieval-buckets.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "devset"))
from build import BUCKETS, bucket_of, evidence_tokens  # noqa: E402

from chunkforge.eval import Span  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from retrieval_lab import Lab, bootstrap, rrf  # noqa: E402

BUDGETS = (500, 1000)
POLICIES = {"bare hits (before)": None, "spread=0.3": 0.3, "spread=0.5 (recommended)": 0.5, "spread=0.7": 0.7}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the Markdown report here")
    args = parser.parse_args()
    lab = Lab()
    index = Index.build([{"id": d.doc_id, "text": d.text, **d.metadata} for d in lab.corpus], lab.encoder)
    print(index, flush=True)
    rows: dict[str, dict[int, np.ndarray]] = {}
    for n in (128, 200, 256):
        u = lab.chunks(n)
        dense, bm25 = lab.dense(u), lab.bm25(u)
        for name, scores in (("dense", dense), ("BM25", bm25), ("RRF", rrf((1, dense), (1, bm25)))):
            ranked = lab.ranked_units(u, scores)
            rows[f"recursive-{n} {name}"] = {b: lab.recall([lab.pack(r, b) for r in ranked]) for b in BUDGETS}
    baselines = list(rows)
    seconds = {name: 0.0 for name in POLICIES}
    for b in BUDGETS:
        payloads: dict[str, list[list[Span]]] = {name: [] for name in POLICIES}
        for q in lab.queries:
            hits = index.search(q.query, k=100)
            for name, decay in POLICIES.items():
                t0 = time.perf_counter()
                p = index.expand(hits, budget_tokens=b, spread=decay)
                seconds[name] += time.perf_counter() - t0
                payloads[name].append([Span(x.doc_id, x.start, x.end) for x in p.passages])
        for name in POLICIES:
            rows.setdefault(name, {})[b] = lab.recall(payloads[name])
    t0 = time.perf_counter()
    for q in lab.queries[:200]:
        index.search(q.query, k=100)
    search_ms = (time.perf_counter() - t0) / 200 * 1000

    texts = {d.doc_id: d.text for d in lab.corpus}  # buckets as the dev set's build counts them
    bucket = np.array(
        [bucket_of(evidence_tokens([texts[r.doc_id][r.start : r.end] for r in q.references])) for q in lab.queries]
    )
    test = lab.split == "test"
    slices = [("all", test)] + [(f"{name} tokens", test & (bucket == name)) for _, name in BUCKETS]
    slices += [(g, test & (lab.genre == g)) for g in sorted(set(lab.genre.tolist()))]

    def mean(r: np.ndarray, m: np.ndarray) -> float:
        return float(np.nanmean(r[m])) * 100

    def ci(a: np.ndarray, c: np.ndarray, m: np.ndarray) -> str:
        d, lo, hi = bootstrap(a[m], c[m])
        return f"{d * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}]"

    rec = "spread=0.5 (recommended)"
    lines = [
        "| pipeline | " + " | ".join(f"{s} @{b}" for b in BUDGETS for s in ("dev", "test")) + " |",
        "|---" * 5 + "|",
    ]
    for name, by in rows.items():
        cells = [f"{mean(by[b], lab.split == s):.1f}" for b in BUDGETS for s in ("dev", "test")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    table = [
        "| test slice | n | "
        + " | ".join(
            f"recommended @{b} | best baseline @{b} | minus best [95% CI] | minus bare hits [95% CI]" for b in BUDGETS
        )
        + " |",
        "|---" * (2 + 4 * len(BUDGETS)) + "|",
    ]
    for label, m in slices:
        m = m & ~np.isnan(rows[rec][1000])
        cells = []
        for b in BUDGETS:
            top = max(baselines, key=lambda n: mean(rows[n][b], m))
            cells += [
                f"{mean(rows[rec][b], m):.1f}",
                f"{mean(rows[top][b], m):.1f} ({top})",
                ci(rows[rec][b], rows[top][b], m),
                ci(rows[rec][b], rows["bare hits (before)"][b], m),
            ]
        table.append(f"| {label} | {int(m.sum())} | " + " | ".join(cells) + " |")
    per_query = len(lab.queries) * len(BUDGETS)
    cost = ", ".join(f"{name} {seconds[name] / per_query * 1000:.2f} ms" for name in POLICIES)
    text = "\n".join(
        [
            "<!-- Written by benches/retrieval_buckets.py (issue 25). -->",
            "# Spread on evidence of every length",
            "",
            f"`benches/devset`: {len(lab.corpus)} documents, {len(lab.queries)} questions, `{index!r}` "
            "(titles in the documents' metadata). Evidence-token recall (%), means over answerable questions.",
            "",
            "    " + ("python benches/retrieval_buckets.py " + " ".join(sys.argv[1:])).rstrip(),
            "",
            *lines,
            "",
            "## Test half: the recommended policy per slice",
            "",
            *table,
            "",
            f"Query cost, the same hits expanded by each policy in turn (per question, mean of both budgets): {cost}; "
            f"the search itself (embedding the question, ANN, BM25, fusion) {search_ms:.1f} ms.",
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
