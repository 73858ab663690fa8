"""How far a vector taken from the bulk job's vector cache is from the one a clean run embeds.

An encoder batch pads its chunks to the longest one, and ONNX Runtime's kernels sum in an
order that depends on the batch's shape, so a chunk's vector depends (in the last bits) on
its batch mates. The bulk job re-embeds only new chunk texts; an unchanged chunk of a rebuilt
shard keeps the vector it was embedded with, next to other mates than a clean run gives it.
This measures the difference: a corpus slice is embedded, one document in ``--every`` gets a
sentence appended, the job is rerun on that dataset (the cache serves the unchanged chunks)
and, apart, on a new folder (a clean run); the vectors of the chunks the cache served are
compared, per graph variant.

    PYTHONPATH=python python3 benches/vector_cache_tolerance.py --out benches/results/vector-cache-tolerance.txt
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from pathlib import Path

import numpy as np

from chunkforge import Encoder, bulk

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "docs-corpus-small.jsonl.gz"


def write(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def rows(out: Path) -> dict[str, np.ndarray]:
    """Each chunk's vector (float64), by chunk_id."""
    table = bulk.read_dataset(out, columns=["chunk_id", "vector"])
    column = table.column("vector").combine_chunks()
    vectors = column.values.to_numpy().reshape(len(column), column.type.list_size).astype(np.float64)
    return dict(zip(table.column("chunk_id").to_pylist(), vectors))


def measure(variant: str, docs: list[dict], every: int, folder: Path) -> str:
    encoder = Encoder.default(variant)
    edited = [{**d, "text": d["text"] + " One sentence appended."} if i % every == 0 else d for i, d in enumerate(docs)]
    first, clean = write(folder / f"{variant}-a.jsonl", docs), write(folder / f"{variant}-b.jsonl", edited)
    cached_out, clean_out = folder / f"{variant}-cached", folder / f"{variant}-clean"
    bulk.run([first], cached_out, encoder=encoder, shard_docs=4)
    summary = bulk.run([clean], cached_out, encoder=encoder, shard_docs=4)
    bulk.run([clean], clean_out, encoder=encoder, shard_docs=4)
    got, want = rows(cached_out), rows(clean_out)
    assert got.keys() == want.keys()
    diff = np.array([np.abs(got[k] - want[k]).max() for k in want])
    cosine = np.array([1 - got[k] @ want[k] / np.linalg.norm(got[k]) / np.linalg.norm(want[k]) for k in want])
    return (
        f"{variant}: {len(want)} chunks, {summary.cached} from the vector cache; "
        f"max |cached - clean| {diff.max():.2e} (mean {diff.mean():.2e}), "
        f"identical vectors {int((diff == 0).sum())}/{len(want)}, max 1 - cosine {cosine.max():.2e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=48, help="corpus documents (default 48)")
    parser.add_argument("--chars", type=int, default=3000, help="characters kept of each (default 3000)")
    parser.add_argument("--every", type=int, default=5, help="one document in this many edited (default 5)")
    parser.add_argument("--variants", default="optimized,int8", help="graph variants (default optimized,int8)")
    parser.add_argument("--out", type=Path, help="also write the lines here")
    args = parser.parse_args()
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        docs = [{"id": d["id"], "text": d["text"][: args.chars]} for d in map(json.loads, f)][: args.docs]
    with tempfile.TemporaryDirectory() as tmp:
        lines = [measure(v, docs, args.every, Path(tmp)) for v in args.variants.split(",")]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
