"""How the LanceDB store's costs grow with the corpus: write time, size on disk, a query
process's resident memory, query p50 / p99, at the given leaf counts; and the in-memory
``Index`` (``from_dataset``) of the smallest size beside it.

The documents are the shipped corpus's, repeated under new ids until the leaf count is
reached, cut into the index's trees natively (real trees, real text for BM25). The vectors
come from a cheap deterministic stand-in (unit vectors drawn from a seed of each leaf's
text), so that embedding does not dominate; the questions are embedded by the real model.
Each query process is a fresh interpreter (its RSS is its own peak, ``VmHWM``). It answers
the 6 questions 5 times (warm: their documents and index parts stay cached), then 300
distinct questions of 5 corpus words each (cold: each reads its own documents and IVF
partitions), and reports the p50 / p99, the peak RSS (the pages of the files it maps
included) and the process's own memory (``RssAnon``, at the end) of each phase.

    python benches/store_growth.py --leaves 100000 1000000 --out benches/results/store-growth.md
    python benches/store_growth.py --leaves 10000000 --no-memory --workdir /big/disk

With ``--workdir`` the datasets and stores are kept there, and a size whose store is already
there is measured again without being written (its write time is the one recorded then). The
store's side indexes are built apart from the tables (``side s``), and the store is measured
with them (the default) and, with ``--lancedb``, also without them (LanceDB's searches).
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from chunkforge._io import Doc, file_sha256
from chunkforge.index.trees import TreeSettings, cut, scratch_expander
from chunkforge.tokenizer import Tokenizer

CORPUS = Path(__file__).parents[1] / "tests" / "data" / "docs-corpus.jsonl.gz"
DIM = 384
QUESTIONS = [
    "how do I configure the network bonding driver?",
    "what does the license allow?",
    "how to mount a filesystem read only",
    "error handling in the device driver",
    "which sysfs attributes does the module expose?",
    "how do I enable tracing of function calls?",
]
DISTINCT = 300


def distinct_questions(n: int) -> list[str]:
    """``n`` questions of 5 words each, drawn (seeded) from the words of the corpus."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        words = sorted({w for line in f for w in json.loads(line)["text"].split() if w.isalpha() and len(w) > 4})
    rng = np.random.default_rng(5)
    return [" ".join(rng.choice(words, 5, replace=False)) for _ in range(n)]


def corpus_records() -> list[dict]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def real_vectors(work: Path) -> dict[str, np.ndarray]:
    """``text_hash -> vector`` of every distinct leaf of the corpus, embedded once by the real
    model (``Encoder.default()``) and kept in ``work/leaf-vectors.npz``: a dataset of these has
    the neighbourhoods of real text (each text repeated once a copy of the corpus)."""
    from chunkforge.encoder import Encoder

    path = work / "leaf-vectors.npz"
    if not path.exists():
        expander, settings, token_ids = scratch_expander(Tokenizer.default()), TreeSettings(), {}
        records = corpus_records()
        for at in range(0, len(records), 256):
            docs = [Doc(r["id"], r["text"], len(r["text"])) for r in records[at : at + 256]]
            batch = cut(expander, docs, settings, 2)
            token_ids.update(zip(batch.columns["text_hash"], batch.token_ids))
        hashes = sorted(token_ids)
        print(f"embedding {len(hashes):,} distinct leaves", file=sys.stderr, flush=True)
        vectors = Encoder.default(show_progress=True).embed_token_ids([token_ids[h] for h in hashes])
        np.savez(path, hashes=np.array(hashes), vectors=vectors.astype(np.float32))
    saved = np.load(path)
    return dict(zip(saved["hashes"].tolist(), saved["vectors"]))


