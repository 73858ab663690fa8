"""GPU check of the bulk job (issue 11): real tokens/s of the whole job (read, chunk, tokenize,
embed, write shards) against ``Encoder.embed`` alone on the same chunks, chunked beforehand.
Target: >= 0.9 (chunking and I/O hidden behind the GPU). Needs onnxruntime-gpu and a CUDA device.
On the CPU (``--variant auto``: what ``Encoder.default()`` picks) the same comparison gives the
job's share of the encoder's speed there (target: within 5%).

    PYTHONPATH=python python3 benches/gpu_pipeline.py --limit-mb 35 --variant fp16 --out benches/results/gpu-pipeline.json

Both runs share one encoder (one session, warmed up first); the job starts from an empty
dataset folder. Tokens are the chunks' real tokens (no padding, no special tokens).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))

from bulk_bench import corpus_slice  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-mb", type=float, default=35.0, help="MB of the corpus (default: all of it)")
    parser.add_argument("--variant", default="fp16", choices=("auto", "optimized", "fp32", "fp16", "bf16", "int8"))
    parser.add_argument("--max-batch-tokens", type=int, default=None, help="default: the encoder's GPU default")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds; the best of each is kept")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()

    from chunkforge import Encoder, RecursiveChunker, bulk

    encoder = Encoder.default(args.variant, max_batch_tokens=args.max_batch_tokens)
    providers = encoder.active_providers
    print(f"providers: {providers}, max_batch_tokens {encoder.max_batch_tokens}", flush=True)
    with tempfile.TemporaryDirectory(prefix="gpu-pipeline-") as tmp:
        docs = Path(tmp) / "docs.jsonl"
        n = corpus_slice(args.limit_mb, docs)
        texts = [json.loads(line)["text"] for line in open(docs, encoding="utf-8")]
        chunker = RecursiveChunker(encoder.tokenizer, max_tokens=encoder.max_length - sum(encoder.special_token_counts))
        chunks = [c.text for per_doc in chunker.chunk_batch(texts) for c in per_doc]
        tokens = int(encoder.tokenizer.count_batch(chunks).sum())
        print(f"{n} documents, {len(chunks)} chunks, {tokens:,} tokens", flush=True)
        encoder.embed(chunks[:2000])  # warm-up: CUDA kernels, memory arena
        embed_s, job_s = [], []
        for r in range(args.rounds):
            started = time.perf_counter()
            encoder.embed(chunks)
            embed_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            summary = bulk.run([docs], Path(tmp) / f"job-{r}", encoder=encoder, progress=False)
            job_s.append(time.perf_counter() - started)
            assert summary.tokens == tokens and summary.embedded == len(chunks)
            print(
                f"round {r}: embed alone {tokens / embed_s[-1]:,.0f} tok/s, whole job {tokens / job_s[-1]:,.0f} tok/s",
                flush=True,
            )
    result = {
        "docs": n,
        "chunks": len(chunks),
        "tokens": tokens,
        "variant": args.variant,
        "providers": providers,
        "embed_tok_s": tokens / min(embed_s),
        "job_tok_s": tokens / min(job_s),
        "ratio": min(embed_s) / min(job_s),
        "embed_s": embed_s,
        "job_s": job_s,
    }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
