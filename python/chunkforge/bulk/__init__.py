"""The bulk job: documents in, one Parquet dataset of chunk vectors out; incremental and resumable.

``run(inputs, out)`` reads files and folders (as ``chunkforge chunk`` reads them), JSONL(.gz)
files and Parquet datasets, chunks every document with the encoder's own tokenizer, embeds
the chunks and writes one row per chunk to ``out/shards/*.parquet``, listed in corpus order
by ``out/manifest.json``. From the command line: ``chunkforge embed-docs DOCS... --out DATASET``.

>>> import tempfile
>>> from chunkforge import bulk
>>> folder = tempfile.TemporaryDirectory()
>>> summary = bulk.run(["README.md", "docs/how-it-works.md"], folder.name + "/vectors", progress=False)
>>> table = bulk.read_dataset(folder.name + "/vectors")
>>> table.column_names
['doc_id', 'chunk_id', 'start', 'end', 'token_count', 'heading_path', 'text_hash', 'vector']
>>> folder.cleanup()

How it stays exact under crashes and changes:

- Documents are cut into *shard batches* by content: a batch ends after a document whose
  id hashes to 0 modulo ``shard_docs`` (or at ``readers.MAX_SHARD_DOCS`` documents / ``readers.MAX_SHARD_BYTES``),
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

The modules: :mod:`~chunkforge.bulk.spec` (what the job computes), :mod:`~chunkforge.bulk.readers`
(documents in, shard batches), :mod:`~chunkforge.bulk.shards` (names, columns, counts, reading a
dataset), :mod:`~chunkforge.bulk.cache` (the vector cache), :mod:`~chunkforge.bulk.builder`
(one shard built), :mod:`~chunkforge.bulk.local` (the job run here), :mod:`~chunkforge.bulk.ray`
and :mod:`~chunkforge.bulk.lance` (Ray actors, LanceDB output).
"""

from .._io import read_manifest
from .local import run
from .progress import JobSummary
from .shards import iter_shards, read_dataset
from .spec import JobSpec

__all__ = ["JobSpec", "JobSummary", "iter_shards", "read_dataset", "read_manifest", "run"]
