"""Chunking and embedding on Ray Data, for more than one machine: ``pip install "chunkforge[ray]"``.

:func:`embed_documents` turns a ``ray.data.Dataset`` of documents into a Dataset of chunk
rows with vectors (the columns of the bulk job's shards, :mod:`chunkforge.bulk.shards`): ``map_batches`` with
a pool of actors, each loading the encoder once (and taking ``num_gpus`` GPUs where the
cluster has GPUs). ``chunkforge.bulk.run(..., ray=ADDRESS)`` (``chunkforge embed-docs
--ray ADDRESS``) runs the bulk job's shard batches on such actors: each actor builds whole
shards with the same code as the local job, so the dataset is the same, row for row and
bit for bit, and stays incremental and resumable. A killed actor is restarted by Ray and
its batch retried; shards are written atomically under content names, so a batch built
twice is written twice with the same bytes and listed once.

>>> import ray, chunkforge.bulk.ray
>>> docs = ray.data.read_parquet("s3://bucket/docs/")  # a bucket  # doctest: +SKIP
>>> rows = chunkforge.bulk.ray.embed_documents(docs, id_column="id", text_column="text", max_tokens=256)  # on the bucket  # doctest: +SKIP
>>> rows.write_parquet("s3://bucket/vectors/")  # a bucket  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._io import FORMAT_KEY, ID_KEYS, MAIN_CONTENT_KEY, Doc, record_doc
from ..errors import InputError
from .builder import ShardBuilder
from .progress import Progress
from .shards import Planned, ShardStats, shard_entry, shard_exists, shard_stats
from .spec import JobSpec

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

RAY_EXTRA = 'pip install "chunkforge[ray]"'
WINDOW_BYTES = 256 << 20


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise InputError(f": needs Ray Data: {RAY_EXTRA}", param="ray") from exc
    return ray


class ChunkRows:
    """A Ray actor: loads the encoder once, then turns each batch of documents into chunk rows."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = JobSpec(**spec)
        self.builder = ShardBuilder(self.spec, "", vectors="")

    def __call__(self, batch: pa.Table) -> pa.Table:
        names = batch.column_names
        id_column = self.spec.id_column or next((k for k in ID_KEYS if k in names), None)
        texts = batch.column(self.spec.text_column).to_pylist()
        ids = batch.column(id_column).to_pylist() if id_column in names else [None] * len(texts)
        if any(i is None for i in ids) or any(not isinstance(t, str) for t in texts):
            raise InputError(
                f"every document needs a text ({self.spec.text_column!r}) and an id "
                f"({id_column or ' or '.join(ID_KEYS)!r}); columns: {', '.join(names)}"
            )
        docs = [Doc(str(i), t, len(t)) for i, t in zip(ids, texts)]
        if FORMAT_KEY in names:  # a column saying which rows hold a source (HTML, Docling JSON) to read
            formats = batch.column(FORMAT_KEY).to_pylist()
            main = batch.column(MAIN_CONTENT_KEY).to_pylist() if MAIN_CONTENT_KEY in names else [None] * len(docs)
            docs = [
                record_doc(f"document {d.doc_id!r}", {FORMAT_KEY: f, MAIN_CONTENT_KEY: m}, d.doc_id, d.text, d.nbytes)
                if f is not None
                else d
                for d, f, m in zip(docs, formats, main)
            ]
        table, _, _ = self.builder.embed(self.builder.chunk(docs), use_cache=False)
        return table.replace_schema_metadata(None)


class ShardWorker:
    """A Ray actor of the bulk job: loads the encoder once, then builds one shard a call
    (a row holding the shard's key and its documents) and returns the shard's counts."""

    def __init__(self, spec: dict[str, Any], out: str, vectors: str) -> None:
        self.builder = ShardBuilder(JobSpec(**spec), out, vectors)

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        stats: list[ShardStats] = []
        batches = (batch.column(name).to_pylist() for name in ("key", "doc_ids", "texts", "metadata"))
        for key, ids, texts, metadata in zip(*batches):
            docs = [Doc(i, t, len(t), json.loads(m)) for i, t, m in zip(ids, texts, metadata)]
            if shard_exists(self.builder.root, key, self.builder.spec):  # built by an earlier try
                stats.append(shard_stats(self.builder.root, Planned(key, docs, True)))
            else:
                stats.append(self.builder.build(key, docs))
        columns = {"key": batch.column("key")}
        columns.update({name: pa.array([getattr(s, name) for s in stats], pa.int64()) for name in ShardStats._fields})
        return pa.table(columns)


def connect(address: str) -> Any:
    """Ray, connected to ``address`` (``"local"``: a new local cluster) unless already connected."""
    ray = _ray()
    if not ray.is_initialized():
        check_listening(address)
        try:
            # "local" is Ray's own word for a new local cluster (None would join the latest one started)
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise InputError(f"{address}: cannot connect ({exc})", param="ray") from exc
    import logging

    import ray.data

    logging.getLogger("ray.data").setLevel(logging.WARNING)  # chunkforge's own bar shows the progress
    ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


