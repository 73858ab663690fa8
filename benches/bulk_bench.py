"""The bulk job (issue 11) against the ways to do it without it, on the shipped 35 MB corpus.

Two modes, all-MiniLM-L6-v2 (``--model-variant``, default int8), RecursiveChunker at the
model's window (254 tokens), on the CPU:

``full``: the job (``chunkforge.bulk.run``, what ``chunkforge embed-docs`` runs, default
settings) once over the whole corpus, in a child process whose RSS, the shards written and
the 1-minute load are sampled every ``--sample-s`` seconds; then the incremental rerun: a copy
of the dataset, the corpus with 1 document in 100 changed (a sentence appended), the job rerun
on it; and a rerun over the unchanged corpus.

``compare``: a stratified sample (every ``--every``-th document) cut into ``--slices`` slices
(document ``i`` of the sample in slice ``i % slices``); on each slice, in an order rotated
from slice to slice, each variant in its own process (peak RSS is that process's):

- ``job``: ``chunkforge.bulk.run`` with ``shard_docs=8`` (enough batches for two Ray actors);
- ``cli``: ``chunkforge chunk --out chunks.jsonl`` then ``chunkforge embed chunks.jsonl``;
- ``loop``: a plain sentence-transformers-style loop: chunk every document, then encode the
  chunk texts in length-sorted batches of 32 (as ``SentenceTransformer.encode`` does);
- ``ray``: the job on a new local Ray cluster (``ray="local"``, start-up included, two actors),
  its rows compared with the job's on the same slice.

``reuse``: one bulk path. On the sample, ``cli`` (chunk, then ``embed`` to Parquet), then the
job without and with ``reuse=[vectors.parquet]`` (``embed-docs --reuse``) in the order job,
reuse, reuse, job, each in its own process on a new dataset folder.

    PYTHONPATH=python python3 benches/bulk_bench.py full --out benches/results/bulk-35mb-full.json
    PYTHONPATH=python python3 benches/bulk_bench.py compare --every 10 --slices 3 --out benches/results/bulk-sample.json
    PYTHONPATH=python python3 benches/bulk_bench.py reuse --every 30
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from peak_memory import peak_rss_mb

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "docs-corpus.jsonl.gz"
VARIANTS = ("job", "cli", "loop", "ray")
SHARD_DOCS = 8  # compare: about 15 shards a slice, enough batches to keep two Ray actors busy


def corpus_slice(limit_mb: float, path: Path) -> int:
    """Writes the first ``limit_mb`` MB of the corpus (whole records) to ``path``; returns the
    record count (``gpu_pipeline.py``'s input)."""
    n = size = 0
    with gzip.open(CORPUS, "rb") as src, open(path, "wb") as dst:
        for line in src:
            if size >= limit_mb * 1e6:
                break
            dst.write(line)
            size += len(line)
            n += 1
    return n


def sample(every: int, slices: int, folder: Path) -> list[Path]:
    """Every ``every``-th corpus document, dealt round-robin into ``slices`` JSONL files."""
    paths = [folder / f"slice{k}.jsonl" for k in range(slices)]
    outs = [open(p, "wb") for p in paths]
    n = 0
    with gzip.open(CORPUS, "rb") as src:
        for i, line in enumerate(src):
            if i % every == 0:
                outs[n % slices].write(line)
                n += 1
    for f in outs:
        f.close()
    return paths


def changed_copy(src: Path, dst: Path, every: int = 100) -> int:
    """``src`` (JSONL, or .gz) with one document in ``every`` changed (a sentence appended)."""
    changed = 0
    with (
        gzip.open(src, "rt", encoding="utf-8") if src.suffix == ".gz" else open(src, encoding="utf-8") as f,
        open(dst, "w", encoding="utf-8") as out,
    ):
        for i, line in enumerate(f):
            record = json.loads(line)
            if i % every == every // 2:
                record["text"] += "\n\nThis paragraph was added by the incremental benchmark."
                changed += 1
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return changed


def run_variant(variant: str, docs: Path, work: Path, model_variant: str, shard_docs: int) -> dict:
    """Runs one variant in this process; returns its figures."""
    import numpy as np

    from chunkforge import Encoder, RecursiveChunker, bulk
    from chunkforge.cli import main

    started = time.perf_counter()
    cpu_started = time.process_time()
    result: dict = {"variant": variant}
    if variant in ("job", "ray", "rerun", "reuse"):
        summary = bulk.run(
            [docs],
            work / ("job" if variant == "rerun" else variant),
            variant=model_variant,
            ray="local" if variant == "ray" else None,
            progress=False,
            shard_docs=shard_docs,
            reuse=[work / "vectors.parquet"] if variant == "reuse" else [],
        )
        result.update(
            docs=summary.docs,
            chunks=summary.rows,
            tokens=summary.tokens,
            embedded=summary.embedded,
            shards_built=summary.shards_built,
            shards_kept=summary.shards_kept,
        )
    elif variant == "incremental":
        changed = changed_copy(docs, work / "changed.jsonl")
        shutil.copytree(work / "job", work / "incremental")  # the job's own dataset stays
        started, cpu_started = time.perf_counter(), time.process_time()
        summary = bulk.run(
            [work / "changed.jsonl"], work / "incremental", variant=model_variant, progress=False, shard_docs=shard_docs
        )
        result.update(
            docs=summary.docs,
            chunks=summary.rows,
            tokens=summary.tokens,
            changed_docs=changed,
            embedded=summary.embedded,
            embedded_tokens=summary.embedded_tokens,
            shards_built=summary.shards_built,
            shards_kept=summary.shards_kept,
        )
    elif variant == "cli":
        assert main(["chunk", str(docs), "--max-tokens", "254", "--out", str(work / "chunks.jsonl")]) == 0
        assert (
            main(
                [
                    "embed",
                    str(work / "chunks.jsonl"),
                    "--variant",
                    model_variant,
                    "--no-progress",
                    "--out",
                    str(work / "vectors.parquet"),
                ]
            )
            == 0
        )
        chunks = [json.loads(line) for line in open(work / "chunks.jsonl", encoding="utf-8")]
        result.update(
            docs=len({c["doc_id"] for c in chunks}), chunks=len(chunks), tokens=sum(c["token_count"] for c in chunks)
        )
    elif variant == "loop":
        encoder = Encoder.default(model_variant, max_batch_tokens=32 * 256)  # one run per batch of 32
        chunker = RecursiveChunker(encoder.tokenizer, max_tokens=254)
        texts = [json.loads(line)["text"] for line in open(docs, encoding="utf-8")]
        chunks = [c for per_doc in chunker.chunk_batch(texts) for c in per_doc]
        order = sorted(range(len(chunks)), key=lambda i: -chunks[i].token_count)
        vectors = np.empty((len(chunks), encoder.dim), np.float32)
        for k in range(0, len(order), 32):
            idx = order[k : k + 32]
            vectors[idx] = encoder.embed([chunks[i].text for i in idx])
        result.update(docs=len(texts), chunks=len(chunks), tokens=sum(c.token_count for c in chunks))
    result["seconds"] = time.perf_counter() - started
    # CPU seconds of this process (all its threads); for "ray" the actors' CPU time is in
    # other processes and is not counted
    result["cpu_seconds"] = time.process_time() - cpu_started
    result["peak_rss_mb"] = peak_rss_mb()
    return result


class Sampler:
    """Samples the 1-minute load (and a process's RSS and the shards written) on a thread."""

    def __init__(self, every: float, pid: int | None = None, shards: Path | None = None) -> None:
        self.every, self.pid, self.shards = every, pid, shards
        self.rows: list[dict] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = time.perf_counter()

    def _run(self) -> None:
        while not self.stop.is_set():
            row = {"t": round(time.perf_counter() - self.started, 1), "load1": os.getloadavg()[0]}
            if self.pid is not None:
                try:
                    status = Path(f"/proc/{self.pid}/status").read_text()
                    row["rss_mb"] = (
                        int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1]) / 1024
                    )
                except (OSError, StopIteration):
                    pass
            if self.shards is not None and self.shards.is_dir():
                row["shards"] = sum(1 for p in self.shards.iterdir() if p.suffix == ".parquet")
            self.rows.append(row)
            print(json.dumps(row), flush=True)
            self.stop.wait(self.every)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def mean_load(self) -> float:
        loads = [r["load1"] for r in self.rows]
        return sum(loads) / max(len(loads), 1)


