"""Blocks of a document's text that answer as a whole: a list (a run of lines each starting
with a marker: ``-``, ``*``, ``1.``, ``(a)``, ``2.3``), a table (a run of lines holding ``|``
or tabs) or a fenced code block, each with the lines before it in its paragraph (a list's
lead-in: "We may make deductions only for:"). The document trees know sections, parents and
sentences but not these; ``benches/retrieval_defaults.py`` measures sending the whole block
of a hit that lies in one (issue 41, item 4; not adopted, so not in the library).

>>> text = "Intro.\\n\\nSteps:\\n1. Open it.\\n2. Close it.\\n\\nEnd."
>>> [text[s:e] for s, e in block_spans(text).tolist()]
['Steps:\\n1. Open it.\\n2. Close it.']
"""

from __future__ import annotations

import re

import numpy as np

_ITEM = re.compile(r"[ \t]*(?:[-*+\u2022\u2013]|\d+(?:\.\d+)*[.)]?|\(?[a-zA-Z0-9]{1,4}\)|[a-z][.)])[ \t]+\S")
_ROW = re.compile(r"[^\n]*(?:\|[^\n]*\||\t[^\n]*\t)")
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.S | re.M)
_PARAGRAPH = re.compile(r"(?:[^\n]*\S[^\n]*(?:\n|$))+")


def _is_block(lines: list[str]) -> bool:
    """A paragraph of at least two list items or two table rows."""
    items = sum(1 for line in lines if _ITEM.match(line))
    rows = sum(1 for line in lines if _ROW.match(line))
    return items >= 2 or rows >= 2


def block_spans(text: str) -> np.ndarray:
    """``(n, 2)`` ``str`` offsets ``(start, end)`` of the blocks of ``text`` in text order
    (the module's doc): fenced code, and paragraphs (runs of non-blank lines) that hold two
    list items or two table rows or more."""
    spans = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    fenced = list(spans)
    for m in _PARAGRAPH.finditer(text):
        start, end = m.start(), m.end()
        if any(s < end and start < e for s, e in fenced):
            continue
        if _is_block(text[start:end].splitlines()):
            spans.append((start, len(text[:end].rstrip())))
    spans.sort()
    return np.array(spans, np.int64).reshape(-1, 2)


def leaf_blocks(blocks: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The block of each leaf (``starts``, ``ends`` in text order): the index of the block
    that holds it whole, -1 for a leaf in none.

    >>> leaf_blocks(np.array([[5, 20]]), np.array([0, 5, 12, 20]), np.array([4, 11, 20, 30])).tolist()
    [-1, 0, 0, -1]
    """
    out = np.full(len(starts), -1, np.int64)
    if len(blocks) == 0:
        return out
    at = np.searchsorted(blocks[:, 0], starts, "right") - 1
    ok = (at >= 0) & (ends <= blocks[np.maximum(at, 0), 1])
    out[ok] = at[ok]
    return out
