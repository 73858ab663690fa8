"""Issue 41, item 5: which signal tells a question the corpus cannot answer from one it can?
Measured on the dev set's unanswerable questions (near misses on the same documents), for
the hits ``Index.search(q, k=RECOMMENDED["k"])`` hands the recommended payload. Each signal is
larger for questions that look answerable; under a threshold the payload is left empty.

- ``cosine``: the best cosine of the question with a hit leaf (what ``floor`` reads today);
- ``cosine margin``: the best cosine minus the 10th best among the hit leaves;
- ``cosine z``: the best cosine in standard deviations above the mean of the hit leaves' cosines;
- ``fused top``: the best hit's hybrid score (``cos / best cos + bm25 / best bm25``: 2 when one
  leaf is first by both rankings);
- ``rank agreement``: the overlap (Jaccard) of the 10 best parents by BM25 and the parents of
  the 10 nearest hit leaves;
- ``BM25 normalised``: the best parent's BM25 over the most the question's words can score
  (the sum of their idf times ``k1 + 1``), in [0, 1);
- ``term coverage``: the most, over the 10 best BM25 parents, of the question's idf that the
  parent holds (a word in no passage counts with the largest idf): 1 when one passage has
  every word of the question;
- ``combined``: a logistic regression of all of the above, fitted on the dev half.

A threshold is tuned on the dev half (the one with the best mean over all dev questions of
evidence recall on answerable ones and 1 for an empty payload on unanswerable ones, over both
budgets) and judged on the test half by the defaults rule (``beats`` in
``benches/retrieval_lab.py``), with one slice added: the unanswerable questions, where the
incumbent scores 0 and the candidate 1 for each one it leaves empty. Every other slice holds
the answerable questions only, on which a floor can only lose; so a floor beats the incumbent
when it leaves unanswerable questions empty outside the CI and loses answerable recall outside
the CI on no slice, and is adopted when the dev half agrees (``adopted``).

Run by ``benches/retrieval_defaults.py`` (its section "Abstention"); :func:`report` returns the
Markdown lines.
"""

from __future__ import annotations

import numpy as np

from chunkforge.index import Index
from chunkforge.index.bm25 import BM25
from chunkforge.index.payload import Hit
from retrieval_lab import Lab, Verdict, adopted, beats, bootstrap

SIGNALS = (
    "cosine",
    "cosine margin",
    "cosine z",
    "fused top",
    "rank agreement",
    "BM25 normalised",
    "term coverage",
)
TOP = 10
EMPTIED = (0.1, 0.25, 0.5, 0.75)  # shares of the dev half's unanswerable questions left empty


