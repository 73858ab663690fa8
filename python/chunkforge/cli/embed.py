"""``chunkforge embed CHUNKS --out FILE``: embeds chunk records into vectors.

The chunks are streamed in shards of ``--shard-rows`` records; each shard's vectors go
to a file named after a hash of the shard and the settings, in ``<out>.shards/``,
written atomically. A rerun after a crash reuses the shards already written and
recomputes the rest, so no row is lost or repeated; the shards are then joined into
``--out`` (atomically) and the folder is removed.

Parquet output carries each chunk's ``text_hash`` and the model's fingerprint, so it is a
vector cache for the bulk job (``embed-docs --reuse FILE``), as a bulk dataset is for this
command (``embed --reuse DATASET``): neither embeds again what the other has embedded.

>>> output_format("-")
(PosixPath('-'), 'jsonl')
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import itertools
import json
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._io import atomic_file, checksum_ok, read_records, record_doc_id, record_text, text_hash, write_checksum
from .._progress import job_progress
from ..bulk.cache import VECTORS_METADATA, VectorCache
from ..bulk.fingerprint import model_fingerprint, vectors_key
from ..errors import InputError
from ._common import load_cli_encoder, refuse_output_input

if TYPE_CHECKING:
    import pyarrow as pa

    from ..encoder import Encoder

SHARD_ROWS = 4096


class ChunkRecord(NamedTuple):
    """One chunk to embed: its id (``doc_id``, ``index``), its text and the whole record."""

    doc_id: str
    index: int  # type: ignore[assignment]  # the chunk's index (shadows tuple.index)
    text: str
    fields: dict[str, Any] = {}


def add_parser(commands: Any) -> None:
    """Registers ``chunkforge embed`` on the CLI's subcommands."""
    from .._recommended import (
        DEFAULT_CPU_BATCH_TOKENS,
        DEFAULT_GPU_BATCH_TOKENS,
        DEFAULT_OPENVINO_BATCH_TOKENS,
        VARIANTS,
    )

    embed = commands.add_parser(
        "embed",
        help="embed chunks (JSON lines) into vectors",
        description="Embed the chunks of a JSONL or Parquet file (as written by `chunkforge chunk`: one "
        '{"doc_id", "index", "text"} record each; the document id is "doc_id", else "id") into float32 '
        "vectors, in input order. Resumes where it stopped when rerun after a crash.",
    )
    embed.add_argument("path", metavar="CHUNKS", help="chunk records (.jsonl, .jsonl.gz, .parquet, or - for stdin)")
    embed.add_argument(
        "--model",
        default="default",
        metavar="DIR|default",
        help="model folder (ONNX, or BERT safetensors converted once), or default (all-MiniLM-L6-v2)",
    )
    embed.add_argument(
        "--variant",
        choices=VARIANTS,
        default="auto",
        help="auto: the fastest that keeps cosine >= 0.9999 to fp32 on this machine (bf16 on OpenVINO where the CPU has it); "
        "else the graph variant (default auto)",
    )
    embed.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="vectors.parquet (doc_id, index, --fields, text_hash and vector columns; needs pyarrow), vectors.npy (rows in "
        "input order), or - (JSON lines on stdout, not resumable); without a suffix .parquet when pyarrow is "
        "installed, else .npy",
    )
    embed.add_argument(
        "--fields",
        metavar="NAME,...",
        help="chunk record fields to store beside each vector (e.g. text,start,end,heading_path,source; "
        "all: every field); Parquet or JSON lines",
    )
    embed.add_argument(
        "--on-overflow",
        choices=("warn", "truncate", "error"),
        default="warn",
        help="chunks longer than the model's max length: truncate with a warning (default), quietly, or stop",
    )
    embed.add_argument(
        "--max-batch-tokens",
        type=int,
        metavar="N",
        help=f"padded tokens per batch (default: {DEFAULT_OPENVINO_BATCH_TOKENS} with OpenVINO, "
        f"{DEFAULT_CPU_BATCH_TOKENS} on CPU, {DEFAULT_GPU_BATCH_TOKENS} on GPU)",
    )
    embed.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="PATH",
        help="take vectors already computed instead of embedding them again: a dataset folder written by "
        "`chunkforge embed-docs`, or a Parquet file written by this command (same model; by chunk text); repeatable",
    )
    embed.add_argument("--shard-rows", type=int, default=SHARD_ROWS, metavar="N", help="chunks per resumable shard")
    embed.add_argument("--threads", type=int, metavar="N", help="ONNX Runtime intra-op threads (default: all cores)")
    embed.add_argument("--no-progress", action="store_true", help="no progress bars (shown only on a terminal)")
    embed.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