def dataset(root: Path, leaves: int, real: dict[str, np.ndarray] | None = None) -> int:
    """Writes a tree dataset of about ``leaves`` leaves (the vectors ``real``'s, or stand-ins);
    returns the exact count."""
    records = corpus_records()
    expander, settings = scratch_expander(Tokenizer.default()), TreeSettings()
    shards, total, copy = [], 0, 0
    (root / "shards").mkdir(parents=True)
    while total < leaves:
        for at in range(0, len(records), 256):
            docs = [Doc(f"{copy}/{r['id']}", r["text"], len(r["text"])) for r in records[at : at + 256]]
            batch = cut(expander, docs, settings, 2)
            n = len(batch.token_ids)
            if real is None:
                seeds = [int(h, 16) for h in batch.columns["text_hash"]]
                vectors = np.stack([np.random.default_rng(s).standard_normal(DIM, np.float32) for s in seeds])
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            else:
                vectors = np.stack([real[h] for h in batch.columns["text_hash"]])
            key = f"{len(shards):032x}"
            table = pa.table(
                {
                    **{k: batch.columns[k] for k in ("doc_id", "chunk_id", "start", "end", "token_count")},
                    "heading_path": batch.columns["heading_path"],
                    "passage": pa.array(batch.columns["passage"], pa.int32()),
                    "text_hash": batch.columns["text_hash"],
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                }
            )
            pq.write_table(table, root / "shards" / f"{key}.parquet")
            pq.write_table(batch.docs, root / "shards" / f"{key}.trees.parquet")
            shards.append(
                {
                    "file": f"shards/{key}.parquet",
                    "file_sha256": file_sha256(root / "shards" / f"{key}.parquet"),
                    "trees": f"shards/{key}.trees.parquet",
                    "trees_sha256": file_sha256(root / "shards" / f"{key}.trees.parquet"),
                    "docs": len(docs),
                    "rows": n,
                    "tokens": 0,
                }
            )
            total += n
            if total >= leaves:
                break
        copy += 1
    manifest = {
        "units": "tree",
        "chunker": {"units": "tree", **settings.as_dict(), "tokenizer": "the model's"},
        "model": {
            "name": "default",
            "variant": "optimized",
            "dim": DIM,
            "fingerprint": "stand-in" if real is None else "real",
        },
        "vector_dtype": "float32",
        "with_text": False,
        "docs": sum(s["docs"] for s in shards),
        "rows": total,
        "tokens": 0,
        "shards": shards,
    }
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return total


QUERY = """
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[4])
from peak_memory import anon_rss_mb, peak_rss_mb
from chunkforge.encoder import Encoder
from chunkforge.index import Index
questions = json.loads(sys.argv[2])
encoder = Encoder.default("optimized")
start = time.perf_counter()
if sys.argv[3] == "memory":
    index = Index.from_dataset(sys.argv[1], encoder)
else:
    index = Index.open(sys.argv[1], encoder, side=sys.argv[3] == "store")
opened = time.perf_counter() - start
def timed(asked):
    times = []
    for q in asked:
        t = time.perf_counter()
        index.query(q)
        times.append(time.perf_counter() - t)
    return float(np.percentile(times, 50)), float(np.percentile(times, 99)), peak_rss_mb(), anon_rss_mb()
timed(questions)  # warm
row = dict(zip(("p50", "p99", "rss_mb", "anon_mb"), timed(5 * questions)), opened=opened)
row.update(zip(("cold_p50", "cold_p99", "cold_rss_mb", "cold_anon_mb"), timed(json.loads(sys.argv[5]))))
print(json.dumps(row))
"""


def measure(path: Path, kind: str) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            QUERY,
            str(path),
            json.dumps(QUESTIONS),
            kind,
            str(Path(__file__).resolve().parent),
            json.dumps(distinct_questions(DISTINCT)),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def dataset_name(leaves: int, real: bool = False) -> str:
    """The dataset's folder in ``--workdir``: ``d<leaves>``, ``-real`` with the real model's vectors."""
    return f"d{leaves}" + ("-real" if real else "")