def signals(index: Index, lab: Lab, hits: list[list[Hit]]) -> dict[str, np.ndarray]:
    """Each signal (:data:`SIGNALS`) of each question, larger for answerable-looking ones."""
    bm = index._bm25
    out = {name: np.zeros(len(lab.queries)) for name in SIGNALS}
    for q, (query, found) in enumerate(zip(lab.queries, hits)):
        if not found:
            continue
        labels = np.array([h.leaf for h in found], np.int64)
        cos = index._cosines(labels, lab.qvec[q]).astype(np.float64)
        ranked = np.sort(cos)[::-1]
        scores = bm.scores(query.query)
        top_parents = np.argsort(-scores, kind="stable")[:TOP]
        top_parents = top_parents[scores[top_parents] > 0]
        near_parents = index._label_passage[labels[np.argsort(-cos, kind="stable")[:TOP]]]
        words = set(BM25.words(query.query))
        df = {w: 0 if bm.vocab.get(w) is None else int(bm.df[bm.vocab[w]]) for w in words}
        idf = {w: float(np.log(1 + (bm.count - n + 0.5) / (n + 0.5))) for w, n in df.items()}
        total = sum(idf.values())
        coverage = 0.0
        for p in top_parents.tolist():
            held = set(bm.terms[p].tolist())
            share = sum(v for w, v in idf.items() if bm.vocab.get(w) in held) / total if total else 0.0
            coverage = max(coverage, share)
        both = set(top_parents.tolist()) | set(near_parents.tolist())
        out["cosine"][q] = ranked[0]
        out["cosine margin"][q] = ranked[0] - ranked[min(TOP, len(ranked)) - 1]
        out["cosine z"][q] = (ranked[0] - ranked.mean()) / max(float(ranked.std()), 1e-9)
        out["fused top"][q] = found[0].score
        out["rank agreement"][q] = len(set(top_parents.tolist()) & set(near_parents.tolist())) / max(len(both), 1)
        out["BM25 normalised"][q] = float(scores.max()) / (total * (BM25.K1 + 1)) if total else 0.0
        out["term coverage"][q] = coverage
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> np.ndarray:
    """Weights (bias last) of an L2-regularised logistic regression of ``y`` (0/1) on the
    standardised columns of ``x`` (Newton's method); apply with :func:`logistic`."""
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = np.hstack([(x - mu) / sd, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    reg = np.eye(z.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        grad = z.T @ (p - y) + reg @ w
        hess = (z * (p * (1 - p))[:, None]).T @ z + reg
        w -= np.linalg.solve(hess, grad)
    return np.concatenate([w, mu, sd])


def logistic(fitted: np.ndarray, x: np.ndarray) -> np.ndarray:
    k = x.shape[1]
    w, mu, sd = fitted[: k + 1], fitted[k + 1 : 2 * k + 1], fitted[2 * k + 1 :]
    z = np.hstack([(x - mu) / sd, np.ones((len(x), 1))])
    out: np.ndarray = 1 / (1 + np.exp(-z @ w))
    return out


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """The chance that a random answerable question (``positive``) scores above a random
    unanswerable one (ties count a half)."""
    a, b = score[positive], score[~positive]
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    return float(((a[:, None] > b[None, :]).sum() + 0.5 * (a[:, None] == b[None, :]).sum()) / (len(a) * len(b)))


def with_floor(recalls: dict[int, np.ndarray], empty: np.ndarray, answerable: np.ndarray) -> dict[int, np.ndarray]:
    """Per-question scores of a floor: evidence recall on answerable questions (0 when left
    empty), 1 on an unanswerable one left empty, else 0."""
    return {b: np.where(answerable, np.where(empty, 0.0, r), empty.astype(float)) for b, r in recalls.items()}


def report(
    lab: Lab,
    index: Index,
    hits: list[list[Hit]],
    incumbent: dict[int, np.ndarray],
    slices: list[tuple[str, np.ndarray]],
    dev_slices: list[tuple[str, np.ndarray]],
) -> tuple[list[str], dict[str, np.ndarray]]:
    """The section's Markdown lines, and each signal's per-question scores."""
    answerable = ~np.isnan(incumbent[1000])
    dev, test = lab.split == "dev", lab.split == "test"
    sig = signals(index, lab, hits)
    x = np.column_stack([sig[n] for n in SIGNALS])
    fitted = fit_logistic(x[dev], answerable[dev].astype(float))
    sig["combined"] = logistic(fitted, x)
    none = {b: np.where(answerable, r, 0.0) for b, r in incumbent.items()}  # the incumbent never abstains

    def extended(s: list[tuple[str, np.ndarray]], half: np.ndarray) -> list[tuple[str, np.ndarray]]:
        return [(label, m & answerable) for label, m in s] + [("unanswerable", half & ~answerable)]

    def utility(empty: np.ndarray, m: np.ndarray) -> float:
        scored = with_floor(incumbent, empty, answerable)
        return float(np.mean([scored[b][m].mean() for b in scored]))

    summary = [
        "| signal | AUC dev | AUC test | threshold (tuned on dev) | test: unanswerable left empty "
        "| test: answerable left empty | test: answerable recall lost @500 / @1000 "
        "| test half, by the rule with the unanswerable slice | dev half | decision |",
        "|---" * 10 + "|",
    ]
    curve = [
        "| signal | dev unanswerable left empty (threshold) | test unanswerable left empty "
        "| test answerable left empty | test answerable recall lost @500 | @1000 |",
        "|---" * 6 + "|",
    ]
    for name, s in sig.items():
        for share in EMPTIED:
            t = float(np.quantile(s[dev & ~answerable], share))
            empty = s < t
            lost = [
                (np.nanmean(incumbent[b][test]) - np.nanmean(np.where(empty, 0.0, incumbent[b])[test])) * 100
                for b in (500, 1000)
            ]
            curve.append(
                f"| {name} | {empty[dev & ~answerable].mean() * 100:.0f}% ({t:.3g}) "
                f"| {empty[test & ~answerable].mean() * 100:.0f}% | {empty[test & answerable].mean() * 100:.1f}% "
                f"| {lost[0]:.1f} | {lost[1]:.1f} |"
            )
        # tuned on dev: the threshold (a dev question's score, or off) with the best dev utility
        candidates = [-np.inf, *np.unique(s[dev]).tolist()]
        best = max(candidates, key=lambda t: (utility(s < t, dev), -t))
        empty = s < best
        scored = with_floor(incumbent, empty, answerable)
        verdict: Verdict = beats(scored, none, extended(slices, test))
        dev_verdict: Verdict = beats(scored, none, extended(dev_slices, dev))
        gain = (utility(empty, dev) - utility(np.zeros_like(empty), dev)) * 100
        lost = []
        for b in (500, 1000):
            d, lo, hi = bootstrap(np.where(empty, 0.0, incumbent[b])[test], incumbent[b][test])
            lost.append(f"{0.0 - d * 100:.1f} [{0.0 - hi * 100:.1f}, {0.0 - lo * 100:.1f}]")
        summary.append(
            f"| {name} | {auc(s[dev], answerable[dev]):.2f} | {auc(s[test], answerable[test]):.2f} "
            f"| {'off' if best == -np.inf else f'{best:.3g}'} | {empty[test & ~answerable].mean() * 100:.0f}% "
            f"| {empty[test & answerable].mean() * 100:.1f}% | {' / '.join(lost)} | {verdict} | {dev_verdict} "
            f"| {'adopted' if adopted(verdict, dev_verdict, gain) else 'not adopted'} |"
        )
    n_dev, n_test = int((dev & ~answerable).sum()), int((test & ~answerable).sum())
    lines = [
        f"Unanswerable questions: {n_dev} in the dev half, {n_test} in the test half (of "
        f"{int((dev & answerable).sum())} and {int((test & answerable).sum())} answerable ones). Signals "
        "(`benches/retrieval_abstain.py`): larger for questions that look answerable; under the threshold "
        "the payload is left empty. AUC: the chance that an answerable question scores above an "
        "unanswerable one (0.5: no separation). The threshold is tuned on the dev half (best mean, over "
        "both budgets, of evidence recall on answerable questions and 1 for each unanswerable one left "
        "empty: `off` when no floor does better than none) and judged on the test half by the defaults "
        "rule with one slice added, the unanswerable questions (the incumbent 0, the floor 1 for each "
        "left empty); the answerable slices are as above. Answerable recall lost: mean over the "
        "test half's answerable questions, points [95% CI].",
        "",
        *summary,
        "",
        "The curves: each threshold leaves a share of the dev half's unanswerable questions empty; what "
        "it does on the test half.",
        "",
        *curve,
    ]
    return lines, sig
