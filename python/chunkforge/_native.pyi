"""Type stubs of chunkforge's native (Rust) module, ``chunkforge._native``.

Private: only :mod:`chunkforge.tokenizer` and the classes that own a native object
(the chunkers, :class:`~chunkforge.index.Index`, the encoder's tokenizer) call it.
Offsets are code points of the Python ``str`` unless said otherwise; ``threads=None``
means all cores (and at most :func:`max_threads`); the GIL is released around native work.
Bad input raises :class:`~chunkforge.errors.InputError`, a ``tokenizer.json`` that cannot
be loaded :class:`~chunkforge.errors.TokenizerError`, a leaf label or document slot not in
the index :class:`~chunkforge.errors.NotInIndexError` (all ``ValueError``s).
"""

from collections.abc import Iterable, Sequence
from typing import Generic, Literal, Protocol, TypeVar, final

import numpy as np
import numpy.typing as npt

_T = TypeVar("_T")
_P = TypeVar("_P")
_Q = TypeVar("_Q")
Strategy = Literal["token", "recursive", "sentence", "markdown", "rst", "asciidoc"]
"""How a :class:`Chunker` cuts (``markdown``, ``rst`` and ``asciidoc`` follow the document's structure)."""
Syntax = Literal["markdown", "rst", "asciidoc"]
"""The markup whose headings open sections."""
Order = Literal["score", "document"]
"""Payload order: best passage first, or grouped by document in text order."""
Pack = Literal["skip", "stop"]
"""What packing does with a passage that does not fit the budget."""
__all__ = [
    "Chunker",
    "DocTree",
    "Expander",
    "SpanCounter",
    "Tokenizer",
    "int8_weights_exact",
    "late_pool",
    "late_windows",
    "max_threads",
    "node_id",
    "span_overlaps",
    "split_sentences",
]

class ExpandParams(Protocol):
    """What :meth:`Expander.expand` reads of its options (as
    :class:`chunkforge.index.options.ExpandOptions` holds them)."""

    @property
    def window(self) -> int | None: ...
    @property
    def window_tokens(self) -> int | None: ...
    @property
    def parent(self) -> bool: ...
    @property
    def auto_merge(self) -> float | None: ...
    @property
    def spread(self) -> float | None: ...
    @property
    def budget_tokens(self) -> int | None: ...
    @property
    def order(self) -> Order: ...
    @property
    def pack(self) -> Pack: ...
    @property
    def trim(self) -> bool: ...

_Ints = npt.NDArray[np.int64]
_Ids = npt.NDArray[np.uint32]
_SpanColumns = tuple[_Ints, _Ints, _Ints, _Ints]

@final
class Tokenizer:
    """A ``tokenizer.json`` (HF ``tokenizers``), counting without special tokens,
    truncation or padding; exact fast paths for WordPiece and byte-level BPE."""
    @staticmethod
    def from_str(json: str) -> Tokenizer:
        """Loads the JSON text of a ``tokenizer.json``.

        Raises:
            TokenizerError: the text is not a ``tokenizer.json``."""
    @staticmethod
    def from_file(path: str) -> Tokenizer:
        """Loads a ``tokenizer.json`` file.

        Raises:
            OSError: the file cannot be read (naming it).
            TokenizerError: it is not a ``tokenizer.json`` (naming it)."""
    @property
    def fast_path(self) -> bool:
        """True when documents take the exact fast path rather than HF's pipeline."""
    @property
    def tokenized(self) -> tuple[int, int]:
        """``(texts, bytes)`` tokenized whole so far (a diagnostic counter)."""
    def count(self, text: str) -> int:
        """Tokens of ``text``."""
    def count_batch(self, texts: Iterable[str], threads: int | None = None) -> _Ints:
        """Tokens of each text, in parallel."""
    def words(self, texts: Iterable[str], threads: int | None = None) -> list[bytes | None]:
        """Each text's words, saved (6 bytes a word: little-endian uint16 ``(gap since the last
        word's end, length, 2 * tokens + added)``, byte lengths of its UTF-8), to keep beside it:
        :meth:`Expander.add_docs` then takes the text without tokenizing it again. None for a
        text this tokenizer cannot count word by word, or where a value does not fit 16 bits."""
    def encode_offsets(self, text: str) -> tuple[_Ids, _Ints]:
        """Token ids of ``text`` and their ``(n, 2)`` offsets."""
    def encode_padded(
        self,
        texts: Iterable[str],
        max_length: int,
        add_special_tokens: bool = True,
        return_offsets: bool = False,
        threads: int | None = None,
    ) -> tuple[_Ints, _Ints, npt.NDArray[np.int64] | None, _Ints]:
        """Model inputs ``(input_ids, attention_mask, offsets or None, full_lengths)``: rows
        padded to the longest (at most ``max_length``), ``offsets`` ``(n, width, 2)``,
        ``full_lengths`` the tokens of each text before truncation."""
    def special_tokens(self) -> tuple[list[int], list[int]]:
        """The special token ids put before and after one sequence, e.g. ``([101], [102])``."""

