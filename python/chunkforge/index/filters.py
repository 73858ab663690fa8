"""Which documents a search, an expansion or a query may touch: one :class:`Filter`, one
meaning in memory and in the store, every argument narrowing it.

A document passes when each part given holds: its id is one of ``doc_id``, its ``source``
field one of ``source``, and for each ``where`` field its value equals one of the values
given. Equality is JSON's, with numbers compared as numbers: ``1`` matches ``1`` and
``1.0`` but not ``true``; ``"1"`` only ``"1"``; ``None`` (JSON ``null``) matches a field that
is null or missing; a list or object value matches nothing. ``source=x`` is ``where={"source":
x}``. Two filters together (:meth:`Filter.narrow`: a request's own and the one a deployment
pins) pass what both pass, so no argument ever widens another.

>>> f = Filter.of(where={"acl": ["public", "staff"]}).narrow(Filter.of(source="pub", where={"acl": "public"}))
>>> f.admits("a.md", {"acl": "public", "source": "pub"}), f.admits("b.md", {"acl": "staff", "source": "pub"})
(True, False)
>>> Filter.of(where={"acl": 1}).admits("a", {"acl": True}), Filter.of(where={"n": 1}).admits("a", {"n": 1.0})
(False, True)
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

SCALARS = (str, int, float, bool)
"""The metadata values a filter can name (and ``None``)."""
TAGS_VERSION = 2
"""How the store writes a document's filter tags (:func:`tags_of`); a store written with
another version cannot be filtered (its tags mean something else) and is written anew."""


class FilterError(InputError, TypeError):
    """A filter argument that is not one (a TypeError, for callers that expect one); ``param``
    names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f": {message}", param=param)


