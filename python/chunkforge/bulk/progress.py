"""What a bulk run did (:class:`JobSummary`) and its progress bar, both fed one shard's
counts at a time.

>>> summary = JobSummary(out="vectors")
>>> with Progress(False, summary) as bar:
...     bar.update(ShardStats(docs=2, rows=5, tokens=90, embedded=5, embedded_tokens=90), built=True)
>>> summary.line()
'2 docs, 5 chunks, 90 tokens: 5 chunks embedded, 0 from the vector cache; 1 shards built, 0 kept -> vectors'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tqdm import tqdm

from .._progress import ProgressLines, job_progress
from .shards import ShardStats


@dataclass
class JobSummary:
    """What a run did: documents and chunk rows in the dataset, tokens of those chunks, chunks
    embedded now and taken from the vector cache, shards built now and kept as they were."""

    docs: int = 0
    rows: int = 0
    tokens: int = 0
    embedded: int = 0
    embedded_tokens: int = 0
    cached: int = 0
    shards_built: int = 0
    shards_kept: int = 0
    seconds: float = 0.0
    out: str = ""

    def line(self) -> str:
        """The one-line summary the CLI prints."""
        return (
            f"{self.docs} docs, {self.rows} chunks, {self.tokens} tokens: {self.embedded} chunks embedded, "
            f"{self.cached} from the vector cache; {self.shards_built} shards built, "
            f"{self.shards_kept} kept -> {self.out}"
        )


@dataclass
class Progress:
    """The progress bar: documents (with an ETA once they are counted), tokens/s, chunks.
    ``show`` as for :func:`chunkforge._progress.job_progress` (``"log"``: off a terminal, a
    plain line every 30 s)."""

    show: bool | str | None
    summary: JobSummary
    started: float = field(default_factory=time.perf_counter)
    bar: tqdm | ProgressLines | None = None

    def __enter__(self) -> Progress:
        self.bar = job_progress(self.show, "embed-docs", unit=" docs", smoothing=0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.bar is not None
        self.bar.close()

    def set_total(self, total: int) -> None:
        assert self.bar is not None
        self.bar.total = total
        self.bar.refresh()

    def update(self, stats: ShardStats, built: bool) -> None:
        s = self.summary
        s.docs += stats.docs
        s.rows += stats.rows
        s.tokens += stats.tokens
        s.embedded += stats.embedded
        s.embedded_tokens += stats.embedded_tokens
        s.cached += stats.rows - stats.embedded if built else 0
        s.shards_built += built
        s.shards_kept += not built
        assert self.bar is not None
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.bar.set_postfix_str(
            f"{s.embedded_tokens / elapsed:,.0f} tok/s, {s.rows} chunks ({s.embedded} embedded)", refresh=False
        )
        self.bar.update(stats.docs)
