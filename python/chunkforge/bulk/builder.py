"""The bulk job's shard builder: chunks, tokenizes and embeds a batch of documents into its
shard table, and writes it. The local job and each Ray actor run this same code.

>>> import tempfile
>>> from chunkforge.bulk.readers import Doc
>>> from chunkforge.bulk.spec import JobSpec
>>> folder = tempfile.TemporaryDirectory()
>>> (Path(folder.name) / "shards").mkdir()
>>> builder = ShardBuilder(JobSpec(max_tokens=64), folder.name, vectors="")
>>> builder.build("0" * 32, [Doc("a", "Some text.", 10)]).rows
1
>>> folder.cleanup()
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._dataset import shard_schema
from .._io import Doc, atomic_file, text_hash
from ..chunkers import node_id
from ..errors import InputError
from .cache import VECTORS_METADATA, VectorCache
from .shards import ShardStats, shard_dir, shard_path, trees_path
from .spec import JobSpec

if TYPE_CHECKING:
    import pyarrow as pa

    from ..encoder import Encoder


class Chunked(NamedTuple):
    """A batch chunked and tokenized, ready to embed: its row columns and token ids (and with
    ``units="tree"``, the documents' trees)."""

    columns: dict[str, list[Any]]
    token_ids: list[np.ndarray]
    docs: pa.Table | None = None


class ShardBuilder:
    """Chunks, tokenizes and embeds batches of documents into shard tables, and writes them.
    The local job and each Ray actor run this same code, so their rows are the same."""

    def __init__(
        self, spec: JobSpec, out: str | os.PathLike[str], vectors: str, encoder: Encoder | None = None
    ) -> None:
        self.spec = spec
        self.encoder = encoder or spec.encoder()
        self.chunkers = spec.chunkers(self.encoder) if spec.tree is None else None
        self.root = Path(out)
        self.shard_dir = shard_dir(self.root)
        self.vectors = vectors
        self.cache = VectorCache(self.shard_dir, vectors, spec.reuse)
        self.schema = shard_schema(
            self.encoder.dim, spec.dtype, spec.with_text, spec.units == "tree", {VECTORS_METADATA.decode(): vectors}
        )
        self.tree = spec.tree
        if self.tree is not None:
            from ..index.prefix import LeafPrefixer
            from ..index.trees import scratch_expander

            self.expander = scratch_expander(self.encoder.tokenizer)
            self.prefixer = LeafPrefixer.for_encoder(self.encoder) if self.tree.search_prefix else None

    def chunk(self, docs: list[Doc]) -> Chunked:
        """The rows of a batch without their vectors, and each chunk's token ids (with
        ``units="tree"``, each leaf's, and the documents' trees)."""
        if self.tree is not None:
            from ..index.trees import cut

            level = len(self.tree.parent_tokens) + 1
            leaves = cut(self.expander, docs, self.tree, level, self.prefixer, self.spec.threads)
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
                raise InputError.of(exc) from exc  # its parameter (on_overflow) kept
        tokens = sum(len(chunked.token_ids[i]) for i in missing.tolist())
        flat = pa.array(vectors.reshape(-1), getattr(pa, self.spec.dtype)())
        arrays = [pa.array(chunked.columns[name], self.schema.field(name).type) for name in self.schema.names[:-1]]
        table = pa.Table.from_arrays([*arrays, pa.FixedSizeListArray.from_arrays(flat, dim)], schema=self.schema)
        return table, len(missing), tokens

    def write(self, key: str, table: pa.Table, docs: pa.Table | None = None) -> None:
        """The shard of ``key``, written atomically (after its docs table, with ``units="tree"``:
        a shard that exists has its trees)."""
        import pyarrow.parquet as pq

        for path, content in ((trees_path(self.root, key), docs), (shard_path(self.root, key), table)):
            if content is None:
                continue
            try:
                with atomic_file(path, param="out") as tmp:
                    pq.write_table(content, tmp, write_page_checksum=True)
            except OSError as exc:  # a full disk: the file is named
                raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc

    def build(self, key: str, docs: list[Doc]) -> ShardStats:
        """Chunks, embeds and writes one batch's shard (what a Ray actor does per batch)."""
        chunked = self.chunk(docs)
        table, embedded, embedded_tokens = self.embed(chunked)
        self.write(key, table, chunked.docs)
        return ShardStats.of(len(docs), table, embedded, embedded_tokens)
