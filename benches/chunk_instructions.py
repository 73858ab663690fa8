"""Instructions per input byte of the recursive chunkers, ours and chonkie's on tokie (the
fastest peer of ``../shared/bench/peer_chunk_bench.py``), counted by valgrind (callgrind): a
measure this shared host cannot blur, where its timings drift with the load.

Both chunk the first ``--mb`` MB of ``tests/data/docs-corpus.jsonl.gz`` to 512 tokens of
all-MiniLM-L6-v2's WordPiece (its truncation removed), single thread, as the peer bench
calls them (ours through ``cf_peer_adapter.recursive``, so the Python side is counted too).
Each side runs twice in valgrind, once chunking the texts and once not; the difference is
the chunking's, the interpreter's start and imports left out.

    python benches/chunk_instructions.py            # writes benches/results/chunk-instructions.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = ROOT / "tests" / "data" / "docs-corpus.jsonl.gz"
TOKENIZER = ROOT / "python" / "chunkforge" / "data" / "all-MiniLM-L6-v2.tokenizer.json"


def child(side: str, texts_path: str, tokenizer: str, chunk: bool) -> None:
    texts = json.loads(Path(texts_path).read_text(encoding="utf-8"))
    if side == "chunkforge":
        sys.path.insert(0, str(HERE))
        import cf_peer_adapter

        def run(batch: list[str]) -> object:
            return cf_peer_adapter.recursive(batch, tokenizer, 512)
    else:
        import tokie
        from chonkie import RecursiveChunker

        chunker = RecursiveChunker(tokenizer=tokie.Tokenizer.from_json(tokenizer), chunk_size=512)

        def run(batch: list[str]) -> object:
            return [chunker.chunk(t) for t in batch]

    run([t[::-1] for t in texts[:3]])  # set-up and first-call costs, in both runs
    if chunk:
        run(texts)


def instructions(side: str, texts: Path, tokenizer: Path, chunk: bool, work: Path) -> int:
    out = work / f"{side}-{int(chunk)}.out"
    argv = [sys.executable, __file__, "--child", side, str(texts), str(tokenizer), str(int(chunk))]
    env = {**os.environ, "RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return int(re.findall(r"Collected : (\d+)", done.stderr)[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "chunk-instructions.md")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        side, texts, tokenizer, chunk = args.child
        child(side, texts, tokenizer, chunk == "1")
        return
    if shutil.which("valgrind") is None:
        sys.exit("chunk_instructions.py: valgrind is not installed")
    work = Path(tempfile.mkdtemp(prefix="chunk-instructions-"))
    texts, size = [], 0
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            if size >= args.mb * 1e6:
                break
            texts.append(json.loads(line)["text"])
            size += len(texts[-1].encode())
    (work / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    spec = json.loads(TOKENIZER.read_text(encoding="utf-8"))
    spec["truncation"] = spec["padding"] = None
    (work / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    per_byte = {}
    for side in ("chunkforge", "chonkie-tokie"):
        n = [instructions(side, work / "texts.json", work / "tokenizer.json", chunk, work) for chunk in (True, False)]
        per_byte[side] = (n[0] - n[1]) / size
        print(f"{side}: {n[0] - n[1]:,} instructions, {per_byte[side]:.1f} a byte", flush=True)
    ratio = per_byte["chonkie-tokie"] / per_byte["chunkforge"]
    shutil.rmtree(work)
    args.out.write_text(
        "# Chunking instructions per byte\n\n"
        f"`python benches/chunk_instructions.py --mb {args.mb:g}`: the first {len(texts)} documents "
        f"({size / 1e6:.2f} MB) of `tests/data/docs-corpus.jsonl.gz`, 512 tokens of all-MiniLM-L6-v2's "
        "WordPiece, single thread, counted by callgrind (the chunking pass alone).\n\n"
        "| chunker | instructions a byte |\n| --- | ---: |\n"
        f"| chunkforge `RecursiveChunker` (through the peer adapter) | {per_byte['chunkforge']:.1f} |\n"
        f"| chonkie `RecursiveChunker` on tokie | {per_byte['chonkie-tokie']:.1f} |\n\n"
        f"chonkie on tokie runs **{ratio:.2f}x** our instructions.\n",
        encoding="utf-8",
    )
    print(f"ratio {ratio:.2f}x -> {args.out}")


if __name__ == "__main__":
    main()
