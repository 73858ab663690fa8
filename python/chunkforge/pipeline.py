"""The bulk job: documents in, one Parquet dataset of chunk vectors out; incremental and resumable.

``run(inputs, out)`` reads files and folders (as ``chunkforge chunk`` reads them), JSONL(.gz)
files and Parquet datasets, chunks every document with the encoder's own tokenizer, embeds
the chunks and writes one row per chunk to ``out/shards/*.parquet``, listed in corpus order
by ``out/manifest.json``. From the command line: ``chunkforge embed-docs DOCS... --out DATASET``.

>>> from chunkforge import pipeline
>>> summary = pipeline.run(["README.md", "corpus.jsonl.gz"], "vectors")  # doctest: +SKIP
>>> table = pipeline.read_dataset("vectors")  # doctest: +SKIP
>>> table.column_names  # doctest: +SKIP
['doc_id', 'chunk_id', 'start', 'end', 'token_count', 'heading_path', 'text_hash', 'vector']

How it stays exact under crashes and changes:

- Documents are cut into *shard batches* by content: a batch ends after a document whose
  id hashes to 0 modulo ``shard_docs`` (or at ``MAX_SHARD_DOCS`` documents / ``MAX_SHARD_BYTES``),
  so an edit, insertion or deletion moves no batch boundary but its own.
- A batch's shard file is named by a hash of the job's settings (model fingerprint, chunker
  config, vector dtype, text column) and of each document's id and text. It is written
  atomically (temp file, fsync, rename): a shard either exists whole or not at all.
- A rerun skips every batch whose shard exists: after ``kill -9`` it redoes at most the batches
  that were in flight, and over a changed corpus it rebuilds only the batches holding a changed,
  new or deleted document.
- A rebuilt batch re-embeds only chunks whose text is new: every earlier shard made with the
  same model fingerprint and dtype is a content-addressed vector cache keyed by the chunk
  text's hash (the ``text_hash`` column).
- The manifest, written atomically last, lists this run's shards in corpus order; shards it does
  not list (deleted documents, old versions, a crashed run's leftovers) are then removed. Every
  chunk of the corpus is therefore in exactly one listed shard.

Tokenization is done once: each document is tokenized by the chunker, which sizes its chunks on
those tokens and gives each chunk's token ids from them (exactly the chunk's text encoded
alone); :meth:`Encoder.embed_token_ids` embeds those ids, so neither the document nor a chunk
is tokenized a second time (``Tokenizer.tokenized`` counts one text per document with the
default settings). That holds for the native strategies (recursive, token, sentence,
markdown/rst/asciidoc); ``strategy="code"`` (tree-sitter, sized in Python) encodes each
chunk's text for its ids. The next batch is read, chunked and tokenized on a worker
thread while the current one is embedded; at most two batches wait, so memory stays bounded.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import queue
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from tqdm import tqdm

from ._io import (
    FOLDER_SUFFIXES,
    ID_KEYS,
    MANIFEST,
    PARQUET_SUFFIXES,
    STDIN,
    TEXT_KEY,
    Doc,
    atomic_file,
    check_paths,
    expand,
    file_sha256,
    is_record_file,
    read_manifest,
    read_records,
    read_text_file,
    record_doc_id,
    record_metadata,
    record_text,
    text_hash,
)
from ._options import CODE_SUFFIXES, ChunkerSet, load_encoder
from ._recommended import VARIANTS
from .chunkers import node_id
from .errors import InputError
from .tokenizer import DEFAULT_TOKENIZER, Tokenizer, check_threads

if TYPE_CHECKING:
    import pyarrow as pa

    from .encoder import Encoder
    from .index.trees import TreeSettings

FORMAT = "chunkforge.embed-docs/1"
SHARDS = "shards"
SHARD_DOCS = 64
MAX_SHARD_DOCS = 512
MAX_SHARD_BYTES = 16 << 20
STRATEGIES = ("recursive", "token", "sentence", "markdown", "code")
UNITS = ("chunks", "tree")
"""What the job writes a row for: a chunk, or a leaf of the document's tree (the index's
units; the documents' trees beside, see :mod:`chunkforge.index.trees`)."""
DTYPES = ("float32", "float16")
PARQUET_SUFFIX = ".parquet"
TREES_SUFFIX = ".trees.parquet"
"""With ``units="tree"``, the documents' trees of shard ``<key>.parquet`` are in ``<key>.trees.parquet``."""
PIPELINE_EXTRA = 'pip install "chunkforge[embed,parquet]"'
OWN_SHARD_FILE = re.compile(r"[0-9a-f]{32}(\.trees)?\.parquet|\.[0-9a-f]{32}(\.trees)?\.parquet\.\d+-[^/]*\.tmp")
"""The names the job writes in ``shards/``: a shard (``KEY.parquet``) or its temp file; the
clean-up removes no other file."""


