"""The service's JSON bodies (pydantic models): the requests mirror the keyword
arguments of :meth:`Index.search <chunkforge.index.Index.search>` and
:meth:`Index.expand <chunkforge.index.Index.expand>`, with bounds, and every
answer names the index version it came from.

>>> QueryRequest(question="how do I install it?").budget_tokens
1000
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic_core import PydanticCustomError

from .._recommended import RECOMMENDED
from ..index.options import SEARCH_NAMES, ExpandOptions

MAX_K = 1000
"""The most leaves one request may retrieve."""
MAX_TEXT = 10_000
"""The longest question, in characters."""
MAX_ITEMS = 1000
"""The most hits, document ids, sources or headings in one request."""


Scalar = str | int | float | bool | None
"""A metadata value a filter names."""


def lone_surrogate(value: Any, at: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """Where in a request's values a string holds a lone surrogate (JSON's ``"\\ud800"``: it has
    no UTF-8 form), or None.

    >>> lone_surrogate({"question": "ok", "where": {"acl": ["x", "\\ud800"]}})
    ('where', 'acl', 1)
    """
    if isinstance(value, str):
        return None if value.isascii() or not any("\ud800" <= c <= "\udfff" for c in value) else at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        for found in (lone_surrogate(key, (*at, key)), lone_surrogate(item, (*at, key))):
            if found is not None:
                return found
    return None


class Strict(BaseModel):
    """A request body: unknown fields are an error (a misspelt option is not ignored), values
    are not coerced (``true`` is not a number, ``"3"`` not a count), numbers are finite (no
    ``NaN``, no ``Infinity``) and strings valid Unicode (no lone surrogate: an error of type
    ``lone_surrogate`` whose ``ctx["loc"]`` is where in the body)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        at = lone_surrogate(data)
        if at is not None:
            where = ".".join(map(str, at))
            raise PydanticCustomError(
                "lone_surrogate", "{where} holds a lone surrogate (not valid Unicode)", {"where": where, "loc": at}
            )
        return data


class Filters(Strict):
    """Which leaves a search may return (as :meth:`Index.search <chunkforge.index.Index.search>`)."""

    k: int = Field(RECOMMENDED["k"], ge=1, le=MAX_K, description="leaves to retrieve")
    doc_id: str | list[str] | None = Field(None, description="only these documents", max_length=MAX_ITEMS)
    source: str | list[str] | None = Field(None, description="only these sources", max_length=MAX_ITEMS)
    heading_prefix: list[str] | None = Field(
        None, description="only sections whose heading path starts with these titles", max_length=MAX_ITEMS
    )
    hybrid: bool | None = Field(None, description="BM25 fused with the cosines (default: the index's setting)")
    where: dict[str, Scalar | list[Scalar]] | None = Field(
        None,
        max_length=MAX_ITEMS,
        description="only documents whose metadata field has this value, or one of these values, for each field "
        '(as `Index.search(where=...)`: {"acl": "public", "year": [2023, 2024]})',
    )

    def search_options(self) -> dict[str, Any]:
        """The keyword arguments of ``search``: ``k`` and the search keywords the service takes
        (all of :data:`~chunkforge.index.options.SEARCH_NAMES` but a ``Filter`` object, which
        JSON cannot carry; ``where`` only when given)."""
        options = self.model_dump(include={"k", *WIRE_SEARCH_NAMES} - {"where"})
        if self.where is not None:
            options["where"] = self.where
        return options


WIRE_SEARCH_NAMES = tuple(name for name in SEARCH_NAMES if name != "filter")
"""The search keywords a request carries (a ``Filter`` is the server's: ``--pin-where`` and the
filter header make it)."""


def _expansion_field(name: str, default: Any = dataclasses.MISSING) -> Any:
    """The pydantic field of an expansion option: its bounds and description as
    :class:`~chunkforge.index.options.ExpandOptions` defines them."""
    option = next(f for f in dataclasses.fields(ExpandOptions) if f.name == name)
    meta = dict(option.metadata)
    description = meta.pop("description")
    return Field(option.default if default is dataclasses.MISSING else default, description=description, **meta)


