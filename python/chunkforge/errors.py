"""The errors chunkforge raises on bad input: one base, :class:`ChunkforgeError`.

Each subclasses ``ValueError`` (bad values), so ``except ValueError`` keeps working;
the message names the parameter, flag or file (and line) at fault.

>>> from chunkforge import ChunkforgeError, InputError
>>> issubclass(InputError, ChunkforgeError) and issubclass(ChunkforgeError, ValueError)
True
"""

from __future__ import annotations


class ChunkforgeError(ValueError):
    """Base of chunkforge's input errors; the message names what is at fault."""


class InputError(ChunkforgeError):
    """Bad input or arguments to a command or job; the message names the flag or file (and line)."""


class TokenizerError(ChunkforgeError):
    """A ``tokenizer.json`` that cannot be loaded, or a text its model fails on."""


class NotInIndexError(ChunkforgeError):
    """A leaf label or document slot that is not in the index (deleted, or from another index)."""


class DatasetError(ChunkforgeError):
    """A bad corpus, queries or config file of ``chunkforge eval``; the message names the file (and line)."""


__all__ = ["ChunkforgeError", "DatasetError", "InputError", "NotInIndexError", "TokenizerError"]