@dataclass(frozen=True)
class JobSpec:
    """What the job computes. Every setting that changes a row is part of the shards' names
    (with the model's fingerprint), so changing one rebuilds the shards it affects.

    ``max_tokens=None`` is the encoder's window (``max_length`` minus special tokens);
    ``id_column=None`` is chunkforge's id rule (``doc_id``, else ``id``, else ``"<path>:<line>"``);
    ``threads`` and ``max_batch_tokens`` change speed only."""

    model: str = "default"
    variant: str = "auto"
    strategy: str = "recursive"
    max_tokens: int | None = None
    overlap: int = 0
    with_text: bool = False
    dtype: str = "float32"
    id_column: str | None = None
    text_column: str = TEXT_KEY
    on_overflow: str = "warn"
    max_batch_tokens: int | None = None
    threads: int | None = None
    shard_docs: int = SHARD_DOCS
    units: str = "chunks"
    leaf_tokens: int = 48
    parent_tokens: tuple[int, ...] = (256,)
    structure: str | None = "auto"

    @property
    def tree(self) -> TreeSettings | None:
        """With ``units="tree"``, how documents are cut into the index's trees."""
        if self.units != "tree":
            return None
        from .index.trees import TreeSettings

        return TreeSettings(self.leaf_tokens, tuple(self.parent_tokens), self.structure)

    def check(self) -> None:
        """Raises InputError naming the first bad parameter."""
        if self.units not in UNITS:
            raise InputError(f"units must be one of {', '.join(UNITS)}, not {self.units!r}")
        if self.tree is not None:
            self.tree.check()
        if self.strategy not in STRATEGIES:
            raise InputError(f"strategy must be one of {', '.join(STRATEGIES)}, not {self.strategy!r}")
        if self.dtype not in DTYPES:
            raise InputError(f"dtype must be float32 or float16, not {self.dtype!r}")
        for name in ("max_tokens", "max_batch_tokens", "threads", "shard_docs"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"{name} must be an integer >= 1, not {value!r}")
        try:
            check_threads(self.threads)
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        if isinstance(self.overlap, bool) or not isinstance(self.overlap, int) or self.overlap < 0:
            raise InputError(f"overlap must be an integer >= 0, not {self.overlap!r}")
        for name in ("id_column", "text_column"):
            value = getattr(self, name)
            if (value is not None or name == "text_column") and (not isinstance(value, str) or not value):
                raise InputError(f"{name} must be a non-empty string")

    def encoder(self) -> Encoder:
        """The encoder this job embeds with."""
        return load_encoder(
            SimpleNamespace(
                model=self.model,
                variant=self.variant,
                on_overflow=self.on_overflow,
                max_batch_tokens=self.max_batch_tokens,
                threads=self.threads,
                part_rows=None,
                no_progress=True,
            )
        )

    def chunker_config(self, encoder: Encoder) -> dict[str, Any]:
        """The chunker settings as recorded in the manifest (``max_tokens`` resolved; with
        ``units="tree"``, the trees' settings)."""
        if self.tree is not None:
            return {"units": "tree", **self.tree.as_dict(), "tokenizer": "the model's"}
        head, tail = encoder.special_token_counts
        max_tokens = self.max_tokens or encoder.max_length - head - tail
        return {
            "strategy": self.strategy,
            "max_tokens": max_tokens,
            "overlap": self.overlap,
            "tokenizer": "the model's",
        }

    def chunkers(self, encoder: Encoder) -> ChunkerSet:
        """The chunkers, on the encoder's tokenizer."""
        config = self.chunker_config(encoder)
        return ChunkerSet(
            SimpleNamespace(
                strategy=self.strategy,
                tokenizer=encoder.tokenizer,
                max_tokens=config["max_tokens"],
                overlap=self.overlap,
                levels="",
                model=None,
            )
        )


@dataclass
class JobSummary:
    """What a run did: documents and chunk rows in the dataset, tokens of those chunks, chunks
    embedded now and taken from the vector cache, shards built now and kept as they were."""

    docs: int = 0
    rows: int = 0
    tokens: int = 0
    embedded: int = 0
    embedded_tokens: int = 0
    cached: int = 0
    shards_built: int = 0
    shards_kept: int = 0
    seconds: float = 0.0
    out: str = ""

    def line(self) -> str:
        """The one-line summary the CLI prints."""
        return (
            f"{self.docs} docs, {self.rows} chunks, {self.tokens} tokens: {self.embedded} chunks embedded, "
            f"{self.cached} from the vector cache; {self.shards_built} shards built, "
            f"{self.shards_kept} kept -> {self.out}"
        )


class ShardStats(NamedTuple):
    """One shard's counts."""

    docs: int
    rows: int
    tokens: int
    embedded: int
    embedded_tokens: int


class Planned(NamedTuple):
    """One batch of documents and the shard file that holds (or will hold) its rows."""

    key: str
    docs: list[Doc]
    exists: bool

    @staticmethod
    def exists_in(shard_dir: Path, key: str, spec: JobSpec) -> bool:
        """Whether the shard of ``key`` is whole in ``shard_dir`` (:func:`shard_ok`; with its trees,
        for ``units="tree"``)."""
        names = [f"{key}{PARQUET_SUFFIX}", *([f"{key}{TREES_SUFFIX}"] if spec.units == "tree" else [])]
        return all(shard_ok(shard_dir / name) for name in names)


class Chunked(NamedTuple):
    """A batch chunked and tokenized, ready to embed: its row columns and token ids (and with
    ``units="tree"``, the documents' trees)."""

    columns: dict[str, list[Any]]
    token_ids: list[np.ndarray]
    docs: pa.Table | None = None


# ---------------------------------------------------------------- inputs


def is_parquet(path: str) -> bool:
    """A Parquet file, or a folder holding Parquet files (read as one dataset)."""
    if os.path.isdir(path):
        return any(p.name.endswith(PARQUET_SUFFIXES) for p in Path(path).rglob("*") if p.is_file())
    return path.endswith(PARQUET_SUFFIXES)


def input_files(inputs: Sequence[str], spec: JobSpec) -> Iterator[str]:
    """The files of the inputs, in order: a folder of Parquet files gives its Parquet files,
    any other folder its text files (source files for ``strategy="code"``)."""
    suffixes = CODE_SUFFIXES if spec.strategy == "code" else FOLDER_SUFFIXES
    for path in inputs:
        yield from expand([path], PARQUET_SUFFIXES if os.path.isdir(path) and is_parquet(path) else suffixes)


