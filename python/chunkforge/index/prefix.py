"""The search prefix: a document's title and a leaf's heading path, put before what search
sees of the leaf (its vector, its BM25 passage's words). The leaf's span and offsets do not
change: the prefix is representation, not payload.

A document's title is its record's ``title`` field, when it is a string; the heading path is
the leaf's section's, from the document's own headings. ``benches/retrieval_buckets.py``
measured it on the dev set (``benches/results/retrieval-buckets.md``).

>>> prefix_text("Guide", ["Install", "Linux"])
'Guide > Install > Linux'
>>> prefixed("Guide > Install", "Run it.")
'Guide > Install\\n\\nRun it.'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..tokenizer import Tokenizer

if TYPE_CHECKING:
    from ..encoder import Encoder

PREFIX_TOKENS = 64
"""The most tokens of a leaf's prefix (fewer when the leaf and the prefix would not fit the
encoder's ``max_length``); a longer prefix keeps its start, the title first."""


def title_of(metadata: Mapping[str, Any]) -> str:
    """A document's title: its record's ``title`` field when that is a string, else ``""``.

    >>> title_of({"title": "Guide"}), title_of({"title": 3})
    ('Guide', '')
    """
    title = metadata.get("title")
    return title.strip() if isinstance(title, str) else ""


def prefix_text(title: str, heading_path: Sequence[str]) -> str:
    """The title and the headings, the empty ones left out, joined by ``" > "``."""
    return " > ".join(part for part in (title, *heading_path) if part)


def prefixed(prefix: str, text: str) -> str:
    """``text`` as search sees it: after its prefix and a blank line (alone with no prefix)."""
    return f"{prefix}\n\n{text}" if prefix else text


def passage_texts(
    text: str, spans: np.ndarray, sections: np.ndarray, headings: Sequence[Sequence[str]], title: str | None
) -> list[str]:
    """The BM25 texts of a document's passages (``spans`` rows ``(start, end)``, each in
    section ``sections[i]``), each after its prefix (``title=None``: no prefix, the text alone).

    >>> passage_texts("# A\\n\\nRun it.", np.array([[5, 12]]), np.array([0]), [["A"]], "Guide")
    ['Guide > A\\n\\nRun it.']
    """
    if title is None:
        return [text[start:end] for start, end in spans.tolist()]
    return [
        prefixed(prefix_text(title, headings[section]), text[start:end])
        for (start, end), section in zip(spans.tolist(), sections.tolist())
    ]


class LeafPrefixer:
    """Puts each leaf's prefix token ids before its own, on ``tokenizer`` (the encoder's),
    so that a leaf and its prefix fit ``max_length`` tokens with ``specials`` added; each
    distinct prefix is tokenized once.

    >>> tok = Tokenizer.default()
    >>> leaf = np.array(tok.encode_offsets("Run it.").ids)
    >>> [ids] = LeafPrefixer(tok, 256, 2).leaf_ids([leaf], np.array([0]), [["Install"]], "Guide")
    >>> ids.tolist() == list(tok.encode_offsets("Guide > Install\\n\\nRun it.").ids)
    True
    """

    def __init__(self, tokenizer: Tokenizer, max_length: int, specials: int) -> None:
        self.tokenizer = tokenizer
        self.room = max_length - specials

    @classmethod
    def for_encoder(cls, encoder: Encoder) -> LeafPrefixer:
        """The prefixer of what ``encoder`` embeds."""
        return cls(encoder.tokenizer, encoder.max_length, sum(encoder.special_token_counts))

    def leaf_ids(
        self, leaf_ids: Sequence[np.ndarray], sections: np.ndarray, headings: Sequence[Sequence[str]], title: str
    ) -> list[np.ndarray]:
        """Each leaf's ids (leaf ``i`` in section ``sections[i]``) after its prefix's."""
        known: dict[int, np.ndarray] = {}
        out = []
        for ids, section in zip(leaf_ids, sections.tolist()):
            head = known.get(section)
            if head is None:
                text = prefix_text(title, headings[section])
                encoded = self.tokenizer.encode_offsets(prefixed(text, "")).ids[:PREFIX_TOKENS] if text else ()
                head = known[section] = np.asarray(encoded, np.uint32)
            keep = max(0, min(len(head), self.room - len(ids)))
            out.append(np.concatenate([head[:keep], np.asarray(ids, head.dtype)]) if keep else ids)
        return out
