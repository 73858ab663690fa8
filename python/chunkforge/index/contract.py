"""The index contract: what every index answers, in memory (:class:`~chunkforge.index.Index`),
from a LanceDB store (:class:`~chunkforge.index.store.StoreIndex`) or over HTTP
(:class:`~chunkforge.serve.client.ServiceClient`). The service, ``eval`` and the framework
retrievers take any :class:`Retriever`.

- ``search(query, k, **keywords)``: the best leaves (:class:`~chunkforge.index.Hit`), of the
  documents the filters pass (:class:`~chunkforge.index.filters.Filter`); its keywords are
  :class:`~chunkforge.index.options.SearchKeywords` (``doc_id``, ``source``, ``heading_prefix``,
  ``where``, ``hybrid``, ``filter``), defined once;
- ``expand(hits, options, /, *, filter, **given)``: hits (or spans found elsewhere) to a
  payload, as the :class:`~chunkforge.index.options.ExpandOptions` say;
- ``query(question, k, *, <search's filters>, floor, options, **given)``: both, with the
  recommended options for what is not given; an empty payload under the ``floor``.

``SEARCH_PARAMETERS``, ``EXPAND_PARAMETERS`` and ``QUERY_PARAMETERS`` name each method's
keywords; ``tests/test_layout.py`` checks every implementation against them.

>>> sorted(SEARCH_PARAMETERS)
['doc_id', 'filter', 'heading_prefix', 'hybrid', 'k', 'query', 'source', 'where']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .options import SEARCH_NAMES

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .filters import Filter
    from .options import ExpandOptions, SearchKeywords
    from .payload import Hit

SEARCH_PARAMETERS = frozenset({"query", "k", *SEARCH_NAMES})
"""The parameters of ``search``: the query, ``k`` and :class:`~chunkforge.index.options.SearchKeywords`."""
EXPAND_PARAMETERS = frozenset({"hits", "options", "filter", "given"})
"""The parameters of ``expand`` (``given``: the options by name)."""
QUERY_PARAMETERS = (SEARCH_PARAMETERS - {"query"}) | {"question", "floor", "options", "given"}
"""The parameters of ``query``: search's filters, the ``floor`` under which it abstains, then
the expansion's."""


@runtime_checkable
class Retriever(Protocol):
    """An index: ``search``, ``expand`` and ``query`` (see the module)."""

    def search(self, query: str, k: int = ..., **keywords: Unpack[SearchKeywords]) -> list[Hit]: ...

    def expand(
        self, hits: Any, options: ExpandOptions | None = ..., /, *, filter: Filter | None = ..., **given: Any
    ) -> Any: ...

    def query(self, question: str, k: int = ..., **options: Any) -> Any: ...