def read_inputs(inputs: Sequence[str], spec: JobSpec) -> Iterator[Doc]:
    """All documents of all inputs, lazily and in order, ids as strings: chunkforge's reader
    (``chunkforge._io``), the id and text taken from ``spec.id_column``/``spec.text_column``."""
    for name in input_files(inputs, spec):
        if not is_record_file(name):
            yield read_text_file(name)
            continue
        for where, record, nbytes in read_records(name):
            if spec.text_column != TEXT_KEY:
                if spec.text_column not in record:
                    raise InputError(f'{where}: record has no "{spec.text_column}" (--text-column)')
                record = {**record, TEXT_KEY: record[spec.text_column]}
            if spec.id_column is not None:
                record = {k: v for k, v in record.items() if k not in ID_KEYS}
                if spec.id_column not in record:
                    raise InputError(f'{where}: record has no "{spec.id_column}" (--id-column)')
                record[ID_KEYS[0]] = record[spec.id_column]
            text = record_text(where, record)
            doc_id = str(record_doc_id(where, record, default=where))
            metadata = record_metadata(record) if spec.units == "tree" else {}
            yield Doc(doc_id, text, nbytes or len(text.encode("utf-8")), metadata)


def count_docs(inputs: Sequence[str], spec: JobSpec) -> int:
    """How many documents the inputs hold (Parquet metadata, JSONL lines, files): the
    progress bar's total, for its ETA. Only regular files are counted."""
    import gzip

    total = 0
    if STDIN in inputs:  # read once, by the job
        raise ValueError("no count of stdin")
    for name in input_files(inputs, spec):
        if not os.path.isfile(name):  # a FIFO or a device is read once, by the job
            raise ValueError(f"no count of {name}")
        if name.endswith(PARQUET_SUFFIXES):
            import pyarrow.parquet as pq

            total += pq.ParquetFile(name).metadata.num_rows
        elif is_record_file(name):
            with gzip.open(name) if name.endswith(".gz") else open(name, "rb") as f:
                total += sum(1 for line in f if line.strip())
        else:
            total += 1
    return total


def shard_batches(docs: Iterable[Doc], shard_docs: int) -> Iterator[list[Doc]]:
    """Documents in batches cut by content: after a document whose id hashes to 0 modulo
    ``shard_docs``, or at MAX_SHARD_DOCS documents or MAX_SHARD_BYTES bytes."""
    batch: list[Doc] = []
    size = 0
    for doc in docs:
        batch.append(doc)
        size += doc.nbytes
        cut = int.from_bytes(hashlib.blake2b(str(doc.doc_id).encode(), digest_size=8).digest(), "big") % shard_docs
        if cut == 0 or len(batch) >= MAX_SHARD_DOCS or size >= MAX_SHARD_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def batch_key(settings: str, docs: list[Doc]) -> str:
    """The shard name of a batch: a hash of the job's settings and each document's id and text
    (each id preceded by its length, so no two batches hash the same bytes)."""
    digest = hashlib.blake2b(settings.encode(), digest_size=16)
    for doc in docs:
        doc_id = str(doc.doc_id).encode()
        digest.update(len(doc_id).to_bytes(8, "big") + doc_id)
        digest.update(hashlib.blake2b(doc.text.encode(), digest_size=16).digest())
        if doc.metadata:  # units="tree" keeps it with the document
            digest.update(hashlib.blake2b(json.dumps(doc.metadata, sort_keys=True, default=str).encode()).digest())
    return digest.hexdigest()


# ---------------------------------------------------------------- model identity


def model_fingerprint(encoder: Encoder) -> str:
    """A hash of what makes the encoder's vectors: its graph's bytes, its tokenizer's
    definition, max_length, pooling and normalization."""
    digest = hashlib.sha256(graph_digest(encoder.graph).encode())
    digest.update((tokenizer_json(encoder.tokenizer) or encoder.tokenizer.source).encode())
    digest.update(json.dumps([encoder.max_length, encoder.pooling, encoder.normalize]).encode())
    if encoder.runtime != "onnxruntime":  # the same graph, other numerics (bf16)
        digest.update(",".join(encoder.active_providers).encode())
    return digest.hexdigest()[:32]


@functools.lru_cache(maxsize=16)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def graph_digest(graph: Path) -> str:
    """SHA-256 of a graph file, computed once per process while the file is unchanged."""
    stat = graph.stat()
    return _file_digest(str(graph.resolve()), stat.st_size, stat.st_mtime_ns)


def tokenizer_json(tokenizer: Tokenizer) -> str | None:
    """The ``tokenizer.json`` text a tokenizer was loaded from, when it is known."""
    if tokenizer.source == DEFAULT_TOKENIZER:
        return (resources.files("chunkforge") / "data" / DEFAULT_TOKENIZER).read_text(encoding="utf-8")
    if os.path.isfile(tokenizer.source):
        return Path(tokenizer.source).read_text(encoding="utf-8")
    return None


# ---------------------------------------------------------------- tokenize once


# ---------------------------------------------------------------- shards


