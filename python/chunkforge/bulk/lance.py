"""The bulk job's rows in LanceDB (embedded, Arrow-native: no server): ``pip install "chunkforge[lancedb]"``.

:func:`write_lancedb` copies a finished dataset folder into the table ``chunks`` of a LanceDB
database, streaming one shard at a time. The table is replaced as a whole: LanceDB commits
the new version atomically, so a reader sees the old rows or the new ones, never a mix,
and a crash leaves the previous version in place (the next run writes it again).

>>> import tempfile, lancedb, chunkforge
>>> folder = tempfile.TemporaryDirectory()
>>> summary = chunkforge.bulk.run(["docs/cli.md"], folder.name + "/vectors", progress=False)
>>> write_lancedb(folder.name + "/vectors", folder.name + "/vectors.lancedb") == summary.rows
True
>>> table = lancedb.connect(folder.name + "/vectors.lancedb").open_table("chunks")
>>> query = chunkforge.Encoder.default().embed_query("how do errors name a flag?")
>>> hits = table.search(query).metric("cosine").limit(5).to_list()
>>> len(hits), sorted(hits[0])[:4]
(5, ['_distance', 'chunk_id', 'doc_id', 'end'])
>>> folder.cleanup()
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..errors import InputError
from .shards import iter_shards, read_dataset

TABLE = "chunks"
LANCEDB_EXTRA = 'pip install "chunkforge[lancedb]"'


def write_lancedb(dataset: str | os.PathLike[str], database: str | os.PathLike[str], table: str = TABLE) -> int:
    """Writes every row of the dataset folder ``dataset`` (see :mod:`chunkforge.bulk`) to the
    table ``table`` of the LanceDB database at ``database``, replacing it; returns the row count."""
    try:
        import lancedb
    except ImportError as exc:
        raise InputError(f": needs lancedb: {LANCEDB_EXTRA}", param="lancedb") from exc
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = list(iter_shards(dataset))
    schema = read_dataset(dataset).schema if not files else pq.read_schema(files[0])
    schema = schema.remove_metadata()

    def batches() -> Iterator[pa.RecordBatch]:
        for path in files:
            table = pq.read_table(path, page_checksum_verification=True)
            yield from table.replace_schema_metadata(None).to_batches()

    try:
        db = lancedb.connect(os.fspath(database))
        written = db.create_table(table, pa.RecordBatchReader.from_batches(schema, batches()), mode="overwrite")
    except (OSError, ValueError, RuntimeError) as exc:
        raise InputError(f"{database}: cannot write it ({exc})", param="lancedb") from exc
    return written.count_rows()
