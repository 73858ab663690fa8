"""The bulk job's index (``embed-docs --index``, then ``Index.from_dataset`` or the LanceDB
store) against ``Index.build`` of the same documents, on the dev set (``benches/devset``).

- Same answers: evidence-token recall at 500 and 1,000 tokens of ``query`` on each, and the
  share of questions whose payload (passages' spans) is identical to ``Index.build``'s. The
  store as it answers by default, through its side indexes (``store_side``), and through
  LanceDB's own searches (``side=False``) three ways: an exact scan (what it does below
  65,536 leaves), IVF-PQ and IVF-HNSW-SQ (forced at this size, to choose between them).
- Judged by slices: each index's per-question recalls against ``Index.build``'s by the
  defaults rule (``beats`` in ``benches/retrieval_lab.py``) on the test half and on the dev
  half, each with its evidence-length and genre slices; an index that answers as
  ``Index.build`` does is behind outside the paired 95% CI nowhere.
- Costs, side by side in this one process: wall time of ``Index.build`` against the job plus
  ``Index.from_dataset`` or ``write_store``; a rerun of the job over the unchanged corpus; and
  the incremental update: 1% of the documents changed, the job's rerun plus the store's update
  against the full job plus a full store write, and the updated store's answers against a
  clean store written from the same job output.

    python benches/index_from_job.py --out benches/results/index-from-job.md
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from chunkforge import bulk  # noqa: E402
from chunkforge.eval import Span  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from chunkforge.index.store import write_store  # noqa: E402
from retrieval_lab import Lab, Verdict, beats, test_slices  # noqa: E402

BUDGETS = (500, 1000)
CHANGED = 0.01  # the share of documents changed for the incremental update


def payloads(lab: Lab, index: Any, budget: int) -> tuple[list[list[Span]], float]:
    """Each question's payload spans, and the median query time in ms."""
    spans, times = [], []
    for q in lab.queries:
        t = time.perf_counter()
        payload = index.query(q.query, budget_tokens=budget)
        times.append(time.perf_counter() - t)
        spans.append([Span(p.doc_id, p.start, p.end) for p in payload.passages])
    return spans, 1000 * float(np.median(times))


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    """``run()``'s result and its wall time in seconds."""
    start = time.perf_counter()
    return run(), time.perf_counter() - start


def where(verdict: Verdict) -> str:
    """Where a verdict is ahead and behind (an equivalence check: no "does not beat")."""
    return f"ahead: {', '.join(verdict.ahead) or 'nowhere'}; behind: {', '.join(verdict.behind) or 'nowhere'}"