def shard_schema(dim: int, spec: JobSpec, metadata: dict[str, str]) -> pa.Schema:
    """The columns of a shard: doc_id, chunk_id, start, end, token_count, heading_path,
    (passage, with ``units="tree"``; text,) text_hash, vector (fixed-size list of float32 or float16)."""
    import pyarrow as pa

    fields = [
        ("doc_id", pa.string()),
        ("chunk_id", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("token_count", pa.int32()),
        ("heading_path", pa.list_(pa.string())),
    ]
    if spec.units == "tree":
        fields.append(("passage", pa.int32()))
    if spec.with_text:
        fields.append(("text", pa.string()))
    fields += [("text_hash", pa.string()), ("vector", pa.list_(getattr(pa, spec.dtype)(), dim))]
    return pa.schema(fields, metadata=metadata)


class VectorCache:
    """Vectors already in the dataset, by chunk text hash: every shard in ``shard_dir`` whose
    ``vectors`` metadata (model fingerprint and dtype) matches. The hash index (16 bytes a
    row) is built on the first lookup; vectors are read from at most a few shards at a time."""

    def __init__(self, shard_dir: Path, vectors: str) -> None:
        self.shard_dir, self.vectors = shard_dir, vectors
        self._paths: list[Path] | None = None
        self._hashes = self._where = np.zeros(0, np.uint64)
        self._loaded: OrderedDict[int, np.ndarray | None] = OrderedDict()

    def _build(self) -> None:
        import pyarrow.parquet as pq

        self._paths, hashes, where = [], [], []
        for path in sorted(self.shard_dir.glob(f"*{PARQUET_SUFFIX}")):
            try:
                meta = pq.read_schema(path).metadata or {}
                if meta.get(b"chunkforge.vectors") != self.vectors.encode():
                    continue
                column = pq.read_table(path, columns=["text_hash"], page_checksum_verification=True).column(0)
                column = column.to_pylist()
            except (OSError, ValueError):  # a file that is not a shard: not a cache entry
                continue
            shard = len(self._paths)
            self._paths.append(path)
            hashes.append(np.frombuffer(bytes.fromhex("".join(column)), ">u8").astype(np.uint64))
            where.append((np.uint64(shard) << np.uint64(32)) | np.arange(len(column), dtype=np.uint64))
        all_hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
        order = np.argsort(all_hashes, kind="stable")
        self._hashes = all_hashes[order]
        self._where = (np.concatenate(where) if where else np.zeros(0, np.uint64))[order]

    def lookup(self, hashes: list[str], dtype: str) -> tuple[np.ndarray, np.ndarray]:
        """``(found, vectors)``: which hashes are cached, and their vectors (rows of ``found``)."""
        if self._paths is None:
            self._build()
        keys = np.frombuffer(bytes.fromhex("".join(hashes)), ">u8").astype(np.uint64)
        pos = np.minimum(np.searchsorted(self._hashes, keys), max(len(self._hashes) - 1, 0))
        found = (self._hashes[pos] == keys) if len(self._hashes) else np.zeros(len(keys), bool)
        where = self._where[pos[found]]
        shards, rows = (where >> np.uint64(32)).astype(np.int64), (where & np.uint64(0xFFFFFFFF)).astype(np.int64)
        vectors = np.empty((len(where), 0), dtype)
        usable = np.ones(len(where), bool)
        for shard in np.unique(shards):
            mine = shards == shard
            block = self._vectors(int(shard))
            if block is None:  # a damaged shard: its vectors are embedded again
                usable[mine] = False
                continue
            if vectors.shape[1] == 0:
                vectors = np.empty((len(where), block.shape[1]), block.dtype)
            vectors[mine] = block[rows[mine]]
        found[np.flatnonzero(found)[~usable]] = False
        return found, vectors[usable]

    def _vectors(self, shard: int) -> np.ndarray | None:
        """The vectors of a shard, None when its pages do not match their checksums."""
        if shard not in self._loaded:
            import pyarrow.parquet as pq

            assert self._paths is not None
            try:
                table = pq.read_table(self._paths[shard], columns=["vector"], page_checksum_verification=True)
            except (OSError, ValueError):
                self._loaded[shard] = None
            else:
                column = table.column(0).combine_chunks()
                self._loaded[shard] = column.values.to_numpy().reshape(len(column), column.type.list_size)
            while len(self._loaded) > 4:
                self._loaded.popitem(last=False)
        self._loaded.move_to_end(shard)
        return self._loaded[shard]


class ShardBuilder:
    """Chunks, tokenizes and embeds batches of documents into shard tables, and writes them.
    The local job and each Ray actor run this same code, so their rows are the same."""

    def __init__(
        self, spec: JobSpec, out: str | os.PathLike[str], vectors: str, encoder: Encoder | None = None
    ) -> None:
        self.spec = spec
        self.encoder = encoder or spec.encoder()
        self.chunkers = spec.chunkers(self.encoder) if spec.tree is None else None
        self.shard_dir = Path(out) / SHARDS
        self.vectors = vectors
        self.cache = VectorCache(self.shard_dir, vectors)
        self.schema = shard_schema(self.encoder.dim, spec, {"chunkforge.vectors": vectors})
        self.tree = spec.tree
        if self.tree is not None:
            from .index.trees import scratch_expander

            self.expander = scratch_expander(self.encoder.tokenizer)

    def chunk(self, docs: list[Doc]) -> Chunked:
        """The rows of a batch without their vectors, and each chunk's token ids (with
        ``units="tree"``, each leaf's, and the documents' trees)."""
        if self.tree is not None:
            from .index.trees import cut

            leaves = cut(self.expander, docs, self.tree, len(self.tree.parent_tokens) + 1, self.spec.threads)
            if self.spec.with_text:
                by_id = {str(d.doc_id): d.text for d in docs}
                c = leaves.columns
                c["text"] = [by_id[i][a:b] for i, a, b in zip(c["doc_id"], c["start"], c["end"])]
            return Chunked(leaves.columns, leaves.token_ids, leaves.docs)
        columns: dict[str, list[Any]] = {name: [] for name in self.schema.names if name != "vector"}
        token_ids: list[np.ndarray] = []
        assert self.chunkers is not None
        for doc, (chunks, ids) in zip(docs, self.chunkers.chunks_with_ids(docs, self.spec.threads)):
            texts = [c.text for c in chunks]
            token_ids += ids
            columns["doc_id"] += [doc.doc_id] * len(chunks)
            columns["chunk_id"] += [node_id(str(doc.doc_id), c.start, c.end, 0) for c in chunks]
            columns["start"] += [c.start for c in chunks]
            columns["end"] += [c.end for c in chunks]
            columns["token_count"] += [c.token_count for c in chunks]
            columns["heading_path"] += [list(c.heading_path) for c in chunks]
            columns["text_hash"] += [text_hash(t) for t in texts]
            if "text" in columns:
                columns["text"] += texts
        return Chunked(columns, token_ids)

    def embed(self, chunked: Chunked, use_cache: bool = True) -> tuple[pa.Table, int, int]:
        """The shard table of a chunked batch, and how many chunks (and their tokens) were
        embedded rather than taken from the vector cache."""
        import pyarrow as pa

        n, dim = len(chunked.token_ids), self.encoder.dim
        vectors = np.empty((n, dim), self.spec.dtype)
        found = np.zeros(n, bool)
        if use_cache and n:
            found, cached = self.cache.lookup(chunked.columns["text_hash"], self.spec.dtype)
            if found.any():
                vectors[found] = cached
        missing = np.flatnonzero(~found)
        if len(missing):
            try:
                vectors[missing] = self.encoder.embed_token_ids([chunked.token_ids[i] for i in missing])
            except ValueError as exc:  # on_overflow="error"
                raise InputError(str(exc)) from exc
        tokens = sum(len(chunked.token_ids[i]) for i in missing.tolist())
        flat = pa.array(vectors.reshape(-1), getattr(pa, self.spec.dtype)())
        arrays = [pa.array(chunked.columns[name], self.schema.field(name).type) for name in self.schema.names[:-1]]
        table = pa.Table.from_arrays([*arrays, pa.FixedSizeListArray.from_arrays(flat, dim)], schema=self.schema)
        return table, len(missing), tokens

    def write(self, key: str, table: pa.Table, docs: pa.Table | None = None) -> None:
        """The shard of ``key``, written atomically (after its docs table, with ``units="tree"``:
        a shard that exists has its trees)."""
        import pyarrow.parquet as pq

        for path, content in (
            (self.shard_dir / f"{key}{TREES_SUFFIX}", docs),
            (self.shard_dir / f"{key}{PARQUET_SUFFIX}", table),
        ):
            if content is None:
                continue
            try:
                with atomic_file(path) as tmp:
                    pq.write_table(content, tmp, write_page_checksum=True)
            except OSError as exc:  # a full disk: the file is named
                raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc

    def build(self, key: str, docs: list[Doc]) -> ShardStats:
        """Chunks, embeds and writes one batch's shard (what a Ray actor does per batch)."""
        chunked = self.chunk(docs)
        table, embedded, embedded_tokens = self.embed(chunked)
        self.write(key, table, chunked.docs)
        return ShardStats(
            len(docs), table.num_rows, int(np.sum(table.column("token_count"))), embedded, embedded_tokens
        )


# ---------------------------------------------------------------- the job


@dataclass
class Progress:
    """The progress bar: documents (with an ETA once they are counted), tokens/s, chunks."""

    show: bool
    summary: JobSummary
    started: float = field(default_factory=time.perf_counter)
    bar: tqdm | None = None

    def __enter__(self) -> Progress:
        self.bar = tqdm(unit=" docs", file=sys.stderr, disable=not self.show, dynamic_ncols=True, smoothing=0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.bar is not None
        self.bar.close()

    def set_total(self, total: int) -> None:
        assert self.bar is not None
        self.bar.total = total
        self.bar.refresh()

    def update(self, stats: ShardStats, built: bool) -> None:
        s = self.summary
        s.docs += stats.docs
        s.rows += stats.rows
        s.tokens += stats.tokens
        s.embedded += stats.embedded
        s.embedded_tokens += stats.embedded_tokens
        s.cached += stats.rows - stats.embedded if built else 0
        s.shards_built += built
        s.shards_kept += not built
        assert self.bar is not None
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.bar.set_postfix_str(
            f"{s.embedded_tokens / elapsed:,.0f} tok/s, {s.rows} chunks ({s.embedded} embedded)", refresh=False
        )
        self.bar.update(stats.docs)


def count_for_eta(bar: Progress, paths: list[str], spec: JobSpec) -> None:
    """Sets the bar's total to the number of documents (on a side thread; a bad input is
    reported by the job itself)."""
    try:
        bar.set_total(count_docs(paths, spec))
    except Exception:  # noqa: BLE001 - the reader names the bad file
        return


def plan(inputs: Sequence[str], spec: JobSpec, settings: str, shard_dir: Path) -> Iterator[Planned]:
    """The corpus as shard batches, each with its key and whether its shard exists."""
    for docs in shard_batches(unique_ids(read_inputs(inputs, spec)), spec.shard_docs):
        key = batch_key(settings, docs)
        yield Planned(key, docs, Planned.exists_in(shard_dir, key, spec))


def unique_ids(docs: Iterable[Doc]) -> Iterator[Doc]:
    """``docs``; InputError at the first id seen before (a row's ``doc_id`` names one
    document). Keeps a 16-byte digest per id."""
    seen: set[bytes] = set()
    for doc in docs:
        digest = hashlib.blake2b(str(doc.doc_id).encode(), digest_size=16).digest()
        if digest in seen:
            raise InputError(
                f"document id {str(doc.doc_id)!r} is used more than once in the inputs; ids must be unique "
                "(--id-column names the id field)"
            )
        seen.add(digest)
        yield doc


def ahead(items: Iterator[Any], depth: int = 2) -> Iterator[Any]:
    """``items``, produced on a worker thread at most ``depth`` ahead of the consumer;
    an exception there is raised here."""
    done = object()
    box: queue.Queue[Any] = queue.Queue(depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                box.put((item, None))
        except BaseException as exc:  # handed to the consumer
            box.put((None, exc))
            return
        box.put((done, None))

    worker = threading.Thread(target=produce, name="chunkforge-chunk", daemon=True)
    worker.start()
    try:
        while True:
            item, exc = box.get()
            if exc is not None:
                raise exc
            if item is done:
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                box.get_nowait()
            except queue.Empty:
                worker.join(0.05)


def run(
    inputs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    spec: JobSpec | None = None,
    encoder: Encoder | None = None,
    lancedb: str | os.PathLike[str] | None = None,
    ray: str | None = None,
    ray_actors: int | None = None,
    progress: bool | None = None,
    **options: Any,
) -> JobSummary:
    """Chunks and embeds every document of ``inputs`` into the dataset folder ``out``
    (created if missing; a rerun updates it incrementally, see the module docstring).

    ``inputs``: text files, folders (their ``.md``/``.txt``/``.rst``/``.adoc`` files, or source
    files for ``strategy="code"``), ``.jsonl``/``.jsonl.gz`` files (one record a line, id and text
    under ``id_column``/``text_column``) and Parquet files or folders of them (same columns).
    ``options`` are :class:`JobSpec` fields (``model``, ``strategy``, ``max_tokens``, ``with_text``,
    ``dtype``, ...), or pass ``spec``. ``encoder`` replaces the one ``model``/``variant`` name
    (its fingerprint is taken from its graph). ``lancedb``: also write the rows to the LanceDB
    database at that path (table ``chunks``; with ``units="tree"``, the index's store, see
    :mod:`chunkforge.index.store`). ``ray``: run the chunking and embedding on the Ray
    cluster at that address (``"auto"``, ``"local"`` for a new local one, ``"ray://..."``) with
    ``ray_actors`` actors; ``out`` must then be on storage every node sees.
    ``progress``: show a bar (default: when stderr is a terminal).

    >>> s = run(["docs/"], "vectors", max_tokens=128, with_text=True)  # doctest: +SKIP
    >>> s.rows == read_dataset("vectors").num_rows  # doctest: +SKIP
    True

    Raises InputError (one line, naming the parameter or file) on bad input.
    """
    spec = JobSpec(**{**(asdict(spec) if spec else {}), **options})
    spec.check()
    if ray is not None and encoder is not None:
        raise InputError("with ray, name the model (model=, variant=): each actor loads its own encoder")
    paths = [os.fspath(p) for p in inputs]
    if not paths:
        raise InputError("no inputs given")
    check_paths(paths)
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise InputError(f"the bulk job writes Parquet and needs pyarrow: {PIPELINE_EXTRA}") from exc
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise InputError(f"--out {root} is a file, not a dataset folder")
    if root.is_dir() and any(root.iterdir()) and not (root / MANIFEST).exists() and not own_shards_only(root / SHARDS):
        raise InputError(f"--out {root} is a folder that holds no chunkforge dataset; give a new or empty folder")
    check_out_apart(root, paths)
    with dataset_lock(root):
        return run_locked(paths, root, spec, encoder, lancedb, ray, ray_actors, progress)


def check_out_apart(root: Path, inputs: list[str]) -> None:
    """InputError when ``--out`` lies inside an input folder (the next run would read its own
    shards as documents) or an input lies inside ``--out``."""
    out = root.resolve()
    for path in inputs:
        if path == STDIN:
            continue
        given = Path(path).resolve()
        if given.is_dir() and out.is_relative_to(given):
            raise InputError(f"--out {root} is inside the input folder {path}; write the dataset elsewhere")
        if given.is_relative_to(out):
            raise InputError(f"the input {path} is inside --out {root}; give the documents, not the dataset")


def own_shards_only(shard_dir: Path) -> bool:
    """True for a ``shards`` folder holding nothing but the job's own files (a killed first
    run's): such a folder without a manifest is resumed, any other is not a dataset."""
    return shard_dir.is_dir() and all(OWN_SHARD_FILE.fullmatch(p.name) and p.is_file() for p in shard_dir.iterdir())


@contextlib.contextmanager
def dataset_lock(root: Path) -> Iterator[None]:
    """Holds the dataset folder (created if missing) for one job: while it runs, a second job
    on it, in any process, is refused. An advisory lock on the folder, released by the system
    when the job ends, ``kill -9`` included."""
    created = not root.exists()
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root, os.O_RDONLY)
    except OSError as exc:
        raise InputError(f"cannot write --out {root}: {exc.strerror or exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"--out {root}: another job is writing this dataset; wait for it to end") from None
        yield
    except BaseException:
        if created:  # a job that failed before writing anything leaves no folder
            with contextlib.suppress(OSError):
                root.rmdir()
        raise
    finally:
        os.close(fd)


def run_locked(
    paths: list[str],
    root: Path,
    spec: JobSpec,
    encoder: Encoder | None,
    lancedb: str | os.PathLike[str] | None,
    ray: str | None,
    ray_actors: int | None,
    progress: bool | None,
) -> JobSummary:
    """:func:`run` once the dataset folder is held."""
    started = time.perf_counter()
    encoder = encoder or spec.encoder()
    chunker = spec.chunker_config(encoder)
    if spec.tree is None:
        spec.chunkers(encoder)  # bad chunker parameters fail here, before any work (or any Ray actor)
    shard_dir = root / SHARDS
    try:
        shard_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write --out {root}: {exc.strerror or exc}") from exc
    fingerprint = model_fingerprint(encoder)
    vectors = json.dumps({"model": fingerprint, "dtype": spec.dtype})
    settings = json.dumps([FORMAT, vectors, chunker, spec.with_text, spec.id_column, spec.text_column, spec.shard_docs])
    summary = JobSummary(out=str(root))
    shards: list[dict[str, Any]] = []
    show = sys.stderr.isatty() if progress is None else progress
    with Progress(show, summary) as bar:
        if show:
            threading.Thread(target=count_for_eta, args=(bar, paths, spec), daemon=True).start()
        planned = plan(paths, spec, settings, shard_dir)
        if ray is None:
            build_locally(planned, ShardBuilder(spec, root, vectors, encoder), bar, shards)
        else:
            from .ray import build_on_ray

            build_on_ray(planned, spec, root, vectors, ray, ray_actors, bar, shards)
    manifest = {
        "format": FORMAT,
        "chunkforge_version": package_version(),
        "model": {
            "name": spec.model,
            "variant": encoder.variant if spec.model == "default" else None,
            "fingerprint": fingerprint,
            "graph": encoder.graph.name,
            "dim": encoder.dim,
            "max_length": encoder.max_length,
            "pooling": encoder.pooling,
            "normalize": encoder.normalize,
        },
        "units": spec.units,
        "chunker": chunker,
        "vector_dtype": spec.dtype,
        "with_text": spec.with_text,
        "columns": {"id": spec.id_column, "text": spec.text_column},
        "docs": summary.docs,
        "rows": summary.rows,
        "tokens": summary.tokens,
        "shards": shards,
    }
    try:
        with atomic_file(root / MANIFEST) as tmp:
            tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:  # a full disk: the file is named
        raise InputError(f"cannot write {root / MANIFEST}: {exc.strerror or exc}") from exc
    remove_unlisted(root, shards)
    if lancedb is not None and spec.units == "tree":
        from .index.store import write_store

        write_store(root, lancedb)
    elif lancedb is not None:
        from .lance import write_lancedb

        write_lancedb(root, lancedb)
    summary.seconds = time.perf_counter() - started
    return summary


def build_locally(
    planned: Iterator[Planned], builder: ShardBuilder, bar: Progress, shards: list[dict[str, Any]]
) -> None:
    """Builds the missing shards in this process: the next batch is chunked and tokenized
    on a worker thread, and the last one written on another, while this one embeds the
    current batch."""

    def chunked() -> Iterator[tuple[Planned, Chunked | None]]:
        for item in planned:
            yield item, None if item.exists else builder.chunk(item.docs)

    with ThreadPoolExecutor(1, thread_name_prefix="chunkforge-write") as writer:
        written: Future[None] | None = None
        for item, batch in ahead(chunked()):
            if batch is None:
                stats = shard_stats(builder.shard_dir, item)
            else:
                table, embedded, embedded_tokens = builder.embed(batch)
                if written is not None:
                    written.result()  # one shard in flight at most; its error surfaces here
                written = writer.submit(builder.write, item.key, table, batch.docs)
                stats = ShardStats(
                    len(item.docs), table.num_rows, int(np.sum(table.column("token_count"))), embedded, embedded_tokens
                )
            shards.append(shard_entry(item.key, stats, builder.spec))
            bar.update(stats, batch is not None)
        if written is not None:
            written.result()


def shard_entry(key: str, stats: ShardStats, spec: JobSpec) -> dict[str, Any]:
    """The manifest's entry of a shard (and of its docs table, ``trees``, with ``units="tree"``)."""
    entry: dict[str, Any] = {"file": f"{SHARDS}/{key}{PARQUET_SUFFIX}"}
    if spec.units == "tree":
        entry["trees"] = f"{SHARDS}/{key}{TREES_SUFFIX}"
    return {**entry, "docs": stats.docs, "rows": stats.rows, "tokens": stats.tokens}


def shard_ok(path: Path) -> bool:
    """True when ``path`` is a whole shard: a Parquet file that reads in full, every page
    matching its CRC (shards are written with page checksums). A truncated, empty or damaged
    shard is False: the job builds it again."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return False
    try:
        pq.read_table(path, page_checksum_verification=True)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is both
        return False
    return True


def shard_stats(shard_dir: Path, item: Planned) -> ShardStats:
    """The counts of an existing shard (from its Parquet footer and token counts)."""
    import pyarrow.parquet as pq

    tokens = pq.read_table(shard_dir / f"{item.key}{PARQUET_SUFFIX}", columns=["token_count"]).column(0)
    return ShardStats(len(item.docs), len(tokens), int(np.sum(tokens)), 0, 0)


def remove_unlisted(root: Path, shards: list[dict[str, Any]]) -> None:
    """Removes shard files (and leftover temp files) the manifest does not list; files and
    folders of other names are the user's and stay."""
    listed = {Path(s["file"]).name for s in shards} | {Path(s["trees"]).name for s in shards if "trees" in s}
    for path in (root / SHARDS).iterdir():
        if path.name not in listed and OWN_SHARD_FILE.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)


def package_version() -> str:
    """chunkforge's version."""
    from . import __version__

    return __version__


def read_dataset(out: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """All rows of a dataset folder, in corpus order (the manifest's shards, in order).

    >>> read_dataset("vectors", columns=["doc_id", "vector"]).num_rows  # doctest: +SKIP
    24682
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(out)
    files = list(iter_shards(root))
    if not files:
        manifest = read_manifest(root)
        spec = JobSpec(dtype=manifest["vector_dtype"], with_text=manifest["with_text"])
        return shard_schema(manifest["model"]["dim"], spec, {}).empty_table()
    tables = []
    for f in files:
        try:
            tables.append(pq.read_table(f, columns=columns, page_checksum_verification=True))
        except (OSError, ValueError) as exc:
            raise InputError(f"{f} is damaged ({exc}); rerun the job to rebuild it") from exc
    return pa.concat_tables(tables)


def iter_shards(out: str | os.PathLike[str]) -> Iterator[Path]:
    """The shard files of a finished dataset, in corpus order."""
    root = Path(out)
    for entry in read_manifest(root)["shards"]:
        yield root / entry["file"]


# ---------------------------------------------------------------- command line


def add_parser(commands: Any) -> None:
    """The ``embed-docs`` command."""
    cmd = commands.add_parser(
        "embed-docs",
        help="chunk and embed documents into a Parquet dataset (incremental, resumable)",
        description="Chunk and embed documents into the dataset folder --out: Parquet shards of one row per "
        "chunk (doc_id, chunk_id, start, end, token_count, heading_path, [text], text_hash, vector) and "
        "manifest.json. A rerun re-embeds only what changed and resumes after a crash.",
    )
    cmd.add_argument(
        "paths",
        nargs="+",
        metavar="DOCS",
        help="a text file, a folder (its .md/.txt/.rst/.adoc files), a .jsonl/.jsonl.gz file, "
        "a Parquet file or folder of Parquet files, or - (JSONL on stdin)",
    )
    cmd.add_argument("--out", required=True, metavar="DATASET", help="dataset folder (created, or updated in place)")
    cmd.add_argument(
        "--model", default="default", metavar="DIR|default", help="model folder, or `default` (all-MiniLM-L6-v2)"
    )
    cmd.add_argument(
        "--variant",
        choices=VARIANTS,
        default="auto",
        help="auto: the fastest that keeps cosine >= 0.9999 to fp32 on this machine (bf16 on OpenVINO where the CPU has it); "
        "else the graph variant (default auto)",
    )
    cmd.add_argument("--strategy", choices=STRATEGIES, default="recursive", help="how to cut (default recursive)")
    cmd.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="token limit per chunk (default: the model's window, 254 for all-MiniLM-L6-v2)",
    )
    cmd.add_argument(
        "--overlap",
        type=int,
        default=0,
        metavar="N",
        help="tokens repeated between chunks; sentences for --strategy sentence (default 0)",
    )
    cmd.add_argument(
        "--id-column",
        metavar="NAME",
        help="document id field of JSONL records and Parquet rows (default: doc_id, else id)",
    )
    cmd.add_argument(
        "--text-column",
        default="text",
        metavar="NAME",
        help="document text field of JSONL records and Parquet rows (default text)",
    )
    cmd.add_argument(
        "--index",
        action="store_true",
        help="write what chunkforge's index needs instead of plain chunks: every document's tree (sections, "
        "parents, leaves), its text and metadata, and a row with a vector per leaf (chunkforge.Index.from_dataset, "
        "the LanceDB store); --strategy, --max-tokens and --overlap do not apply",
    )
    cmd.add_argument(
        "--leaf-tokens", type=int, default=48, metavar="N", help="with --index: tokens per leaf (default 48)"
    )
    cmd.add_argument(
        "--parent-tokens",
        default="256",
        metavar="N[,N...]",
        help="with --index: tokens of the parent levels, largest first, or '' for none (default 256)",
    )
    cmd.add_argument("--with-text", action="store_true", help="store each chunk's text in the rows")
    cmd.add_argument("--float16", action="store_true", help="store vectors as float16 (default float32)")
    cmd.add_argument(
        "--lancedb",
        metavar="URI",
        help="also write the rows to this LanceDB database (table chunks; with --index, the store that "
        "chunkforge.Index.open and `chunkforge query` serve: leaves, parents, docs, commits), updated incrementally",
    )
    cmd.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="chunk and embed on a Ray cluster: its address, `auto`, or `local` for a new local one",
    )
    cmd.add_argument("--ray-actors", type=int, metavar="N", help="encoder actors on Ray (default: one per GPU, else 2)")
    cmd.add_argument(
        "--on-overflow",
        choices=("warn", "truncate", "error"),
        default="warn",
        help="chunks longer than the model's window: truncate with a warning (default), quietly, or stop",
    )
    cmd.add_argument(
        "--max-batch-tokens",
        type=int,
        metavar="N",
        help="padded tokens per encoder batch (default: 2048 with OpenVINO, 512 on CPU, 16384 on GPU)",
    )
    cmd.add_argument(
        "--shard-docs",
        type=int,
        default=SHARD_DOCS,
        metavar="N",
        help=f"mean documents per shard (default {SHARD_DOCS})",
    )
    cmd.add_argument("--threads", type=int, metavar="N", help="chunker and ONNX Runtime threads (default: all cores)")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    cmd.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def parent_tokens(value: str) -> tuple[int, ...]:
    """``--parent-tokens``: comma-separated sizes."""
    try:
        return tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as exc:
        raise InputError(f"--parent-tokens must be integers separated by commas, not {value!r}") from exc


def run_command(args: Any) -> str:
    """The ``embed-docs`` command; returns the summary line, raises InputError on bad input."""
    if args.ray_actors is not None and args.ray_actors < 1:
        raise InputError(f"--ray-actors must be >= 1, got {args.ray_actors}")
    spec = JobSpec(
        model=args.model,
        variant=args.variant,
        strategy=args.strategy,
        max_tokens=args.max_tokens,
        overlap=args.overlap,
        with_text=args.with_text,
        dtype="float16" if args.float16 else "float32",
        id_column=args.id_column,
        text_column=args.text_column,
        on_overflow=args.on_overflow,
        max_batch_tokens=args.max_batch_tokens,
        threads=args.threads,
        shard_docs=args.shard_docs,
        units="tree" if args.index else "chunks",
        leaf_tokens=args.leaf_tokens,
        parent_tokens=parent_tokens(args.parent_tokens),
    )
    for name, value in (
        ("max-tokens", args.max_tokens),
        ("max-batch-tokens", args.max_batch_tokens),
        ("threads", args.threads),
        ("shard-docs", args.shard_docs),
    ):
        if value is not None and value < 1:
            raise InputError(f"--{name} must be >= 1, got {value}")
    if args.overlap < 0:
        raise InputError(f"--overlap must be >= 0, got {args.overlap}")
    try:
        check_threads(args.threads)
    except ValueError as exc:
        raise InputError(f"--{exc}") from exc
    summary = run(
        args.paths,
        args.out,
        spec=spec,
        progress=False if args.no_progress else None,
        lancedb=args.lancedb,
        ray=args.ray,
        ray_actors=args.ray_actors,
    )
    return summary.line()