class _Expansion(Strict):
    def expand_options(self) -> ExpandOptions:
        """The options as ``expand`` takes them."""
        return ExpandOptions.of(None, **self.model_dump(include=set(EXPANSION_FIELDS)))


EXPANSION_FIELDS = {
    name: (hint, _expansion_field(name))
    for name, hint in typing.get_type_hints(ExpandOptions).items()
    if name != "max_chars"  # the service's own limit (Settings.max_answer_chars)
}
"""The request fields of the expansion options (all of :class:`ExpandOptions` but ``max_chars``)."""

if typing.TYPE_CHECKING:
    Expansion = _Expansion
else:
    Expansion = create_model(
        "Expansion",
        __base__=_Expansion,
        __doc__="How hits become passages (as :meth:`Index.expand <chunkforge.index.Index.expand>`).",
        **EXPANSION_FIELDS,
    )


class SearchRequest(Filters):
    """``POST /search``: the best leaves for a query."""

    query: str = Field(min_length=1, max_length=MAX_TEXT)


class QueryRequest(Filters, Expansion):
    """``POST /query``: search then expand, ``budget_tokens`` 1,000 unless given (as
    ``Index.query``)."""

    question: str = Field(min_length=1, max_length=MAX_TEXT)
    budget_tokens: int | None = _expansion_field("budget_tokens", RECOMMENDED["budget_tokens"])
    floor: float | None = Field(
        RECOMMENDED["floor"],
        ge=-1,
        le=1,
        description="no passage (abstained) when the best cosine of the question with a hit leaf is under it",
    )

    def expand_options(self) -> ExpandOptions:
        """The options as ``Index.query`` takes them: those given, the recommended ones for the rest."""
        given = self.model_dump(include=set(EXPANSION_FIELDS) & (self.model_fields_set | {"budget_tokens"}))
        return ExpandOptions.recommended(None, **given)


class HitModel(Strict):
    """A retrieved leaf, as ``/search`` returns it; offsets index the document's text in code points."""

    doc_id: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    score: float
    text: str
    heading_path: list[str]
    id: str
    leaf: int = Field(ge=0, description="the leaf's label in the index version it came from")


class ExpandRequest(Expansion):
    """``POST /expand``: hits (from ``/search``) in, a payload out."""

    hits: list[HitModel] = Field(max_length=MAX_ITEMS)
    version: str | None = Field(
        None, description="the version the hits came from; 409 when the service now answers from another"
    )


class PassageModel(BaseModel):
    """A span of one document: ``text == document[start:end]``, ``token_count`` its exact size."""

    doc_id: str
    start: int
    end: int
    token_count: int
    score: float
    heading_path: list[str]
    text: str
    hits: list[HitModel]
    citation: dict[str, Any] | None = Field(
        None,
        description="where the passage came from in its source file, for documents read from HTML, PDF, DOCX "
        'or Docling\'s JSON: {"format", "pages", "bbox", "source", "items"} (only what it has)',
    )


class SearchResponse(BaseModel):
    version: str
    hits: list[HitModel]
    omitted: int = Field(0, description="best hits left out because the answer would pass its size limit")


class PayloadResponse(BaseModel):
    """Passages (no character twice) and the hits the budget left out."""

    version: str
    token_count: int
    passages: list[PassageModel]
    dropped: list[HitModel]
    omitted: int = Field(0, description="dropped hits left out because the answer would pass its size limit")
    metadata: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="each passage's document's metadata (its record's other fields), by doc_id"
    )
    abstained: bool = Field(False, description="no passage: the question's best match scored under the floor")


class HealthResponse(BaseModel):
    """``ok`` while the index answers (status 200); ``unavailable`` with the reason (status 503)
    when its source is gone or damaged (a store deleted under the service)."""

    status: Literal["ok", "unavailable"]
    version: str
    detail: str | None = None


class StatsResponse(BaseModel):
    version: str
    documents: int | None = Field(description="documents in the index (null: the index does not say)")
    leaves: int | None
    reloads: int = Field(description="versions switched to since the start")
    uptime_s: float
    in_flight: int
    requests: dict[str, int] = Field(description="answered requests by path")


class ErrorResponse(BaseModel):
    detail: str