def store_name(leaves: int, ann_index: str = "IVF_PQ", real: bool = False) -> str:
    """The store's folder in ``--workdir``: ``s<leaves>``, ``-real`` with the real model's vectors,
    then its ANN index when not IVF_PQ."""
    return f"s{leaves}" + ("-real" if real else "") + ("" if ann_index == "IVF_PQ" else f"-{ann_index.lower()}")


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    from chunkforge.index.store import ANN_INDEXES, write_store
    from chunkforge.index.store_side import FORMAT, build_side
    from chunkforge.index.store_tables import _connect, last_commit

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaves", type=int, nargs="+", default=[100_000])
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--no-memory", action="store_true", help="no in-memory index of the first size (10M leaves need ~40 GB)"
    )
    parser.add_argument("--workdir", type=Path, help="keep the datasets and stores here (and reuse them)")
    parser.add_argument(
        "--real-vectors",
        action="store_true",
        help="the real model's vectors of the leaves (embedded once, in --workdir)",
    )
    parser.add_argument("--ann-index", choices=ANN_INDEXES, default="IVF_PQ", help="the leaves' ANN index")
    parser.add_argument(
        "--lancedb", action="store_true", help="also measure each store without its side (LanceDB's searches)"
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        for i, leaves in enumerate(args.leaves):
            root = work / dataset_name(leaves, args.real_vectors)
            store = work / store_name(leaves, args.ann_index, args.real_vectors)
            written_file = store.with_name(store.name + ".json")
            if not written_file.exists() or not store.exists():  # a store removed since: written again
                if not (root / "manifest.json").exists():  # written last: a dataset without one is partial
                    shutil.rmtree(root, ignore_errors=True)
                    dataset(root, leaves, real_vectors(work) if args.real_vectors else None)
                shutil.rmtree(store, ignore_errors=True)
                n = json.loads((root / "manifest.json").read_text())["rows"]
                t = time.perf_counter()
                write_store(root, store, ann_index=args.ann_index, side=False)
                written_file.write_text(json.dumps({"leaves": n, "write_s": time.perf_counter() - t}))
            written = json.loads(written_file.read_text())
            if written.get("side_format") != FORMAT:  # a store written before sides, or this side's layout
                t = time.perf_counter()
                side = build_side(store, last_commit(_connect(str(store))))
                written.update(side_s=time.perf_counter() - t, side_mb=size_mb(side), side_format=FORMAT)
                written_file.write_text(json.dumps(written))
            row = {**written, "disk_mb": size_mb(store) - written["side_mb"], **measure(store, "store")}
            if args.lancedb:
                row["lancedb"] = measure(store, "lancedb")
            if i == 0 and not args.no_memory:
                row["memory"] = measure(root, "memory")
            rows.append(row)
            print(json.dumps(row), flush=True)
            report(rows, args.out, args.real_vectors)  # after each size: a run stopped early keeps what it measured


def report(rows: list[dict], out: Path | None, real: bool = False) -> None:
    """The growth table of the sizes measured so far (printed, and written to ``out``)."""
    lines = [
        "# The LanceDB store as the corpus grows",
        "",
        f"`python benches/store_growth.py`, {platform.machine()}, 2 cores; "
        f"{'the real model' if real else 'stand-in'} vectors (see the docstring); "
        f"{len(QUESTIONS)} questions x 5 (warm), then {DISTINCT} distinct ones (cold), `query()` with the defaults "
        "(k 100, 1,000 tokens), each size in a fresh process.",
        "",
        "| leaves | searches | write_store s | side s | tables / side MB | open s | warm p50 / p99 ms "
        "| warm RSS / anon MB | cold p50 / p99 ms | cold RSS / anon MB |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        for searches, m in (("side", r), ("LanceDB", r.get("lancedb"))):
            if m is None:
                continue
            lines.append(
                f"| {r['leaves']:,} | {searches} | {r['write_s']:.1f} | {r['side_s']:.1f} | "
                f"{r['disk_mb']:.0f} / {r['side_mb']:.0f} | {m['opened']:.2f} | "
                f"{1000 * m['p50']:.1f} / {1000 * m['p99']:.1f} | {m['rss_mb']:.0f} / {m['anon_mb']:.0f} | "
                f"{1000 * m['cold_p50']:.1f} / {1000 * m['cold_p99']:.1f} | "
                f"{m['cold_rss_mb']:.0f} / {m['cold_anon_mb']:.0f} |"
            )
    if "memory" in rows[0]:
        m = rows[0]["memory"]
        lines += [
            "",
            f"In-memory `Index.from_dataset` of the {rows[0]['leaves']:,}-leaf dataset: open {m['opened']:.1f} s, "
            f"warm p50 {1000 * m['p50']:.1f} / p99 {1000 * m['p99']:.1f} ms, RSS {m['rss_mb']:.0f} MB; "
            f"cold p50 {1000 * m['cold_p50']:.1f} / p99 {1000 * m['cold_p99']:.1f} ms, RSS {m['cold_rss_mb']:.0f} MB.",
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
