"""Blocks of a document's text that answer as a whole: a list (a run of lines each starting
with a marker: ``-``, ``*``, ``1.``, ``(a)``, ``2.3``), a table (a run of lines holding ``|``
or tabs) or a fenced code block, each with the lines before it in its paragraph (a list's
lead-in: "We may make deductions only for:"); with ``clauses=True`` also a numbered clause of
several paragraphs (a line opening with a number, ``3.`` or ``2.1.``, and every line after it
that is blank or indented deeper, as a specification's fields and sections are laid out).
The document trees know sections, parents and sentences but not these;
``benches/retrieval_defaults.py`` measures sending the whole block of a hit that lies in one
(issue 41, item 4; neither kind adopted, so not in the library).

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
_CLAUSE = re.compile(r"([ \t]*)\d+(?:\.\d+)*\.?[ \t]+\S")


def _is_block(lines: list[str]) -> bool:
    """A paragraph of at least two list items or two table rows."""
    items = sum(1 for line in lines if _ITEM.match(line))
    rows = sum(1 for line in lines if _ROW.match(line))
    return items >= 2 or rows >= 2


def clause_spans(text: str) -> list[tuple[int, int]]:
    """Numbered clauses of two paragraphs or more: a line opening with a number (``3.``,
    ``2.1.``) at some indentation, with the lines after it that are blank or indented deeper;
    the innermost of nested ones first.

    >>> text = "1. Fields\\n\\n   2. flag: one byte.\\n\\n      bit 1: set.\\n\\n   3. end\\n"
    >>> [text[s:e] for s, e in clause_spans(text)]
    ['2. flag: one byte.\\n\\n      bit 1: set.', '1. Fields\\n\\n   2. flag: one byte.\\n\\n      bit 1: set.\\n\\n   3. end']
    """
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    found = []
    for i, line in enumerate(lines):
        m = _CLAUSE.match(line)
        if m is None:
            continue
        indent = len(m.group(1).expandtabs())
        last, paragraphs, gap = i, 1, False
        for j in range(i + 1, len(lines)):
            if not lines[j].strip():
                gap = True
                continue
            if len(lines[j]) - len(lines[j].lstrip()) <= indent:
                break
            last, paragraphs, gap = j, paragraphs + gap, False
        if paragraphs >= 2:
            found.append((starts[i] + len(m.group(1)), starts[last] + len(lines[last].rstrip())))
    return sorted(found, key=lambda se: se[1] - se[0])


def block_spans(text: str, clauses: bool = False) -> np.ndarray:
    """``(n, 2)`` ``str`` offsets ``(start, end)`` of the blocks of ``text`` in text order
    (the module's doc): fenced code, and paragraphs (runs of non-blank lines) that hold two
    list items or two table rows or more; with ``clauses``, also the numbered clauses of
    :func:`clause_spans` that overlap none of those nor a smaller clause taken before."""
    spans = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    fenced = list(spans)
    for m in _PARAGRAPH.finditer(text):
        start, end = m.start(), m.end()
        if any(s < end and start < e for s, e in fenced):
            continue
        if _is_block(text[start:end].splitlines()):
            spans.append((start, len(text[:end].rstrip())))
    if clauses:
        for s, e in clause_spans(text):
            if not any(a < e and s < b for a, b in spans):
                spans.append((s, e))
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
