"""Which retrieval policy should ``Index.query`` recommend? (issue 14)

Every pipeline answers the dev set's questions (``benches/devset``: 355 questions,
five genres, 167 documents in one index) with a payload of at most ``B`` tokens,
``B`` = 500 and 1,000, scored by evidence-token recall (``chunkforge.eval``: the
share of the evidence's tokens inside the payload; all-MiniLM-L6-v2 tokens of each
document tokenized once; means over the answerable questions).

- Baselines: plain ``RecursiveChunker`` 128/200/256 chunks of each whole document,
  ranked dense (cosine, the default encoder), BM25 (bm25s) or hybrid (equal-weight
  reciprocal rank fusion of the two, k=60); chunks in rank order while the budget lasts.
- ``Index`` policies: ``Index.build(corpus)`` with the defaults, ``index.query(q,
  budget_tokens=B, ...)`` (and variants), scored on the passages' spans.
- ``--before FILE``: the per-question recalls of ``Index.query`` at the previous
  release, written by this script run against that build with ``--save-query FILE``.

Packing is the same for all: in rank order, a span adds the tokens it does not share
with spans already taken; one that does not fit is skipped.

Policies were tuned on the ``dev`` half only; the ``test`` half decides: for each
policy against each baseline, the mean paired difference and its 95% bootstrap CI
(4,000 resamples of the test questions). A difference whose CI holds 0 is a tie.

    python benches/retrieval_eval.py --before before.npz --out benches/results/retrieval-eval.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from chunkforge.eval import Span  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from retrieval_lab import Lab, bootstrap, rrf  # noqa: E402

BUDGETS = (500, 1000)
POLICIES = {
    "Index.query (recommended)": {},
    "hits + window_tokens=64": {"window_tokens": 64},
    "hits + window_tokens=128": {"window_tokens": 128},
    "hits + window=1 sentence": {"window": 1},
    "hits + parent": {"parent": True},
    "dense only": {"hybrid": False},
}


def query_recalls(lab: Lab, index: Index, budget: int, hybrid: bool = True, **options: object) -> np.ndarray:
    payloads = []
    for q in lab.queries:
        hits = index.search(q.query, k=100, hybrid=hybrid)
        p = index.expand(hits, budget_tokens=budget, **options)  # type: ignore[arg-type]
        payloads.append([Span(x.doc_id, x.start, x.end) for x in p.passages])
    return lab.recall(payloads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="per-question recalls of the previous Index.query (npz)")
    parser.add_argument("--save-query", help="only score Index.query with this build's defaults; write npz here")
    parser.add_argument("--out", help="write the Markdown report here")
    args = parser.parse_args()
    started = time.perf_counter()
    lab = Lab()
    print(f"{len(lab.corpus)} documents, {len(lab.queries)} questions", flush=True)
    t0 = time.perf_counter()
    index = Index.build([{"id": d.doc_id, "text": d.text} for d in lab.corpus], lab.encoder)
    build_s = time.perf_counter() - t0
    print(f"{index!r} in {build_s:.0f} s", flush=True)
    if args.save_query:
        out = {}
        for b in BUDGETS:
            payloads = [
                [Span(x.doc_id, x.start, x.end) for x in index.query(q.query, budget_tokens=b).passages]
                for q in lab.queries
            ]
            out[str(b)] = lab.recall(payloads)
        np.savez(args.save_query, **out)
        print({b: round(float(np.nanmean(v)) * 100, 1) for b, v in out.items()})
        return

    rows: dict[str, dict[int, np.ndarray]] = {}
    for n in (128, 200, 256):
        u = lab.chunks(n)
        dense, bm25 = lab.dense(u), lab.bm25(u)
        for name, scores in (("dense", dense), ("BM25", bm25), ("hybrid RRF", rrf((1, dense), (1, bm25)))):
            ranked = lab.ranked_units(u, scores)
            rows[f"recursive-{n}, {name}"] = {b: lab.recall([lab.pack(r, b) for r in ranked]) for b in BUDGETS}
        print(f"baselines at {n} tokens done", flush=True)
    baselines = list(rows)
    if args.before:
        saved = np.load(args.before)
        rows["Index.query before (hybrid RRF, k=24, window=2)"] = {b: saved[str(b)] for b in BUDGETS}
    for name, options in POLICIES.items():
        hybrid = bool(options.pop("hybrid", True))
        rows[name] = {b: query_recalls(lab, index, b, hybrid, **options) for b in BUDGETS}
        print(f"{name} done", flush=True)

    genres = sorted(set(lab.genre.tolist()))
    halves = {"dev": lab.split == "dev", "test": lab.split == "test"}

    def mean(r: np.ndarray, mask: np.ndarray) -> float:
        return float(np.nanmean(r[mask])) * 100

    lines = [
        "| pipeline | "
        + " | ".join(f"{h} @{b}" for b in BUDGETS for h in halves)
        + " | "
        + " | ".join(f"{g} @1000 (test)" for g in genres)
        + " |",
        "|---" * (1 + 2 * len(BUDGETS) + len(genres)) + "|",
    ]
    for name, by in rows.items():
        cells = [f"{mean(by[b], m):.1f}" for b in BUDGETS for m in halves.values()]
        cells += [f"{mean(by[1000], halves['test'] & (lab.genre == g)):.1f}" for g in genres]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    rec = rows["Index.query (recommended)"]
    test = halves["test"]
    ci_lines = [
        "| recommended minus | " + " | ".join(f"@{b}: mean [95% CI]" for b in BUDGETS) + " |",
        "|---" * (1 + len(BUDGETS)) + "|",
    ]
    verdicts = []
    for name in [*baselines, *[n for n in rows if n not in baselines and n != "Index.query (recommended)"]]:
        cells = []
        for b in BUDGETS:
            d, lo, hi = bootstrap(rec[b][test], rows[name][b][test])
            cells.append(f"{d * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}]")
            if name in baselines:
                verdicts.append(lo > 0)
        ci_lines.append(f"| {name} | " + " | ".join(cells) + " |")
    best = {b: max(baselines, key=lambda n: mean(rows[n][b], test)) for b in BUDGETS}
    genre_lines = [
        "| genre | n (test) | "
        + " | ".join(f"recommended @{b} | best baseline @{b} | diff [95% CI]" for b in BUDGETS)
        + " |",
        "|---" * (2 + 3 * len(BUDGETS)) + "|",
    ]
    for g in genres:
        m = test & (lab.genre == g)
        cells = []
        for b in BUDGETS:
            top = max(baselines, key=lambda n: mean(rows[n][b], m))
            d, lo, hi = bootstrap(rec[b][m], rows[top][b][m])
            cells += [
                f"{mean(rec[b], m):.1f}",
                f"{mean(rows[top][b], m):.1f} ({top})",
                f"{d * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}]",
            ]
        n = int((m & ~np.isnan(rec[1000])).sum())
        genre_lines.append(f"| {g} | {n} | " + " | ".join(cells) + " |")
    answerable = int((test & ~np.isnan(rec[1000])).sum())
    verdict = (
        f"On the test half ({answerable} answerable questions) the recommended policy is ahead of "
        f"{sum(verdicts)} of {len(verdicts)} baseline/budget pairs outside the paired 95% CI; the best "
        f"baselines are {best[500]} at 500 tokens and {best[1000]} at 1,000."
    )
    text = "\n".join(
        [
            "<!-- Written by benches/retrieval_eval.py (issue 14). -->",
            "# Retrieval policies on the dev set",
            "",
            (
                f"`benches/devset`: {len(lab.corpus)} documents, {len(lab.queries)} questions "
                f"({int((~np.isnan(rec[1000])).sum())} answerable), five genres. Evidence-token recall (%) of payloads "
                f"of at most 500 and 1,000 tokens, means over answerable questions. `Index.build` with the defaults: "
                f"{index!r}, built in {build_s:.0f} s. Run in {time.perf_counter() - started:.0f} s on the shared "
                "2-core machine:"
            ),
            "",
            ("    python benches/retrieval_eval.py " + " ".join(sys.argv[1:])).rstrip(),
            "",
            *lines,
            "",
            "## Test half: recommended policy against each pipeline (paired bootstrap)",
            "",
            *ci_lines,
            "",
            "## Test half, per genre: recommended against that genre's best baseline",
            "",
            *genre_lines,
            "",
            verdict,
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