EmbedShard = Callable[[list[ChunkRecord], int], np.ndarray]
"""``embed(shard, first)``: the vectors of a shard whose first chunk is number ``first``."""


def parse_chunk_record(where: str, record: dict[str, Any]) -> ChunkRecord:
    """One chunk record; its document id by the one rule (``doc_id``, else ``id``, else
    ``"<path>:<line>"``), ``index`` 0 when absent."""
    doc_id = record_doc_id(where, record, default=where)
    index = record.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise InputError(f'{where}: "index" must be an integer, not {type(index).__name__}')
    return ChunkRecord(str(doc_id), index, record_text(where, record), record)


def output_format(out: str) -> tuple[Path, str]:
    """The ``--out`` path and its format (``parquet``, ``npy``, or ``jsonl`` for ``-``: stdout);
    a bare name gets ``.parquet`` when pyarrow is installed, else ``.npy``."""
    if out == "-":
        return Path(out), "jsonl"
    path = Path(out)
    if path.suffix not in (".parquet", ".npy"):
        if path.suffix:
            raise InputError(f"--out {out}: expected a .parquet or .npy file, or - for JSON lines on stdout")
        path = path.with_name(path.name + (".parquet" if importlib.util.find_spec("pyarrow") else ".npy"))
    fmt = path.suffix[1:]
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise InputError(f"--out {out}: writing Parquet needs pyarrow (pip install pyarrow); or write .npy")
    return path, fmt


def parse_fields(spec: str | None, fmt: str) -> list[str] | None:
    """``--fields``: the chunk record fields to keep beside each vector (None: all of them)."""
    if spec is None:
        return []
    if fmt == "npy":
        raise InputError("--fields needs Parquet or JSON lines output (--out FILE.parquet or --out -), not .npy")
    if spec.strip() == "all":
        return None
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names:
        raise InputError(f"--fields must name fields (comma-separated) or be all, got {spec!r}")
    return [name for name in names if name not in ("doc_id", "index")]


def record_fields(record: ChunkRecord, fields: list[str] | tuple[()] | None) -> dict[str, Any]:
    """The fields of a chunk record kept beside its vector (absent ones: None)."""
    if fields is None:
        return {k: v for k, v in record.fields.items() if k not in ("doc_id", "index")}
    return {name: record.fields.get(name) for name in fields}


def write_shard(
    path: Path, shard: list[ChunkRecord], vectors: np.ndarray, fmt: str, fields: list[str] | None, key: str
) -> None:
    """One shard's vectors (and ids, ``fields`` and text hashes, for Parquet), written
    atomically, then its checksum beside it (``SHARD.sha256``): a shard is reused only when both agree."""
    with atomic_file(path) as tmp:
        if fmt == "npy":
            with open(tmp, "wb") as f:
                np.save(f, vectors)
        else:
            import pyarrow.parquet as pq

            pq.write_table(chunk_table(shard, vectors, key, fields), tmp)
    write_checksum(path)


def chunk_table(
    shard: list[ChunkRecord], vectors: np.ndarray, key: str, fields: list[str] | tuple[()] | None = ()
) -> pa.Table:
    """A pyarrow table: ``doc_id`` string, ``index`` int64, the chunk record ``fields``
    (types as pyarrow infers them), ``text_hash`` (the vector cache's key), ``vector`` fixed-size
    list of float32; the schema's ``chunkforge.vectors`` metadata is ``key`` (model and dtype)."""
    import pyarrow as pa

    dim = vectors.shape[1]
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), dim)
    kept = pa.Table.from_pylist([record_fields(r, fields) for r in shard]) if fields != () and shard else None
    columns = {
        "doc_id": pa.array([r.doc_id for r in shard], pa.string()),
        "index": pa.array([r.index for r in shard], pa.int64()),
    }
    if kept is not None:
        columns.update({name: kept.column(name) for name in kept.column_names})
    elif fields:
        columns.update({name: pa.nulls(len(shard)) for name in fields})
    columns["text_hash"] = pa.array([text_hash(r.text) for r in shard], pa.string())
    return pa.table({**columns, "vector": column}).replace_schema_metadata({VECTORS_METADATA.decode(): key})


