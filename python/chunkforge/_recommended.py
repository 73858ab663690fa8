"""The query-time expansion chunkforge recommends, chosen by
``benches/expansion_eval.py`` (``benches/results/expansion-eval.md``): on the
labelled set, 50 hybrid-ranked sentence leaves packed into the budget as they are
(``window=0``) had the best evidence recall at 500 and 1,000 tokens of every
payload policy (0.864 and 0.943; windows, parents and auto-merging 0.17-0.93),
level with plain 128-token chunks. Used by ``Index.query`` and ``chunkforge query``
(no optional dependencies, so the CLI can read it without the index extra)."""

RECOMMENDED = {"k": 50, "window": 0, "budget_tokens": 1000}