def check_listening(address: str, timeout: float = 5.0) -> None:
    """InputError, at once, when ``address`` is ``HOST:PORT`` (or ``ray://HOST:PORT``) and
    nothing accepts a connection there: Ray itself retries for minutes without a word.

    >>> check_listening("auto"), check_listening("local")
    (None, None)
    """
    where = urlsplit("//" + address.removeprefix("ray://"))
    try:
        host, port = where.hostname, where.port
    except ValueError as exc:  # a port that is not a number
        raise InputError(f"{address}: not an address ({exc})", param="ray") from exc
    if host is None or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise InputError(f"{address}: no Ray cluster answers there ({exc.strerror or exc})", param="ray") from exc


def actor_options(ray: Any, spec: JobSpec, actors: int | None) -> tuple[dict[str, Any], JobSpec]:
    """``map_batches`` options of the actor pool (one actor per GPU where there are GPUs,
    else two, each with its share of the CPUs), and the spec with that share of threads."""
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    count = actors or (gpus if gpus else 2)
    options: dict[str, Any] = {"concurrency": count, "num_cpus": 1}
    if gpus:
        options["num_gpus"] = max(gpus // count, 1) if gpus >= count else gpus / count
    elif spec.threads is None:
        per_node = max(int(resources.get("CPU", 1)) // max(len(ray.nodes()), 1), 1)
        spec = JobSpec(**{**asdict(spec), "threads": max(per_node // max(count // max(len(ray.nodes()), 1), 1), 1)})
    return options, spec


def embed_documents(
    docs: ray.data.Dataset,
    *,
    actors: int | None = None,
    batch_size: int = 64,
    spec: JobSpec | None = None,
    **options: Any,
) -> ray.data.Dataset:
    """Chunk rows with vectors of every document of ``docs`` (columns ``id_column`` and
    ``text_column``; where a ``format`` column says ``"html"`` or ``"docling"``, the row's text
    is that source, read by :mod:`chunkforge.readers`, ``main_content`` from its column): doc_id, chunk_id, start, end, token_count, heading_path, [text],
    text_hash, vector. ``options`` are :class:`chunkforge.bulk.JobSpec` fields;
    ``actors`` encoder actors (default: one per GPU, else two), ``batch_size`` documents a call.

    >>> rows = embed_documents(ray.data.from_items([{"id": "a", "text": "Some text."}]))  # starts Ray  # doctest: +SKIP
    >>> rows.take(1)[0]["chunk_id"]  # starts Ray  # doctest: +SKIP
    """
    ray = _ray()
    spec = JobSpec(**{**(asdict(spec) if spec else {}), **options})
    spec.check()
    pool, spec = actor_options(ray, spec, actors)
    return docs.map_batches(
        ChunkRows, fn_constructor_kwargs={"spec": asdict(spec)}, batch_size=batch_size, batch_format="pyarrow", **pool
    )


def windows(planned: Iterator[Planned], limit: int = WINDOW_BYTES) -> Iterator[list[Planned]]:
    """The planned batches in windows of at most ``limit`` bytes of missing documents (and
    any number of existing shards): what the driver holds at a time."""
    window: list[Planned] = []
    size = 0
    for item in planned:
        window.append(item)
        if not item.exists:
            size += sum(doc.nbytes for doc in item.docs)
        if size >= limit:
            yield window
            window, size = [], 0
    if window:
        yield window


def build_on_ray(
    planned: Iterator[Planned],
    spec: JobSpec,
    root: Path,
    vectors: str,
    address: str,
    actors: int | None,
    bar: Progress,
    shards: list[dict[str, Any]],
) -> None:
    """Builds the missing shards on Ray actors, a window of batches at a time; fills ``shards``
    (the manifest's entries, in corpus order) and the progress bar."""
    import pyarrow as pa

    ray = connect(address)
    pool, spec = actor_options(ray, spec, actors)
    out = os.fspath(root.resolve())
    for window in windows(planned):
        missing = [item for item in window if not item.exists]
        done: dict[str, ShardStats] = {}
        if missing:
            # one block a batch, made here: no task competes with the actors for CPUs
            blocks = [
                pa.table(
                    {
                        "key": [m.key],
                        "doc_ids": [[d.doc_id for d in m.docs]],
                        "texts": [[d.text for d in m.docs]],
                        "metadata": [[json.dumps(d.metadata, default=str) for d in m.docs]],
                    }
                )
                for m in missing
            ]
            results = ray.data.from_arrow(blocks).map_batches(
                ShardWorker,
                fn_constructor_kwargs={"spec": asdict(spec), "out": out, "vectors": vectors},
                batch_size=1,
                batch_format="pyarrow",
                **pool,
            )
            for row in results.iter_rows():
                stats = ShardStats(*(int(row[name]) for name in ShardStats._fields))
                done[row["key"]] = stats
                bar.update(stats, True)
        for item in window:
            if item.exists:
                stats = shard_stats(root, item)
                bar.update(stats, False)
            else:
                stats = done[item.key]
            shards.append(shard_entry(item.key, stats, spec))