def join_shards(shards: list[Path], out: Path, fmt: str, dim: int, key: str) -> None:
    """Concatenates the shard files into ``out`` (atomically), one shard in memory at a time."""
    with atomic_file(out) as tmp:
        if fmt == "npy":
            rows = sum(np.load(p, mmap_mode="r").shape[0] for p in shards)
            if rows == 0:
                with open(tmp, "wb") as f:
                    np.save(f, np.zeros((0, dim), np.float32))
                return
            joined = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(rows, dim))
            start = 0
            for p in shards:
                block = np.load(p, mmap_mode="r")
                joined[start : start + len(block)] = block
                start += len(block)
            joined.flush()
            del joined
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            schemas = [pq.read_schema(p) for p in shards] or [
                chunk_table([], np.zeros((0, dim), np.float32), key).schema
            ]
            try:  # fields kept beside the vector: a column all null in one shard takes its type from the others
                schema = pa.unify_schemas(schemas, promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise InputError(f"--fields: a field has different types in different chunks ({exc})") from exc
            last = ("text_hash", "vector")
            schema = pa.schema(
                [f for f in schema if f.name not in last] + [schema.field(name) for name in last],
                metadata={VECTORS_METADATA.decode(): key},
            )
            with pq.ParquetWriter(tmp, schema, write_page_checksum=True) as writer:
                for p in shards:
                    table = pq.read_table(p)
                    writer.write_table(
                        pa.Table.from_arrays(
                            [
                                table.column(f.name).cast(f.type)
                                if f.name in table.column_names
                                else pa.nulls(len(table), f.type)
                                for f in schema
                            ],
                            schema=schema,
                        )
                    )


def shard_digest(settings: str, shard: list[ChunkRecord]) -> str:
    """A hash of the settings and the shard's records: names the shard file."""
    digest = hashlib.sha256(settings.encode())
    for record in shard:
        digest.update(json.dumps(record, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()[:16]


def run(args: argparse.Namespace) -> str:
    """The ``embed`` command; returns the summary line, raises InputError on bad input or arguments."""
    if args.path != "-" and not os.path.isfile(args.path):
        raise InputError(f"no such file: {args.path}")
    out, fmt = output_format(args.out)
    refuse_output_input(str(out), [args.path])
    fields = parse_fields(args.fields, fmt)
    encoder = load_cli_encoder(args)
    from ..encoder import TruncationWarning

    key = vectors_key(model_fingerprint(encoder), "float32") if fmt == "parquet" or args.reuse else ""
    cache = VectorCache(None, key, args.reuse) if args.reuse else None
    records = (parse_chunk_record(where, record) for where, record, _ in read_records(args.path))
    with (
        warnings.catch_warnings(record=True) as caught,
        job_progress(False if args.no_progress else "log", "embed", unit=" chunks", desc="embedding") as bar,
    ):
        warnings.simplefilter("always", TruncationWarning)

        def embed(shard: list[ChunkRecord], first: int) -> np.ndarray:
            texts = [r.text for r in shard]
            vectors = np.empty((len(shard), encoder.dim), np.float32)
            found = np.zeros(len(shard), bool)
            if cache is not None:
                found, cached = cache.lookup([text_hash(t) for t in texts], "float32")
                if len(cached):
                    vectors[found] = cached
                reused[0] += len(cached)
                bar.update(len(cached))
            missing = np.flatnonzero(~found)
            try:
                if len(missing):
                    vectors[missing] = encoder.embed([texts[i] for i in missing], show_progress=bar)
            except ValueError as exc:
                raise InputError.of(exc, where=f"{args.path}, chunks {first}-{first + len(shard) - 1}") from exc
            for warning in caught:
                message = warning.message
                text = message.named("--on-overflow") if isinstance(message, TruncationWarning) else str(message)
                print(
                    f"chunkforge: warning: {args.path}, chunks {first}-{first + len(shard) - 1}: {text}",
                    file=sys.stderr,
                )
            caught.clear()
            return vectors

        reused = [0]
        if fmt == "jsonl":
            total, resumed = stream_embeddings(records, args.shard_rows, embed, fields), None
        else:
            total, resumed = embed_in_shards(args, out, fmt, encoder, records, embed, fields, bar, key)
    counts = [f"{total - (resumed or 0) - reused[0]} embedded"]
    counts += [f"{resumed} from an earlier run"] if resumed is not None else []
    counts += [f"{reused[0]} from --reuse"] if args.reuse else []
    return f"{total} chunks ({', '.join(counts)}) -> {'stdout' if fmt == 'jsonl' else out}"


def stream_embeddings(
    records: Iterator[ChunkRecord], shard_rows: int, embed: EmbedShard, fields: list[str] | None
) -> int:
    """``--out -``: one JSON line a chunk on stdout (``doc_id``, ``index``, the kept fields,
    ``vector``); returns how many."""
    count = 0
    while shard := list(itertools.islice(records, shard_rows)):
        vectors = embed(shard, count)
        sys.stdout.write(
            "".join(
                json.dumps(
                    {
                        "doc_id": r.doc_id,
                        "index": r.index,
                        **(record_fields(r, fields) if fields != [] else {}),
                        "vector": v.tolist(),
                    },
                    ensure_ascii=False,
                )
                + "\n"
                for r, v in zip(shard, vectors)
            )
        )
        count += len(shard)
    sys.stdout.flush()
    return count


def embed_in_shards(
    args: argparse.Namespace,
    out: Path,
    fmt: str,
    encoder: Encoder,
    records: Iterator[ChunkRecord],
    embed: EmbedShard,
    fields: list[str] | None,
    bar: Any,
    key: str,
) -> tuple[int, int]:
    """Resumable output: shards written atomically, reused on a rerun, then joined
    (``key``: the vectors' model and dtype, recorded in Parquet output); returns how many
    chunks, and how many were in shards of an earlier run."""
    graph = encoder.graph.stat()
    settings = json.dumps(
        [
            str(encoder.graph),
            graph.st_size,
            graph.st_mtime_ns,
            encoder.max_length,
            encoder.pooling,
            encoder.normalize,
            args.shard_rows,
            fmt,
            fields,
            key,
        ]
    )
    shards_dir = out.with_name(out.name + ".shards")
    try:
        shards_dir.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write --out {out}: {exc.strerror or exc}") from exc
    try:
        return embed_shards(args, out, fmt, encoder, records, embed, fields, bar, settings, shards_dir, key)
    finally:
        with contextlib.suppress(OSError):
            shards_dir.rmdir()  # only when empty: a failure before any shard leaves no folder


def embed_shards(
    args: argparse.Namespace,
    out: Path,
    fmt: str,
    encoder: Encoder,
    records: Iterator[ChunkRecord],
    embed: EmbedShard,
    fields: list[str] | None,
    bar: Any,
    settings: str,
    shards_dir: Path,
    key: str,
) -> tuple[int, int]:
    """The shards (a shard is reused when its checksum agrees), joined into ``out``; returns
    how many chunks, and how many were in reused shards."""
    shards: list[Path] = []
    embedded = reused = 0
    while shard := list(itertools.islice(records, args.shard_rows)):
        path = shards_dir / f"shard-{len(shards):06d}-{shard_digest(settings, shard)}.{fmt}"
        if checksum_ok(path):
            reused += len(shard)
            bar.update(len(shard))
        else:
            write_shard(path, shard, embed(shard, embedded + reused), fmt, fields, key)
            embedded += len(shard)
        shards.append(path)
    join_shards(shards, out, fmt, encoder.dim, key)
    shutil.rmtree(shards_dir)
    return embedded + reused, reused
