"""Type stubs of chunkforge's native (Rust) module."""

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

_T = TypeVar("_T")

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

class Expander:
    def __init__(self, tokenizer: Tokenizer) -> None: ...
    def add_docs(
        self,
        texts: list[str],
        sentences: list[npt.NDArray[np.int64]],
        nodes: list[npt.NDArray[np.int64]],
        leaves: list[list[int]],
        labels: list[list[int]],
    ) -> list[int]: ...
    def remove(self, slot: int) -> None: ...
    def expand_objects(
        self,
        hits: Sequence[Any],
        docs: list[Any],
        passage_type: type[_T],
        window: int | None = None,
        window_tokens: int | None = None,
        parent: bool = False,
        auto_merge: float | None = None,
        budget: int | None = None,
        order: str = "score",
        pack: str = "skip",
        trim: bool = False,
    ) -> tuple[list[_T], list[Any]]: ...
