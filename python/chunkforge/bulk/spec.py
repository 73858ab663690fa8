"""What the bulk job computes: :class:`JobSpec`, its settings checked and turned into the
encoder and chunkers of the job.

>>> JobSpec(strategy="sentence", max_tokens=128).strategy
'sentence'
>>> JobSpec(units="leaves").check()
Traceback (most recent call last):
...
chunkforge.errors.InputError: units must be one of chunks, tree, not 'leaves'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._io import TEXT_KEY
from .._options import ChunkerOptions, ChunkerSet, EncoderOptions, load_encoder
from ..chunkers.registry import bulk_strategies
from ..errors import InputError
from ..tokenizer import check_threads

if TYPE_CHECKING:
    from ..encoder import Encoder
    from ..index.trees import TreeSettings

SHARD_DOCS = 64
UNITS = ("chunks", "tree")
"""What the job writes a row for: a chunk, or a leaf of the document's tree (the index's
units; the documents' trees beside, see :mod:`chunkforge.index.trees`)."""
DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class JobSpec:
    """What the job computes. Every setting that changes a row is part of the shards' names
    (with the model's fingerprint), so changing one rebuilds the shards it affects.

    ``max_tokens=None`` is the encoder's window (``max_length`` minus special tokens);
    ``id_column=None`` is chunkforge's id rule (``doc_id``, else ``id``, else ``"<path>:<line>"``);
    ``threads``, ``max_batch_tokens`` and ``reuse`` change speed only: ``reuse`` names earlier
    vectors to take instead of embedding again (bulk dataset folders, or Parquet files written by
    ``chunkforge embed``; entries with this job's model fingerprint and dtype, by chunk text hash).
    ``main_content`` reads HTML files' main content only (the text it gives names the shards).

    >>> JobSpec(dtype="float16", shard_docs=8).dtype
    'float16'
    """

    model: str = "default"
    variant: str = "auto"
    strategy: str = "recursive"
    max_tokens: int | None = None
    overlap: int = 0
    with_text: bool = False
    dtype: str = "float32"
    id_column: str | None = None
    text_column: str = TEXT_KEY
    on_overflow: str = "warn"
    max_batch_tokens: int | None = None
    threads: int | None = None
    shard_docs: int = SHARD_DOCS
    units: str = "chunks"
    leaf_tokens: int = 48
    parent_tokens: tuple[int, ...] = (256,)
    structure: str | None = "auto"
    search_prefix: bool = True
    reuse: tuple[str, ...] = ()
    main_content: bool = False

    @property
    def tree(self) -> TreeSettings | None:
        """With ``units="tree"``, how documents are cut into the index's trees."""
        if self.units != "tree":
            return None
        from ..index.trees import TreeSettings

        return TreeSettings(self.leaf_tokens, tuple(self.parent_tokens), self.structure, self.search_prefix)

    def check(self) -> None:
        """Raises InputError naming the first bad parameter."""
        if self.units not in UNITS:
            raise InputError(f"must be one of {', '.join(UNITS)}, not {self.units!r}", param="units")
        if self.tree is not None:
            self.tree.check()
        if self.strategy not in bulk_strategies():
            raise InputError(f"must be one of {', '.join(bulk_strategies())}, not {self.strategy!r}", param="strategy")
        if self.dtype not in DTYPES:
            raise InputError(f"must be float32 or float16, not {self.dtype!r}", param="dtype")
        for name in ("max_tokens", "max_batch_tokens", "threads", "shard_docs"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"must be >= 1 (an integer), not {value!r}", param=name)
        try:
            check_threads(self.threads)
        except ValueError as exc:
            raise InputError.of(exc) from exc
        if isinstance(self.overlap, bool) or not isinstance(self.overlap, int) or self.overlap < 0:
            raise InputError(f"must be >= 0 (an integer), not {self.overlap!r}", param="overlap")
        if not isinstance(self.reuse, (tuple, list)) or not all(isinstance(p, str) for p in self.reuse):
            raise InputError(f"must be a list of paths (str), not {self.reuse!r}", param="reuse")
        for name in ("id_column", "text_column"):
            value = getattr(self, name)
            if (value is not None or name == "text_column") and (not isinstance(value, str) or not value):
                raise InputError("must be a non-empty string", param=name)

    def encoder(self) -> Encoder:
        """The encoder this job embeds with."""
        return load_encoder(
            EncoderOptions(
                model=self.model,
                variant=self.variant,
                on_overflow=self.on_overflow,
                max_batch_tokens=self.max_batch_tokens,
                threads=self.threads,
                show_progress=False,
            )
        )

    def chunker_config(self, encoder: Encoder) -> dict[str, Any]:
        """The chunker settings as recorded in the manifest (``max_tokens`` resolved; with
        ``units="tree"``, the trees' settings)."""
        if self.tree is not None:
            return {"units": "tree", **self.tree.as_dict(), "tokenizer": "the model's"}
        head, tail = encoder.special_token_counts
        max_tokens = self.max_tokens or encoder.max_length - head - tail
        return {
            "strategy": self.strategy,
            "max_tokens": max_tokens,
            "overlap": self.overlap,
            "tokenizer": "the model's",
        }

    def chunkers(self, encoder: Encoder) -> ChunkerSet:
        """The chunkers, on the encoder's tokenizer."""
        max_tokens = self.chunker_config(encoder)["max_tokens"]
        return ChunkerSet(ChunkerOptions(self.strategy, max_tokens, self.overlap, tokenizer=encoder.tokenizer))
