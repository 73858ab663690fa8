"""Issue 41, items 3-5: what else should ``Index.query`` do by default? Each candidate is a
change to the payload of the same hits (``Index.search(q, k=RECOMMENDED["k"])`` on the dev
set's index with the default search prefix), measured against the recommended policy (the
incumbent) by evidence-token recall at 500 and 1,000 tokens and decided by the defaults rule
(``beats`` in ``benches/retrieval_lab.py``: ahead outside the paired 95% CI on the test half or
on one of its evidence-length or genre slices, behind outside it on none), and adopted when the
dev half agrees (``adopted``). Knobs are tuned on the ``dev`` half; the ``test`` half decides.

- ``blocks``: a hit leaf inside a list, table or fenced code block
  (``block_spans`` in ``benches/retrieval_blocks.py``) brings the block's other leaves right after
  it, at its utility, when the block holds at most ``cap`` tokens (item 4); ``blocks+clauses``:
  numbered clauses of several paragraphs count as blocks too (a specification's fields and
  sections).
- ``rerank``: the incumbent's passages for ``factor`` times the budget, each scored on its
  own, put in the order of that score (``+rrf``: fused with their own order by reciprocal
  ranks), their leaves given back to the native packing in that order at the real budget (so
  the budget stays exact). ``text``: the cosine of the question with the bi-encoder's vector
  of the passage's text (one model call per passage at query time); ``leaves``: the cosine
  with the token-weighted sum of the passage's leaves' unit vectors, which the index already
  holds (no model call; each leaf embedded alone, so not the late-chunked passage vector,
  whose pooled sums the index does not keep) (item 3).
- abstention (item 5): the payload is left empty when a signal of the hits is under a
  threshold; the signals, their curves and their verdicts are ``benches/retrieval_abstain.py``'s.

Baselines (plain chunks) are read from the per-question recalls ``benches/retrieval_buckets.py
--save-recalls`` wrote; the index from its ``--save-index`` (same build):

    python benches/retrieval_buckets.py --save-index IDX --save-recalls R.npz
    python benches/retrieval_defaults.py --index IDX --baselines R.npz --out benches/results/retrieval-defaults.md
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from chunkforge._recommended import RECOMMENDED  # noqa: E402
from chunkforge.eval import Span  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from chunkforge.index.options import ExpandOptions  # noqa: E402
from chunkforge.index.payload import Hit, Passage  # noqa: E402
from retrieval_abstain import report as abstention  # noqa: E402
from retrieval_blocks import block_spans, leaf_blocks  # noqa: E402
from retrieval_lab import Lab, Verdict, adopted, beats, paired_ci, percent, test_slices  # noqa: E402

BUDGETS = (500, 1000)
CAPS = (128, 256, 512)
FACTORS = (1.5, 3.0)
RERANKS = ("leaves", "leaves+rrf", "text", "text+rrf")
Recalls = dict[int, np.ndarray]


class Bench:
    def __init__(self, lab: Lab, index: Index) -> None:
        self.lab, self.index = lab, index
        self.level = len(index.parent_tokens) + 1
        self.hits = [index.search(q.query, k=RECOMMENDED["k"]) for q in lab.queries]
        # each leaf in a block: its block's leaves and the block's tokens (without and with clauses)
        self.block_of: dict[bool, dict[int, tuple[list[int], int]]] = {False: {}, True: {}}
        self.leaf_tokens: dict[int, int] = {}
        for i, d in enumerate(lab.corpus):
            if d.doc_id not in index:
                continue
            layout = index._layout(d.doc_id)
            for label, s, e in zip(layout.labels.tolist(), layout.starts.tolist(), layout.ends.tolist()):
                self.leaf_tokens[label] = lab.count(i, s, e)
            for clauses in (False, True):
                spans = block_spans(d.text, clauses)
                which = leaf_blocks(spans, layout.starts, layout.ends)
                for b in set(which.tolist()) - {-1}:
                    members = layout.labels[which == b].tolist()
                    tokens = lab.count(i, int(spans[b, 0]), int(spans[b, 1]))
                    for label in members:
                        self.block_of[clauses][label] = (members, tokens)
        self.text_cache: dict[str, np.ndarray] = {}
        self.timing = False  # True: passages embedded by the model, not read from the embedding cache

    def ranked(self, hits: list[Hit], spread: float | None) -> tuple[list[int], list[float]]:
        if spread is None:
            return [h.leaf for h in hits], [h.score for h in hits]
        return self.index._expander.spread([h.leaf for h in hits], [h.score for h in hits], spread)

    def with_blocks(
        self, labels: list[int], utilities: list[float], cap: int, clauses: bool = False
    ) -> tuple[list[int], list[float]]:
        out, util, seen = [], [], set()
        for label, u in zip(labels, utilities):
            block = self.block_of[clauses].get(label)
            mates = block[0] if block is not None and block[1] <= cap else [label]
            for m in [label, *mates]:
                if m not in seen:
                    seen.add(m)
                    out.append(m)
                    util.append(u)
        return out, util

    def passages(
        self, q: int, budget: int, spread: float | None, cap: int | None = None, clauses: bool = False
    ) -> list[Passage]:
        labels, utilities = self.ranked(self.hits[q], spread)
        if cap is not None:
            labels, utilities = self.with_blocks(labels, utilities, cap, clauses)
        made = self.index._expander.hits(labels, utilities, self.level)
        return self.index._expand(made, ExpandOptions(budget_tokens=budget)).passages

    def leaves_score(self, q: int, p: Passage) -> float:
        layout = self.index._layout(p.doc_id)
        at, to = np.searchsorted(layout.starts, p.start), np.searchsorted(layout.ends, p.end, "right")
        labels = layout.labels[at:to]
        if len(labels) == 0:
            return -1.0
        vectors = self.index._vectors[labels].astype(np.float32) * self.index._scales[labels][:, None]
        weights = np.array([self.leaf_tokens[int(x)] for x in labels.tolist()], np.float32)
        v = weights @ vectors
        return float(v @ self.lab.qvec[q] / max(float(np.linalg.norm(v)), 1e-12))

    def text_scores(self, q: int, passages: list[Passage]) -> list[float]:
        new = [p.text for p in passages if p.text not in self.text_cache]
        if new:
            vectors = self.lab.encoder.embed(new) if self.timing else self.lab.cache.embed(self.lab.encoder, new)
            for t, v in zip(new, vectors):
                self.text_cache[t] = v
        return [float(self.text_cache[p.text] @ self.lab.qvec[q]) for p in passages]

    def scores(self, q: int, mode: str, passages: list[Passage]) -> list[float]:
        """Each passage's score for the question in rerank ``mode`` (``text``: the bi-encoder on
        its text; else its leaves' vectors)."""
        return self.text_scores(q, passages) if mode.startswith("text") else [self.leaves_score(q, p) for p in passages]

    def reranked(self, q: int, budget: int, spread: float | None, mode: str, factor: float) -> list[Passage]:
        """The incumbent's passages for ``factor`` times the budget, in the order of their
        new scores (``+rrf``: fused with their own order by reciprocal ranks, k=60); their
        leaves go back to the native packing in that order, at the real budget."""
        labels, utilities = self.ranked(self.hits[q], spread)
        made = self.index._expander.hits(labels, utilities, self.level)
        candidates = self.index._expand(made, ExpandOptions(budget_tokens=int(budget * factor))).passages
        scores = self.scores(q, mode, candidates)
        order = sorted(range(len(candidates)), key=lambda i: -scores[i])
        if mode.endswith("+rrf"):
            rank = {i: r for r, i in enumerate(order)}
            order = sorted(range(len(candidates)), key=lambda i: -(1 / (61 + i) + 1 / (61 + rank[i])))
        at = {label: i for i, label in enumerate(labels)}
        ranked: list[int] = []
        for i in order:
            p = candidates[i]
            layout = self.index._layout(p.doc_id)
            inside = layout.labels[
                np.searchsorted(layout.starts, p.start) : np.searchsorted(layout.ends, p.end, "right")
            ]
            ranked += sorted((x for x in inside.tolist() if x in at), key=at.__getitem__)
        made = self.index._expander.hits(ranked, [float(len(ranked) - j) for j in range(len(ranked))], self.level)
        return self.index._expand(made, ExpandOptions(budget_tokens=budget)).passages

    def recalls(self, make: Callable[[int, int], list[Passage]]) -> Recalls:
        out = {}
        for b in BUDGETS:
            spans = [[Span(p.doc_id, p.start, p.end) for p in make(q, b)] for q in range(len(self.lab.queries))]
            out[b] = self.lab.recall(spans)
        return out


