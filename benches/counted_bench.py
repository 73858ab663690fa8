"""How slow is sizing by a Python counter? ``CountedChunker`` (chunks sized by a tiktoken
encoding or a callable) against the native ``RecursiveChunker`` on the model's tokenizer and
LangChain's ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` on the same encoding, the
same documents (the first documents of ``benches/devset`` up to ``--chars`` characters),
256-token chunks, in turn in this one process, best of ``--rounds``.

The tiktoken encoding is a real ``tiktoken.Encoding`` with a few merges (the published ones
are downloaded on first use, which this machine cannot), so its counts are cheaper than
cl100k's: the ratios between the Python paths hold, the absolute speed is optimistic.

    python benches/counted_bench.py --out benches/results/counted.md
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import tiktoken
from langchain_text_splitters import RecursiveCharacterTextSplitter

from chunkforge import CountedChunker, RecursiveChunker, Tokenizer

CORPUS = Path(__file__).resolve().parent / "devset" / "corpus.jsonl"
MAX_TOKENS = 256


def encoding() -> tiktoken.Encoding:
    ranks = {bytes([i]): i for i in range(256)}
    for token in (b"th", b"he", b"the", b" t", b" the", b"in", b"er", b"on", b"an", b"es", b" a", b"at"):
        ranks[token] = len(ranks)
    return tiktoken.Encoding("bench", pat_str=r"""\s?\w+|\s?[^\w\s]+|\s+""", mergeable_ranks=ranks, special_tokens={})


def best(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    texts, total = [], 0
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if total >= args.chars:
            break
        texts.append(json.loads(line)["text"])
        total += len(texts[-1])
    enc, tok = encoding(), Tokenizer.default()
    langchain = RecursiveCharacterTextSplitter(  # as from_tiktoken_encoder builds it, on this encoding
        chunk_size=MAX_TOKENS,
        chunk_overlap=0,
        length_function=lambda text: len(enc.encode(text, disallowed_special=())),
    )
    runs = {
        "RecursiveChunker, native (the model's tokenizer)": lambda: RecursiveChunker(tok, MAX_TOKENS).chunk_batch(
            texts, threads=1
        ),
        "CountedChunker, tiktoken encoding": lambda: CountedChunker(enc, MAX_TOKENS).chunk_batch(texts),
        "CountedChunker, callable (the model's tokenizer count)": lambda: CountedChunker(
            tok.count, MAX_TOKENS
        ).chunk_batch(texts),
        "LangChain RecursiveCharacterTextSplitter, tiktoken encoding": lambda: [langchain.split_text(t) for t in texts],
    }
    seconds = {name: best(run, args.rounds) for name, run in runs.items()}
    base = seconds[next(iter(runs))]
    lines = [
        "<!-- Written by benches/counted_bench.py (issue 28 item 4). -->",
        "# Sizing by a Python counter",
        "",
        f"{len(texts)} documents of `benches/devset`, {total:,} characters, {MAX_TOKENS}-token chunks, one "
        f"thread, best of {args.rounds}, {platform.machine()}, Python {platform.python_version()}.",
        "",
        "    " + ("python benches/counted_bench.py " + " ".join(sys.argv[1:])).rstrip(),
        "",
        "| chunker | seconds | MB/s | time / native |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, s in seconds.items():
        lines.append(f"| {name} | {s:.3f} | {total / s / 1e6:.2f} | {s / base:.1f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