@final
class Chunker:
    """A configured chunker; the Python chunker classes validate its parameters
    (:class:`~chunkforge.errors.InputError` for one they let through)."""
    def __init__(
        self,
        tokenizer: Tokenizer,
        strategy: Strategy,
        max_tokens: int,
        overlap: int = 0,
        min_tokens: int = 0,
        overlap_sentences: int = 0,
        separators: list[str] | None = None,
    ) -> None: ...
    def spans(self, text: str) -> tuple[_Ints, _Ints, _Ints]:
        """``(starts, ends, token_counts)`` of the chunks of ``text``."""
    def spans_batch(self, texts: Iterable[str], threads: int | None = None) -> _SpanColumns:
        """``(doc_index, starts, ends, token_counts)`` of the chunks of every text, in order."""
    def spans_batch_ids(
        self, texts: Iterable[str], threads: int | None = None
    ) -> tuple[_Ints, _Ints, _Ints, _Ints, _Ids, _Ints]:
        """``spans_batch`` and ``(token_ids, bounds)``: chunk ``i``'s ids (as if its text were
        encoded alone, no special tokens) are ``token_ids[bounds[i]:bounds[i + 1]]``, from
        the one tokenization the chunker sized on."""
    def structured_batch(self, texts: Iterable[str], threads: int | None = None) -> list[tuple[_Ints, list[list[str]]]]:
        """Per text (structured strategies): ``(n, 7)`` rows ``(start, end, token_count,
        section, kind, context_start, context_end)`` (context -1 when none) and the heading
        path of each section."""
    def structured_batch_ids(
        self, texts: Iterable[str], threads: int | None = None
    ) -> list[tuple[_Ints, list[list[str]], _Ids, _Ints]]:
        """``structured_batch`` and, per text, its chunks' ``(token_ids, bounds)``."""

@final
class SpanCounter:
    """Exact token counts of any span of one text, tokenized once."""
    def __init__(self, tokenizer: Tokenizer, text: str) -> None: ...
    def count(self, start: int, end: int) -> int:
        """Tokens of ``text[start:end]`` encoded alone."""
    def count_many(self, starts: list[int], ends: list[int]) -> list[int]:
        """:meth:`count` of many spans."""
    def __len__(self) -> int:
        """The length of the text in code points (its ``len``), the end of its last span."""

def int8_weights_exact() -> bool:
    """Whether ONNX Runtime multiplies uint8 activations by int8 weights exactly on this CPU
    (on x86 only with AVX512-VNNI or AVX-VNNI; elsewhere its 16-bit pair sums saturate)."""

def max_threads() -> int:
    """The largest ``threads`` value accepted: 4 x the cores (``threads=None`` uses the cores)."""

def node_id(doc_id: str, start: int, end: int, level: int) -> str:
    """The stable id of a tree node: the 8-byte BLAKE2b digest, in hex, of
    ``f"{doc_id}\\0{start}\\0{end}\\0{level}"`` in UTF-8 (lone surrogates as ``surrogatepass``)."""

