"""Type stubs of chunkforge's native (Rust) module."""

from typing import Any, Iterable, Literal, Sequence, TypeVar

import numpy as np
import numpy.typing as npt

_T = TypeVar("_T")
_P = TypeVar("_P")
Syntax = Literal["markdown", "rst", "asciidoc"]
Order = Literal["score", "document"]
Pack = Literal["skip", "stop"]

class Tokenizer:
    @staticmethod
    def from_str(json: str) -> Tokenizer: ...
    @staticmethod
    def from_file(path: str) -> Tokenizer: ...
    @property
    def fast_path(self) -> bool: ...
    def count(self, text: str) -> int: ...
    def count_batch(self, texts: Iterable[str], threads: int | None = None) -> npt.NDArray[np.int64]: ...
    def encode_offsets(self, text: str) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]: ...
    def encode_padded(
        self,
        texts: Iterable[str],
        max_length: int,
        add_special_tokens: bool = True,
        return_offsets: bool = False,
        threads: int | None = None,
    ) -> tuple[
        npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64] | None, npt.NDArray[np.int64]
    ]: ...
    def special_tokens(self) -> tuple[list[int], list[int]]: ...
    @property
    def tokenized(self) -> tuple[int, int]:
        """``(texts, bytes)`` tokenized whole so far (a diagnostic counter)."""

class Chunker:
    def __init__(
        self,
        tokenizer: Tokenizer,
        strategy: str,
        max_tokens: int,
        overlap: int = 0,
        min_tokens: int = 0,
        overlap_sentences: int = 0,
        separators: list[str] | None = None,
    ) -> None: ...
    def spans(
        self, text: str
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    def spans_batch(
        self, texts: Iterable[str], threads: int | None = None
    ) -> tuple[
        npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]
    ]: ...
    def spans_batch_ids(
        self, texts: Iterable[str], threads: int | None = None
    ) -> tuple[
        npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
        npt.NDArray[np.uint32], npt.NDArray[np.int64],
    ]:
        """``spans_batch`` and each chunk's token ids (``ids[bounds[i]:bounds[i + 1]]``) from
        the tokenization the chunker sized on."""
    def structured_batch(
        self, texts: Iterable[str], threads: int | None = None
    ) -> list[tuple[npt.NDArray[np.int64], list[list[str]]]]: ...
    def structured_batch_ids(
        self, texts: Iterable[str], threads: int | None = None
    ) -> list[tuple[npt.NDArray[np.int64], list[list[str]], npt.NDArray[np.uint32], npt.NDArray[np.int64]]]:
        """``structured_batch`` and each chunk's token ids, per text."""

class SpanCounter:
    def __init__(self, tokenizer: Tokenizer, text: str) -> None: ...
    def count(self, start: int, end: int) -> int: ...
    def count_many(self, starts: list[int], ends: list[int]) -> list[int]: ...
    def __len__(self) -> int: ...

def max_threads() -> int: ...

def split_sentences(text: str) -> list[tuple[int, int]]: ...

_SpanColumns = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]

def span_overlaps(
    queries: int,
    evidence: _SpanColumns,
    retrieved: _SpanColumns,
    token_ends: list[npt.NDArray[np.int64]] | None = None,
) -> list[npt.NDArray[np.int64]]: ...
def late_windows(
    n: int, window: int, overlap: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
def late_pool(
    vectors: npt.NDArray[np.float32],
    offsets: npt.NDArray[np.int64],
    spans: npt.NDArray[np.int64],
    normalize: bool,
) -> npt.NDArray[np.float32]: ...

class DocTree:
    """A document cut into its tree by ``Expander.build``, until ``Expander.insert`` takes it."""
    @property
    def nodes(self) -> npt.NDArray[np.int64]:
        """``(m, 5)`` rows ``(start, end, parent or -1, section, level)``, parents first."""
    @property
    def leaves(self) -> npt.NDArray[np.int64]:
        """Node index of each leaf, in text order."""
    @property
    def leaf_token_ids(self) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """``(ids, bounds)``: leaf ``i``'s token ids are ``ids[bounds[i]:bounds[i + 1]]``."""

class Expander:
    """An index's documents (trees, for expansion) and leaf labels; owns each
    document's id, text and heading paths."""
    def __init__(self, tokenizer: Tokenizer) -> None: ...
    def build(
        self,
        texts: Sequence[str],
        syntaxes: Sequence[Syntax | None],
        leaf_tokens: int,
        parent_tokens: Sequence[int],
        threads: int | None = None,
    ) -> list[DocTree]:
        """Trees of documents, each tokenized once (parallel, GIL released)."""
    def insert(self, trees: list[DocTree], labels: list[list[int]], doc_ids: list[str], texts: list[str]) -> list[int]:
        """Puts built trees in the store; returns their slots."""
    def add_docs(
        self,
        texts: list[str],
        sentences: list[npt.NDArray[np.int64]],
        nodes: list[npt.NDArray[np.int64]],
        leaves: list[list[int]],
        labels: list[list[int]],
        doc_ids: list[str],
        headings: list[list[list[str]]],
    ) -> list[int]:
        """Adds saved trees (``nodes`` ``(m, 4)``, ``sentences`` ``(n, 3)``); returns their slots."""
    def remove(self, slot: int) -> None: ...
    def leaves_of(self, labels: Sequence[int]) -> list[tuple[int, int, int, tuple[str, ...]]]:
        """``(slot, start, end, heading_path)`` of each label's leaf."""
    def leaves_under(self, slot: int, prefix: Sequence[str]) -> list[int]:
        """Leaf indices of a document whose section's heading path starts with ``prefix``."""
    def tree(
        self, slot: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], list[list[str]]]:
        """``(nodes, leaves, sentences, headings)`` of the document in ``slot``."""
    def expand(
        self,
        hits: list[_T],
        labels: Sequence[int],
        scores: Sequence[float],
        passage_type: type[_P],
        window: int | None = None,
        window_tokens: int | None = None,
        parent: bool = False,
        auto_merge: float | None = None,
        budget_tokens: int | None = None,
        order: Order = "score",
        pack: Pack = "skip",
        trim: bool = False,
    ) -> tuple[list[_P], list[_T]]:
        """Hits (leaf ``labels[i]`` with ``scores[i]``) -> ``(passages, dropped hits)``."""