def verdict_table(
    rows: dict[str, Recalls],
    verdicts: dict[str, Verdict],
    dev_verdicts: dict[str, Verdict],
    split: np.ndarray,
    dev_mean: Callable[[Recalls], float],
) -> list[str]:
    """Each payload's mean recall per half and budget, its verdicts against ``rows["incumbent"]``
    by the defaults rule on each half, and whether it is adopted (a Markdown table)."""
    out = [
        "| payload | dev @500 | test @500 | dev @1000 | test @1000 | test half: verdict against the incumbent "
        "| dev half: the same rule | decision |",
        "|---" * 8 + "|",
    ]
    for name, by in rows.items():
        cells = [f"{percent(by[b], split == s):.1f}" for b in BUDGETS for s in ("dev", "test")]
        decision = ""
        if name != "incumbent":
            gain = dev_mean(by) - dev_mean(rows["incumbent"])
            decision = "adopted" if adopted(verdicts[name], dev_verdicts[name], gain) else "not adopted"
        out.append(
            f"| {name} | " + " | ".join(cells) + f" | {verdicts.get(name, '(incumbent)')} "
            f"| {dev_verdicts.get(name, '(incumbent)')} | {decision} |"
        )
    return out


def slice_table(
    rows: dict[str, Recalls], chosen: list[str], slices: list[tuple[str, np.ndarray]], answerable: np.ndarray
) -> list[str]:
    """Each chosen payload minus the incumbent per test slice and budget, with its paired CI."""
    out = [
        "| test slice | n | " + " | ".join(f"{n} minus incumbent @{b}" for n in chosen for b in BUDGETS) + " |",
        "|---" * (2 + len(chosen) * len(BUDGETS)) + "|",
    ]
    for label, m in slices:
        m = m & answerable
        cells = [paired_ci(rows[n][b], rows["incumbent"][b], m) for n in chosen for b in BUDGETS]
        out.append(f"| {label} | {int(m.sum())} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", required=True, help="the dev set's index (retrieval_buckets.py --save-index)")
    parser.add_argument("--baselines", required=True, help="per-question recalls (retrieval_buckets.py --save-recalls)")
    parser.add_argument("--out", help="write the Markdown report here")
    parser.add_argument("--save-recalls", help="save every payload's per-question recalls here (npz)")
    parser.add_argument("--smoke", type=int, help="build an index of this many documents instead (a smoke run)")
    args = parser.parse_args()
    started = time.perf_counter()
    warnings.filterwarnings("ignore", message=".*longer than max_length")  # passages over 256 tokens: truncated
    lab = Lab()
    if args.smoke:
        few = [d for d in lab.corpus if d.metadata.get("genre") in ("procedures", "rules")][: args.smoke]
        index = Index.build([{"id": d.doc_id, "text": d.text, **d.metadata} for d in few], lab.encoder)
    else:
        index = Index.load(args.index, lab.encoder)
    bench = Bench(lab, index)
    saved = np.load(args.baselines)
    baselines = {
        name: {b: saved[f"{name} @{b}"] for b in BUDGETS}
        for name in sorted({k.rsplit(" @", 1)[0] for k in saved.files if k.startswith("recursive-")})
    }
    spread = RECOMMENDED["spread"]
    dev, slices = lab.split == "dev", test_slices(lab)
    rows: dict[str, Recalls] = {}
    rows["incumbent"] = bench.recalls(lambda q, b: bench.passages(q, b, spread))
    print("incumbent", {b: round(float(np.nanmean(r)) * 100, 1) for b, r in rows["incumbent"].items()}, flush=True)

    def dev_mean(r: Recalls) -> float:
        return float(np.mean([np.nanmean(r[b][dev]) for b in BUDGETS])) * 100

    tuned: dict[str, tuple[str, float]] = {}  # candidate -> (the knob tuned on dev, dev mean)
    for family, knobs, make in (
        ("blocks", CAPS, lambda k: lambda q, b: bench.passages(q, b, spread, int(k))),
        ("blocks+clauses", CAPS, lambda k: lambda q, b: bench.passages(q, b, spread, int(k), True)),
        *(
            (f"rerank={mode}", FACTORS, lambda k, mode=mode: lambda q, b: bench.reranked(q, b, spread, mode, k))
            for mode in RERANKS
        ),
    ):
        for knob in knobs:
            name = f"{family} ({'cap' if family.startswith('blocks') else 'factor'} {knob})"
            t0 = time.perf_counter()
            rows[name] = bench.recalls(make(knob))
            print(name, f"dev {dev_mean(rows[name]):.1f}", f"{time.perf_counter() - t0:.0f} s", flush=True)
        best = max((n for n in rows if n.startswith(f"{family} (")), key=lambda n: dev_mean(rows[n]))
        tuned[family] = (best, dev_mean(rows[best]))

    verdicts: dict[str, Verdict] = {n: beats(rows[n], rows["incumbent"], slices) for n in rows if n != "incumbent"}
    dev_slices = [(label, m & dev) for label, m in test_slices(lab, half=None)]
    dev_verdicts = {n: beats(rows[n], rows["incumbent"], dev_slices) for n in rows if n != "incumbent"}
    floors, _ = abstention(lab, index, bench.hits, rows["incumbent"], slices, dev_slices)
    answerable = ~np.isnan(rows["incumbent"][1000])
    if args.save_recalls:
        np.savez(args.save_recalls, **{f"{name} @{b}": r for name, by in rows.items() for b, r in by.items()})

    # cost: one search per question, then each payload of those hits, interleaved question by question
    payloads: dict[str, Callable[[int], list[Passage]]] = {"incumbent": lambda q: bench.passages(q, 1000, spread)}
    for family, (name, _) in tuned.items():
        knob = float(name.split(" ")[-1].rstrip(")"))
        if family.startswith("blocks"):
            payloads[name] = lambda q, cap=int(knob), c=family == "blocks+clauses": bench.passages(
                q, 1000, spread, cap, c
            )
        else:
            mode = family.split("=")[1]
            payloads[name] = lambda q, mode=mode, k=knob: bench.reranked(q, 1000, spread, mode, k)
    seconds: dict[str, list[float]] = {name: [] for name in payloads}
    bench.timing = True
    searching = []
    for q in range(0, len(lab.queries), 2)[:200]:
        t0 = time.perf_counter()
        index.search(lab.queries[q].query, k=RECOMMENDED["k"])
        searching.append(time.perf_counter() - t0)
        for name, make in payloads.items():
            bench.text_cache.clear()
            t0 = time.perf_counter()
            make(q)
            seconds[name].append(searching[-1] + time.perf_counter() - t0)
    p50 = {n: float(np.median(t)) * 1000 for n, t in seconds.items()}

    overall = verdict_table(rows, verdicts, dev_verdicts, lab.split, dev_mean)
    chosen = [tuned[f][0] for f in tuned]
    per_slice = slice_table(rows, chosen, slices, answerable)
    against = [
        "| test slice | n | "
        + " | ".join(f"incumbent @{b} | best baseline @{b} | minus best [95% CI]" for b in BUDGETS)
        + " |",
        "|---" * (2 + 3 * len(BUDGETS)) + "|",
    ]
    for label, m in slices:
        m = m & answerable
        cells = []
        for b in BUDGETS:
            best = max(baselines, key=lambda n: percent(baselines[n][b], m))
            cells += [
                f"{percent(rows['incumbent'][b], m):.1f}",
                f"{percent(baselines[best][b], m):.1f} ({best})",
                paired_ci(rows["incumbent"][b], baselines[best][b], m),
            ]
        against.append(f"| {label} | {int(m.sum())} | " + " | ".join(cells) + " |")
    cost = (
        f"Cost at 1,000 tokens, over {len(searching)} questions interleaved (the search, then the payload), p50: "
        + ("; ".join(f"{n} {p50[n]:.2f} ms ({p50[n] / p50['incumbent']:.2f}x)" for n in p50))
        + f". The search alone: {float(np.median(searching)) * 1000:.2f} ms."
    )
    text = "\n".join(
        [
            "<!-- Written by benches/retrieval_defaults.py (issue 41). -->",
            "# Candidates for the default payload: blocks, reranking, abstention",
            "",
            f"`benches/devset`, `{index!r}`; the incumbent: the recommended policy (spread={spread!r}, "
            f"k={RECOMMENDED['k']}). Evidence-token recall (%), means over answerable questions. "
            f"Run in {time.perf_counter() - started:.0f} s on the shared 2-core machine:",
            "",
            "    " + ("python benches/retrieval_defaults.py " + " ".join(sys.argv[1:])).rstrip(),
            "",
            "Knobs tuned on the dev half (best mean of both budgets): "
            + "; ".join(f"{f}: {n} (dev {m:.1f})" for f, (n, m) in tuned.items())
            + ".",
            "",
            *overall,
            "",
            "## Test half, per slice: each tuned candidate minus the incumbent (paired 95% CI)",
            "",
            *per_slice,
            "",
            "## Abstention: which signal leaves unanswerable questions empty",
            "",
            *floors,
            "",
            "## Test half: the incumbent against the best plain-chunk baseline of each slice",
            "",
            *against,
            "",
            cost,
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
