"""A client of ``chunkforge serve`` (httpx, one pooled connection per client) whose
``query`` answers as :meth:`Index.query <chunkforge.index.Index.query>` does, and
what the framework retrievers make of a passage, served or in-process.

>>> client = ServiceClient("http://127.0.0.1:8000")  # a running chunkforge serve
>>> payload = client.query("how do I install it?", k=20, budget_tokens=500)
>>> payload.version, payload.token_count <= 500
('v-000001', True)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentTypeError
from ..index import Hit
from ..index.filters import Filter
from ..index.options import ExpandOptions, search_filter, spells_search_keywords, split_keywords

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..index.options import SearchKeywords


@dataclass(frozen=True)
class ServedPassage:
    """A passage as the service returns it: the fields of :class:`~chunkforge.index.Passage`,
    with its ``text`` (``document[start:end]``) instead of the whole document, and its
    ``citation`` in its source file (pages, box or source range; None for a document no
    reader made)."""

    doc_id: str
    start: int
    end: int
    token_count: int
    score: float
    heading_path: tuple[str, ...]
    text: str
    hits: tuple[Hit, ...]
    citation: dict[str, Any] | None = None


@dataclass(frozen=True)
class ServedPayload:
    """Passages, the hits the budget left out and the passages' documents' metadata (by
    ``doc_id``), from the index ``version``; ``abstained``: no passage, the question's best
    match scored under the query's ``floor``."""

    version: str
    passages: list[ServedPassage]
    dropped: list[Hit] = field(default_factory=list)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    abstained: bool = False

    @property
    def token_count(self) -> int:
        return sum(p.token_count for p in self.passages)


class ServiceError(RuntimeError):
    """An answer of the service other than 200: its status and ``detail``."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"chunkforge serve answered {status}: {detail}")
        self.status = status
        self.detail = detail


class ServiceClient:
    """Calls a running ``chunkforge serve`` at ``url``; ``timeout`` in seconds."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        import httpx

        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, timeout=timeout)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        response = self._http.post(path, json=body)
        if response.status_code != 200:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text
            raise ServiceError(response.status_code, detail)
        return response.json()

    @spells_search_keywords
    def search(self, query: str, k: int = 12, **keywords: Unpack[SearchKeywords]) -> list[Hit]:
        """``POST /search``: as :meth:`Index.search <chunkforge.index.Index.search>` (the filters
        narrowed here into one request; the service may narrow them further)."""
        passes, hybrid = search_filter(keywords)
        body = {"query": query, "k": k, **passes.as_request(), **({} if hybrid is None else {"hybrid": hybrid})}
        return [_hit(h) for h in self._post("/search", body)["hits"]]

    def expand(
        self,
        hits: Iterable[Hit],
        options: ExpandOptions | None = None,
        /,
        *,
        filter: Filter | None = None,
        **given: Any,
    ) -> ServedPayload:
        """``POST /expand``: hits from :meth:`search` to a payload, as :meth:`Index.expand
        <chunkforge.index.Index.expand>` (``filter`` is the service's to hold: a client cannot
        narrow what its hits open, so passing one is an error)."""
        if filter is not None:
            raise ArgumentTypeError(
                ": the service holds /expand to its own filters; search with the filter instead", param="filter"
            )
        body = {"hits": [_hit_body(h) for h in hits], **_options_body(ExpandOptions.of(options, **given))}
        return _served_payload(self._post("/expand", body))

    @spells_search_keywords
    def query(
        self,
        question: str,
        k: int | None = None,
        *,
        options: ExpandOptions | None = None,
        floor: float | None = None,
        **given: Any,
    ) -> ServedPayload:
        """``POST /query``: :meth:`search`'s filters and the expansion options of
        :meth:`Index.expand <chunkforge.index.Index.expand>`; ``budget_tokens`` 1,000 unless given;
        ``floor`` as for :meth:`Index.query <chunkforge.index.Index.query>`."""
        keywords, given = split_keywords(given)
        passes, hybrid = search_filter(keywords)
        chosen = ExpandOptions.recommended(options, **given)
        body = {
            "question": question,
            **({} if k is None else {"k": k}),
            **({} if hybrid is None else {"hybrid": hybrid}),
            **({} if floor is None else {"floor": floor}),
            **passes.as_request(),
            **_options_body(chosen),
            "budget_tokens": chosen.budget_tokens,
        }
        return _served_payload(self._post("/query", body))

    def close(self) -> None:
        self._http.close()


def _hit(h: dict[str, Any]) -> Hit:
    return Hit(**{**h, "heading_path": tuple(h["heading_path"])})


def _hit_body(h: Hit) -> dict[str, Any]:
    fields = ("doc_id", "start", "end", "score", "text", "heading_path", "id", "leaf")
    return {f: list(h.heading_path) if f == "heading_path" else getattr(h, f) for f in fields}


def _options_body(options: ExpandOptions) -> dict[str, Any]:
    """The expansion options a request carries (``max_chars`` is the service's own)."""
    return {k: v for k, v in options.given().items() if k != "max_chars"}


def _served_payload(answer: dict[str, Any]) -> ServedPayload:
    passages = [
        ServedPassage(
            p["doc_id"],
            p["start"],
            p["end"],
            p["token_count"],
            p["score"],
            tuple(p["heading_path"]),
            p["text"],
            tuple(_hit(h) for h in p["hits"]),
            p.get("citation"),
        )
        for p in answer["passages"]
    ]
    return ServedPayload(
        answer["version"],
        passages,
        [_hit(h) for h in answer["dropped"]],
        answer.get("metadata", {}),
        bool(answer.get("abstained", False)),
    )


def retrieve(index: Any, question: str, k: int | None, expansion: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The framework retrievers' common part: the text of each passage of ``index.query`` (an
    :class:`~chunkforge.index.Index` or a :class:`ServiceClient`) and its metadata:
    ``doc_id``, ``start``, ``end`` (offsets into the document's text), ``token_count``,
    ``score``, ``heading_path``, ``hit_ids`` (the stable ids of the leaves it covers), its
    ``citation`` in its source file when a reader made its document (PDF pages, HTML source
    range) and, when served, the index ``version``."""
    return passage_records(index.query(question, **({} if k is None else {"k": k}), **expansion))


def passage_records(payload: Any) -> list[tuple[str, dict[str, Any]]]:
    """The text and metadata of each passage of a payload (see :func:`retrieve`)."""
    version = getattr(payload, "version", None)
    out = []
    for p in payload.passages:
        meta: dict[str, Any] = {
            "doc_id": p.doc_id,
            "start": p.start,
            "end": p.end,
            "token_count": p.token_count,
            "score": p.score,
            "heading_path": list(p.heading_path),
            "hit_ids": [h.id for h in p.hits],
        }
        citation = getattr(p, "citation", None)  # served; in process, the payload cites it
        if citation is None and callable(getattr(payload, "citation", None)):
            found = payload.citation(p)
            citation = None if found is None else found.as_dict()
        if citation is not None:
            meta["citation"] = citation
        if version is not None:
            meta["version"] = version
        out.append((p.text, meta))
    return out


def connect(index: Any) -> Any:
    """A :class:`ServiceClient` for a URL (``http://...``), else ``index`` itself (an in-process index)."""
    return ServiceClient(index) if isinstance(index, str) else index