def split_sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (UAX #29 with rules for documents)."""

def span_overlaps(
    queries: int,
    evidence: _SpanColumns,
    retrieved: _SpanColumns,
    token_ends: list[_Ints] | None = None,
) -> list[_Ints]:
    """Per query, the characters (or tokens, given each document's ``token_ends``) of
    evidence, of retrieved text and of their overlap; span columns are ``(query, doc,
    start, end)``."""

def late_windows(n: int, window: int, overlap: int) -> tuple[_Ints, _Ints]:
    """Late chunking's model windows over ``n`` tokens: the first token of each window and,
    per token, the window its vector is taken from."""

def late_pool(
    vectors: npt.NDArray[np.float32],
    offsets: _Ints,
    spans: _Ints,
    normalize: bool,
) -> npt.NDArray[np.float32]:
    """Mean of the token ``vectors`` whose ``offsets`` fall in each of ``spans``."""

@final
class DocTree:
    """A document cut into its tree by :meth:`Expander.build`, until
    :meth:`Expander.insert` takes it."""
    @property
    def nodes(self) -> _Ints:
        """``(m, 5)`` rows ``(start, end, parent or -1, section, level)``, parents first."""
    @property
    def leaves(self) -> _Ints:
        """Node index of each leaf, in text order."""
    @property
    def headings(self) -> list[list[str]]:
        """The heading path of each section (a node's ``section`` indexes it)."""
    @property
    def leaf_token_ids(self) -> tuple[_Ids, _Ints]:
        """``(ids, bounds)``: leaf ``i``'s token ids are ``ids[bounds[i]:bounds[i + 1]]``."""

@final
class Expander(Generic[_T, _P, _Q]):
    """An index's documents (their trees, for expansion) and its leaf labels; owns each
    document's id, text and heading paths. Makes hits of ``hit_type`` (a frozen, slotted
    dataclass of the 8 fields ``(doc_id, start, end, score, text, heading_path, id,
    leaf)``), passages of ``passage_type`` and payloads of ``payload_type`` (named tuples),
    each type checked once here. Safe to share between threads: the documents sit behind
    its own readers-writer lock, waited for with the GIL released."""
    def __init__(
        self, tokenizer: Tokenizer, hit_type: type[_T], passage_type: type[_P], payload_type: type[_Q]
    ) -> None: ...
    def build(
        self,
        texts: Sequence[str],
        syntaxes: Sequence[Syntax | None],
        leaf_tokens: int,
        parent_tokens: Sequence[int],
        threads: int | None = None,
    ) -> list[DocTree]:
        """Trees of documents, each tokenized once: sections by the headings of its syntax
        (None: one section), levels of sentence-packed parents of ``parent_tokens``
        (largest first), leaves of a sentence or a piece of at most ``leaf_tokens``."""
    def insert(self, trees: list[DocTree], labels: list[list[int]], doc_ids: list[str], texts: list[str]) -> list[int]:
        """Puts built trees in the store, leaves labelled ``labels[i]``; returns their slots."""
    def add_docs(
        self,
        texts: list[str],
        sentences: list[_Ints],
        nodes: list[_Ints],
        leaves: list[list[int]],
        labels: list[list[int]],
        doc_ids: list[str],
        headings: Sequence[list[list[str]] | str],
        words: Sequence[bytes | None] | None = None,
        parts: Sequence[tuple[int, int]] | None = None,
    ) -> list[int]:
        """Adds saved trees (``nodes`` ``(m, 4)`` without levels, ``sentences`` ``(n, 3)``,
        ``headings`` each section's heading path, or them as a JSON array as a docs table holds
        them), each text tokenized in parallel unless its ``words`` (:meth:`Tokenizer.words`)
        were saved with it; returns their slots. With ``parts``, text ``i`` is a part of a
        document (a section, as a store's reader reads it): ``parts[i]`` is ``(base, group)``,
        the text is the document's from code point ``base`` on, the offsets are the
        document's, and the parts of one document share a ``group`` (passages in document
        order keep them together).

        Raises:
            InputError: a tree or a text's words do not fit its text."""
    def remove(self, slot: int) -> None:
        """Removes the document in ``slot``; its labels and its slot become free (the next
        document added takes the slot).

        Raises:
            NotInIndexError: no document is in ``slot``."""
    def hits(self, labels: Sequence[int], scores: Sequence[float], level: int) -> list[_T]:
        """A hit ``(doc_id, start, end, score, text, heading_path, id, leaf)`` of each label's
        leaf, its ``__slots__`` set with ``object.__setattr__`` (a frozen dataclass), ids of tree ``level``.

        Raises:
            InputError: ``labels`` and ``scores`` differ in length.
            NotInIndexError: a label is no leaf of the index."""
    def leaves_under(self, slot: int, prefix: Sequence[str]) -> list[int]:
        """Leaf indices of a document whose section's heading path starts with ``prefix``."""
    def tree(self, slot: int) -> tuple[_Ints, _Ints, _Ints, list[list[str]]]:
        """``(nodes, leaves, sentences, headings)`` of the document in ``slot``."""
    def spread(self, labels: Sequence[int], scores: Sequence[float], decay: float) -> tuple[list[int], list[float]]:
        """``(labels, utilities)`` best first: the leaves hits ``(labels, scores)`` reach, each
        hit lending the leaves ``d <= 4`` away in its section ``decay**d`` of its relevance
        (its score rescaled between the weakest and the best hit), a leaf's utility the
        noisy-or of what it has; see :meth:`chunkforge.index.Index.expand`.

        Raises:
            InputError: ``labels`` and ``scores`` differ in length, ``decay`` is not in [0, 1).
            NotInIndexError: a label is no leaf of the index."""
    def expand(self, hits: Iterable[_T], options: ExpandParams, level: int) -> _Q:
        """Hits (each with a ``leaf`` label and a ``score``) -> ``payload_type(passages,
        dropped hits)`` as ``options`` say; with ``options.spread`` the hits go on as the
        leaves they reach (:meth:`spread`), new hits whose ids are of tree ``level``; see
        :meth:`chunkforge.index.Index.expand`.

        Raises:
            TypeError: a hit has no integer ``leaf`` or numeric ``score``.
            InputError: ``order`` or ``pack`` is not one of its names, or a score is NaN.
            NotInIndexError: a hit's leaf is not in the index, or (a hit of ``hit_type``) is
                not the leaf its ``doc_id``, ``start`` and ``end`` name."""