def value_key(value: Any) -> str | None:
    """A metadata value's canonical form, what equality compares: JSON, integral numbers
    without a fraction (``1.0`` is ``1``), None for a value a filter never matches (a list,
    an object, a number that is not finite).

    >>> value_key("a"), value_key(True), value_key(1.0), value_key(1.5), value_key(None), value_key([1])
    ('"a"', 'true', '1', '1.5', 'null', None)
    """
    if value is None or isinstance(value, (bool, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)
    return None


def _keys(param: str, value: Any) -> frozenset[str]:
    values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
    keys = set()
    for v in values:
        if v is not None and not isinstance(v, SCALARS):
            raise FilterError(param, f"must be a str, number, bool or None, or a list of them, not {v!r}")
        key = value_key(v)
        if key is None:
            raise FilterError(param, f"{v!r} is not a finite number")
        keys.add(key)
    return frozenset(keys)


def _strings(param: str, value: str | Collection[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if (
        not isinstance(values, Collection)
        or isinstance(values, (bytes, Mapping))
        or not all(isinstance(v, str) for v in values)
    ):
        raise FilterError(param, f"must be a str or a list of str, not {value!r}")
    return frozenset(values)


@dataclass(frozen=True)
class Filter:
    """Which documents pass (see the module): ``doc_ids`` (None: any), ``where`` (field ->
    canonical values, :func:`value_key`; ``source`` is the field ``"source"``) and
    ``heading_prefix`` (leaves of sections whose heading path starts with it; the in-memory
    index only). Make one with :meth:`of`, which checks the arguments."""

    doc_ids: frozenset[str] | None = None
    where: Mapping[str, frozenset[str]] | None = None
    heading_prefix: tuple[str, ...] | None = None

    @classmethod
    def of(
        cls,
        *,
        doc_id: str | Collection[str] | None = None,
        source: str | Collection[str] | None = None,
        where: Mapping[str, Any] | None = None,
        heading_prefix: Sequence[str] | None = None,
    ) -> Filter:
        """The filter of ``search``'s arguments (errors name the argument: :class:`FilterError`).

        >>> sorted(Filter.of(source="docs", where={"year": [2023, 2024.0]}).where["year"])
        ['2023', '2024']
        """
        checked: dict[str, frozenset[str]] = {}
        if where is not None:
            if not isinstance(where, Mapping):
                raise FilterError(
                    "where", f"must be a mapping of metadata fields to values, not {type(where).__name__}"
                )
            for name, value in where.items():
                if not isinstance(name, str):
                    raise FilterError("where", f"field names must be str, not {name!r}")
                checked[name] = _keys(f"where[{name!r}]", value)
        sources = _strings("source", source)
        if sources is not None:
            keys = frozenset(json.dumps(s, ensure_ascii=False) for s in sources)  # value_key of a str
            checked["source"] = checked["source"] & keys if "source" in checked else keys
        prefix = None
        if heading_prefix is not None:
            if isinstance(heading_prefix, str) or not all(isinstance(h, str) for h in heading_prefix):
                raise FilterError("heading_prefix", f"must be a sequence of str, not {heading_prefix!r}")
            prefix = tuple(heading_prefix)
        return cls(_strings("doc_id", doc_id), checked if where is not None or sources is not None else None, prefix)

    @property
    def everything(self) -> bool:
        """True when nothing is filtered."""
        return self.doc_ids is None and self.where is None and self.heading_prefix is None

    @property
    def nothing(self) -> bool:
        """True when no document can pass (an empty list of ids or of values, or two
        heading prefixes that exclude each other)."""
        return (
            (self.doc_ids is not None and not self.doc_ids)
            or (self.where is not None and any(not keys for keys in self.where.values()))
            or self.heading_prefix == _NO_SECTION
        )

    def narrow(self, other: Filter | None) -> Filter:
        """What passes both filters."""
        if other is None or other.everything:
            return self
        if self.everything:
            return other
        ids = (
            other.doc_ids
            if self.doc_ids is None
            else self.doc_ids & other.doc_ids
            if other.doc_ids is not None
            else self.doc_ids
        )
        where: dict[str, frozenset[str]] | None = None
        if self.where is not None or other.where is not None:
            where = dict(self.where or {})
            for name, keys in (other.where or {}).items():
                where[name] = where[name] & keys if name in where else keys
        return Filter(ids, where, _narrower(self.heading_prefix, other.heading_prefix))

    def as_request(self) -> dict[str, Any]:
        """The filter as a request to the service names it (``doc_id``, ``where``,
        ``heading_prefix``; ``source`` is the field ``"source"`` of ``where``).

        >>> Filter.of(source="docs", where={"year": 2024}).as_request()
        {'where': {'year': [2024], 'source': ['docs']}}
        """
        out: dict[str, Any] = {}
        if self.doc_ids is not None:
            out["doc_id"] = sorted(self.doc_ids)
        if self.where is not None:
            out["where"] = {
                name: sorted((json.loads(k) for k in keys), key=json.dumps) for name, keys in self.where.items()
            }
        if self.heading_prefix is not None:
            out["heading_prefix"] = list(self.heading_prefix)
        return out

    def admits(self, doc_id: str, metadata: Mapping[str, Any]) -> bool:
        """Whether the document ``doc_id`` with ``metadata`` passes (its heading prefix aside)."""
        if self.doc_ids is not None and doc_id not in self.doc_ids:
            return False
        return self.where is None or all(value_key(metadata.get(name)) in keys for name, keys in self.where.items())

    def sql(self) -> str | None:
        """The store's predicate for this filter's documents (over the leaves' and parents'
        ``doc_id`` and ``tags``, see :func:`tags_of`); None when it passes every document.

        >>> print(Filter.of(doc_id="a.md", where={"acl": ["public", "it's"], "x": None}).sql())
        doc_id IN ('a.md') AND array_has_any(tags, ['"acl"="it''s"', '"acl"="public"']) AND (array_has_any(tags, ['"x"=null']) OR NOT array_has_any(tags, ['has:"x"']))
        """
        clauses = []
        if self.doc_ids is not None:
            clauses.append("doc_id IN (" + ", ".join(sql_quote(d) for d in sorted(self.doc_ids)) + ")")
        for name, keys in (self.where or {}).items():
            if not keys:
                clauses.append("false")
                continue
            tags = "array_has_any(tags, [" + ", ".join(sql_quote(_tag(name, k)) for k in sorted(keys)) + "])"
            if "null" in keys:  # or the field is missing
                tags = f"({tags} OR NOT array_has_any(tags, [{sql_quote(_present(name))}]))"
            clauses.append(tags)
        return " AND ".join(clauses) or None


_NO_SECTION: tuple[str, ...] = ("\0",)
"""The heading prefix of a filter whose two prefixes exclude each other (no heading is NUL)."""


def _narrower(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if a is None or b is None:
        return a if b is None else b
    longer, shorter = (a, b) if len(a) >= len(b) else (b, a)
    return longer if longer[: len(shorter)] == shorter else _NO_SECTION


def sql_quote(text: str) -> str:
    """``text`` as a string literal of LanceDB's SQL filters.

    >>> print(sql_quote("it's"))
    'it''s'
    """
    return "'" + text.replace("'", "''") + "'"


def _tag(name: str, key: str) -> str:
    return f"{json.dumps(name, ensure_ascii=False)}={key}"


def _present(name: str) -> str:
    return f"has:{json.dumps(name, ensure_ascii=False)}"


def tags_of(metadata: Mapping[str, Any]) -> list[str]:
    """A document's filter tags in the store: each field's presence (``has:"field"``) and,
    for a scalar value, ``"field"=<value_key>``.

    >>> tags_of({"acl": "public", "year": 2024.0, "authors": ["a", "b"]})
    ['has:"acl"', '"acl"="public"', 'has:"authors"', 'has:"year"', '"year"=2024']
    """
    tags = []
    for name, value in sorted(metadata.items()):
        tags.append(_present(name))
        key = value_key(value) if value is None or isinstance(value, SCALARS) else None
        if key is not None:
            tags.append(_tag(name, key))
    return tags


def filter_of(
    filter: Filter | None,
    doc_id: str | Collection[str] | None = None,
    source: str | Collection[str] | None = None,
    where: Mapping[str, Any] | None = None,
    heading_prefix: Sequence[str] | None = None,
) -> Filter:
    """``filter`` narrowed by ``search``'s keyword filters (what every index method takes)."""
    given = Filter.of(doc_id=doc_id, source=source, where=where, heading_prefix=heading_prefix)
    return given.narrow(filter) if filter is not None else given
