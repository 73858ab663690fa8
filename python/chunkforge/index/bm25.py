"""BM25 over passages that come and go (the index's lexical ranking)."""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence

import numpy as np

WORD = re.compile(r"(?u)\b\w\w+\b")


class BM25:
    """Okapi BM25 (Lucene's: k1 1.2, b 0.75, its idf) over passages that come and go.

    Written here rather than taken from bm25s (which scored leaves before): bm25s
    indexes a fixed collection, so every ``add``/``delete`` rebuilt it from all
    texts. Terms are bm25s's (lower-cased words of two or more characters, English
    stop words dropped). Postings are int32 arrays (8 bytes a posting), read by
    numpy without a copy; postings of removed passages stay until the index is
    rebuilt, their scores masked.

    >>> bm = BM25(); ids = bm.add(["cats purr", "dogs bark at cats", "ferns"])
    >>> [round(x, 3) for x in bm.scores("dogs").tolist()]
    [0.0, 0.814, 0.0]
    """

    K1, B = 1.2, 0.75  # LanceDB's full-text index scores so too: the store ranks as this

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.postings: list[tuple[array[int], array[int]]] = []  # per term: passage ids, term frequencies (int32)
        self.df = np.zeros(0, np.int64)
        self.lengths = np.zeros(0, np.float64)
        self.alive = np.zeros(0, bool)
        self.terms: list[np.ndarray] = []  # term ids of each passage
        self.count = 0
        self.total = 0.0
        self._norm: tuple[np.ndarray, np.ndarray] | None = None  # per passage, and the removed ids

    @property
    def size(self) -> int:
        """Passage ids handed out so far (alive or removed)."""
        return len(self.alive)

    @staticmethod
    def words(text: str) -> list[str]:
        return [w for w in WORD.findall(text.lower()) if w not in _STOPWORDS]

    def add(self, texts: Sequence[str]) -> list[int]:
        """Indexes passages; returns their ids."""
        first = self.size
        lengths = []
        for i, text in enumerate(texts, first):
            words = self.words(text)
            counts: dict[int, int] = {}
            for w in words:
                t = self.vocab.setdefault(w, len(self.vocab))
                counts[t] = counts.get(t, 0) + 1
            while len(self.postings) < len(self.vocab):
                self.postings.append((array("i"), array("i")))
            for t, n in counts.items():
                ids, tfs = self.postings[t]
                ids.append(i)
                tfs.append(n)
            self.terms.append(np.fromiter(counts, np.int32, len(counts)))
            lengths.append(len(words))
        if len(self.df) < len(self.vocab):
            self.df = np.concatenate([self.df, np.zeros(len(self.vocab) - len(self.df), np.int64)])
        for terms in self.terms[first:]:
            self.df[terms] += 1
        self.lengths = np.concatenate([self.lengths, np.array(lengths, np.float64)])
        self.alive = np.concatenate([self.alive, np.ones(len(texts), bool)])
        self.count += len(texts)
        self.total += float(sum(lengths))
        self._norm = None
        return list(range(first, self.size))

    def remove(self, passage: int) -> None:
        """Forgets a passage (its id is never reused)."""
        if self.alive[passage]:
            self.alive[passage] = False
            self.df[self.terms[passage]] -= 1
            self.count -= 1
            self.total -= self.lengths[passage]
            self._norm = None

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every passage id for ``query`` (0 for removed ones)."""
        out = np.zeros(self.size, np.float64)
        if not self.count:
            return out
        if self._norm is None:  # kept between queries: it changes with add and remove only
            norm = self.K1 * (1 - self.B + self.B * self.lengths / (self.total / self.count))
            self._norm = (norm, np.flatnonzero(~self.alive))
        norm, removed = self._norm
        for w in set(self.words(query)):
            t = self.vocab.get(w)
            if t is None or not self.df[t]:
                continue
            ids = np.frombuffer(self.postings[t][0], np.int32)
            tfs = np.frombuffer(self.postings[t][1], np.int32).astype(np.float64)
            idf = np.log(1 + (self.count - self.df[t] + 0.5) / (self.df[t] + 0.5))
            out[ids] += idf * tfs * (self.K1 + 1) / (tfs + norm[ids])
            del ids  # the postings may grow again once no view holds them
        out[removed] = 0.0
        return out


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


_STOPWORDS = _stopwords()
