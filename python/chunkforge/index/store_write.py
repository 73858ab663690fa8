"""The store's writer: :func:`write_store` brings a LanceDB store up to date with the bulk job's
tree dataset (see :mod:`chunkforge.index.store` for its tables and commits), and
:func:`write_lancedb`, the one LanceDB writer of the bulk job (``--lancedb``), writes a tree
dataset as the store and a dataset of plain chunks as one table, ``chunks``."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._dataset import DatasetManifest, ShardEntry
from ..errors import ArgumentError, InputError
from ..tokenizer import Tokenizer
from .bm25 import BM25
from .filters import TAGS_VERSION, tags_of
from .prefix import passage_texts, title_of
from .store_side import build_side
from .store_tables import (
    COMMITS,
    DOCS,
    LEAVES,
    PARENTS,
    _lancedb,
    is_local,
    last_commit,
    parent_key,
    schemas,
    table_names,
)
from .trees import TreeSettings, passages, read_docs, read_shard

if TYPE_CHECKING:
    import pyarrow as pa

ANN_MIN_ROWS = 65536
"""Leaves from which the ``leaves`` table gets an ANN index (below, an exact scan is as fast)."""
ANN_PARTITION_ROWS = 4096
"""Leaves per IVF partition. LanceDB's ``optimize`` joins smaller partitions (measured: 264
partitions of 265 rows became 3), so ``sqrt(rows)`` partitions, smaller than this below 16M
rows, collapsed into a few large ones that every query scans whole."""
AnnIndex = Literal["IVF_PQ", "IVF_HNSW_SQ"]
ANN_INDEXES: tuple[AnnIndex, ...] = ("IVF_PQ", "IVF_HNSW_SQ")
TABLE = "chunks"
"""The table a dataset of plain chunks (not ``units="tree"``) is written to."""
_DELETE_KEYS = 256  # shard keys per delete statement
_ADD_ROWS = 262144  # leaves (and their parents and documents) added per commit


def _shard_rows(
    root: Path, entry: ShardEntry, schemas: dict[str, pa.Schema], settings: TreeSettings, tokenizer: Tokenizer | None
) -> dict[str, pa.Table]:
    """The rows one shard of a tree dataset (cut with ``settings``) puts in each table (its
    files' checksums checked first); with ``tokenizer``, each document's words (see
    :func:`words_column`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key = Path(entry.file).name.split(".")[0]
    leaves = read_shard(entry.verified(root), ["doc_id", "passage", "vector"])
    trees_file = entry.verified(root, "trees")
    trees = read_shard(trees_file)
    try:
        docs = read_docs(trees, str(trees_file))
    except ValueError as exc:
        raise InputError(f"{exc}; rerun the job") from exc
    counts = [len(d.tree.leaves) for d in docs]
    if sum(counts) != leaves.num_rows or len(docs) != entry.docs:
        raise InputError(f"{root / entry.file}: its leaves do not match its trees; rerun the job")
    tags = [tags_of(d.metadata) for d in docs]
    vectors = leaves.column("vector").combine_chunks()
    if vectors.type.value_type != pa.float32():
        vectors = pc.cast(vectors, pa.list_(pa.float32(), vectors.type.list_size))
    parent_rows: dict[str, list[Any]] = {"doc_id": [], "passage": [], "tags": [], "terms": []}
    for doc, doc_tags in zip(docs, tags):
        found = passages(doc.tree.nodes, doc.tree.leaves)
        title = title_of(doc.metadata) if settings.search_prefix else None
        texts = passage_texts(doc.text, found.spans, found.sections, doc.tree.headings, title)
        parent_rows["doc_id"] += [doc.doc_id] * len(texts)
        parent_rows["passage"] += list(range(len(texts)))
        parent_rows["tags"] += [doc_tags] * len(texts)
        parent_rows["terms"] += [" ".join(BM25.words(t)) for t in texts]
    shard = pa.array([key] * leaves.num_rows, pa.string())
    leaf_docs, leaf_passages = leaves.column("doc_id").to_pylist(), leaves.column("passage").to_pylist()
    return {
        LEAVES: pa.Table.from_arrays(
            [
                leaves.column("doc_id"),
                pa.array([i for n in counts for i in range(n)], pa.int32()),
                pa.array(leaf_passages, pa.int32()),
                pa.array([parent_key(d, p) for d, p in zip(leaf_docs, leaf_passages)], pa.int64()),
                shard,
                pa.array([t for t, n in zip(tags, counts) for _ in range(n)], pa.list_(pa.string())),
                vectors,
            ],
            schema=schemas[LEAVES],
        ),
        PARENTS: pa.table(
            {
                **parent_rows,
                "parent": [parent_key(d, p) for d, p in zip(parent_rows["doc_id"], parent_rows["passage"])],
                "shard": [key] * len(parent_rows["doc_id"]),
            }
        )
        .select(schemas[PARENTS].names)
        .cast(schemas[PARENTS]),
        DOCS: trees.append_column("shard", pa.array([key] * trees.num_rows, pa.string()))
        .append_column("words", words_column([d.text for d in docs], tokenizer))
        .select(schemas[DOCS].names)
        .cast(schemas[DOCS]),
    }


def words_column(texts: list[str], tokenizer: Tokenizer | None) -> pa.Array:
    """Each text's words as ``tokenizer`` counts them, saved (:meth:`Tokenizer.words
    <chunkforge.Tokenizer.words>`): what the native expander takes to add the text without
    tokenizing it again. Null for a text the tokenizer does not count word by word, and for
    every text without a tokenizer."""
    import pyarrow as pa

    if tokenizer is None:
        return pa.nulls(len(texts), pa.binary())
    return pa.array(tokenizer.words(texts), pa.binary())


@contextlib.contextmanager
def _writing(uri: str) -> Iterator[None]:
    """Holds a local store for one writer (an advisory lock on its folder, released by the system
    when the writer dies, kill -9 included); a second writer stops at once with an InputError.
    A store on object storage has no such lock: LanceDB refuses the second writer's commit."""
    if not is_local(uri):
        yield
        return
    folder = Path(uri.removeprefix("file://"))
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"--lancedb {uri}: another job is writing this store; wait for it") from None
        yield
    finally:
        os.close(fd)


def write_store(
    dataset: str | os.PathLike[str],
    uri: str | os.PathLike[str],
    *,
    ann_min_rows: int = ANN_MIN_ROWS,
    ann_partitions: int | None = None,
    ann_index: AnnIndex = "IVF_PQ",
    tokenizer: Tokenizer | None = None,
    side: bool = True,
) -> int:
    """Brings the store at ``uri`` up to date with the tree dataset ``dataset`` (``embed-docs
    --index``); returns the new commit's version. Only the shards that changed are deleted or
    added; a store already up to date gets no new commit. From ``ann_min_rows`` leaves the
    vectors get an ANN index of the type ``ann_index`` (``"IVF_PQ"``, smaller; ``"IVF_HNSW_SQ"``)
    with ``ann_partitions`` IVF partitions (default: one per :data:`ANN_PARTITION_ROWS` leaves).
    ``tokenizer``: the dataset's, whose words of each document the store keeps so that a reader
    need not tokenize it again (default: the default model's, for a dataset of that model).
    ``side``: build the commit's side indexes (:func:`~chunkforge.index.store_side.build_side`,
    a local store only), which its readers search in place of LanceDB's.

    >>> import tempfile
    >>> from chunkforge import bulk
    >>> folder = tempfile.TemporaryDirectory()
    >>> vectors, store = f"{folder.name}/vectors", f"{folder.name}/store.lancedb"
    >>> _ = bulk.run(["docs/how-it-works.md"], vectors, units="tree", progress=False)
    >>> write_store(vectors, store), write_store(vectors, store)  # the second: nothing changed, no new commit
    (1, 1)
    >>> folder.cleanup()
    """
    if ann_index not in ANN_INDEXES:
        raise ArgumentError(f"must be one of {', '.join(ANN_INDEXES)}, not {ann_index!r}", param="ann_index")
    with _writing(os.fspath(uri)):
        return _write_store(dataset, uri, ann_min_rows, ann_partitions, ann_index, tokenizer, side)


def _write_store(
    dataset: str | os.PathLike[str],
    uri: str | os.PathLike[str],
    ann_min_rows: int,
    ann_partitions: int | None,
    ann_index: AnnIndex,
    tokenizer: Tokenizer | None,
    side: bool,
) -> int:
    """:func:`write_store` with the store held."""
    lancedb = _lancedb()
    root = Path(dataset)
    manifest = DatasetManifest.read(root)
    if manifest.units != "tree":
        raise InputError(f"{root} holds plain chunks; build it with `embed-docs --index` for the store")
    settings = json.dumps({"tree": manifest.chunker, "model": manifest.model, "tags": TAGS_VERSION}, sort_keys=True)
    columns = schemas(manifest.model["dim"])
    try:
        tree_settings = TreeSettings.from_dict(manifest.chunker)
        tree_settings.check()
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{root / 'manifest.json'}: bad chunker settings ({exc}); rerun the job") from exc
    db = lancedb.connect(os.fspath(uri))
    commit = last_commit(db)
    if commit is not None and commit["settings"] != settings:
        raise InputError(f"the store {uri} was written with other settings or another model; give a new store")
    import pyarrow as pa

    words_of = tokenizer or (Tokenizer.default() if manifest.model.get("name") == "default" else None)
    tables = {}
    for name in (LEAVES, PARENTS, DOCS):
        if name in table_names(db):
            table = db.open_table(name)
            if commit is None or table.version != commit[name]:  # a killed update's rows, or an orphan table
                if commit is None:
                    table = db.create_table(name, schema=columns[name], mode="overwrite")
                else:
                    table.restore(commit[name])
        else:
            table = db.create_table(name, schema=columns[name])
        tables[name] = table
    if "words" not in tables[DOCS].schema.names:  # a store written before documents kept their words
        columns[DOCS] = pa.schema([f for f in columns[DOCS] if f.name != "words"])
    before = set(json.loads(commit["shards"])) if commit is not None else set()
    entries = {Path(e.file).name.split(".")[0]: e for e in manifest.shards}

    gone = sorted(before - set(entries))
    new = [key for key in entries if key not in before]
    if not gone and not new and commit is not None:
        if side:  # a commit written without its side gets it
            build_side(uri, commit)
        return int(commit["version"])
    for at in range(0, len(gone), _DELETE_KEYS):
        keys = ", ".join(f"'{k}'" for k in gone[at : at + _DELETE_KEYS])
        for table in tables.values():
            table.delete(f"shard IN ({keys})")
    block: dict[str, list[pa.Table]] = {name: [] for name in tables}
    for at, key in enumerate(new):
        for name, rows in _shard_rows(root, entries[key], columns, tree_settings, words_of).items():
            block[name].append(rows)
        if sum(t.num_rows for t in block[LEAVES]) >= _ADD_ROWS or at == len(new) - 1:
            for name, table in tables.items():  # one commit per table and block
                table.add(pa.concat_tables(block[name]))
                block[name] = []
    _index(tables, ann_min_rows, ann_partitions, ann_index)
    version = (int(commit["version"]) if commit is not None else 0) + 1
    row = {
        "version": version,
        **{name: tables[name].version for name in (LEAVES, PARENTS, DOCS)},
        "shards": json.dumps(sorted(entries)),
        "settings": settings,
        "written": time.time(),
    }
    commits = (
        db.open_table(COMMITS) if COMMITS in table_names(db) else db.create_table(COMMITS, schema=columns[COMMITS])
    )
    if side:  # before the commit: a reader that sees it finds its side
        build_side(uri, row)
    commits.add(pa.Table.from_pylist([row], schema=columns[COMMITS]))
    return version


def _index(tables: dict[str, Any], ann_min_rows: int, ann_partitions: int | None, ann_index: AnnIndex) -> None:
    """The indexes: full text on the parents (rebuilt), label lists on the tags, B-trees on the
    docs' ids and the leaves' parents, and ``ann_index`` (cosine) on the leaves' vectors from
    ``ann_min_rows`` leaves; the other existing indexes take the new rows (``optimize``)."""
    from lancedb import index as lancedb_index

    leaves, parents, docs = tables[LEAVES], tables[PARENTS], tables[DOCS]
    names = {t: {i.name for i in tables[t].list_indices()} for t in tables}
    if parents.count_rows():
        # the terms are the in-memory BM25's own (BM25.words), so its tokenizer only splits them;
        # built anew on every update, as an index that took rows in place scores by other statistics
        terms_only = lancedb_index.FTS(
            base_tokenizer="whitespace",
            lower_case=False,
            stem=False,
            remove_stop_words=False,
            ascii_folding=False,
            max_token_length=None,
        )
        parents.create_index("terms", replace=True, config=terms_only)
    if "tags_idx" not in names[PARENTS] and parents.count_rows():
        parents.create_index("tags", config=lancedb_index.LabelList())
    if "parent_idx" not in names[PARENTS] and parents.count_rows():
        parents.create_index("parent", config=lancedb_index.BTree())
    if not names[DOCS] and docs.count_rows():
        docs.create_index("doc_id", config=lancedb_index.BTree())
    rows = leaves.count_rows()
    has_ann = any("vector" in n for n in names[LEAVES])
    if "tags_idx" not in names[LEAVES] and rows:
        leaves.create_index("tags", config=lancedb_index.LabelList())
        leaves.create_index("parent", config=lancedb_index.BTree())
    for table in tables.values():
        if table.count_rows():
            table.optimize()
    if not has_ann and rows >= ann_min_rows:  # after optimize, which would join its partitions
        partitions = ann_partitions or max(rows // ANN_PARTITION_ROWS, 1)
        config = (
            lancedb_index.IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=_sub_vectors(leaves))
            if ann_index == "IVF_PQ"
            else lancedb_index.HnswSq(distance_type="cosine", num_partitions=partitions)
        )
        leaves.create_index("vector", config=config)


def _sub_vectors(leaves: Any) -> int:
    """PQ sub-vectors: 8 dimensions each (48 for 384)."""
    dim = leaves.schema.field("vector").type.list_size
    return next(d for d in (dim // 8, dim // 4, dim // 2, 1) if d and dim % d == 0)


def write_lancedb(dataset: str | os.PathLike[str], uri: str | os.PathLike[str], table: str = TABLE) -> int:
    """The bulk job's one LanceDB writer (``--lancedb``): a tree dataset (``embed-docs --index``)
    brings the store at ``uri`` up to date (:func:`write_store`); a dataset of plain chunks
    replaces the table ``table`` of the database at ``uri`` with its rows, one shard at a
    time (LanceDB commits the new version atomically: a reader sees the old rows or the new
    ones, and a crash leaves the previous version). Returns the rows the dataset put there
    (its leaves or its chunks). One writer at a time, as for the store.

    >>> import tempfile
    >>> from chunkforge import bulk
    >>> folder = tempfile.TemporaryDirectory()
    >>> vectors = f"{folder.name}/vectors"
    >>> summary = bulk.run(["docs/how-it-works.md"], vectors, progress=False)  # plain chunks
    >>> write_lancedb(vectors, f"{folder.name}/vectors.lancedb") == summary.rows
    True
    >>> folder.cleanup()
    """
    manifest = DatasetManifest.read(dataset)
    if manifest.units == "tree":
        write_store(dataset, uri)
        return manifest.rows
    lancedb = _lancedb()
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(dataset)
    files = [entry.verified(root) for entry in manifest.shards]
    schema = pq.read_schema(files[0]).remove_metadata() if files else manifest.schema()

    def batches() -> Iterator[pa.RecordBatch]:
        for path in files:
            yield from pq.read_table(path, page_checksum_verification=True).replace_schema_metadata(None).to_batches()

    with _writing(os.fspath(uri)):
        try:
            db = lancedb.connect(os.fspath(uri))
            written = db.create_table(table, pa.RecordBatchReader.from_batches(schema, batches()), mode="overwrite")
        except (OSError, ValueError, RuntimeError) as exc:
            raise InputError(f"{uri}: cannot write it ({exc})", param="lancedb") from exc
        return int(written.count_rows())
