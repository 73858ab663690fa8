"""chunkforge.eval: metrics against hand-computed cases and a brute-force reference,
the dataset loaders' errors, configs, the embedding cache, and ``chunkforge eval``
end to end on the labelled set (real tokenizer, ONNX encoder and hnswlib)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkforge
from chunkforge import cli
from chunkforge import eval as ev
from chunkforge.eval import Document, Query, Span, SpanMeasure, score

ROOT = Path(__file__).parents[1]
EVAL = ROOT / "tests" / "data" / "eval"
CONFIGS = [EVAL / "configs" / name for name in ("recursive-254.toml", "token-128.toml", "sentence-128-heading.toml")]


def chars(*docs: tuple[str, str]) -> SpanMeasure:
    return SpanMeasure([Document(d, t) for d, t in docs], unit="chars")


def q(*refs: Span, qid: str = "q") -> Query:
    return Query(qid, "?", tuple(refs))


def check(scores: ev.Scores, i: int = 0, **expected: float) -> None:
    """Asserts the listed metrics of query ``i``."""
    got = {m: float(getattr(scores, m)[i]) for m in expected}
    assert got == pytest.approx(expected), got


# ------------------------------------------------------------ metrics, by hand


def test_overlapping_evidence_is_merged_once():
    m = chars(("a", "x" * 40))
    s = score([q(Span("a", 0, 10), Span("a", 5, 15))], [[Span("a", 0, 15)]], m)
    # |E| = |[0, 15)| = 15, not 10 + 10
    check(s, recall=1.0, precision=1.0, iou=1.0, evidence_recall=1.0, context=15)
    assert s.found[0]
    s = score([q(Span("a", 0, 10), Span("a", 5, 15))], [[Span("a", 0, 10)]], m)
    check(s, recall=10 / 15, precision=1.0, iou=10 / 15, evidence_recall=1.0)  # [5, 15) is half covered


def test_duplicated_retrieved_spans_count_twice_in_the_denominators_only():
    m = chars(("a", "x" * 40))
    s = score([q(Span("a", 0, 10))], [[Span("a", 0, 20), Span("a", 0, 20)]], m)
    # numerator 10 (once), retrieved 20 + 20 = 40; IoU = 10 / (40 + 10 - 10)
    check(s, recall=1.0, precision=0.25, iou=0.25, evidence_recall=1.0, mrr=1.0, ndcg=1.0, context=40, n=2)
    assert math.isnan(float(s.precision_omega[0]))  # no candidates given
    # the repeat gains nothing in nDCG: ideal is one relevant span (one evidence span)
    s2 = score([q(Span("a", 0, 10), Span("a", 30, 40))], [[Span("a", 0, 20), Span("a", 0, 20)]], m)
    assert float(s2.ndcg[0]) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_empty_retrieval_scores_zero():
    m = chars(("a", "x" * 40))
    s = score([q(Span("a", 0, 10))], [[]], m)
    check(s, recall=0, precision=0, iou=0, evidence_recall=0, mrr=0, ndcg=0, context=0, n=0)
    assert not s.found[0]


def test_spans_across_documents():
    m = chars(("a", "x" * 40), ("b", "y" * 40), ("c", "z" * 40))
    query = q(Span("a", 0, 10), Span("b", 10, 20))
    # same offsets in another document hold no evidence
    s = score([query], [[Span("c", 10, 20), Span("a", 5, 15)]], m)
    # E = 20; E ∩ R = [5, 10) of a = 5; retrieved 10 + 10
    check(s, recall=0.25, precision=0.25, iou=5 / 35, evidence_recall=0.5, mrr=0.5)
    assert float(s.ndcg[0]) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert not s.found[0]


def test_precision_omega_and_ndcg_against_the_chunking():
    m = chars(("a", "x" * 30))
    chunks = [Span("a", 0, 10), Span("a", 10, 20), Span("a", 20, 30)]
    s = score([q(Span("a", 5, 15))], [[Span("a", 20, 30), Span("a", 10, 20)]], m, candidates=chunks)
    # Ω: chunks 0 and 1 hold evidence -> 10 / 20; nDCG: gains [0, 1], ideal two relevant chunks
    assert float(s.precision_omega[0]) == 0.5
    assert float(s.ndcg[0]) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert (float(s.recall[0]), float(s.mrr[0])) == (0.5, 0.5)


def test_coverage_threshold_decides_evidence_recall():
    m = chars(("a", "x" * 30))
    args = ([q(Span("a", 0, 10))], [[Span("a", 0, 4)]], m)
    assert float(score(*args).evidence_recall[0]) == 0.0
    assert float(score(*args, coverage=0.4).evidence_recall[0]) == 1.0
    with pytest.raises(ValueError, match="coverage"):
        score(*args, coverage=0)


def test_unanswerable_queries_are_nan_and_left_out_of_means():
    m = chars(("a", "x" * 30))
    s = score([q(qid="none"), q(Span("a", 0, 10), qid="some")], [[Span("a", 0, 10)], [Span("a", 0, 5)]], m)
    assert all(math.isnan(float(getattr(s, m)[0])) for m in ev.METRICS)
    assert s.summary()["recall"] == {"mean": 0.5, "std": 0.0}
    assert s.summary()["context"]["mean"] == 7.5


def test_tokens_are_the_documents_tokens():
    text = "Hello, world! Bye now."
    m = SpanMeasure([Document("a", text)])
    assert [text[s:e] for s, e in chunkforge.Tokenizer.default().encode_offsets(text).offsets.tolist()] == [
        "Hello",
        ",",
        "world",
        "!",
        "Bye",
        "now",
        ".",
    ]
    evidence = Span("a", text.index("Bye"), len(text))  # bye now . = 3 tokens
    retrieved = Span("a", text.index("world"), text.index("Bye") + 3)  # world ! bye = 3 tokens
    s = score([q(evidence)], [[retrieved]], m)
    assert (m.size(evidence), m.size(retrieved)) == (3, 3)
    check(s, recall=1 / 3, precision=1 / 3, iou=0.2)
    # a span that cuts a token holds it when it holds the token's last character
    assert m.size(Span("a", 1, 5)) == 1 and m.size(Span("a", 0, 4)) == 0


def test_evidence_without_tokens_is_refused():
    m = SpanMeasure([Document("a", "Hello   world")])
    with pytest.raises(ValueError, match="'q'.*holds no tokens"):
        score([q(Span("a", 5, 8))], [[]], m)


def test_bad_spans_name_the_query():
    m = chars(("a", "x" * 10))
    with pytest.raises(ValueError, match=r"retrieved\[0\]\[0\]: doc_id 'b'"):
        score([q(Span("a", 0, 5))], [[Span("b", 0, 5)]], m)
    with pytest.raises(ValueError, match=r"retrieved\[0\]\[0\]: span \(5, 11\)"):
        score([q(Span("a", 0, 5))], [[Span("a", 5, 11)]], m)


spans = st.tuples(st.integers(0, 2), st.integers(0, 60), st.integers(0, 20)).map(
    lambda t: Span("abc"[t[0]], t[1], min(60, t[1] + t[2]))
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(spans.filter(lambda s: s.end > s.start), max_size=4), st.lists(spans, max_size=6)),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
)
def test_native_span_arithmetic_matches_sets(cases, tokens):
    texts = {d: "".join(random.Random(d).choice("ab  c.") for _ in range(60)) for d in "abc"}
    docs = [Document(d, t) for d, t in texts.items()]
    m = SpanMeasure(docs, unit="tokens" if tokens else "chars")

    def units(span: Span) -> set:
        if not tokens:
            return {(span.doc_id, i) for i in range(span.start, span.end)}
        ends = m.token_ends[m.index[span.doc_id]].tolist()
        return {(span.doc_id, j) for j, e in enumerate(ends) if span.start < e <= span.end}

    cases = [(ev_, r) for ev_, r in cases if sum(len(units(s)) for s in ev_) and all(units(s) for s in ev_)]
    if not cases:
        return
    queries = [q(*e, qid=str(i)) for i, (e, _) in enumerate(cases)]
    s = score(queries, [r for _, r in cases], m)
    for i, (evidence, retrieved) in enumerate(cases):
        e_set = set().union(*map(units, evidence))
        r_set = set().union(*map(units, retrieved)) if retrieved else set()
        total = sum(len(units(x)) for x in retrieved)
        inter = len(e_set & r_set)
        assert float(s.recall[i]) == pytest.approx(inter / len(e_set))
        assert float(s.precision[i]) == pytest.approx(inter / total if total else 0.0)
        assert float(s.iou[i]) == pytest.approx(inter / (total + len(e_set) - inter))
        found = [len(units(x) & r_set) >= 0.5 * len(units(x)) for x in evidence]
        assert float(s.evidence_recall[i]) == pytest.approx(sum(found) / len(found))


# ------------------------------------------------------------ retrieval pieces


def test_budget_cut_stop_and_skip():
    assert ev.budget_cut([400, 600, 10], 1000, "stop") == [0, 1]  # exactly the budget fits
    assert ev.budget_cut([400, 601, 10], 1000, "stop") == [0]
    assert ev.budget_cut([400, 601, 10], 1000) == [0, 2]  # "skip" is the default, as in Index.expand
    assert ev.budget_cut([1200], 1000) == []
    with pytest.raises(TypeError, match="budget"):  # the 0.1 spelling budget= is gone
        ev.budget_cut([400, 601, 10], budget=1000, pack="stop")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="pack"):
        ev.budget_cut([1], 1, "fill")


def test_hnswlib_search_agrees_with_exact_search():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((2000, 32)).astype(np.float32)
    queries = rng.standard_normal((50, 32)).astype(np.float32)
    exact = ev.VectorSearch(vectors)
    approx = ev.VectorSearch(vectors, exact_max=100)
    assert exact.exact and not approx.exact
    ids_e, sims_e = exact.search(queries, 10)
    ids_a, sims_a = approx.search(queries, 10)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids_e, ids_a)])
    assert overlap >= 0.98
    assert np.allclose(sims_e[:, 0], sims_a[:, 0], atol=1e-5)
    assert exact.search(queries, 5000)[0].shape == (50, 2000)


# ------------------------------------------------------------ datasets


def write(tmp_path: Path, name: str, lines: list) -> Path:
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_the_labelled_set_loads_and_checks_its_quotes():
    corpus = ev.load_corpus(EVAL / "corpus.jsonl")
    queries = ev.load_queries(EVAL / "queries.jsonl", corpus)
    assert len(corpus) == 20 and len(queries) == 48
    kinds = [x.type for x in queries]
    assert kinds.count("unanswerable") == 4 and all(not x.references for x in queries if x.type == "unanswerable")
    assert sum(len(x.references) == 2 and len({r.doc_id for r in x.references}) == 1 for x in queries) >= 8
    assert sum(len({r.doc_id for r in x.references}) == 2 for x in queries) == 2
    assert corpus[0].metadata == {"source": "linux-doc-6.1"}


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", r"queries.jsonl:2: not valid JSON"),
        ("[1, 2]", r"queries.jsonl:2: expected a JSON object, got list"),
        ({"references": []}, r'queries.jsonl:2: missing "query"'),
        ({"query": " ", "references": []}, r'queries.jsonl:2: "query" is empty'),
        ({"query": "x"}, r'queries.jsonl:2: missing "references"'),
        ({"query": "x", "references": {}}, r'queries.jsonl:2: "references" must be list, not dict'),
        (
            {"query": "x", "references": [{"doc_id": "zz", "start": 0, "end": 1}]},
            r"references\[0\]: doc_id 'zz' is not in the corpus",
        ),
        (
            {"query": "x", "references": [{"doc_id": "a", "start": 3, "end": 99}]},
            r"references\[0\]: span \(3, 99\) is not within 'a' \(0..11\)",
        ),
        ({"query": "x", "references": [{"doc_id": "a", "start": 3, "end": 3}]}, r"span \(3, 3\)"),
        ({"query": "x", "references": [{"doc_id": "a", "start": True, "end": 3}]}, r'"start" must be int, not bool'),
        (
            {"query": "x", "references": [{"doc_id": "a", "start": 0, "end": 5, "text": "Hallo"}]},
            r'references\[0\]: "text" differs from the document at \(0, 5\)',
        ),
        ({"query": "x", "type": 3, "references": []}, r'"type" must be str, not int'),
        ({"id": "q1", "query": "x", "references": []}, r"id 'q1' repeats .*queries.jsonl:1"),
    ],
)
def test_query_loader_names_the_bad_line(tmp_path, line, message):
    corpus = [Document("a", "Hello world")]
    path = write(tmp_path, "queries.jsonl", [{"id": "q1", "query": "ok", "references": []}, line])
    with pytest.raises(ev.DatasetError, match=message):
        ev.load_queries(path, corpus)


@pytest.mark.parametrize(
    "lines, message",
    [
        ([{"doc_id": "a", "text": "x"}, {"doc_id": "a", "text": "y"}], r"corpus.jsonl:2: doc_id 'a' repeats .*:1"),
        ([{"doc_id": "a"}], r'corpus.jsonl:1: record has no "text"'),
        ([{"doc_id": ["a"], "text": "x"}], r'"doc_id" must be a string or an integer, not list'),
        ([{"text": "x"}], r'corpus.jsonl:1: record has no "doc_id" \(or "id"\)'),
        ([], r"corpus.jsonl: no documents"),
    ],
)
def test_corpus_loader_names_the_bad_line(tmp_path, lines, message):
    with pytest.raises(ev.DatasetError, match=message):
        ev.load_corpus(write(tmp_path, "corpus.jsonl", lines))


def test_corpus_loader_accepts_id_and_gzip(tmp_path):
    import gzip

    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"id": 7, "text": "x", "source": "s"}) + "\n\n")
    assert ev.load_corpus(path) == [Document("7", "x", {"source": "s"})]
    with pytest.raises(ev.DatasetError, match="cannot read .*missing.jsonl"):
        ev.load_corpus(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    "body, message",
    [
        ('[chunker]\ntype = "recursive"\n[extra]\n', r"unknown key 'extra'"),
        ('[chunker]\ntype = "fractal"\n', r"\[chunker\] type must be one of .*not 'fractal'"),
        ('[chunker]\ntype = "token"\n[representation]\ntype = "late-ish"\n', r"\[representation\] type must be"),
        (
            '[chunker]\ntype = "chunkforge:NoSuchChunker"\n',
            r"\[chunker\] type 'chunkforge:NoSuchChunker' cannot be imp",
        ),
        ('[representation]\ntype = "plain"\n', r"\[chunker\] is missing"),
        ("[chunker\n", r"not valid TOML"),
    ],
)
def test_config_errors_name_the_file(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(ev.DatasetError, match=f"config {path}: " + message):
        ev.Config.load(path)


def test_config_builds_the_chunker_and_names_bad_parameters(tmp_path):
    path = tmp_path / "by-path.toml"
    path.write_text(
        '[chunker]\ntype = "chunkforge:SentenceChunker"\nmax_tokens = 64\n'
        '[representation]\ntype = "chunkforge.eval:heading_representation"\n'
    )
    assert isinstance(ev.Config.load(path).make_chunker(None), chunkforge.SentenceChunker)
    cfg = ev.Config.load(CONFIGS[1])
    assert cfg.name == "token-128-overlap-16"
    chunker = cfg.make_chunker(chunkforge.Tokenizer.default())
    assert isinstance(chunker, chunkforge.TokenChunker) and (chunker.max_tokens, chunker.overlap) == (128, 16)
    path = tmp_path / "typo.toml"
    path.write_text('[chunker]\ntype = "recursive"\nmax_token = 5\n')
    with pytest.raises(ev.DatasetError, match="config typo: \\[chunker\\] .*max_token"):
        ev.Config.load(path).make_chunker(chunkforge.Tokenizer.default())


def test_heading_texts_prefix_the_section_path():
    corpus = ev.load_corpus(EVAL / "corpus.jsonl")
    mutex = corpus[0]
    start = mutex.text.index("Mutexes are represented by")
    chunk = chunkforge.Chunk(mutex.text[start : start + 20], start, start + 20, 5, 0)
    [text] = ev.heading_texts([mutex], [[chunk]])
    assert text == "Generic Mutex Subsystem > Implementation\n\n" + chunk.text
    titled = Document("t.md", "Body only.", {"title": "Guide"})
    assert ev.heading_texts([titled], [[chunkforge.Chunk("Body only.", 0, 10, 3, 0)]]) == ["Guide\n\nBody only."]


# ------------------------------------------------------------ encoder, cache, end to end


@pytest.fixture(scope="module")
def encoder(model_cache):
    return chunkforge.Encoder.default(intra_op_threads=2)


def test_embedding_cache_reuses_vectors(encoder, tmp_path):
    cache = ev.EmbeddingCache(tmp_path / "emb.sqlite")
    texts = ["a mutex sleeps", "zswap compresses pages", "a mutex sleeps"]
    first = cache.embed(encoder, texts)
    assert (cache.embedded, cache.reused) == (2, 1)
    assert np.allclose(first, encoder.embed(texts), atol=1e-6)
    again = ev.EmbeddingCache(tmp_path / "emb.sqlite").embed(encoder, texts[:2] + ["new text"])
    assert np.array_equal(again[:2], first[:2])
    cache.close()
    reopened = ev.EmbeddingCache(tmp_path / "emb.sqlite")
    reopened.embed(encoder, texts + ["new text"])
    assert (reopened.embedded, reopened.reused) == (0, 4)


def test_evaluate_with_a_registered_representation(encoder, tmp_path):
    """The API other modules call: any chunker, any representation function."""
    corpus = ev.load_corpus(EVAL / "corpus.jsonl")[:5]
    queries = [x for x in ev.load_queries(EVAL / "queries.jsonl", corpus) if x.references][:12]
    seen = {}

    def reversed_order(docs, chunks, enc, embed):
        seen["chunks"] = sum(map(len, chunks))
        return embed([c.text for cs in chunks for c in cs])

    ev.register_representation("test-plain", reversed_order)
    cache = ev.EmbeddingCache(tmp_path / "emb.sqlite")
    chunker = chunkforge.RecursiveChunker(encoder.tokenizer, max_tokens=128)
    r = ev.evaluate(corpus, queries, chunker, encoder, representation="test-plain", k=3, budget_tokens=300, cache=cache)
    assert seen["chunks"] == r.chunks
    assert all(len(x) >= 3 for x in r.ranked) and set(r.at_k.n.tolist()) == {3}
    assert (r.at_budget.context <= 300).all()
    plain = ev.evaluate(corpus, queries, chunker, encoder, k=3, budget_tokens=300, cache=cache)
    assert cache.reused >= r.chunks  # the same texts were not embedded twice
    assert np.allclose(plain.at_k.recall, r.at_k.recall)
    assert r.at_k.summary()["recall"]["mean"] > 0.5


def test_cli_eval_three_configs_end_to_end(encoder, tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join((EVAL / "corpus.jsonl").read_text().splitlines(keepends=True)[:5]))
    args = [
        "eval",
        "--corpus",
        str(corpus),
        "--queries",
        str(EVAL / "queries.jsonl"),
        *[a for c in CONFIGS for a in ("--config", str(c))],
        "--k",
        "5",
        "--budget-tokens",
        "1000",
        "--cache",
        str(tmp_path / "emb.sqlite"),
        "--out",
        str(tmp_path / "report"),
        "-v",
    ]
    assert cli.main(args) == 0
    err = capsys.readouterr().err
    assert "3 configs, 48 queries" in err and "from the cache" in err
    rep = json.loads((tmp_path / "report.json").read_text())
    names = [c["name"] for c in rep["configs"]]
    assert names == ["recursive-254", "token-128-overlap-16", "sentence-128-heading"]
    for c in rep["configs"]:
        for mode in ("k", "budget"):
            summary = c["summary"][mode]
            assert set(ev.METRICS) <= set(summary) and 0 <= summary["recall"]["mean"] <= 1
            assert summary["iou"]["mean"] <= summary["recall"]["mean"]
        assert c["summary"]["budget"]["context"]["mean"] <= 1000
        assert set(c["slices"]) == {"type", "document", "source"}
    assert rep["answerable"] == 44 and len(rep["questions"]) == 48
    # found -> missed lists agree with the per-question rows
    for change in rep["changes"]:
        found = {
            x["id"]: (
                x["configs"][change["from"]][change["mode"]]["found"],
                x["configs"][change["to"]][change["mode"]]["found"],
            )
            for x in rep["questions"]
        }
        assert change["found_to_missed"] == [i for i, (a, b) in found.items() if a and not b]
        assert change["missed_to_found"] == [i for i, (a, b) in found.items() if b and not a]
    md = (tmp_path / "report.md").read_text()
    assert "## Retrieval at top k = 5" in md and "## Retrieval at budget = 1000 tokens" in md
    assert "## Found → missed" in md and "| q48 | unanswerable |" in md
    if (tmp_path / "report.png").exists():
        assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a rerun embeds nothing new
    assert cli.main(args) == 0
    assert ", 0 texts embedded" in capsys.readouterr().err


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--corpus": "missing.jsonl"}, "cannot read missing.jsonl"),
        ({"--k": "0"}, "--k must be >= 1, got 0"),
        ({"--coverage": "1.5"}, "--coverage must be in"),
        ({"--config": "nope.toml"}, "cannot read config nope.toml"),
    ],
)
def test_cli_eval_errors_exit_2(tmp_path, capsys, change, message):
    args = {
        "--corpus": str(EVAL / "corpus.jsonl"),
        "--queries": str(EVAL / "queries.jsonl"),
        "--config": str(CONFIGS[0]),
        "--cache": str(tmp_path / "emb.sqlite"),
    } | change
    assert cli.main(["eval", *[x for kv in args.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chunkforge: error: ") and message in err and err.count("\n") == 1


# ------------------------------------------------------------ retrieval policies, shipped configs


def test_shipped_chunker_configs_fit_the_model_window(encoder):
    """Every chunker config shipped beside the labelled set makes texts the encoder takes whole."""
    corpus = ev.load_corpus(EVAL / "corpus.jsonl")
    window = encoder.max_length - encoder.tokenizer.special_token_count
    configs = [ev.Config.load(p) for p in sorted((EVAL / "configs").glob("*.toml"))]
    chunker_configs = [c for c in configs if c.index is None]
    assert len(chunker_configs) >= 3 and any(c.index is not None for c in configs)
    for config in chunker_configs:
        chunks = config.make_chunker(encoder.tokenizer).chunk_batch([d.text for d in corpus])
        kind = config.representation["type"]
        texts = (
            ev.configs.heading_texts(corpus, chunks) if kind == "heading" else ev.configs.embed_texts(corpus, chunks)
        )
        assert int(encoder.tokenizer.count_batch(texts).max()) <= window, config.name


def test_index_policy_config_loads_and_refuses_a_chunker_beside_it(tmp_path):
    config = ev.Config.load(EVAL / "configs" / "index-window-120.toml")
    assert config.index == {} and config.query == {"window_tokens": 120} and config.name == "index-window-120"
    assert "Index.query" in config.describe()
    both = tmp_path / "both.toml"
    both.write_text('[index]\n\n[chunker]\ntype = "token"\n')
    with pytest.raises(ev.DatasetError, match="not both"):
        ev.Config.load(both)


def test_evaluate_index_scores_the_passages_index_query_returns(encoder):
    pytest.importorskip("hnswlib")
    corpus = ev.load_corpus(EVAL / "corpus.jsonl")[:5]
    queries = [x for x in ev.load_queries(EVAL / "queries.jsonl", corpus) if x.references][:10]
    measure = SpanMeasure(corpus)
    r = ev.evaluate_index(
        corpus, queries, encoder, query_options={"window_tokens": 80}, k=4, budget_tokens=400, measure=measure
    )
    index = chunkforge.Index(encoder)
    index.add([{"id": d.doc_id, "text": d.text} for d in corpus])
    assert r.chunks == index.leaf_count
    for i, query in enumerate(queries):
        payload = index.query(query.query, k=100, budget_tokens=400, window_tokens=80)
        assert [(s.doc_id, s.start, s.end) for s, _, _ in r.ranked[i]] == [
            (p.doc_id, p.start, p.end) for p in payload.passages
        ]
    expected = score(queries, [[s for s, _, _ in x] for x in r.ranked], measure, candidates=None)
    np.testing.assert_allclose(r.at_budget.recall, expected.recall)
    assert (r.at_budget.context <= 400).all() and r.at_k.summary()["recall"]["mean"] > 0.3
    with pytest.raises(ValueError, match="budget_tokens"):
        ev.evaluate_index(corpus, queries, encoder, query_options={"budget_tokens": 10})


def test_cli_eval_scores_chunkers_and_policies_on_the_same_questions(encoder, tmp_path, capsys):
    pytest.importorskip("hnswlib")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join((EVAL / "corpus.jsonl").read_text().splitlines(keepends=True)[:5]))
    configs = [EVAL / "configs" / n for n in ("recursive-254.toml", "index-query.toml", "index-window-120.toml")]
    args = ["eval", "--corpus", str(corpus), "--queries", str(EVAL / "queries.jsonl"), "--no-cache"]
    args += [a for c in configs for a in ("--config", str(c))] + ["--out", str(tmp_path / "report")]
    assert cli.main(args) == 0, capsys.readouterr().err
    rep = json.loads((tmp_path / "report.json").read_text())
    assert [c["name"] for c in rep["configs"]] == ["recursive-254", "index-query", "index-window-120"]
    for c in rep["configs"]:
        assert 0 <= c["summary"]["budget"]["recall"]["mean"] <= 1
        assert c["summary"]["budget"]["context"]["mean"] <= 1000
    md = (tmp_path / "report.md").read_text()
    assert "Index.query: index" in md and "index-window-120" in md


# ------------------------------------------------------------ peers: other projects' splitters, one config line each


def peer_texts() -> list[str]:
    return [d.text for d in ev.load_corpus(EVAL / "corpus.jsonl")[:4]] + ["", "One line."]


def peer_chunks(table: dict, tok: chunkforge.Tokenizer, texts: list[str]) -> list[list[chunkforge.Chunk]]:
    """The chunks of ``texts`` by the config ``[chunker]`` table, each checked to be its
    document's exact slice with the evaluation tokenizer's count."""
    per_doc = ev.Config("peer", table).make_chunker(tok).chunk_batch(texts)
    assert len(per_doc) == len(texts) and per_doc[-2] == []
    for text, chunks in zip(texts, per_doc):
        assert [c.index for c in chunks] == list(range(len(chunks)))
        for c in chunks:
            assert text[c.start : c.end] == c.text and c.token_count == tok.count(c.text)
    return per_doc


def test_langchain_and_llamaindex_peers_are_their_own_splitters_in_our_tokens():
    lts = pytest.importorskip("langchain_text_splitters")
    node_parser = pytest.importorskip("llama_index.core.node_parser")
    tok, texts = chunkforge.Tokenizer.default_model(), peer_texts()
    own = lts.RecursiveCharacterTextSplitter(chunk_size=128, chunk_overlap=16, length_function=tok.count)
    for table in (
        {"type": "langchain", "max_tokens": 128, "overlap": 16},
        {"type": "langchain_text_splitters:RecursiveCharacterTextSplitter", "chunk_size": 128, "chunk_overlap": 16},
    ):
        for text, chunks in zip(texts, peer_chunks(table, tok, texts)):
            assert [c.text for c in chunks] == own.split_text(text)
            assert all(c.token_count <= 128 for c in chunks)
    splitter = node_parser.SentenceSplitter(chunk_size=96, chunk_overlap=0, tokenizer=lambda t: [0] * tok.count(t))
    for table in ({"type": "llamaindex", "max_tokens": 96}, {"type": "llama_index.core.node_parser:SentenceSplitter"}):
        table = {"max_tokens": 96, **table}
        for text, chunks in zip(texts, peer_chunks(table, tok, texts)):
            assert [c.text for c in chunks] == [t for t in splitter.split_text(text) if t.strip()]
    token_windows = peer_chunks({"type": "llamaindex", "parser": "TokenTextSplitter", "max_tokens": 64}, tok, texts)
    assert sum(map(len, token_windows)) > 20
    default = ev.Config("peer", {"type": "langchain"}).make_chunker(tok)  # max_tokens: the model's window
    assert max(c.token_count for c in default.chunk_batch(texts)[0]) > 200


def test_semchunk_and_chonkie_peers_keep_their_own_offsets():
    semchunk = pytest.importorskip("semchunk")
    tok, texts = chunkforge.Tokenizer.default_model(), peer_texts()
    own = semchunk.chunkerify(tok.count, 100)
    for text, chunks in zip(texts, peer_chunks({"type": "semchunk", "max_tokens": 100}, tok, texts)):
        assert [(c.start, c.end) for c in chunks] == (own(text, offsets=True)[1] if text else [])
        assert all(c.token_count <= 100 for c in chunks)
    chonkie = pytest.importorskip("chonkie")  # the bench extra only: a native wheel
    from chunkforge.eval.peers import hf_tokenizer

    for name in ("RecursiveChunker", "SentenceChunker"):
        theirs = getattr(chonkie, name)(tokenizer=hf_tokenizer(tok), chunk_size=100)
        table = {"type": "chonkie", "chunker": name, "max_tokens": 100}
        for text, chunks in zip(texts, peer_chunks(table, tok, texts)):
            assert [(c.start, c.end) for c in chunks] == [(x.start_index, x.end_index) for x in theirs.chunk(text)]
    with pytest.raises(ev.DatasetError, match="chonkie RecursiveChunker has no chunk_overlap"):
        ev.Config("peer", {"type": "chonkie", "overlap": 8}).make_chunker(tok)


def test_eval_hook_contract():
    """``type = "package.module:Factory"``: Factory(tokenizer, **params) returns a chunker
    (chunk_batch), a framework's splitter (wrapped), or a function str -> list[str]; anything
    else is one error stating the contract."""
    tok = chunkforge.Tokenizer.default_model()
    made = ev.Config("hook", {"type": "chunkforge:RecursiveChunker", "max_tokens": 32}).make_chunker(tok)
    assert isinstance(made, chunkforge.RecursiveChunker)  # chunkforge's own: as it is
    from chunkforge.eval.peers import as_chunker

    lines = as_chunker(str.splitlines, tok, "lines").chunk_batch(["a b\nc d e\n\nf"])[0]
    assert [(c.text, c.start, c.end) for c in lines] == [("a b", 0, 3), ("c d e", 4, 9), ("f", 11, 12)]
    with pytest.raises(ev.DatasetError, match=r"gave a str, not a chunker: .*chunk_batch\(texts\)"):
        ev.Config("hook", {"type": "builtins:str"}).make_chunker(tok)
    with pytest.raises(ev.DatasetError, match=r"lines: chunk 0 is not a slice of its document"):
        as_chunker(lambda text: [text.upper()], tok, "lines").chunk_batch(["abc"])
    with pytest.raises(ev.DatasetError, match=r"boom failed on document 0: ZeroDivisionError"):
        as_chunker(lambda text: [str(1 / 0)], tok, "boom").chunk_batch(["abc"])


def test_cli_eval_compares_a_plain_langchain_splitter_and_names_a_bad_hook(encoder, tmp_path, capsys):
    pytest.importorskip("langchain_text_splitters")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join((EVAL / "corpus.jsonl").read_text().splitlines(keepends=True)[:5]))
    plain = tmp_path / "langchain-plain.toml"  # was a traceback: the splitter has no chunk_batch
    plain.write_text('[chunker]\ntype = "langchain_text_splitters:RecursiveCharacterTextSplitter"\nmax_tokens = 128\n')
    peer = tmp_path / "llamaindex.toml"
    peer.write_text('[chunker]\ntype = "llamaindex"\nmax_tokens = 128\n')
    args = ["eval", "--corpus", str(corpus), "--queries", str(EVAL / "queries.jsonl"), "--no-progress", "--no-cache"]
    assert cli.main([*args, "--config", str(plain), "--config", str(peer), "--out", str(tmp_path / "r")]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert [c["name"] for c in rep["configs"]] == ["langchain-plain", "llamaindex"]
    assert all(c["summary"]["k"]["recall"]["mean"] > 0 for c in rep["configs"])
    capsys.readouterr()
    bad = tmp_path / "bad-hook.toml"
    bad.write_text('[chunker]\ntype = "builtins:str"\n')
    assert cli.main([*args, "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chunkforge: error: config bad-hook: [chunker] type 'builtins:str' gave a str")
    assert err.count("\n") == 1


def test_a_corpus_can_name_source_files_and_label_evidence_in_their_read_text(tmp_path):
    """An evaluation corpus names a PDF, DOCX or HTML file (``"path"``) or holds HTML
    (``"format": "html"``); the document is the reader's canonical text, which the evidence
    offsets index."""
    pytest.importorskip("pypdfium2")
    pytest.importorskip("selectolax")
    import shutil

    from chunkforge.readers import read_file

    data = Path(__file__).parent / "data" / "documents"
    shutil.copy(data / "report.pdf", tmp_path / "report.pdf")
    html = (data / "page.html").read_text(encoding="utf-8")
    write(
        tmp_path,
        "corpus.jsonl",
        [
            json.dumps({"doc_id": "report.pdf", "path": "report.pdf"}),
            json.dumps({"doc_id": "page", "text": html, "format": "html"}),
        ],
    )
    docs = ev.load_corpus(tmp_path / "corpus.jsonl")
    assert docs[0].text == read_file(tmp_path / "report.pdf").text and docs[0].metadata["format"] == "pdf"
    assert "<script" not in docs[1].text and "<p>" not in docs[1].text and docs[1].text.startswith("Home | Docs")
    with pytest.raises(ev.DatasetError, match=r"bad.jsonl:1: cannot read .*missing.pdf"):
        ev.load_corpus(write(tmp_path, "bad.jsonl", [json.dumps({"doc_id": "m", "path": "missing.pdf"})]))