def write(docs: list[dict[str, str]], path: Path) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results (Markdown) here")
    args = parser.parse_args()
    lab = Lab()
    docs = [{"id": d.doc_id, "text": d.text} for d in lab.corpus]
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        path = write(docs, tmp / "docs.jsonl")
        built, t_build = timed(lambda: Index.build(docs, lab.encoder))
        job, t_job = timed(lambda: bulk.run([path], tmp / "vectors", encoder=lab.encoder, units="tree"))
        loaded, t_load = timed(lambda: Index.from_dataset(tmp / "vectors", lab.encoder))
        _, t_rerun = timed(lambda: bulk.run([path], tmp / "vectors", encoder=lab.encoder, units="tree"))
        _, t_store = timed(lambda: write_store(tmp / "vectors", tmp / "exact.lancedb"))
        for kind in ("IVF_PQ", "IVF_HNSW_SQ"):
            write_store(tmp / "vectors", tmp / f"{kind}.lancedb", ann_min_rows=0, ann_index=kind, side=False)
        indexes = {
            "Index.build": built,
            "job + Index.from_dataset": loaded,
            "job + store (side indexes)": Index.open(tmp / "exact.lancedb", lab.encoder),
        }
        for name, store in (("exact scan", "exact"), ("IVF-PQ", "IVF_PQ"), ("IVF-HNSW-SQ", "IVF_HNSW_SQ")):
            indexes[f"job + store, LanceDB {name}"] = Index.open(tmp / f"{store}.lancedb", lab.encoder, side=False)
        answers = {(name, b): payloads(lab, index, b) for name, index in indexes.items() for b in BUDGETS}

        # the incremental update: 1% of the documents changed (a sentence appended)
        rng = np.random.default_rng(7)
        changed = set(rng.choice(len(docs), max(1, round(CHANGED * len(docs))), replace=False).tolist())
        edited = [
            {**d, "text": d["text"] + "\n\nThis page was revised."} if i in changed else d for i, d in enumerate(docs)
        ]
        write(edited, path)
        _, t_inc_job = timed(lambda: bulk.run([path], tmp / "vectors", encoder=lab.encoder, units="tree"))
        _, t_inc_store = timed(lambda: write_store(tmp / "vectors", tmp / "exact.lancedb"))
        write_store(tmp / "vectors", tmp / "clean.lancedb")
        updated, clean = Index.open(tmp / "exact.lancedb", lab.encoder), Index.open(tmp / "clean.lancedb", lab.encoder)
        after = {b: payloads(lab, updated, b)[0] for b in BUDGETS}
        fresh = {b: payloads(lab, clean, b)[0] for b in BUDGETS}
        same_after = np.mean([x == y for x, y in zip(after[1000], fresh[1000])])
    recalls = {name: {b: lab.recall(answers[name, b][0]) for b in BUDGETS} for name in indexes}
    halves = {half: test_slices(lab, half) for half in ("test", "dev")}
    length = {d.doc_id: len(d.text) for d in lab.corpus}  # the revised pages' added sentence is no evidence

    def original(payloads: list[list[Span]]) -> np.ndarray:
        """Recalls of payloads of the revised corpus, each span cut to its document's original text."""
        cut = [[Span(s.doc_id, s.start, min(s.end, length[s.doc_id])) for s in p] for p in payloads]
        return lab.recall([[s for s in p if s.start < s.end] for p in cut])

    updated_verdicts = {
        half: beats({b: original(after[b]) for b in BUDGETS}, {b: original(fresh[b]) for b in BUDGETS}, slices)
        for half, slices in halves.items()
    }
    lines = [
        "# The bulk job's index against Index.build",
        "",
        f"`python benches/index_from_job.py`, {platform.processor() or platform.machine()}, "
        f"{len(lab.corpus)} documents, {built.leaf_count} leaves ({job.rows} rows written by the job), "
        f"{len(lab.queries)} questions.",
        "",
        "| index | recall @500 | recall @1000 | payloads as Index.build's @500 / @1000 | query p50 ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in indexes:
        (a, ms), (b, _) = answers[name, 500], answers[name, 1000]
        same = [np.mean([x == y for x, y in zip(answers[name, n][0], answers["Index.build", n][0])]) for n in BUDGETS]
        lines.append(
            f"| {name} | {100 * np.nanmean(lab.recall(a)):.1f} | {100 * np.nanmean(lab.recall(b)):.1f} "
            f"| {100 * same[0]:.1f}% / {100 * same[1]:.1f}% | {ms:.1f} |"
        )
    lines += [
        "",
        "Each index against `Index.build` by slices (the defaults rule: ahead / behind outside the paired "
        "95% CI on the half or on one of its evidence-length or genre slices, at either budget):",
        "",
        "| index | test half | dev half |",
        "| --- | --- | --- |",
    ]
    for name in list(indexes)[1:]:
        verdicts = [beats(recalls[name], recalls["Index.build"], halves[h]) for h in ("test", "dev")]
        lines.append(f"| {name} | " + " | ".join(where(v) for v in verdicts) + " |")
    lines += [
        "",
        "| step (one process, in turn) | seconds |",
        "| --- | ---: |",
        f"| Index.build (cut, embed, graph) | {t_build:.1f} |",
        f"| embed-docs --index (cut, embed, write) | {t_job:.1f} |",
        f"| Index.from_dataset (read, graph; no embedding) | {t_load:.1f} |",
        f"| embed-docs --index rerun, corpus unchanged | {t_rerun:.1f} |",
        f"| write_store, full | {t_store:.1f} |",
        f"| {len(changed)} documents changed ({100 * CHANGED:.0f}%): job rerun + store update "
        f"| {t_inc_job:.1f} + {t_inc_store:.1f} = {t_inc_job + t_inc_store:.1f} "
        f"({100 * (t_inc_job + t_inc_store) / (t_job + t_store):.1f}% of the full job + write) |",
        "",
        f"After the update, the store's payloads equal those of a clean store written from the same job "
        f"output for {100 * same_after:.1f}% of the questions (1,000 tokens); against the clean store by slices, "
        f"test half: {where(updated_verdicts['test'])}; dev half: {where(updated_verdicts['dev'])}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
