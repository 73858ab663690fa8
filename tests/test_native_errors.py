"""Each kind of the native core's errors reaches Python as one class of ``chunkforge.errors``."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkforge import _native
from chunkforge.errors import ChunkforgeError, InputError, NotInIndexError, TokenizerError
from chunkforge.index.payload import Hit, Passage, Payload

TOKENIZER = Path(__file__).parents[1] / "python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json"


@pytest.fixture(scope="module")
def tokenizer() -> _native.Tokenizer:
    return _native.Tokenizer.from_file(str(TOKENIZER))


def test_input_errors_are_input_errors(tokenizer: _native.Tokenizer) -> None:
    with pytest.raises(InputError, match="unknown strategy"):
        _native.Chunker(tokenizer, "nonsense", 10)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="span"):
        _native.SpanCounter(tokenizer, "abc").count(2, 9)
    with pytest.raises(InputError, match="threads must be between 1 and"):
        tokenizer.count_batch(["a"], threads=0)


def test_tokenizer_errors_are_tokenizer_errors(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="not a valid tokenizer.json"):
        _native.Tokenizer.from_str("{}")
    corrupt = tmp_path / "tokenizer.json"
    corrupt.write_text("{")
    with pytest.raises(TokenizerError, match=f"{corrupt} is not a valid tokenizer.json"):
        _native.Tokenizer.from_file(str(corrupt))


def test_unknown_leaves_and_slots_are_not_in_index_errors(tokenizer: _native.Tokenizer) -> None:
    expander = _native.Expander(tokenizer, Hit, Passage, Payload)
    with pytest.raises(NotInIndexError, match="leaf 7 is not in the index"):
        expander.hits([7], [1.0], 0)
    with pytest.raises(NotInIndexError, match="no document in slot 0"):
        expander.remove(0)


def test_an_unreadable_tokenizer_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="cannot read tokenizer file"):
        _native.Tokenizer.from_file(str(tmp_path / "missing.json"))


def test_every_kind_is_a_value_error() -> None:
    for kind in (InputError, TokenizerError, NotInIndexError):
        assert issubclass(kind, ChunkforgeError) and issubclass(kind, ValueError)
