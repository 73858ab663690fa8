"""The bulk job's rows in LanceDB (embedded, Arrow-native: no server): ``pip install "chunkforge[lancedb]"``.

:func:`write_lancedb` copies a finished dataset folder into the table ``chunks`` of a LanceDB
database, streaming one shard at a time (a tree dataset, ``units="tree"``, becomes the index's
store instead, see :mod:`chunkforge.index.store`). The table is replaced as a whole: LanceDB
commits the new version atomically, so a reader sees the old rows or the new ones, never a mix,
and a crash leaves the previous version in place (the next run writes it again). It is the one
LanceDB writer, :func:`chunkforge.index.store_write.write_lancedb`, named here for the bulk job.

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

from ..index.store_write import TABLE, write_lancedb

LANCEDB_EXTRA = 'pip install "chunkforge[lancedb]"'

__all__ = ["LANCEDB_EXTRA", "TABLE", "write_lancedb"]
