"""The bulk job (issue 11) against the ways to do it without it, side by side in one run.

Each variant runs in its own process (peak RSS is that process's), on the first
``--limit-mb`` MB of the shipped corpus, all-MiniLM-L6-v2 (fused fp32), RecursiveChunker at
the model's window (254 tokens):

- ``job``: ``chunkforge.pipeline.run`` (what ``chunkforge embed-docs`` runs), ``shard_docs=8``;
- ``cli``: ``chunkforge chunk --out chunks.jsonl`` then ``chunkforge embed chunks.jsonl``;
- ``loop``: a plain sentence-transformers-style loop: chunk every document, then encode the
  chunk texts in length-sorted batches of 32 (as ``SentenceTransformer.encode`` does);
- ``incremental``: the job rerun on a copy of its dataset after 1% of the documents changed;
- ``ray``: the job on a new local Ray cluster (``ray="local"``, startup included), its rows
  compared with the local job's.

    PYTHONPATH=python python3 benches/bulk_bench.py --limit-mb 1 --out benches/results/bulk.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "docs-corpus.jsonl.gz"
VARIANTS = ("job", "cli", "loop", "incremental", "ray")
SHARD_DOCS = 8  # about 11 shards a MB: enough batches to keep two Ray actors busy on a small slice


def corpus_slice(limit_mb: float, path: Path) -> int:
    """Writes the first ``limit_mb`` MB of the corpus (whole records) to ``path``; returns the record count."""
    n = size = 0
    with gzip.open(CORPUS, "rb") as src, open(path, "wb") as dst:
        for line in src:
            if size >= limit_mb * 1e6:
                break
            dst.write(line)
            size += len(line)
            n += 1
    return n


def changed_copy(src: Path, dst: Path, every: int = 100) -> int:
    """``src`` with one document in ``every`` changed (a sentence appended); returns how many changed."""
    lines = src.read_text(encoding="utf-8").splitlines()
    changed = 0
    with open(dst, "w", encoding="utf-8") as out:
        for i, line in enumerate(lines):
            record = json.loads(line)
            if i % every == every // 2:
                record["text"] += "\n\nThis paragraph was added by the incremental benchmark."
                changed += 1
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return changed


def run_variant(variant: str, docs: Path, work: Path) -> dict:
    """Runs one variant in this process; returns its figures."""
    import numpy as np

    from chunkforge import Encoder, RecursiveChunker, pipeline
    from chunkforge.cli import main

    started = time.perf_counter()
    cpu_started = time.process_time()
    result: dict = {"variant": variant}
    if variant in ("job", "ray"):
        summary = pipeline.run([docs], work / variant, ray="local" if variant == "ray" else None, progress=False,
                               shard_docs=SHARD_DOCS)
        result.update(docs=summary.docs, chunks=summary.rows, tokens=summary.tokens)
    elif variant == "incremental":
        changed = changed_copy(docs, work / "changed.jsonl")
        shutil.copytree(work / "job", work / "incremental")  # the job's own dataset stays for the Ray comparison
        started, cpu_started = time.perf_counter(), time.process_time()
        summary = pipeline.run([work / "changed.jsonl"], work / "incremental", progress=False, shard_docs=SHARD_DOCS)
        result.update(docs=summary.docs, chunks=summary.rows, tokens=summary.tokens, changed_docs=changed,
                      embedded=summary.embedded, shards_built=summary.shards_built, shards_kept=summary.shards_kept)
    elif variant == "cli":
        assert main(["chunk", str(docs), "--max-tokens", "254", "--out", str(work / "chunks.jsonl")]) == 0
        assert main(["embed", str(work / "chunks.jsonl"), "--out", str(work / "vectors.parquet")]) == 0
        chunks = [json.loads(line) for line in open(work / "chunks.jsonl", encoding="utf-8")]
        result.update(docs=len({c["doc_id"] for c in chunks}), chunks=len(chunks),
                      tokens=sum(c["token_count"] for c in chunks))
    elif variant == "loop":
        encoder = Encoder.default(max_batch_tokens=32 * 256)  # one run per batch of 32, as in sentence-transformers
        chunker = RecursiveChunker(encoder.tokenizer, max_tokens=254)
        texts = [json.loads(line)["text"] for line in open(docs, encoding="utf-8")]
        chunks = [c for per_doc in chunker.chunk_batch(texts) for c in per_doc]
        order = sorted(range(len(chunks)), key=lambda i: -chunks[i].token_count)
        vectors = np.empty((len(chunks), encoder.dim), np.float32)
        for k in range(0, len(order), 32):
            idx = order[k:k + 32]
            vectors[idx] = encoder.embed([chunks[i].text for i in idx])
        result.update(docs=len(texts), chunks=len(chunks), tokens=sum(c.token_count for c in chunks))
    result["seconds"] = time.perf_counter() - started
    # CPU seconds of this process (all its threads): the basis that a busy machine distorts least;
    # for "ray" the actors' CPU time is in other processes and is not counted
    result["cpu_seconds"] = time.process_time() - cpu_started
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-mb", type=float, default=1.0, help="MB of the corpus (default 1)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, in this order")
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--docs", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:  # a child: one variant
        print(json.dumps(run_variant(args.variant, Path(args.docs), Path(args.work))))
        return
    with tempfile.TemporaryDirectory(prefix="bulk-bench-") as tmp:
        work = Path(tmp)
        docs = work / "docs.jsonl"
        n = corpus_slice(args.limit_mb, docs)
        print(f"{n} documents, {docs.stat().st_size / 1e6:.2f} MB; load {os.getloadavg()[0]:.1f}", flush=True)
        results = {}
        for variant in args.variants.split(","):
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")])}
            proc = subprocess.run([sys.executable, __file__, "--variant", variant, "--docs", str(docs), "--work", str(work)],
                                  env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{variant} failed:\n{proc.stderr[-4000:]}")
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            result["load"] = os.getloadavg()[0]
            results[variant] = result
            print(json.dumps(result), flush=True)
        if "ray" in results and "job" in results:
            sys.path.insert(0, str(ROOT / "python"))
            from chunkforge import pipeline

            results["ray"]["rows_identical"] = pipeline.read_dataset(work / "ray").equals(
                pipeline.read_dataset(work / "job"))
        report(results, n, args)


def report(results: dict, n: int, args: argparse.Namespace) -> None:
    print("\n| variant | seconds | docs/s | tokens/s | CPU s | tokens/CPU-s | peak RSS MB | vs job (wall) | vs job (CPU) |"
          "\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    job = results.get("job", {})
    for name, r in results.items():
        wall = f"{r['seconds'] / job['seconds']:.3f}x" if job else "-"
        cpu = f"{r['cpu_seconds'] / job['cpu_seconds']:.3f}x" if job and name != "ray" else "-"
        print(f"| {name} | {r['seconds']:.1f} | {r['docs'] / r['seconds']:.2f} | {r['tokens'] / r['seconds']:,.0f} | "
              f"{r['cpu_seconds']:.1f} | {r['tokens'] / r['cpu_seconds']:,.0f} | {r['peak_rss_mb']:.0f} | {wall} | {cpu} |")
    if "ray" in results:
        print(f"\nRay rows identical to the local job's: {results['ray'].get('rows_identical')}")
    if args.out:
        Path(args.out).write_text(json.dumps({"limit_mb": args.limit_mb, "docs": n, "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
