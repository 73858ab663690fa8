"""Builds the retrieval dev set: ``corpus.jsonl`` and ``queries.jsonl`` beside this file.

Sources, one folder per genre under ``src/``:

- ``src/GENRE/docs/NAME.txt``: a document written for this set, or a real one whose
  licence lies beside it (its ``doc_id`` is ``GENRE/NAME``), or ``src/GENRE/docs.txt``: one id of the shipped documentation
  corpus (``tests/data/docs-corpus.jsonl.gz``) a line, used as they are;
- ``src/GENRE/queries.jsonl``, then ``src/GENRE/queries-*.jsonl`` in name order:
  ``{"query", "type", "evidence": [{"doc", "quote"}]}``, ``type`` one of keyword,
  paraphrase, multi, unanswerable; ``doc`` is ``NAME`` (or a corpus id); each quote must
  occur exactly once in its document (runs of whitespace match any whitespace).

Every query gets a stable id (``GENRE-NNN``, numbered across the genre's files) and a
split: within each file, queries are ordered by a hash of their text and alternate
between ``dev`` and ``test``. New queries for a genre go in a new file, so adding them
never moves another query to the other split. Unlabelled documents of the shipped
corpus (``DISTRACTORS``, a fixed seeded sample) join the corpus as distractors.

Every comparison is also reported per evidence-length bucket (``BUCKETS``: a
question's evidence tokens under the default model's tokenizer, all its spans
together); ``--check`` prints how many answerable questions fall in each.

Run from the repository root: ``python benches/devset/build.py`` (``--check`` only
validates and prints counts).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CORPUS = ROOT / "tests" / "data" / "docs-corpus.jsonl.gz"
TYPES = {"keyword", "paraphrase", "multi", "unanswerable"}
DISTRACTORS = 60
BUCKETS = ((0, "<30"), (30, "30-60"), (60, "60-120"), (120, ">120"))


def bucket_of(tokens: int) -> str:
    """The evidence-length bucket of a question with ``tokens`` evidence tokens: ``bucket_of(75) == "60-120"``."""
    return [name for low, name in BUCKETS if tokens >= low][-1]


def evidence_tokens(texts: list[str]) -> int:
    """Evidence tokens of one question's spans under the default model's tokenizer."""
    from chunkforge import Tokenizer

    return sum(map(Tokenizer.default().count, texts))


def locate(text: str, quote: str, where: str) -> tuple[int, int]:
    """The one place ``quote`` occurs in ``text``, runs of whitespace matching any whitespace."""
    pattern = r"\s+".join(map(re.escape, quote.split()))
    found = [m.span() for m in re.finditer(pattern, text)]
    if len(found) != 1:
        raise SystemExit(f"{where}: quote found {len(found)} times, expected once: {quote!r}")
    return found[0]


def title_of(text: str) -> str:
    """A written document's title: its first line (each one opens with its title)."""
    return text.strip().split("\n", 1)[0].strip()


def split_of(genre: str, queries: list[dict]) -> list[str]:
    order = sorted(range(len(queries)), key=lambda i: hashlib.sha256(queries[i]["query"].encode()).hexdigest())
    split = [""] * len(queries)
    for rank, i in enumerate(order):
        split[i] = "dev" if rank % 2 == 0 else "test"
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="validate and print counts, write nothing")
    parser.add_argument("--genre", action="append", help="only this genre (with --check); repeatable")
    args = parser.parse_args()
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        shipped = {d["id"]: d for d in map(json.loads, f)}
    docs: dict[str, dict] = {}
    queries: list[dict] = []
    counts: Counter = Counter()
    lengths: Counter = Counter()
    for folder in sorted(
        p for p in (HERE / "src").iterdir() if p.is_dir() and (not args.genre or p.name in args.genre)
    ):
        genre = folder.name
        if not (folder / "queries.jsonl").exists():
            print(f"{genre}: no queries.jsonl yet, left out", file=sys.stderr)
            continue
        names: dict[str, str] = {}
        for path in sorted((folder / "docs").glob("*.txt")) if (folder / "docs").is_dir() else []:
            doc_id = f"{genre}/{path.stem}"
            names[path.stem] = doc_id
            text = path.read_text(encoding="utf-8")
            docs[doc_id] = {"doc_id": doc_id, "genre": genre, "title": title_of(text), "text": text}
        if (folder / "docs.txt").exists():
            for line in (folder / "docs.txt").read_text(encoding="utf-8").split("\n"):
                if line.strip():
                    d = shipped[line.strip()]
                    names[d["id"]] = d["id"]
                    docs[d["id"]] = {"doc_id": d["id"], "genre": genre, "text": d["text"]}
        numbered = []
        for path in [folder / "queries.jsonl", *sorted(folder.glob("queries-*.jsonl"))]:
            raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            numbered += [(path, line, q, split) for line, (q, split) in enumerate(zip(raw, split_of(genre, raw)), 1)]
        for n, (path, line, q, split) in enumerate(numbered, 1):
            where = f"{path}:{line}"
            if q.get("type") not in TYPES:
                raise SystemExit(f"{where}: type must be one of {sorted(TYPES)}, got {q.get('type')!r}")
            if (q["type"] == "unanswerable") != (not q.get("evidence")):
                raise SystemExit(f"{where}: an unanswerable query has no evidence, every other one has some")
            refs = []
            for ev in q.get("evidence", []):
                if ev["doc"] not in names:
                    raise SystemExit(f"{where}: unknown doc {ev['doc']!r}")
                doc_id = names[ev["doc"]]
                start, end = locate(docs[doc_id]["text"], ev["quote"], where)
                refs.append({"doc_id": doc_id, "start": start, "end": end, "text": docs[doc_id]["text"][start:end]})
            queries.append(
                {
                    "id": f"{genre}-{n:03d}",
                    "query": q["query"],
                    "type": q["type"],
                    "genre": genre,
                    "split": split,
                    "references": refs,
                }
            )
            counts[genre, q["type"]] += 1
            if refs:
                lengths[genre, bucket_of(evidence_tokens([r["text"] for r in refs]))] += 1
    labelled = len(docs)
    pool = sorted(i for i in shipped if i not in docs)
    for doc_id in random.Random(14).sample(pool, DISTRACTORS):
        docs[doc_id] = {"doc_id": doc_id, "genre": "distractor", "text": shipped[doc_id]["text"]}
    for genre in sorted({g for g, _ in counts}):
        row = {t: counts[genre, t] for t in sorted(TYPES)}
        by_length = {name: lengths[genre, name] for _, name in BUCKETS}
        print(f"{genre:14s} {sum(row.values()):4d} queries  {row}  evidence tokens {by_length}")
    answerable = sum(lengths.values())
    long = sum(n for (_, name), n in lengths.items() if name in ("60-120", ">120"))
    print(f"{answerable} answerable, {long} ({100 * long / max(answerable, 1):.0f}%) with 60 or more evidence tokens")
    print(f"{len(queries)} queries, {labelled} written/labelled-genre documents, {len(docs)} documents in all")
    if args.check:
        return
    with open(HERE / "corpus.jsonl", "w", encoding="utf-8", newline="\n") as out:
        for d in docs.values():
            out.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(HERE / "queries.jsonl", "w", encoding="utf-8", newline="\n") as out:
        for q in queries:
            out.write(json.dumps(q, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
