"""Building blocks of the retrieval comparison on the dev set (``benches/devset``):
unit sets (plain chunks, sentence leaves), dense and BM25 scores of every unit for
every question, packing ranked spans into a token budget, paired bootstrap CIs.

Used by ``benches/retrieval_eval.py``; numbers are in all-MiniLM-L6-v2 tokens of each
document tokenized once (a token belongs to a span when its last character does, as
in :class:`chunkforge.eval.SpanMeasure`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from chunkforge import RecursiveChunker, split_sentences
from chunkforge._io import cache_root
from chunkforge.encoder import Encoder
from chunkforge.eval import Document, EmbeddingCache, Query, Span, SpanMeasure, load_corpus, load_queries, score

DEVSET = Path(__file__).parent / "devset"


@dataclass
class Units:
    """Spans of the corpus: ``doc`` (index into the corpus), ``start``, ``end``, ``tokens``."""

    name: str
    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tokens: np.ndarray
    texts: list[str]


class Lab:
    """The dev set loaded once, with its measure, encoder and query vectors."""

    def __init__(self, devset: Path = DEVSET) -> None:
        self.corpus: list[Document] = load_corpus(devset / "corpus.jsonl")
        self.queries: list[Query] = load_queries(devset / "queries.jsonl", self.corpus)
        meta = [json.loads(line) for line in (devset / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
        self.genre = np.array([m["genre"] for m in meta])
        self.split = np.array([m["split"] for m in meta])
        self.qtype = np.array([m["type"] for m in meta])
        self.encoder = Encoder.default()
        self.tokenizer = self.encoder.tokenizer
        self.measure = SpanMeasure(self.corpus, tokenizer=self.tokenizer)
        assert self.measure.token_ends is not None
        self.ends = self.measure.token_ends
        self.cache = EmbeddingCache(cache_root() / "embeddings.sqlite")
        self.qvec = self.encoder.embed([q.query for q in self.queries])
        self._vectors: dict[str, np.ndarray] = {}
        self._bm25: dict[str, tuple[bm25s.BM25, dict]] = {}

    # -- units -------------------------------------------------------------

    def count(self, doc: int, start: int, end: int) -> int:
        e = self.ends[doc]
        return int(np.searchsorted(e, end, "right") - np.searchsorted(e, start, "right"))

    def units(self, name: str, spans: list[tuple[int, int, int]]) -> Units:
        arr = np.array(spans, np.int64).reshape(-1, 3)
        tokens = np.array([self.count(d, s, e) for d, s, e in spans], np.int64)
        texts = [self.corpus[d].text[s:e] for d, s, e in spans]
        return Units(name, arr[:, 0], arr[:, 1], arr[:, 2], tokens, texts)

    def chunks(self, max_tokens: int) -> Units:
        """Plain ``RecursiveChunker(max_tokens)`` chunks of every document."""
        spans = RecursiveChunker(self.tokenizer, max_tokens=max_tokens).spans_batch([d.text for d in self.corpus])
        rows = list(zip(spans.doc.tolist(), spans.start.tolist(), spans.end.tolist()))
        return self.units(f"recursive-{max_tokens}", rows)

    def sentences(self, max_tokens: int) -> Units:
        """Sentences (``split_sentences``), one over ``max_tokens`` cut by the recursive chunker."""
        cut = RecursiveChunker(self.tokenizer, max_tokens=max_tokens)
        rows = []
        for i, d in enumerate(self.corpus):
            for s, e in split_sentences(d.text):
                if self.count(i, s, e) <= max_tokens:
                    rows.append((i, s, e))
                else:
                    p = cut.spans(d.text[s:e])
                    rows.extend((i, s + a, s + b) for a, b in zip(p.start.tolist(), p.end.tolist()))
        return self.units(f"sentences-{max_tokens}", rows)

    # -- scores ------------------------------------------------------------

    def dense(self, u: Units) -> np.ndarray:
        """``(queries, units)`` cosine similarities."""
        if u.name not in self._vectors:
            self._vectors[u.name] = self.cache.embed(self.encoder, u.texts)
        return self.qvec @ self._vectors[u.name].T

    def bm25(self, u: Units) -> np.ndarray:
        """``(queries, units)`` BM25 scores (bm25s, English stop words)."""
        if u.name not in self._bm25:
            index = bm25s.BM25()
            index.index(bm25s.tokenize(u.texts, stopwords="en", show_progress=False), show_progress=False)
            self._bm25[u.name] = (index, index.vocab_dict)
        index, vocab = self._bm25[u.name]
        tokens = bm25s.tokenize([q.query for q in self.queries], stopwords="en", show_progress=False, return_ids=False)
        out = np.zeros((len(self.queries), len(u.texts)), np.float32)
        for qi, toks in enumerate(tokens):
            toks = [t for t in toks if t in vocab]
            if toks:
                out[qi] = index.get_scores(toks)
        return out

    # -- payloads ----------------------------------------------------------

    def pack(self, ranked: list[tuple[int, int, int]], budget: int) -> list[Span]:
        """Spans in rank order while the budget lasts: each adds the tokens it does not
        share with spans already taken (touching or overlapping spans merge); one that
        does not fit is skipped."""
        taken: dict[int, list[list[int]]] = {}
        used = 0
        for d, s, e in ranked:
            ivs = taken.setdefault(d, [])
            new = self.count(d, s, e) - sum(self.count(d, max(s, a), min(e, b)) for a, b in ivs if a < e and s < b)
            if new <= 0 or used + new > budget:
                continue
            used += new
            merged = [s, e]
            keep = []
            for a, b in ivs:
                if a <= merged[1] and merged[0] <= b:
                    merged = [min(a, merged[0]), max(b, merged[1])]
                else:
                    keep.append([a, b])
            taken[d] = [*keep, merged]
        return [Span(self.corpus[d].doc_id, a, b) for d, ivs in taken.items() for a, b in ivs]

    def ranked_units(self, u: Units, scores: np.ndarray, depth: int = 200) -> list[list[tuple[int, int, int]]]:
        top = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
        return [[(int(u.doc[i]), int(u.start[i]), int(u.end[i])) for i in row] for row in top]

    def recall(self, payloads: list[list[Span]]) -> np.ndarray:
        """Per-question evidence-token recall (NaN when unanswerable)."""
        return score(self.queries, payloads, self.measure).recall


def rrf(*rankings: tuple[float, np.ndarray], k: int = 60) -> np.ndarray:
    """Weighted reciprocal rank fusion of ``(weight, scores)`` over the same units."""
    out = np.zeros_like(rankings[0][1], dtype=np.float64)
    for w, s in rankings:
        order = np.argsort(-s, axis=1, kind="stable")
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, s.shape[1] + 1)[None, :].repeat(s.shape[0], 0), axis=1)
        out += w / (k + ranks)
    return out


def bootstrap(a: np.ndarray, b: np.ndarray, rounds: int = 4000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``a - b`` over questions where both are defined, and its paired 95% CI."""
    ok = ~np.isnan(a) & ~np.isnan(b)
    d = (a - b)[ok]
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), (rounds, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def percent(r: np.ndarray, m: np.ndarray) -> float:
    """Mean recall (%) of the questions in mask ``m`` (NaN: not measured, left out)."""
    return float(np.nanmean(r[m])) * 100


def paired_ci(a: np.ndarray, c: np.ndarray, m: np.ndarray) -> str:
    """``a - c`` over the questions in mask ``m``, in points, with its paired 95% CI."""
    d, lo, hi = bootstrap(a[m], c[m])
    return f"{d * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}]"


@dataclass
class Verdict:
    """A candidate against the incumbent by the defaults rule (:func:`beats`): the slices
    (``"label @budget"``) where it is ahead, and behind, outside the paired 95% CI."""

    ahead: list[str]
    behind: list[str]

    @property
    def wins(self) -> bool:
        """Ahead outside the CI somewhere, behind outside it nowhere."""
        return bool(self.ahead) and not self.behind

    def __str__(self) -> str:
        word = "beats" if self.wins else "does not beat"
        return f"{word} (ahead: {', '.join(self.ahead) or 'nowhere'}; behind: {', '.join(self.behind) or 'nowhere'})"


def beats(
    candidate: dict[int, np.ndarray],
    incumbent: dict[int, np.ndarray],
    slices: list[tuple[str, np.ndarray]],
    rounds: int = 4000,
) -> Verdict:
    """The rule that decides a default (issue 41): a candidate beats the incumbent when, at
    some budget, it is ahead outside the paired 95% bootstrap CI on the whole test half or
    on at least one evidence-length or genre slice, and behind outside the CI on no slice
    at any budget. ``candidate`` and ``incumbent`` are per-question recalls by budget;
    ``slices`` are ``(label, mask)`` over the questions (the test half and its slices). A
    rule on the overall mean alone would throw a slice's win away."""
    ahead, behind = [], []
    for budget in candidate:
        for label, mask in slices:
            _, lo, hi = bootstrap(candidate[budget][mask], incumbent[budget][mask], rounds)
            if lo > 0:
                ahead.append(f"{label} @{budget}")
            elif hi < 0:
                behind.append(f"{label} @{budget}")
    return Verdict(ahead, behind)


def adopted(test: Verdict, dev: Verdict, dev_gain: float) -> bool:
    """Whether a candidate replaces the incumbent: it beats it on the test half (:func:`beats`),
    and the dev half, where knobs are tuned, agrees: behind outside the CI nowhere there and
    its mean over both budgets (``dev_gain``, candidate minus incumbent) not lower. With 14
    slices at two budgets a candidate no better than the incumbent can be ahead outside a 95%
    CI somewhere by chance alone (up to about half the time, were the 28 tests independent);
    the dev half's agreement keeps such chance wins out."""
    return test.wins and not dev.behind and dev_gain >= 0


def test_slices(lab: Lab, half: str | None = "test") -> list[tuple[str, np.ndarray]]:
    """The test half (``half``; None: all questions), its evidence-length buckets and its
    genres: the slices of :func:`beats`."""
    sys.path.insert(0, str(DEVSET))
    from build import BUCKETS, bucket_of, evidence_tokens

    texts = {d.doc_id: d.text for d in lab.corpus}  # buckets as the dev set's build counts them
    bucket = np.array(
        [bucket_of(evidence_tokens([texts[r.doc_id][r.start : r.end] for r in q.references])) for q in lab.queries]
    )
    test = lab.split == half if half is not None else np.ones(len(lab.queries), bool)
    slices = [("all", test)] + [(f"{name} tokens", test & (bucket == name)) for _, name in BUCKETS]
    return slices + [(g, test & (lab.genre == g)) for g in sorted(set(lab.genre.tolist()))]