def child(
    variant: str, docs: Path, work: Path, args: argparse.Namespace, sample_s: float, shards: Path | None = None
) -> dict:
    """One variant in its own process, the load (and its RSS) sampled meanwhile."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        __file__,
        "child",
        "--variant",
        variant,
        "--docs",
        str(docs),
        "--work",
        str(work),
        "--model-variant",
        args.model_variant,
        "--shard-docs",
        str(args.shard_docs),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with Sampler(sample_s, proc.pid, shards) as sampler:
        out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{err[-4000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["load1_mean"] = round(sampler.mean_load(), 2)
    result["samples"] = sampler.rows
    return result


def table(rows: list[dict], base: dict | None) -> str:
    lines = [
        "| variant | seconds | docs/s | tokens/s | CPU s | tokens/CPU-s | peak RSS MB | load | vs job (wall) "
        "| vs job (CPU) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        wall = f"{r['seconds'] / base['seconds']:.3f}x" if base else "-"
        cpu = f"{r['cpu_seconds'] / base['cpu_seconds']:.3f}x" if base and r["variant"] != "ray" else "-"
        lines.append(
            f"| {r['variant']} | {r['seconds']:.1f} | {r['docs'] / r['seconds']:.2f} | "
            f"{r['tokens'] / r['seconds']:,.0f} | {r['cpu_seconds']:.1f} | "
            f"{r['tokens'] / r['cpu_seconds']:,.0f} | {r['peak_rss_mb']:.0f} | {r['load1_mean']:.1f} | "
            f"{wall} | {cpu} |"
        )
    return "\n".join(lines)


def full(args: argparse.Namespace, work: Path) -> dict:
    print(f"full: {CORPUS.name}; load {os.getloadavg()[0]:.1f}", flush=True)
    job = child("job", CORPUS, work, args, args.sample_s, work / "job" / "shards")
    print(json.dumps({k: v for k, v in job.items() if k != "samples"}), flush=True)
    rerun = child("rerun", CORPUS, work, args, 5)
    print(json.dumps({k: v for k, v in rerun.items() if k != "samples"}), flush=True)
    incremental = child("incremental", CORPUS, work, args, 5)
    print(json.dumps({k: v for k, v in incremental.items() if k != "samples"}), flush=True)
    for r in (rerun, incremental):
        r["vs_full"] = r["seconds"] / job["seconds"]
    print("\n" + table([job, rerun, incremental], job))
    return {"job": job, "rerun_unchanged": rerun, "incremental": incremental}


def compare(args: argparse.Namespace, work: Path) -> dict:
    slices = sample(args.every, args.slices, work)
    results: list[dict] = []
    for k, docs in enumerate(slices):
        n = sum(1 for _ in open(docs, encoding="utf-8"))
        print(
            f"slice {k}: {n} documents, {docs.stat().st_size / 1e6:.2f} MB; load {os.getloadavg()[0]:.1f}", flush=True
        )
        order = VARIANTS[k % len(VARIANTS) :] + VARIANTS[: k % len(VARIANTS)]
        slice_work = work / f"w{k}"
        slice_work.mkdir()
        for variant in order:
            result = child(variant, docs, slice_work, args, 5)
            result["slice"] = k
            results.append(result)
            print(json.dumps({key: v for key, v in result.items() if key != "samples"}), flush=True)
        from chunkforge import bulk

        same = bulk.read_dataset(slice_work / "ray").equals(bulk.read_dataset(slice_work / "job"))
        next(r for r in results if r["slice"] == k and r["variant"] == "ray")["rows_identical"] = same
        shutil.rmtree(slice_work / "job", ignore_errors=True)
        shutil.rmtree(slice_work / "ray", ignore_errors=True)
    totals = []
    for variant in VARIANTS:
        mine = [r for r in results if r["variant"] == variant]
        totals.append(
            {
                "variant": variant,
                **{key: sum(r[key] for r in mine) for key in ("docs", "chunks", "tokens", "seconds", "cpu_seconds")},
                "peak_rss_mb": max(r["peak_rss_mb"] for r in mine),
                "load1_mean": sum(r["load1_mean"] * r["seconds"] for r in mine) / sum(r["seconds"] for r in mine),
            }
        )
    print("\nSum over the slices:\n" + table(totals, totals[0]))
    identical = [r.get("rows_identical") for r in results if "rows_identical" in r]
    print(f"\nRay rows identical to the job's, per slice: {identical}")
    return {"every": args.every, "slices": args.slices, "per_slice": results, "totals": totals}


def reuse(args: argparse.Namespace, work: Path) -> dict:
    (docs,) = sample(args.every, 1, work)
    cli = child("cli", docs, work, args, 5)
    runs = []
    for variant in ("job", "reuse", "reuse", "job"):
        shutil.rmtree(work / variant, ignore_errors=True)
        runs.append(child(variant, docs, work, args, 5))
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "samples"}), flush=True)
    lines = [
        "| run | seconds | CPU s | chunks | chunks embedded | load |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in [cli, *runs]:
        embedded = r.get("embedded", r["chunks"])
        lines.append(
            f"| {r['variant']} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['chunks']} | {embedded} | "
            f"{r['load1_mean']:.1f} |"
        )
    print("\n" + "\n".join(lines))
    return {"every": args.every, "cli": cli, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("full", "compare", "reuse", "child"))
    parser.add_argument("--model-variant", default="int8", help="graph of all-MiniLM-L6-v2 (default int8)")
    parser.add_argument("--every", type=int, default=10, help="compare: every N-th document (default 10)")
    parser.add_argument("--slices", type=int, default=3, help="compare: slices of the sample (default 3)")
    parser.add_argument("--sample-s", type=float, default=15.0, help="full: seconds between samples")
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--shard-docs", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--docs", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode == "child":
        print(
            json.dumps(run_variant(args.variant, Path(args.docs), Path(args.work), args.model_variant, args.shard_docs))
        )
        return
    if args.shard_docs is None:
        sys.path.insert(0, str(ROOT / "python"))
        from chunkforge.bulk.spec import SHARD_DOCS as JOB_SHARD_DOCS

        args.shard_docs = JOB_SHARD_DOCS if args.mode == "full" else SHARD_DOCS
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="bulk-bench-") as tmp:
        figures = {"full": full, "compare": compare, "reuse": reuse}[args.mode](args, Path(tmp))
    figures = {
        "mode": args.mode,
        "model_variant": args.model_variant,
        "shard_docs": args.shard_docs,
        "cpus": os.cpu_count(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
        **figures,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
