"""The bulk job run from this process: :func:`run` checks its inputs, holds the dataset
folder, plans the shard batches, builds the missing shards here (or on Ray, see
:mod:`chunkforge.bulk.ray`), then writes the manifest and removes shards it does not list.

>>> run([], "vectors")
Traceback (most recent call last):
...
chunkforge.errors.InputError: inputs: none given
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._dataset import FORMAT, DatasetManifest, ShardEntry
from .._io import MANIFEST, STDIN, atomic_file, check_paths
from ..errors import InputError
from .builder import Chunked, ShardBuilder
from .cache import reuse_sources
from .fingerprint import model_fingerprint, vectors_key
from .progress import JobSummary, Progress
from .readers import count_docs
from .shards import (
    Planned,
    ShardStats,
    own_shards_only,
    plan,
    recorded_hashes,
    remove_unlisted,
    shard_dir,
    shard_entry,
    shard_stats,
    with_hashes,
)
from .spec import JobSpec

if TYPE_CHECKING:
    from ..encoder import Encoder

BULK_EXTRA = 'pip install "chunkforge[embed,parquet]"'


def run(
    inputs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    spec: JobSpec | None = None,
    encoder: Encoder | None = None,
    lancedb: str | os.PathLike[str] | None = None,
    ray: str | None = None,
    ray_actors: int | None = None,
    progress: bool | str | None = None,
    **options: Any,
) -> JobSummary:
    """Chunks and embeds every document of ``inputs`` into the dataset folder ``out``
    (created if missing; a rerun updates it incrementally, see :mod:`chunkforge.bulk`).

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
    ``progress``: show a bar (default: when stderr is a terminal); ``"log"``: a bar on a
    terminal, else a plain progress line on stderr every 30 s (what ``embed-docs`` passes).

    >>> import tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> from chunkforge.bulk import read_dataset
    >>> s = run(["docs/how-it-works.md"], folder.name, max_tokens=128, with_text=True, progress=False)
    >>> s.rows == read_dataset(folder.name).num_rows
    True
    >>> folder.cleanup()

    Raises InputError (one line, naming the parameter or file) on bad input.
    """
    if "reuse" in options and isinstance(options["reuse"], (list, tuple)):
        options["reuse"] = tuple(os.fspath(p) for p in options["reuse"])
    spec = JobSpec(**{**(asdict(spec) if spec else {}), **options})
    spec.check()
    if ray_actors is not None and (isinstance(ray_actors, bool) or not isinstance(ray_actors, int) or ray_actors < 1):
        raise InputError(f"must be >= 1 (an integer), not {ray_actors!r}", param="ray_actors")
    if ray is not None and encoder is not None:
        raise InputError(": name the model (model=, variant=), not an encoder: each actor loads its own", param="ray")
    paths = [os.fspath(p) for p in inputs]
    if not paths:
        raise InputError(": none given", param="inputs")
    check_paths(paths)
    reuse_sources(spec.reuse)
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise InputError(f"the bulk job writes Parquet and needs pyarrow: {BULK_EXTRA}") from exc
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise InputError(f"{root} is a file, not a dataset folder", param="out")
    if root.is_dir() and any(root.iterdir()) and not (root / MANIFEST).exists() and not own_shards_only(root):
        raise InputError(
            f"{root} is a folder that holds no chunkforge dataset; give a new or empty folder", param="out"
        )
    check_out_apart(root, paths)
    with dataset_lock(root):
        return run_locked(paths, root, spec, encoder, lancedb, ray, ray_actors, progress)


def check_out_apart(root: Path, inputs: list[str]) -> None:
    """InputError when ``out`` lies inside an input folder (the next run would read its own
    shards as documents) or an input lies inside ``out``."""
    resolved = root.resolve()
    for path in inputs:
        if path == STDIN:
            continue
        given = Path(path).resolve()
        if given.is_dir() and resolved.is_relative_to(given):
            raise InputError(f"{root} is inside the input folder {path}; write the dataset elsewhere", param="out")
        if given.is_relative_to(resolved):
            raise InputError(f"{root} holds the input {path}; give the documents, not the dataset", param="out")


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
        raise InputError(f"{root}: cannot write it ({exc.strerror or exc})", param="out") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{root}: another job is writing this dataset; wait for it to end", param="out") from None
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
    progress: bool | str | None,
) -> JobSummary:
    """:func:`run` once the dataset folder is held."""
    started = time.perf_counter()
    encoder = encoder or spec.encoder()
    chunker = spec.chunker_config(encoder)
    if spec.tree is None:
        spec.chunkers(encoder)  # bad chunker parameters fail here, before any work (or any Ray actor)
    try:
        shard_dir(root).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{root}: cannot write it ({exc.strerror or exc})", param="out") from exc
    fingerprint = model_fingerprint(encoder)
    vectors = vectors_key(fingerprint, spec.dtype)
    settings = json.dumps([FORMAT, vectors, chunker, spec.with_text, spec.id_column, spec.text_column, spec.shard_docs])
    summary = JobSummary(out=str(root))
    shards: list[dict[str, Any]] = []
    show = sys.stderr.isatty() if progress is None or progress == "log" else bool(progress)
    with Progress(progress if progress == "log" else show, summary) as bar:
        if show or progress == "log":
            threading.Thread(target=count_for_eta, args=(bar, paths, spec), daemon=True).start()
        known = recorded_hashes(root)
        planned = plan(paths, spec, settings, root, known)
        if ray is None:
            build_locally(planned, ShardBuilder(spec, root, vectors, encoder), bar, shards)
        else:
            from .ray import build_on_ray

            build_on_ray(planned, spec, root, vectors, ray, ray_actors, bar, shards)
    manifest = DatasetManifest(
        root,
        model={
            "name": spec.model,
            "variant": encoder.variant if spec.model == "default" else None,
            "fingerprint": fingerprint,
            "graph": encoder.graph.name,
            "dim": encoder.dim,
            "max_length": encoder.max_length,
            "pooling": encoder.pooling,
            "normalize": encoder.normalize,
        },
        units=spec.units,
        chunker=chunker,
        vector_dtype=spec.dtype,
        with_text=spec.with_text,
        docs=summary.docs,
        rows=summary.rows,
        tokens=summary.tokens,
        shards=tuple(ShardEntry.of(root / MANIFEST, with_hashes(root, e, known), spec.units == "tree") for e in shards),
        chunkforge_version=package_version(),
        columns={"id": spec.id_column, "text": spec.text_column},
    ).checked()
    try:
        with atomic_file(root / MANIFEST, param="out") as tmp:
            tmp.write_text(json.dumps(manifest.as_dict(), indent=1) + "\n", encoding="utf-8")
    except OSError as exc:  # a full disk: the file is named
        raise InputError(f"cannot write {root / MANIFEST}: {exc.strerror or exc}") from exc
    remove_unlisted(root, shards)
    if lancedb is not None:  # the store (units="tree") or the table of chunks
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
                stats = shard_stats(builder.root, item)
            else:
                table, embedded, embedded_tokens = builder.embed(batch)
                if written is not None:
                    written.result()  # one shard in flight at most; its error surfaces here
                written = writer.submit(builder.write, item.key, table, batch.docs)
                stats = ShardStats.of(len(item.docs), table, embedded, embedded_tokens)
            shards.append(shard_entry(item.key, stats, builder.spec))
            bar.update(stats, batch is not None)
        if written is not None:
            written.result()


def count_for_eta(bar: Progress, paths: list[str], spec: JobSpec) -> None:
    """Sets the bar's total to the number of documents (on a side thread; a bad input is
    reported by the job itself)."""
    try:
        bar.set_total(count_docs(paths, spec))
    except Exception:  # noqa: BLE001 - the reader names the bad file
        return


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


def package_version() -> str:
    """chunkforge's version."""
    from .. import __version__

    return __version__
