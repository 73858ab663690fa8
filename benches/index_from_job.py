"""The bulk job's index (``embed-docs --index``, ``Index.from_dataset``) against ``Index.build``
of the same documents, on the dev set (``benches/devset``: 355 questions, 167 documents).

- Same answers: evidence-token recall at 500 and 1,000 tokens of ``Index.query`` on both, and
  the share of questions whose payload (passages' spans) is identical.
- Costs, side by side in this one process: wall time of ``Index.build`` against the job plus
  ``Index.from_dataset``; the time ``from_dataset`` takes alone (no embedding); a rerun of the
  job over the unchanged corpus.

    python benches/index_from_job.py --out benches/results/index-from-job.md
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from chunkforge import pipeline  # noqa: E402
from chunkforge.eval import Span  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from retrieval_lab import Lab  # noqa: E402

BUDGETS = (500, 1000)


def payloads(lab: Lab, index: Index, budget: int) -> list[list[Span]]:
    return [
        [Span(p.doc_id, p.start, p.end) for p in index.query(q.query, budget_tokens=budget).passages]
        for q in lab.queries
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results (Markdown) here")
    args = parser.parse_args()
    lab = Lab()
    docs = [{"id": d.doc_id, "text": d.text} for d in lab.corpus]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "docs.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
        t = time.perf_counter()
        built = Index.build(docs, lab.encoder)
        t_build = time.perf_counter() - t
        t = time.perf_counter()
        job = pipeline.run([path], Path(tmp) / "vectors", encoder=lab.encoder, units="tree")
        t_job = time.perf_counter() - t
        t = time.perf_counter()
        loaded = Index.from_dataset(Path(tmp) / "vectors", lab.encoder)
        t_load = time.perf_counter() - t
        t = time.perf_counter()
        pipeline.run([path], Path(tmp) / "vectors", encoder=lab.encoder, units="tree")
        t_rerun = time.perf_counter() - t
    lines = [
        "# The bulk job's index against Index.build",
        "",
        f"`python benches/index_from_job.py`, {platform.processor() or platform.machine()}, "
        f"{len(lab.corpus)} documents, {built.leaf_count} leaves ({job.rows} rows written by the job), "
        f"{len(lab.queries)} questions.",
        "",
        "| budget | recall, Index.build | recall, job + from_dataset | identical payloads |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for budget in BUDGETS:
        a, b = payloads(lab, built, budget), payloads(lab, loaded, budget)
        ra, rb = lab.recall(a), lab.recall(b)
        same = np.mean([x == y for x, y in zip(a, b)])
        lines.append(f"| {budget} | {100 * np.nanmean(ra):.1f} | {100 * np.nanmean(rb):.1f} | {100 * same:.1f}% |")
    lines += [
        "",
        "| step (one process, in turn) | seconds |",
        "| --- | ---: |",
        f"| Index.build (cut, embed, graph) | {t_build:.1f} |",
        f"| embed-docs --index (cut, embed, write) | {t_job:.1f} |",
        f"| Index.from_dataset (read, graph; no embedding) | {t_load:.1f} |",
        f"| embed-docs --index rerun, corpus unchanged | {t_rerun:.1f} |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
